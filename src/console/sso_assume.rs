//! The console as STS's client: a signed-in person's ID token exchanged for a role's
//! temporary credentials by the very AssumeRoleWithWebIdentity a CI job sends
//! (`sts::web_identity`), so that the provider's verification and the role's trust policy
//! decide the console's sign-in exactly as they decide the API's.

use mongodb::bson::DateTime;
use serde::Deserialize;

use crate::iam::IamError;
use crate::state::AppState;

/// Credentials for the console session.
pub struct Creds {
    pub access_key: String,
    pub token: String,
    /// The assumed-role session's ARN (who the console shows).
    pub arn: String,
    pub expiration: DateTime,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Answer {
    credentials: Credentials,
    assumed_role_user: AssumedRoleUser,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Credentials {
    access_key_id: String,
    session_token: String,
    expiration: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AssumedRoleUser {
    arn: String,
}

/// The session length asked for: the role's maximum, up to the console's session length
/// (`None`: STS's default, when the role cannot be read; STS then judges the role).
async fn duration(st: &AppState, arn: &str) -> Option<i64> {
    // STS's own reading of the ARN (exact, path included), so the two never disagree.
    let role = crate::sts::assume::role_named(st, arn).await.ok()??;
    let console = st.config.console_session_hours.max(1) as i64 * 3600;
    Some(
        role.max_session
            .min(console)
            .max(crate::sts::assume::MIN_DURATION),
    )
}

/// Assumes role `arn` with the ID `token` as session `name`: the credentials, or `None` when
/// the role does not admit this identity (or does not exist: STS answers both alike).
pub async fn assume(
    st: &AppState,
    arn: &str,
    name: &str,
    token: &str,
) -> Result<Option<Creds>, IamError> {
    // Before the form: its serializer is not `Send`, so it lives between no awaits.
    let asked = duration(st, arn).await;
    let body = {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("Action", "AssumeRoleWithWebIdentity")
            .append_pair("Version", "2011-06-15")
            .append_pair("RoleArn", arn)
            .append_pair("RoleSessionName", name)
            .append_pair("WebIdentityToken", token);
        if let Some(d) = asked {
            form.append_pair("DurationSeconds", &d.to_string());
        }
        form.finish()
    };
    let params = crate::iam::query::Params::parse_for(None, body.as_bytes(), "2011-06-15")?;
    let rid = crate::s3::respond::new_request_id();
    let xml = match crate::sts::web_identity::assume(st, &params, &rid).await {
        Ok(x) => x,
        Err(e) if e.code == "AccessDenied" => {
            tracing::info!(
                role = arn,
                "console single sign-on: the role does not admit this identity"
            );
            return Ok(None);
        }
        Err(e) => {
            tracing::warn!(role = arn, code = e.code, message = %e.message, "console single sign-on: STS refused");
            return Err(e);
        }
    };
    let a: Answer = super::iamcall::result_of(&xml, "AssumeRoleWithWebIdentity")?;
    let expiration =
        chrono::DateTime::parse_from_rfc3339(&a.credentials.expiration).map_err(|e| {
            tracing::error!(error = %e, "console single sign-on: STS's expiration");
            IamError::service_failure()
        })?;
    Ok(Some(Creds {
        access_key: a.credentials.access_key_id,
        token: a.credentials.session_token,
        arn: a.assumed_role_user.arn,
        expiration: DateTime::from_millis(expiration.timestamp_millis()),
    }))
}
