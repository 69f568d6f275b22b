//! Fence posts: a sample of the keys this instance has seen in each key space (about one in
//! [`SPACING`], chosen by a hash of the key, so every reader samples the same keys), and the
//! width of the last range that held a page. A range query that ends a few posts ahead holds
//! about as many keys as it asks for.
//!
//! Posts are hints, never answers: a range is read whole whatever its bound, so a stale post
//! (its key deleted since) or a missing one (keys written through another instance) costs a
//! query, never a key. Posts inside a range read in full that the range did not hold are
//! dropped, so the sample mends itself as listings pass.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use super::width::Width;

/// One key in about this many is a post.
pub const SPACING: u64 = 128;

/// Posts kept over all key spaces (a million-key bucket needs about 8,000).
const MAX_POSTS: usize = 64 * 1024;

/// Whether `key` is a post.
pub fn is_post(key: &str) -> bool {
    // FNV-1a: stable across instances and releases, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h % SPACING == 0
}

#[derive(Default)]
struct Space {
    posts: BTreeSet<String>,
    width: Option<Width>,
    used: u64,
}

/// The posts and widths of every key space this instance has listed.
#[derive(Default)]
pub struct Posts {
    inner: Mutex<(HashMap<String, Space>, u64)>,
}

impl std::fmt::Debug for Posts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Posts")
    }
}

impl Posts {
    /// The upper bound `n` posts past `lower` (the `n`th post above it, and a character
    /// more), or past the last post there is, with how many posts it passes; `None` when no
    /// post lies above `lower`.
    pub fn bound(&self, space: &str, lower: &str, n: usize) -> Option<(String, usize)> {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (spaces, clock) = &mut *g;
        *clock += 1;
        let s = spaces.get_mut(space)?;
        s.used = *clock;
        use std::ops::Bound::{Excluded, Unbounded};
        let mut passed = 0;
        let mut last = None;
        for p in s
            .posts
            .range::<str, _>((Excluded(lower), Unbounded))
            .take(n.max(1))
        {
            passed += 1;
            last = Some(p);
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

    /// What a range read says: `seen` (in order) are the keys in it from `lower` (inclusive);
    /// when `whole`, they are all the keys below `upper` (`None`: the end), and the posts in
    /// between that are not among them are gone.
    pub fn learn<'k>(
        &self,
        space: &str,
        lower: &str,
        upper: Option<&str>,
        seen: impl Iterator<Item = &'k str>,
        whole: bool,
    ) {
        let sampled: Vec<&str> = seen.filter(|k| is_post(k)).collect();
        self.with_space(space, |s| {
            if whole {
                let stale: Vec<String> = s
                    .posts
                    .range::<str, _>((std::ops::Bound::Included(lower), std::ops::Bound::Unbounded))
                    .take_while(|p| upper.is_none_or(|u| p.as_str() < u))
                    .filter(|p| !sampled.contains(&p.as_str()))
                    .cloned()
                    .collect();
                for p in stale {
                    s.posts.remove(&p);
                }
            }
            for k in &sampled {
                if !s.posts.contains(*k) {
                    s.posts.insert((*k).to_owned());
                }
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
        while spaces.values().map(|s| s.posts.len()).sum::<usize>() > MAX_POSTS {
            let Some(oldest) = spaces
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if spaces.len() == 1 {
                // One space over the cap keeps every other post.
                let s = spaces.get_mut(&oldest).expect("present");
                let keep: BTreeSet<String> = s.posts.iter().step_by(2).cloned().collect();
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
    fn posts_bound_ranges_and_mend() {
        let p = Posts::default();
        let keys: Vec<String> = (0..20_000).map(|i| format!("key-{i:06}")).collect();
        p.learn("s", "", None, keys.iter().map(String::as_str), true);
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
        // A range read whole without its posts drops them.
        p.learn("s", "key-001000", Some(&b), std::iter::empty(), true);
        let (b2, _) = p.bound("s", "key-001000", 1).unwrap();
        assert!(b2 >= b);
        assert!(p.bound("other", "", 1).is_none());
    }
}
