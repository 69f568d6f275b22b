//! Headers whose meaning grids3 does not implement: refused with AWS's error for an
//! unimplemented feature, so that a client never believes something happened that did not
//! ("never accepted and ignored").

use crate::error::S3Error;
use crate::s3::op::Op;

/// Headers refused wherever they come, and why.
const REFUSED: &[(&str, &str)] = &[
    // S3's append (directory buckets): accepting it would replace the object with the bytes
    // meant to be appended, losing the ones before.
    (
        "x-amz-write-offset-bytes",
        "appending to an object (x-amz-write-offset-bytes) is not implemented: nothing was written",
    ),
    // Only meaningful to a website endpoint, which grids3 does not have (yet): stored, it
    // would redirect nobody.
    (
        "x-amz-website-redirect-location",
        "x-amz-website-redirect-location is not implemented (grids3 has no website endpoint): nothing was written",
    ),
];

/// The refusal of the first unimplemented header a request carries, if any. `op` is for the
/// exceptions to come (a header one operation implements and others do not).
pub fn refusal<'a>(_op: &Op, mut headers: impl Iterator<Item = &'a str>) -> Option<S3Error> {
    headers.find_map(|h| {
        REFUSED
            .iter()
            .find(|(name, _)| *name == h)
            .map(|(_, why)| S3Error::not_implemented().with_message(*why))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_headers() {
        let e = refusal(
            &Op::PutObject,
            ["content-type", "x-amz-write-offset-bytes"].into_iter(),
        )
        .unwrap();
        assert_eq!((e.code, e.status.as_u16()), ("NotImplemented", 501));
        assert!(refusal(
            &Op::CopyObject,
            ["x-amz-website-redirect-location"].into_iter()
        )
        .is_some());
        assert!(refusal(
            &Op::PutObject,
            ["x-amz-request-payer", "x-amz-mfa", "x-amz-storage-class"].into_iter()
        )
        .is_none());
    }
}
