//! Bounded range reads: a key range read as a run of queries, each bounded on both sides, so
//! that a page costs about the keys it returns on any backend.
//!
//! Why: a MongoDB-compatible server may read the whole rest of a range before it applies a
//! limit (the local SecantusDB does: a first page of `filename > m` sorted, limit 1,000, over
//! 300,000 keys took 11.1 s, the same page with an upper bound 2,000 keys ahead 134 ms). mongod
//! seeks its index either way, and pays for the bounds only a query or two per page.
//!
//! The upper bound of each query comes, in order of trust, from a guess the caller makes (the
//! next common prefix of a delimiter listing), for the first query from the fence posts this
//! instance has seen or taken from the database ([`posts`]), or from a width of key space that
//! widens geometrically while ranges come back short ([`width`]). The ranges tile the key space from the lower bound up, so every key is
//! read exactly once whatever the bounds are: they decide speed, never results.
//!
//! What this cannot bound: the first range that reaches a dense run of keys after a long empty
//! stretch holds however many of them lie within its width (the width grew over the empty
//! stretch). Posts avoid it for a listing's first range: those learned by earlier listings
//! on this instance, and those writes and listings recorded in the database.

pub mod posts;
pub mod width;

use futures::TryStreamExt;
use mongodb::bson::Document;
use mongodb::Collection;

pub use posts::Posts;
pub use width::Width;

/// Above every S3 key (at most 1,024 bytes): the upper bound of a range that would otherwise
/// be open. A GridFS filename longer than 1 KiB made of U+10FFFF alone is not listed.
pub fn top() -> String {
    "\u{10FFFF}".repeat(257)
}

/// Documents of one key read when a key alone fills a page (see [`Ranger::next`]).
const MAX_PER_KEY: i64 = 10_000;

/// Rows beyond the ones asked for, so that a key's several documents (revisions, uploads)
/// rarely straddle a query's limit.
const MARGIN: usize = 8;

/// A key range read in bounded queries, in the order of one field.
pub struct Ranger<'p> {
    coll: Collection<Document>,
    field: &'static str,
    /// Conditions besides the range (equalities the index leads with).
    filter: Document,
    /// The order: the field first.
    sort: Document,
    /// The order of one key's documents, when a key alone is read.
    within: Document,
    lower: String,
    inclusive: bool,
    /// Where the run of contiguous ranges read whole that ends at `lower` began.
    from: String,
    end: String,
    width: Width,
    /// The width of the last range that held a page.
    page_width: Option<Width>,
    /// Empty ranges in a row.
    empties: u32,
    /// Empty ranges in a row that posts bounded (posts of keys deleted since).
    post_empties: u32,
    /// The width, with posts only capping it, bounds the next range: the read starts, jumped
    /// (a common prefix passed over, or a guess of the next one), or its last range was cut
    /// at the limit (the width just measured on a page follows the keys, where the gap to the
    /// next post may hold far more than a post's worth: a client can name keys none of which
    /// is a post), and no range was read whole with keys since. Otherwise posts alone bound
    /// the rest of a page.
    width_leads: bool,
    guess: Option<String>,
    posts: &'p Posts,
    space: String,
    /// What the reads taught the posts (bounded: a read learns about one post per
    /// [`posts::SPACING`] keys it returns).
    learned: posts::Learned,
    /// No query was sent yet.
    first: bool,
    done: bool,
}

impl<'p> Ranger<'p> {
    /// A read of `field` in `coll` from `lower` (inclusive or not) below `end` (`None`: the
    /// top of the key space), with `posts` of key space `space`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        coll: Collection<Document>,
        field: &'static str,
        filter: Document,
        sort: Document,
        within: Document,
        lower: (String, bool),
        end: Option<String>,
        posts: &'p Posts,
        space: String,
    ) -> Self {
        let width = posts
            .width(&space)
            .unwrap_or_else(|| Width::first_guess(&lower.0));
        let end = end.unwrap_or_else(top);
        let done = lower.0 >= end;
        Ranger {
            coll,
            field,
            filter,
            sort,
            within,
            from: lower.0.clone(),
            lower: lower.0,
            inclusive: lower.1,
            end,
            width,
            page_width: None,
            empties: 0,
            post_empties: 0,
            width_leads: true,
            guess: None,
            posts,
            space,
            learned: posts::Learned::default(),
            first: true,
            done,
        }
    }

    fn keep(&mut self, l: posts::Learned) {
        self.learned.new.extend(l.new);
        self.learned.gone.extend(l.gone);
    }

    /// What the reads so far taught the posts, taken (for their copy in the database).
    pub fn take_learned(&mut self) -> posts::Learned {
        std::mem::take(&mut self.learned)
    }

    /// The range is read to its end.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Continues from `to` (inclusive) if that is past where the read is (a common prefix
    /// passed over).
    ///
    /// What follows is unknown ground: the width starts small again.
    pub fn skip_to(&mut self, to: String) {
        // Even within ground already read: the caller may want only the next key.
        self.width_leads = true;
        if to > self.lower {
            self.width = Width::first_guess(&to);
            self.empties = 0;
            self.post_empties = 0;
            self.guess = None;
            self.from = to.clone();
            self.lower = to;
            self.inclusive = true;
            if self.lower >= self.end {
                self.done = true;
            }
        }
    }

    /// The next query ends just past `key` (a guess of where the next keys are); ignored when
    /// the read is past it.
    pub fn guess(&mut self, key: String) {
        self.width_leads = true;
        if key > self.lower {
            self.guess = Some(key);
        }
    }

    fn value<'d>(&self, d: &'d Document) -> &'d str {
        d.get_str(self.field).unwrap_or_default()
    }

    /// The next documents in order (at most about `want` keys' worth), all of every key it
    /// holds; empty only when the range is read to its end.
    pub async fn next(&mut self, want: usize) -> mongodb::error::Result<Vec<Document>> {
        let want = want.max(1);
        loop {
            if self.done {
                return Ok(Vec::new());
            }
            // The bound, and whether posts set it.
            let planned: Option<(String, bool)> =
                match self.guess.take().filter(|g| *g > self.lower) {
                    Some(g) => {
                        // Past the guess, the keys (if it was right) are dense: start small.
                        self.width = Width::first_guess(&g);
                        Some((format!("{g}\u{1}"), false))
                    }
                    None => {
                        // Twice as many posts after each empty range posts bounded, up to eight
                        // times: posts of keys deleted since are crossed in a few queries, not one
                        // per post or two, and where posts are known no range holds more than
                        // about eight pages, however far the width has widened. (Empty ranges the
                        // width bounded say nothing of the posts: doubling after them made the
                        // tail of a page read eight posts, about 1,000 keys, for the last few.)
                        let n = want_posts(want) << self.post_empties.min(3);
                        let by_posts = self
                            .posts
                            .bound(&self.space, &self.lower, n)
                            .map(|(b, _)| b);
                        let by_width = self.width.upper(&self.lower);
                        // The first range's width is a guess: posts, where known, say better
                        // (a cold start in front of a dense run would otherwise read all of
                        // it). After it, within a run of keys, posts bound the rest of a page
                        // closer than the width does on keys whose characters fill little of
                        // the alphabet (decimal numbers: the width measured on 927 keys sent a
                        // page's last 74 in 25 queries; posts in 2, a 1,000-key page 1.45x ->
                        // 1.19x a raw find). Where the width leads (see `width_leads`: after a
                        // jump, where the caller may want the first key only, or after a range
                        // cut at the limit) posts only cap it: posts alone read a folder's
                        // worth of keys per next-folder guess that fell short (0.17 s -> 2.7 s
                        // for a root listing of 100 folders), and bound every range of a gap
                        // without posts by the same far post.
                        let posts_lead = self.first || !self.width_leads;
                        match (by_width, by_posts) {
                            (_, Some(p)) if posts_lead => Some((p, true)),
                            (Some(w), Some(p)) if p < w => Some((p, true)),
                            (Some(w), _) => Some((w, false)),
                            (None, p) => p.map(|p| (p, true)),
                        }
                    }
                };
            let by_posts = planned.as_ref().is_some_and(|(_, p)| *p);
            let planned = planned.map(|(u, _)| u);
            self.first = false;
            let upper = match planned {
                Some(u) if u < self.end => u,
                _ => self.end.clone(),
            };
            let limit = want + MARGIN;
            let mut range = Document::new();
            range.insert(if self.inclusive { "$gte" } else { "$gt" }, &self.lower);
            range.insert("$lt", &upper);
            let mut filter = self.filter.clone();
            filter.insert(self.field, range);
            let docs: Vec<Document> = self
                .coll
                .find(filter)
                .sort(self.sort.clone())
                .limit(limit as i64)
                .batch_size(limit.min(2000) as u32)
                .await?
                .try_collect()
                .await?;
            tracing::trace!(lower = %self.lower, upper = %upper, n = docs.len(), "range read");
            let cut = docs.len() >= limit;
            // A document whose field is not a string (another GridFS writer's) is no key.
            let docs: Vec<Document> = docs
                .into_iter()
                .filter(|d| d.get_str(self.field).is_ok())
                .collect();
            if !cut || docs.is_empty() {
                // The range is read whole.
                let learned = self.posts.learn(
                    &self.space,
                    &self.from,
                    &self.lower,
                    Some(&upper),
                    docs.iter().map(|d| self.value(d)),
                );
                self.keep(learned);
                self.adapt(&docs, want, by_posts);
                if !docs.is_empty() {
                    self.width_leads = false;
                }
                self.post_empties = match (docs.is_empty(), by_posts && upper < self.end) {
                    (true, true) => self.post_empties + 1,
                    (true, false) => self.post_empties,
                    (false, _) => 0,
                };
                self.done = upper >= self.end;
                self.lower = upper;
                self.inclusive = true;
                if docs.is_empty() {
                    continue;
                }
                return Ok(docs);
            }
            // Cut at the limit: the last key's documents are read again by the next query,
            // all together (a key is never split across two answers).
            let last = self.value(docs.last().expect("non-empty")).to_owned();
            let first = self.value(&docs[0]).to_owned();
            // Every key below the last one was read.
            let learned = self.posts.learn(
                &self.space,
                &self.from,
                &self.lower,
                Some(&last),
                docs.iter()
                    .map(|d| self.value(d))
                    .take_while(|v| *v != last.as_str()),
            );
            self.keep(learned);
            self.post_empties = 0;
            self.width_leads = true;
            // What held a page is the width for the next (and the next read's first guess).
            if let Some(w) = Width::between(&first, &last) {
                self.width = w;
                self.page_width = Some(w);
            }
            if first == last {
                // One key holds more documents than the limit: read it alone, at most
                // `MAX_PER_KEY` of them in the key's own order (newest first for revisions),
                // so that no client can make one answer hold everything.
                let mut filter = self.filter.clone();
                filter.insert(self.field, &last);
                let all: Vec<Document> = self
                    .coll
                    .find(filter)
                    .sort(self.within.clone())
                    .limit(MAX_PER_KEY)
                    .await?
                    .try_collect()
                    .await?;
                if all.len() as i64 >= MAX_PER_KEY {
                    tracing::warn!(key = %last, "more than {MAX_PER_KEY} documents under one key: the first are listed");
                }
                self.lower = last;
                self.inclusive = false;
                return Ok(all);
            }
            let mut docs = docs;
            while docs.last().is_some_and(|d| self.value(d) == last) {
                docs.pop();
            }
            self.lower = last;
            self.inclusive = true;
            return Ok(docs);
        }
    }

    /// A range read whole held `docs` when `want` were wanted: the next range's width.
    ///
    /// An empty range widens the next two, four, then eight times (a range that reaches dense
    /// keys after an empty stretch holds a bounded multiple of the stretch's width of them),
    /// and after ten empty ranges by whole digits. Keys measure the density where they are, and the next width
    /// follows it within a factor of eight; a lone key after an empty stretch starts small again, since the keys
    /// after it may be dense.
    fn adapt(&mut self, docs: &[Document], want: usize, by_posts: bool) {
        let n = docs.len();
        let w = self.width;
        if n == 0 && by_posts {
            // Posts of keys deleted since say nothing of the keys' density: the posts double
            // instead (see `post_empties`), and the width stays.
            return;
        }
        if n == 0 {
            // Twice, four times, then eight times as wide: a stretch one gap long is crossed
            // with a range at most about twice as wide as needed.
            // Two, four, then eight times (six times); then a whole digit, two, four...: a deep
            // lower bound with nothing near it (a long start-after) is left in a few queries,
            // not one per character.
            self.empties += 1;
            let f = match self.empties {
                e @ 1..=3 => 2f64.powi(e as i32),
                4..=9 => 8.0,
                e => (width::BASE as f64).powi(1 << (e - 10).min(5)),
            };
            self.width = w.scaled(f).unwrap_or_else(Width::widest);
            return;
        }
        self.empties = 0;
        let (first, last) = (self.value(&docs[0]), self.value(&docs[n - 1]));
        let still = want.saturating_sub(n).max(1);
        self.width = match Width::between(first, last) {
            Some(held) if n >= 2 => {
                let est = held.scaled(1.25 * still as f64 / (n - 1) as f64);
                let (lo, hi) = (w.scaled(0.125), w.scaled(8.0));
                match est {
                    Some(e) if lo.is_some_and(|lo| e.narrower(&lo)) => lo.unwrap_or(e),
                    Some(e) if hi.is_none_or(|hi| !e.narrower(&hi)) => {
                        hi.unwrap_or_else(Width::widest)
                    }
                    Some(e) => e,
                    None => hi.unwrap_or_else(Width::widest),
                }
            }
            _ => Width::first_guess(last),
        };
    }

    /// Keeps this read's width as the first guess of the next read of the same key space.
    pub fn finish(&self) {
        if let Some(w) = self.page_width {
            self.posts.set_width(&self.space, w);
        }
    }
}

/// Posts a query of `want` keys should end at: about three quarters of the way there.
///
/// Why short of it: a server that reads a range whole before it applies the limit (the local
/// database does) pays for every key inside the bound, and posts (one key in about
/// [`posts::SPACING`], by hash) vary in their spacing. A bound of `want / SPACING + 1` posts
/// read 1,645 keys for a page of 1,000 in one run (1.46x a raw find of the page); a bound
/// short of the page is followed by a smaller one for the rest, and each query costs about a
/// millisecond, the keys read past a page about 40 µs each.
fn want_posts(want: usize) -> usize {
    ((want as u64 * 3 / 4) / posts::SPACING).max(1) as usize
}
