//! Access keys: create, list and delete them, grant keys access to buckets, and explain the
//! authorization's decision for a key ("why was this denied?").

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::common::{db_error, error, optional_json, root_body, AdminError};
use crate::error::S3Error;
use crate::state::AppState;

/// The key routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/_grids3/admin/keys", get(list_keys).post(create_key))
        .route("/_grids3/admin/keys/{id}", delete(delete_key))
        .route("/_grids3/admin/keys/{id}/disable", post(disable_key))
        .route("/_grids3/admin/keys/{id}/enable", post(enable_key))
        .route("/_grids3/admin/buckets/{bucket}/grants", put(grant))
        .route("/_grids3/admin/access", post(access))
}

#[derive(Deserialize, Default)]
struct CreateKey {
    #[serde(default)]
    name: String,
    /// The e-mail address ACL grants may name the key by (`emailAddress=`).
    #[serde(default)]
    email: Option<String>,
}

async fn create_key(State(st): State<AppState>, req: Request) -> Result<Response, AdminError> {
    let input: CreateKey = optional_json(&root_body(&st, req).await?)?;
    let (id, secret) = st
        .store
        .meta()
        .create_access_key(&input.name)
        .await
        .map_err(db_error)?;
    let email = input.email.filter(|e| !e.trim().is_empty());
    if let Some(e) = &email {
        st.store
            .meta()
            .set_key_email(&id, e)
            .await
            .map_err(db_error)?;
    }
    Ok((
        StatusCode::CREATED,
        Json(json!({"accessKeyId": id, "secretAccessKey": secret, "name": input.name, "email": email})),
    )
        .into_response())
}

async fn list_keys(State(st): State<AppState>, req: Request) -> Result<Response, AdminError> {
    root_body(&st, req).await?;
    let keys = st.store.meta().list_access_keys().await.map_err(db_error)?;
    let keys: Vec<_> = keys
        .into_iter()
        .map(|k| json!({"accessKeyId": k.id, "name": k.name, "email": k.email, "root": k.root, "disabled": k.disabled, "created": crate::s3::request::headers::iso8601(k.created)}))
        .collect();
    Ok(Json(json!({"keys": keys})).into_response())
}

async fn delete_key(
    State(st): State<AppState>,
    Path(id): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    root_body(&st, req).await?;
    if !st
        .store
        .meta()
        .delete_access_key(&id)
        .await
        .map_err(db_error)?
    {
        return Err(AdminError(error(
            StatusCode::NOT_FOUND,
            "NoSuchKey",
            "no such access key (or it is the root key)",
        )));
    }
    st.creds.forget(&id);
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn disable_key(
    State(st): State<AppState>,
    Path(id): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    set_disabled(st, id, req, true).await
}

async fn enable_key(
    State(st): State<AppState>,
    Path(id): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    set_disabled(st, id, req, false).await
}

/// A disabled key is refused at once on this instance and within a second on every other
/// (the keys' version counter, see `auth::credentials`), and its console sessions and listen
/// streams end with it.
async fn set_disabled(
    st: AppState,
    id: String,
    req: Request,
    disabled: bool,
) -> Result<Response, AdminError> {
    root_body(&st, req).await?;
    if !st
        .store
        .meta()
        .set_key_disabled(&id, disabled)
        .await
        .map_err(db_error)?
    {
        return Err(AdminError(error(
            StatusCode::NOT_FOUND,
            "NoSuchKey",
            "no such access key (or it is the root key)",
        )));
    }
    st.creds.forget(&id);
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
struct Grant {
    #[serde(rename = "accessKeyId")]
    access_key_id: String,
    /// `read`, `write`, `owner`, or `none` to revoke.
    role: String,
}

async fn grant(
    State(st): State<AppState>,
    Path(bucket): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    let body = root_body(&st, req).await?;
    let g: Grant = serde_json::from_slice(&body).map_err(|e| {
        AdminError(error(
            StatusCode::BAD_REQUEST,
            "MalformedJSON",
            &e.to_string(),
        ))
    })?;
    let role = match g.role.as_str() {
        "none" => None,
        r if crate::s3::rules::authz::Role::parse(r).is_some() => Some(r),
        _ => {
            return Err(AdminError(error(
                StatusCode::BAD_REQUEST,
                "InvalidArgument",
                "role must be read, write, owner or none",
            )))
        }
    };
    if !g
        .access_key_id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        || g.access_key_id.is_empty()
    {
        return Err(AdminError(error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            "invalid access key id",
        )));
    }
    if !st
        .store
        .meta()
        .grant(&bucket, &g.access_key_id, role)
        .await
        .map_err(db_error)?
    {
        return Err(crate::error::S3Error::no_such_bucket().into());
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
struct AccessQuery {
    #[serde(rename = "accessKeyId")]
    access_key_id: String,
    bucket: String,
    #[serde(default)]
    key: Option<String>,
    /// A policy action (`s3:GetObject`); the default reads the key, or lists the bucket.
    #[serde(default)]
    action: Option<String>,
}

/// "Why was this denied?": the decision the authorization makes for a key (or `anonymous`),
/// an action and a bucket or object, with the rule that decided and the inputs it saw. The
/// request's own conditions (source address, headers) are not known here: policy conditions
/// on them see an empty request.
async fn access(State(st): State<AppState>, req: Request) -> Result<Response, AdminError> {
    use crate::s3::authz;
    use crate::s3::request::access::Access;
    let body = root_body(&st, req).await?;
    let q: AccessQuery = serde_json::from_slice(&body).map_err(|e| {
        AdminError(error(
            StatusCode::BAD_REQUEST,
            "MalformedJSON",
            &e.to_string(),
        ))
    })?;
    let action = q.action.clone().unwrap_or_else(|| {
        if q.key.is_some() {
            "s3:GetObject"
        } else {
            "s3:ListBucket"
        }
        .to_owned()
    });
    let Some(op) = authz::op_for_action(&action) else {
        return Err(AdminError(error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            "unknown action (one of the s3: actions a bucket policy may name)",
        )));
    };
    let auth = if q.access_key_id == "anonymous" {
        crate::auth::Auth::anonymous()
    } else {
        let keys = st.store.meta().list_access_keys().await.map_err(db_error)?;
        let Some(k) = keys.iter().find(|k| k.id == q.access_key_id) else {
            return Err(AdminError(error(
                StatusCode::NOT_FOUND,
                "NoSuchKey",
                "no such access key",
            )));
        };
        crate::auth::Auth::unsigned_body(k.id.clone(), k.root)
    };
    let facts = authz::facts(
        &axum::http::HeaderMap::new(),
        &[],
        &auth,
        None,
        // The explanation assumes TLS; a policy on `aws:SecureTransport` is then named as such.
        crate::tls::Transport { tls: true },
        st.store.meta().clock().now().to_chrono(),
    );
    let target = authz::Target {
        bucket: &q.bucket,
        key: q.key.as_deref(),
        facts: &facts,
        shape: Default::default(),
    };
    let ex = authz::explain(&st, &op, &auth, &target).await?;
    // Where the object's ACL decides, look at the object as the request would.
    let (allowed, rule) = match ex.access {
        Access::IfObjectAcl { .. } => {
            let found = match &q.key {
                Some(k) => st
                    .store
                    .head(&q.bucket, k)
                    .await
                    .map_err(|e| AdminError::from(S3Error::from(e)))?,
                None => None,
            };
            match crate::s3::rules::acl::require_object_access(&auth, ex.access, found) {
                Ok(_) => (true, "the object's ACL allows it"),
                Err(e) if e.code == "NoSuchKey" => (false, "left to the object's ACL, and there is no such key (404)"),
                Err(_) => (false, "left to the object's ACL, which does not allow it (or there is no such key: 403)"),
            }
        }
        Access::Denied | Access::MethodNotAllowed => (false, ex.rule),
        Access::Granted | Access::GrantedUnlisted => (true, ex.rule),
    };
    let pab = ex.public_access_block;
    Ok(Json(json!({
        "accessKeyId": q.access_key_id,
        "bucket": q.bucket,
        "key": q.key,
        "action": action,
        "allowed": allowed,
        "rule": rule,
        "inputs": {
            "bucketExists": ex.bucket_exists,
            "owner": ex.owner,
            "role": ex.role.map(|r| format!("{r:?}").to_ascii_lowercase()),
            "policy": format!("{:?}", ex.policy),
            "aclsDisabled": ex.acls_disabled,
            "blockPublicAccess": {
                "BlockPublicAcls": pab.block_public_acls,
                "IgnorePublicAcls": pab.ignore_public_acls,
                "BlockPublicPolicy": pab.block_public_policy,
                "RestrictPublicBuckets": pab.restrict_public_buckets,
            },
        },
    }))
    .into_response())
}
