//! Verifying an OpenID Connect ID token (OIDC Core §3.1.3.7) against a registered provider.
//!
//! The JWS itself (splitting, base64url, the header, the signature over the first two parts)
//! is jsonwebtoken's: a widely used, maintained crate whose decode refuses a header `alg`
//! outside the allowed list and a key of another family than the algorithm, the two checks
//! whose absence made the classic JWT attacks (`alg: none`; `HS256` keyed with the
//! provider's public key). Its cryptography is ours, on ring (`super::crypto`). Its claim
//! checks are not used: they read the process's clock, and versions before 10.3 confused
//! claim types (CVE-2026-25537); the claims are checked here, with the caller's clock and
//! strict types.

use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::error::OidcError;
use super::issuer::NormalizedIssuer;

/// Largest token read, in bytes: checked before anything is decoded (ID tokens are a few
/// KiB; STS's own limit on `WebIdentityToken` is 20,000 characters).
pub const MAX_TOKEN_LEN: usize = 16 * 1024;

/// Clock skew allowed between grids3's clock and the provider's, in seconds, for `exp`,
/// `nbf` and `iat`.
pub const SKEW_SECS: i64 = 60;

/// A verified ID token.
#[derive(Clone, Debug, PartialEq)]
pub struct Verified {
    /// Every claim of the token, as sent.
    pub claims: Map<String, Value>,
    /// `iss`: the provider's URL, exactly as registered.
    pub issuer: String,
    /// `sub`: the user at the provider.
    pub sub: String,
    /// The one of the token's audiences that is a registered client id.
    pub aud: String,
    /// `amr` (authentication methods), from an array or a single string; empty if absent.
    pub amr: Vec<String>,
    /// `exp`, seconds since the epoch.
    pub exp: i64,
}

fn bad(msg: impl Into<String>) -> OidcError {
    OidcError::InvalidIdentityToken(msg.into())
}

/// The parts of a token's header that choose its key.
pub(crate) struct Header {
    /// RS256 or ES256.
    pub alg: Algorithm,
    /// The key id, if the token names one.
    pub kid: Option<String>,
}

/// Reads a token's header: size first, then shape, then `alg` (only RS256 and ES256:
/// `none`, the HMAC family and everything else is refused here, before any key is looked
/// at), `kid`, and no `crit` (RFC 7515 §4.1.11: an extension we do not understand must not
/// be ignored).
pub(crate) fn header(token: &str) -> Result<Header, OidcError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(bad(format!(
            "The token is longer than {MAX_TOKEN_LEN} bytes."
        )));
    }
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3
        || parts[..2].iter().any(|p| p.is_empty())
        || !token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    {
        return Err(bad(
            "The token is not a signed JWT (three base64url parts).",
        ));
    }
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(parts[0])
        .map_err(|_| bad("The token's header is not base64url."))?;
    let Ok(Value::Object(h)) = serde_json::from_slice::<Value>(&raw) else {
        return Err(bad("The token's header is not a JSON object."));
    };
    let alg = match h.get("alg").and_then(Value::as_str) {
        Some("RS256") => Algorithm::RS256,
        Some("ES256") => Algorithm::ES256,
        Some(other) => {
            return Err(bad(format!(
                "The token's signing algorithm {:?} is not accepted (RS256 or ES256).",
                other.chars().take(16).collect::<String>()
            )))
        }
        None => return Err(bad("The token's header has no algorithm.")),
    };
    let kid = match h.get("kid") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad("The token's key id is not a string.")),
    };
    if h.contains_key("crit") {
        return Err(bad("The token's header has critical extensions."));
    }
    Ok(Header { alg, kid })
}

/// Checks the signature with each candidate key (one, unless the provider repeated a kid)
/// and returns the claims of the first that verifies.
pub(crate) fn signed_claims(
    token: &str,
    alg: Algorithm,
    keys: &[DecodingKey],
) -> Result<Map<String, Value>, OidcError> {
    let mut validation = Validation::new(alg);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.leeway = 0;
    let mut why = bad("The provider has no key for the token.");
    for key in keys {
        match jsonwebtoken::decode::<Value>(token, key, &validation) {
            Ok(data) => {
                return match data.claims {
                    Value::Object(m) => Ok(m),
                    _ => Err(bad("The token's payload is not a JSON object.")),
                }
            }
            Err(e) => {
                why = match e.kind() {
                    jsonwebtoken::errors::ErrorKind::InvalidSignature => {
                        bad("The token's signature is not valid.")
                    }
                    jsonwebtoken::errors::ErrorKind::InvalidAlgorithm => {
                        bad("The token's algorithm does not match the provider's key.")
                    }
                    _ => bad("The token is malformed."),
                }
            }
        }
    }
    Err(why)
}

/// A NumericDate claim (RFC 7519 §2): a JSON number, never a string (a string `exp` that a
/// lax check skipped is how claim checks are bypassed).
fn time(claims: &Map<String, Value>, name: &str) -> Result<Option<i64>, OidcError> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => {
            if let Some(i) = n.as_i64() {
                return Ok(Some(i));
            }
            match n.as_f64() {
                Some(f) if f.is_finite() && f.abs() < 1e15 => Ok(Some(f.floor() as i64)),
                _ => Err(bad(format!("The token's {name} is out of range."))),
            }
        }
        Some(_) => Err(bad(format!("The token's {name} is not a number."))),
    }
}

/// Checks the claims of a token whose signature verified: `iss`, `exp` (required), `nbf`,
/// `iat`, `aud` and `azp` (if present) against the client ids, `sub` (required), at `now` (seconds, the caller's
/// clock) with [`SKEW_SECS`] of slack.
pub(crate) fn check_claims(
    claims: Map<String, Value>,
    issuer: &NormalizedIssuer,
    client_ids: &[String],
    now: i64,
) -> Result<Verified, OidcError> {
    match claims.get("iss") {
        Some(Value::String(s)) if *s == issuer.issuer => {}
        _ => return Err(bad("The token's issuer is not the provider's URL.")),
    }
    let Some(exp) = time(&claims, "exp")? else {
        return Err(bad("The token has no expiration time (exp)."));
    };
    if now >= exp.saturating_add(SKEW_SECS) {
        // AWS's wording (STS AssumeRoleWithWebIdentity), in seconds since the epoch.
        return Err(OidcError::ExpiredToken(format!(
            "Token expired: current date/time {now} must be before the expiration date/time {exp}"
        )));
    }
    if let Some(nbf) = time(&claims, "nbf")? {
        if nbf > now.saturating_add(SKEW_SECS) {
            return Err(bad(format!(
                "The token is not valid before {nbf} (current date/time {now})."
            )));
        }
    }
    if let Some(iat) = time(&claims, "iat")? {
        if iat > now.saturating_add(SKEW_SECS) {
            return Err(bad(format!(
                "The token was issued in the future: {iat} (current date/time {now})."
            )));
        }
    }
    let auds: Vec<&str> = match claims.get("aud") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => {
            a.iter().filter_map(Value::as_str).collect()
        }
        Some(_) => {
            return Err(bad(
                "The token's audience (aud) is not a string or strings.",
            ))
        }
        None => return Err(bad("The token has no audience (aud).")),
    };
    let Some(aud) = auds
        .iter()
        .find(|a| client_ids.iter().any(|c| c == *a))
        .map(|a| a.to_string())
    else {
        return Err(OidcError::IncorrectAudience);
    };
    // `azp` (OIDC Core §2): the party the token was issued to. Where present it must be a
    // registered client id as well, whether the token has one audience or several (Core
    // §3.1.3.7 items 4 and 5: with several audiences the client should check it); a token
    // issued to another client and merely naming ours among its audiences is refused. Its
    // absence is not required (many providers omit it even with several audiences).
    match claims.get("azp") {
        None => {}
        Some(Value::String(azp)) if client_ids.iter().any(|c| c == azp) => {}
        Some(Value::String(_)) => return Err(OidcError::IncorrectAudience),
        Some(_) => return Err(bad("The token's authorized party (azp) is not a string.")),
    }
    let sub = match claims.get("sub") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(bad("The token has no subject (sub).")),
    };
    let amr = match claims.get("amr") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    Ok(Verified {
        issuer: issuer.issuer.clone(),
        sub,
        aud,
        amr,
        exp,
        claims,
    })
}
