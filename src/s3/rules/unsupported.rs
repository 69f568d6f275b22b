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
];

/// Headers only some operations take: anywhere else they would be accepted and ignored, so
/// they are refused.
const ONLY_ON: &[(&str, &[Op])] = &[(
    // Stored with a new object, for the website endpoint (see `crate::website`).
    "x-amz-website-redirect-location",
    &[Op::PutObject, Op::CopyObject, Op::CreateMultipartUpload],
)];

/// The refusal of the first unimplemented header a request carries, if any (one that no
/// operation takes, or one that `op` does not take).
pub fn refusal<'a>(op: &Op, mut headers: impl Iterator<Item = &'a str>) -> Option<S3Error> {
    headers.find_map(|h| {
        if let Some((_, why)) = REFUSED.iter().find(|(name, _)| *name == h) {
            return Some(S3Error::not_implemented().with_message(*why));
        }
        let (name, ops) = ONLY_ON.iter().find(|(name, _)| *name == h)?;
        (!ops.contains(op)).then(|| {
            S3Error::not_implemented().with_message(format!(
                "{name} is taken by PutObject, CopyObject, CreateMultipartUpload and POST uploads only: nothing was done"
            ))
        })
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
        // Stored and served since the website endpoint (issue 38), by the writes that take it.
        assert!(refusal(
            &Op::CopyObject,
            ["x-amz-website-redirect-location"].into_iter()
        )
        .is_none());
        assert!(refusal(
            &Op::UploadPart,
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
