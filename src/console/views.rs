//! The console's pages, as askama templates (`templates/console/`): every value is escaped
//! by default, so a key name is always text, never markup.

use askama::Template;

/// A size as people read it (`60.0 MiB`, `512 B`), in powers of 1024 as the upload list
/// shows them; the exact bytes go in the element's title.
pub fn human_size(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1} {}", UNITS[i])
}

/// [`human_size`] of a size as S3 sends it (a decimal string); as it is when it is not one.
fn human_text(s: &str) -> String {
    s.parse().map(human_size).unwrap_or_else(|_| s.to_owned())
}

/// The sign-in page.
#[derive(Template)]
#[template(path = "console/login.html")]
pub struct Login {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    /// The access key typed before a refusal, kept in its field.
    pub access_key: String,
    /// The single sign-on button's provider name (`None`: no single sign-on).
    pub sso: Option<String>,
}

/// The page the provider sends the browser back to: it changes nothing itself; its script
/// posts the code and state with the tab's own `bind` (see `console::sso`).
#[derive(Template)]
#[template(path = "console/sso_finish.html")]
pub struct SsoFinish {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    /// The callback's parameters, posted back as they came.
    pub fields: Vec<(String, String)>,
}

/// One bucket of the list.
pub struct BucketRow {
    pub name: String,
    pub created: String,
}

/// The bucket list.
#[derive(Template)]
#[template(path = "console/buckets.html")]
pub struct Buckets {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    pub buckets: Vec<BucketRow>,
}

/// One step of the breadcrumbs.
pub struct Crumb {
    pub label: String,
    pub prefix: String,
}

/// One folder (common prefix) of a listing.
pub struct Folder {
    pub name: String,
    pub prefix: String,
}

/// One object of a listing.
pub struct ObjectRow {
    pub name: String,
    pub key: String,
    pub size: u64,
    pub modified: String,
}

impl ObjectRow {
    /// The size as people read it.
    pub fn size_text(&self) -> String {
        human_size(self.size)
    }
}

/// A folder of a bucket.
#[derive(Template)]
#[template(path = "console/browse.html")]
pub struct Browse {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    pub bucket: String,
    pub prefix: String,
    pub crumbs: Vec<Crumb>,
    pub folders: Vec<Folder>,
    pub objects: Vec<ObjectRow>,
    pub next: Option<String>,
    /// The presigned listen URL the page follows (empty: none).
    pub live: String,
    /// The metadata search whose results the page shows (empty: the folder's listing).
    pub search: String,
}

/// An object's details.
#[derive(Template)]
#[template(path = "console/object.html")]
pub struct Object {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    pub bucket: String,
    pub key: String,
    pub parent: String,
    pub size: String,
    pub content_type: String,
    pub etag: String,
    pub modified: String,
    pub headers: Vec<(String, String)>,
    pub share: Option<String>,
    pub share_until: String,
    /// How the object is previewed: `image`, `video`, `audio`, `text`, `pdf`, or `""`.
    pub preview: String,
    /// The preview's source (the console's `/raw`, which Range reaches).
    pub raw_url: String,
    /// The start of a text object, shown as text.
    pub text: Option<String>,
    /// The text rendered as Markdown (safe HTML, see `console::markdown`), for Markdown objects.
    pub markdown: Option<String>,
    pub tags: Vec<(String, String)>,
    /// The tags as the edit box shows them (`key=value` lines).
    pub tags_text: String,
    pub versions: Vec<VersionRow>,
    /// The bucket has Object Lock (its forms are shown only then).
    pub lock: bool,
    /// The object's legal hold (`ON`, `OFF`, or empty: none).
    pub legal_hold: String,
}

/// One version of an object.
pub struct VersionRow {
    pub id: String,
    pub modified: String,
    pub size: String,
    pub latest: bool,
    pub marker: bool,
}

impl VersionRow {
    /// The size as people read it.
    pub fn size_text(&self) -> String {
        human_text(&self.size)
    }
}

impl Object {
    /// The size as people read it.
    pub fn size_text(&self) -> String {
        human_text(&self.size)
    }
}

/// A page with a title and a way back (after an action, or to show a refusal).
#[derive(Template)]
#[template(path = "console/message.html")]
pub struct Message {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    pub title: String,
    pub back: String,
}

/// One setting of a bucket, in its editor.
pub struct Setting {
    /// The S3 sub-resource (`cors`, `policy`...): also the editor's id.
    pub sub: String,
    pub title: String,
    pub deletable: bool,
    /// The document shown: the current one (empty when not set), or the one refused or held.
    pub doc: String,
    /// An example, the empty editor's placeholder (never its value: Save would apply it).
    pub example: String,
    pub set: bool,
    /// AWS's code and reason of a refusal (or the JSON error of a policy).
    pub error: Option<String>,
    /// Where in `doc` the JSON error is (characters), for the editor's cursor.
    pub error_offset: Option<usize>,
    /// The question a change that makes the bucket public waits for (see `pages::exposure`).
    pub confirm: Option<String>,
    /// The change waiting is a delete.
    pub confirm_delete: bool,
}

/// A bucket's settings.
#[derive(Template)]
#[template(path = "console/settings.html")]
pub struct Settings {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    pub bucket: String,
    pub settings: Vec<Setting>,
    pub saved: Option<String>,
    /// The storage mode and a conversion's progress (root only).
    pub storage: Option<StorageView>,
    /// The bucket's limits and usage (see `pages::quota`).
    pub quota: QuotaView,
}

/// A bucket's quota: its limits, what counts against them, and how full it is.
#[derive(Default)]
pub struct QuotaView {
    pub limit_bytes: Option<i64>,
    pub limit_objects: Option<i64>,
    /// Whether the bucket is counted (it has, or had, a limit).
    pub counted: bool,
    pub used_bytes: i64,
    pub used_objects: i64,
    /// How full, in percent, for each limit set.
    pub bytes_percent: Option<i64>,
    pub objects_percent: Option<i64>,
    /// The admin API's refusal (no `admin:GetBucketQuota`, temporary credentials).
    pub error: Option<String>,
    /// The bucket's account's limits and usage, when the account has a quota.
    pub account: Option<AccountQuotaRow>,
}

/// A bucket's storage mode, as root sees it.
pub struct StorageView {
    pub mode: String,
    /// The other mode, which it can be converted to.
    pub other: String,
    pub converting: bool,
    /// Objects converted so far, of all, while converting.
    pub done: u64,
    pub total: u64,
}

/// An access key, as root sees it (never its secret).
pub struct KeyRow {
    pub id: String,
    pub name: String,
    pub email: String,
    pub root: bool,
    pub disabled: bool,
    pub created: String,
}

/// A KMS key of the keyring.
pub struct KmsRow {
    pub id: String,
    pub arn: String,
    pub alias: String,
    pub description: String,
    pub enabled: bool,
    pub created: String,
}

/// An account's quota on the administration page.
#[derive(Default)]
pub struct AccountQuotaRow {
    /// Its root access key id.
    pub key: String,
    /// Its 12-digit id.
    pub account: String,
    /// Whether it is counted (it has, or had, a limit).
    pub counted: bool,
    pub limit_bytes: Option<i64>,
    pub limit_objects: Option<i64>,
    pub used_bytes: i64,
    pub used_objects: i64,
    pub bytes_percent: Option<i64>,
    pub objects_percent: Option<i64>,
}

/// A key just created: its secret is shown on this page only.
pub struct NewKey {
    pub id: String,
    pub secret: String,
}

/// Administration (root only).
#[derive(Template)]
#[template(path = "console/admin.html")]
pub struct Admin {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    pub keys: Vec<KeyRow>,
    pub kms: Vec<KmsRow>,
    /// Why there is no keyring (no master key), if so.
    pub kms_note: Option<String>,
    pub accounts: Vec<AccountQuotaRow>,
    pub created: Option<NewKey>,
    pub done: Option<String>,
}

/// An instance of the deployment.
pub struct InstanceRow {
    pub id: String,
    /// The instance serving this page.
    pub this: bool,
    pub listen: String,
    pub version: String,
    pub started: String,
    /// Seconds since its last report.
    pub seen_secs: i64,
    pub live: bool,
}

/// A background job's lead.
pub struct LeadRow {
    pub job: String,
    pub holder: String,
    pub held: bool,
    pub fence: i64,
}

/// A small chart: an SVG polyline's points (300 x 60), and its last and largest values.
pub struct Chart {
    pub title: String,
    pub last: String,
    pub max: String,
    pub points: String,
}

/// Server status (root only).
#[derive(Template)]
#[template(path = "console/status.html")]
pub struct Status {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    pub instances: Vec<InstanceRow>,
    pub leads: Vec<LeadRow>,
    pub charts: Vec<Chart>,
    pub database: String,
    pub db_version: String,
    pub db_stats: String,
    pub now: String,
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_as_people_read_them() {
        use super::human_size;
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(62_914_560), "60.0 MiB");
        assert_eq!(human_size(5 * 1024 * 1024 * 1024 * 1024), "5.0 TiB");
        assert_eq!(super::human_text("2048"), "2.0 KiB");
        assert_eq!(super::human_text(""), "");
    }
}
