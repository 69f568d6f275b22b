//! STS's answers, in its envelope (`<ActionResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">`
//! with `<ActionResult>` and `ResponseMetadata`), written as AWS writes them. `Expiration` is
//! ISO 8601 in UTC (botocore parses it into the credentials' expiry).

use chrono::{DateTime, SecondsFormat, Utc};

use super::STS_NS;
use crate::iam::error::xml_text as escape;

/// Temporary credentials as answered (the secret and the token are shown only this once).
pub struct CredentialsView<'a> {
    /// `ASIA...`.
    pub access_key: &'a str,
    /// The secret access key.
    pub secret: &'a str,
    /// The session token.
    pub token: &'a str,
    /// When they expire.
    pub expiration: DateTime<Utc>,
}

fn el(out: &mut String, tag: &str, text: &str) {
    out.push_str(&format!("<{tag}>{}</{tag}>", escape(text)));
}

fn credentials(out: &mut String, c: &CredentialsView<'_>) {
    out.push_str("<Credentials>");
    el(out, "AccessKeyId", c.access_key);
    el(out, "SecretAccessKey", c.secret);
    el(out, "SessionToken", c.token);
    el(
        out,
        "Expiration",
        &c.expiration.to_rfc3339_opts(SecondsFormat::Secs, true),
    );
    out.push_str("</Credentials>");
}

fn envelope(action: &str, request_id: &str, result: &str) -> String {
    format!(
        "<{action}Response xmlns=\"{STS_NS}\"><{action}Result>{result}</{action}Result><ResponseMetadata><RequestId>{}</RequestId></ResponseMetadata></{action}Response>",
        escape(request_id)
    )
}

/// AssumeRole and AssumeRoleWithWebIdentity (`web`: the provider's `SubjectFromWebIdentityToken`,
/// `Audience` and `Provider`).
pub fn assume_role(
    action: &str,
    c: &CredentialsView<'_>,
    session_arn: &str,
    assumed_id: &str,
    packed_percent: u32,
    web: Option<(&str, &str, &str)>,
    request_id: &str,
) -> String {
    let mut r = String::with_capacity(1024);
    credentials(&mut r, c);
    r.push_str("<AssumedRoleUser>");
    el(&mut r, "AssumedRoleId", assumed_id);
    el(&mut r, "Arn", session_arn);
    r.push_str("</AssumedRoleUser>");
    el(&mut r, "PackedPolicySize", &packed_percent.to_string());
    if let Some((sub, aud, provider)) = web {
        el(&mut r, "SubjectFromWebIdentityToken", sub);
        el(&mut r, "Audience", aud);
        el(&mut r, "Provider", provider);
    }
    envelope(action, request_id, &r)
}

/// GetSessionToken.
pub fn get_session_token(c: &CredentialsView<'_>, request_id: &str) -> String {
    let mut r = String::with_capacity(512);
    credentials(&mut r, c);
    envelope("GetSessionToken", request_id, &r)
}

/// GetCallerIdentity.
pub fn get_caller_identity(arn: &str, user_id: &str, account: &str, request_id: &str) -> String {
    let mut r = String::with_capacity(256);
    el(&mut r, "Arn", arn);
    el(&mut r, "UserId", user_id);
    el(&mut r, "Account", account);
    envelope("GetCallerIdentity", request_id, &r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_have_sts_shapes() {
        let c = CredentialsView {
            access_key: "ASIAEXAMPLE",
            secret: "s&s",
            token: "t",
            expiration: DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
        };
        let x = assume_role(
            "AssumeRole",
            &c,
            "arn:aws:sts::1:assumed-role/r/s",
            "AROA:s",
            6,
            None,
            "rid",
        );
        assert!(x.starts_with("<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleResult><Credentials><AccessKeyId>ASIAEXAMPLE</AccessKeyId><SecretAccessKey>s&amp;s</SecretAccessKey>"));
        assert!(x.contains("<Expiration>2027-01-15T08:00:00Z</Expiration>"));
        assert!(x.contains("<AssumedRoleUser><AssumedRoleId>AROA:s</AssumedRoleId><Arn>arn:aws:sts::1:assumed-role/r/s</Arn></AssumedRoleUser><PackedPolicySize>6</PackedPolicySize>"));
        assert!(x.ends_with(
            "<ResponseMetadata><RequestId>rid</RequestId></ResponseMetadata></AssumeRoleResponse>"
        ));
        let g = get_caller_identity("arn:aws:iam::1:root", "1", "1", "rid");
        assert!(g.contains("<GetCallerIdentityResult><Arn>arn:aws:iam::1:root</Arn><UserId>1</UserId><Account>1</Account></GetCallerIdentityResult>"));
    }
}
