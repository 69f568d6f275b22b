//! The identity pages' templates (`templates/console/identity_*.html`): users, groups,
//! managed policies and the effective-permissions view. Every value is escaped by default.

use askama::Template;

/// A key just created: its secret is shown on the page that created it only.
pub struct NewKey {
    pub id: String,
    pub secret: String,
}

/// A row of a list of names (users, groups, policies), with where it leads.
pub struct Row {
    pub name: String,
    pub path: String,
    pub arn: String,
    pub created: String,
    /// Extra text (a policy's default version and attachments).
    pub note: String,
}

/// An inline policy: its name and document.
pub struct Inline {
    pub name: String,
    pub document: String,
}

/// A policy's document in an editor, with the validator's refusal if it was refused.
pub struct Editor {
    pub doc: String,
    pub error: Option<String>,
}

/// Users.
#[derive(Template)]
#[template(path = "console/identity_users.html")]
pub struct Users {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    pub done: Option<String>,
    /// `None`: the list could not be read (the error says why).
    pub users: Option<Vec<Row>>,
}

/// A section of a page: its rows, or why they could not be read.
pub type Section<T> = Result<Vec<T>, String>;

/// An access key of a user.
pub struct KeyRow {
    pub id: String,
    pub active: bool,
    pub created: String,
}

/// One user.
#[derive(Template)]
#[template(path = "console/identity_user.html")]
pub struct User {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    pub done: Option<String>,
    pub name: String,
    pub path: String,
    pub arn: String,
    pub created: String,
    pub tags: Vec<(String, String)>,
    pub groups: Section<String>,
    pub attached: Section<(String, String)>,
    pub inline: Section<Inline>,
    pub keys: Section<KeyRow>,
    pub created_key: Option<NewKey>,
    /// Managed policies to offer for attaching (empty when they cannot be listed).
    pub policies: Vec<(String, String)>,
    pub editor: Editor,
}

/// Groups.
#[derive(Template)]
#[template(path = "console/identity_groups.html")]
pub struct Groups {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    pub done: Option<String>,
    pub groups: Option<Vec<Row>>,
}

/// One group.
#[derive(Template)]
#[template(path = "console/identity_group.html")]
pub struct Group {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    pub done: Option<String>,
    pub name: String,
    pub path: String,
    pub arn: String,
    pub members: Section<String>,
    pub attached: Section<(String, String)>,
    pub inline: Section<Inline>,
    pub policies: Vec<(String, String)>,
    pub editor: Editor,
}

/// Managed policies.
#[derive(Template)]
#[template(path = "console/identity_policies.html")]
pub struct Policies {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    pub done: Option<String>,
    pub policies: Option<Vec<Row>>,
    /// The create form's fields, kept after a refusal.
    pub name: String,
    pub path: String,
    pub description: String,
    pub editor: Editor,
}

/// A version of a managed policy.
pub struct VersionRow {
    pub id: String,
    pub default: bool,
    pub created: String,
}

/// One managed policy.
#[derive(Template)]
#[template(path = "console/identity_policy.html")]
pub struct Policy {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    pub done: Option<String>,
    pub name: String,
    pub arn: String,
    pub path: String,
    pub description: String,
    pub default_version: String,
    pub attachments: u64,
    pub versions: Section<VersionRow>,
    /// The default version's document.
    pub document: String,
    pub users: Section<String>,
    pub groups: Section<String>,
    pub editor: Editor,
}

/// One action's decision in the effective-permissions view.
pub struct Decision {
    pub action: String,
    /// `bucket`, `object` or `account`: what it is decided on.
    pub scope: &'static str,
    pub allowed: bool,
    /// The rule that decided, and for a user the policy and statement.
    pub why: String,
}

/// The effective-permissions view.
#[derive(Template)]
#[template(path = "console/identity_access.html")]
pub struct Access {
    pub who: String,
    pub csrf: String,
    pub root: bool,
    pub error: Option<String>,
    /// The user asked about (empty: the signed-in key itself).
    pub user: String,
    pub bucket: String,
    pub key: String,
    /// Whose decisions these are, as a sentence.
    pub subject: String,
    pub rows: Vec<Decision>,
    /// Users the caller may pick from (empty when it may not list them).
    pub users: Vec<String>,
}
