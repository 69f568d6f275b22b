//! Metadata search (issue 63) through boto3: random queries against a brute-force filter in
//! Python, before and after overwrites, deletes, tagging changes and versioning, and of
//! versions (`?versions&search=`) against a model read version by version; refusals;
//! and who may search what (`tests/py/search.py`).

use crate::support;

/// Runs `search.py` on a bucket of its own (with search indexes on `indexed`) and checks
/// every phase against its brute-force filter, the refusals and the callers' rights.
async fn random_searches(bucket: &str, indexed: &str) -> serde_json::Value {
    let gw = support::gateway(bucket).await;
    let n = std::env::var("GRIDS3_SEARCH_OBJECTS").unwrap_or_else(|_| "500".into());
    let r = support::py_result(
        "search.py",
        vec![
            gw.endpoint(),
            support::AK.into(),
            support::SK.into(),
            bucket.into(),
            n,
            "63".into(),
            indexed.into(),
        ],
    )
    .await;
    // The versions search saw old versions too, not only the current ones.
    assert!(r["versions"]["old"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["null_versions"]["queries"], 10, "{r}");
    assert_eq!(
        r["null_versions"]["mismatches"],
        serde_json::json!([]),
        "{r}"
    );
    for phase in ["first", "changed", "versioned", "versions"] {
        assert_eq!(r[phase]["queries"], 50, "{r}");
        assert_eq!(
            r[phase]["mismatches"],
            serde_json::json!([]),
            "{phase}: {r}"
        );
    }
    let errors = &r["errors"];
    for (q, pos) in [
        ("colour = red", 1),
        ("key = 'open", 7),
        ("size > ten", 8),
        ("key LIKE '(a+)+$'", 10),
    ] {
        assert_eq!(errors[q][0], 400, "{q}: {r}");
        assert_eq!(errors[q][1], "InvalidArgument", "{q}: {r}");
        let msg = errors[q][2].as_str().unwrap();
        assert!(msg.contains(&format!("position {pos}")), "{q}: {msg}");
    }
    let auth = &r["auth"];
    assert_eq!(auth["lister_eq"], true, "{r}");
    assert_eq!(auth["lister_ne"], true, "{r}");
    assert_eq!(auth["lister_outside"], "AccessDenied", "{r}");
    assert_eq!(auth["lister_no_prefix"], "AccessDenied", "{r}");
    assert_eq!(auth["reader_sees_metadata"], true, "{r}");
    assert_eq!(auth["nobody"], "AccessDenied", "{r}");
    assert_eq!(auth["reader_versions"], "AccessDenied", "{r}");
    r
}

#[test]
fn random_searches_equal_a_brute_force_filter_and_obey_the_callers_rights() {
    support::run(async {
        random_searches("searched", "").await;
    });
}

/// The same with search indexes declared on the fields the queries compare: equalities are
/// read by them (the plans say so), with the same answers.
#[test]
fn random_searches_read_by_declared_indexes_equal_the_brute_force_filter() {
    support::run(async {
        let r = random_searches(
            "searched-ix",
            "x-amz-meta-customer,x-amz-meta-color,tags.type,tags.project,size,content-type",
        )
        .await;
        assert_eq!(
            r["indexes"].as_array().map(Vec::len),
            Some(6),
            "every field ready: {r}"
        );
        assert_eq!(r["plans"]["x-amz-meta-customer = '7'"], "index", "{r}");
        assert_eq!(r["plans"]["tags.type = 'a' AND size > 10"], "index", "{r}");
    });
}
