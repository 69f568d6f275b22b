//! OpenID Connect providers (`__iamoidc`, issue 61): an account's registration of an issuer
//! whose ID tokens AssumeRoleWithWebIdentity accepts, with the client ids (audiences) it
//! accepts them for. Named as AWS names them, by the issuer URL without its scheme:
//! `arn:aws:iam::<account>:oidc-provider/<host/path>`.

use futures::TryStreamExt;
use mongodb::bson::{doc, DateTime, Document};

use super::{pair_docs, pairs, strings, Account, IdResult, IdentityError, IdentityStore};

/// Most client ids of one provider (AWS's quota).
pub const MAX_CLIENT_IDS: usize = 100;

/// Most providers of one account (AWS's quota, "OpenIdConnectProvidersPerAccount").
pub const MAX_OIDC_PROVIDERS: u64 = 100;

/// A registered provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OidcProvider {
    /// The account's 12-digit id.
    pub account: String,
    /// The account's root key id.
    pub account_key: String,
    /// The issuer URL as registered (`https://host/path`).
    pub url: String,
    /// The client ids its tokens may be for.
    pub client_ids: Vec<String>,
    /// Thumbprints, stored and returned as AWS does (grids3 checks the issuer's TLS
    /// certificate against the system's roots instead).
    pub thumbprints: Vec<String>,
    /// When it was registered.
    pub created: DateTime,
    /// Tags.
    pub tags: Vec<(String, String)>,
}

impl OidcProvider {
    /// The URL without its scheme, as AWS names the provider (`host/path`).
    pub fn name(&self) -> String {
        provider_name(&self.url)
    }

    /// `arn:aws:iam::<account>:oidc-provider/<host/path>`.
    pub fn arn(&self) -> String {
        format!(
            "arn:aws:iam::{}:oidc-provider/{}",
            self.account,
            self.name()
        )
    }

    fn from_doc(d: &Document) -> Option<Self> {
        Some(OidcProvider {
            account: d.get_str("account").ok()?.to_owned(),
            account_key: d.get_str("accountKey").ok()?.to_owned(),
            url: d.get_str("url").ok()?.to_owned(),
            client_ids: strings(d, "clientIds"),
            thumbprints: strings(d, "thumbprints"),
            created: d.get_datetime("created").ok().copied()?,
            tags: pairs(d, "tags"),
        })
    }
}

/// An issuer URL without its scheme and trailing slash: the provider's name. The host part
/// is lower-cased, loses a trailing dot and the scheme's default port (`https://Host.:443/x`
/// names the provider `host/x`, like `https://host/x`); the path keeps its case, as AWS keeps
/// it (`/Realm` and `/realm` are two issuers).
pub fn provider_name(url: &str) -> String {
    let (rest, default_port) = match url.strip_prefix("https://") {
        Some(r) => (r, ":443"),
        None => (url.strip_prefix("http://").unwrap_or(url), ":80"),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut authority = authority.to_ascii_lowercase();
    if authority.ends_with(default_port) {
        authority.truncate(authority.len() - default_port.len());
    }
    // `host.:8443` as well as `host.`: the dot is the host's, before any port.
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => authority.split_at(i),
        _ => (authority.as_str(), ""),
    };
    let host = host.strip_suffix('.').unwrap_or(host);
    format!("{host}{port}{}", path.trim_end_matches('/'))
}

fn no_provider(arn: &str) -> IdentityError {
    IdentityError::NoSuchEntity(format!("OpenIDConnect Provider not found for arn {arn}"))
}

impl IdentityStore {
    /// Registers a provider (one per issuer and account, at most [`MAX_OIDC_PROVIDERS`] per
    /// account). The quota is checked after the insert, against every provider of the
    /// account, and the new one is removed again if it went over: two registrations at once
    /// cannot both pass a count taken before either wrote (a count-then-insert would let
    /// each of N concurrent calls see 99). The account never keeps more than the quota; under
    /// such a race both may be refused (and the extra one is visible for the moment between
    /// its insert and its removal).
    pub async fn create_oidc_provider(
        &self,
        acct: &Account,
        url: &str,
        client_ids: &[String],
        thumbprints: &[String],
        tags: &[(String, String)],
    ) -> IdResult<OidcProvider> {
        let p = OidcProvider {
            account: acct.id.clone(),
            account_key: acct.key.clone(),
            url: url.to_owned(),
            client_ids: client_ids.to_vec(),
            thumbprints: thumbprints.to_vec(),
            created: self.meta.clock().now(),
            tags: tags.to_vec(),
        };
        let d = doc! {
            "_id": p.arn(), "account": &p.account, "accountKey": &p.account_key,
            "url": url, "name": p.name(), "clientIds": client_ids, "thumbprints": thumbprints,
            "created": p.created, "tags": pair_docs(tags),
        };
        match self.oidc.insert_one(d).await {
            Err(e) if super::super::meta::is_duplicate_key(&e) => {
                return Err(IdentityError::EntityAlreadyExists(format!(
                    "Provider with url {url} already exists."
                )))
            }
            r => r?,
        };
        crate::failpoint::hit("identity.oidc_inserted", &p.account).await;
        let held = self
            .oidc
            .count_documents(doc! {"account": &p.account})
            .await?;
        if held > MAX_OIDC_PROVIDERS {
            self.oidc
                .delete_one(doc! {"_id": p.arn(), "created": p.created})
                .await?;
            return Err(IdentityError::LimitExceeded(format!(
                "Cannot exceed quota for OpenIdConnectProvidersPerAccount: {MAX_OIDC_PROVIDERS}"
            )));
        }
        self.changed().await?;
        Ok(p)
    }

    /// Replaces the provider's tags if they are still as read.
    pub async fn set_oidc_tags(
        &self,
        p: &OidcProvider,
        tags: &[(String, String)],
    ) -> IdResult<bool> {
        let r = self
            .oidc
            .update_one(
                doc! {"_id": p.arn(), "tags": pair_docs(&p.tags)},
                doc! {"$set": {"tags": pair_docs(tags)}},
            )
            .await?;
        if r.matched_count == 1 {
            self.changed().await?;
        }
        Ok(r.matched_count == 1)
    }

    /// A provider of the account, by ARN.
    pub async fn oidc_provider(&self, acct: &Account, arn: &str) -> IdResult<OidcProvider> {
        self.oidc
            .find_one(doc! {"_id": arn, "account": &acct.id})
            .await?
            .as_ref()
            .and_then(OidcProvider::from_doc)
            .ok_or_else(|| no_provider(arn))
    }

    /// The account's provider for issuer `url` (compared as AWS names providers).
    pub async fn oidc_provider_by_issuer(
        &self,
        account: &str,
        url: &str,
    ) -> mongodb::error::Result<Option<OidcProvider>> {
        Ok(self
            .oidc
            .find_one(doc! {"account": account, "name": provider_name(url)})
            .await?
            .as_ref()
            .and_then(OidcProvider::from_doc))
    }

    /// The account's providers, by name.
    pub async fn list_oidc_providers(&self, acct: &Account) -> IdResult<Vec<OidcProvider>> {
        let docs: Vec<Document> = self
            .oidc
            .find(doc! {"account": &acct.id})
            .sort(doc! {"name": 1})
            .limit(1000)
            .await?
            .try_collect()
            .await?;
        Ok(docs.iter().filter_map(OidcProvider::from_doc).collect())
    }

    /// Removes a provider (its web identity sessions already made keep their expiry).
    pub async fn delete_oidc_provider(&self, acct: &Account, arn: &str) -> IdResult<()> {
        let r = self
            .oidc
            .delete_one(doc! {"_id": arn, "account": &acct.id})
            .await?;
        if r.deleted_count == 0 {
            return Err(no_provider(arn));
        }
        self.changed().await?;
        Ok(())
    }

    /// Replaces the provider's client ids (or thumbprints) if they are still as read.
    pub async fn set_oidc_list(
        &self,
        p: &OidcProvider,
        field: &'static str,
        values: &[String],
    ) -> IdResult<bool> {
        let was = match field {
            "clientIds" => &p.client_ids,
            _ => &p.thumbprints,
        };
        let r = self
            .oidc
            .update_one(
                doc! {"_id": p.arn(), field: was},
                doc! {"$set": {field: values}},
            )
            .await?;
        if r.matched_count == 1 {
            self.changed().await?;
        }
        Ok(r.matched_count == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_are_named_by_their_url_without_scheme() {
        assert_eq!(
            provider_name("https://token.actions.githubusercontent.com"),
            "token.actions.githubusercontent.com"
        );
        assert_eq!(
            provider_name("https://Keycloak.example/realms/x/"),
            "keycloak.example/realms/x"
        );
        assert_eq!(provider_name("http://127.0.0.1:3000"), "127.0.0.1:3000");
    }

    /// Review F3(b): one provider, however its host is spelled; the path keeps its case.
    #[test]
    fn host_spellings_name_one_provider_and_the_path_keeps_its_case() {
        for url in [
            "https://idp.example/Realm",
            "https://IDP.example/Realm",
            "https://idp.example./Realm",
            "https://idp.example:443/Realm",
            "https://Idp.Example.:443/Realm/",
        ] {
            assert_eq!(provider_name(url), "idp.example/Realm", "{url}");
        }
        assert_eq!(provider_name("https://idp.example"), "idp.example");
        assert_eq!(
            provider_name("https://idp.example.:8443"),
            "idp.example:8443"
        );
        assert_eq!(
            provider_name("https://idp.example:8443/x"),
            "idp.example:8443/x"
        );
        assert_eq!(provider_name("http://localhost:80/x"), "localhost/x");
        assert_eq!(
            provider_name("https://[2001:4860::8888]:443/"),
            "[2001:4860::8888]"
        );
        assert_ne!(
            provider_name("https://idp.example/realm"),
            provider_name("https://idp.example/Realm")
        );
    }
}
