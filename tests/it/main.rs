//! The integration tests: one binary, one database server per run, modules per area.

mod access_log;
mod authz;
mod browser;
mod content;
mod contract;
mod cors;
mod deploy;
mod fidelity;
mod gridfs_interop;
mod gridfs_spec;
mod honoured;
mod layering;
mod newcomer;
mod plans;
mod policy;
mod post_object;
mod races;
mod readme;
mod reliability;
mod s3_conditional;
mod s3_gridfs;
mod s3_multipart;
mod s3_raw;
mod s3_sdk;
mod security;
mod sharding;
mod sigv2;
#[path = "../../benches/slowload/mod.rs"]
mod slowload;
mod smoke;
mod soak;
mod sse;
mod support;
mod tls;
mod versioning;
