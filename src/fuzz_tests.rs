//! Property tests of every parser that reads client input: SigV4 in the header and the query,
//! the aws-chunked body decoder, the request XML bodies, Range and the conditional headers and
//! the operation router. Whatever the input, each answers with a value or an S3 error; none
//! panics. Bounded: a few hundred cases each.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method};
use proptest::prelude::*;

use crate::auth::{Auth, Payload, SigningContext};
use crate::error::S3Error;
use crate::s3::request::headers::{parse_range, write_condition, RangeSpec};
use crate::s3::rules::preconditions::evaluate;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 300,
        ..ProptestConfig::default()
    }
}

/// Strings that look like the real thing often enough to get past the first checks.
fn authish() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "AWS4-HMAC-SHA256 Credential=[A-Za-z0-9/_-]{0,60}, SignedHeaders=[a-z;-]{0,40}, Signature=[0-9a-f]{0,70}",
        "AWS4-HMAC-SHA256 [ -~]{0,120}",
        "AWS [A-Za-z0-9]{0,20}:[A-Za-z0-9+/=]{0,30}",
    ]
}

fn headers_of(pairs: &[(String, String)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        if let (Ok(k), Ok(v)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            h.append(k, v);
        }
    }
    h
}

fn auth(payload: Payload) -> Auth {
    Auth {
        access_key: "k".into(),
        root: true,
        payload,
        signing: SigningContext {
            key: [7; 32].into(),
            amz_date: "20261122T000000Z".into(),
            scope: "20261122/us-east-1/s3/aws4_request".into(),
            seed_signature: "0".repeat(64),
        },
        account: None,
        user: None,
        sessions: Vec::new(),
        token: None,
    }
}

/// Bodies shaped like aws-chunked, or not at all.
fn chunkedish() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        (
            "[0-9a-fA-F]{0,9}",
            "(;chunk-signature=[0-9a-f]{0,64})?",
            proptest::collection::vec(any::<u8>(), 0..64),
            "(\r\n)?(0\r\n)?([a-z-]{0,20}:[ -~]{0,40}\r\n)?(\r\n)?"
        )
            .prop_map(|(size, sig, data, tail)| {
                let mut b = format!("{size}{sig}\r\n").into_bytes();
                b.extend_from_slice(&data);
                b.extend_from_slice(b"\r\n");
                b.extend_from_slice(tail.as_bytes());
                b
            }),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn sigv4_header_parser_never_panics(value in authish(), date in "[0-9TZ]{0,20}") {
        let h = headers_of(&[("x-amz-date".into(), date)]);
        let _ = crate::auth::parse_header_auth(&value, &h);
    }

    #[test]
    fn sigv4_query_parser_never_panics(
        pairs in proptest::collection::vec((
            prop_oneof![Just("X-Amz-Algorithm".to_owned()), Just("X-Amz-Credential".to_owned()), Just("X-Amz-Date".to_owned()), Just("X-Amz-Expires".to_owned()), Just("X-Amz-SignedHeaders".to_owned()), Just("X-Amz-Signature".to_owned()), any::<String>()],
            prop_oneof![Just("AWS4-HMAC-SHA256".to_owned()), "[0-9]{0,25}", "[0-9]{8}T[0-9]{6}Z", any::<String>()],
        ), 0..8)
    ) {
        let _ = crate::auth::parse_query_auth(&pairs, chrono::Utc::now());
    }

    #[test]
    fn aws_chunked_decoder_ends_in_data_or_an_s3_error(
        body in chunkedish(),
        signed in any::<bool>(),
        trailer in any::<bool>(),
        decoded_len in proptest::option::of(0u64..1000),
    ) {
        let payload = if signed { Payload::StreamingSigned { trailer } } else { Payload::StreamingUnsignedTrailer };
        let mut pairs = vec![("content-encoding".to_owned(), "aws-chunked".to_owned())];
        if let Some(l) = decoded_len {
            pairs.push(("x-amz-decoded-content-length".into(), l.to_string()));
        }
        if trailer {
            pairs.push(("x-amz-trailer".into(), "x-amz-checksum-crc32".into()));
        }
        let h = headers_of(&pairs);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let a = auth(payload);
        let outcome: Result<Vec<u8>, S3Error> = rt.block_on(async {
            let mut r = crate::auth::body::BodyReader::new(Body::from(body), &h, &a)?;
            let mut out = Vec::new();
            while let Some(b) = r.next().await? {
                out.extend_from_slice(&b);
            }
            Ok(out)
        });
        if let Err(e) = outcome {
            prop_assert!(e.status.is_client_error(), "{e}");
        }
    }

    #[test]
    fn request_xml_bodies_parse_or_answer_malformed_xml(body in prop_oneof![
        any::<Vec<u8>>().prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        "<[A-Za-z]{1,30}>(<[A-Za-z]{1,20}>[ -~]{0,20}</[A-Za-z]{1,20}>){0,4}</[A-Za-z]{1,30}>",
        "<CompleteMultipartUpload>(<Part><PartNumber>[0-9-]{0,12}</PartNumber><ETag>[ -~]{0,40}</ETag></Part>){0,3}</CompleteMultipartUpload>",
        "<Delete>(<Object><Key>[ -~]{0,20}</Key></Object>){0,3}(<Quiet>[a-z]{0,5}</Quiet>)?</Delete>",
        "<Tagging><TagSet>(<Tag><Key>[ -~]{0,20}</Key><Value>[ -~]{0,20}</Value></Tag>){0,3}</TagSet></Tagging>",
    ]) {
        let b = body.as_bytes();
        for e in [
            crate::xml::from_xml::<crate::xml::CompleteMultipartUpload>("CompleteMultipartUpload", b).err(),
            crate::xml::from_xml::<crate::xml::Delete>("Delete", b).err(),
            crate::xml::from_xml::<crate::xml::Tagging>("Tagging", b).err(),
            crate::xml::from_xml::<crate::xml::CreateBucketConfiguration>("CreateBucketConfiguration", b).err(),
        ]
        .into_iter()
        .flatten()
        {
            prop_assert!(e.status.is_client_error(), "{e}");
        }
    }

    #[test]
    fn range_is_within_the_object_or_an_error(
        header in prop_oneof![any::<String>(), "bytes=[0-9]{0,21}-[0-9]{0,21}", "bytes=-[0-9]{0,21}", "bytes=[0-9 ,-]{0,30}"],
        length in prop_oneof![Just(0u64), Just(1), Just(10), any::<u64>()],
    ) {
        match parse_range(Some(&header), length) {
            Ok(RangeSpec::Full) => {}
            Ok(RangeSpec::Part(a, b)) => prop_assert!(a < b && b <= length, "{a}..{b} of {length}"),
            Err(e) => prop_assert_eq!(e.code, "InvalidRange"),
        }
    }

    #[test]
    fn conditional_headers_never_panic(
        im in proptest::option::of(any::<String>()),
        ius in proptest::option::of(prop_oneof![any::<String>(), Just("Sun, 22 Nov 2026 12:00:00 GMT".to_owned())]),
        inm in proptest::option::of(any::<String>()),
        ims in proptest::option::of(any::<String>()),
        millis in any::<i64>(),
    ) {
        let _ = evaluate(im.as_deref(), ius.as_deref(), inm.as_deref(), ims.as_deref(), "\"abc\"", mongodb::bson::DateTime::from_millis(millis));
        let h = headers_of(&[("if-match".into(), im.unwrap_or_default()), ("if-none-match".into(), inm.unwrap_or_default())]);
        if let Err(e) = write_condition(&h) {
            prop_assert!(e.status.is_client_error() || e.code == "NotImplemented", "{e}");
        }
    }

    #[test]
    fn router_maps_every_request_to_an_operation(
        method in prop_oneof![Just(Method::GET), Just(Method::PUT), Just(Method::POST), Just(Method::DELETE), Just(Method::HEAD), Just(Method::OPTIONS), Just(Method::PATCH)],
        bucket in proptest::option::of("[a-z0-9.-]{0,10}"),
        key in proptest::option::of(any::<String>()),
        query in proptest::collection::vec((prop_oneof![Just("uploads".to_owned()), Just("uploadId".to_owned()), Just("partNumber".to_owned()), Just("tagging".to_owned()), Just("list-type".to_owned()), Just("versionId".to_owned()), any::<String>()], any::<String>()), 0..4),
    ) {
        let h = headers_of(&[("x-amz-copy-source".into(), "b/k".into())]);
        let _ = crate::s3::op::parse(&method, bucket.as_deref(), key.as_deref(), &query, &h);
    }
}
