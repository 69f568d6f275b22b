//! Issue 28 item 11: nothing accepted and ignored. Storage classes are kept and reported, or
//! refused; every XML body is read strictly; headers grids3 does not implement are refused;
//! and a walk over every header and query parameter the source reads checks that each is
//! honoured or refused.

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::StorageClass;

use crate::support::{self, Raw};

async fn code_of<T, E: ProvideErrorMetadata>(r: Result<T, E>) -> String {
    match r {
        Ok(_) => "ok".to_owned(),
        Err(e) => e.code().unwrap_or("?").to_owned(),
    }
}

#[test]
fn storage_classes_are_kept_reported_or_refused() {
    support::run(async {
        let gw = support::gateway("classes").await;
        let s3 = gw.sdk();
        let b = "classes";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let put = |key: &str, class: StorageClass| {
            s3.put_object()
                .bucket(b)
                .key(key)
                .storage_class(class)
                .body(ByteStream::from_static(b"abc"))
                .send()
        };
        put("ia", StorageClass::StandardIa).await.unwrap();
        put("rr", StorageClass::ReducedRedundancy).await.unwrap();
        put("std", StorageClass::Standard).await.unwrap();
        for refused in [
            StorageClass::from("BOGUS"),
            StorageClass::DeepArchive,
            StorageClass::Glacier,
            StorageClass::ExpressOnezone,
        ] {
            let name = refused.as_str().to_owned();
            assert_eq!(
                code_of(put("refused", refused).await).await,
                "InvalidStorageClass",
                "{name}"
            );
        }
        assert!(
            s3.head_object()
                .bucket(b)
                .key("refused")
                .send()
                .await
                .is_err(),
            "nothing stored under a refused class"
        );
        let head = s3.head_object().bucket(b).key("ia").send().await.unwrap();
        assert_eq!(head.storage_class(), Some(&StorageClass::StandardIa));
        let head = s3.head_object().bucket(b).key("rr").send().await.unwrap();
        assert_eq!(head.storage_class(), Some(&StorageClass::ReducedRedundancy));
        // AWS sends no class for STANDARD.
        let head = s3.head_object().bucket(b).key("std").send().await.unwrap();
        assert_eq!(head.storage_class(), None);
        let get = s3.get_object().bucket(b).key("ia").send().await.unwrap();
        assert_eq!(get.storage_class(), Some(&StorageClass::StandardIa));
        let listed = s3.list_objects_v2().bucket(b).send().await.unwrap();
        let classes: Vec<(String, String)> = listed
            .contents()
            .iter()
            .map(|o| {
                (
                    o.key().unwrap().to_owned(),
                    o.storage_class().unwrap().as_str().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            classes,
            [
                ("ia".to_owned(), "STANDARD_IA".to_owned()),
                ("rr".to_owned(), "REDUCED_REDUNDANCY".to_owned()),
                ("std".to_owned(), "STANDARD".to_owned())
            ]
        );
        let v1 = s3.list_objects().bucket(b).send().await.unwrap();
        assert_eq!(
            v1.contents()[0].storage_class().map(|c| c.as_str()),
            Some("STANDARD_IA")
        );
        // A copy onto itself that changes only the class is valid; a copy without a class
        // is STANDARD, as on AWS.
        s3.copy_object()
            .bucket(b)
            .key("std")
            .copy_source(format!("{b}/std"))
            .storage_class(StorageClass::OnezoneIa)
            .send()
            .await
            .unwrap();
        let head = s3.head_object().bucket(b).key("std").send().await.unwrap();
        assert_eq!(head.storage_class(), Some(&StorageClass::OnezoneIa));
        s3.copy_object()
            .bucket(b)
            .key("copy")
            .copy_source(format!("{b}/ia"))
            .send()
            .await
            .unwrap();
        let head = s3.head_object().bucket(b).key("copy").send().await.unwrap();
        assert_eq!(head.storage_class(), None, "a copy names its own class");
        assert_eq!(
            code_of(
                s3.copy_object()
                    .bucket(b)
                    .key("copy2")
                    .copy_source(format!("{b}/ia"))
                    .storage_class(StorageClass::DeepArchive)
                    .send()
                    .await
            )
            .await,
            "InvalidStorageClass"
        );
        // Multipart: the upload's class shows in ListParts, ListMultipartUploads and on the
        // object.
        let up = s3
            .create_multipart_upload()
            .bucket(b)
            .key("mp")
            .storage_class(StorageClass::IntelligentTiering)
            .send()
            .await
            .unwrap();
        let id = up.upload_id().unwrap();
        let p = s3
            .upload_part()
            .bucket(b)
            .key("mp")
            .upload_id(id)
            .part_number(1)
            .body(ByteStream::from_static(b"part"))
            .send()
            .await
            .unwrap();
        let parts = s3
            .list_parts()
            .bucket(b)
            .key("mp")
            .upload_id(id)
            .send()
            .await
            .unwrap();
        assert_eq!(
            parts.storage_class(),
            Some(&StorageClass::IntelligentTiering)
        );
        let uploads = s3.list_multipart_uploads().bucket(b).send().await.unwrap();
        assert_eq!(
            uploads.uploads()[0].storage_class(),
            Some(&StorageClass::IntelligentTiering)
        );
        s3.complete_multipart_upload()
            .bucket(b)
            .key("mp")
            .upload_id(id)
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .parts(
                        aws_sdk_s3::types::CompletedPart::builder()
                            .part_number(1)
                            .e_tag(p.e_tag().unwrap())
                            .build(),
                    )
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let head = s3.head_object().bucket(b).key("mp").send().await.unwrap();
        assert_eq!(
            head.storage_class(),
            Some(&StorageClass::IntelligentTiering)
        );
        assert_eq!(
            code_of(
                s3.create_multipart_upload()
                    .bucket(b)
                    .key("mp2")
                    .storage_class(StorageClass::from("EXPRESS_ONEZONE"))
                    .send()
                    .await
            )
            .await,
            "InvalidStorageClass"
        );
    });
}

/// Sends a signed request and returns (status, error code or "").
async fn send(
    gw: &support::Gateway,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String) {
    let mut r = Raw::new(method, path);
    r.headers = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    r.body = body.to_vec();
    let resp = r.send(gw).await;
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap_or_default();
    (status, support::error_code(&text))
}

#[test]
fn configuration_bodies_with_unknown_elements_are_malformed_xml() {
    support::run(async {
        let gw = support::gateway("strictxml").await;
        let b = "strictxml";
        assert_eq!(send(&gw, "PUT", &format!("/{b}"), &[], b"").await.0, 200);
        assert_eq!(
            send(&gw, "PUT", &format!("/{b}/k"), &[], b"abc").await.0,
            200
        );
        let cases: &[(&str, &str, &str)] = &[
            (
                "cors",
                "<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod><AllowedOrigin>*</AllowedOrigin>",
                "</CORSRule></CORSConfiguration>",
            ),
            (
                "lifecycle",
                "<LifecycleConfiguration><Rule><ID>r</ID><Status>Enabled</Status><Filter><Prefix>a</Prefix></Filter><Expiration><Days>1</Days></Expiration>",
                "</Rule></LifecycleConfiguration>",
            ),
            (
                "tagging",
                "<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value>",
                "</Tag></TagSet></Tagging>",
            ),
            (
                "versioning",
                "<VersioningConfiguration><Status>Enabled</Status>",
                "</VersioningConfiguration>",
            ),
            (
                "publicAccessBlock",
                "<PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls>",
                "</PublicAccessBlockConfiguration>",
            ),
            (
                "ownershipControls",
                "<OwnershipControls><Rule><ObjectOwnership>BucketOwnerPreferred</ObjectOwnership>",
                "</Rule></OwnershipControls>",
            ),
        ];
        for (sub, head, tail) in cases {
            let path = format!("/{b}?{sub}");
            // Well-formed as AWS documents it: taken.
            let good = format!("{head}{tail}");
            let (status, code) = send(&gw, "PUT", &path, &[], good.as_bytes()).await;
            assert!(status < 300, "{sub}: {status} {code}");
            // One unknown element (a misspelling, MinIO's versioning extension): refused.
            for extra in [
                "<MaxAgeSecondz>5</MaxAgeSecondz>",
                "<ExcludedPrefixes><Prefix>a/</Prefix></ExcludedPrefixes>",
                "<ExcludeFolders>true</ExcludeFolders>",
            ] {
                let bad = format!("{head}{extra}{tail}");
                assert_eq!(
                    send(&gw, "PUT", &path, &[], bad.as_bytes()).await,
                    (400, "MalformedXML".to_owned()),
                    "{sub} with {extra}"
                );
            }
        }
        // Object tagging, ACLs and DeleteObjects read their bodies the same way.
        let bad_tags = b"<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value><Colour>red</Colour></Tag></TagSet></Tagging>";
        assert_eq!(
            send(&gw, "PUT", &format!("/{b}/k?tagging"), &[], bad_tags).await,
            (400, "MalformedXML".to_owned())
        );
        let bad_delete = b"<Delete><Object><Key>k</Key><Versionid>x</Versionid></Object></Delete>";
        let md5 = {
            use base64::Engine;
            use md5::Digest;
            base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(bad_delete))
        };
        assert_eq!(
            send(
                &gw,
                "POST",
                &format!("/{b}?delete"),
                &[("content-md5", &md5)],
                bad_delete
            )
            .await,
            (400, "MalformedXML".to_owned())
        );
        assert_eq!(
            send(&gw, "HEAD", &format!("/{b}/k"), &[], b"").await.0,
            200,
            "the malformed DeleteObjects deleted nothing"
        );
        // GetBucketVersioning shows what was stored: Enabled, no excluded prefixes.
        let s3 = gw.sdk();
        let v = s3.get_bucket_versioning().bucket(b).send().await.unwrap();
        assert_eq!(v.status().map(|s| s.as_str()), Some("Enabled"));
    });
}

#[test]
fn unimplemented_headers_are_refused_and_change_nothing() {
    support::run(async {
        let gw = support::gateway("refusedhdr").await;
        let b = "refusedhdr";
        assert_eq!(send(&gw, "PUT", &format!("/{b}"), &[], b"").await.0, 200);
        assert_eq!(
            send(&gw, "PUT", &format!("/{b}/k"), &[], b"abc").await.0,
            200
        );
        // S3's append: it replaced the object with the two bytes sent.
        assert_eq!(
            send(
                &gw,
                "PUT",
                &format!("/{b}/k"),
                &[("x-amz-write-offset-bytes", "3")],
                b"de"
            )
            .await,
            (501, "NotImplemented".to_owned())
        );
        let s3 = gw.sdk();
        let got = s3.get_object().bucket(b).key("k").send().await.unwrap();
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().as_ref(),
            b"abc",
            "the object keeps its bytes"
        );
        assert_eq!(
            send(
                &gw,
                "PUT",
                &format!("/{b}/r"),
                &[("x-amz-website-redirect-location", "/elsewhere")],
                b"x"
            )
            .await,
            (501, "NotImplemented".to_owned())
        );
        assert!(s3.head_object().bucket(b).key("r").send().await.is_err());
    });
}
