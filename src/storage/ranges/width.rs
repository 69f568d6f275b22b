//! Key-space arithmetic for bounded range queries: a width of key space, and the upper bound
//! that lies that far past a lower bound.
//!
//! A key is read as a fraction in base [`BASE`], one digit per character: control characters
//! are digit 0, printable ASCII `0x20..0x7E` digits 1 to 95, and everything from `0x7F` up
//! (all of non-ASCII) digit 96. The alphabet is what keys are made of in practice, so that
//! widths measured in it track how many keys a range holds; non-ASCII keys still list
//! correctly, only with coarser ranges. A bound is always a real string, so ranges built from
//! it tile the key space exactly whatever the digits say.

/// Digits per character position.
pub const BASE: u32 = 97;

/// The digit of a character.
fn digit(c: char) -> u32 {
    match c as u32 {
        x if x < 0x20 => 0,
        x if x < 0x7F => x - 0x1F,
        _ => BASE - 1,
    }
}

/// The smallest character whose digit is `d` (`1..BASE`); digit 0 is written as U+0001 (a
/// bound's digits past its first raised one need not be exact, only some string).
fn symbol(d: u32) -> char {
    match d {
        0 => '\u{1}',
        d => char::from_u32(0x1F + d.min(BASE - 1)).unwrap_or('\u{7f}'),
    }
}

/// The deepest digit a width reaches (keys longer than this still list; their ranges are just
/// never narrower than one step at this depth).
const MAX_DEPTH: u32 = 200;

/// A width of key space: `mant × BASE^-(depth+1)`, `mant` in `[1, BASE)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Width {
    depth: u32,
    mant: f64,
}

impl Width {
    /// One step of the digit at `depth` (0: the first character).
    pub fn digit_at(depth: u32) -> Self {
        Width {
            depth: depth.min(MAX_DEPTH),
            mant: 1.0,
        }
    }

    /// A first guess for a range from `lower`: one step of its last character (at least the
    /// third), about the keys that share all of it but that character.
    pub fn first_guess(lower: &str) -> Self {
        Width::digit_at((lower.chars().count().max(3) - 1) as u32)
    }

    /// The widest width short of the whole key space.
    pub fn widest() -> Self {
        Width {
            depth: 0,
            mant: (BASE - 1) as f64,
        }
    }

    /// The width from `a` to `b` (`b` after `a`), measured on the first four digits from where
    /// they differ; `None` when their digits do not differ (characters the alphabet lumps
    /// together).
    pub fn between(a: &str, b: &str) -> Option<Self> {
        let (a, b): (Vec<u32>, Vec<u32>) = (
            a.chars().map(digit).collect(),
            b.chars().map(digit).collect(),
        );
        let at = |v: &[u32], i: usize| v.get(i).copied().unwrap_or(0) as f64;
        let i = (0..a.len().max(b.len())).find(|&i| at(&a, i) != at(&b, i))?;
        let mut diff = 0.0;
        for j in 0..4 {
            diff += (at(&b, i + j) - at(&a, i + j)) / (BASE as f64).powi(j as i32);
        }
        if diff <= 0.0 {
            return None;
        }
        Width {
            depth: i as u32,
            mant: 1.0,
        }
        .scaled(diff)
    }

    /// This width is narrower than `other`.
    pub fn narrower(&self, other: &Width) -> bool {
        (self.depth, -self.mant) > (other.depth, -other.mant)
    }

    /// The digit position this width steps at.
    #[cfg(test)]
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// This width times `f` (`None`: wider than the whole key space).
    pub fn scaled(self, f: f64) -> Option<Self> {
        let f = if f.is_finite() && f > 0.0 { f } else { 1.0 };
        let (mut depth, mut mant) = (self.depth as i64, self.mant * f);
        while mant >= BASE as f64 {
            mant /= BASE as f64;
            depth -= 1;
        }
        while mant < 1.0 {
            mant *= BASE as f64;
            depth += 1;
        }
        if depth < 0 {
            return None;
        }
        Some(Width {
            depth: (depth as u32).min(MAX_DEPTH),
            mant,
        })
    }

    /// The upper bound this width past `lower`: a string greater than `lower`, or `None` when
    /// it would pass the end of the key space.
    pub fn upper(&self, lower: &str) -> Option<String> {
        let chars: Vec<char> = lower.chars().collect();
        let d = self.depth as usize;
        // The two digits the width adds to (its whole and its fractional part), over `lower`'s
        // own digits, padded with zeros.
        // `lower`'s own digit one place past the width's is kept, so that the range is at
        // least about the width wide wherever `lower` falls within a step; the places after
        // it are dropped, which puts bounds on boundaries of the key space's tree (a range
        // then tends to end where a folder or a run of keys ends: measured, a full pass over
        // 100,000 keys in 100 folders went twice as fast as with every digit kept).
        let mut digits: Vec<u32> = (0..d + 2)
            .map(|i| chars.get(i).map_or(0, |c| digit(*c)))
            .collect();
        let whole = self.mant.floor() as u32;
        let frac = ((self.mant - whole as f64) * BASE as f64).ceil() as u32;
        digits[d + 1] += frac;
        digits[d] += whole.max(1);
        // Carry; `first` is the leftmost digit that changed.
        let mut first = d;
        let mut i = d + 1;
        loop {
            if digits[i] >= BASE {
                digits[i] -= BASE;
                if i == 0 {
                    return None;
                }
                digits[i - 1] += 1;
                first = first.min(i - 1);
            }
            if i == 0 {
                break;
            }
            i -= 1;
        }
        // The characters before the first changed digit are `lower`'s own (a digit stands for
        // several characters, and the bound must not drop below `lower`); the changed digit is
        // written as the smallest character with that digit, which is above `lower`'s character
        // there; the rest are the width's fractional digits, trailing zeros dropped.
        let mut out: String = chars.iter().take(first).collect();
        // Past the end of a shorter `lower`: any character keeps the bound above it (no NUL
        // in a bound).
        while out.chars().count() < first {
            out.push('\u{1}');
        }
        let mut tail: Vec<u32> = digits[first..].to_vec();
        while tail.len() > 1 && tail.last() == Some(&0) {
            tail.pop();
        }
        for (k, dg) in tail.into_iter().enumerate() {
            if k == 0 {
                out.push(char::from_u32(0x1F + dg).unwrap_or('\u{7f}'));
            } else {
                out.push(symbol(dg));
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(lower: &str, w: Width) -> Option<String> {
        let u = w.upper(lower);
        if let Some(u) = &u {
            assert!(u.as_str() > lower, "{u:?} not above {lower:?}");
        }
        u
    }

    #[test]
    fn bounds_are_above_their_lower_bound() {
        for lower in [
            "",
            "a",
            "key-0000999",
            "key-0000999~",
            "\u{1}\u{1}",
            "caf\u{e9}/x",
            "\u{10FFFF}\u{10FFFF}z",
            "a\u{7f}\u{7f}",
            "~~~",
        ] {
            for depth in 0..8 {
                for mant in [1.0, 1.5, 3.999, 50.0, 96.99] {
                    check(lower, Width { depth, mant });
                }
            }
        }
    }

    #[test]
    fn one_step_of_a_digit() {
        // depth 3 is the fourth character: '-' + 1
        assert_eq!(
            Width::digit_at(3).upper("key-0001").as_deref(),
            Some("key.0")
        );
        assert_eq!(
            Width::digit_at(4).upper("key-0001").as_deref(),
            Some("key-10")
        );
        // a step past '~' carries into the character before
        assert_eq!(Width::digit_at(1).upper("a~x").as_deref(), Some("a\u{7f}x"));
        assert_eq!(
            Width::digit_at(1).upper("a\u{7f}x").as_deref(),
            Some("b\u{1}x")
        );
        // a shorter lower bound is padded, never with NUL
        assert_eq!(Width::digit_at(2).upper("a").as_deref(), Some("a\u{1} "));
    }

    #[test]
    fn widths_scale_across_digits() {
        let w = Width::digit_at(5);
        let w2 = w.scaled(BASE as f64).unwrap();
        assert_eq!(w2.depth(), 4);
        assert_eq!(w.scaled(1.0 / BASE as f64).unwrap().depth(), 6);
        assert!(Width::digit_at(0).scaled(BASE as f64).is_none());
    }

    #[test]
    fn widths_between_keys() {
        let w = Width::between("key-0001000", "key-0002000").unwrap();
        assert_eq!(w.depth(), 7);
        // A width measured between two keys reaches about the second from the first.
        let u = w.upper("key-0001000").unwrap();
        assert!(u.as_str() >= "key-00020" && u.as_str() < "key-0003", "{u}");
        // wherever the lower bound falls within a step
        let u = w.upper("key-0001999").unwrap();
        assert!(u.as_str() >= "key-00029" && u.as_str() < "key-0004", "{u}");
        assert!(Width::between("a", "a").is_none());
        assert!(Width::between("\u{e9}", "\u{f0}").is_none());
        let w = Width::between("a", "a5").unwrap();
        assert_eq!(w.depth(), 1);
    }

    #[test]
    fn past_the_end_is_unbounded() {
        assert_eq!(Width::digit_at(0).upper("\u{7f}"), None);
        assert_eq!(Width::digit_at(1).upper("\u{7f}\u{10FFFF}"), None);
    }
}
