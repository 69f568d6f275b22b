//! Shared value types: settings that configuration, the S3 layer and storage all speak of.
//! A leaf: it imports nothing from the rest of the crate, so any layer may use it.

pub mod net;
pub mod ownership;
pub mod public_access;
pub mod storage_class;

pub use public_access::PublicAccessBlock;
