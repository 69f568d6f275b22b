//! STS (issue 61), served on the S3 endpoint for requests signed for the `sts` service (and
//! an unsigned AssumeRoleWithWebIdentity, routed by its `Action`), so that `aws sts
//! --endpoint-url ...`, boto3's `sts` client and the SDKs' credential providers work
//! unmodified. It speaks the Query protocol of IAM (`iam::query`, `iam::error`) in STS's
//! namespace.
//!
//! - [`entry`]: body, signature, caller, dispatch, logging;
//! - [`decide`]: who may assume a role, pure (the trust policy and the caller's identity
//!   policies, as AWS joins them);
//! - [`assume`] (AssumeRole), [`web_identity`] (AssumeRoleWithWebIdentity, by an OpenID
//!   Connect ID token checked by `oidc`), [`session`] (GetSessionToken, GetCallerIdentity), each making
//!   temporary credentials in the metastore (`storage::meta::sts_keys`);
//! - [`xml`]: the answers.

pub mod assume;
pub mod decide;
pub mod entry;
pub mod session;
pub mod web_identity;
pub mod xml;

/// STS's XML namespace.
pub const STS_NS: &str = "https://sts.amazonaws.com/doc/2011-06-15/";
