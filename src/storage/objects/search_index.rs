//! Declared search indexes (issue 63): the fields a bucket's owner chose to index for
//! metadata search, each made into MongoDB indexes on the bucket's files collection (and on
//! its version index's masters, which searches of a versioned bucket read), so that a query
//! comparing such a field reads the objects that can match instead of every key.
//!
//! **On disk:** ordinary secondary indexes, `{<path>: 1, filename: 1}` named
//! `s3search:<path>`, one per place the field's value can be (`size`: the plaintext size of
//! an encrypted object and `length`; `x-amz-meta-<name>`: the user metadata and a foreign
//! file's own `metadata.<name>`). The GridFS documents are unchanged, and the database keeps
//! the indexes current on every write, whoever writes (PUT, copy, multipart, tagging,
//! metadata replace, delete, lifecycle, snowball, or another GridFS client): nothing can
//! drift.
//!
//! **Built in the background:** under a lead (one instance at a time per bucket), the
//! declaration marked ready once its indexes exist; a build that stopped (its instance died)
//! is finished by the janitor. A field removed has its indexes dropped, unless another
//! declared field needs the same path.
//!
//! **Declarable:** `size`, `last-modified`, `content-type`, `x-amz-meta-<name>` and
//! `tags.<key>`. Not `key` (always indexed), `etag` (a foreign file's `md5` may be in either
//! case, which no index lookup of one value can find exactly) or `storage-class` (a few
//! values, most objects without one: an index would not narrow a search).

use std::collections::BTreeSet;

use mongodb::bson::{doc, Document};
use mongodb::{Collection, IndexModel};

use super::{GridFsError, ObjectStore, Result};
use crate::search::Field;
use crate::storage::meta::DeclaredIndex;

/// The most fields one bucket may declare (each is one or two indexes; MongoDB allows 64 a
/// collection).
pub const MAX_FIELDS: usize = 8;
/// How long one instance leads a bucket's build before another may take it over (renewed
/// while the build runs).
const BUILD_LEAD: std::time::Duration = std::time::Duration::from_secs(60);
/// How long a declaration's answer waits for its build.
const INLINE_BUILD: std::time::Duration = std::time::Duration::from_secs(20);
/// How long a build waits for another run that leads the bucket's build.
const LEAD_RETRY: std::time::Duration = std::time::Duration::from_secs(30);
/// The prefix of the indexes' names.
const NAME_PREFIX: &str = "s3search:";

/// A field as declarations name it (the canonical spelling of a search's field name).
pub fn canonical(f: &Field) -> String {
    match f {
        Field::Key => "key".into(),
        Field::Size => "size".into(),
        Field::LastModified => "last-modified".into(),
        Field::ContentType => "content-type".into(),
        Field::ETag => "etag".into(),
        Field::StorageClass => "storage-class".into(),
        Field::Meta(n) => format!("x-amz-meta-{n}"),
        Field::Tag(k) => format!("tags.{k}"),
    }
}

/// Where a declarable field's values are in a files document (or a master), or why it
/// cannot be declared (its name checked already: `Field::checked`).
pub fn index_paths(f: &Field) -> std::result::Result<Vec<String>, String> {
    Ok(match f {
        Field::Size => vec!["metadata.s3Sse.size".into(), "length".into()],
        Field::LastModified => vec!["uploadDate".into()],
        Field::ContentType => vec!["metadata.contentType".into()],
        Field::Meta(n) => {
            let mut p = vec![format!("metadata.userMetadata.{n}")];
            if !super::meta::FIELDS
                .iter()
                .any(|g| g.eq_ignore_ascii_case(n))
            {
                p.push(format!("metadata.{n}"));
            }
            p
        }
        Field::Tag(k) => vec![format!("metadata.tags.{k}")],
        Field::Key => return Err("key is always indexed".into()),
        Field::ETag => {
            return Err(
                "etag cannot be indexed (a foreign file's md5 may be in either case)".into(),
            )
        }
        Field::StorageClass => {
            return Err(
                "storage-class cannot be indexed (too few values to narrow a search)".into(),
            )
        }
    })
}

/// Reads a declaration's field names: each known and declarable, none twice (in any
/// spelling), at most [`MAX_FIELDS`]. Canonical names, in the order given.
pub fn parse_fields(names: &[String]) -> std::result::Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        let f = Field::checked(n.trim())?;
        index_paths(&f)?;
        let c = canonical(&f);
        if !out.contains(&c) {
            out.push(c);
        }
    }
    if out.len() > MAX_FIELDS {
        return Err(format!("at most {MAX_FIELDS} fields may be indexed"));
    }
    Ok(out)
}

/// The paths a list of declarations needs indexed.
fn paths_of<'a>(fields: impl Iterator<Item = &'a str>) -> BTreeSet<String> {
    fields
        .filter_map(Field::named)
        .filter_map(|f| index_paths(&f).ok())
        .flatten()
        .collect()
}

fn model(path: &str) -> IndexModel {
    IndexModel::builder()
        .keys(doc! {path: 1, "filename": 1})
        .options(
            mongodb::options::IndexOptions::builder()
                .name(format!("{NAME_PREFIX}{path}"))
                .build(),
        )
        .build()
}

/// The paths of the search indexes a collection has.
async fn built(coll: &Collection<Document>) -> Result<BTreeSet<String>> {
    let names = match coll.list_index_names().await {
        Ok(n) => n,
        // No collection yet: no index.
        Err(_) => return Ok(BTreeSet::new()),
    };
    Ok(names
        .into_iter()
        .filter_map(|n| n.strip_prefix(NAME_PREFIX).map(str::to_owned))
        .collect())
}

impl ObjectStore {
    /// The collections a bucket's searches read: its files, and its masters once it has a
    /// version index collection.
    async fn search_collections(&self, bucket: &str) -> Result<Vec<Collection<Document>>> {
        let mut out = vec![self.gridfs(bucket).files().clone()];
        if self.versioning(bucket).await?.0 != crate::storage::versions::Versioning::Off {
            out.push(self.versions(bucket).collection().clone());
        }
        Ok(out)
    }

    /// Replaces a bucket's declared search fields (`names`, as a search spells them) and
    /// builds what the new list needs (indexes created, those no field needs dropped) in the
    /// background, waiting up to [`INLINE_BUILD`] for it, so that a small bucket's answer says
    /// `ready`. The declarations as stored then, or `Ok(Err(reason))` when a name is unknown
    /// or cannot be declared (the caller answers 400 with the reason).
    pub async fn declare_search_indexes(
        &self,
        bucket: &str,
        names: &[String],
    ) -> Result<std::result::Result<Vec<DeclaredIndex>, String>> {
        let fields = match parse_fields(names) {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        loop {
            let Some(b) = self.meta.get_bucket(bucket).await? else {
                return Err(GridFsError::FileNotFound);
            };
            if self
                .meta
                .declare_search_indexes(bucket, &b.search_indexes, &fields)
                .await?
                .is_some()
            {
                break;
            }
        }
        self.meta.forget_bucket(bucket);
        let (store, name) = (self.clone(), bucket.to_owned());
        let build = crate::background::spawn("search-index", async move {
            if let Err(e) = store.build_search_indexes(&name).await {
                tracing::warn!(bucket = %name, error = %e, "search index build failed; the janitor retries it");
            }
        });
        let inline = crate::failpoint::limit("search_index.inline_build", bucket, INLINE_BUILD);
        let _ = tokio::time::timeout(inline, build).await;
        Ok(Ok(self
            .meta
            .get_bucket(bucket)
            .await?
            .map(|b| b.search_indexes)
            .unwrap_or_default()))
    }

    /// Whether a bucket's declaration asks for work: a field not ready, or an index no field
    /// needs.
    async fn search_work_pending(&self, bucket: &str) -> Result<bool> {
        let Some(b) = self.meta.get_bucket(bucket).await? else {
            return Ok(false);
        };
        if b.search_indexes.iter().any(|d| !d.ready) {
            return Ok(true);
        }
        let needed = paths_of(b.search_indexes.iter().map(|d| d.field.as_str()));
        for coll in self.search_collections(bucket).await? {
            if built(&coll).await?.iter().any(|p| !needed.contains(p)) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Builds until nothing is pending: when another run leads the bucket's build, waits for
    /// it (up to [`LEAD_RETRY`]; then that run, or the janitor, goes on), and builds again
    /// while the declaration changed meanwhile (a run that read it before it changed would
    /// not have seen the change).
    pub async fn build_search_indexes(&self, bucket: &str) -> Result<()> {
        let started = std::time::Instant::now();
        loop {
            let led = self.finish_search_indexes(bucket).await?;
            if led && !self.search_work_pending(bucket).await? {
                return Ok(());
            }
            if !led {
                if started.elapsed() > LEAD_RETRY {
                    return Ok(());
                }
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
        }
    }

    /// Drops the search indexes of paths no declaration in `list` needs.
    async fn drop_unneeded_search_indexes(
        &self,
        bucket: &str,
        list: &[DeclaredIndex],
    ) -> Result<()> {
        let needed = paths_of(list.iter().map(|d| d.field.as_str()));
        for coll in self.search_collections(bucket).await? {
            for path in built(&coll).await? {
                if !needed.contains(&path) {
                    // Gone already (another run dropped it): nothing to do.
                    let _ = coll.drop_index(format!("{NAME_PREFIX}{path}")).await;
                }
            }
        }
        Ok(())
    }

    /// One run of a bucket's build, if this instance leads it (`false` when another run
    /// does): the indexes of each declaration not ready are created and the declaration
    /// marked ready, then the indexes no declaration needs are dropped. Creations and drops
    /// happen only here, one run at a time, so they never race each other. A field whose
    /// indexes cannot be created stays `building` (logged), and holds up no other.
    pub async fn finish_search_indexes(&self, bucket: &str) -> Result<bool> {
        let Some(lead) = self
            .meta
            .take_lead(&format!("search-index\u{0}{bucket}"), BUILD_LEAD)
            .await?
        else {
            return Ok(false);
        };
        // Renewed while the run lasts (an index of a large collection takes a while), and
        // given up when it ends.
        let renewal = {
            let lead = lead.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(BUILD_LEAD / 4).await;
                    if !matches!(lead.renew().await, Ok(true)) {
                        return;
                    }
                }
            })
        };
        let done = async {
            let Some(b) = self.meta.get_bucket(bucket).await? else {
                return Ok(());
            };
            for d in b.search_indexes.iter().filter(|d| !d.ready) {
                let paths = paths_of(std::iter::once(d.field.as_str()));
                // (Where a test removes the declaration before its indexes exist.)
                crate::failpoint::hit("search_index.building", bucket).await;
                let mut created = true;
                for coll in self.search_collections(bucket).await? {
                    if let Err(e) = coll.create_indexes(paths.iter().map(|p| model(p))).await {
                        tracing::warn!(bucket, field = %d.field, error = %e, "a search index could not be built");
                        created = false;
                    }
                }
                // Marked only while this run still leads (a run that lost its lead stops).
                if !lead.check().await? {
                    return Ok(());
                }
                if created
                    && !self
                        .meta
                        .mark_search_index_ready(bucket, &d.field, d.gen)
                        .await?
                {
                    tracing::info!(bucket, field = %d.field, "declaration changed during its build");
                }
            }
            // What no field needs (removed, or removed while its indexes were being built),
            // dropped only while this run still leads: a run that lost its lead read a
            // declaration another run may have built on since.
            if !lead.check().await? {
                return Ok(());
            }
            if let Some(now) = self.meta.get_bucket(bucket).await? {
                self.drop_unneeded_search_indexes(bucket, &now.search_indexes)
                    .await?;
            }
            self.meta.forget_bucket(bucket);
            Ok::<_, GridFsError>(())
        }
        .await;
        renewal.abort();
        lead.release_or_warn().await;
        crate::failpoint::hit("search_index.finished", bucket).await;
        done.map(|()| true)
    }

    /// Creates a bucket's declared search indexes on its version index's masters (when
    /// versioning is first enabled: searches of a versioned bucket read masters).
    pub(super) async fn search_indexes_on_masters(&self, bucket: &str) -> Result<()> {
        let Some(b) = self.meta.get_bucket(bucket).await? else {
            return Ok(());
        };
        let paths = paths_of(b.search_indexes.iter().map(|d| d.field.as_str()));
        if !paths.is_empty() {
            self.versions(bucket)
                .collection()
                .create_indexes(paths.iter().map(|p| model(p)))
                .await?;
        }
        Ok(())
    }

    /// Finishes the search index builds that stopped (their instance died), for the janitor.
    pub async fn resume_search_index_builds(&self) -> Result<usize> {
        let mut done = 0;
        for b in self.meta.list_buckets().await? {
            if b.search_indexes.is_empty() || !self.search_work_pending(&b.name).await? {
                continue;
            }
            // One bucket's failure holds up no other's.
            match self.finish_search_indexes(&b.name).await {
                Ok(true) => done += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(bucket = %b.name, error = %e, "search index build failed")
                }
            }
        }
        Ok(done)
    }

    /// The names of a collection's search indexes (for the plan `explain-search` prints).
    pub async fn search_index_names(&self, coll: &Collection<Document>) -> Result<Vec<String>> {
        let mut v: Vec<String> = built(coll)
            .await?
            .into_iter()
            .map(|p| format!("{NAME_PREFIX}{p}"))
            .collect();
        v.sort();
        Ok(v)
    }
}
