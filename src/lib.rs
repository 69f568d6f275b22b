//! grids3: an S3-compatible HTTP object-storage gateway over MongoDB GridFS.
//!
//! A request travels one way: `http` (router, addressing, operation enum) -> `auth` (SigV4,
//! presigned, aws-chunked bodies) -> `s3` (one handler per operation family) -> `storage`
//! (GridFS engine, metastore, object layer) -> `xml` or a byte stream.

pub mod admin_cli;
pub mod auth;
pub mod background;
pub mod checksum;
pub mod config;
pub mod crypto;
pub mod devdb;
pub mod error;
pub mod failpoint;
pub mod http;
pub mod janitor;
pub mod lifecycle;
pub mod local;
pub mod metrics;
pub mod s3;
pub mod server;
pub mod state;
pub mod storage;
pub mod subresource;
pub mod tls;
pub mod xml;

#[cfg(test)]
mod fuzz_tests;

pub use state::AppState;

/// The application: the router over a state built by [`AppState::init`].
pub fn app(state: AppState) -> axum::Router {
    http::router(state)
}
