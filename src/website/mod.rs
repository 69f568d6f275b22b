//! The website endpoint: a bucket with a website configuration (PutBucketWebsite) served as
//! a static site, as AWS's website endpoint serves it, on a listener of its own
//! (`--website-listen`).
//!
//! - [`host`]: which bucket a request is for (its Host header).
//! - [`rules`]: AWS's rules as pure functions (redirects, index and error documents).
//! - [`page`]: the HTML error pages.
//! - `serve`: the request. It reads objects through the S3 endpoint's own path
//!   (`s3::dispatch` of an anonymous GetObject or HeadObject), so authorization (the bucket
//!   policy, ACLs, Block Public Access), Range, conditionals and the stored headers are the
//!   S3 endpoint's, never a second copy of them.

pub mod host;
pub mod page;
pub mod rules;
mod serve;

use crate::state::AppState;

/// The website endpoint's router.
pub fn router(state: AppState) -> axum::Router {
    axum::Router::new()
        .fallback(serve::entry)
        .with_state(state)
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(|_| {
            let failure = page::Failure {
                status: axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                code: "InternalError".into(),
                message: "We encountered an internal error. Please try again.".into(),
                key: None,
                bucket: None,
                hint: None,
            };
            page::response(&failure, None, &crate::s3::respond::new_request_id(), false)
        }))
}
