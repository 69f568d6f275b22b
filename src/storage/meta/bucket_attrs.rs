//! The bucket settings the S3 configuration calls change (tags, CORS, ACL, policy, public
//! access, ownership, lifecycle, logging, versioning, encryption, Object Lock): each one field
//! of the bucket's `__metastore` document. Split from `buckets.rs`, which keeps the bucket's
//! life (create, cache, list, convert, delete).

use mongodb::bson::{doc, Bson, Document};

use super::buckets::{BucketEncryption, CorsRule, ObjectLockConfig, PublicAccessBlock};
use super::MetaStore;

impl MetaStore {
    /// A bucket's tags (`None`: no tag set).
    pub async fn bucket_tags(
        &self,
        name: &str,
    ) -> mongodb::error::Result<Option<Vec<(String, String)>>> {
        let d = self
            .buckets
            .find_one(doc! {"_id": name})
            .projection(doc! {"tags": 1})
            .await?;
        Ok(d.and_then(|d| d.get_array("tags").ok().cloned())
            .map(|arr| {
                arr.iter()
                    .filter_map(|t| t.as_document())
                    .filter_map(|t| {
                        Some((
                            t.get_str("k").ok()?.to_owned(),
                            t.get_str("v").ok()?.to_owned(),
                        ))
                    })
                    .collect()
            }))
    }

    /// Sets (`Some`) or removes (`None`) a bucket's tags.
    pub async fn set_bucket_tags(
        &self,
        name: &str,
        tags: Option<&[(String, String)]>,
    ) -> mongodb::error::Result<()> {
        self.changed(name, async {
            let update = match tags {
                Some(t) => {
                    let arr: Vec<Document> = t.iter().map(|(k, v)| doc! {"k": k, "v": v}).collect();
                    doc! {"$set": {"tags": arr}}
                }
                None => doc! {"$unset": {"tags": ""}},
            };
            self.buckets.update_one(doc! {"_id": name}, update).await?;
            Ok(())
        })
        .await
    }

    /// Sets (non-empty) or removes (empty) a bucket's CORS rules.
    pub async fn set_bucket_cors(
        &self,
        name: &str,
        rules: &[CorsRule],
    ) -> mongodb::error::Result<()> {
        self.changed(name, async {
            let update = if rules.is_empty() {
                doc! {"$unset": {"cors": ""}}
            } else {
                let arr: Vec<Document> = rules.iter().map(CorsRule::to_document).collect();
                doc! {"$set": {"cors": arr}}
            };
            self.buckets.update_one(doc! {"_id": name}, update).await?;
            Ok(())
        })
        .await
    }

    /// Sets (`Some`) or removes (`None`) one attribute of a live bucket's document; `false`
    /// when the bucket does not exist. Every bucket setting is written through here.
    async fn set_attribute(
        &self,
        name: &str,
        field: &str,
        value: Option<Bson>,
    ) -> mongodb::error::Result<bool> {
        let update = match value {
            Some(v) => doc! {"$set": {field: v}},
            None => doc! {"$unset": {field: ""}},
        };
        self.update_live(name, update).await
    }

    /// Applies `update` to a live bucket's document; `false` when the bucket does not exist.
    pub(super) async fn update_live(
        &self,
        name: &str,
        update: Document,
    ) -> mongodb::error::Result<bool> {
        self.update_live_if(name, doc! {}, update).await
    }

    /// [`Self::update_live`] where the document also matches `condition` (what the caller's
    /// decision read); `false` when the bucket does not exist or no longer matches.
    pub(super) async fn update_live_if(
        &self,
        name: &str,
        condition: Document,
        update: Document,
    ) -> mongodb::error::Result<bool> {
        let mut filter = doc! {"_id": name, "deleted": {"$ne": true}};
        filter.extend(condition);
        self.changed(name, async {
            Ok(self.buckets.update_one(filter, update).await?.matched_count == 1)
        })
        .await
    }

    /// Replaces a bucket's ACL grants (PutBucketAcl); `false` when the bucket does not exist.
    pub async fn set_bucket_acl(
        &self,
        name: &str,
        acl: &[(String, String)],
    ) -> mongodb::error::Result<bool> {
        let grants = Bson::Array(
            super::acl_docs(acl)
                .into_iter()
                .map(Bson::Document)
                .collect(),
        );
        self.set_attribute(name, "acl", Some(grants)).await
    }

    /// Sets (`Some`) or removes (`None`) a bucket's policy (as its JSON text).
    pub async fn set_bucket_policy(
        &self,
        name: &str,
        policy: Option<&str>,
    ) -> mongodb::error::Result<bool> {
        self.set_attribute(name, "policy", policy.map(Bson::from))
            .await
    }

    /// Sets (`Some`) or removes (`None`) a bucket's Block Public Access configuration.
    pub async fn set_public_access_block(
        &self,
        name: &str,
        pab: Option<PublicAccessBlock>,
    ) -> mongodb::error::Result<bool> {
        let value = pab.map(|p| Bson::Document(p.to_document()));
        self.set_attribute(name, "publicAccessBlock", value).await
    }

    /// Sets (`Some`) or removes (`None`) a bucket's object ownership.
    pub async fn set_bucket_ownership(
        &self,
        name: &str,
        ownership: Option<&str>,
    ) -> mongodb::error::Result<bool> {
        self.set_attribute(name, "ownership", ownership.map(Bson::from))
            .await
    }

    /// Sets (`Some`) or removes (`None`) a bucket's lifecycle configuration (as its XML).
    pub async fn set_bucket_lifecycle(
        &self,
        name: &str,
        xml: Option<&str>,
    ) -> mongodb::error::Result<bool> {
        self.set_attribute(name, "lifecycle", xml.map(Bson::from))
            .await
    }

    /// Sets (`Some`) or removes (`None`) a bucket's logging configuration (as its XML).
    pub async fn set_bucket_logging(
        &self,
        name: &str,
        xml: Option<&str>,
    ) -> mongodb::error::Result<bool> {
        self.set_attribute(name, "logging", xml.map(Bson::from))
            .await
    }

    /// Sets (`Some`) or removes (`None`) a bucket's event notification configuration (as its
    /// XML).
    pub async fn set_bucket_notification(
        &self,
        name: &str,
        xml: Option<&str>,
    ) -> mongodb::error::Result<bool> {
        self.set_attribute(name, "notification", xml.map(Bson::from))
            .await
    }

    /// Sets (`Some`) or removes (`None`) a bucket's website configuration (as its XML).
    pub async fn set_bucket_website(
        &self,
        name: &str,
        xml: Option<&str>,
    ) -> mongodb::error::Result<bool> {
        self.set_attribute(name, "website", xml.map(Bson::from))
            .await
    }

    /// Records that a bucket's version index is complete (the status is left as it is).
    pub async fn set_versions_indexed(&self, name: &str) -> mongodb::error::Result<bool> {
        self.set_attribute(name, "versionsIndexed", Some(Bson::from(true)))
            .await
    }

    /// Sets the versioning status and its exclusions (MinIO's extension; none removes them)
    /// in one update, so that a concurrent PutBucketVersioning never leaves one's status with
    /// the other's exclusions; `indexed` records that the version index is complete.
    pub async fn set_bucket_versioning(
        &self,
        name: &str,
        status: &str,
        exclusions: &crate::storage::versions::exclusions::Exclusions,
        indexed: bool,
    ) -> mongodb::error::Result<bool> {
        let mut update = doc! {"$set": {"versioning": status, "versionsIndexed": indexed}};
        // Exclusions only where Object Lock is not on, as the caller read: a lock set since
        // makes this write match nothing (`false`), so the two never both hold.
        // A suspension likewise (Object Lock needs versioning enabled).
        let mut condition = doc! {};
        if status == "Suspended" {
            condition.insert("objectLock", doc! {"$exists": false});
        }
        if exclusions.is_empty() {
            update.insert("$unset", doc! {"versioningExclusions": ""});
        } else if let Ok(set) = update.get_document_mut("$set") {
            set.insert("versioningExclusions", exclusions.to_document());
            condition.insert("objectLock", doc! {"$exists": false});
        }
        self.update_live_if(name, condition, update).await
    }

    /// Sets (`Some`) or removes a bucket's default encryption.
    pub async fn set_bucket_encryption(
        &self,
        name: &str,
        config: Option<&BucketEncryption>,
    ) -> mongodb::error::Result<bool> {
        let value = config.map(|c| Bson::Document(c.to_document()));
        self.set_attribute(name, "encryption", value).await
    }

    /// Sets a bucket's Object Lock configuration (it is never removed, as on AWS); `false`
    /// when the bucket is gone, its versioning is not enabled, or it has exclusions.
    pub async fn set_object_lock(
        &self,
        name: &str,
        config: &ObjectLockConfig,
    ) -> mongodb::error::Result<bool> {
        // Only where versioning is still enabled and has no exclusions, as the caller read
        // (`false` otherwise).
        let value = Bson::Document(config.to_document());
        self.update_live_if(
            name,
            doc! {"versioning": "Enabled", "versioningExclusions": {"$exists": false}},
            doc! {"$set": {"objectLock": value}},
        )
        .await
    }
}
