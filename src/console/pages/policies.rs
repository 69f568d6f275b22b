//! Identity: the account's customer managed policies (list; create in a JSON editor) and one
//! policy's page (its default document, versions: new, make default, delete; where it is
//! attached; delete). A document is checked by IAM's own CreatePolicy/CreatePolicyVersion
//! (`auth::policy::parse_identity` behind them): a refusal (MalformedPolicyDocument,
//! LimitExceeded...) is shown above the editor, which keeps the text.

use axum::extract::{Request, State};
use axum::response::Response;

use super::idcommon::{self, pretty, shown, with_status};
use super::{field, html, signed_get, signed_post, Ctx};
use crate::console::iamcall::{
    self, EntitiesResult, PolicyList, PolicyResult, VersionList, VersionResult,
};
use crate::console::idviews::{self, Editor, Row, VersionRow};
use crate::iam::IamError;
use crate::state::AppState;

/// The create form as it was sent, kept after a refusal.
#[derive(Default)]
struct Form {
    name: String,
    path: String,
    description: String,
    doc: String,
}

async fn policies_page(
    st: &AppState,
    ctx: &Ctx,
    done: Option<String>,
    error: Option<IamError>,
    kept: Form,
) -> Response {
    let call = ctx.iam(st);
    let (policies, list_error) = match call
        .read_all::<PolicyList>("ListPolicies", &[("Scope", "Local")])
        .await
    {
        Ok(l) => (
            Some(
                l.into_iter()
                    .map(|p| Row {
                        note: format!("{}, attached {} times", p.default_version, p.attachments),
                        name: p.name,
                        path: p.path,
                        arn: p.arn,
                        created: p.updated,
                    })
                    .collect(),
            ),
            None,
        ),
        Err(e) => (None, Some(e)),
    };
    let editor_error = error.as_ref().map(iamcall::reason);
    let shown_error = error.or(list_error);
    let r = html(idviews::Policies {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error: shown(&shown_error),
        done,
        policies,
        name: kept.name,
        path: kept.path,
        description: kept.description,
        editor: Editor {
            doc: kept.doc,
            error: editor_error,
        },
    });
    with_status(r, shown_error.as_ref())
}

/// GET /identity/policies: the managed policies, and the editor to create one.
pub async fn policies(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, _) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    policies_page(&st, &ctx, None, None, Form::default()).await
}

/// POST /identity/policies: `create` (`name`, `path`, `description`, `doc`).
pub async fn policies_post(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let call = ctx.iam(&st);
    let kept = Form {
        name: field(&f, "name").unwrap_or("").trim().to_owned(),
        path: field(&f, "path").unwrap_or("").trim().to_owned(),
        description: field(&f, "description").unwrap_or("").trim().to_owned(),
        doc: field(&f, "doc").unwrap_or("").to_owned(),
    };
    if field(&f, "action") != Some("create") {
        return policies_page(&st, &ctx, None, Some(idcommon::unknown_action()), kept).await;
    }
    let mut p = vec![
        ("PolicyName", kept.name.as_str()),
        ("PolicyDocument", kept.doc.as_str()),
    ];
    if !kept.path.is_empty() {
        p.push(("Path", &kept.path));
    }
    if !kept.description.is_empty() {
        p.push(("Description", &kept.description));
    }
    match call.read::<PolicyResult>("CreatePolicy", &p).await {
        Ok(made) => {
            let done = format!("Policy {} created: {}", made.policy.name, made.policy.arn);
            policies_page(&st, &ctx, Some(done), None, Form::default()).await
        }
        Err(e) => policies_page(&st, &ctx, None, Some(e), kept).await,
    }
}

async fn policy_page(
    st: &AppState,
    ctx: &Ctx,
    arn: &str,
    done: Option<String>,
    error: Option<IamError>,
    editor: Editor,
) -> Response {
    let call = ctx.iam(st);
    let mut view = idviews::Policy {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error: None,
        done,
        name: String::new(),
        arn: String::new(),
        path: String::new(),
        description: String::new(),
        default_version: String::new(),
        attachments: 0,
        versions: Ok(Vec::new()),
        document: String::new(),
        users: Ok(Vec::new()),
        groups: Ok(Vec::new()),
        editor,
    };
    let p = match call
        .read::<PolicyResult>("GetPolicy", &[("PolicyArn", arn)])
        .await
    {
        Ok(p) => p.policy,
        Err(e) => {
            let error = error.or(Some(e));
            view.error = shown(&error);
            return with_status(html(view), error.as_ref());
        }
    };
    view.versions = call
        .read_all::<VersionList>("ListPolicyVersions", &[("PolicyArn", arn)])
        .await
        .map(|l| {
            l.into_iter()
                .map(|v| VersionRow {
                    id: v.id,
                    default: v.default,
                    created: v.created,
                })
                .collect()
        })
        .map_err(|e| iamcall::reason(&e));
    view.document = match call
        .read::<VersionResult>(
            "GetPolicyVersion",
            &[("PolicyArn", arn), ("VersionId", &p.default_version)],
        )
        .await
    {
        Ok(v) => pretty(&iamcall::document(&v.version.document)),
        Err(e) => iamcall::reason(&e),
    };
    if view.editor.doc.is_empty() {
        // A new version starts from the default one.
        view.editor.doc = view.document.clone();
    }
    match call
        .read::<EntitiesResult>("ListEntitiesForPolicy", &[("PolicyArn", arn)])
        .await
    {
        Ok(e) => {
            view.users = Ok(e.users.member.into_iter().map(|u| u.name).collect());
            view.groups = Ok(e.groups.member.into_iter().map(|g| g.name).collect());
        }
        Err(e) => {
            view.users = Err(iamcall::reason(&e));
            view.groups = Err(iamcall::reason(&e));
        }
    }
    view.name = p.name;
    view.arn = p.arn;
    view.path = p.path;
    view.description = p.description;
    view.default_version = p.default_version;
    view.attachments = p.attachments;
    view.error = shown(&error);
    with_status(html(view), error.as_ref())
}

fn blank() -> Editor {
    Editor {
        doc: String::new(),
        error: None,
    }
}

/// GET /identity/policy?arn=: one managed policy.
pub async fn policy(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, q) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let arn = field(&q, "arn").unwrap_or("").to_owned();
    policy_page(&st, &ctx, &arn, None, None, blank()).await
}

/// POST /identity/policy: `new-version` (`doc`, `default`), `set-default` and
/// `delete-version` (`version`), `delete` (the policy, then the list).
pub async fn policy_post(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let call = ctx.iam(&st);
    let arn = field(&f, "arn").unwrap_or("").trim().to_owned();
    let version = field(&f, "version").unwrap_or("").trim();
    let a = ("PolicyArn", arn.as_str());
    let mut editor = blank();
    let result = match field(&f, "action").unwrap_or("") {
        "new-version" => {
            let doc = field(&f, "doc").unwrap_or("");
            let default = if field(&f, "default") == Some("true") {
                "true"
            } else {
                "false"
            };
            let r = call
                .run(
                    "CreatePolicyVersion",
                    &[a, ("PolicyDocument", doc), ("SetAsDefault", default)],
                )
                .await
                .map(|_| "New version saved".to_owned());
            if let Err(e) = &r {
                editor = Editor {
                    doc: doc.to_owned(),
                    error: Some(iamcall::reason(e)),
                };
            }
            r
        }
        "set-default" => call
            .run("SetDefaultPolicyVersion", &[a, ("VersionId", version)])
            .await
            .map(|_| format!("{version} is the default")),
        "delete-version" => call
            .run("DeletePolicyVersion", &[a, ("VersionId", version)])
            .await
            .map(|_| format!("{version} deleted")),
        "delete" => {
            return match call.run("DeletePolicy", &[a]).await {
                Ok(_) => {
                    let done = format!("Policy {arn} deleted");
                    policies_page(&st, &ctx, Some(done), None, Form::default()).await
                }
                Err(e) => policy_page(&st, &ctx, &arn, None, Some(e), blank()).await,
            }
        }
        _ => Err(idcommon::unknown_action()),
    };
    match result {
        Ok(done) => policy_page(&st, &ctx, &arn, Some(done), None, editor).await,
        Err(e) => policy_page(&st, &ctx, &arn, None, Some(e), editor).await,
    }
}
