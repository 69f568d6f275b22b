//! Transactions with their retries, for the writes that must change several documents or
//! none (quota counters with the data they count, an account's counters with its buckets').
//!
//! # Why transactions have a pool of their own
//!
//! A write outside a transaction that meets a document an open transaction wrote waits, on
//! the server, until that transaction ends (MongoDB's rule, and the local database's). The
//! quota transactions write the bucket's usage document, which every metered writer
//! updates. Had they shared the gateway's one connection pool, the writers they hold up
//! could take every connection while they wait, and the transaction's next statement (or
//! its commit) would wait for a connection that only its own end can free: a deadlock,
//! which MongoDB breaks only when it drops the transaction after a minute and the local
//! database never (found in review: two account limits set at once beside busy writers
//! hung both instances). So [`super::MetaStore::begin`] starts sessions on a client of its
//! own ([`super::MetaStore::with_txn_client`]), and every statement of a transaction runs
//! on it ([`InTxn::on`]). On MongoDB, statements of transactions do not wait for one
//! another (a conflict aborts one at once), so that pool drains. The local database can
//! still deadlock inside itself: a plain write that conflicts with an open transaction
//! retries while it holds its collection's lock, which that transaction's next statement
//! on the collection needs, and it never drops a transaction (docs/quotas.md, "Known
//! limits"; found in review, with a first limit set on a bucket under overwrites).

use mongodb::{ClientSession, Collection};

/// The same collection on the client of a transaction's session: the driver runs a
/// statement on the client of its collection, and refuses a session of another client.
pub trait InTxn {
    /// This collection, for a statement in `s`'s transaction.
    fn on(&self, s: &ClientSession) -> Self;
}

impl<T: Send + Sync> InTxn for Collection<T> {
    fn on(&self, s: &ClientSession) -> Self {
        // No read or write concern of its own: a transaction's statements may carry none
        // (the transaction's own are set where it starts, in `begin`).
        s.client()
            .database(&self.namespace().db)
            .collection(self.name())
    }
}

/// Whether a transaction failed in a way that its retry can mend: labelled so, or a write
/// conflict (which aborts the transaction it happens in, labelled or not).
pub fn transient(e: &mongodb::error::Error) -> bool {
    e.contains_label(mongodb::error::TRANSIENT_TRANSACTION_ERROR)
        || crate::dberror::is_write_conflict(e)
}

/// Commits, retrying while the outcome is unknown.
pub async fn commit(s: &mut ClientSession) -> mongodb::error::Result<()> {
    loop {
        match s.commit_transaction().await {
            Err(e) if e.contains_label(mongodb::error::UNKNOWN_TRANSACTION_COMMIT_RESULT) => {
                continue
            }
            r => return r,
        }
    }
}

impl super::MetaStore {
    /// A session with a transaction started in it, under the database's configured concerns:
    /// a transaction's statements may not carry their own, so its start (read concern) and
    /// its commit (write concern) must, or it would read and commit at the server's defaults.
    pub async fn begin(&self) -> mongodb::error::Result<ClientSession> {
        let mut s = self.txn_client.start_session().await?;
        let mut t = s.start_transaction();
        if let Some(rc) = self.db.read_concern() {
            t = t.read_concern(rc.clone());
        }
        if let Some(wc) = self.db.write_concern() {
            t = t.write_concern(wc.clone());
        }
        t.await?;
        Ok(s)
    }
}

/// Runs a transaction body on the metastore `$meta` ([`super::MetaStore::begin`]), again on
/// transient errors; `body` gets a started transaction and answers whether to commit (`Some`)
/// or abort (`None`).
macro_rules! with_transaction {
    ($meta:expr, |$s:ident| $body:block) => {{
        let mut attempt = 0_u64;
        loop {
            attempt += 1;
            let mut $s = $meta.begin().await?;
            let r: mongodb::error::Result<_> = async { $body }.await;
            let r = match r {
                Ok(Some(v)) => $crate::storage::meta::txn::commit(&mut $s)
                    .await
                    .map(|()| Some(v)),
                Ok(None) => {
                    let _ = $s.abort_transaction().await;
                    Ok(None)
                }
                Err(e) => {
                    let _ = $s.abort_transaction().await;
                    Err(e)
                }
            };
            match r {
                Err(e) if $crate::storage::meta::txn::transient(&e) && attempt < 100 => {
                    tokio::time::sleep(std::time::Duration::from_millis(attempt.min(20) * 5)).await;
                }
                other => break other,
            }
        }
    }};
}
pub(crate) use with_transaction;
