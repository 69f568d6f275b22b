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
    fn common_prefixes() {
        assert_eq!(common_prefix("a/b/c", "", "/").as_deref(), Some("a/"));
        assert_eq!(common_prefix("a/b/c", "a/", "/").as_deref(), Some("a/b/"));
        assert_eq!(common_prefix("a/b", "a/b", "/"), None);
        assert_eq!(common_prefix("x--y--z", "x", "--").as_deref(), Some("x--"));
    }
}
