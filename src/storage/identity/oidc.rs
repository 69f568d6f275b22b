//! OpenID Connect providers (`__iamoidc`, issue 61): an account's registration of an issuer
//! whose ID tokens AssumeRoleWithWebIdentity accepts, with the client ids (audiences) it
//! accepts them for. Named as AWS names them, by the issuer URL without its scheme:
//! `arn:aws:iam::<account>:oidc-provider/<host/path>`.

use futures::TryStreamExt;
use mongodb::bson::{doc, DateTime, Document};

use super::{pair_docs, pairs, strings, Account, IdResult, IdentityError, IdentityStore};

/// Most client ids of one provider (AWS's quota).
pub const MAX_CLIENT_IDS: usize = 100;

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

/// An issuer URL without its scheme and trailing slash: the provider's name.
pub fn provider_name(url: &str) -> String {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .unwrap_or(url);
    rest.trim_end_matches('/').to_ascii_lowercase()
}

fn no_provider(arn: &str) -> IdentityError {
    IdentityError::NoSuchEntity(format!("OpenIDConnect Provider not found for arn {arn}"))
}

impl IdentityStore {
    /// Registers a provider (one per issuer and account).
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
        self.changed().await?;
        Ok(p)
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
}
