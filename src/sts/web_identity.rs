//! AssumeRoleWithWebIdentity (issue 61): an OpenID Connect ID token, verified against the
//! provider the role ARN's account registered for its issuer (`oidc::Verifier`: signature by
//! the provider's published keys, `iss`, `aud` and `azp` against the registered client ids,
//! `exp`, `nbf`, `iat`, by the database's clock), before the role is looked up, so that a
//! missing role and a refusing trust answer alike; then the role's trust policy evaluated for
//! the provider (`Principal: {"Federated": "arn:aws:iam::<account>:oidc-provider/<host/path>"}`)
//! with the token's claims as AWS's condition keys `<host/path>:sub`, `:aud` and `:amr`. No signature
//! is needed: the token is the proof, as on AWS.

use std::collections::HashMap;

use axum::http::StatusCode;
use base64::Engine;

use super::assume::{
    answer_session, duration, parse_role_arn, refuse_unsupported, role_named, session_name, Session,
};
use crate::auth::policy::{self, Verdict, Who};
use crate::iam::error::{IamError, IamResult};
use crate::iam::query::Params;
use crate::oidc::OidcError;
use crate::state::AppState;
use crate::storage::meta::SessionKind;

/// Longest `WebIdentityToken` read (AWS: 20,000 characters).
const MAX_TOKEN: usize = 20_000;

fn invalid(msg: impl Into<String>) -> IamError {
    IamError::new(StatusCode::BAD_REQUEST, "InvalidIdentityToken", msg)
}

/// The `iss` claim of a token, read without verifying it: only to find which registered
/// provider must verify it.
fn unverified_issuer(token: &str) -> IamResult<String> {
    let payload = token
        .split('.')
        .nth(1)
        .ok_or_else(|| invalid("The ID token is not a JWT."))?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| invalid("The ID token is not a JWT."))?;
    let v: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|_| invalid("The ID token is not a JWT."))?;
    v.get("iss")
        .and_then(|i| i.as_str())
        .map(str::to_owned)
        .ok_or_else(|| invalid("The ID token has no issuer."))
}

/// The verifier's refusals in STS's words.
fn sts_error(e: OidcError) -> IamError {
    match e {
        // STS's code for an expired web identity token (botocore's ExpiredTokenException).
        OidcError::ExpiredToken(m) => {
            IamError::new(StatusCode::BAD_REQUEST, "ExpiredTokenException", m)
        }
        // What went wrong talking to the provider (addresses, the resolver's and the TLS
        // stack's errors) is for the operator's log, not for an unsigned caller: it would
        // map the gateway's network for anyone who registers nothing (review F5b).
        OidcError::IdpCommunication(m) => {
            tracing::warn!(error = %m, "AssumeRoleWithWebIdentity: the identity provider could not be read");
            IamError::new(
                StatusCode::BAD_REQUEST,
                "IDPCommunicationError",
                "Couldn't retrieve verification key from your identity provider, please reference AssumeRoleWithWebIdentity documentation for requirements",
            )
        }
        OidcError::IncorrectAudience => invalid("Incorrect token audience"),
        OidcError::InvalidIdentityToken(m) | OidcError::InvalidInput(m) => invalid(m),
    }
}

/// Handles AssumeRoleWithWebIdentity.
pub async fn assume(st: &AppState, p: &Params, rid: &str) -> IamResult<String> {
    refuse_unsupported(
        p,
        &[
            "RoleArn",
            "RoleSessionName",
            "WebIdentityToken",
            "ProviderId",
            "Policy",
            "PolicyArns",
            "DurationSeconds",
        ],
    )?;
    if p.get("ProviderId").is_some() {
        // OAuth 2.0 access tokens of Amazon or Facebook: not OpenID Connect.
        return Err(IamError::new(
            StatusCode::BAD_REQUEST,
            "NotImplemented",
            "grids3 takes OpenID Connect ID tokens only (no ProviderId).",
        ));
    }
    let arn = p.required("RoleArn")?;
    let name = p.required("RoleSessionName")?;
    session_name(name)?;
    let token = p.required("WebIdentityToken")?;
    if token.len() > MAX_TOKEN {
        return Err(IamError::validation_value(
            "webIdentityToken",
            "(too long)",
            "Member must have length less than or equal to 20000",
        ));
    }
    // The token is verified before the role is looked at, and a missing role is answered as
    // a trust that refuses: an unsigned caller learns nothing about the account's roles
    // (review F5a). The account is the ARN's.
    let (account, _) = parse_role_arn(arn)?;
    let denied =
        || IamError::access_denied("Not authorized to perform sts:AssumeRoleWithWebIdentity");
    let issuer = unverified_issuer(token)?;
    let provider = st
        .creds
        .identity()
        .oidc_provider_by_issuer(account, &issuer)
        .await
        .map_err(crate::iam::context::db)?
        .ok_or_else(|| {
            invalid(format!(
                "No OpenIDConnect provider found in your account for {issuer}"
            ))
        })?;
    let now = st.store.meta().clock().now().timestamp_millis() / 1000;
    let verified = st
        .oidc
        .verify(&provider.url, &provider.client_ids, token, now)
        .await
        .map_err(sts_error)?;
    let role = role_named(st, arn).await?.ok_or_else(denied)?;
    let max = role.max_session;
    let dur = duration(
        p,
        3600,
        max,
        "The requested DurationSeconds exceeds the MaxSessionDuration set for this role ({max} seconds).",
    )?;
    // The trust policy, for the provider, with the token's claims as AWS names them.
    let host = provider.name();
    let mut values: HashMap<String, Vec<String>> = HashMap::new();
    values.insert(format!("{host}:sub"), vec![verified.sub.clone()]);
    values.insert(format!("{host}:aud"), vec![verified.aud.clone()]);
    if !verified.amr.is_empty() {
        values.insert(format!("{host}:amr"), verified.amr.clone());
    }
    values.insert("sts:rolesessionname".into(), vec![name.to_owned()]);
    values.insert("aws:federatedprovider".into(), vec![provider.arn()]);
    let values = values
        .into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect();
    let trust = policy::parse_trust(&role.trust).unwrap_or_else(|_| policy::Policy::empty());
    let verdict = trust.evaluate(&policy::Context {
        who: Who::Federated(provider.arn()),
        action: "sts:AssumeRoleWithWebIdentity",
        resource: role.arn(),
        values,
    });
    if verdict != Verdict::Allow {
        return Err(denied());
    }
    let session = Session {
        kind: SessionKind::WebIdentity,
        name,
        duration: dur,
    };
    let web = (
        verified.sub.as_str(),
        verified.aud.as_str(),
        verified.issuer.as_str(),
    );
    answer_session(st, p, &role, session, Some(web), rid).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issuer_is_read_from_the_payload_only_to_pick_a_provider() {
        let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let t = format!(
            "{}.{}.sig",
            enc(r#"{"alg":"RS256"}"#),
            enc(r#"{"iss":"https://idp.example"}"#)
        );
        assert_eq!(unverified_issuer(&t).unwrap(), "https://idp.example");
        assert!(unverified_issuer("garbage").is_err());
        assert!(unverified_issuer(&format!("a.{}.c", enc("[1]"))).is_err());
    }
}
