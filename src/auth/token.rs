//! Session tokens (STS's temporary credentials, issue 61): the token a request carries
//! (`x-amz-security-token`, or `X-Amz-Security-Token` in a presigned URL) checked against the
//! key that signed it. Temporary credentials sign nothing without their own token; any other
//! key signs nothing with one (AWS refuses both, rather than ignore a token). The token is
//! signed wherever it travels: as an `x-amz-*` header it must be among the signed headers
//! (`unsigned_amz_headers`), and a presigned URL's query is signed whole.

use axum::http::HeaderMap;

use super::credentials::{Credentials, Lookup};
use crate::error::{S3Error, S3Result};
use crate::storage::meta::KeySecret;

/// Longest session token read (grids3's are under 100 characters; AWS's reach about 1,000).
const MAX_TOKEN: usize = 4096;

/// The session token a request carries: `None` when it carries none, an error when it
/// carries more than one (a header and a query parameter, say) or one too long to be any.
pub fn sent(headers: &HeaderMap, query: &[(String, String)]) -> S3Result<Option<String>> {
    let mut found: Vec<String> = headers
        .get_all("x-amz-security-token")
        .iter()
        .map(|v| super::header_text(v.as_bytes()))
        .collect();
    found.extend(
        query
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("x-amz-security-token"))
            .map(|(_, v)| v.clone()),
    );
    match found.len() {
        0 => Ok(None),
        1 if found[0].len() <= MAX_TOKEN => Ok(found.pop()),
        _ => Err(S3Error::invalid_token()),
    }
}

/// The secret of `access_key` for verifying a signature that came with `token`: the key must
/// sign now, and the token must be its session's (or absent for a key that is not a
/// session's).
pub async fn signing_secret(
    creds: &Credentials,
    access_key: &str,
    token: Option<&str>,
) -> S3Result<KeySecret> {
    let stored = match creds.lookup(access_key).await? {
        Lookup::Valid(s) => *s,
        // An expired session is told as such only to whoever has its token (the key id alone,
        // seen in a log or a URL, does not tell expired from unknown).
        Lookup::Expired(s) => {
            check(&s, token)?;
            return Err(S3Error::expired_token());
        }
        Lookup::Unknown => return Err(S3Error::invalid_access_key_id()),
    };
    check(&stored, token)?;
    Ok(stored)
}

/// Whether `token` is what `stored` must be sent with.
pub fn check(stored: &KeySecret, token: Option<&str>) -> S3Result<()> {
    match (&stored.token, token) {
        (None, None) => Ok(()),
        (None, Some(_)) => Err(S3Error::invalid_token()),
        // Temporary credentials without their token: AWS does not know the key alone.
        (Some(_), None) => Err(S3Error::invalid_access_key_id()),
        (Some(t), Some(sent)) => {
            let hash = crate::storage::meta::token_sha256(sent);
            if super::sigv4::signatures_equal(&t.sha256, &hash) {
                Ok(())
            } else {
                Err(S3Error::invalid_token())
            }
        }
    }
}
