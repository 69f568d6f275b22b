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
    /// A single sign-on session's: the session token of its temporary credentials (sealed
    /// at rest like a secret), which the console's presigned URLs must carry.
    pub sso: Option<SsoSession>,
}

/// What a session made by single sign-on holds beyond its key.
#[derive(Clone, PartialEq)]
pub struct SsoSession {
    /// The session token of the temporary credentials (`access_key`).
    pub token: String,
    /// Who signed in, as shown: the assumed-role session's ARN.
    pub arn: String,
    /// When the credentials expire (links the session presigns end by then).
    pub expires: DateTime,
}

impl std::fmt::Debug for SsoSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SsoSession")
            .field("arn", &self.arn)
            .finish_non_exhaustive()
    }
}

impl ConsoleSession {
    fn to_document(&self, expires: DateTime, sealed_token: Option<String>) -> Document {
        let mut d = doc! {
            "_id": &self.id,
            "key": &self.access_key,
            "csrf": &self.csrf,
            "created": self.created,
            "seen": self.seen,
            "expires": expires,
        };
        if let (Some(sso), Some(t)) = (&self.sso, sealed_token) {
            d.insert(
                "sso",
                doc! {"token": t, "arn": &sso.arn, "expires": sso.expires},
            );
        }
        d
    }

    fn from_document(d: &Document) -> Option<Self> {
        Some(Self {
            id: d.get_str("_id").ok()?.to_owned(),
            access_key: d.get_str("key").ok()?.to_owned(),
            csrf: d.get_str("csrf").ok()?.to_owned(),
            created: *d.get_datetime("created").ok()?,
            seen: *d.get_datetime("seen").ok()?,
            // Still sealed: [`MetaStore::session`] opens it.
            sso: match d.get_document("sso") {
                Ok(s) => Some(SsoSession {
                    token: s.get_str("token").ok()?.to_owned(),
                    arn: s.get_str("arn").ok()?.to_owned(),
                    // A session stored without it ends with its session.
                    expires: s
                        .get_datetime("expires")
                        .or_else(|_| d.get_datetime("expires"))
                        .copied()
                        .ok()?,
                }),
                Err(_) => None,
            },
        })
    }
}

impl MetaStore {
    fn sessions(&self) -> mongodb::Collection<Document> {
        self.db.collection("__consoleSessions")
    }

    fn sso_states(&self) -> mongodb::Collection<Document> {
        self.db.collection("__consoleSsoStates")
    }

    /// Spends a single sign-on's `state` (its SHA-256, hex), kept until `until`: `false` when
    /// it was spent before (a replayed callback), on any instance.
    pub async fn sso_state_spend(
        &self,
        state_sha256: &str,
        until: DateTime,
    ) -> mongodb::error::Result<bool> {
        self.sso_states()
            .delete_many(doc! {"until": {"$lt": self.clock.now()}})
            .await?;
        match self
            .sso_states()
            .insert_one(doc! {"_id": state_sha256, "until": until})
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if super::is_duplicate_key(&e) => Ok(false),
            Err(e) => Err(e),
        }
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
        let sealed = s.sso.as_ref().map(|x| self.seal(&x.token));
        self.sessions()
            .insert_one(s.to_document(expires, sealed))
            .await?;
        Ok(())
    }

    /// A session by id (`None` when there is none: never begun, logged out, or removed).
    pub async fn session(&self, id: &str) -> mongodb::error::Result<Option<ConsoleSession>> {
        let Some(mut s) = self
            .sessions()
            .find_one(doc! {"_id": id})
            .await?
            .as_ref()
            .and_then(ConsoleSession::from_document)
        else {
            return Ok(None);
        };
        if let Some(sso) = s.sso.as_mut() {
            // A token sealed under a master key no longer held is a session that cannot act.
            match self.unseal(&sso.token) {
                Ok(t) => sso.token = t,
                Err(_) => return Ok(None),
            }
        }
        Ok(Some(s))
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

    /// Single sign-on sessions idle since before `idle_before` or begun before
    /// `created_before` (ended sessions whose credentials must end too, though nobody comes
    /// back to find them ended), at most `limit`.
    pub async fn lapsed_sso_sessions(
        &self,
        idle_before: DateTime,
        created_before: DateTime,
        limit: i64,
    ) -> mongodb::error::Result<Vec<ConsoleSession>> {
        use futures::TryStreamExt;
        let docs: Vec<Document> = self
            .sessions()
            .find(doc! {
                "sso": {"$exists": true},
                "$or": [{"seen": {"$lt": idle_before}}, {"created": {"$lt": created_before}}],
            })
            .limit(limit)
            .await?
            .try_collect()
            .await?;
        let mut out = Vec::new();
        for d in &docs {
            if let Some(mut s) = ConsoleSession::from_document(d) {
                if let Some(sso) = s.sso.as_mut() {
                    match self.unseal(&sso.token) {
                        Ok(t) => sso.token = t,
                        Err(_) => continue,
                    }
                }
                out.push(s);
            }
        }
        Ok(out)
    }

    /// Ends single sign-on sessions that lapsed (`idle` without a request, or `absolute`
    /// after sign-in) and their temporary credentials, so that links they presigned stop
    /// working even if nobody comes back to the console (the janitor's sweep). Each end is
    /// conditional on the session as read; returns how many ended.
    pub async fn end_lapsed_sso_sessions(
        &self,
        idle: std::time::Duration,
        absolute: std::time::Duration,
    ) -> mongodb::error::Result<usize> {
        let now = self.clock.now().timestamp_millis();
        let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let lapsed = self
            .lapsed_sso_sessions(
                DateTime::from_millis(now.saturating_sub(ms(idle))),
                DateTime::from_millis(now.saturating_sub(ms(absolute))),
                100,
            )
            .await?;
        let mut ended = 0;
        for s in lapsed {
            crate::failpoint::hit("console.lapsed_read", &s.id).await;
            if self.session_end_if(&s.id, s.seen).await? {
                if let Some(sso) = &s.sso {
                    self.end_session_key(&s.access_key, &sso.token).await?;
                }
                ended += 1;
            }
        }
        Ok(ended)
    }

    /// Ends a session (logout: whatever its state, the user asked).
    pub async fn session_end(&self, id: &str) -> mongodb::error::Result<()> {
        self.sessions().delete_one(doc! {"_id": id}).await?;
        Ok(())
    }

    /// Ends a session found expired (or whose key is gone) as it was read: only if its last
    /// request is still `seen` (compare and set), so a request another instance recorded in
    /// between, which found it live, is not undone. `false` when it had changed.
    pub async fn session_end_if(&self, id: &str, seen: DateTime) -> mongodb::error::Result<bool> {
        Ok(self
            .sessions()
            .delete_one(doc! {"_id": id, "seen": seen})
            .await?
            .deleted_count
            == 1)
    }

    /// Takes one of `max` failed-login slots of `who` (a client address) in the window that
    /// began at `since`, before the secret is checked: `false` when all are taken (the login
    /// is throttled). One conditional write, so logins at once cannot overrun the limit; a
    /// login that succeeds gives its slot back ([`MetaStore::login_release`]).
    pub async fn login_reserve(
        &self,
        who: &str,
        since: DateTime,
        max: i64,
    ) -> mongodb::error::Result<bool> {
        // Windows that ended are forgotten (indexed on `since`), whoever they were of.
        self.logins()
            .delete_many(doc! {"since": {"$lt": since}})
            .await?;
        // The window's document first (a second creator meets the first's id: fine), then
        // the slot, taken only while one is free: concurrent logins never overrun the limit,
        // and none is refused while a slot is free.
        let created = self
            .logins()
            .update_one(
                doc! {"_id": who},
                doc! {"$setOnInsert": {"since": self.clock.now(), "failures": 0_i64}},
            )
            .upsert(true)
            .await;
        match created {
            Err(e) if !super::is_duplicate_key(&e) => return Err(e),
            _ => {}
        }
        Ok(self
            .logins()
            .update_one(
                doc! {"_id": who, "failures": {"$lt": max}},
                doc! {"$inc": {"failures": 1_i64}},
            )
            .await?
            .matched_count
            == 1)
    }

    /// Gives back a slot [`MetaStore::login_reserve`] took (the login succeeded).
    pub async fn login_release(&self, who: &str) -> mongodb::error::Result<()> {
        self.logins()
            .update_one(
                doc! {"_id": who, "failures": {"$gt": 0_i64}},
                doc! {"$inc": {"failures": -1_i64}},
            )
            .await?;
        Ok(())
    }
}
