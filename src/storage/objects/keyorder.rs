//! Key order arithmetic shared by the listings of current keys and of versions: the bound
//! past a prefix, and the common prefix a key rolls up to.

/// The smallest string greater than every string starting with `s` (code point order, which is
/// UTF-8 byte order); `None` when there is none.
pub fn prefix_successor(s: &str) -> Option<String> {
    let mut chars: Vec<char> = s.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = last as u32 + 1;
        if (0xD800..0xE000).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The common prefix `key` rolls up to, if any.
pub(crate) fn common_prefix(key: &str, prefix: &str, delimiter: &str) -> Option<String> {
    let rest = key.strip_prefix(prefix)?;
    let at = rest.find(delimiter)?;
    Some(key[..prefix.len() + at + delimiter.len()].to_owned())
}

/// Where the keys after common prefix `cp` probably start: its last segment counted up by one
/// (`p009/` to `p010/`, `a/` to `b/`), followed by what followed `cp` in `first`, the first
/// key seen under it. Numbered and dated folders are common; a wrong guess costs one query.
pub(crate) fn sibling_guess(
    cp: &str,
    prefix: &str,
    delimiter: &str,
    first: &str,
) -> Option<String> {
    let seg = cp.strip_prefix(prefix)?.strip_suffix(delimiter)?;
    let rest = first.strip_prefix(cp)?;
    let mut chars: Vec<char> = seg.chars().collect();
    let last = *chars.last()?;
    if last.is_ascii_digit() {
        let mut i = chars.len();
        loop {
            if i == 0 || !chars[i - 1].is_ascii_digit() {
                return None; // 999 has no successor of the same width
            }
            i -= 1;
            if chars[i] == '9' {
                chars[i] = '0';
            } else {
                chars[i] = (chars[i] as u8 + 1) as char;
                break;
            }
        }
    } else if last.is_ascii_alphabetic() && last != 'z' && last != 'Z' {
        let n = chars.len();
        chars[n - 1] = (last as u8 + 1) as char;
    } else {
        return None;
    }
    let seg: String = chars.into_iter().collect();
    Some(format!("{prefix}{seg}{delimiter}{rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successor_of_prefixes() {
        assert_eq!(prefix_successor("a/").as_deref(), Some("a0"));
        assert_eq!(prefix_successor("ab").as_deref(), Some("ac"));
        assert_eq!(prefix_successor("").as_deref(), None);
        assert_eq!(prefix_successor("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(prefix_successor("a\u{10FFFF}").as_deref(), Some("b"));
    }

    #[test]
    fn sibling_guesses() {
        let g = |cp, p, f| sibling_guess(cp, p, "/", f);
        assert_eq!(g("p009/", "", "p009/k1").as_deref(), Some("p010/k1"));
        assert_eq!(g("x/a/", "x/", "x/a/z").as_deref(), Some("x/b/z"));
        assert_eq!(
            g("d/2024-03-31/", "d/", "d/2024-03-31/f").as_deref(),
            Some("d/2024-03-32/f")
        );
        assert_eq!(g("99/", "", "99/a"), None);
        assert_eq!(g("z/", "", "z/a"), None);
        assert_eq!(g("_/", "", "_/a"), None);
    }

    #[test]
    fn common_prefixes() {
        assert_eq!(common_prefix("a/b/c", "", "/").as_deref(), Some("a/"));
        assert_eq!(common_prefix("a/b/c", "a/", "/").as_deref(), Some("a/b/"));
        assert_eq!(common_prefix("a/b", "a/b", "/"), None);
        assert_eq!(common_prefix("x--y--z", "x", "--").as_deref(), Some("x--"));
    }
}
