//! MinIO's extension to a bucket's versioning configuration: keys excluded from versioning
//! (`ExcludedPrefixes`, up to 10 patterns, and `ExcludeFolders`). In a bucket whose versioning
//! is `Enabled`, a write or delete of an excluded key behaves as in a suspended bucket: it
//! replaces the key's `null` version (and a delete writes a `null` delete marker), as MinIO
//! treats such keys. AWS has no such elements; a configuration without them is AWS's.

use mongodb::bson::{doc, Bson, Document};

/// Most `ExcludedPrefixes` a configuration may hold (MinIO's limit).
pub const MAX_PREFIXES: usize = 10;

/// The keys of a bucket that versioning leaves out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exclusions {
    /// Patterns matched as MinIO matches them: `<pattern>*`, with `*` and `?` wildcards.
    pub prefixes: Vec<String>,
    /// Whether keys ending in `/` (folder objects) are left out.
    pub folders: bool,
}

impl Exclusions {
    /// Whether there is any exclusion.
    pub fn is_empty(&self) -> bool {
        self.prefixes.is_empty() && !self.folders
    }

    /// Whether `key` is left out of versioning.
    pub fn excludes(&self, key: &str) -> bool {
        (self.folders && key.ends_with('/'))
            || self
                .prefixes
                .iter()
                .any(|p| wildcard(&format!("{p}*"), key))
    }

    /// As stored in the bucket's metastore document.
    pub fn to_document(&self) -> Document {
        doc! {"prefixes": self.prefixes.clone(), "folders": self.folders}
    }

    /// From the stored document (anything unreadable is no exclusion).
    pub fn from_document(d: &Document) -> Self {
        Self {
            prefixes: d
                .get_array("prefixes")
                .map(|a| {
                    a.iter()
                        .filter_map(|v| match v {
                            Bson::String(s) => Some(s.clone()),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default(),
            folders: d.get_bool("folders").unwrap_or(false),
        }
    }
}

/// `*` matches any run of characters, `?` any one; everything else itself.
fn wildcard(pattern: &str, s: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = s.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_excluded() {
        let e = Exclusions {
            prefixes: vec!["tmp/".into(), "jobs/*/_temporary/".into(), "_te?t".into()],
            folders: true,
        };
        for key in [
            "tmp/a",
            "tmp/",
            "jobs/7/_temporary/part-0",
            "_test",
            "_text/x",
            "photos/",
        ] {
            assert!(e.excludes(key), "{key}");
        }
        for key in ["tmpx", "photos/a.jpg", "jobs/7/out", "a/tmp/b", "_tet"] {
            assert!(!e.excludes(key), "{key}");
        }
        assert!(!Exclusions::default().excludes("tmp/a"));
        assert_eq!(Exclusions::from_document(&e.to_document()), e);
    }
}
