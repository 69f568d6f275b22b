//! Object ownership settings (`x-amz-object-ownership`, `--default-object-ownership`).

/// The three settings.
pub const SETTINGS: &[&str] = &[
    "BucketOwnerEnforced",
    "BucketOwnerPreferred",
    "ObjectWriter",
];

/// Parses a setting (for the flag and the header).
pub fn parse(s: &str) -> Result<String, String> {
    SETTINGS
        .iter()
        .find(|k| **k == s.trim())
        .map(|k| (*k).to_owned())
        .ok_or_else(|| {
            format!(
                "unknown object ownership: {s} (one of {})",
                SETTINGS.join(", ")
            )
        })
}
