//! AssumeRole (issue 61): the role named by ARN, the caller checked against its trust policy
//! and its own identity policies ([`super::decide`]), and temporary credentials made for a
//! session whose rights are the role's, cut by the session policies given (`Policy`,
//! `PolicyArns`): stored with the session and each required to allow a request too
//! (`auth::session`), so they only ever take rights away.

use std::collections::HashMap;

use axum::http::StatusCode;

use super::decide::{self, Assume, Refusal};
use super::xml::{self, CredentialsView};
use crate::auth::policy::{self, Who};
use crate::auth::Auth;
use crate::iam::context::Caller;
use crate::iam::error::{IamError, IamResult};
use crate::iam::query::Params;
use crate::iam::validate;
use crate::state::AppState;
use crate::storage::identity::{Account, Role};
use crate::storage::meta::{NewSession, SessionKind};

/// Shortest session (AWS: 15 minutes).
pub const MIN_DURATION: i64 = 900;

/// The longest session a role's session may ask for when assuming a role (AWS's role
/// chaining limit).
const CHAINED_MAX: i64 = 3600;

/// Most characters of an inline session policy, whitespace not counted (AWS's limit).
pub const SESSION_POLICY_MAX: usize = 2048;

/// Most managed session policies.
const MAX_POLICY_ARNS: usize = 10;

/// A `RoleSessionName`: 2 to 64 of `[\w+=,.@-]`.
pub(super) fn session_name(v: &str) -> IamResult<()> {
    let ok = (2..=64).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_+=,.@-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(IamError::validation_value(
            "roleSessionName",
            v,
            "Member must have length between 2 and 64, and satisfy regular expression pattern: [\\w+=,.@-]*",
        ))
    }
}

/// `DurationSeconds` between [`MIN_DURATION`] and `max` (default `default`).
pub fn duration(p: &Params, default: i64, max: i64, too_long: &str) -> IamResult<i64> {
    let Some(v) = p.get("DurationSeconds") else {
        return Ok(default.min(max));
    };
    let n: i64 = v
        .parse()
        .map_err(|_| IamError::validation_value("durationSeconds", v, "Member must be a number"))?;
    if n < MIN_DURATION {
        return Err(IamError::validation_value(
            "durationSeconds",
            v,
            "Member must have value greater than or equal to 900",
        ));
    }
    if n > max {
        return Err(IamError::validation_error(
            too_long.replace("{max}", &max.to_string()),
        ));
    }
    Ok(n)
}

/// Options grids3 does not implement: refused, never accepted and ignored (MFA would be a
/// check skipped; session tags and source identity would be conditions that never match).
/// And any parameter the action does not take (`known`, with the protocol's own), so that a
/// misspelt `policy` is refused rather than give a session its role's full rights.
pub fn refuse_unsupported(p: &Params, known: &[&str]) -> IamResult<()> {
    for name in p.names() {
        let base = name.split('.').next().unwrap_or(name);
        let protocol = matches!(base, "Action" | "Version") || base.starts_with("X-Amz-");
        let unsupported = matches!(
            base,
            "SerialNumber"
                | "TokenCode"
                | "Tags"
                | "TransitiveTagKeys"
                | "SourceIdentity"
                | "ProvidedContexts"
        );
        if !protocol && !unsupported && !known.contains(&base) {
            return Err(IamError::validation_error(format!(
                "The parameter {name} is not recognized by this action."
            )));
        }
        if matches!(
            base,
            "SerialNumber"
                | "TokenCode"
                | "Tags"
                | "TransitiveTagKeys"
                | "SourceIdentity"
                | "ProvidedContexts"
        ) {
            return Err(IamError::new(
                StatusCode::BAD_REQUEST,
                "NotImplemented",
                format!("grids3 does not implement the {base} parameter of STS."),
            ));
        }
    }
    Ok(())
}

/// The session policies a request gives: `Policy` (checked by the engine's parser, at most
/// [`SESSION_POLICY_MAX`] characters), then each of `PolicyArns` (managed policies of the
/// role's account, their default versions as of now). Returns the texts and the packed size
/// as a percentage of the limit (AWS's `PackedPolicySize`).
pub async fn session_policies(
    st: &AppState,
    p: &Params,
    role_account: &Account,
) -> IamResult<(Vec<String>, u32)> {
    let mut texts = Vec::new();
    let mut size = 0;
    if let Some(doc) = p.checked("Policy", validate::policy_document)? {
        size = validate::policy_size(doc);
        if size > SESSION_POLICY_MAX {
            return Err(IamError::new(
                StatusCode::BAD_REQUEST,
                "PackedPolicyTooLarge",
                format!("Packed policy consumes {}% of allotted space, please use smaller policy for the session.", size * 100 / SESSION_POLICY_MAX),
            ));
        }
        policy::parse_identity(doc).map_err(|e| IamError::malformed_policy_document(e.message))?;
        texts.push(doc.to_owned());
    }
    // Every member given counts, whatever its number (a gap must not drop one: the session
    // would keep rights it was meant to lose).
    let mut arns = Vec::new();
    for name in p.names() {
        if let Some(rest) = name.strip_prefix("PolicyArns.") {
            let ok = rest
                .strip_prefix("member.")
                .and_then(|r| r.strip_suffix(".arn"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if !ok {
                return Err(IamError::validation_error(format!(
                    "The parameter {name} is not recognized (PolicyArns.member.N.arn)."
                )));
            }
            arns.push(p.get(name).unwrap_or_default().to_owned());
        }
    }
    if arns.len() > MAX_POLICY_ARNS {
        return Err(IamError::validation_error(format!(
            "At most {MAX_POLICY_ARNS} managed session policies may be given."
        )));
    }
    for arn in &arns {
        validate::policy_arn("PolicyArns", arn)?;
        let pol = st
            .creds
            .identity()
            .policy(role_account, arn)
            .await
            .map_err(|_| {
                IamError::invalid_input(format!(
                    "Policy {arn} does not exist or is not attachable."
                ))
            })?;
        let doc = pol.default_document().unwrap_or_default().to_owned();
        texts.push(doc);
    }
    Ok((texts, (size * 100 / SESSION_POLICY_MAX) as u32))
}

/// The role an ARN names (`arn:aws:iam::<account>:role/<path/><name>`), found by name in that
/// account; the ARN must be the role's exactly (its path too).
pub(super) async fn role_by_arn(st: &AppState, arn: &str, action: &str) -> IamResult<Role> {
    let not_found =
        || IamError::access_denied(format!("Not authorized to perform {action} on {arn}"));
    role_named(st, arn).await?.ok_or_else(not_found)
}

/// The account id and role name of a role ARN (`arn:aws:iam::<account>:role/<path/><name>`),
/// or STS's ValidationError.
pub(super) fn parse_role_arn(arn: &str) -> IamResult<(&str, &str)> {
    if !(20..=2048).contains(&arn.len()) {
        return Err(IamError::validation_value(
            "roleArn",
            "(length)",
            "Member must have length between 20 and 2048",
        ));
    }
    let bad = || IamError::validation_value("roleArn", arn, "Member must be a role ARN");
    let rest = arn.strip_prefix("arn:aws:iam::").ok_or_else(bad)?;
    let (account, what) = rest.split_once(':').ok_or_else(bad)?;
    let name = what
        .strip_prefix("role/")
        .ok_or_else(bad)?
        .rsplit('/')
        .next()
        .ok_or_else(bad)?;
    if account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) || name.is_empty() {
        return Err(bad());
    }
    Ok((account, name))
}

/// The role a well-formed role ARN names, if there is one whose ARN is exactly that.
pub async fn role_named(st: &AppState, arn: &str) -> IamResult<Option<Role>> {
    let (account, name) = parse_role_arn(arn)?;
    // The role's account is known by id only: its root key is read from the role found.
    let role = st
        .creds
        .identity()
        .role_in_account_id(account, name)
        .await
        .map_err(crate::iam::context::db)?;
    Ok(role.filter(|r| r.arn() == arn))
}

/// Parses a stored trust policy; one that no longer parses trusts nobody.
fn trust_of(role: &Role) -> policy::Policy {
    policy::parse_trust(&role.trust).unwrap_or_else(|e| {
        tracing::error!(role = %role.id, error = %e.message, "a stored trust policy does not parse; it trusts nobody");
        policy::Policy::empty()
    })
}

/// Handles AssumeRole.
pub async fn assume_role(
    st: &AppState,
    auth: &Auth,
    caller: &Caller,
    p: &Params,
    rid: &str,
) -> IamResult<String> {
    refuse_unsupported(
        p,
        &[
            "RoleArn",
            "RoleSessionName",
            "Policy",
            "PolicyArns",
            "DurationSeconds",
            "ExternalId",
        ],
    )?;
    let arn = p.required("RoleArn")?;
    let name = p.required("RoleSessionName")?;
    session_name(name)?;
    let external = p.get("ExternalId");
    if let Some(e) = external {
        // AWS: 2 to 1,224 of `[\w+=,.@:/-]`.
        let ok = (2..=1224).contains(&e.len())
            && e.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_+=,.@:/-".contains(&b));
        if !ok {
            return Err(IamError::validation_value(
                "externalId",
                e,
                "Member must have length between 2 and 1224, and satisfy regular expression pattern: [\\w+=,.@:/-]*",
            ));
        }
    }
    let role = role_by_arn(st, arn, "sts:AssumeRole").await?;
    let chained =
        auth.token.is_some() && caller.user.as_ref().is_some_and(|u| u.role_arn().is_some());
    let itself = caller
        .user
        .as_ref()
        .and_then(|u| u.role_arn())
        .is_some_and(|a| a == role.arn());
    let (max, too_long) = if chained {
        (
            CHAINED_MAX.min(role.max_session),
            "The requested DurationSeconds exceeds the 1 hour session limit for roles assumed by role chaining.",
        )
    } else {
        (
            role.max_session,
            "The requested DurationSeconds exceeds the MaxSessionDuration set for this role ({max} seconds).",
        )
    };
    let dur = duration(p, 3600, max, too_long)?;
    // The trust policy's context: the caller, and the request's STS keys.
    let mut values: HashMap<String, Vec<String>> = caller.values().clone();
    values.insert("sts:rolesessionname".into(), vec![name.to_owned()]);
    if let Some(e) = external {
        values.insert("sts:externalid".into(), vec![e.to_owned()]);
    }
    let (who_any, who_direct) = match &caller.user {
        Some(u) => (u.who(false), u.who(true)),
        None => {
            let w = Who::Key {
                id: caller.account.key.clone(),
                canonical: String::new(),
                account: caller.account.id.clone(),
            };
            (w.clone(), w)
        }
    };
    let cx = |who: Who| policy::Context {
        who,
        action: "sts:AssumeRole",
        resource: role.arn(),
        values: values.clone(),
    };
    let trust = trust_of(&role);
    let identity = caller
        .user
        .as_ref()
        .map(|u| u.policies.evaluate(&cx(u.who(false))).verdict);
    let decision = decide::may_assume(Assume {
        trust: trust.evaluate(&cx(who_any.clone())),
        trust_direct: trust.evaluate(&cx(who_direct)),
        identity,
        same_account: caller.account.id == role.account,
        sessions_allow: crate::auth::session::allows(&caller.sessions, &cx(who_any)),
        itself,
    });
    if let Err(why) = decision {
        let because = match why {
            Refusal::Trust => "the role's trust policy does not allow it",
            Refusal::Identity => "no identity-based policy allows the sts:AssumeRole action",
            Refusal::Session => "no session policy allows the sts:AssumeRole action",
        };
        return Err(IamError::access_denied(format!(
            "User: {} is not authorized to perform: sts:AssumeRole on resource: {} because {because}",
            caller.arn(),
            role.arn()
        )));
    }
    let session = Session {
        kind: SessionKind::AssumeRole,
        name,
        duration: dur,
    };
    answer_session(st, p, &role, session, None, rid).await
}

/// A role's session to make.
pub(super) struct Session<'a> {
    /// AssumeRole or AssumeRoleWithWebIdentity.
    pub kind: SessionKind,
    /// `RoleSessionName`.
    pub name: &'a str,
    /// Seconds.
    pub duration: i64,
}

/// Makes a session of `role` (with the session policies `p` gives) and answers it as
/// AssumeRole and AssumeRoleWithWebIdentity do (`web`: the token's subject, audience and
/// issuer).
pub(super) async fn answer_session(
    st: &AppState,
    p: &Params,
    role: &Role,
    s: Session<'_>,
    web: Option<(&str, &str, &str)>,
    rid: &str,
) -> IamResult<String> {
    let role_account = Account {
        key: role.account_key.clone(),
        id: role.account.clone(),
    };
    let (policies, packed) = session_policies(st, p, &role_account).await?;
    let minted = st
        .store
        .meta()
        .insert_session(NewSession {
            kind: s.kind,
            account_key: &role.account_key,
            role: Some((&role.id, s.name)),
            user: None,
            parent: None,
            policies,
            duration: std::time::Duration::from_secs(s.duration as u64),
        })
        .await
        .map_err(crate::iam::context::db)?;
    if let Err(e) = st
        .creds
        .identity()
        .note_role_used(&role.id, minted.issued)
        .await
    {
        tracing::debug!(error = %e, "could not record a role's use");
    }
    Ok(xml::assume_role(
        s.kind.as_str(),
        &CredentialsView {
            access_key: &minted.access_key,
            secret: &minted.secret,
            token: &minted.token,
            expiration: minted.expiration.to_chrono(),
        },
        &role.session_arn(s.name),
        &format!("{}:{}", role.id, s.name),
        packed,
        web,
        rid,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_follow_aws() {
        assert!(session_name("ci-job.7@x").is_ok());
        assert!(session_name("a").is_err());
        assert!(session_name(&"a".repeat(65)).is_err());
        assert!(session_name("has space").is_err());
        assert!(session_name("a/b").is_err());
    }
}
