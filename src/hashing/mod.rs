//! Hashing that is worth doing differently from the RustCrypto crates: MD5 over many uploads
//! at once (`md5`), for the ETags S3 clients compare against their own MD5 of the content.

pub mod md5;
