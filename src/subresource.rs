//! The query words that select an S3 sub-resource: one list, read by the router (`s3::op`)
//! and by Signature Version 2 (`auth::sigv2`), so that a sub-resource the router acts on can
//! never ride unsigned on a SigV2 signature.
//!
//! SigV2 signs only the sub-resources its clients list (AWS's documentation, botocore's
//! `HmacV1Auth`); the newer ones (Object Lock retention and legal hold, encryption, Block
//! Public Access, ownership controls, ...) were added after SigV2 was frozen, and no SigV2
//! client signs them. A SigV2 request naming one of those is refused, as if its signature did
//! not cover the request: a presigned `PUT /b/k` with `&retention` appended used to set a
//! COMPLIANCE retention no one signed for.

/// Every sub-resource word, with whether SigV2 signs it.
pub const ALL: &[(&str, bool)] = &[
    ("accelerate", true),
    ("acl", true),
    ("analytics", true),
    ("attributes", false),
    ("cors", true),
    ("delete", true),
    ("encryption", false),
    ("intelligent-tiering", false),
    ("inventory", true),
    ("legal-hold", false),
    ("lifecycle", true),
    ("location", true),
    ("logging", true),
    ("metadataConfiguration", false),
    ("metrics", true),
    ("notification", true),
    ("object-lock", true),
    ("ownershipControls", false),
    ("partNumber", true),
    ("policy", true),
    ("policyStatus", false),
    ("publicAccessBlock", false),
    ("renameObject", false),
    ("replication", true),
    ("requestPayment", true),
    ("restore", true),
    ("retention", false),
    ("select", true),
    ("session", false),
    ("tagging", true),
    ("torrent", true),
    ("uploadId", true),
    ("uploads", true),
    ("versionId", true),
    ("versioning", true),
    ("versions", true),
    ("website", true),
];

/// Further query parameters SigV2 signs that select no sub-resource: the response header
/// overrides, and what botocore signs besides.
pub const SIGV2_SIGNED_PARAMETERS: &[&str] = &[
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "select-type",
    "storageClass",
];

/// Whether `word` selects a sub-resource.
pub fn is_subresource(word: &str) -> bool {
    ALL.iter().any(|(w, _)| *w == word)
}

/// Whether SigV2 signs the query parameter `name` (it is then part of the canonical resource).
pub fn sigv2_signs(name: &str) -> bool {
    ALL.iter().any(|(w, signed)| *signed && *w == name) || SIGV2_SIGNED_PARAMETERS.contains(&name)
}

/// The first sub-resource of a query that SigV2 cannot sign, if any.
pub fn sigv2_unsignable(query: &[(String, String)]) -> Option<&str> {
    query
        .iter()
        .map(|(k, _)| k.as_str())
        .find(|k| ALL.iter().any(|(w, signed)| !*signed && w == k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_unique() {
        let words: Vec<&str> = ALL.iter().map(|(w, _)| *w).collect();
        let mut sorted = words.clone();
        sorted.sort_by_key(|w| w.to_ascii_lowercase());
        sorted.dedup();
        assert_eq!(words, sorted);
        assert!(sigv2_signs("acl") && sigv2_signs("response-content-type"));
        assert!(!sigv2_signs("retention") && !sigv2_signs("prefix"));
        let q = vec![
            ("x".to_owned(), String::new()),
            ("legal-hold".to_owned(), String::new()),
        ];
        assert_eq!(sigv2_unsignable(&q), Some("legal-hold"));
    }
}
