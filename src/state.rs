//! The shared state: a small `Clone` struct of handles, built once at start-up.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};

use crate::auth::Credentials;
use crate::config::Config;
use crate::storage::gridfs::DEFAULT_CHUNK_SIZE;
use crate::storage::meta::{BucketInfo, DbClock, MetaStore};
use crate::storage::objects::ObjectStore;

/// Everything a handler needs.
#[derive(Clone, Debug)]
pub struct AppState {
    /// Objects and buckets.
    pub store: ObjectStore,
    /// Access keys.
    pub creds: Credentials,
    /// Configuration.
    pub config: Arc<Config>,
    /// The instance identity from `__infostore`.
    pub instance_id: String,
    /// Master keys and the SSE-KMS keyring (server-side encryption).
    pub keys: Arc<crate::crypto::Keys>,
    /// Slots for CompleteMultipartUpload tasks, which outlive their connections (a client
    /// that gives up does not stop one halfway) and may each hash GiBs: at most
    /// `--max-completions` run at once.
    pub completions: Arc<tokio::sync::Semaphore>,
    /// Server access log records waiting to be staged (see `crate::access_log`).
    pub access_log: Arc<crate::access_log::Recorder>,
    /// Event notifications: the door of the write path, and the dispatcher's queue.
    pub notify: Arc<crate::notify::Notifier>,
    /// OpenID Connect ID tokens (AssumeRoleWithWebIdentity, console sign-on): the issuer
    /// URL policy, the providers' keys, cached.
    pub oidc: Arc<crate::oidc::Verifier>,
    /// The janitor's tasks, stopped by [`AppState::stop_background`].
    background: Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

/// Whether a GridFS bucket made by another tool can be served as an S3 bucket: names S3 would
/// reject (like GridFS's default `fs`, too short for S3) are allowed as long as they are
/// URL-safe, because they already exist; grids3's own collections (`__*`) are not buckets.
pub fn adoptable_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with("__")
        // A content-addressed bucket's own GridFS bucket of large contents (`<bucket>._blobs`).
        && !name.contains("._")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// The object store over the configured database (the metastore opened, its clock measured).
pub async fn open_store(config: &Config, client: mongodb::Client) -> anyhow::Result<ObjectStore> {
    // Every collection grids3 opens inherits the database's concerns (the GridFS engine and
    // the metastore set none of their own): majority writes, journaled, and majority reads by
    // default, so that no acknowledged write and no decision rests on what one member alone
    // holds (docs/failure-model.md, "Across a failover").
    let db = client.database_with_options(
        &config.database,
        mongodb::options::DatabaseOptions::builder()
            .write_concern(config.write_concern())
            .read_concern(config.read_concern())
            .build(),
    );
    let clock = DbClock::new(config.test_clock_skew_ms);
    let meta = MetaStore::open(&db, clock)
        .await
        .context("opening the metastore")?;
    let masters = match (&config.master_key, &config.previous_master_keys) {
        (None, None) => Default::default(),
        _ => {
            let salt = meta
                .deployment_salt()
                .await
                .context("reading the deployment's salt")?;
            crate::crypto::keys::MasterKeys::new(
                config.master_key.as_deref(),
                config.previous_master_keys.as_deref(),
                &salt,
            )
        }
    };
    // Data sealed under a master key this gateway was not given answers 503 naming the key
    // (`s3::sse::sse_error`); say so at start-up rather than at the first GET.
    let missing = meta
        .master_keys_missing(masters.current.as_ref().map(|m| m.id()), &masters.ids())
        .await
        .context("reading the deployment's master keys")?;
    if !missing.is_empty() {
        tracing::warn!(
            missing = missing.join(","),
            "this deployment has data sealed under master keys this gateway was not given: SSE-S3 and SSE-KMS objects under them answer 503 until GRIDS3_MASTER_KEY or GRIDS3_PREVIOUS_MASTER_KEYS holds them"
        );
    }
    // Transactions get a connection pool of their own (`storage::meta::txn`, "Why
    // transactions have a pool of their own"): the same deployment, the same settings.
    let txn_client = match &config.mongodb_uri {
        Some(uri) => crate::metrics::mongodb_client_with_timeout(
            uri,
            Duration::from_secs(config.mongodb_timeout.max(1)),
            config.mongodb_command_metrics,
        )
        .await
        .context("connecting to MongoDB for transactions")?,
        // (A caller that gives a client but no URI: its transactions share the client's pool.)
        None => client.clone(),
    };
    let meta = meta
        .with_txn_client(txn_client)
        .with_masters(masters)
        .with_write_ttl(Duration::from_secs(config.write_lease.max(3)));
    let content = crate::storage::content::ContentSettings {
        inline_max: config.content_inline_max,
        gzip_types: config
            .content_gzip_types
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect(),
        grace: Duration::from_secs(config.content_grace),
    };
    Ok(ObjectStore::new(db, meta, DEFAULT_CHUNK_SIZE)
        .with_content_settings(content)
        .with_small_cache(config.small_object_cache_mib.saturating_mul(1024 * 1024)))
}

impl AppState {
    /// Connects the stores, records the root key and adopts existing GridFS buckets. The
    /// janitor is started above this layer ([`crate::start`]), so the state knows nothing of
    /// the jobs that use it.
    pub async fn connect(config: Config, client: mongodb::Client) -> anyhow::Result<Self> {
        let store = open_store(&config, client).await?;
        let meta = store.meta().clone();
        let instance_id = meta.instance_id().await?;
        let (Some(ak), Some(sk)) = (&config.root_access_key, &config.root_secret_key) else {
            bail!("GRIDS3_ROOT_ACCESS_KEY and GRIDS3_ROOT_SECRET_KEY must be set");
        };
        meta.put_access_key(ak, sk, true, "root").await?;
        if meta.secret_of(ak).await.ok().flatten().is_none() {
            tracing::error!(access_key = %ak, "the configured root key is a former root key that was disabled: it signs nothing; configure another root key");
        }
        // Rotation: the configured root key is the only root key.
        for old in meta
            .retire_other_roots(ak, config.delete_old_root_keys)
            .await?
        {
            tracing::info!(access_key = %old, deleted = config.delete_old_root_keys, "a former root key lost root");
        }
        let masters = meta.masters().clone();
        let keys = Arc::new(crate::crypto::Keys::new(
            store.db(),
            masters,
            &config.region,
        ));
        keys.keyring()
            .ensure_indexes()
            .await
            .context("creating the keyring's indexes")?;
        let completions = Arc::new(tokio::sync::Semaphore::new(config.max_completions.max(1)));
        let access_log = Arc::new(crate::access_log::Recorder::new(store.db()));
        let notify = Arc::new(crate::notify::Notifier::new(
            store.db(),
            meta.clock().clone(),
            config.notify_targets.clone(),
            config.notify_settings(),
        ));
        let oidc = Arc::new(
            crate::oidc::Verifier::new(config.oidc_policy(), crate::oidc::Limits::default())
                .map_err(|e| anyhow::anyhow!("the OpenID Connect client: {e}"))?,
        );
        let state = Self {
            access_log,
            notify,
            oidc,
            completions,
            keys,
            creds: Credentials::new(
                crate::storage::identity::IdentityStore::open(meta)
                    .await
                    .context("opening the identity store")?,
            ),
            store,
            config: Arc::new(config),
            instance_id,
            background: Default::default(),
        };
        state.adopt_existing_buckets().await?;
        Ok(state)
    }

    /// Keeps the janitor's task handles, for [`AppState::stop_background`].
    pub fn keep_background(&self, handles: Vec<tokio::task::AbortHandle>) {
        self.background.lock().expect("background").extend(handles);
    }

    /// Stops the janitor's loops (at shutdown; and when a test is done with a gateway, so
    /// that the idle gateways of a long test run do not keep the database busy). A pass cut
    /// short is one the next start repeats: every pass is idempotent.
    pub fn stop_background(&self) {
        for h in self.background.lock().expect("background").drain(..) {
            h.abort();
        }
    }

    /// Registers every GridFS bucket in the database that the metastore does not know yet
    /// (for example `fs`, written by mongofiles or PyMongo), owned by the root key.
    pub async fn adopt_existing_buckets(&self) -> anyhow::Result<Vec<String>> {
        let mut adopted = Vec::new();
        let owner = self.config.root_access_key.clone().unwrap_or_default();
        for name in self.store.gridfs_bucket_names().await? {
            if !adoptable_name(&name) || self.store.meta().bucket_name_known(&name).await? {
                continue;
            }
            let info = BucketInfo {
                adopted: true,
                ..BucketInfo::new(
                    &name,
                    &owner,
                    &self.config.region,
                    self.store.meta().clock().now(),
                )
            };
            if self.store.meta().create_bucket(&info).await? {
                tracing::info!(bucket = %name, "adopted an existing GridFS bucket");
                adopted.push(name);
            }
        }
        self.build_listing_posts(adopted.clone());
        Ok(adopted)
    }

    /// One full listing of an adopted bucket, in the background, so that its fence posts
    /// (`storage::ranges::posts`) are in the database before a client lists it. grids3
    /// records posts as it writes keys; another program's keys have none, and a first
    /// listing that finds none reads a dense run of keys after an empty start of the key
    /// space in one range, which the local database reads whole (issue 59: a root delimiter
    /// listing of 100,000 PyMongo-written keys took 4.7 s). Posts are hints, written by
    /// inserts that ignore duplicates, so a pass cut short (a stop, a crash) loses nothing:
    /// listings learn the rest as they pass. Only the instance whose adoption won runs it,
    /// one bucket after another (one listing's load on the database, not one per bucket).
    fn build_listing_posts(&self, buckets: Vec<String>) {
        if buckets.is_empty() {
            return;
        }
        let store = self.store.clone();
        let walk = crate::background::spawn("posts", async move {
            for bucket in buckets {
                let started = std::time::Instant::now();
                match store.build_posts(&bucket).await {
                    Ok(keys) => tracing::info!(
                        bucket,
                        keys,
                        seconds = started.elapsed().as_secs_f64(),
                        "listing posts built for an adopted bucket"
                    ),
                    Err(e) => tracing::warn!(bucket, error = %e, "could not build listing posts"),
                }
            }
        });
        // Stopped with the janitor's loops (at shutdown, or a test's gateway dropped).
        self.keep_background(vec![walk.abort_handle()]);
    }
}
