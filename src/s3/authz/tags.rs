//! The tags of the object a request addresses, for policies that read
//! `s3:ExistingObjectTag/<key>` (bucket and identity policies alike).

use std::collections::HashMap;

use super::Target;
use crate::error::S3Result;
use crate::state::AppState;

/// Adds the tags of the object version a request addresses (`s3:ExistingObjectTag/<key>`) to
/// its condition keys: the version it names (a copy's source: its own), not the current
/// one, as an old version is judged by what it carries.
pub(super) async fn object_tag_values(
    st: &AppState,
    t: &Target<'_>,
    key: &str,
    values: &mut HashMap<String, Vec<String>>,
) -> S3Result<()> {
    let version = t
        .facts
        .get("s3:versionid")
        .and_then(|v| v.first())
        .map(String::as_str);
    let found = match st.store.lookup(t.bucket, key, version).await {
        Ok(crate::storage::objects::Lookup::Object(o)) => Some(o),
        Ok(_) => None,
        // A version id that does not parse is the handler's to refuse.
        Err(crate::storage::gridfs::GridFsError::Mongo(e)) => return Err(e.into()),
        Err(_) => None,
    };
    if let Some(o) = found {
        for (k, v) in &o.meta.tags {
            values.insert(
                format!("s3:existingobjecttag/{}", k.to_ascii_lowercase()),
                vec![v.clone()],
            );
        }
    }
    Ok(())
}
