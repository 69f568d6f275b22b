//! Golden tests of the XML shapes.

use super::*;

#[test]
fn version_listing_golden() {
    let owner = || Owner {
        id: "i".into(),
        display_name: "d".into(),
    };
    let xml = to_xml(
        "ListVersionsResult",
        &ListVersionsResult {
            xmlns: S3_NS,
            name: "b".into(),
            prefix: String::new(),
            key_marker: String::new(),
            version_id_marker: String::new(),
            next_key_marker: None,
            next_version_id_marker: None,
            max_keys: 1000,
            delimiter: None,
            is_truncated: false,
            encoding_type: None,
            versions: vec![
                VersionItem::DeleteMarker(DeleteMarkerEntry {
                    key: "k".into(),
                    version_id: "2".into(),
                    is_latest: true,
                    last_modified: "t2".into(),
                    owner: owner(),
                }),
                VersionItem::Version(Version {
                    key: "k".into(),
                    version_id: "1".into(),
                    is_latest: false,
                    last_modified: "t1".into(),
                    etag: "\"e\"".into(),
                    size: 3,
                    owner: owner(),
                    storage_class: "STANDARD",
                }),
            ],
            common_prefixes: Vec::new(),
        },
    );
    // Markers and versions interleaved in listing order, as S3 sends them.
    assert!(xml.contains(
        "<IsTruncated>false</IsTruncated><DeleteMarker><Key>k</Key><VersionId>2</VersionId><IsLatest>true</IsLatest><LastModified>t2</LastModified><Owner><ID>i</ID><DisplayName>d</DisplayName></Owner></DeleteMarker><Version><Key>k</Key><VersionId>1</VersionId><IsLatest>false</IsLatest>"
    ), "{xml}");
}

#[test]
fn error_document_golden() {
    let xml = to_xml(
        "Error",
        &ErrorDoc {
            code: "NoSuchKey",
            message: "m",
            resource: "/b/k",
            request_id: "R1",
            extra: Default::default(),
        },
    );
    assert_eq!(
        xml,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code><Message>m</Message><Resource>/b/k</Resource><RequestId>R1</RequestId></Error>"
    );
    let xml = to_xml(
        "Error",
        &ErrorDoc {
            code: "AccessDenied",
            message: "m",
            resource: "/b/k",
            request_id: "R1",
            extra: [("HeadersNotSigned", "x-amz-acl, x-amz-tagging")].into(),
        },
    );
    assert!(
        xml.ends_with("<RequestId>R1</RequestId><HeadersNotSigned>x-amz-acl, x-amz-tagging</HeadersNotSigned></Error>"),
        "{xml}"
    );
}

#[test]
fn list_v2_golden() {
    let xml = to_xml(
        "ListBucketResult",
        &ListBucketResultV2 {
            xmlns: S3_NS,
            name: "b".into(),
            prefix: "".into(),
            delimiter: Some("/".into()),
            max_keys: 1000,
            key_count: 2,
            is_truncated: false,
            encoding_type: None,
            continuation_token: None,
            next_continuation_token: None,
            start_after: None,
            contents: vec![Contents {
                key: "a&b".into(),
                last_modified: "2026-01-01T00:00:00.000Z".into(),
                etag: "\"x\"".into(),
                size: 3,
                owner: None,
                storage_class: "STANDARD",
                user_metadata: None,
                user_tags: None,
            }],
            common_prefixes: vec![CommonPrefix {
                prefix: "d/".into(),
            }],
        },
    );
    assert_eq!(
        xml,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name><Prefix/><Delimiter>/</Delimiter><MaxKeys>1000</MaxKeys><KeyCount>2</KeyCount><IsTruncated>false</IsTruncated><Contents><Key>a&amp;b</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>\"x\"</ETag><Size>3</Size><StorageClass>STANDARD</StorageClass></Contents><CommonPrefixes><Prefix>d/</Prefix></CommonPrefixes></ListBucketResult>"
    );
}

#[test]
fn location_constraint_golden() {
    let xml = to_xml(
        "LocationConstraint",
        &LocationConstraint {
            xmlns: S3_NS,
            region: String::new(),
        },
    );
    assert!(
        xml.ends_with("<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>"),
        "{xml}"
    );
}

#[test]
fn delete_request_parses() {
    let d: Delete = from_xml(
        "Delete",
        b"<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet><Object><Key>a</Key></Object><Object><Key>b/c</Key><VersionId>null</VersionId></Object></Delete>",
    )
    .unwrap();
    assert!(d.quiet);
    assert_eq!(d.objects.len(), 2);
    assert_eq!(d.objects[1].version_id.as_deref(), Some("null"));
    assert!(from_xml::<Delete>("Delete", b"<Delete><Object>").is_err());
}

#[test]
fn text_content_is_never_trimmed() {
    let d: Delete = from_xml(
        "Delete",
        b"<Delete>\n  <Object><Key> </Key></Object>\n  <Object><Key>_ </Key></Object>\n  <Object>\n    <Key>  a &amp; b\n</Key>\n    <VersionId>v1</VersionId>\n  </Object>\n  <Object><Key>x]]&gt;y</Key></Object>\n  <Quiet>true</Quiet>\n</Delete>",
    )
    .unwrap();
    let keys: Vec<&str> = d.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, [" ", "_ ", "  a & b\n", "x]]>y"]);
    assert_eq!(d.objects[2].version_id.as_deref(), Some("v1"));
    assert!(d.quiet);
    let t: Tagging = from_xml(
        "Tagging",
        b"<Tagging><TagSet><Tag><Key>k </Key><Value> v</Value></Tag></TagSet></Tagging>",
    )
    .unwrap();
    assert_eq!(
        (
            t.tag_set.tags[0].key.as_str(),
            t.tag_set.tags[0].value.as_str()
        ),
        ("k ", " v")
    );
    assert!(from_xml::<Delete>("Delete", b"<Delete><Object><Key>a</Object></Delete>").is_err());
}

#[test]
fn unknown_elements_are_malformed_xml() {
    // Attributes (namespaces) pass; every element must be known, at any depth.
    let ok: Tagging = from_xml(
        "Tagging",
        b"<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>",
    )
    .unwrap();
    assert_eq!(ok.tag_set.tags.len(), 1);
    assert_eq!(
        from_xml::<Tagging>(
            "Tagging",
            b"<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value><Extra/></Tag></TagSet></Tagging>"
        )
        .unwrap_err()
        .code,
        "MalformedXML"
    );
    assert!(from_xml::<Tagging>("Tagging", 
        b"<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet><Other>1</Other></Tagging>"
    )
    .is_err());
    assert!(from_xml::<Delete>(
        "Delete",
        b"<Delete><Object><Key>a</Key><Version>1</Version></Object></Delete>"
    )
    .is_err());
    assert!(from_xml::<CompleteMultipartUpload>("CompleteMultipartUpload", 
        b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag><Size>3</Size></Part></CompleteMultipartUpload>"
    )
    .is_err());
    let c: CompleteMultipartUpload = from_xml(
        "CompleteMultipartUpload",
        b"<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Part><ETag>x</ETag><PartNumber>1</PartNumber><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part></CompleteMultipartUpload>",
    )
    .unwrap();
    assert_eq!(c.parts.len(), 1);
}

#[test]
fn the_root_element_must_be_the_bodys() {
    assert_eq!(
        from_xml::<Tagging>("Tagging", b"<Bogus/>")
            .unwrap_err()
            .code,
        "MalformedXML"
    );
    assert!(from_xml::<Tagging>("Tagging", b"<TagSet><Tag><Key>k</Key></Tag></TagSet>").is_err());
    let t: Tagging = from_xml(
        "Tagging",
        b"<?xml version=\"1.0\"?>\n<s3:Tagging xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet/></s3:Tagging>",
    )
    .unwrap();
    assert!(t.tag_set.tags.is_empty());
    let _: Tagging = from_xml("Tagging", b"<Tagging/>").unwrap();
}
