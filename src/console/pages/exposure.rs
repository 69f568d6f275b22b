//! What a settings change would make public, asked before it is applied (issue 59: a Save
//! that stored a `Principal: *` policy without a question).
//!
//! The console gathers the facts as the signed-in key through S3 (GetBucketPolicy,
//! GetBucketAcl, GetPublicAccessBlock, GetBucketOwnershipControls), replaces the one the
//! change touches with the proposed document, and asks the same pure decision the
//! authorization follows (`s3::rules::public_access::newly_exposed`, over
//! `Policy::public_grants`, the test GetBucketPolicyStatus uses) what becomes public. The
//! server decides, not the script: a form posted without JavaScript is held at the same step.

use axum::body::Body;
use axum::http::{Method, StatusCode};

use super::Ctx;
use crate::model::PublicAccessBlock;
use crate::s3::request::grants::{ALL_USERS, AUTHENTICATED_USERS};
use crate::s3::rules::public_access::{newly_exposed, Exposure};
use crate::state::AppState;

/// The settings whose change can make a bucket public.
pub fn matters(sub: &str) -> bool {
    matches!(sub, "policy" | "publicAccessBlock" | "ownershipControls")
}

/// What saving `doc` as `sub` (`None`: deleting it) makes public that is not now, each in
/// words; empty when nothing. A document that does not parse decides nothing here: S3 refuses
/// it when it is sent.
pub async fn newly_public(
    st: &AppState,
    ctx: &Ctx,
    bucket: &str,
    sub: &str,
    doc: Option<&str>,
) -> Vec<String> {
    if !matters(sub) {
        return Vec::new();
    }
    let read = |what: &'static str| async move {
        ctx.caller(st)
            .send_text(
                Method::GET,
                Some(bucket),
                None,
                &[(what, "")],
                &[],
                Body::empty(),
                1024 * 1024,
            )
            .await
            .map_err(|e| e.status)
    };
    let (policy, acl, pab, own) = futures::join!(
        read("policy"),
        read("acl"),
        read("publicAccessBlock"),
        read("ownershipControls")
    );
    // Not set (404) and unreadable alike count as nothing: an ACL this key may not read is
    // one it did not change either.
    let present = |r: Result<String, StatusCode>| r.ok();
    let before = Exposure {
        policy: present(policy)
            .map(|t| policy_grants(&t, bucket))
            .unwrap_or_default(),
        acl: present(acl).map(|t| acl_grants(&t)).unwrap_or_default(),
        acls_enabled: !present(own).is_some_and(|t| enforced(&t)),
        pab: present(pab)
            .and_then(|t| pab_of(&t))
            .or(st.config.block_public_access)
            .unwrap_or_default(),
    };
    let mut after = before.clone();
    match (sub, doc) {
        ("policy", Some(d)) => after.policy = policy_grants(d, bucket),
        ("policy", None) => after.policy = Vec::new(),
        ("publicAccessBlock", Some(d)) => match pab_of(d) {
            Some(p) => after.pab = p,
            None => return Vec::new(),
        },
        // Without its own, the bucket has the server's (`--block-public-access`).
        ("publicAccessBlock", None) => {
            after.pab = st.config.block_public_access.unwrap_or_default()
        }
        ("ownershipControls", Some(d)) => after.acls_enabled = !enforced(d),
        ("ownershipControls", None) => after.acls_enabled = true,
        _ => {}
    }
    newly_exposed(&before, &after)
}

/// The public statements of a policy document, in words (none when it does not parse).
fn policy_grants(text: &str, bucket: &str) -> Vec<String> {
    crate::auth::policy::parse(text, bucket, &|_| true)
        .map(|p| p.public_grants())
        .unwrap_or_default()
}

/// The leaf elements of an XML document, by local name, in order; `None` when it is not
/// well-formed.
fn leaves(xml: &str) -> Option<Vec<(String, String)>> {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_str(xml);
    let mut out = Vec::new();
    // The element open with nothing but text in it so far, and its text.
    let mut open: Option<(String, String)> = None;
    let mut depth = 0usize;
    loop {
        match r.read_event().ok()? {
            // A document cut short is not one.
            Event::Eof => return (depth == 0).then_some(out),
            Event::Start(e) => {
                depth += 1;
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                open = Some((name, String::new()));
            }
            Event::Text(t) => {
                if let Some((_, text)) = &mut open {
                    text.push_str(&t.unescape().ok()?);
                }
            }
            Event::End(e) => {
                depth = depth.saturating_sub(1);
                if let Some((name, text)) = open.take() {
                    if name.as_bytes() == e.local_name().as_ref() {
                        out.push((name, text.trim().to_owned()));
                    }
                }
            }
            _ => {}
        }
    }
}

/// The Block Public Access flags of a configuration document (a flag left out is false, as
/// S3 reads it); `None` when it does not parse.
fn pab_of(xml: &str) -> Option<PublicAccessBlock> {
    let l = leaves(xml)?;
    let flag = |name: &str| {
        l.iter()
            .any(|(n, v)| n == name && v.eq_ignore_ascii_case("true"))
    };
    Some(PublicAccessBlock {
        block_public_acls: flag("BlockPublicAcls"),
        ignore_public_acls: flag("IgnorePublicAcls"),
        block_public_policy: flag("BlockPublicPolicy"),
        restrict_public_buckets: flag("RestrictPublicBuckets"),
    })
}

/// Whether an ownership document disables ACLs (`BucketOwnerEnforced`).
fn enforced(xml: &str) -> bool {
    leaves(xml).is_some_and(|l| {
        l.iter()
            .any(|(n, v)| n == "ObjectOwnership" && v == "BucketOwnerEnforced")
    })
}

/// The grants of an AccessControlPolicy to everyone or to any signed-in key, in words.
fn acl_grants(xml: &str) -> Vec<String> {
    let Some(l) = leaves(xml) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut uri: Option<&str> = None;
    for (n, v) in &l {
        match n.as_str() {
            "URI" => uri = Some(v),
            "ID" | "EmailAddress" => uri = None,
            "Permission" => {
                let who = match uri.take() {
                    Some(ALL_USERS) => "everyone (AllUsers)",
                    Some(AUTHENTICATED_USERS) => "any signed-in key (AuthenticatedUsers)",
                    _ => continue,
                };
                out.push(format!("{v} to {who}"));
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_read_for_their_facts() {
        let acl = format!(
            "<AccessControlPolicy><Owner><ID>o</ID></Owner><AccessControlList>\
             <Grant><Grantee><ID>o</ID></Grantee><Permission>FULL_CONTROL</Permission></Grant>\
             <Grant><Grantee><URI>{ALL_USERS}</URI></Grantee><Permission>READ</Permission></Grant>\
             <Grant><Grantee><URI>{AUTHENTICATED_USERS}</URI></Grantee><Permission>WRITE</Permission></Grant>\
             </AccessControlList></AccessControlPolicy>"
        );
        assert_eq!(
            acl_grants(&acl),
            [
                "READ to everyone (AllUsers)",
                "WRITE to any signed-in key (AuthenticatedUsers)"
            ]
        );
        let p = pab_of("<PublicAccessBlockConfiguration><RestrictPublicBuckets>TRUE</RestrictPublicBuckets><BlockPublicAcls>false</BlockPublicAcls></PublicAccessBlockConfiguration>").unwrap();
        assert!(p.restrict_public_buckets && !p.block_public_acls && !p.ignore_public_acls);
        assert!(pab_of("<PublicAccessBlockConfiguration>").is_none());
        assert!(enforced(
            "<OwnershipControls><Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership></Rule></OwnershipControls>"
        ));
        assert!(!enforced(
            "<OwnershipControls><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></OwnershipControls>"
        ));
        let public = r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}"#;
        assert_eq!(
            policy_grants(public, "b"),
            ["everyone may s3:GetObject on arn:aws:s3:::b/*"]
        );
        assert!(policy_grants("{", "b").is_empty());
    }
}
