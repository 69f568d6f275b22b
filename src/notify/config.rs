//! A bucket's notification configuration (`NotificationConfiguration`, the body of
//! PutBucketNotificationConfiguration): parsed and checked once, stored as the canonical XML it
//! renders to, read back for GetBucketNotificationConfiguration and for matching each change.
//!
//! Checked as AWS checks it: every event name must be one S3 knows, a filter has at most one
//! `prefix` and one `suffix` rule, and two configurations that share an event type must not
//! overlap in the keys they match ("Configurations overlap"). Whether each destination exists
//! is the caller's question (it needs the target registry).
//!
//! Where grids3 differs from AWS:
//! - The destination is a grids3 target's ARN, `arn:grids3:sqs::<id>:<type>` (MinIO's
//!   `arn:minio:sqs::<id>:<type>` is taken too, so applications written for MinIO keep their
//!   configuration); it may stand in any of `QueueConfiguration`, `TopicConfiguration` and
//!   `CloudFunctionConfiguration`, which differ only in the element that names it.
//! - `EventBridgeConfiguration` is refused with `501 NotImplemented`: there is no EventBridge.
//! - Event types grids3 never produces (restores, replication, transitions, Intelligent-Tiering,
//!   reduced-redundancy loss) are accepted, as AWS accepts them, and simply never fire: none of
//!   those things happens in grids3.

use serde::Deserialize;

use crate::error::{S3Error, S3Result};

/// Every event type S3 accepts in a configuration; the ones grids3 produces are in
/// [`crate::notify::EventName`].
const KNOWN_EVENTS: &[&str] = &[
    "s3:TestEvent",
    "s3:ObjectCreated:*",
    "s3:ObjectCreated:Put",
    "s3:ObjectCreated:Post",
    "s3:ObjectCreated:Copy",
    "s3:ObjectCreated:CompleteMultipartUpload",
    "s3:ObjectRemoved:*",
    "s3:ObjectRemoved:Delete",
    "s3:ObjectRemoved:DeleteMarkerCreated",
    "s3:ObjectRestore:*",
    "s3:ObjectRestore:Post",
    "s3:ObjectRestore:Completed",
    "s3:ObjectRestore:Delete",
    "s3:ReducedRedundancyLostObject",
    "s3:Replication:*",
    "s3:Replication:OperationFailedReplication",
    "s3:Replication:OperationNotTracked",
    "s3:Replication:OperationMissedThreshold",
    "s3:Replication:OperationReplicatedAfterThreshold",
    "s3:LifecycleExpiration:*",
    "s3:LifecycleExpiration:Delete",
    "s3:LifecycleExpiration:DeleteMarkerCreated",
    "s3:LifecycleTransition",
    "s3:IntelligentTiering",
    "s3:ObjectTagging:*",
    "s3:ObjectTagging:Put",
    "s3:ObjectTagging:Delete",
    "s3:ObjectAcl:Put",
];

/// Whether `event` (a configured name, possibly `...:*`) names events grids3 produces: what
/// a listener may ask for.
pub fn listenable(event: &str) -> bool {
    const PRODUCED: &[&str] = &[
        "s3:ObjectCreated:",
        "s3:ObjectRemoved:",
        "s3:ObjectTagging:",
        "s3:ObjectAcl:Put",
        "s3:LifecycleExpiration:",
    ];
    // MinIO's reads, which `mc watch` asks for by default. A listener gets them; a
    // configuration may not name them (AWS has no such events and refuses them).
    const READS: &[&str] = &[
        "s3:ObjectAccessed:*",
        "s3:ObjectAccessed:Get",
        "s3:ObjectAccessed:Head",
    ];
    READS.contains(&event)
        || KNOWN_EVENTS.contains(&event) && PRODUCED.iter().any(|p| event.starts_with(p))
}

/// Which element named a configuration's destination (kept so GET answers what PUT stored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `QueueConfiguration` / `Queue`.
    Queue,
    /// `TopicConfiguration` / `Topic`.
    Topic,
    /// `CloudFunctionConfiguration` / `CloudFunction`.
    CloudFunction,
}

impl Kind {
    fn elements(self) -> (&'static str, &'static str) {
        match self {
            Kind::Queue => ("QueueConfiguration", "Queue"),
            Kind::Topic => ("TopicConfiguration", "Topic"),
            Kind::CloudFunction => ("CloudFunctionConfiguration", "CloudFunction"),
        }
    }
}

/// One configuration: these events, on keys these rules match, go to this target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// `Id` (made up when the request gave none, as AWS does).
    pub id: String,
    /// The element that held it.
    pub kind: Kind,
    /// The destination ARN, as given.
    pub arn: String,
    /// Event types, as given (`s3:ObjectCreated:*`, ...).
    pub events: Vec<String>,
    /// The key prefix rule's value, if any.
    pub prefix: Option<String>,
    /// The key suffix rule's value, if any.
    pub suffix: Option<String>,
}

impl Rule {
    /// Whether this rule wants an event of type `event` on `key`.
    pub fn matches(&self, event: &str, key: &str) -> bool {
        self.events.iter().any(|e| event_matches(e, event))
            && self.prefix.as_deref().is_none_or(|p| key.starts_with(p))
            && self.suffix.as_deref().is_none_or(|s| key.ends_with(s))
    }
}

/// AWS's message for an event type it does not take (MinIO's clients wait for this text:
/// minio-js's listener hung on grids3's own wording, issue 64).
pub const UNSUPPORTED_EVENT: &str = "A specified event is not supported for notifications.";

/// Whether a configured event type (possibly `...:*`) covers a produced one.
pub fn event_matches(configured: &str, produced: &str) -> bool {
    match configured.strip_suffix('*') {
        Some(stem) => produced.starts_with(stem),
        None => configured == produced,
    }
}

/// A whole configuration (empty: notifications off).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// The rules, in the order given.
    pub rules: Vec<Rule>,
}

impl Config {
    /// The rules that want an event of type `event` on `key`.
    pub fn matching<'a>(&'a self, event: &'a str, key: &'a str) -> impl Iterator<Item = &'a Rule> {
        self.rules.iter().filter(move |r| r.matches(event, key))
    }
}

#[derive(Deserialize, Debug, Default)]
struct ConfigXml {
    #[serde(rename = "QueueConfiguration", default)]
    queues: Vec<RuleXml>,
    #[serde(rename = "TopicConfiguration", default)]
    topics: Vec<RuleXml>,
    #[serde(rename = "CloudFunctionConfiguration", default)]
    functions: Vec<RuleXml>,
    #[serde(rename = "EventBridgeConfiguration", default)]
    event_bridge: Option<EmptyXml>,
}

#[derive(Deserialize, Debug, Default)]
struct EmptyXml {}

#[derive(Deserialize, Debug, Default)]
struct RuleXml {
    #[serde(rename = "Id", default)]
    id: Option<String>,
    #[serde(rename = "Queue", default)]
    queue: Option<String>,
    #[serde(rename = "Topic", default)]
    topic: Option<String>,
    #[serde(rename = "CloudFunction", default)]
    function: Option<String>,
    /// Old configurations name the Lambda role; it is read so that it is not refused.
    #[serde(rename = "InvocationRole", default)]
    _role: Option<String>,
    #[serde(rename = "Event", default)]
    events: Vec<String>,
    #[serde(rename = "Filter", default)]
    filter: Option<FilterXml>,
}

#[derive(Deserialize, Debug, Default)]
struct FilterXml {
    #[serde(rename = "S3Key", default)]
    key: Option<KeyXml>,
}

#[derive(Deserialize, Debug, Default)]
struct KeyXml {
    #[serde(rename = "FilterRule", default)]
    rules: Vec<FilterRuleXml>,
}

#[derive(Deserialize, Debug, Default)]
struct FilterRuleXml {
    #[serde(rename = "Name", default)]
    name: Option<String>,
    #[serde(rename = "Value", default)]
    value: Option<String>,
}

/// The most rules one configuration takes.
pub const MAX_RULES: usize = 100;

/// The longest `Id` AWS takes.
const MAX_ID: usize = 1024;

/// Parses and checks a `NotificationConfiguration` (destinations not checked: see the module
/// documentation).
pub fn parse(body: &[u8]) -> S3Result<Config> {
    let x: ConfigXml = crate::xml::from_xml("NotificationConfiguration", body)?;
    if x.event_bridge.is_some() {
        return Err(S3Error::not_implemented().with_message(
            "EventBridgeConfiguration is not implemented: grids3 sends events to its own targets (arn:grids3:sqs::<id>:<type>)",
        ));
    }
    let mut rules = Vec::new();
    let groups = [
        (Kind::Queue, x.queues),
        (Kind::Topic, x.topics),
        (Kind::CloudFunction, x.functions),
    ];
    for (kind, list) in groups {
        for r in list {
            rules.push(rule(kind, r, rules.len())?);
        }
    }
    // AWS documents no bound; one is needed here: every write to the bucket matches its
    // events against each rule, and the overlap check is quadratic in their number.
    if rules.len() > MAX_RULES {
        return Err(S3Error::invalid_argument(format!(
            "A notification configuration takes at most {MAX_RULES} configurations"
        )));
    }
    check_overlaps(&rules)?;
    let mut ids = std::collections::HashSet::new();
    if let Some(r) = rules.iter().find(|r| !ids.insert(r.id.as_str())) {
        return Err(S3Error::invalid_argument(format!(
            "Two configurations have the same Id: {}",
            r.id
        )));
    }
    Ok(Config { rules })
}

fn rule(kind: Kind, r: RuleXml, index: usize) -> S3Result<Rule> {
    let arn = match kind {
        Kind::Queue => r.queue,
        Kind::Topic => r.topic,
        Kind::CloudFunction => r.function,
    }
    .map(|a| a.trim().to_owned())
    .filter(|a| !a.is_empty())
    .ok_or_else(S3Error::malformed_xml)?;
    if r.events.is_empty() {
        return Err(S3Error::malformed_xml());
    }
    let mut events = Vec::new();
    for e in r.events {
        let e = e.trim().to_owned();
        if !KNOWN_EVENTS.contains(&e.as_str()) || e == "s3:TestEvent" {
            return Err(S3Error::invalid_argument(UNSUPPORTED_EVENT).with_extra("ArgumentName1", e));
        }
        if !events.contains(&e) {
            events.push(e);
        }
    }
    let (mut prefix, mut suffix) = (None, None);
    for f in r
        .filter
        .and_then(|f| f.key)
        .map(|k| k.rules)
        .unwrap_or_default()
    {
        let name = f.name.unwrap_or_default();
        let value = f.value.unwrap_or_default();
        let slot = if name.eq_ignore_ascii_case("prefix") {
            &mut prefix
        } else if name.eq_ignore_ascii_case("suffix") {
            &mut suffix
        } else {
            return Err(S3Error::invalid_argument(
                "filter rule name must be either prefix or suffix",
            )
            .with_extra("ArgumentName1", "FilterRule.Name".to_owned()));
        };
        if slot.is_some() {
            return Err(S3Error::invalid_argument(format!(
                "Cannot specify more than one {} rule in a filter.",
                name.to_ascii_lowercase()
            )));
        }
        if value.len() > MAX_ID {
            return Err(S3Error::invalid_argument("The filter value is too long"));
        }
        *slot = Some(value);
    }
    let id = match r.id.map(|i| i.trim().to_owned()).filter(|i| !i.is_empty()) {
        Some(id) if id.len() > MAX_ID => {
            return Err(S3Error::invalid_argument("The Id is too long"));
        }
        // It goes into every record (`configurationId`) and log line as given.
        Some(id) if id.chars().any(char::is_control) => {
            return Err(S3Error::invalid_argument("The Id has a control character"));
        }
        Some(id) => id,
        // AWS makes one up; this one is stable for a given configuration, so a PUT of the same
        // body twice stores the same thing.
        None => format!("notification-{}", index + 1),
    };
    Ok(Rule {
        id,
        kind,
        arn,
        events,
        prefix: prefix.filter(|p| !p.is_empty()),
        suffix: suffix.filter(|s| !s.is_empty()),
    })
}

/// AWS refuses two configurations that share an event type (a wildcard shares with what it
/// covers) and whose key filters can both match one key: their prefixes are one a prefix of
/// the other (or absent), and so are their suffixes (one a suffix of the other).
fn check_overlaps(rules: &[Rule]) -> S3Result<()> {
    for (i, a) in rules.iter().enumerate() {
        for b in &rules[i + 1..] {
            let shares = a.events.iter().any(|x| {
                b.events
                    .iter()
                    .any(|y| event_matches(x, y) || event_matches(y, x))
            });
            let prefixes = match (&a.prefix, &b.prefix) {
                (Some(p), Some(q)) => p.starts_with(q.as_str()) || q.starts_with(p.as_str()),
                _ => true,
            };
            let suffixes = match (&a.suffix, &b.suffix) {
                (Some(p), Some(q)) => p.ends_with(q.as_str()) || q.ends_with(p.as_str()),
                _ => true,
            };
            if shares && prefixes && suffixes {
                return Err(S3Error::invalid_argument(
                    "Configurations overlap. Configurations on the same bucket cannot share a common event type.",
                ));
            }
        }
    }
    Ok(())
}

/// The canonical XML of a configuration (GetBucketNotificationConfiguration's body, and what is
/// stored).
pub fn render(c: &Config) -> String {
    use crate::xml::escape;
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<NotificationConfiguration xmlns=\"{}\">",
        crate::xml::S3_NS
    );
    for r in &c.rules {
        let (outer, dest) = r.kind.elements();
        out.push_str(&format!("<{outer}><Id>{}</Id>", escape(&r.id)));
        out.push_str(&format!("<{dest}>{}</{dest}>", escape(&r.arn)));
        for e in &r.events {
            out.push_str(&format!("<Event>{}</Event>", escape(e)));
        }
        if r.prefix.is_some() || r.suffix.is_some() {
            out.push_str("<Filter><S3Key>");
            for (name, v) in [("prefix", &r.prefix), ("suffix", &r.suffix)] {
                if let Some(v) = v {
                    out.push_str(&format!(
                        "<FilterRule><Name>{name}</Name><Value>{}</Value></FilterRule>",
                        escape(v)
                    ));
                }
            }
            out.push_str("</S3Key></Filter>");
        }
        out.push_str(&format!("</{outer}>"));
    }
    out.push_str("</NotificationConfiguration>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(inner: &str) -> String {
        format!("<NotificationConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{inner}</NotificationConfiguration>")
    }

    fn queue(id: &str, events: &[&str], prefix: Option<&str>, suffix: Option<&str>) -> String {
        let mut s =
            format!("<QueueConfiguration><Id>{id}</Id><Queue>arn:grids3:sqs::t:webhook</Queue>");
        for e in events {
            s.push_str(&format!("<Event>{e}</Event>"));
        }
        if prefix.is_some() || suffix.is_some() {
            s.push_str("<Filter><S3Key>");
            if let Some(p) = prefix {
                s.push_str(&format!(
                    "<FilterRule><Name>Prefix</Name><Value>{p}</Value></FilterRule>"
                ));
            }
            if let Some(x) = suffix {
                s.push_str(&format!(
                    "<FilterRule><Name>suffix</Name><Value>{x}</Value></FilterRule>"
                ));
            }
            s.push_str("</S3Key></Filter>");
        }
        s + "</QueueConfiguration>"
    }

    #[test]
    fn parses_renders_and_reads_back_the_same() {
        let body = conf(
            &(queue("a", &["s3:ObjectCreated:*"], Some("img/"), Some(".jpg"))
                + &queue("b", &["s3:ObjectRemoved:Delete"], None, None)),
        );
        let c = parse(body.as_bytes()).unwrap();
        assert_eq!(c.rules.len(), 2);
        assert_eq!(c.rules[0].prefix.as_deref(), Some("img/"));
        assert_eq!(parse(render(&c).as_bytes()).unwrap(), c);
        assert_eq!(parse(conf("").as_bytes()).unwrap(), Config::default());
    }

    #[test]
    fn matching_follows_event_wildcards_and_key_filters() {
        let body = conf(&queue(
            "a",
            &["s3:ObjectCreated:*"],
            Some("img/"),
            Some(".jpg"),
        ));
        let c = parse(body.as_bytes()).unwrap();
        let r = &c.rules[0];
        assert!(r.matches("s3:ObjectCreated:Put", "img/a.jpg"));
        assert!(r.matches("s3:ObjectCreated:CompleteMultipartUpload", "img/a.jpg"));
        assert!(!r.matches("s3:ObjectRemoved:Delete", "img/a.jpg"));
        assert!(!r.matches("s3:ObjectCreated:Put", "doc/a.jpg"));
        assert!(!r.matches("s3:ObjectCreated:Put", "img/a.png"));
    }

    #[test]
    fn refuses_what_aws_refuses() {
        let refused = |inner: String| parse(conf(&inner).as_bytes()).unwrap_err();
        assert_eq!(
            refused(queue("a", &["s3:ObjectMade:*"], None, None)).code,
            "InvalidArgument"
        );
        // Overlap: shared event type (wildcard covers Put), prefixes nest.
        let e = refused(
            queue("a", &["s3:ObjectCreated:*"], Some("a/"), None)
                + &queue("b", &["s3:ObjectCreated:Put"], Some("a/b/"), None),
        );
        assert!(e.message.contains("overlap"), "{}", e.message);
        // Disjoint prefixes, or different event types, do not overlap.
        parse(
            conf(
                &(queue("a", &["s3:ObjectCreated:*"], Some("a/"), None)
                    + &queue("b", &["s3:ObjectCreated:Put"], Some("b/"), None)),
            )
            .as_bytes(),
        )
        .unwrap();
        parse(
            conf(
                &(queue("a", &["s3:ObjectCreated:*"], None, None)
                    + &queue("b", &["s3:ObjectRemoved:*"], None, None)),
            )
            .as_bytes(),
        )
        .unwrap();
        // Bounded in number (the overlap check is quadratic), and Ids without control
        // characters; ObjectAccessed is a listener's type only (AWS has no such event).
        let rules = |n: usize| -> String {
            (0..n)
                .map(|i| {
                    let prefix = format!("p{i}/");
                    queue(
                        &format!("r{i}"),
                        &["s3:ObjectCreated:*"],
                        Some(&prefix),
                        None,
                    )
                })
                .collect()
        };
        assert!(refused(rules(MAX_RULES + 1)).message.contains("at most"));
        let most = parse(conf(&rules(MAX_RULES)).as_bytes()).unwrap();
        assert_eq!(most.rules.len(), MAX_RULES);
        assert_eq!(
            refused(queue("a\u{7}b", &["s3:ObjectCreated:*"], None, None)).code,
            "InvalidArgument"
        );
        assert_eq!(
            refused(queue("a", &["s3:ObjectAccessed:*"], None, None)).code,
            "InvalidArgument"
        );
        assert!(listenable("s3:ObjectAccessed:*") && listenable("s3:ObjectAccessed:Get"));
        assert!(!listenable("s3:ObjectAccessed:Put") && !listenable("s3:TestEvent"));
        let two_prefixes = "<QueueConfiguration><Queue>arn:grids3:sqs::t:webhook</Queue><Event>s3:ObjectCreated:*</Event><Filter><S3Key><FilterRule><Name>prefix</Name><Value>a</Value></FilterRule><FilterRule><Name>prefix</Name><Value>b</Value></FilterRule></S3Key></Filter></QueueConfiguration>";
        assert_eq!(refused(two_prefixes.into()).code, "InvalidArgument");
        let bad_name = "<QueueConfiguration><Queue>arn:grids3:sqs::t:webhook</Queue><Event>s3:ObjectCreated:*</Event><Filter><S3Key><FilterRule><Name>middle</Name><Value>a</Value></FilterRule></S3Key></Filter></QueueConfiguration>";
        assert_eq!(refused(bad_name.into()).code, "InvalidArgument");
        assert_eq!(
            refused("<EventBridgeConfiguration/>".into()).code,
            "NotImplemented"
        );
        assert_eq!(
            refused(
                "<QueueConfiguration><Event>s3:ObjectCreated:*</Event></QueueConfiguration>".into()
            )
            .code,
            "MalformedXML"
        );
    }
}
