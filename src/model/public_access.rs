//! Block Public Access: the four flags, as a bucket stores them and `--block-public-access`
//! sets them server-wide.

/// A Block Public Access configuration (see `s3::public_access`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PublicAccessBlock {
    /// Refuse requests that set public ACLs.
    pub block_public_acls: bool,
    /// Ignore public ACL grants.
    pub ignore_public_acls: bool,
    /// Refuse public bucket policies.
    pub block_public_policy: bool,
    /// A public policy allows only signed requests.
    pub restrict_public_buckets: bool,
}

/// Parses the server-wide setting: `all`, `none`, or a comma-separated list of the flags.
pub fn parse_flags(s: &str) -> Result<PublicAccessBlock, String> {
    let mut p = PublicAccessBlock::default();
    for f in s.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        match f.to_ascii_lowercase().as_str() {
            "all" => {
                p = PublicAccessBlock {
                    block_public_acls: true,
                    ignore_public_acls: true,
                    block_public_policy: true,
                    restrict_public_buckets: true,
                }
            }
            "none" => {}
            "blockpublicacls" => p.block_public_acls = true,
            "ignorepublicacls" => p.ignore_public_acls = true,
            "blockpublicpolicy" => p.block_public_policy = true,
            "restrictpublicbuckets" => p.restrict_public_buckets = true,
            other => return Err(format!("unknown Block Public Access setting: {other}")),
        }
    }
    Ok(p)
}
