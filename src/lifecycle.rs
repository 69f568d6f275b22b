//! Lifecycle rules (PutBucketLifecycleConfiguration), for s3/ (validation, `x-amz-expiration`)
//! and the janitor (the passes that apply them): parsing and validation as S3 does them, and
//! pure functions for which objects a rule matches and when they expire.
//!
//! grids3 has one storage class and no versioning yet: transitions are refused (there is no
//! class to move to). NoncurrentVersionExpiration and ExpiredObjectDeleteMarker act in
//! versioned buckets only (an unversioned bucket has no noncurrent versions and no delete
//! markers, which is also what S3 does there).

use chrono::{DateTime, TimeZone, Utc};
use serde::Deserialize;

use crate::error::{S3Error, S3Result};

/// Most rules in a configuration.
pub const MAX_RULES: usize = 1000;

/// Which objects a rule applies to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    /// Key prefix.
    pub prefix: String,
    /// Tags every matching object carries.
    pub tags: Vec<(String, String)>,
    /// Only objects larger than this.
    pub size_gt: Option<u64>,
    /// Only objects smaller than this.
    pub size_lt: Option<u64>,
}

/// When current objects expire.
#[derive(Clone, Debug, PartialEq)]
pub enum Expiration {
    /// This many days after the object was written (rounded up to the next midnight UTC).
    Days(u32),
    /// From this date on (midnight UTC).
    Date(DateTime<Utc>),
}

/// One rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// `ID`.
    pub id: String,
    /// `Status` is `Enabled`.
    pub enabled: bool,
    /// `Filter` (or the legacy top-level `Prefix`).
    pub filter: Filter,
    /// `Expiration` of current objects.
    pub expiration: Option<Expiration>,
    /// `AbortIncompleteMultipartUpload` `DaysAfterInitiation`.
    pub abort_days: Option<u32>,
    /// `NoncurrentVersionExpiration` `NoncurrentDays`: versions that many days after a newer
    /// one replaced them are removed.
    pub noncurrent_days: Option<u32>,
    /// `Expiration` `ExpiredObjectDeleteMarker`: a delete marker that is a key's only version
    /// left is removed.
    pub expired_marker: bool,
}

#[derive(Deserialize, Debug, Default)]
struct ConfigXml {
    #[serde(rename = "Rule", default)]
    rules: Vec<RuleXml>,
}

#[derive(Deserialize, Debug, Default)]
struct TagXml {
    #[serde(rename = "Key", default)]
    key: String,
    #[serde(rename = "Value", default)]
    value: String,
}

#[derive(Deserialize, Debug, Default)]
struct AndXml {
    #[serde(rename = "Prefix", default)]
    prefix: Option<String>,
    #[serde(rename = "Tag", default)]
    tags: Vec<TagXml>,
    #[serde(rename = "ObjectSizeGreaterThan", default)]
    size_gt: Option<String>,
    #[serde(rename = "ObjectSizeLessThan", default)]
    size_lt: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
struct FilterXml {
    #[serde(rename = "Prefix", default)]
    prefix: Option<String>,
    #[serde(rename = "Tag", default)]
    tag: Option<TagXml>,
    #[serde(rename = "And", default)]
    and: Option<AndXml>,
    #[serde(rename = "ObjectSizeGreaterThan", default)]
    size_gt: Option<String>,
    #[serde(rename = "ObjectSizeLessThan", default)]
    size_lt: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
struct ExpirationXml {
    #[serde(rename = "Days", default)]
    days: Option<String>,
    #[serde(rename = "Date", default)]
    date: Option<String>,
    #[serde(rename = "ExpiredObjectDeleteMarker", default)]
    delete_marker: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
struct NoncurrentXml {
    #[serde(rename = "NoncurrentDays", default)]
    days: Option<String>,
    /// Read so that it can be refused: a rule that keeps the newest N noncurrent versions
    /// must not be stored as one that expires them all.
    #[serde(rename = "NewerNoncurrentVersions", default)]
    newer: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
struct AbortXml {
    #[serde(rename = "DaysAfterInitiation", default)]
    days: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
struct RuleXml {
    #[serde(rename = "ID", default)]
    id: Option<String>,
    #[serde(rename = "Status", default)]
    status: Option<String>,
    #[serde(rename = "Prefix", default)]
    prefix: Option<String>,
    #[serde(rename = "Filter", default)]
    filter: Option<FilterXml>,
    #[serde(rename = "Expiration", default)]
    expiration: Option<ExpirationXml>,
    #[serde(rename = "NoncurrentVersionExpiration", default)]
    noncurrent: Option<NoncurrentXml>,
    #[serde(rename = "AbortIncompleteMultipartUpload", default)]
    abort: Option<AbortXml>,
    #[serde(rename = "Transition", default)]
    transition: Vec<TransitionXml>,
    #[serde(rename = "NoncurrentVersionTransition", default)]
    noncurrent_transition: Vec<TransitionXml>,
}

/// A `Transition` or `NoncurrentVersionTransition`: read whole (an unknown element inside is
/// MalformedXML, as anywhere) and then refused, since there is nothing to transition to.
#[derive(Deserialize, Debug, Default)]
#[allow(dead_code)]
struct TransitionXml {
    #[serde(rename = "Days", default)]
    days: Option<String>,
    #[serde(rename = "Date", default)]
    date: Option<String>,
    #[serde(rename = "NoncurrentDays", default)]
    noncurrent_days: Option<String>,
    #[serde(rename = "NewerNoncurrentVersions", default)]
    newer: Option<String>,
    #[serde(rename = "StorageClass", default)]
    storage_class: Option<String>,
}

fn bad(msg: &str) -> S3Error {
    S3Error::invalid_argument(msg)
}

fn positive(v: &Option<String>, what: &str) -> S3Result<Option<u32>> {
    match v {
        None => Ok(None),
        Some(s) => s
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|d| *d > 0)
            .map(Some)
            .ok_or_else(|| bad(&format!("'{what}' must be a positive integer"))),
    }
}

fn size(v: &Option<String>) -> S3Result<Option<u64>> {
    v.as_ref()
        .map(|s| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| bad("Object size must be a non-negative integer"))
        })
        .transpose()
}

/// The configuration as it is stored: the document as given, with an `<ID>` added to every
/// rule that has none (AWS generates one, and GetBucketLifecycleConfiguration shows it).
/// `None` when the document is not well-formed XML.
pub fn with_rule_ids(body: &str) -> Option<String> {
    use quick_xml::events::{BytesEnd, BytesStart, BytesText, Event};
    let mut reader = quick_xml::Reader::from_str(body);
    let mut writer = quick_xml::Writer::new(Vec::with_capacity(body.len() + 128));
    // Depth of each open element, and whether the open `<Rule>` (at depth 2) has an `<ID>`.
    let mut depth = 0usize;
    let mut rule_has_id = false;
    loop {
        let event = reader.read_event().ok()?;
        match &event {
            Event::Eof => break,
            Event::Start(e) => {
                depth += 1;
                if depth == 2 && e.local_name().as_ref() == b"Rule" {
                    rule_has_id = false;
                }
                if depth == 3 && e.local_name().as_ref() == b"ID" {
                    rule_has_id = true;
                }
            }
            Event::Empty(e) if depth == 2 && e.local_name().as_ref() == b"ID" => {
                rule_has_id = true;
            }
            Event::End(e) => {
                if depth == 2 && e.local_name().as_ref() == b"Rule" && !rule_has_id {
                    // A random id, as AWS gives (a rule-<n> could collide with one given).
                    let id = uuid::Uuid::new_v4().simple().to_string();
                    writer
                        .write_event(Event::Start(BytesStart::new("ID")))
                        .ok()?;
                    writer.write_event(Event::Text(BytesText::new(&id))).ok()?;
                    writer.write_event(Event::End(BytesEnd::new("ID"))).ok()?;
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        writer.write_event(event).ok()?;
    }
    String::from_utf8(writer.into_inner()).ok()
}

/// Parses and validates a LifecycleConfiguration document.
pub fn parse(body: &[u8]) -> S3Result<Vec<Rule>> {
    let c: ConfigXml = crate::xml::from_xml("LifecycleConfiguration", body)?;
    if c.rules.is_empty() {
        return Err(S3Error::malformed_xml());
    }
    if c.rules.len() > MAX_RULES {
        return Err(bad("Configuration cannot have more than 1000 rules"));
    }
    let mut out: Vec<Rule> = Vec::with_capacity(c.rules.len());
    for (i, r) in c.rules.into_iter().enumerate() {
        let id = r.id.clone().unwrap_or_else(|| format!("rule-{}", i + 1));
        if id.len() > 255 {
            return Err(bad("ID length should not exceed allowed limit of 255"));
        }
        if out.iter().any(|o| o.id == id) {
            return Err(bad(
                "Rule ID must be unique. Found same ID for more than one rule",
            ));
        }
        let enabled = match r.status.as_deref().map(str::trim) {
            Some("Enabled") => true,
            Some("Disabled") => false,
            _ => return Err(S3Error::malformed_xml()),
        };
        if !r.transition.is_empty() || !r.noncurrent_transition.is_empty() {
            return Err(bad(
                "grids3 has only the STANDARD storage class: there is nothing to transition to",
            ));
        }
        let filter = match (r.prefix, r.filter) {
            (Some(_), Some(_)) => return Err(S3Error::malformed_xml()),
            (Some(p), None) => Filter {
                prefix: p,
                ..Default::default()
            },
            (None, None) => return Err(S3Error::malformed_xml()),
            (None, Some(f)) => {
                let given = [
                    f.prefix.is_some(),
                    f.tag.is_some(),
                    f.and.is_some(),
                    f.size_gt.is_some(),
                    f.size_lt.is_some(),
                ];
                if given.iter().filter(|g| **g).count() > 1 {
                    // Several conditions go inside <And>.
                    return Err(S3Error::malformed_xml());
                }
                let mut out = Filter {
                    prefix: f.prefix.unwrap_or_default(),
                    size_gt: size(&f.size_gt)?,
                    size_lt: size(&f.size_lt)?,
                    ..Default::default()
                };
                if let Some(t) = f.tag {
                    out.tags.push((t.key, t.value));
                }
                if let Some(a) = f.and {
                    out.prefix = a.prefix.unwrap_or_default();
                    out.tags = a.tags.into_iter().map(|t| (t.key, t.value)).collect();
                    out.size_gt = size(&a.size_gt)?;
                    out.size_lt = size(&a.size_lt)?;
                }
                if let (Some(gt), Some(lt)) = (out.size_gt, out.size_lt) {
                    if gt >= lt {
                        return Err(bad(
                            "ObjectSizeGreaterThan must be less than ObjectSizeLessThan",
                        ));
                    }
                }
                out
            }
        };
        let has_action = r.expiration.is_some() || r.noncurrent.is_some() || r.abort.is_some();
        let mut expired_marker = false;
        let expiration = match r.expiration {
            None => None,
            Some(e) => match (positive(&e.days, "Days")?, &e.date, &e.delete_marker) {
                (Some(d), None, None) => Some(Expiration::Days(d)),
                (None, Some(date), None) => {
                    let d = DateTime::parse_from_rfc3339(date.trim())
                        .map(|d| d.with_timezone(&Utc))
                        .or_else(|_| {
                            chrono::NaiveDate::parse_from_str(date.trim(), "%Y-%m-%d").map(|d| {
                                Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).unwrap_or_default())
                            })
                        })
                        .map_err(|_| bad("Invalid date in Expiration"))?;
                    if d.timestamp() % 86_400 != 0 {
                        return Err(bad("'Date' must be at midnight GMT"));
                    }
                    Some(Expiration::Date(d))
                }
                (None, None, Some(m)) => {
                    if !matches!(m.trim(), "true" | "false") {
                        return Err(S3Error::malformed_xml());
                    }
                    expired_marker = m.trim() == "true";
                    None
                }
                _ => return Err(S3Error::malformed_xml()),
            },
        };
        let noncurrent_days = match &r.noncurrent {
            Some(n) if n.newer.is_some() => {
                return Err(S3Error::not_implemented().with_message(
                    "NewerNoncurrentVersions is not supported by grids3: nothing was stored",
                ))
            }
            Some(n) => positive(&n.days, "NoncurrentDays")?,
            None => None,
        };
        let abort_days = match &r.abort {
            None => None,
            Some(a) => {
                Some(positive(&a.days, "DaysAfterInitiation")?.ok_or_else(S3Error::malformed_xml)?)
            }
        };
        if !filter.tags.is_empty() && abort_days.is_some() {
            return Err(bad(
                "AbortIncompleteMultipartUpload cannot be specified with Tags.",
            ));
        }
        if !has_action {
            return Err(bad("At least one action needs to be specified in a rule"));
        }
        out.push(Rule {
            id,
            enabled,
            filter,
            expiration,
            abort_days,
            noncurrent_days,
            expired_marker,
        });
    }
    Ok(out)
}

impl Filter {
    /// Whether an object matches.
    pub fn matches(&self, key: &str, size: u64, tags: &[(String, String)]) -> bool {
        key.starts_with(&self.prefix)
            && self.size_gt.is_none_or(|g| size > g)
            && self.size_lt.is_none_or(|l| size < l)
            && self.tags.iter().all(|t| tags.contains(t))
    }
}

/// `days` after `from`, rounded up to the next "midnight" (S3 rounds to midnight UTC; a test
/// `day_secs` shortens the day, and the rounding with it).
pub fn after_days(from: DateTime<Utc>, days: u32, day_secs: u64) -> DateTime<Utc> {
    let d = day_secs.max(1) as i64;
    let t = from.timestamp() + i64::from(days) * d;
    let rounded = (t + d - 1).div_euclid(d) * d;
    Utc.timestamp_opt(rounded, 0).single().unwrap_or(from)
}

/// When an object expires under the rules, and the rule that says so (the earliest of the
/// enabled rules that match it).
pub fn object_expiry<'a>(
    rules: &'a [Rule],
    key: &str,
    size: u64,
    tags: &[(String, String)],
    written: DateTime<Utc>,
    day_secs: u64,
) -> Option<(DateTime<Utc>, &'a str)> {
    rules
        .iter()
        .filter(|r| r.enabled && r.filter.matches(key, size, tags))
        .filter_map(|r| {
            let at = match r.expiration.as_ref()? {
                Expiration::Days(d) => after_days(written, *d, day_secs),
                Expiration::Date(d) => *d,
            };
            Some((at, r.id.as_str()))
        })
        .min_by_key(|(at, _)| *at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_without_an_id_get_one_and_keep_it() {
        let body = "<LifecycleConfiguration><Rule><Status>Enabled</Status><Filter><Prefix>a/</Prefix></Filter><Expiration><Days>1</Days></Expiration></Rule><Rule><ID>mine</ID><Status>Enabled</Status><Filter><Prefix>b/</Prefix></Filter><Expiration><Days>2</Days></Expiration></Rule></LifecycleConfiguration>";
        let stored = with_rule_ids(body).unwrap();
        let rules = parse(stored.as_bytes()).unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].id.len(), 32, "a generated id: {}", rules[0].id);
        assert_eq!(rules[1].id, "mine");
        assert_eq!(stored.matches("<ID>").count(), 2);
        // Stored once, the ids stay: a second pass adds none.
        assert_eq!(with_rule_ids(&stored).unwrap(), stored);
        assert!(with_rule_ids("<LifecycleConfiguration><Rule></Other>").is_none());
    }

    fn doc(rules: &str) -> Vec<u8> {
        format!("<LifecycleConfiguration>{rules}</LifecycleConfiguration>").into_bytes()
    }

    #[test]
    fn validation_as_s3_does_it() {
        let ok = parse(&doc(
            "<Rule><ID>a</ID><Status>Enabled</Status><Filter><Prefix>tmp/</Prefix></Filter><Expiration><Days>3</Days></Expiration></Rule>\
             <Rule><ID>b</ID><Status>Disabled</Status><Prefix>old/</Prefix><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>\
             <Rule><ID>c</ID><Status>Enabled</Status><Filter><And><Prefix>x/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan></And></Filter><Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration></Rule>",
        ))
        .unwrap();
        assert_eq!(ok.len(), 3);
        assert_eq!(ok[0].expiration, Some(Expiration::Days(3)));
        assert_eq!(ok[1].abort_days, Some(1));
        assert!(!ok[1].enabled);
        assert_eq!(ok[2].filter.tags, vec![("k".into(), "v".into())]);
        let code = |rules: &str| parse(&doc(rules)).unwrap_err().code;
        let exp = "<Expiration><Days>1</Days></Expiration>";
        assert_eq!(
            code(&format!("<Rule><ID>a</ID><Status>Enabled</Status><Prefix/>{exp}</Rule><Rule><ID>a</ID><Status>Enabled</Status><Prefix/>{exp}</Rule>")),
            "InvalidArgument"
        );
        assert_eq!(
            code(&format!(
                "<Rule><ID>a</ID><Status>Maybe</Status><Prefix/>{exp}</Rule>"
            )),
            "MalformedXML"
        );
        assert_eq!(
            code(&format!(
                "<Rule><ID>a</ID><Status>Enabled</Status>{exp}</Rule>"
            )),
            "MalformedXML"
        );
        assert_eq!(
            code("<Rule><ID>a</ID><Status>Enabled</Status><Prefix/><Expiration><Days>0</Days></Expiration></Rule>"),
            "InvalidArgument"
        );
        assert_eq!(
            code("<Rule><ID>a</ID><Status>Enabled</Status><Prefix/><Expiration><Date>2030-01-01T05:00:00Z</Date></Expiration></Rule>"),
            "InvalidArgument"
        );
        assert_eq!(
            code("<Rule><ID>a</ID><Status>Enabled</Status><Prefix/><Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition></Rule>"),
            "InvalidArgument"
        );
        assert_eq!(
            code("<Rule><ID>a</ID><Status>Enabled</Status><Prefix/></Rule>"),
            "InvalidArgument"
        );
        assert_eq!(
            code(&format!("<Rule><ID>a</ID><Status>Enabled</Status><Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter>{exp}</Rule>")),
            "MalformedXML"
        );
        let many: String = (0..1001)
            .map(|i| format!("<Rule><ID>r{i}</ID><Status>Enabled</Status><Prefix/>{exp}</Rule>"))
            .collect();
        assert_eq!(code(&many), "InvalidArgument");
    }

    #[test]
    fn matching_and_expiry() {
        let rules = parse(&doc(
            "<Rule><ID>tmp</ID><Status>Enabled</Status><Filter><Prefix>tmp/</Prefix></Filter><Expiration><Days>1</Days></Expiration></Rule>\
             <Rule><ID>big</ID><Status>Enabled</Status><Filter><ObjectSizeGreaterThan>100</ObjectSizeGreaterThan></Filter><Expiration><Days>10</Days></Expiration></Rule>\
             <Rule><ID>off</ID><Status>Disabled</Status><Filter><Prefix></Prefix></Filter><Expiration><Days>1</Days></Expiration></Rule>",
        ))
        .unwrap();
        let t = Utc.with_ymd_and_hms(2026, 11, 23, 13, 0, 0).unwrap();
        let midnight = Utc.with_ymd_and_hms(2026, 11, 25, 0, 0, 0).unwrap();
        assert_eq!(
            object_expiry(&rules, "tmp/a", 5, &[], t, 86_400),
            Some((midnight, "tmp"))
        );
        assert_eq!(object_expiry(&rules, "keep/a", 5, &[], t, 86_400), None);
        let (_, id) = object_expiry(&rules, "keep/b", 500, &[], t, 86_400).unwrap();
        assert_eq!(id, "big");
        assert_eq!(
            object_expiry(&rules, "tmp/big", 500, &[], t, 86_400)
                .unwrap()
                .1,
            "tmp"
        );
        assert_eq!(
            after_days(t, 1, 1),
            t + chrono::Duration::seconds(1),
            "a one-second test day"
        );
        let f = Filter {
            prefix: "p/".into(),
            tags: vec![("k".into(), "v".into())],
            size_gt: None,
            size_lt: Some(10),
        };
        assert!(f.matches(
            "p/x",
            5,
            &[("k".into(), "v".into()), ("o".into(), "w".into())]
        ));
        assert!(!f.matches("p/x", 5, &[]));
        assert!(!f.matches("p/x", 10, &[("k".into(), "v".into())]));
    }
}
