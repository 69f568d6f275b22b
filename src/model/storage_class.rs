//! S3 storage classes. grids3 stores every object alike (GridFS chunks in one database), so a
//! class is a label that is kept and reported, as AWS reports it; it changes no behaviour.
//! Classes whose meaning grids3 cannot honour are refused rather than stored as a lie: the
//! archive classes (an object there must be restored before it can be read), S3 Express One
//! Zone (directory buckets only), and classes of other products (Outposts, Snow, FSx).

/// Classes that grids3 stores, beside `STANDARD` (which is the absence of a class).
/// Each reads back instantly on AWS too, so serving them from GridFS keeps their meaning.
pub const KEPT: &[&str] = &[
    "REDUCED_REDUNDANCY",
    "STANDARD_IA",
    "ONEZONE_IA",
    "INTELLIGENT_TIERING",
    "GLACIER_IR",
];

/// The default class: what an object without a stored class is.
pub const STANDARD: &str = "STANDARD";

/// What a request's class means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `STANDARD` (stored as no class at all).
    Standard,
    /// One of [`KEPT`].
    Kept(&'static str),
}

/// The class a request names, or `Err(())` for a class grids3 refuses (an archive class,
/// `EXPRESS_ONEZONE`, another product's, or an unknown name): `400 InvalidStorageClass`.
/// Names are case-sensitive, as on AWS.
#[allow(clippy::result_unit_err)]
pub fn parse(name: &str) -> Result<Class, ()> {
    if name == STANDARD {
        return Ok(Class::Standard);
    }
    KEPT.iter()
        .find(|k| **k == name)
        .map(|k| Class::Kept(k))
        .ok_or(())
}

/// The class to report for a stored value (`None`, or anything grids3 did not write: STANDARD).
pub fn reported(stored: Option<&str>) -> &'static str {
    match stored.map(parse) {
        Some(Ok(Class::Kept(k))) => k,
        _ => STANDARD,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(parse("STANDARD"), Ok(Class::Standard));
        assert_eq!(
            parse("REDUCED_REDUNDANCY"),
            Ok(Class::Kept("REDUCED_REDUNDANCY"))
        );
        assert_eq!(parse("GLACIER_IR"), Ok(Class::Kept("GLACIER_IR")));
        for refused in [
            "GLACIER",
            "DEEP_ARCHIVE",
            "EXPRESS_ONEZONE",
            "OUTPOSTS",
            "SNOW",
            "BOGUS",
            "standard",
            "",
        ] {
            assert_eq!(parse(refused), Err(()), "{refused}");
        }
        assert_eq!(reported(None), "STANDARD");
        assert_eq!(reported(Some("ONEZONE_IA")), "ONEZONE_IA");
        assert_eq!(reported(Some("junk")), "STANDARD");
    }
}
