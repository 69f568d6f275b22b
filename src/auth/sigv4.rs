//! AWS Signature Version 4, the pieces S3 needs: canonical request, string to sign, signing
//! key, chunk and trailer signatures.

use hmac::{Hmac, Mac};
use percent_encoding::percent_decode_str;
use sha2::{Digest, Sha256};

// Re-exported where signatures have always named them.
pub use crate::percent::{decode, parse_query, uri_encode};

/// SHA-256 of the empty string, hex.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// The canonical URI of a raw request path: decoded and encoded again once, as S3 expects
/// (S3 does not double-encode), so clients that leave safe characters unencoded still match.
pub fn canonical_uri(raw_path: &str) -> String {
    let decoded = percent_decode_str(raw_path).collect::<Vec<u8>>();
    let mut out = String::with_capacity(raw_path.len());
    for b in decoded {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// The canonical query string, leaving out `X-Amz-Signature` (presigned URLs).
pub fn canonical_query(pairs: &[(String, String)]) -> String {
    let mut enc: Vec<(String, String)> = pairs
        .iter()
        .filter(|(k, _)| k != "X-Amz-Signature")
        .map(|(k, v)| (uri_encode(k, false), uri_encode(v, false)))
        .collect();
    enc.sort();
    enc.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Trims and collapses runs of spaces, as canonical header values require.
pub fn canonical_header_value(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The canonical request. `headers` are `(lower-case name, value)` for the signed headers, in
/// the order of `signed_headers`.
pub fn canonical_request(
    method: &str,
    canonical_uri: &str,
    canonical_query: &str,
    headers: &[(String, String)],
    signed_headers: &str,
    payload_hash: &str,
) -> String {
    let mut s = format!("{method}\n{canonical_uri}\n{canonical_query}\n");
    for (k, v) in headers {
        s.push_str(k);
        s.push(':');
        s.push_str(&canonical_header_value(v));
        s.push('\n');
    }
    s.push('\n');
    s.push_str(signed_headers);
    s.push('\n');
    s.push_str(payload_hash);
    s
}

/// Hex SHA-256.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// The string to sign for a request.
pub fn string_to_sign(amz_date: &str, scope: &str, canonical_request: &str) -> String {
    format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    )
}

fn hmac(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    m.update(msg);
    m.finalize().into_bytes().into()
}

/// The signing key for `date` (YYYYMMDD), region and service; it and every step towards it
/// are zeroed when dropped (each is as good as the secret for a day).
pub fn signing_key(
    secret: &str,
    date: &str,
    region: &str,
    service: &str,
) -> zeroize::Zeroizing<[u8; 32]> {
    use zeroize::Zeroizing;
    let seed = Zeroizing::new(format!("AWS4{secret}"));
    let k = Zeroizing::new(hmac(seed.as_bytes(), date.as_bytes()));
    let k = Zeroizing::new(hmac(&*k, region.as_bytes()));
    let k = Zeroizing::new(hmac(&*k, service.as_bytes()));
    Zeroizing::new(hmac(&*k, b"aws4_request"))
}

/// Hex HMAC-SHA256 signature of a string to sign.
pub fn sign(key: &[u8; 32], string_to_sign: &str) -> String {
    hex::encode(hmac(key, string_to_sign.as_bytes()))
}

/// What a presigned URL is made of: who signs, for where and when.
pub struct Presign<'a> {
    /// The access key id.
    pub access_key: &'a str,
    /// Its secret.
    pub secret: &'a str,
    /// The region of the signature's scope.
    pub region: &'a str,
    /// The `Host` the URL names (signed).
    pub host: &'a str,
    /// The method (`GET`, `PUT`).
    pub method: &'a str,
    /// The path, URI-encoded as it will be sent (`/bucket/key`).
    pub path: &'a str,
    /// `X-Amz-Date` (`YYYYMMDDTHHMMSSZ`): the database's time, not this instance's.
    pub amz_date: &'a str,
    /// `X-Amz-Expires`, in seconds (at most a week).
    pub expires: u64,
    /// Further query parameters that are signed (`partNumber`, `uploadId`).
    pub extra: &'a [(String, String)],
}

/// The query string of a SigV4 presigned URL (`UNSIGNED-PAYLOAD`, only `host` signed), as the
/// AWS SDKs make it: the console's share links and browser uploads.
pub fn presign_query(p: &Presign<'_>) -> String {
    let date = &p.amz_date[..8.min(p.amz_date.len())];
    let scope = format!("{date}/{}/s3/aws4_request", p.region);
    let mut pairs: Vec<(String, String)> = vec![
        ("X-Amz-Algorithm".into(), "AWS4-HMAC-SHA256".into()),
        (
            "X-Amz-Credential".into(),
            format!("{}/{scope}", p.access_key),
        ),
        ("X-Amz-Date".into(), p.amz_date.to_owned()),
        ("X-Amz-Expires".into(), p.expires.to_string()),
        ("X-Amz-SignedHeaders".into(), "host".into()),
    ];
    pairs.extend(p.extra.iter().cloned());
    let query = canonical_query(&pairs);
    let cr = canonical_request(
        p.method,
        &canonical_uri(p.path),
        &query,
        &[("host".to_owned(), p.host.to_owned())],
        "host",
        "UNSIGNED-PAYLOAD",
    );
    let key = signing_key(p.secret, date, p.region, "s3");
    let signature = sign(&key, &string_to_sign(p.amz_date, &scope, &cr));
    format!("{query}&X-Amz-Signature={signature}")
}

/// Signature of one aws-chunked chunk, chained on the previous signature.
pub fn chunk_signature(
    key: &[u8; 32],
    amz_date: &str,
    scope: &str,
    previous: &str,
    chunk_sha256_hex: &str,
) -> String {
    sign(
        key,
        &format!("AWS4-HMAC-SHA256-PAYLOAD\n{amz_date}\n{scope}\n{previous}\n{EMPTY_SHA256}\n{chunk_sha256_hex}"),
    )
}

/// Signature of the trailer block (`name:value\n` lines) after the final chunk.
pub fn trailer_signature(
    key: &[u8; 32],
    amz_date: &str,
    scope: &str,
    previous: &str,
    canonical_trailers: &str,
) -> String {
    sign(
        key,
        &format!(
            "AWS4-HMAC-SHA256-TRAILER\n{amz_date}\n{scope}\n{previous}\n{}",
            sha256_hex(canonical_trailers.as_bytes())
        ),
    )
}

/// Constant-time equality of two signatures.
pub fn signatures_equal(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The headers that sign a request with SigV4 over `host`, `x-amz-content-sha256` and
/// `x-amz-date` (now): those two and `authorization`, to send besides `Host`. For the
/// project's own clients (the admin CLI, the benchmarks).
#[allow(clippy::too_many_arguments)]
pub fn client_headers(
    method: &str,
    host: &str,
    path: &str,
    query: &str,
    payload_hash: &str,
    access_key: &str,
    secret: &str,
    region: &str,
) -> Vec<(String, String)> {
    client_headers_for(
        method,
        host,
        (path, query),
        payload_hash,
        (access_key, secret, None),
        region,
        "s3",
    )
}

/// [`client_headers`] for `service`, with temporary credentials' session token (signed, as
/// `x-amz-security-token`) when the key is a session's.
pub fn client_headers_for(
    method: &str,
    host: &str,
    (path, query): (&str, &str),
    payload_hash: &str,
    (access_key, secret, token): (&str, &str, Option<&str>),
    region: &str,
    service: &str,
) -> Vec<(String, String)> {
    let amz_date = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    // A signed nonce makes two equal requests in one second two signatures: the admin API
    // refuses a signature it has seen (a replay).
    let mut headers = vec![
        ("host".to_owned(), host.to_owned()),
        ("x-amz-content-sha256".to_owned(), payload_hash.to_owned()),
        ("x-amz-date".to_owned(), amz_date.clone()),
    ];
    if let Some(t) = token {
        headers.push(("x-amz-security-token".to_owned(), t.to_owned()));
    }
    headers.push((
        "x-grids3-nonce".to_owned(),
        uuid::Uuid::new_v4().simple().to_string(),
    ));
    let signed = if token.is_some() {
        "host;x-amz-content-sha256;x-amz-date;x-amz-security-token;x-grids3-nonce"
    } else {
        "host;x-amz-content-sha256;x-amz-date;x-grids3-nonce"
    };
    let cr = canonical_request(
        method,
        &canonical_uri(path),
        &canonical_query(&parse_query(Some(query))),
        &headers,
        signed,
        payload_hash,
    );
    let scope = format!("{}/{region}/{service}/aws4_request", &amz_date[..8]);
    let key = signing_key(secret, &amz_date[..8], region, service);
    let sig = sign(&key, &string_to_sign(&amz_date, &scope, &cr));
    let mut out: Vec<(String, String)> = headers.into_iter().skip(1).collect();
    out.push((
        "authorization".into(),
        format!(
            "AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={signed}, Signature={sig}"
        ),
    ));
    out
}

#[cfg(test)]
mod tests {
    //! Vectors from the AWS S3 documentation ("Signature Calculations for the Authorization
    //! Header", "Query String Authentication", "Transferring Payload in Multiple Chunks").
    use super::*;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const SCOPE: &str = "20130524/us-east-1/s3/aws4_request";

    #[test]
    fn get_object_header_vector() {
        let headers = vec![
            (
                "host".to_owned(),
                "examplebucket.s3.amazonaws.com".to_owned(),
            ),
            ("range".to_owned(), "bytes=0-9".to_owned()),
            ("x-amz-content-sha256".to_owned(), EMPTY_SHA256.to_owned()),
            ("x-amz-date".to_owned(), "20130524T000000Z".to_owned()),
        ];
        let cr = canonical_request(
            "GET",
            "/test.txt",
            "",
            &headers,
            "host;range;x-amz-content-sha256;x-amz-date",
            EMPTY_SHA256,
        );
        let sts = string_to_sign("20130524T000000Z", SCOPE, &cr);
        let key = signing_key(SECRET, "20130524", "us-east-1", "s3");
        assert_eq!(
            sign(&key, &sts),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn presigned_vector() {
        let q = parse_query(Some(
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host",
        ));
        let cr = canonical_request(
            "GET",
            "/test.txt",
            &canonical_query(&q),
            &[(
                "host".to_owned(),
                "examplebucket.s3.amazonaws.com".to_owned(),
            )],
            "host",
            "UNSIGNED-PAYLOAD",
        );
        let key = signing_key(SECRET, "20130524", "us-east-1", "s3");
        assert_eq!(
            sign(&key, &string_to_sign("20130524T000000Z", SCOPE, &cr)),
            "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
        );
    }

    #[test]
    fn presigned_urls_are_made_as_aws_makes_them() {
        let q = presign_query(&Presign {
            access_key: "AKIAIOSFODNN7EXAMPLE",
            secret: SECRET,
            region: "us-east-1",
            host: "examplebucket.s3.amazonaws.com",
            method: "GET",
            path: "/test.txt",
            amz_date: "20130524T000000Z",
            expires: 86400,
            extra: &[],
        });
        assert!(q.ends_with(
            "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
        ));
        assert!(q.starts_with("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400"));
    }

    #[test]
    fn chunk_signature_vector() {
        let key = signing_key(SECRET, "20130524", "us-east-1", "s3");
        let seed = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
        let c1 = chunk_signature(
            &key,
            "20130524T000000Z",
            SCOPE,
            seed,
            &sha256_hex(&[b'a'; 65536]),
        );
        assert_eq!(
            c1,
            "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
        );
        let c2 = chunk_signature(
            &key,
            "20130524T000000Z",
            SCOPE,
            &c1,
            &sha256_hex(&[b'a'; 1024]),
        );
        assert_eq!(
            c2,
            "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
        );
        let c3 = chunk_signature(&key, "20130524T000000Z", SCOPE, &c2, EMPTY_SHA256);
        assert_eq!(
            c3,
            "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
        );
    }

    #[test]
    fn canonical_uri_reencodes_once() {
        assert_eq!(canonical_uri("/b/a%20b+c"), "/b/a%20b%2Bc");
        assert_eq!(canonical_uri("/b/caf%C3%A9"), "/b/caf%C3%A9");
        assert_eq!(canonical_uri("/b/x!y"), "/b/x%21y");
        assert!(signatures_equal("abc", "abc") && !signatures_equal("abc", "abd"));
    }
}
