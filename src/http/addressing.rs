//! Path-style (`/bucket/key`) and virtual-hosted-style (`bucket.<domain>/key`) addressing.

use crate::auth::sigv4::decode;

/// The bucket and key a request addresses.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    /// Bucket, if any.
    pub bucket: Option<String>,
    /// Key, if any (never empty).
    pub key: Option<String>,
    /// Whether the bucket came from the Host name (SigV2 signs `/bucket` then).
    pub virtual_hosted: bool,
}

/// Resolves the target from the Host header and the raw path.
pub fn resolve(host: Option<&str>, raw_path: &str, domain: Option<&str>) -> Target {
    let host = host.map(|h| {
        h.rsplit_once(':')
            .filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit()))
            .map_or(h, |(n, _)| n)
    });
    let path = raw_path.strip_prefix('/').unwrap_or(raw_path);
    if let (Some(host), Some(domain)) = (host, domain) {
        if let Some(bucket) = host.strip_suffix(domain).and_then(|b| b.strip_suffix('.')) {
            if !bucket.is_empty() {
                let key = decode(path);
                return Target {
                    bucket: Some(bucket.to_owned()),
                    key: (!key.is_empty()).then_some(key),
                    virtual_hosted: true,
                };
            }
        }
    }
    match path.split_once('/') {
        None if path.is_empty() => Target {
            bucket: None,
            key: None,
            virtual_hosted: false,
        },
        None => Target {
            bucket: Some(decode(path)),
            key: None,
            virtual_hosted: false,
        },
        Some((b, k)) => {
            let key = decode(k);
            Target {
                bucket: Some(decode(b)),
                key: (!key.is_empty()).then_some(key),
                virtual_hosted: false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles() {
        let t = resolve(Some("localhost:9000"), "/b/a/b%20c", None);
        assert_eq!(
            t,
            Target {
                bucket: Some("b".into()),
                key: Some("a/b c".into()),
                virtual_hosted: false,
            }
        );
        let t = resolve(Some("b.s3.local:9000"), "/k", Some("s3.local"));
        assert_eq!(
            t,
            Target {
                bucket: Some("b".into()),
                key: Some("k".into()),
                virtual_hosted: true,
            }
        );
        let t = resolve(Some("s3.local"), "/b/", Some("s3.local"));
        assert_eq!(
            t,
            Target {
                bucket: Some("b".into()),
                key: None,
                virtual_hosted: false,
            }
        );
        assert_eq!(
            resolve(None, "/", None),
            Target {
                bucket: None,
                key: None,
                virtual_hosted: false,
            }
        );
    }
}
