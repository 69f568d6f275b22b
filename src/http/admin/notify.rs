//! The admin API of event notification targets, root key only: list, add (or replace), remove.
//! Targets added here live in the database (`__notify_targets`) and so serve every instance;
//! the environment's targets (`GRIDS3_NOTIFY_*`) are listed too, marked as such, and cannot be
//! removed here. Bearer tokens are never returned.

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::common::{db_error, error, optional_json, root_body, AdminError};
use crate::notify::targets::{self, Endpoint, TargetSpec};
use crate::state::AppState;

/// The routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/_grids3/admin/notify/targets", get(list).post(add))
        .route("/_grids3/admin/notify/targets/{name}", delete(remove))
}

fn describe(t: &TargetSpec, source: &str) -> serde_json::Value {
    let mut v =
        json!({"id": t.id, "type": t.endpoint.type_name(), "arn": t.arn(), "source": source});
    match &t.endpoint {
        Endpoint::Webhook { url, auth_token } => {
            v["url"] = json!(url);
            v["authToken"] = json!(auth_token.is_some());
        }
        Endpoint::Nats {
            url,
            subject,
            jetstream,
        } => {
            v["url"] = json!(url);
            v["subject"] = json!(subject);
            v["jetstream"] = json!(jetstream);
        }
    }
    v
}

async fn list(State(st): State<AppState>, req: Request) -> Result<Response, AdminError> {
    root_body(&st, req).await?;
    let mut out: Vec<_> = st
        .config
        .notify_targets
        .iter()
        .map(|t| describe(t, "environment"))
        .collect();
    for t in st.notify.stored().list().await.map_err(db_error)? {
        if !st
            .config
            .notify_targets
            .iter()
            .any(|e| e.name() == t.name())
        {
            out.push(describe(&t, "database"));
        }
    }
    Ok(Json(json!({"targets": out})).into_response())
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Add {
    #[serde(default)]
    id: String,
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    auth_token: Option<String>,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    jetstream: bool,
}

fn bad(message: &str) -> AdminError {
    AdminError(error(StatusCode::BAD_REQUEST, "InvalidArgument", message))
}

async fn add(State(st): State<AppState>, req: Request) -> Result<Response, AdminError> {
    let input: Add = optional_json(&root_body(&st, req).await?)?;
    if !targets::valid_id(&input.id) {
        return Err(bad("a target id is 1 to 64 letters, digits, '-' and '_'"));
    }
    let endpoint = match input.kind.as_str() {
        "webhook" => {
            if input.subject.is_some() || input.jetstream {
                return Err(bad("subject and jetstream are NATS settings"));
            }
            Endpoint::Webhook {
                url: input.url,
                auth_token: input.auth_token.filter(|t| !t.is_empty()),
            }
        }
        "nats" => {
            if input.auth_token.is_some() {
                return Err(bad("authToken is a webhook setting"));
            }
            Endpoint::Nats {
                url: input.url,
                subject: input.subject.unwrap_or_else(|| "grids3.events".into()),
                jetstream: input.jetstream,
            }
        }
        _ => return Err(bad("type is webhook or nats")),
    };
    endpoint.validate().map_err(|e| bad(&e))?;
    let spec = TargetSpec {
        id: input.id.to_ascii_lowercase(),
        endpoint,
    };
    if st
        .config
        .notify_targets
        .iter()
        .any(|e| e.name() == spec.name())
    {
        return Err(AdminError(error(
            StatusCode::CONFLICT,
            "TargetInEnvironment",
            "a target of this id and type is configured in this instance's environment",
        )));
    }
    st.notify.stored().put(&spec).await.map_err(db_error)?;
    Ok((StatusCode::CREATED, Json(describe(&spec, "database"))).into_response())
}

async fn remove(
    State(st): State<AppState>,
    Path(name): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    root_body(&st, req).await?;
    // The name (`<id>:<type>`) or the ARN.
    let name = targets::name_of_arn(&name).unwrap_or_else(|| name.to_ascii_lowercase());
    if !st.notify.stored().remove(&name).await.map_err(db_error)? {
        return Err(AdminError(error(
            StatusCode::NOT_FOUND,
            "NoSuchTarget",
            "no target of this name in the database (environment targets are removed from the environment)",
        )));
    }
    Ok(Json(json!({"removed": name})).into_response())
}
