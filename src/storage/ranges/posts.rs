//! Fence posts: a sample of the keys this instance has seen in each key space (about one in
//! [`SPACING`], chosen by a hash of the key, so every reader samples the same keys), and the
//! width of the last range that held a page. A range query that ends a few posts ahead holds
//! about as many keys as it asks for.
//!
//! Posts are hints, never answers: a range is read whole whatever its bound, so a stale post
//! (its key deleted since) or a missing one (keys written through another instance) costs a
//! query, never a key. Posts inside a range read in full that the range did not hold are
//! dropped, so the sample mends itself as listings pass.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound::{Excluded, Included, Unbounded};
use std::sync::Mutex;

use super::width::Width;

/// One key in about this many is a post.
pub const SPACING: u64 = 128;

/// Key spaces remembered (each bucket has up to three: files, masters, versions, uploads).
const MAX_SPACES: usize = 4096;

/// Bytes of posts kept over all key spaces (a million keys of 40 bytes need about 330 KB;
/// keys of up to 1 KiB, chosen by a client, must not pin more than this).
const MAX_POST_BYTES: usize = 8 << 20;

/// Bytes of posts one space takes from the database at most (a quarter of the cap).
pub const MAX_SEED_BYTES: usize = MAX_POST_BYTES / 4;

/// How long posts taken from the database are trusted before they are taken again.
pub const SEED_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// What a read taught: posts new to this instance, and posts whose key is gone.
#[derive(Debug, Default)]
pub struct Learned {
    /// Sampled keys seen that were not posts here.
    pub new: Vec<String>,
    /// Posts inside a range read whole that did not hold them.
    pub gone: Vec<String>,
}

/// Whether `key` is a post.
pub fn is_post(key: &str) -> bool {
    // FNV-1a: stable across instances and releases, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h.is_multiple_of(SPACING)
}

/// The posts of one key space. Each post says whether the keys from it up to the next post
/// were all read by one run of contiguous ranges (its gap is known); only known gaps are
/// trusted to hold about [`SPACING`] keys. The empty string stands for the start of the space.
#[derive(Default)]
struct Space {
    posts: BTreeMap<String, bool>,
    /// What `posts` holds, about, in bytes.
    bytes: usize,
    width: Option<Width>,
    used: u64,
}

/// A post's share of memory: its key and the map's node.
fn cost(k: &str) -> usize {
    k.len() + 48
}

impl Space {
    /// Adds `k` (gap unknown); whether it is new.
    fn add(&mut self, k: &str) -> bool {
        if self.posts.contains_key(k) {
            return false;
        }
        self.posts.insert(k.to_owned(), false);
        self.bytes += cost(k);
        true
    }

    fn remove(&mut self, k: &str) {
        if self.posts.remove(k).is_some() {
            self.bytes -= cost(k);
        }
    }
}

/// The posts and widths of every key space this instance has listed.
#[derive(Default)]
pub struct Posts {
    inner: Mutex<(HashMap<String, Space>, u64)>,
    /// When each space last took the posts stored in the database (kept apart from the
    /// spaces, which the memory cap may drop, so that a dropped space is not taken again
    /// before [`SEED_AGE`]).
    seeds: Mutex<HashMap<String, std::time::Instant>>,
}

impl std::fmt::Debug for Posts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Posts")
    }
}

impl Posts {
    /// An upper bound about `n` posts past `lower`, through known gaps only: the last post
    /// reached and a character more, with how many posts it passes. `None` when the gap
    /// `lower` lies in is not known.
    pub fn bound(&self, space: &str, lower: &str, n: usize) -> Option<(String, usize)> {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (spaces, clock) = &mut *g;
        *clock += 1;
        let s = spaces.get_mut(space)?;
        s.used = *clock;
        let (_, known) = s
            .posts
            .range::<str, _>((Unbounded, Included(lower)))
            .next_back()?;
        if !*known {
            return None;
        }
        let mut passed = 0;
        let mut last = None;
        for (p, known) in s.posts.range::<str, _>((Excluded(lower), Unbounded)) {
            passed += 1;
            last = Some(p);
            if passed >= n.max(1) || !*known {
                break;
            }
        }
        last.map(|p| (format!("{p}\u{1}"), passed))
    }

    /// The width last used in `space`.
    pub fn width(&self, space: &str) -> Option<Width> {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.0.get(space).and_then(|s| s.width)
    }

    /// Remembers the width of a range that held about a page.
    pub fn set_width(&self, space: &str, w: Width) {
        self.with_space(space, |s| s.width = Some(w));
    }

    /// What a read says: every key from `from` (where a run of contiguous ranges read whole
    /// began) up to `upper` (exclusive; `None`: the end) was read, and `seen` (in order) are
    /// the keys of its last range, from `lower`. Posts in that range not among them are gone;
    /// gaps wholly inside the run are known.
    ///
    /// Returns what changed: posts new to this instance, and posts found gone (for the copy
    /// in the database, see `storage::meta::posts`).
    pub fn learn<'k>(
        &self,
        space: &str,
        from: &str,
        lower: &str,
        upper: Option<&str>,
        seen: impl Iterator<Item = &'k str>,
    ) -> Learned {
        let sampled: Vec<&str> = seen.filter(|k| is_post(k)).collect();
        let below = |p: &str| upper.is_none_or(|u| p < u);
        let mut learned = Learned::default();
        self.with_space(space, |s| {
            let stale: Vec<String> = s
                .posts
                .range::<str, _>((Included(lower), Unbounded))
                .map(|(p, _)| p)
                .take_while(|p| below(p))
                .filter(|p| !p.is_empty() && !sampled.contains(&p.as_str()))
                .cloned()
                .collect();
            for p in stale {
                s.remove(&p);
                learned.gone.push(p);
            }
            for k in &sampled {
                if s.add(k) {
                    learned.new.push((*k).to_owned());
                }
            }
            if from.is_empty() {
                s.add("");
            }
            // A post whose next post is inside the run has a known gap; the last post of the
            // run, and one whose gap runs past `upper`, do not.
            // (Posts of the run before the last one below `lower` were settled by the run's
            // earlier ranges: only the rest is looked at, so a long run costs linear time.)
            let start = s
                .posts
                .range::<str, _>((Included(from), Excluded(lower)))
                .next_back()
                .map_or(from, |(p, _)| p.as_str())
                .to_owned();
            let run: Vec<String> = s
                .posts
                .range::<str, _>((Included(start.as_str()), Unbounded))
                .map(|(p, _)| p.clone())
                .take_while(|p| below(p))
                .collect();
            let next_of_last = run.last().and_then(|l| {
                s.posts
                    .range::<str, _>((Excluded(l.as_str()), Unbounded))
                    .next()
                    .map(|(p, _)| p.clone())
            });
            for (i, p) in run.iter().enumerate() {
                let next = run.get(i + 1).or(next_of_last.as_ref());
                let known = match next {
                    Some(n) => below(n),
                    // The last post of the space, read to the end.
                    None => upper.is_none(),
                };
                // Never from known to unknown: a gap known whole (or taken from the database)
                // stays known when a later read only reaches into it. (Downgrading made a
                // 1M-key cold listing drop the posts past each folder and widen over the rest
                // of the bucket.)
                if let Some(v) = s.posts.get_mut(p) {
                    *v = *v || known;
                }
            }
        });
        learned
    }

    /// Whether `space` should take the posts stored in the database now: never taken, or
    /// taken longer ago than [`SEED_AGE`] (others' writes have added posts since). A `true`
    /// claims it: listings that start meanwhile do not read them too.
    pub fn claim_seed(&self, space: &str) -> bool {
        let mut seeds = self.seeds.lock().unwrap_or_else(|e| e.into_inner());
        if seeds.get(space).is_some_and(|at| at.elapsed() <= SEED_AGE) {
            return false;
        }
        if seeds.len() >= MAX_SPACES {
            seeds.retain(|_, at| at.elapsed() <= SEED_AGE);
            if seeds.len() >= MAX_SPACES {
                return false;
            }
        }
        seeds.insert(space.to_owned(), std::time::Instant::now());
        true
    }

    /// Adds posts stored in the database (`keys`, every post of the space that writes and
    /// listings recorded). Their gaps count as known: a post is one key in [`SPACING`] by
    /// hash, so a gap holds about that many keys unless keys were written where no post was
    /// recorded (an older grids3, another GridFS writer); a range over such a gap is cut at
    /// its limit like any other, and the listing records the posts it finds there.
    pub fn seed(&self, space: &str, keys: Vec<String>) {
        self.with_space(space, |s| {
            s.add("");
            for k in keys.iter().filter(|k| is_post(k)) {
                s.add(k);
            }
            for v in s.posts.values_mut() {
                *v = true;
            }
        });
    }

    fn with_space(&self, space: &str, f: impl FnOnce(&mut Space)) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (spaces, clock) = &mut *g;
        *clock += 1;
        let now = *clock;
        let s = spaces.entry(space.to_owned()).or_default();
        s.used = now;
        f(s);
        // Over the cap, the spaces least recently used go first.
        while spaces.values().map(|s| s.bytes).sum::<usize>() > MAX_POST_BYTES
            || spaces.len() > MAX_SPACES
        {
            let Some(oldest) = spaces
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if spaces.len() == 1 && spaces.values().map(|s| s.bytes).sum::<usize>() > MAX_POST_BYTES
            {
                // One space over the cap keeps every other post.
                let s = spaces.get_mut(&oldest).expect("present");
                // (Every other gap becomes unknown: a post's next one is dropped.)
                let keep: BTreeMap<String, bool> = s
                    .posts
                    .iter()
                    .step_by(2)
                    .map(|(p, _)| (p.clone(), false))
                    .collect();
                s.bytes = keep.keys().map(|k| cost(k)).sum();
                s.posts = keep;
            } else {
                spaces.remove(&oldest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posts_bound_ranges_through_known_gaps_only() {
        let p = Posts::default();
        let keys: Vec<String> = (0..20_000).map(|i| format!("key-{i:06}")).collect();
        // Nothing known yet.
        assert!(p.bound("s", "", 8).is_none());
        p.learn("s", "", "", None, keys.iter().map(String::as_str));
        let n = keys.iter().filter(|k| is_post(k)).count();
        // About one in SPACING.
        assert!((60..=260).contains(&n), "{n} posts");
        let (b, passed) = p.bound("s", "key-001000", 8).unwrap();
        assert_eq!(passed, 8);
        let held = keys
            .iter()
            .filter(|k| k.as_str() > "key-001000" && k.as_str() < b.as_str())
            .count();
        assert!((300..=3000).contains(&held), "{held} keys under 8 posts");
        // From the start of the space too.
        assert!(p.bound("s", "", 8).is_some());
        // A range read whole without its posts drops them.
        p.learn(
            "s",
            "key-001000",
            "key-001000",
            Some(&b),
            std::iter::empty(),
        );
        let (b2, _) = p.bound("s", "key-001000", 1).unwrap();
        assert!(b2 >= b);
        assert!(p.bound("other", "", 1).is_none());
    }

    #[test]
    fn long_keys_pin_a_bounded_amount_of_memory() {
        let p = Posts::default();
        let long = "x".repeat(1000);
        for round in 0..40 {
            let keys: Vec<String> = (0..20_000)
                .map(|i| format!("{long}{round:03}{i:06}"))
                .collect();
            p.learn(
                &format!("s{}", round % 3),
                "",
                "",
                None,
                keys.iter().map(String::as_str),
            );
        }
        let g = p.inner.lock().unwrap();
        let total: usize = g.0.values().map(|s| s.bytes).sum();
        let counted: usize =
            g.0.values()
                .flat_map(|s| s.posts.keys())
                .map(|k| cost(k))
                .sum();
        assert_eq!(total, counted);
        assert!(total <= MAX_POST_BYTES, "{total} bytes of posts");
    }

    #[test]
    fn scattered_posts_are_not_trusted() {
        let p = Posts::default();
        // Keys seen here and there (one range each, not contiguous): no gap between them is
        // known, so they bound nothing.
        let keys: Vec<String> = (0..20_000).map(|i| format!("key-{i:06}")).collect();
        let posts: Vec<&String> = keys.iter().filter(|k| is_post(k)).collect();
        for k in &posts {
            p.learn(
                "s",
                k,
                k,
                Some(&format!("{k}\u{1}")),
                std::iter::once(k.as_str()),
            );
        }
        assert!(p.bound("s", posts[3], 4).is_none());
        assert!(p.bound("s", "", 4).is_none());
    }
}
