//! Console sessions (`__consoleSessions`) and login throttling (`__consoleLogins`): kept in the
//! database, so that any instance behind a load balancer serves any session, and a logout or
//! a throttle on one instance holds on all. Times are the database's ([`super::DbClock`]).

use mongodb::bson::{doc, DateTime, Document};

use super::MetaStore;

/// A console session: who is signed in, and since when.
#[derive(Clone, Debug, PartialEq)]
pub struct ConsoleSession {
    /// The session id (random, 256 bits, hex): what the cookie carries, signed.
    pub id: String,
    /// The access key signed in.
    pub access_key: String,
    /// The token every state-changing request must carry (CSRF).
    pub csrf: String,
    /// When the session began (the absolute expiry counts from here).
    pub created: DateTime,
    /// The last request seen (the idle expiry counts from here).
    pub seen: DateTime,
}

impl ConsoleSession {
    fn to_document(&self, expires: DateTime) -> Document {
        doc! {
            "_id": &self.id,
            "key": &self.access_key,
            "csrf": &self.csrf,
            "created": self.created,
            "seen": self.seen,
            "expires": expires,
        }
    }

    fn from_document(d: &Document) -> Option<Self> {
        Some(Self {
            id: d.get_str("_id").ok()?.to_owned(),
            access_key: d.get_str("key").ok()?.to_owned(),
            csrf: d.get_str("csrf").ok()?.to_owned(),
            created: *d.get_datetime("created").ok()?,
            seen: *d.get_datetime("seen").ok()?,
        })
    }
}

impl MetaStore {
    fn sessions(&self) -> mongodb::Collection<Document> {
        self.db.collection("__consoleSessions")
    }

    fn logins(&self) -> mongodb::Collection<Document> {
        self.db.collection("__consoleLogins")
    }

    /// Stores a new session, which the database forgets after `expires` (ended sessions are
    /// removed as new ones begin).
    pub async fn session_create(
        &self,
        s: &ConsoleSession,
        expires: DateTime,
    ) -> mongodb::error::Result<()> {
        self.sessions()
            .delete_many(doc! {"expires": {"$lt": self.clock.now()}})
            .await?;
        self.sessions().insert_one(s.to_document(expires)).await?;
        Ok(())
    }

    /// A session by id (`None` when there is none: never begun, logged out, or removed).
    pub async fn session(&self, id: &str) -> mongodb::error::Result<Option<ConsoleSession>> {
        Ok(self
            .sessions()
            .find_one(doc! {"_id": id})
            .await?
            .as_ref()
            .and_then(ConsoleSession::from_document))
    }

    /// Records a request of the session at `now`, if its last one is still `seen` (compare
    /// and set: two requests at once record one of them, and a logout in between wins).
    pub async fn session_seen(
        &self,
        id: &str,
        seen: DateTime,
        now: DateTime,
    ) -> mongodb::error::Result<bool> {
        Ok(self
            .sessions()
            .update_one(doc! {"_id": id, "seen": seen}, doc! {"$set": {"seen": now}})
            .await?
            .matched_count
            == 1)
    }

    /// Ends a session (logout, or one found expired).
    pub async fn session_end(&self, id: &str) -> mongodb::error::Result<()> {
        self.sessions().delete_one(doc! {"_id": id}).await?;
        Ok(())
    }

    /// Failed logins of `who` (a client address or an access key) since `since`.
    pub async fn login_failures(&self, who: &str, since: DateTime) -> mongodb::error::Result<i64> {
        let d = self
            .logins()
            .find_one(doc! {"_id": who, "since": {"$gte": since}})
            .await?;
        Ok(d.and_then(|d| d.get_i64("failures").ok()).unwrap_or(0))
    }

    /// Counts a failed login of `who`: a window that began before `since` starts again.
    pub async fn login_failed(&self, who: &str, since: DateTime) -> mongodb::error::Result<()> {
        let now = self.clock.now();
        // Two steps, each one conditional write: restart a stale window, then count.
        self.logins()
            .update_one(
                doc! {"_id": who, "since": {"$lt": since}},
                doc! {"$set": {"since": now, "failures": 0_i64}},
            )
            .await?;
        self.logins()
            .update_one(
                doc! {"_id": who},
                doc! {"$inc": {"failures": 1_i64}, "$setOnInsert": {"since": now}},
            )
            .upsert(true)
            .await?;
        Ok(())
    }
}
