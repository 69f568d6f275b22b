//! Identity: the account's IAM groups (list, create, delete) and one group's page (members,
//! managed and inline policies), each step the IAM action the signed-in key would send.

use axum::extract::{Request, State};
use axum::response::Response;

use super::idcommon::{self, shown, with_status, Holder};
use super::{field, html, signed_get, signed_post, Ctx};
use crate::console::iamcall::{GroupList, GroupResult};
use crate::console::idviews::{self, Editor, Row};
use crate::iam::IamError;
use crate::state::AppState;

async fn groups_page(
    st: &AppState,
    ctx: &Ctx,
    done: Option<String>,
    error: Option<IamError>,
) -> Response {
    let call = ctx.iam(st);
    let (groups, list_error) = match call.read_all::<GroupList>("ListGroups", &[]).await {
        Ok(l) => (
            Some(
                l.into_iter()
                    .map(|g| Row {
                        name: g.name,
                        path: g.path,
                        arn: g.arn,
                        created: g.created,
                        note: String::new(),
                    })
                    .collect(),
            ),
            None,
        ),
        Err(e) => (None, Some(e)),
    };
    let error = error.or(list_error);
    let r = html(idviews::Groups {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error: shown(&error),
        done,
        groups,
    });
    with_status(r, error.as_ref())
}

/// GET /identity/groups: the groups.
pub async fn groups(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, _) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    groups_page(&st, &ctx, None, None).await
}

/// POST /identity/groups: `create` (`name`, `path`) or `delete` (`name`) a group.
pub async fn groups_post(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let call = ctx.iam(&st);
    let name = field(&f, "name").unwrap_or("").trim();
    let result = match field(&f, "action").unwrap_or("") {
        "create" => {
            let path = field(&f, "path").unwrap_or("").trim();
            let mut p = vec![("GroupName", name)];
            if !path.is_empty() {
                p.push(("Path", path));
            }
            call.run("CreateGroup", &p)
                .await
                .map(|_| format!("Group {name} created"))
        }
        "delete" => call
            .run("DeleteGroup", &[("GroupName", name)])
            .await
            .map(|_| format!("Group {name} deleted")),
        _ => Err(idcommon::unknown_action()),
    };
    match result {
        Ok(done) => groups_page(&st, &ctx, Some(done), None).await,
        Err(e) => groups_page(&st, &ctx, None, Some(e)).await,
    }
}

async fn group_page(
    st: &AppState,
    ctx: &Ctx,
    name: &str,
    done: Option<String>,
    error: Option<IamError>,
    editor: Option<Editor>,
) -> Response {
    let call = ctx.iam(st);
    let editor = editor.unwrap_or(Editor {
        doc: String::new(),
        error: None,
    });
    let mut view = idviews::Group {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error: None,
        done,
        name: name.to_owned(),
        path: String::new(),
        arn: String::new(),
        members: Ok(Vec::new()),
        attached: Ok(Vec::new()),
        inline: Ok(Vec::new()),
        policies: Vec::new(),
        editor,
    };
    // GetGroup gives the group and its members at once (up to 1,000 shown).
    let g = match call
        .read::<GroupResult>("GetGroup", &[("GroupName", name), ("MaxItems", "1000")])
        .await
    {
        Ok(g) => g,
        Err(e) => {
            let error = error.or(Some(e));
            view.error = shown(&error);
            return with_status(html(view), error.as_ref());
        }
    };
    view.path = g.group.path;
    view.arn = g.group.arn;
    view.members = Ok(g.users.member.into_iter().map(|u| u.name).collect());
    view.attached = idcommon::attached(&call, Holder::Group, name).await;
    view.inline = idcommon::inline(&call, Holder::Group, name).await;
    view.policies = idcommon::offered(&call).await;
    view.error = shown(&error);
    with_status(html(view), error.as_ref())
}

/// GET /identity/group?name=: one group.
pub async fn group(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, q) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let name = field(&q, "name").unwrap_or("").to_owned();
    group_page(&st, &ctx, &name, None, None, None).await
}

/// POST /identity/group: members (`add-member`, `remove-member` with `user`) and policies
/// (see `idcommon::policy_action`).
pub async fn group_post(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let call = ctx.iam(&st);
    let name = field(&f, "name").unwrap_or("").to_owned();
    let action = field(&f, "action").unwrap_or("");
    let user = field(&f, "user").unwrap_or("").trim();
    let g = ("GroupName", name.as_str());
    let mut editor = None;
    let result = match action {
        "add-member" => call
            .run("AddUserToGroup", &[g, ("UserName", user)])
            .await
            .map(|_| format!("{user} added")),
        "remove-member" => call
            .run("RemoveUserFromGroup", &[g, ("UserName", user)])
            .await
            .map(|_| format!("{user} removed")),
        _ => match idcommon::policy_action(&call, Holder::Group, &name, action, &f).await {
            Some(Ok(done)) => Ok(done),
            Some(Err((e, ed))) => {
                editor = ed;
                Err(e)
            }
            None => Err(idcommon::unknown_action()),
        },
    };
    match result {
        Ok(done) => group_page(&st, &ctx, &name, Some(done), None, editor).await,
        Err(e) => group_page(&st, &ctx, &name, None, Some(e), editor).await,
    }
}
