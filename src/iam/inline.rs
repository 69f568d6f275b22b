//! Inline policies of users and groups: Put/Get/Delete/List User/Group Policy. Each change is
//! a compare-and-set on the owner's policies as read, so two acknowledged changes both land.

use super::context::Cx;
use super::error::{IamError, IamResult};
use super::query::Params;
use super::validate::{self, InlineOwner};
use super::xml;

/// Handles the inline policies' actions (`None`: not one of them).
pub async fn dispatch(cx: &Cx<'_>, p: &Params, action: &str) -> Option<IamResult<String>> {
    let (owner, op) = match action {
        "PutUserPolicy" => (InlineOwner::User, Op::Put),
        "GetUserPolicy" => (InlineOwner::User, Op::Get),
        "DeleteUserPolicy" => (InlineOwner::User, Op::Delete),
        "ListUserPolicies" => (InlineOwner::User, Op::List),
        "PutGroupPolicy" => (InlineOwner::Group, Op::Put),
        "GetGroupPolicy" => (InlineOwner::Group, Op::Get),
        "DeleteGroupPolicy" => (InlineOwner::Group, Op::Delete),
        "ListGroupPolicies" => (InlineOwner::Group, Op::List),
        _ => return None,
    };
    Some(run(cx, p, owner, op).await)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Put,
    Get,
    Delete,
    List,
}

/// The owner as read: its name, ARN and inline policies.
struct Owner {
    name: String,
    arn: String,
    inline: Vec<(String, String)>,
    user: Option<crate::storage::identity::User>,
    group: Option<crate::storage::identity::Group>,
}

async fn read(cx: &Cx<'_>, p: &Params, kind: InlineOwner) -> IamResult<Owner> {
    Ok(match kind {
        InlineOwner::Group => {
            let name = p.required_checked("GroupName", validate::group_name)?;
            let g = cx.store().group(cx.acct(), name).await?;
            Owner {
                name: g.name.clone(),
                arn: g.arn(),
                inline: g.inline.clone(),
                user: None,
                group: Some(g),
            }
        }
        _ => {
            let name = p.required_checked("UserName", validate::existing_user_name)?;
            let u = cx.store().user(cx.acct(), name).await?;
            Owner {
                name: u.name.clone(),
                arn: u.arn(),
                inline: u.inline.clone(),
                user: Some(u),
                group: None,
            }
        }
    })
}

fn action(kind: InlineOwner, op: Op) -> (&'static str, &'static str) {
    let user = kind != InlineOwner::Group;
    match (op, user) {
        (Op::Put, true) => ("iam:PutUserPolicy", "PutUserPolicy"),
        (Op::Get, true) => ("iam:GetUserPolicy", "GetUserPolicy"),
        (Op::Delete, true) => ("iam:DeleteUserPolicy", "DeleteUserPolicy"),
        (Op::List, true) => ("iam:ListUserPolicies", "ListUserPolicies"),
        (Op::Put, false) => ("iam:PutGroupPolicy", "PutGroupPolicy"),
        (Op::Get, false) => ("iam:GetGroupPolicy", "GetGroupPolicy"),
        (Op::Delete, false) => ("iam:DeleteGroupPolicy", "DeleteGroupPolicy"),
        (Op::List, false) => ("iam:ListGroupPolicies", "ListGroupPolicies"),
    }
}

async fn run(cx: &Cx<'_>, p: &Params, kind: InlineOwner, op: Op) -> IamResult<String> {
    let (iam_action, answer) = action(kind, op);
    let policy_name = match op {
        Op::List => None,
        _ => Some(p.required_checked("PolicyName", validate::policy_name)?),
    };
    let doc = match op {
        Op::Put => Some(super::policies::checked_document(p, "PolicyDocument")?),
        _ => None,
    };
    let missing = |owner: &Owner, name: &str| {
        IamError::no_such_entity(format!(
            "The {} policy with name {name} cannot be found.",
            if kind == InlineOwner::Group {
                "group"
            } else {
                "user"
            },
        ))
        .with_owner(&owner.name)
    };
    // Compare-and-set: read, change, write if unchanged; a few tries under contention.
    for _ in 0..5 {
        let owner = read(cx, p, kind).await?;
        cx.caller.allow(iam_action, &owner.arn)?;
        match op {
            Op::List => {
                let mut names: Vec<String> = owner.inline.iter().map(|(n, _)| n.clone()).collect();
                names.sort();
                return Ok(if kind == InlineOwner::Group {
                    xml::list_group_policies(&names, None, cx.rid)
                } else {
                    xml::list_user_policies(&names, None, cx.rid)
                });
            }
            Op::Get => {
                let name = policy_name.expect("named");
                let (n, d) = owner
                    .inline
                    .iter()
                    .find(|(n, _)| n == name)
                    .ok_or_else(|| missing(&owner, name))?;
                return Ok(if kind == InlineOwner::Group {
                    xml::get_group_policy(&owner.name, n, d, cx.rid)
                } else {
                    xml::get_user_policy(&owner.name, n, d, cx.rid)
                });
            }
            Op::Put | Op::Delete => {
                let name = policy_name.expect("named");
                let mut inline = owner.inline.clone();
                let had = inline.iter().any(|(n, _)| n == name);
                inline.retain(|(n, _)| n != name);
                if let Some(d) = &doc {
                    inline.push((name.to_owned(), d.clone()));
                    let total = inline.iter().map(|(_, d)| validate::policy_size(d)).sum();
                    validate::inline_policies_size(kind, &owner.name, total)?;
                } else if !had {
                    return Err(missing(&owner, name));
                }
                let written = match (&owner.user, &owner.group) {
                    (Some(u), _) => cx.store().set_user_inline(u, &inline).await?,
                    (_, Some(g)) => cx.store().set_group_inline(g, &inline).await?,
                    _ => false,
                };
                if written {
                    return Ok(xml::empty(answer, cx.rid));
                }
            }
        }
    }
    Err(IamError::new(
        axum::http::StatusCode::CONFLICT,
        "ConcurrentModification",
        "The policies changed while this one was being written; try again.",
    ))
}

trait WithOwner {
    fn with_owner(self, owner: &str) -> Self;
}

impl WithOwner for IamError {
    /// AWS's message names the owner too.
    fn with_owner(mut self, owner: &str) -> Self {
        self.message = format!("{} (owner {owner})", self.message.trim_end_matches('.'));
        self
    }
}
