//! Identity: the account's IAM users (list, create with path and tags, delete) and one user's
//! page (its groups, managed and inline policies, access keys). Every step is the IAM action
//! the signed-in key would send (`console::iamcall`): a key that IAM would refuse sees IAM's
//! refusal here. A new key's secret is on the page that created it, and never again: the
//! console keeps no copy.

use axum::extract::{Request, State};
use axum::response::Response;

use super::idcommon::{self, shown, with_status, Holder};
use super::{field, html, signed_get, signed_post, Ctx};
use crate::console::iamcall::{
    self, GroupList, IamCall, KeyList, NewKeyResult, UserList, UserResult,
};
use crate::console::idviews::{self, Editor, KeyRow, NewKey, Row};
use crate::iam::IamError;
use crate::state::AppState;

async fn users_page(
    st: &AppState,
    ctx: &Ctx,
    done: Option<String>,
    error: Option<IamError>,
) -> Response {
    let call = ctx.iam(st);
    let (users, list_error) = match call.read_all::<UserList>("ListUsers", &[]).await {
        Ok(l) => (
            Some(
                l.into_iter()
                    .map(|u| Row {
                        name: u.name,
                        path: u.path,
                        arn: u.arn,
                        created: u.created,
                        note: String::new(),
                    })
                    .collect(),
            ),
            None,
        ),
        Err(e) => (None, Some(e)),
    };
    // The action's refusal first; else the list's.
    let error = error.or(list_error);
    let r = html(idviews::Users {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error: shown(&error),
        done,
        users,
    });
    with_status(r, error.as_ref())
}

/// GET /identity: the users.
pub async fn users(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, _) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    users_page(&st, &ctx, None, None).await
}

/// POST /identity/users: `create` (`name`, `path`, `tags`) or `delete` (`name`) a user.
pub async fn users_post(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let call = ctx.iam(&st);
    let name = field(&f, "name").unwrap_or("").trim();
    let result = match field(&f, "action").unwrap_or("") {
        "create" => {
            let path = field(&f, "path").unwrap_or("").trim();
            let tags = idcommon::tag_params(field(&f, "tags").unwrap_or(""));
            let mut p: Vec<(&str, &str)> = vec![("UserName", name)];
            if !path.is_empty() {
                p.push(("Path", path));
            }
            p.extend(tags.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            call.run("CreateUser", &p)
                .await
                .map(|_| format!("User {name} created"))
        }
        "delete" => call
            .run("DeleteUser", &[("UserName", name)])
            .await
            .map(|_| format!("User {name} deleted")),
        _ => Err(idcommon::unknown_action()),
    };
    match result {
        Ok(done) => users_page(&st, &ctx, Some(done), None).await,
        Err(e) => users_page(&st, &ctx, None, Some(e)).await,
    }
}

/// What one render of a user's page carries besides what it reads.
#[derive(Default)]
struct Extra {
    done: Option<String>,
    error: Option<IamError>,
    created_key: Option<NewKey>,
    editor: Option<Editor>,
}

async fn user_page(st: &AppState, ctx: &Ctx, name: &str, x: Extra) -> Response {
    let call = ctx.iam(st);
    let user = match call
        .read::<UserResult>("GetUser", &[("UserName", name)])
        .await
    {
        Ok(u) => u.user,
        Err(e) => {
            // Without the user, nothing else of the page: the refusal says why.
            let error = x.error.or(Some(e));
            let r = html(empty_user(ctx, name, shown(&error), x.done));
            return with_status(r, error.as_ref());
        }
    };
    let r = html(idviews::User {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error: shown(&x.error),
        done: x.done,
        groups: groups_of(&call, name).await,
        attached: idcommon::attached(&call, Holder::User, name).await,
        inline: idcommon::inline(&call, Holder::User, name).await,
        keys: keys_of(&call, name).await,
        policies: idcommon::offered(&call).await,
        created_key: x.created_key,
        editor: x.editor.unwrap_or(Editor {
            doc: String::new(),
            error: None,
        }),
        name: user.name,
        path: user.path,
        arn: user.arn,
        created: user.created,
        tags: user
            .tags
            .member
            .into_iter()
            .map(|t| (t.key, t.value))
            .collect(),
    });
    with_status(r, x.error.as_ref())
}

fn empty_user(ctx: &Ctx, name: &str, error: Option<String>, done: Option<String>) -> idviews::User {
    idviews::User {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error,
        done,
        name: name.to_owned(),
        path: String::new(),
        arn: String::new(),
        created: String::new(),
        tags: Vec::new(),
        groups: Ok(Vec::new()),
        attached: Ok(Vec::new()),
        inline: Ok(Vec::new()),
        keys: Ok(Vec::new()),
        created_key: None,
        policies: Vec::new(),
        editor: Editor {
            doc: String::new(),
            error: None,
        },
    }
}

async fn groups_of(call: &IamCall<'_>, name: &str) -> Result<Vec<String>, String> {
    call.read_all::<GroupList>("ListGroupsForUser", &[("UserName", name)])
        .await
        .map(|l| l.into_iter().map(|g| g.name).collect())
        .map_err(|e| iamcall::reason(&e))
}

async fn keys_of(call: &IamCall<'_>, name: &str) -> Result<Vec<KeyRow>, String> {
    call.read_all::<KeyList>("ListAccessKeys", &[("UserName", name)])
        .await
        .map(|l| {
            l.into_iter()
                .map(|k| KeyRow {
                    active: k.status == "Active",
                    id: k.id,
                    created: k.created,
                })
                .collect()
        })
        .map_err(|e| iamcall::reason(&e))
}

/// GET /identity/user?name=: one user.
pub async fn user(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, q) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let name = field(&q, "name").unwrap_or("").to_owned();
    user_page(&st, &ctx, &name, Extra::default()).await
}

/// POST /identity/user: a user's keys (`create-key`; `activate-key`, `deactivate-key`,
/// `delete-key` with `key`), groups (`join-group`, `leave-group` with `group`) and policies
/// (see `idcommon::policy_action`).
pub async fn user_post(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let call = ctx.iam(&st);
    let name = field(&f, "name").unwrap_or("").to_owned();
    let action = field(&f, "action").unwrap_or("");
    let key = field(&f, "key").unwrap_or("").trim();
    let group = field(&f, "group").unwrap_or("").trim();
    let u = ("UserName", name.as_str());
    let mut x = Extra::default();
    let result = match action {
        "create-key" => match call.read::<NewKeyResult>("CreateAccessKey", &[u]).await {
            Ok(k) => {
                x.created_key = Some(NewKey {
                    id: k.key.id.clone(),
                    secret: k.key.secret,
                });
                Ok(format!("Access key {} created", k.key.id))
            }
            Err(e) => Err(e),
        },
        "activate-key" | "deactivate-key" => {
            let status = if action == "activate-key" {
                "Active"
            } else {
                "Inactive"
            };
            call.run(
                "UpdateAccessKey",
                &[u, ("AccessKeyId", key), ("Status", status)],
            )
            .await
            .map(|_| format!("{key}: {status}"))
        }
        "delete-key" => call
            .run("DeleteAccessKey", &[u, ("AccessKeyId", key)])
            .await
            .map(|_| format!("{key}: deleted")),
        "join-group" => call
            .run("AddUserToGroup", &[u, ("GroupName", group)])
            .await
            .map(|_| format!("Added to {group}")),
        "leave-group" => call
            .run("RemoveUserFromGroup", &[u, ("GroupName", group)])
            .await
            .map(|_| format!("Removed from {group}")),
        _ => match idcommon::policy_action(&call, Holder::User, &name, action, &f).await {
            Some(Ok(done)) => Ok(done),
            Some(Err((e, editor))) => {
                x.editor = editor;
                Err(e)
            }
            None => Err(idcommon::unknown_action()),
        },
    };
    match result {
        Ok(done) => x.done = Some(done),
        Err(e) => x.error = Some(e),
    }
    user_page(&st, &ctx, &name, x).await
}
