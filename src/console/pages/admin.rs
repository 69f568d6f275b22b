//! Administration, for the root key only: access keys (create, with the secret shown once;
//! list; disable and enable; delete) and the SSE-KMS keyring (create, list, disable, enable).
//! Each action is the storage step the admin API takes (`http::admin`), so the console and
//! `grids3 admin` change the same records the same way; a key that is not root gets AWS's
//! `AccessDenied`, as the admin API answers it. Account quotas are `account_quota`'s.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::{field, html, reason, signed_get, signed_post, Ctx};
use crate::console::views::{Admin, KeyRow, KmsRow, NewKey};
use crate::error::S3Error;
use crate::state::AppState;

fn not_root(ctx: &Ctx) -> Response {
    let e = S3Error::access_denied().with_message("Only the root key administers this server");
    ctx.message(StatusCode::FORBIDDEN, "Refused", Some(e), "/")
}

/// The admin API's 404 for a key that is not there.
fn not_found(code: &'static str, message: &str) -> S3Error {
    S3Error {
        code,
        status: StatusCode::NOT_FOUND,
        message: message.to_owned(),
        headers: Vec::new(),
        extra: Vec::new(),
    }
}

/// An access key id or KMS key id as the admin API takes it.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

async fn page(
    st: &AppState,
    ctx: &Ctx,
    created: Option<NewKey>,
    done: Option<String>,
    error: Option<S3Error>,
) -> Response {
    let keys = match st.store.meta().list_access_keys().await {
        Ok(k) => k,
        Err(e) => {
            let e = S3Error::from(e);
            return ctx.message(e.status, "The keys could not be read", Some(e), "/");
        }
    };
    let ids: Vec<String> = keys.iter().map(|k| k.id.clone()).collect();
    let accounts = match super::account_quota::rows(st, &ids).await {
        Ok(a) => a,
        Err(e) => return ctx.message(e.status, "The quotas could not be read", Some(e), "/"),
    };
    let keys = keys
        .into_iter()
        .map(|k| KeyRow {
            created: crate::s3::request::headers::iso8601(k.created),
            id: k.id,
            name: k.name,
            email: k.email.unwrap_or_default(),
            root: k.root,
            disabled: k.disabled,
        })
        .collect();
    // Without a master key there is no keyring: the page says so instead of failing.
    let (kms, kms_note) = match st.keys.keyring().list().await {
        Ok(list) => (
            list.iter()
                .map(|k| KmsRow {
                    id: k.id.clone(),
                    arn: st.keys.kms_arn(&k.id),
                    alias: k
                        .alias
                        .clone()
                        .map(|a| format!("alias/{a}"))
                        .unwrap_or_default(),
                    description: k.description.clone(),
                    enabled: k.enabled,
                    created: crate::s3::request::headers::iso8601(k.created),
                })
                .collect(),
            None,
        ),
        Err(e) => (Vec::new(), Some(reason(&crate::s3::sse::sse_error(st, e)))),
    };
    let mut r = html(Admin {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error: error.as_ref().map(reason),
        keys,
        kms,
        kms_note,
        accounts,
        created,
        done,
    });
    if let Some(e) = error {
        *r.status_mut() = e.status;
    }
    r
}

/// GET /admin: keys and the KMS keyring.
pub async fn admin(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, _) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if !ctx.signed.root {
        return not_root(&ctx);
    }
    page(&st, &ctx, None, None, None).await
}

/// POST /admin/keys: create (`action=create`, `name`, `email`), `disable`, `enable` or
/// `delete` (`id`) an access key.
pub async fn keys(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if !ctx.signed.root {
        return not_root(&ctx);
    }
    let meta = st.store.meta();
    let action = field(&f, "action").unwrap_or("");
    if action == "create" {
        let name = field(&f, "name").unwrap_or("").trim().to_owned();
        let email = field(&f, "email").map(str::trim).filter(|e| !e.is_empty());
        let made = async {
            let (id, secret) = meta.create_access_key(&name).await?;
            if let Some(e) = email {
                meta.set_key_email(&id, e).await?;
            }
            Ok::<_, mongodb::error::Error>((id, secret))
        }
        .await;
        return match made {
            // The secret is on this page only: it is stored sealed and never shown again.
            Ok((id, secret)) => page(&st, &ctx, Some(NewKey { id, secret }), None, None).await,
            Err(e) => page(&st, &ctx, None, None, Some(e.into())).await,
        };
    }
    let id = field(&f, "id").unwrap_or("");
    if !valid_id(id) {
        let e = S3Error::invalid_argument("invalid access key id");
        return page(&st, &ctx, None, None, Some(e)).await;
    }
    let changed = match action {
        "disable" => meta.set_key_disabled(id, true).await,
        "enable" => meta.set_key_disabled(id, false).await,
        "delete" => meta.delete_access_key(id).await,
        _ => {
            let e = S3Error::invalid_argument("unknown action");
            return page(&st, &ctx, None, None, Some(e)).await;
        }
    };
    match changed {
        Ok(true) => {
            st.creds.forget(id);
            let done = format!("{id}: {action}d");
            page(&st, &ctx, None, Some(done), None).await
        }
        Ok(false) => {
            let e = not_found(
                "NoSuchKey",
                "No such access key (or it is the root key, which is never disabled or deleted)",
            );
            page(&st, &ctx, None, None, Some(e)).await
        }
        Err(e) => page(&st, &ctx, None, None, Some(e.into())).await,
    }
}

/// POST /admin/kms: create (`action=create`, `alias`, `description`), `disable` or `enable`
/// (`id`) a KMS key.
pub async fn kms(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if !ctx.signed.root {
        return not_root(&ctx);
    }
    let action = field(&f, "action").unwrap_or("");
    let result = match action {
        "create" => {
            let alias = field(&f, "alias")
                .map(|a| a.trim().strip_prefix("alias/").unwrap_or(a.trim()))
                .filter(|a| !a.is_empty());
            if alias.is_some_and(|a| {
                a.starts_with("aws/")
                    || !a
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'-'))
            }) {
                let e = S3Error::invalid_argument(
                    "An alias is letters, digits, '/', '_' and '-', and does not start with aws/",
                );
                return page(&st, &ctx, None, None, Some(e)).await;
            }
            let now = st.store.meta().clock().now();
            let description = field(&f, "description").unwrap_or("").trim();
            st.keys
                .create_kms_key(None, alias, description, now)
                .await
                .map(|k| Some(format!("KMS key {} created", k.id)))
        }
        "disable" | "enable" => {
            let id = field(&f, "id").unwrap_or("");
            if !valid_id(id) {
                let e = S3Error::invalid_argument("invalid KMS key id");
                return page(&st, &ctx, None, None, Some(e)).await;
            }
            st.keys
                .keyring()
                .set_enabled(id, action == "enable")
                .await
                .map(|found| found.then(|| format!("KMS key {id}: {action}d")))
        }
        _ => Ok(None),
    };
    match result {
        Ok(Some(done)) => page(&st, &ctx, None, Some(done), None).await,
        Ok(None) => {
            let e = not_found("NotFoundException", "No such KMS key");
            page(&st, &ctx, None, None, Some(e)).await
        }
        Err(e) => {
            let e = crate::s3::sse::sse_error(&st, e);
            page(&st, &ctx, None, None, Some(e)).await
        }
    }
}

/// POST /admin/quota: sets (or, with both fields empty or 0, clears) the limits of the
/// account whose root key is `id` (see `account_quota`).
pub async fn account_quota(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if !ctx.signed.root {
        return not_root(&ctx);
    }
    let key = field(&f, "id").unwrap_or("").to_owned();
    let known = match st.store.meta().list_access_keys().await {
        Ok(keys) => keys.iter().any(|k| k.id == key),
        Err(e) => return page(&st, &ctx, None, None, Some(e.into())).await,
    };
    if !known {
        let e = S3Error::invalid_argument("no account has that root access key id");
        return page(&st, &ctx, None, None, Some(e)).await;
    }
    let limits = super::account_quota::limits_from_form(
        field(&f, "bytes").unwrap_or(""),
        field(&f, "objects").unwrap_or(""),
    );
    let Some(limits) = limits else {
        let e = S3Error::invalid_argument(
            "A limit is a whole number: bytes (or with KiB, MiB, GiB, TiB), and objects",
        );
        return page(&st, &ctx, None, None, Some(e)).await;
    };
    let account = crate::storage::identity::account_id(&key);
    match st
        .store
        .set_account_limits_of(&account, Some(&key), limits)
        .await
    {
        Ok(()) => {
            let done = format!("Account {account}: quota saved");
            page(&st, &ctx, None, Some(done), None).await
        }
        Err(e) => page(&st, &ctx, None, None, Some(e.into())).await,
    }
}
