//! Access keys in `__accesskeys`, shared by every gateway instance.

use mongodb::bson::doc;

use super::MetaStore;

impl MetaStore {
    /// Stores (or updates) an access key and its secret.
    pub async fn put_access_key(
        &self,
        access_key: &str,
        secret: &str,
        root: bool,
    ) -> mongodb::error::Result<()> {
        self.keys
            .update_one(
                doc! {"_id": access_key},
                doc! {"$set": {"secret": secret, "root": root}},
            )
            .upsert(true)
            .await?;
        Ok(())
    }

    /// The secret of an access key.
    pub async fn secret_of(&self, access_key: &str) -> mongodb::error::Result<Option<String>> {
        Ok(self
            .keys
            .find_one(doc! {"_id": access_key})
            .await?
            .and_then(|d| d.get_str("secret").ok().map(str::to_owned)))
    }
}
