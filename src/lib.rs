//! grids3: an S3-compatible HTTP object-storage gateway over MongoDB GridFS.
//!
//! A request travels one way: `http` (router, addressing, operation enum) -> `auth` (SigV4,
//! presigned, aws-chunked bodies) -> `s3` (one handler per operation family) -> `storage`
//! (GridFS engine, metastore, object layer) -> `xml` or a byte stream.

pub mod access_log;
pub mod admin_cli;
pub mod auth;
pub mod background;
pub mod bench;
pub mod checksum;
pub mod config;
pub mod console;
pub mod crypto;
pub mod dberror;
pub mod devdb;
pub mod error;
pub mod failpoint;
pub mod hashing;
pub mod http;
pub mod iam;
pub mod janitor;
pub mod lifecycle;
pub mod local;
pub mod metrics;
pub mod minio_admin;
pub mod model;
pub mod notify;
pub mod oidc;
pub mod percent;
pub mod s3;
pub mod search;
pub mod search_cli;
pub mod server;
pub mod state;
pub mod storage;
pub mod sts;
pub mod subresource;
pub mod tls;
pub mod website;
pub mod xml;

#[cfg(test)]
mod fuzz_tests;

pub use state::AppState;

/// Connects the state ([`AppState::connect`]) and starts the janitor's loops on it: what a
/// gateway process (or a test's in-process gateway) runs before serving.
pub async fn start(config: config::Config, client: mongodb::Client) -> anyhow::Result<AppState> {
    let state = AppState::connect(config, client).await?;
    let handles = janitor::spawn(&state);
    state.keep_background(handles);
    Ok(state)
}

/// The application: the router over a state built by [`start`].
pub fn app(state: AppState) -> axum::Router {
    http::router(state)
}
