//! The answers of IAM's OpenID Connect provider actions (issue 61), in the envelope of
//! [`super::xml`].

use chrono::{DateTime, Utc};

use super::xml::envelope;

/// CreateOpenIDConnectProvider.
pub fn create(arn: &str, tags: &[(String, String)], request_id: &str) -> String {
    envelope("CreateOpenIDConnectProvider", request_id, |w| {
        w.el("OpenIDConnectProviderArn", arn);
        if !tags.is_empty() {
            w.tags(tags);
        }
    })
}

/// GetOpenIDConnectProvider (`Url` without its scheme, as AWS answers it).
pub fn get(
    url: &str,
    client_ids: &[String],
    thumbprints: &[String],
    created: &DateTime<Utc>,
    tags: &[(String, String)],
    request_id: &str,
) -> String {
    envelope("GetOpenIDConnectProvider", request_id, |w| {
        w.el("Url", url);
        w.open("ClientIDList");
        for c in client_ids {
            w.el("member", c);
        }
        w.close("ClientIDList").open("ThumbprintList");
        for t in thumbprints {
            w.el("member", t);
        }
        w.close("ThumbprintList").time("CreateDate", created);
        if !tags.is_empty() {
            w.tags(tags);
        }
    })
}

/// ListOpenIDConnectProviders.
pub fn list(arns: &[String], request_id: &str) -> String {
    envelope("ListOpenIDConnectProviders", request_id, |w| {
        w.list("OpenIDConnectProviderList", arns, |w, a| {
            w.el("Arn", a);
        });
    })
}

/// ListOpenIDConnectProviderTags (never truncated: at most 50 tags).
pub fn list_tags(tags: &[(String, String)], request_id: &str) -> String {
    envelope("ListOpenIDConnectProviderTags", request_id, |w| {
        w.tags(tags).bool("IsTruncated", false);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_answers_have_aws_shapes() {
        let t = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let g = get("idp.example/x", &["c1".into()], &[], &t, &[], "rid");
        assert!(g.contains("<GetOpenIDConnectProviderResult><Url>idp.example/x</Url><ClientIDList><member>c1</member></ClientIDList><ThumbprintList></ThumbprintList><CreateDate>"));
        let l = list(
            &["arn:aws:iam::1:oidc-provider/idp.example/x".into()],
            "rid",
        );
        assert!(l.contains("<OpenIDConnectProviderList><member><Arn>arn:aws:iam::1:oidc-provider/idp.example/x</Arn></member></OpenIDConnectProviderList>"));
    }
}
