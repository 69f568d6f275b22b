//! The `grids3 admin` subcommands.

use clap::Subcommand;

/// `grids3 admin notify` calls.
#[derive(Subcommand, Clone, Debug)]
pub enum NotifyAction {
    /// Add (or replace) a target; its ARN is `arn:grids3:sqs::<id>:<type>`.
    Add {
        /// The target's id (letters, digits, `-` and `_`).
        id: String,
        /// `webhook` or `nats`.
        #[arg(long = "type")]
        kind: String,
        /// The webhook's URL, or `nats://host:port`.
        #[arg(long)]
        url: String,
        /// Webhook: sent as `Authorization: Bearer <token>`.
        #[arg(long)]
        auth_token: Option<String>,
        /// NATS: the subject (default `grids3.events`).
        #[arg(long)]
        subject: Option<String>,
        /// NATS: publish through JetStream, waiting for its acknowledgement.
        #[arg(long)]
        jetstream: bool,
    },
    /// List the targets (the environment's and the database's; tokens are never shown).
    List,
    /// Remove a target added here, by `<id>:<type>` or ARN.
    Remove {
        /// `<id>:<type>` or the ARN.
        name: String,
    },
}

/// Admin API calls.
#[derive(Subcommand, Clone, Debug)]
pub enum AdminAction {
    /// Create an access key (prints its id and secret, shown only once).
    CreateKey {
        /// A name for the key.
        #[arg(long, default_value = "")]
        name: String,
        /// An e-mail address that ACL grants may name the key by (`emailAddress=`).
        #[arg(long)]
        email: Option<String>,
    },
    /// List access keys (never their secrets).
    ListKeys,
    /// What every bucket and account holds (bytes, objects, versions, delete markers,
    /// multipart parts in progress), recounted from the data.
    Usage,
    /// Read an account's quota (its limits across all its buckets, and its counted usage),
    /// or set it with `--bytes` and `--objects` (0 clears one; the two say the whole limit).
    AccountQuota {
        /// The account's 12-digit id, or its root access key id.
        account: String,
        /// Most bytes (logical) the account's buckets hold together.
        #[arg(long)]
        bytes: Option<u64>,
        /// Most objects (versions and delete markers) they hold together.
        #[arg(long)]
        objects: Option<u64>,
    },
    /// Delete an access key.
    DeleteKey {
        /// The access key id.
        id: String,
    },
    /// Disable an access key: it is refused as unknown until enabled again.
    DisableKey {
        /// The access key id.
        id: String,
    },
    /// Enable a disabled access key again.
    EnableKey {
        /// The access key id.
        id: String,
    },
    /// Grant a key read, write or owner on a bucket (none revokes).
    Grant {
        /// Bucket.
        bucket: String,
        /// Access key id.
        key: String,
        /// read, write, owner or none.
        role: String,
    },
    /// Create a bucket, in a chosen storage mode.
    CreateBucket {
        /// Bucket name.
        name: String,
        /// `gridfs` (standard GridFS, the default) or `content` (content-addressed, in the
        /// v7files format: see docs/storage-modes.md, "Storage modes").
        #[arg(long)]
        storage: Option<String>,
        /// The owner's access key id (the root key when absent).
        #[arg(long)]
        owner: Option<String>,
    },
    /// Convert a bucket to another storage mode, online: objects stay readable throughout,
    /// new ones are stored the new way at once, and an interrupted conversion is resumed by
    /// the janitor (docs/storage-modes.md, "Storage modes").
    ConvertBucket {
        /// Bucket name.
        name: String,
        /// `content` or `gridfs`.
        #[arg(long)]
        to: String,
        /// Return once the conversion has started instead of when it is done.
        #[arg(long)]
        no_wait: bool,
    },
    /// Show a bucket's attributes (owner, storage mode, versioning, a conversion under way).
    BucketInfo {
        /// Bucket name.
        name: String,
    },
    /// Show, set or clear the fields a bucket's metadata search indexes (docs/search.md,
    /// "Indexes"): without fields and `--clear`, shows them, each `building` or `ready`.
    SearchIndexes {
        /// Bucket name.
        bucket: String,
        /// The fields to index (replacing those declared): `size`, `last-modified`,
        /// `content-type`, `x-amz-meta-<name>`, `tags.<key>`.
        fields: Vec<String>,
        /// Index no field.
        #[arg(long, conflicts_with = "fields")]
        clear: bool,
        /// Return once the declaration is stored instead of when every field is ready.
        #[arg(long)]
        no_wait: bool,
    },
    /// Print how a search would read: the declared index it would use (or a scan of the
    /// keys), and the database's plan for each query it sends.
    ExplainSearch {
        /// Bucket name.
        bucket: String,
        /// The query, as `?search=` takes it.
        query: String,
        /// Only keys under this prefix.
        #[arg(long, default_value = "")]
        prefix: String,
    },
    /// Create an SSE-KMS key in the local keyring.
    CreateKmsKey {
        /// The key's id, chosen by the operator (letters, digits, `_` and `-`, up to 64
        /// characters, as KES names keys); clients then name it as it is. A UUID if omitted.
        #[arg(long)]
        id: Option<String>,
        /// An alias (used as `alias/<name>`).
        #[arg(long)]
        alias: Option<String>,
        /// A description.
        #[arg(long, default_value = "")]
        description: String,
    },
    /// Event notification targets (shared by every instance through the database).
    Notify {
        /// What to do.
        #[command(subcommand)]
        action: NotifyAction,
    },
    /// List the keyring's SSE-KMS keys (never their material).
    ListKmsKeys,
    /// Disable an SSE-KMS key: objects under it cannot be read or written until it is enabled.
    DisableKmsKey {
        /// Key id.
        id: String,
    },
    /// Enable a disabled SSE-KMS key.
    EnableKmsKey {
        /// Key id.
        id: String,
    },
    /// Re-seal everything sealed under a previous master key (GRIDS3_PREVIOUS_MASTER_KEYS of
    /// the gateway called) under its current GRIDS3_MASTER_KEY: keyring entries, SSE-S3 data
    /// keys, access-key secrets. Object data is not rewritten.
    RotateMasterKey,
    /// Explain what a key (or `anonymous`) may do on a bucket or object, and why.
    Access {
        /// Access key id, or `anonymous`.
        key: String,
        /// Bucket.
        bucket: String,
        /// Object key (for object actions).
        object: Option<String>,
        /// The policy action (`s3:GetObject`, `s3:PutObject`, `s3:ListBucket`, ...).
        #[arg(long)]
        action: Option<String>,
    },
}
