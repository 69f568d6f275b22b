//! MinIO's admin API for identity (`/minio/admin/v3/...`): what `mc admin user|group|policy`,
//! `mc admin user svcacct` and minio-py's `MinioAdmin` send, translated onto the one identity
//! store (`storage::identity`) and judged by the one policy engine (`auth::policy`), as the
//! IAM Query API is. No second store:
//!
//! - a MinIO user is an IAM user of the caller's account whose name is its access key, with
//!   one access key of exactly that id and secret;
//! - a canned policy is a customer managed policy of the account; setting a user's or group's
//!   policy attaches it;
//! - a group is an IAM group; user and group status is the `disabled` flag of the store;
//! - a service account is an access key of a parent (an IAM user, or the account's root
//!   credentials) with an optional session policy and the session policies of the key that
//!   made it (`storage::meta::service_accounts`), so its rights are its parent's cut by each.
//!
//! Admin actions carry MinIO's names (`admin:CreateUser`, ...) and are judged by
//! `iam::handle::Caller`: an account's root credentials may do everything in their own
//! account, a user what its identity policies allow, and every session policy must allow
//! the action too. Nothing crosses accounts.
//!
//! The rooms: [`crypto`] (the payload encryption), [`route`] (method and path to a command),
//! [`error`] (MinIO's JSON errors), [`validate`] (MinIO's checks of keys and statuses), [`entry`] (signature, caller, payload, dispatch), and one
//! module per family: [`users`], [`policies`], [`groups`], [`service_accounts`], and
//! [`usage`] (what the account's buckets hold, by recount).

pub mod crypto;
pub mod entry;
pub mod error;
pub mod groups;
pub mod policies;
pub mod quota;
pub mod route;
pub mod service_accounts;
pub mod usage;
pub mod users;
pub mod validate;

pub use entry::handle;
pub use route::PREFIX;

use entry::{Cx, Reply};
use error::AdminResult;
use route::Command;

/// Runs one command for `cx`'s caller.
async fn dispatch(cx: &Cx<'_>, c: Command) -> AdminResult<Reply> {
    use Command::*;
    match c {
        AddUser => users::add(cx).await,
        RemoveUser => users::remove(cx).await,
        UserInfo => users::info(cx).await,
        ListUsers => users::list(cx).await,
        SetUserStatus => users::set_status(cx).await,
        AddCannedPolicy => policies::add(cx).await,
        RemoveCannedPolicy => policies::remove(cx).await,
        InfoCannedPolicy => policies::info(cx).await,
        ListCannedPolicies => policies::list(cx).await,
        SetUserOrGroupPolicy => policies::set(cx).await,
        AttachPolicy => policies::attach(cx, true).await,
        DetachPolicy => policies::attach(cx, false).await,
        UpdateGroupMembers => groups::update_members(cx).await,
        GroupInfo => groups::info(cx).await,
        ListGroups => groups::list(cx).await,
        SetGroupStatus => groups::set_status(cx).await,
        AddServiceAccount => service_accounts::add(cx).await,
        UpdateServiceAccount => service_accounts::update(cx).await,
        InfoServiceAccount => service_accounts::info(cx).await,
        ListServiceAccounts => service_accounts::list(cx).await,
        DeleteServiceAccount => service_accounts::delete(cx).await,
        DataUsageInfo => usage::data_usage_info(cx).await,
        SetBucketQuota => quota::set(cx).await,
        GetBucketQuota => quota::get(cx).await,
        NotImplemented => Err(error::AdminError::not_implemented("this admin command")),
    }
}
