//! Reading MongoDB's errors: a leaf that storage and the keyring (`crypto`) both use.

/// Whether an error is a duplicate key (E11000) error.
pub fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    match &*e.kind {
        ErrorKind::Write(WriteFailure::WriteError(we)) => we.code == 11000,
        ErrorKind::Command(c) => c.code == 11000,
        ErrorKind::InsertMany(im) => im
            .write_errors
            .as_ref()
            .is_some_and(|es| es.iter().any(|we| we.code == 11000)),
        // A client `bulkWrite` (a small file's chunks and files document).
        ErrorKind::BulkWrite(b) => b.write_errors.values().any(|we| we.code == 11000),
        _ => e.to_string().contains("E11000"),
    }
}

/// Whether a write failed because it conflicted with a transaction's (WriteConflict, 112):
/// nothing was written, and it may be sent again. MongoDB retries a single-document write
/// itself; some servers (the local database) answer the conflict instead.
pub fn is_write_conflict(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    match &*e.kind {
        ErrorKind::Write(WriteFailure::WriteError(we)) => we.code == 112,
        ErrorKind::Command(c) => c.code == 112,
        ErrorKind::BulkWrite(b) => b.write_errors.values().any(|we| we.code == 112),
        _ => false,
    }
}

/// Whether the server has no `bulkWrite` (before MongoDB 8.0): the driver refuses before
/// sending anything, or a server that reports 8.0 answers CommandNotFound; nothing ran.
pub fn is_unsupported_command(e: &mongodb::error::Error) -> bool {
    use mongodb::error::ErrorKind;
    match &*e.kind {
        ErrorKind::IncompatibleServer { .. } => true,
        ErrorKind::Command(c) => c.code == 59,
        _ => false,
    }
}
