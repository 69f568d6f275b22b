//! The S3 request layer, in layers that import only downwards (ARCHITECTURE.md; the test
//! `layering` holds the line):
//!
//! - [`dispatch`]: the entry. Authorizes an operation, refuses headers the operation does not
//!   take, and calls its handler.
//! - Handlers, one module per operation family ([`bucket`], [`object`], [`copy`], [`delete`],
//!   [`list`], [`multipart`], [`tagging`], [`acl`], [`cors`], [`policy`],
//!   [`public_access`], [`ownership`], [`object_lock`], [`encryption`], [`lifecycle`],
//!   [`notification`], [`website`], [`unconfigured`], [`post`]): parse, decide, store, respond. A handler imports no other
//!   handler.
//! - Shared steps with I/O: [`authz`] (gathers the facts and the bucket's settings, then calls
//!   the pure decision), [`events`] (the door to event notifications), [`lookup`] (buckets, objects, versions, grantees), [`sse`] (keys
//!   and sealing) and [`write`] (store and publish a new object's body).
//! - [`request`]: the parse layer. Headers, query words and bodies become typed values once,
//!   with AWS's errors; [`respond`]: the shapes of answers.
//! - [`rules`]: pure decisions (authorization, preconditions, Object Lock, ownership, Block
//!   Public Access, ACL evaluation), tested by tables.
//! - The vocabulary: [`op`] (the operation enum), [`actions`] (policy actions and resources),
//!   [`compat`].

pub mod actions;
pub mod compat;
pub mod op;

pub mod request;
pub mod respond;
pub mod rules;

pub mod attrs;
pub mod authz;
pub mod events;
pub mod lookup;
pub mod sse;
pub mod write;

pub mod acl;
pub mod bucket;
pub mod copy;
pub mod cors;
pub mod delete;
pub mod encryption;
pub mod lifecycle;
pub mod list;
pub mod logging;
pub mod minio;
pub mod multipart;
pub mod notification;
pub mod object;
pub mod object_lock;
pub mod ownership;
pub mod policy;
pub mod post;
pub mod public_access;
pub mod search;
pub mod search_versions;
pub mod tagging;
pub mod unconfigured;
pub mod website;

pub mod dispatch;

pub use dispatch::dispatch;
pub use request::S3Request;
