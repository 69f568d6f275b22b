//! The admin JSON API under `/_grids3/admin/`, for the root key only (SigV4, like S3
//! requests): access keys and grants, buckets (storage modes, conversions, declared search
//! indexes), KMS keys and event notification targets, account quotas.

pub mod accounts;
pub mod buckets;
pub mod common;
pub mod keys;
pub mod kms;
pub mod notify;
pub mod search;
pub mod usage;

use axum::Router;

use crate::state::AppState;

/// The admin routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .merge(accounts::routes())
        .merge(keys::routes())
        .merge(kms::routes())
        .merge(buckets::routes())
        .merge(notify::routes())
        .merge(search::routes())
        .merge(usage::routes())
}
