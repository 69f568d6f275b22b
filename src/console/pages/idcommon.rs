//! What the identity pages share: the IAM caller of a page, a user's or group's managed and
//! inline policies (read, attached, detached, put, deleted), and the shapes of their rows.
//! Every step is an IAM action run as the signed-in key (`console::iamcall`).

use axum::http::StatusCode;
use axum::response::Response;

use super::{field, Ctx};
use crate::console::iamcall::{self, AttachedList, IamCall, InlineResult, NameList, PolicyList};
use crate::console::idviews::{Editor, Inline};
use crate::iam::IamError;
use crate::state::AppState;

impl Ctx {
    /// The IAM caller of this page: the signed-in key.
    pub(super) fn iam<'a>(&'a self, st: &'a AppState) -> IamCall<'a> {
        IamCall {
            st,
            access_key: &self.signed.session.access_key,
            parts: &self.parts,
            request_id: &self.request_id,
        }
    }
}

/// A page's status: the refusal's (403 for AccessDenied, 404 for NoSuchEntity...), else 200.
pub(super) fn with_status(mut r: Response, e: Option<&IamError>) -> Response {
    if let Some(e) = e {
        *r.status_mut() = e.status;
    }
    r
}

/// The refusal as the page shows it.
pub(super) fn shown(e: &Option<IamError>) -> Option<String> {
    e.as_ref().map(iamcall::reason)
}

/// Whose policies: a user's or a group's (the IAM actions' words).
#[derive(Clone, Copy)]
pub(super) enum Holder {
    User,
    Group,
}

impl Holder {
    fn word(self) -> &'static str {
        match self {
            Holder::User => "User",
            Holder::Group => "Group",
        }
    }

    fn param(self) -> &'static str {
        match self {
            Holder::User => "UserName",
            Holder::Group => "GroupName",
        }
    }
}

/// The managed policies attached to a holder, as (name, ARN).
pub(super) async fn attached(
    call: &IamCall<'_>,
    h: Holder,
    name: &str,
) -> Result<Vec<(String, String)>, String> {
    let action = format!("ListAttached{}Policies", h.word());
    call.read_all::<AttachedList>(&action, &[(h.param(), name)])
        .await
        .map(|l| l.into_iter().map(|p| (p.name, p.arn)).collect())
        .map_err(|e| iamcall::reason(&e))
}

/// A holder's inline policies, with their documents.
pub(super) async fn inline(
    call: &IamCall<'_>,
    h: Holder,
    name: &str,
) -> Result<Vec<Inline>, String> {
    let list = format!("List{}Policies", h.word());
    let get = format!("Get{}Policy", h.word());
    let names = call
        .read_all::<NameList>(&list, &[(h.param(), name)])
        .await
        .map_err(|e| iamcall::reason(&e))?;
    let mut out = Vec::with_capacity(names.len());
    for n in names {
        let doc: InlineResult = call
            .read(&get, &[(h.param(), name), ("PolicyName", &n)])
            .await
            .map_err(|e| iamcall::reason(&e))?;
        out.push(Inline {
            name: n,
            document: pretty(&iamcall::document(&doc.document)),
        });
    }
    Ok(out)
}

/// The account's managed policies, as (name, ARN), to offer for attaching (none when the
/// caller may not list them: the ARN can still be typed).
pub(super) async fn offered(call: &IamCall<'_>) -> Vec<(String, String)> {
    call.read_all::<PolicyList>("ListPolicies", &[("Scope", "Local")])
        .await
        .map(|l| l.into_iter().map(|p| (p.name, p.arn)).collect())
        .unwrap_or_default()
}

/// A JSON document indented for reading (as it is, when it is not JSON).
pub(super) fn pretty(doc: &str) -> String {
    serde_json::from_str::<serde_json::Value>(doc)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| doc.to_owned())
}

/// What a holder's policy action did, or why not (and the document to keep in the editor).
pub(super) type Outcome = Result<String, (IamError, Option<Editor>)>;

/// Performs one of a holder's policy actions from its form: `attach`, `detach` (`arn`),
/// `put-inline` (`policy`, `doc`), `delete-inline` (`policy`). `None`: not one of them.
pub(super) async fn policy_action(
    call: &IamCall<'_>,
    h: Holder,
    name: &str,
    action: &str,
    f: &[(String, String)],
) -> Option<Outcome> {
    let arn = field(f, "arn").unwrap_or("").trim();
    let policy = field(f, "policy").unwrap_or("").trim();
    let who = h.param();
    Some(match action {
        "attach" | "detach" => {
            let verb = if action == "attach" {
                "Attach"
            } else {
                "Detach"
            };
            call.run(
                &format!("{verb}{}Policy", h.word()),
                &[(who, name), ("PolicyArn", arn)],
            )
            .await
            .map(|_| format!("{arn}: {action}ed"))
            .map_err(|e| (e, None))
        }
        "put-inline" => {
            let doc = field(f, "doc").unwrap_or("");
            call.run(
                &format!("Put{}Policy", h.word()),
                &[(who, name), ("PolicyName", policy), ("PolicyDocument", doc)],
            )
            .await
            .map(|_| format!("Inline policy {policy} saved"))
            .map_err(|e| {
                let editor = Editor {
                    doc: doc.to_owned(),
                    error: Some(iamcall::reason(&e)),
                };
                (e, Some(editor))
            })
        }
        "delete-inline" => call
            .run(
                &format!("Delete{}Policy", h.word()),
                &[(who, name), ("PolicyName", policy)],
            )
            .await
            .map(|_| format!("Inline policy {policy} deleted"))
            .map_err(|e| (e, None)),
        _ => return None,
    })
}

/// The refusal of an unknown form action.
pub(super) fn unknown_action() -> IamError {
    IamError::new(
        StatusCode::BAD_REQUEST,
        "InvalidAction",
        "The form's action is not one the console knows.",
    )
}

/// Tags typed one `key=value` a line, as IAM's `Tags.member.N.Key/Value` parameters.
pub(super) fn tag_params(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
        .flat_map(|(i, l)| {
            let (k, v) = l.split_once('=').unwrap_or((l, ""));
            [
                (format!("Tags.member.{}.Key", i + 1), k.trim().to_owned()),
                (format!("Tags.member.{}.Value", i + 1), v.trim().to_owned()),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn tags_typed_as_lines_become_members() {
        let p = super::tag_params("team = a\n\n  env=prod=1\nbare\n");
        let want: Vec<(String, String)> = [
            ("Tags.member.1.Key", "team"),
            ("Tags.member.1.Value", "a"),
            ("Tags.member.2.Key", "env"),
            ("Tags.member.2.Value", "prod=1"),
            ("Tags.member.3.Key", "bare"),
            ("Tags.member.3.Value", ""),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        assert_eq!(p, want);
    }
}
