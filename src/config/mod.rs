//! Configuration: one struct, from flags with environment equivalents, validated at start-up.

use std::net::SocketAddr;

use clap::{Parser, Subcommand};

mod admin;
mod bench;
mod console_sso;
pub use admin::{AdminAction, NotifyAction};
pub use bench::BenchArgs;
pub use console_sso::ConsoleSso;
use zeroize::Zeroizing;

/// A secret from a flag or the environment (the root secret, master keys, the metrics token):
/// zeroed when dropped, and never printed by `Debug`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(Zeroizing<String>);

impl std::ops::Deref for Secret {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Secret(Zeroizing::new(s.to_owned()))
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Secret(Zeroizing::new(s))
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(s.into())
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[secret]")
    }
}

/// `--write-concern`: `majority` or a positive number of members.
fn parse_write_concern(s: &str) -> Result<String, String> {
    match s {
        "majority" => Ok(s.to_owned()),
        n if n.parse::<u32>().is_ok_and(|n| n > 0) => Ok(s.to_owned()),
        _ => Err("expected `majority` or a number of members (1, 2, ...)".into()),
    }
}

/// `--read-concern`: `majority`, `local` or `linearizable`.
fn parse_read_concern(s: &str) -> Result<String, String> {
    match s {
        "majority" | "local" | "linearizable" => Ok(s.to_owned()),
        _ => Err("expected `majority`, `local` or `linearizable`".into()),
    }
}

impl Config {
    /// The event notification settings.
    pub fn notify_settings(&self) -> crate::notify::Settings {
        crate::notify::Settings {
            max_age: std::time::Duration::from_secs(self.notify_max_age_secs.max(1)),
            max_queued: self.notify_max_queued.max(1),
            retry_max: std::time::Duration::from_millis(self.notify_retry_max_ms.max(100)),
            max_listeners: self.notify_max_listeners,
        }
    }

    /// The URL policy of OpenID Connect providers (`--oidc-allowed-hosts`,
    /// `--oidc-allow-loopback`).
    pub fn oidc_policy(&self) -> crate::oidc::OidcPolicy {
        crate::oidc::OidcPolicy::new(&self.oidc_allowed_hosts, self.oidc_allow_loopback)
    }

    /// The write concern of `--write-concern`: `majority` journaled; a number of members as
    /// the server journals by default (a standalone server without a journal refuses `j`).
    pub fn write_concern(&self) -> mongodb::options::WriteConcern {
        match self.write_concern.parse::<u32>() {
            Ok(n) => mongodb::options::WriteConcern::builder()
                .w(mongodb::options::Acknowledgment::Nodes(n))
                .build(),
            Err(_) => mongodb::options::WriteConcern::builder()
                .w(mongodb::options::Acknowledgment::Majority)
                .journal(true)
                .build(),
        }
    }

    /// The read concern of `--read-concern`.
    pub fn read_concern(&self) -> mongodb::options::ReadConcern {
        match self.read_concern.as_str() {
            "local" => mongodb::options::ReadConcern::local(),
            "linearizable" => mongodb::options::ReadConcern::linearizable(),
            _ => mongodb::options::ReadConcern::majority(),
        }
    }
}

/// grids3: an S3-compatible HTTP object-storage gateway over MongoDB GridFS.
#[derive(Parser, Clone)]
#[command(version, about)]
pub struct Config {
    /// Without a command: serve S3.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Address to serve S3 on.
    #[arg(long, env = "GRIDS3_LISTEN", default_value = "127.0.0.1:9000")]
    pub listen: SocketAddr,

    /// MongoDB connection string. Required unless --local-db is given.
    #[arg(long, env = "MONGODB_URI")]
    pub mongodb_uri: Option<String>,

    /// Database holding the buckets, the metastore and the infostore.
    #[arg(long, env = "GRIDS3_DATABASE", default_value = "grids3")]
    pub database: String,

    /// Region grids3 answers as (SigV4 credential scopes must name it).
    #[arg(long, env = "GRIDS3_REGION", default_value = "us-east-1")]
    pub region: String,

    /// Base domain for virtual-hosted-style addressing (`<bucket>.<domain>`); path-style
    /// addressing always works. Unset: path-style only.
    #[arg(long, env = "GRIDS3_DOMAIN")]
    pub domain: Option<String>,

    /// Address to serve the website endpoint on (buckets with a website configuration, see
    /// `crate::website`). Unset: no website endpoint, except with --local-db, which serves
    /// it on port 9002 of the S3 listener's address.
    #[arg(long, env = "GRIDS3_WEBSITE_LISTEN")]
    pub website_listen: Option<SocketAddr>,

    /// Base domain of the website endpoint: a request for `<bucket>.<website-domain>` serves
    /// that bucket. A Host equal to a bucket's name serves that bucket whatever this is (a
    /// CNAME, as AWS requires the bucket to be named after the site).
    #[arg(long, env = "GRIDS3_WEBSITE_DOMAIN")]
    pub website_domain: Option<String>,

    /// Address to serve the web console on (see `crate::console`). Unset: no console, except
    /// with --local-db, which serves it on 127.0.0.1:9001.
    #[arg(long, env = "GRIDS3_CONSOLE_LISTEN")]
    pub console_listen: Option<SocketAddr>,

    /// The S3 endpoint's URL as browsers reach it (share links and uploads point there).
    /// Unset: the S3 listen address (`http://` or, with TLS, `https://`).
    #[arg(long, env = "GRIDS3_CONSOLE_S3_URL")]
    pub console_s3_url: Option<String>,

    /// The console's own origin as browsers reach it (`https://console.example.com`): a
    /// state-changing request's Origin must be this. Unset: the scheme and Host of each
    /// request (set it behind a TLS-terminating proxy, and to refuse rebound DNS names).
    #[arg(long, env = "GRIDS3_CONSOLE_URL")]
    pub console_url: Option<String>,

    /// Console sessions end after this many minutes without a request.
    #[arg(long, env = "GRIDS3_CONSOLE_IDLE_MINUTES", default_value_t = 30)]
    pub console_idle_minutes: u64,

    /// Console sessions end this many hours after login, whatever their use.
    #[arg(long, env = "GRIDS3_CONSOLE_SESSION_HOURS", default_value_t = 12)]
    pub console_session_hours: u64,

    /// Single sign-on to the console (`--console-oidc-*`).
    #[command(flatten)]
    pub console_sso: ConsoleSso,

    /// Root access key id (stored in the metastore so every instance shares it).
    #[arg(long, env = "GRIDS3_ROOT_ACCESS_KEY")]
    pub root_access_key: Option<String>,

    /// Root secret key.
    #[arg(long, env = "GRIDS3_ROOT_SECRET_KEY", hide_env_values = true)]
    pub root_secret_key: Option<Secret>,

    /// Master key that seals access-key secrets, SSE-S3 data keys and the SSE-KMS keyring at
    /// rest (AES-256-GCM): 32 random bytes as 64 hex digits or base64, or a passphrase
    /// (stretched with argon2id and the deployment's salt). Unset: SSE-S3 and SSE-KMS are
    /// refused (501 NotImplemented) and secrets are stored in the clear in `__accesskeys`.
    /// `--local-db` generates one and keeps it in data/local.env.
    #[arg(long, env = "GRIDS3_MASTER_KEY", hide_env_values = true)]
    pub master_key: Option<Secret>,
    /// Former master keys, comma-separated, still accepted for opening what they sealed while
    /// `grids3 admin rotate-master-key` re-seals it under GRIDS3_MASTER_KEY.
    #[arg(long, env = "GRIDS3_PREVIOUS_MASTER_KEYS", hide_env_values = true)]
    pub previous_master_keys: Option<Secret>,

    /// A bearer token `/_grids3/metrics` requires (`Authorization: Bearer <token>`). Unset:
    /// metrics are open to anyone who can reach the port (put them behind a network rule).
    #[arg(long, env = "GRIDS3_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<Secret>,

    /// PEM certificate chain to serve HTTPS with (with --tls-key). The listen address then
    /// speaks TLS only, HTTP/2 or HTTP/1.1 by ALPN. The files are read again when they change
    /// and on SIGHUP, so a renewed certificate needs no restart.
    #[arg(long, env = "GRIDS3_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,

    /// PEM private key (PKCS#8, PKCS#1 or SEC1) of --tls-cert.
    #[arg(long, env = "GRIDS3_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,

    /// Seconds between looks at the TLS files for a change.
    #[arg(long, env = "GRIDS3_TLS_RELOAD_INTERVAL", default_value_t = 10)]
    pub tls_reload_interval: u64,

    /// Accept SSE-C (customer-provided keys) over plain HTTP. AWS refuses it, and so does
    /// grids3 by default, since the key would cross the network in clear; set this only when
    /// TLS ends at a proxy in front of grids3.
    #[arg(long, env = "GRIDS3_ALLOW_INSECURE_SSE_C", default_value_t = false)]
    pub allow_insecure_sse_c: bool,

    /// OpenID Connect providers (issue 61): host names, comma-separated (exact,
    /// case-insensitive), whose discovery and key sets may be fetched whatever addresses they
    /// resolve to. By default a provider's URL must be https:// and resolve to public
    /// addresses only (no loopback, private, link-local, CGNAT or multicast: docs/sso.md).
    #[arg(long, env = "GRIDS3_OIDC_ALLOWED_HOSTS", default_value = "")]
    pub oidc_allowed_hosts: String,

    /// Allow OpenID Connect providers on loopback addresses, over plain http:// too (tests
    /// and local use; never needed in production).
    #[arg(long, env = "GRIDS3_OIDC_ALLOW_LOOPBACK", default_value_t = false)]
    pub oidc_allow_loopback: bool,

    /// Log as JSON lines instead of human-readable text.
    #[arg(long, env = "GRIDS3_LOG_JSON", default_value_t = false)]
    pub log_json: bool,

    /// Start the local development database (MONGODB_URI, else a mongod on PATH, else
    /// SecantusDB in ./.venv) with data in ./data/db, and use dev credentials unless given.
    #[arg(long, default_value_t = false)]
    pub local_db: bool,

    /// Seconds between janitor passes (deferred reclaims, expired leases).
    #[arg(long, env = "GRIDS3_JANITOR_INTERVAL", default_value_t = 5)]
    pub janitor_interval: u64,

    /// Seconds after which an unfinished multipart upload is aborted by the background sweep.
    #[arg(long, env = "GRIDS3_MULTIPART_MAX_AGE", default_value_t = 7 * 24 * 3600)]
    pub multipart_max_age: u64,

    /// Milliseconds a CompleteMultipartUpload may run before its answer turns into AWS's
    /// keep-alive form: 200 at once, whitespace every few seconds, then the result (or an
    /// `<Error>` document) in the body.
    #[arg(long, env = "GRIDS3_COMPLETE_KEEPALIVE_MS", default_value_t = 5000)]
    pub complete_keepalive_ms: u64,

    /// Seconds to wait for an unreachable MongoDB before a request fails with 503 (server
    /// selection and connection timeout).
    #[arg(long, env = "GRIDS3_MONGODB_TIMEOUT", default_value_t = 3)]
    pub mongodb_timeout: u64,

    /// Write concern of every write grids3 makes (objects, versions, attributes, leases,
    /// locks, bucket settings): `majority` (the default, journaled: an acknowledged write
    /// survives a replica set failover), or a number of members (`1` acknowledges what the
    /// primary alone holds, which a failover may roll back; for a standalone server).
    #[arg(long, env = "GRIDS3_WRITE_CONCERN", default_value = "majority", value_parser = parse_write_concern)]
    pub write_concern: String,

    /// Read concern of every read grids3 makes: `majority` (the default: a decision never
    /// rests on a write a failover could roll back), `local` (faster on a replica set, without
    /// that guarantee) or `linearizable` (also sees every write acknowledged before the read
    /// began, at a round trip to a majority per read).
    #[arg(long, env = "GRIDS3_READ_CONCERN", default_value = "majority", value_parser = parse_read_concern)]
    pub read_concern: String,

    /// When the root key changes, delete the former root keys instead of demoting them to
    /// ordinary keys.
    #[arg(long, env = "GRIDS3_DELETE_OLD_ROOT_KEYS", default_value_t = false)]
    pub delete_old_root_keys: bool,

    /// Refuse Signature Version 2 (the `AWS key:signature` header and `AWSAccessKeyId` /
    /// `Signature` / `Expires` query URLs, which boto3 and awscli presign by default); only
    /// SigV4 is accepted then.
    #[arg(long, env = "GRIDS3_DISABLE_SIGV2", default_value_t = false)]
    pub disable_sigv2: bool,

    /// A server-wide CORS rule for buckets without a CORS configuration of their own:
    /// comma-separated allowed origins (`*` wildcards allowed), with every method, every
    /// request header, and the common response headers exposed. Unset: no default rule.
    #[arg(long, env = "GRIDS3_CORS_DEFAULT_ORIGINS")]
    pub cors_default_origins: Option<String>,

    /// A server-wide Block Public Access setting for buckets without one of their own:
    /// `all`, or a comma-separated list of `BlockPublicAcls`, `IgnorePublicAcls`,
    /// `BlockPublicPolicy`, `RestrictPublicBuckets`. Unset: nothing is blocked (AWS blocks all
    /// four on new buckets; `all` matches it).
    #[arg(long, env = "GRIDS3_BLOCK_PUBLIC_ACCESS", value_parser = crate::model::public_access::parse_flags)]
    pub block_public_access: Option<crate::model::PublicAccessBlock>,

    /// Object ownership of new buckets without `x-amz-object-ownership`: `BucketOwnerEnforced`
    /// (ACLs disabled, AWS's default), `BucketOwnerPreferred` or `ObjectWriter`.
    #[arg(long, env = "GRIDS3_DEFAULT_OBJECT_OWNERSHIP", default_value = "BucketOwnerEnforced", value_parser = crate::model::ownership::parse)]
    pub default_object_ownership: String,

    /// Server access logs: the longest a record waits before it is in a log object in its
    /// target bucket (records are staged in the database every quarter of it, at most every
    /// 5 s; an instance that dies loses at most those of one staging period). Milliseconds
    /// below 1 s are for tests.
    #[arg(long, env = "GRIDS3_ACCESS_LOG_FLUSH_SECS", default_value_t = 300.0)]
    pub access_log_flush_secs: f64,

    /// Event notifications: an event older than this (seconds) that its target has not taken
    /// goes to the dead letters (`__notify_dead`).
    #[arg(long, env = "GRIDS3_NOTIFY_MAX_AGE_SECS", default_value_t = 86_400)]
    pub notify_max_age_secs: u64,

    /// Event notifications: the most events one target may have waiting; beyond it the oldest
    /// go to the dead letters. Writes are never refused or slowed for it.
    #[arg(long, env = "GRIDS3_NOTIFY_MAX_QUEUED", default_value_t = 1_000_000)]
    pub notify_max_queued: i64,

    /// Event notifications: the longest wait, in milliseconds, between two attempts at a
    /// target that fails (the wait doubles from 100 ms up to this).
    #[arg(long, env = "GRIDS3_NOTIFY_RETRY_MAX_MS", default_value_t = 5_000)]
    pub notify_retry_max_ms: u64,

    /// Event notifications: the most ListenBucketNotification streams (`mc watch`, the
    /// console) one instance serves at once; more are answered `503 SlowDown`.
    #[arg(long, env = "GRIDS3_NOTIFY_MAX_LISTENERS", default_value_t = 256)]
    pub notify_max_listeners: usize,

    /// Event notification targets of this instance's environment
    /// (`GRIDS3_NOTIFY_WEBHOOK_<ID>`, `GRIDS3_NOTIFY_NATS_<ID>`; see `notify::targets`), read
    /// at start-up. Every instance should have the same ones; targets added through the admin
    /// API are shared through the database instead.
    #[arg(skip)]
    pub notify_targets: Vec<crate::notify::targets::TargetSpec>,

    /// Seconds in a lifecycle "day" (tests shorten it to observe expiry in a bounded time).
    #[arg(long, env = "GRIDS3_LIFECYCLE_DAY_SECS", default_value_t = 86_400)]
    pub lifecycle_day_secs: u64,

    /// Keys a lifecycle pass reads per batch; its position is saved after each (tests make
    /// it small to cut a pass off after a few batches).
    #[arg(
        long,
        env = "GRIDS3_LIFECYCLE_BATCH",
        default_value_t = 1000,
        hide = true
    )]
    pub lifecycle_batch: usize,

    /// On a sharded cluster (MONGODB_URI points at mongos): shard each bucket's collections as
    /// the bucket is created, chunks on `{files_id: 1}` and files on `{filename: 1}`. The
    /// database must have sharding enabled, and the user the right to run `shardCollection`.
    #[arg(long, env = "GRIDS3_SHARD_BUCKETS", default_value_t = false)]
    pub shard_buckets: bool,

    /// Seconds an operation that does not move object data (listings, HEAD, DELETE, tagging,
    /// bucket and multipart bookkeeping, the start of a GET) may take before it answers 503.
    #[arg(long, env = "GRIDS3_REQUEST_TIMEOUT", default_value_t = 60)]
    pub request_timeout: u64,

    /// MiB of chunk data that all uploads together may have in flight to MongoDB; bounds the
    /// gateway's memory whatever the number of concurrent uploads.
    #[arg(long, env = "GRIDS3_BODY_BUDGET_MIB", default_value_t = 16)]
    pub body_budget_mib: usize,

    /// MiB of chunks that all downloads together may hold read ahead of their clients; a
    /// download that finds it used up reads one chunk at a time (slower, never refused).
    #[arg(long, env = "GRIDS3_DOWNLOAD_BUDGET_MIB", default_value_t = 16)]
    pub download_budget_mib: usize,

    /// MiB of small objects' chunks (objects of one chunk) this instance keeps after reading
    /// or writing them, so that a GET of one sends a plain find of its files document and
    /// reads no chunk. Every GET still reads the files document, and a kept chunk serves only
    /// the file it came from: never stale, whatever other instances write. 0 turns it off.
    #[arg(long, env = "GRIDS3_SMALL_OBJECT_CACHE_MIB", default_value_t = 32)]
    pub small_object_cache_mib: usize,

    /// Driver command monitoring: `grids3_mongodb_command_duration_seconds{command}` and
    /// `grids3_mongodb_command_errors_total{command}`. Off by default: while a monitor is
    /// attached, the MongoDB driver copies every command and every reply, chunk data
    /// included, into documents for it (measured with 256 MiB objects: about 0.6 s of CPU per
    /// GiB on PUT and 0.3 s on GET, a fifth to a third of what the gateway spends).
    #[arg(long, env = "GRIDS3_MONGODB_COMMAND_METRICS", default_value_t = false)]
    pub mongodb_command_metrics: bool,

    /// Connections served at once. When all are taken, the connection that has gone longest
    /// without a request in progress (idle for at least 1 s) is closed to make room; only when
    /// every connection has a request in progress does a new one wait in the listen backlog.
    #[arg(long, env = "GRIDS3_MAX_CONNECTIONS", default_value_t = 1024)]
    pub max_connections: usize,

    /// Members one snowball upload (MinIO's `X-Amz-Meta-Snowball-Auto-Extract`) may store
    /// as objects: a larger archive stores nothing (`400 InvalidRequest`). AWS recommends
    /// batches of about 10,000 files; without a bound a few MB of gzipped tar headers make
    /// millions of empty objects.
    #[arg(long, env = "GRIDS3_SNOWBALL_MAX_MEMBERS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub snowball_max_members: u64,

    /// CompleteMultipartUpload tasks that run at once (each may read and hash every part);
    /// more wait, and answer 503 SlowDown after --completion-wait seconds without a slot.
    #[arg(long, env = "GRIDS3_MAX_COMPLETIONS", default_value_t = 8)]
    pub max_completions: usize,

    /// Seconds a CompleteMultipartUpload waits for one of the --max-completions slots before it
    /// answers 503 SlowDown (the SDKs retry it).
    #[arg(long, env = "GRIDS3_COMPLETION_WAIT", default_value_t = 30)]
    pub completion_wait: u64,

    /// Connections one client address may hold; past it, that address's connection idle the
    /// longest is closed (and a new one refused if all of them have a request in progress).
    #[arg(long, env = "GRIDS3_MAX_CONNECTIONS_PER_CLIENT", default_value_t = 256)]
    pub max_connections_per_client: usize,

    /// Proxies whose `X-Forwarded-For` is believed (comma-separated addresses or ranges, such
    /// as `10.0.0.0/8,127.0.0.1`). A request from one of them counts as coming from the
    /// rightmost forwarded address that is not a trusted proxy, for `aws:SourceIp` and the
    /// per-client requests in progress; without it (the default) the TCP peer's address
    /// counts and `X-Forwarded-For` is ignored. Connection counts are always the peer's.
    #[arg(long, env = "GRIDS3_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<crate::model::net::Cidr>,

    /// Seconds a client has to send a request's headers; also how long an idle keep-alive
    /// connection stays open.
    #[arg(long, env = "GRIDS3_HEADER_TIMEOUT", default_value_t = 10)]
    pub header_timeout: u64,

    /// Seconds that graceful shutdown waits for in-flight requests before it stops anyway.
    #[arg(long, env = "GRIDS3_SHUTDOWN_DEADLINE", default_value_t = 30)]
    pub shutdown_deadline: u64,

    /// Content-addressed buckets (`x-grids3-storage-mode: content`): contents up to this many
    /// bytes are stored inside the object's own document (a GET of one is a single query).
    #[arg(long, env = "GRIDS3_CONTENT_INLINE_MAX", default_value_t = crate::storage::content::DEFAULT_INLINE_MAX)]
    pub content_inline_max: usize,

    /// Content-addressed buckets: the content types stored gzipped when that saves space
    /// (comma-separated; `type/*` matches a whole type).
    #[arg(long, env = "GRIDS3_CONTENT_GZIP_TYPES", default_value = crate::storage::content::DEFAULT_GZIP_TYPES)]
    pub content_gzip_types: String,

    /// Content-addressed buckets: seconds a content nothing references any more is kept
    /// before the janitor reclaims it (and how long a PUT may take between referencing a
    /// content and publishing its object).
    #[arg(long, env = "GRIDS3_CONTENT_GRACE", default_value_t = 600)]
    pub content_grace: u64,

    /// Seconds a write in progress stays registered without a heartbeat; after that the
    /// janitor reclaims the chunks of a writer that died (the heartbeat runs every third).
    #[arg(long, env = "GRIDS3_WRITE_LEASE", default_value_t = 30)]
    pub write_lease: u64,

    /// Test only: pretend this instance's clock is off by this many milliseconds (grids3 takes
    /// its time from the database, so this must change nothing).
    #[arg(
        long,
        env = "GRIDS3_TEST_CLOCK_SKEW_MS",
        default_value_t = 0,
        hide = true,
        allow_hyphen_values = true
    )]
    pub test_clock_skew_ms: i64,
}

/// Commands besides serving.
#[derive(Subcommand, Clone, Debug)]
pub enum Command {
    /// Check the database (MONGODB_URI, GRIDS3_DATABASE) for orphan chunks, broken files,
    /// dangling uploads and parts, stale leases and locks. Exits 1 when it finds problems.
    Fsck {
        /// Remove what is provably dead (orphan chunks, parts without upload, expired leases
        /// and locks). Safe while gateways are running.
        #[arg(long)]
        repair: bool,
        /// Check only the quota counters of metered buckets against a recount (with
        /// --repair, set them to it), and say by how much they differed.
        #[arg(long)]
        usage: bool,
    },
    /// Measure a running gateway with a load generator (signed S3 requests as the root key),
    /// beside the same work done with the raw driver on its database (`--baseline`).
    Bench(BenchArgs),
    /// Search a bucket's objects by key, size, date, content type, user metadata and tags
    /// (`GET /<bucket>?search=QUERY`, see docs/search.md), following every page. Prints one
    /// line per object: key, size, last-modified, tab-separated (`--json`: one JSON object a
    /// line). Signs as AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY when set, so that the
    /// search has that key's rights; else as the root key, as `admin` does.
    Search(SearchArgs),
    /// Call a running gateway's admin API as the root key (GRIDS3_ROOT_ACCESS_KEY /
    /// GRIDS3_ROOT_SECRET_KEY, else those `--local-db` wrote to `data/local.env`); prints the
    /// JSON answer.
    Admin {
        /// The gateway's URL, `http://` or `https://`. Unset: the one in `data/local.env`
        /// (written by `--local-db`), else http://127.0.0.1:9000.
        #[arg(long, env = "GRIDS3_ENDPOINT")]
        endpoint: Option<String>,
        /// PEM certificates to trust for an https endpoint instead of the system's (a
        /// self-signed certificate, a private CA).
        #[arg(long, env = "GRIDS3_CA_BUNDLE")]
        ca_bundle: Option<std::path::PathBuf>,
        /// What to do.
        #[command(subcommand)]
        action: AdminAction,
    },
}

/// `grids3 search`'s arguments.
#[derive(clap::Args, Clone, Debug)]
pub struct SearchArgs {
    /// The bucket.
    pub bucket: String,
    /// The query: a WHERE clause such as `x-amz-meta-color = 'red' AND size > 1000`.
    pub query: String,
    /// The gateway's URL, `http://` or `https://`. Unset: the one in `data/local.env`, else
    /// http://127.0.0.1:9000.
    #[arg(long, env = "GRIDS3_ENDPOINT")]
    pub endpoint: Option<String>,
    /// PEM certificates to trust for an https endpoint instead of the system's.
    #[arg(long, env = "GRIDS3_CA_BUNDLE")]
    pub ca_bundle: Option<std::path::PathBuf>,
    /// Only keys that start with this.
    #[arg(long, default_value = "")]
    pub prefix: String,
    /// Stop after this many objects (0: all).
    #[arg(long, default_value_t = 0)]
    pub max: usize,
    /// Objects asked for per page (`max-keys`, at most 1,000).
    #[arg(long, default_value_t = 1000)]
    pub page_size: usize,
    /// One JSON object per line (key, size, lastModified, etag) instead of text.
    #[arg(long)]
    pub json: bool,
    /// The access key to sign with (default: the root key).
    #[arg(long, env = "AWS_ACCESS_KEY_ID")]
    pub access_key: Option<String>,
    /// Its secret.
    #[arg(long, env = "AWS_SECRET_ACCESS_KEY", hide_env_values = true)]
    pub secret_key: Option<Secret>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret key is never printed.
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("database", &self.database)
            .field("region", &self.region)
            .field("domain", &self.domain)
            .field("root_access_key", &self.root_access_key)
            .finish_non_exhaustive()
    }
}

/// Access key the local development setup uses when none is configured.
pub const DEV_ACCESS_KEY: &str = "grids3dev";
/// Secret key the local development setup uses when none is configured.
pub const DEV_SECRET_KEY: &str = "grids3devsecret";

impl Config {
    /// A configuration for tests and embedding, with the defaults of the flags.
    pub fn for_tests(access_key: &str, secret_key: &str) -> Self {
        let mut c = Config::parse_from(["grids3"]);
        c.mongodb_uri = None;
        c.root_access_key = Some(access_key.to_owned());
        c.root_secret_key = Some(secret_key.into());
        c
    }
}
