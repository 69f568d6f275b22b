//! The IAM Query API (issue 60), served on the S3 endpoint for requests signed for the `iam`
//! service, so that `aws iam --endpoint-url ...` and boto3's `iam` client work unmodified.
//!
//! - the protocol layer, pure code: [`query`] (the form read into [`query::Params`]),
//!   [`validate`] (AWS's constraints on each parameter), [`error`] (IAM's `<ErrorResponse>`)
//!   and [`xml`] (one function per response shape, from plain view structs);
//! - the entry ([`handle`]): body, signature, caller, authorization, dispatch;
//! - one module per family of actions ([`users`], [`groups`], [`policies`], [`inline`],
//!   [`simulate`], [`details`], [`roles`] and [`role_policies`] with [`role_xml`]),
//!   each translating its actions into calls on the identity store
//!   (`storage::identity`) and decisions of the one policy engine (`auth::policy`).

pub mod actions;
pub mod context;
pub mod details;
pub mod error;
pub mod groups;
pub mod handle;
pub mod inline;
pub mod oidc_providers;
pub mod oidc_xml;
pub mod policies;
pub mod query;
pub mod role_policies;
pub mod role_xml;
pub mod roles;
pub mod simulate;
pub mod slots;
pub mod users;
pub mod validate;
pub mod xml;

pub use error::{IamError, IamResult};
pub use query::Params;
