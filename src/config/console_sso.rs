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
        let issuer = self.console_oidc_issuer.as_deref()?;
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
        let roles: Vec<&String> = self
            .console_oidc_roles
            .iter()
            .filter(|r| !r.trim().is_empty())
            .collect();
        if roles.is_empty() {
            return Some("--console-oidc-issuer needs --console-oidc-roles (role ARNs)".into());
        }
        if let Some(bad) = roles
            .iter()
            .find(|r| !r.trim().starts_with("arn:aws:iam::") || !r.contains(":role/"))
        {
            return Some(format!("--console-oidc-roles: {bad:?} is not a role ARN"));
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
