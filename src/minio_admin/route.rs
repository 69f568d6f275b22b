//! Which admin command a request is: its method and the path after `/minio/admin/v3/`, a
//! pure function with a table test. Everything else is [`Command::NotImplemented`], answered
//! as such, never as success.

use axum::http::Method;

/// The admin commands grids3 serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// `PUT add-user`.
    AddUser,
    /// `DELETE remove-user`.
    RemoveUser,
    /// `GET user-info`.
    UserInfo,
    /// `GET list-users`.
    ListUsers,
    /// `PUT set-user-status`.
    SetUserStatus,
    /// `PUT add-canned-policy`.
    AddCannedPolicy,
    /// `DELETE remove-canned-policy`.
    RemoveCannedPolicy,
    /// `GET info-canned-policy`.
    InfoCannedPolicy,
    /// `GET list-canned-policies`.
    ListCannedPolicies,
    /// `PUT set-user-or-group-policy`.
    SetUserOrGroupPolicy,
    /// `POST idp/builtin/policy/attach`.
    AttachPolicy,
    /// `POST idp/builtin/policy/detach`.
    DetachPolicy,
    /// `PUT update-group-members`.
    UpdateGroupMembers,
    /// `GET group`.
    GroupInfo,
    /// `GET groups`.
    ListGroups,
    /// `PUT set-group-status`.
    SetGroupStatus,
    /// `PUT add-service-account`.
    AddServiceAccount,
    /// `POST update-service-account`.
    UpdateServiceAccount,
    /// `GET info-service-account`.
    InfoServiceAccount,
    /// `GET list-service-accounts`.
    ListServiceAccounts,
    /// `DELETE delete-service-account`.
    DeleteServiceAccount,
    /// `GET datausageinfo`.
    DataUsageInfo,
    /// `PUT set-bucket-quota`.
    SetBucketQuota,
    /// `GET get-bucket-quota`.
    GetBucketQuota,
    /// Anything else under `/minio/admin/v3/`.
    NotImplemented,
}

/// The table: method, path, command.
const TABLE: &[(Method, &str, Command)] = &[
    (Method::PUT, "add-user", Command::AddUser),
    (Method::DELETE, "remove-user", Command::RemoveUser),
    (Method::GET, "user-info", Command::UserInfo),
    (Method::GET, "list-users", Command::ListUsers),
    (Method::PUT, "set-user-status", Command::SetUserStatus),
    (Method::PUT, "add-canned-policy", Command::AddCannedPolicy),
    (
        Method::DELETE,
        "remove-canned-policy",
        Command::RemoveCannedPolicy,
    ),
    (Method::GET, "info-canned-policy", Command::InfoCannedPolicy),
    (
        Method::GET,
        "list-canned-policies",
        Command::ListCannedPolicies,
    ),
    (
        Method::PUT,
        "set-user-or-group-policy",
        Command::SetUserOrGroupPolicy,
    ),
    (
        Method::POST,
        "idp/builtin/policy/attach",
        Command::AttachPolicy,
    ),
    (
        Method::POST,
        "idp/builtin/policy/detach",
        Command::DetachPolicy,
    ),
    (
        Method::PUT,
        "update-group-members",
        Command::UpdateGroupMembers,
    ),
    (Method::GET, "group", Command::GroupInfo),
    (Method::GET, "groups", Command::ListGroups),
    (Method::PUT, "set-group-status", Command::SetGroupStatus),
    (
        Method::PUT,
        "add-service-account",
        Command::AddServiceAccount,
    ),
    (
        Method::POST,
        "update-service-account",
        Command::UpdateServiceAccount,
    ),
    (
        Method::GET,
        "info-service-account",
        Command::InfoServiceAccount,
    ),
    (
        Method::GET,
        "list-service-accounts",
        Command::ListServiceAccounts,
    ),
    (
        Method::DELETE,
        "delete-service-account",
        Command::DeleteServiceAccount,
    ),
    (Method::GET, "datausageinfo", Command::DataUsageInfo),
    (Method::PUT, "set-bucket-quota", Command::SetBucketQuota),
    (Method::GET, "get-bucket-quota", Command::GetBucketQuota),
];

/// The prefix this room serves.
pub const PREFIX: &str = "/minio/admin/v3/";

impl Command {
    /// The command of a request (`path` is the whole path).
    pub fn parse(method: &Method, path: &str) -> Command {
        let Some(rest) = path.strip_prefix(PREFIX) else {
            return Command::NotImplemented;
        };
        let rest = rest.trim_end_matches('/');
        TABLE
            .iter()
            .find(|(m, p, _)| m == method && *p == rest)
            .map_or(Command::NotImplemented, |(_, _, c)| *c)
    }

    /// Whether its request body is sealed with the caller's secret (`crypto`).
    pub fn encrypted_request(self) -> bool {
        use Command::*;
        matches!(
            self,
            AddUser | AddServiceAccount | UpdateServiceAccount | AttachPolicy | DetachPolicy
        )
    }

    /// Whether its answer is sealed with the caller's secret.
    pub fn encrypted_response(self) -> bool {
        use Command::*;
        matches!(
            self,
            ListUsers
                | AddServiceAccount
                | InfoServiceAccount
                | ListServiceAccounts
                | AttachPolicy
                | DetachPolicy
        )
    }

    /// Whether it changes anything (the credentials cache is forgotten after it).
    pub fn changes(self) -> bool {
        use Command::*;
        !matches!(
            self,
            UserInfo
                | ListUsers
                | InfoCannedPolicy
                | ListCannedPolicies
                | GroupInfo
                | ListGroups
                | InfoServiceAccount
                | ListServiceAccounts
                | DataUsageInfo
                | GetBucketQuota
                | NotImplemented
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_map_to_commands() {
        let cases = [
            (Method::PUT, "/minio/admin/v3/add-user", Command::AddUser),
            (
                Method::GET,
                "/minio/admin/v3/list-users",
                Command::ListUsers,
            ),
            (Method::GET, "/minio/admin/v3/group", Command::GroupInfo),
            (Method::GET, "/minio/admin/v3/groups", Command::ListGroups),
            (
                Method::POST,
                "/minio/admin/v3/idp/builtin/policy/attach",
                Command::AttachPolicy,
            ),
            (
                Method::DELETE,
                "/minio/admin/v3/delete-service-account",
                Command::DeleteServiceAccount,
            ),
            (
                Method::POST,
                "/minio/admin/v3/update-service-account",
                Command::UpdateServiceAccount,
            ),
            // The wrong method is not the command.
            (
                Method::GET,
                "/minio/admin/v3/add-user",
                Command::NotImplemented,
            ),
            (
                Method::PUT,
                "/minio/admin/v3/user-info",
                Command::NotImplemented,
            ),
            // Other admin commands (server info, heal, config) are not served.
            (Method::GET, "/minio/admin/v3/info", Command::NotImplemented),
            (
                Method::PUT,
                "/minio/admin/v3/set-config-kv",
                Command::NotImplemented,
            ),
            (
                Method::GET,
                "/minio/admin/v2/groups",
                Command::NotImplemented,
            ),
        ];
        for (m, p, c) in cases {
            assert_eq!(Command::parse(&m, p), c, "{m} {p}");
        }
    }

    #[test]
    fn sealed_bodies_are_minio_s() {
        assert!(Command::AddUser.encrypted_request());
        assert!(!Command::AddUser.encrypted_response());
        assert!(Command::ListUsers.encrypted_response());
        assert!(!Command::UpdateGroupMembers.encrypted_request());
        assert!(!Command::AddCannedPolicy.encrypted_request());
        assert!(
            Command::AttachPolicy.encrypted_request() && Command::AttachPolicy.encrypted_response()
        );
        assert!(Command::SetGroupStatus.changes() && !Command::GroupInfo.changes());
    }
}
