//! The console's single sign-on through an OpenID provider (issue 61): which provider, which
//! client the console is at that provider, and which roles a person may become.

use super::Secret;

/// `--console-oidc-*`: unset issuer, no single sign-on (key-and-secret login only).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ConsoleSso {
    /// The OpenID provider the console offers "Sign in with" (its issuer URL, as registered
    /// with CreateOpenIDConnectProvider in the roles' account, with the client id below in
    /// its client id list). Its URL obeys the same policy as every provider's
    /// (`--oidc-allowed-hosts`, `--oidc-allow-loopback`).
    #[arg(long, env = "GRIDS3_CONSOLE_OIDC_ISSUER")]
    pub console_oidc_issuer: Option<String>,

    /// The console's client id at the provider. Its redirect URI there must be
    /// `<console URL>/login/sso/callback`.
    #[arg(long, env = "GRIDS3_CONSOLE_OIDC_CLIENT_ID")]
    pub console_oidc_client_id: Option<String>,

    /// The client's secret (a confidential client; sent by HTTP Basic, or in the form when
    /// the provider supports only that). Unset: a public client, proved by PKCE alone.
    #[arg(
        long,
        env = "GRIDS3_CONSOLE_OIDC_CLIENT_SECRET",
        hide_env_values = true
    )]
    pub console_oidc_client_secret: Option<Secret>,

    /// Role ARNs, comma-separated, in order of preference: a person signs in as the first
    /// whose trust policy admits their ID token (as AssumeRoleWithWebIdentity would).
    #[arg(long, env = "GRIDS3_CONSOLE_OIDC_ROLES", value_delimiter = ',')]
    pub console_oidc_roles: Vec<String>,

    /// The provider's name on the sign-in button. Unset: the issuer's host.
    #[arg(long, env = "GRIDS3_CONSOLE_OIDC_NAME")]
    pub console_oidc_name: Option<String>,

    /// Scopes asked for, space-separated (`openid` is always asked for).
    #[arg(
        long,
        env = "GRIDS3_CONSOLE_OIDC_SCOPES",
        default_value = "openid email"
    )]
    pub console_oidc_scopes: String,
}

impl ConsoleSso {
    /// Whether single sign-on is configured.
    pub fn enabled(&self) -> bool {
        self.console_oidc_issuer.is_some()
    }

    /// What is missing or wrong in the settings (checked at start-up, so that a console
    /// never offers a sign-in that cannot work).
    pub fn problems(&self) -> Option<String> {
        let Some(issuer) = self.console_oidc_issuer.as_deref() else {
            // Settings of a sign-on that is off would be accepted and ignored.
            let set = self.console_oidc_client_id.is_some()
                || self.console_oidc_client_secret.is_some()
                || !self.roles().is_empty()
                || self.console_oidc_name.is_some();
            return set.then(|| "the --console-oidc-* settings need --console-oidc-issuer".into());
        };
        if issuer.is_empty() {
            return Some("--console-oidc-issuer is empty".into());
        }
        if self
            .console_oidc_client_id
            .as_deref()
            .is_none_or(str::is_empty)
        {
            return Some("--console-oidc-issuer needs --console-oidc-client-id".into());
        }
        let roles = self.roles();
        if roles.is_empty() {
            return Some("--console-oidc-issuer needs --console-oidc-roles (role ARNs)".into());
        }
        if let Some(bad) = roles.iter().find(|r| !is_role_arn(r)) {
            return Some(format!(
                "--console-oidc-roles: {bad:?} is not a role ARN (arn:aws:iam::<12 digits>:role/[<path>/]<name>)"
            ));
        }
        None
    }

    /// The roles, trimmed, empty entries dropped.
    pub fn roles(&self) -> Vec<String> {
        self.console_oidc_roles
            .iter()
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty())
            .collect()
    }
}

/// `arn:aws:iam::<12 digits>:role/[<path>/]<name>`, with IAM's characters for the name.
fn is_role_arn(arn: &str) -> bool {
    let Some(rest) = arn.strip_prefix("arn:aws:iam::") else {
        return false;
    };
    let Some((account, what)) = rest.split_once(':') else {
        return false;
    };
    let Some(path_name) = what.strip_prefix("role/") else {
        return false;
    };
    let name = path_name.rsplit('/').next().unwrap_or_default();
    account.len() == 12
        && account.bytes().all(|b| b.is_ascii_digit())
        && (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+=,.@_-".contains(&b))
        && path_name.bytes().all(|b| (b'!'..=b'~').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_arns_are_checked_and_settings_need_an_issuer() {
        assert!(is_role_arn("arn:aws:iam::123456789012:role/r"));
        assert!(is_role_arn("arn:aws:iam::123456789012:role/team/r"));
        assert!(!is_role_arn("arn:aws:iam::123456789012:role/"));
        assert!(!is_role_arn("arn:aws:iam::1234:role/r"));
        assert!(!is_role_arn("arn:aws:iam::123456789012:user/r"));
        let orphan = ConsoleSso {
            console_oidc_client_id: Some("c".into()),
            ..Default::default()
        };
        assert!(orphan
            .problems()
            .unwrap()
            .contains("need --console-oidc-issuer"));
        assert!(ConsoleSso::default().problems().is_none());
    }
}
