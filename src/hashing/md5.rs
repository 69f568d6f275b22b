//! MD5, with the bulk of a large upload's content hashed by a shared engine many uploads at a
//! time ([`DeferredMd5`]; see `engine.rs` and `lanes.rs`), and everything else hashed in
//! place ([`Md5`]). The digest is the standard one (RFC 1321): the same as the md-5 crate's, which
//! the tests compare against.

/// MD5's 64 steps, as four rounds of 16: `$step!(f, a, b, c, d, i, g, s)` for function `f`
/// (F, G, H or I), step `i`, message word `g` and rotation `s`, the state's names rotating
/// from step to step. Shared by the one-message function below and the lanes.
macro_rules! md5_rounds {
    ($step:ident, $a:ident, $b:ident, $c:ident, $d:ident) => {
        md5_rounds!(@round $step, F, 0, |i: usize| i, $a, $b, $c, $d);
        md5_rounds!(@round $step, G, 1, |i: usize| (5 * i + 1) % 16, $a, $b, $c, $d);
        md5_rounds!(@round $step, H, 2, |i: usize| (3 * i + 5) % 16, $a, $b, $c, $d);
        md5_rounds!(@round $step, I, 3, |i: usize| (7 * i) % 16, $a, $b, $c, $d);
    };
    (@round $step:ident, $f:ident, $r:literal, $g:expr, $a:ident, $b:ident, $c:ident, $d:ident) => {
        let mut i = 16 * $r;
        while i < 16 * $r + 16 {
            $step!($f, $a, $b, $c, $d, i, $g(i), SHIFTS[$r][0]);
            $step!($f, $d, $a, $b, $c, i + 1, $g(i + 1), SHIFTS[$r][1]);
            $step!($f, $c, $d, $a, $b, i + 2, $g(i + 2), SHIFTS[$r][2]);
            $step!($f, $b, $c, $d, $a, i + 3, $g(i + 3), SHIFTS[$r][3]);
            i += 4;
        }
    };
}

mod deferred;
mod engine;
pub mod lanes;

pub use deferred::DeferredMd5;

/// The sine-derived constants of RFC 1321, one per step.
const K: [u32; 64] = [
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
];

/// The rotations of each round's four steps.
const SHIFTS: [[u32; 4]; 4] = [
    [7, 12, 17, 22],
    [5, 9, 14, 20],
    [4, 11, 16, 23],
    [6, 10, 15, 21],
];

const INIT: [u32; 4] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];

/// The engine hashed the content, or went away (it never does unless it panicked), in which
/// case the upload fails rather than publish a wrong ETag.
#[derive(Debug, thiserror::Error)]
#[error("the MD5 engine stopped")]
pub struct EngineGone;

/// A running MD5.
#[derive(Clone)]
pub struct Md5 {
    state: [u32; 4],
    /// Bytes of an incomplete block, waiting for the rest.
    tail: [u8; 64],
    tail_len: usize,
    length: u64,
}

impl Default for Md5 {
    fn default() -> Self {
        Self::new()
    }
}

impl Md5 {
    pub fn new() -> Self {
        Self {
            state: INIT,
            tail: [0; 64],
            tail_len: 0,
            length: 0,
        }
    }

    /// Adds `data`, hashed here.
    pub fn update(&mut self, mut data: &[u8]) {
        self.length += data.len() as u64;
        if self.tail_len > 0 {
            let take = (64 - self.tail_len).min(data.len());
            self.tail[self.tail_len..self.tail_len + take].copy_from_slice(&data[..take]);
            self.tail_len += take;
            data = &data[take..];
            if self.tail_len < 64 {
                return;
            }
            let block = self.tail;
            compress(&mut self.state, &block);
            self.tail_len = 0;
        }
        let whole = data.len() / 64 * 64;
        compress(&mut self.state, &data[..whole]);
        let rest = &data[whole..];
        self.tail[..rest.len()].copy_from_slice(rest);
        self.tail_len = rest.len();
    }

    /// The digest.
    pub fn finalize(mut self) -> [u8; 16] {
        let bits = self.length.wrapping_mul(8);
        let mut pad = [0u8; 72];
        pad[0] = 0x80;
        let n = if self.tail_len < 56 {
            56 - self.tail_len
        } else {
            120 - self.tail_len
        };
        self.update(&pad[..n]);
        self.update(&bits.to_le_bytes());
        debug_assert_eq!(self.tail_len, 0);
        let mut out = [0u8; 16];
        for (o, w) in out.chunks_exact_mut(4).zip(self.state) {
            o.copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}

/// MD5's compression function over whole 64-byte blocks (`data.len()` a multiple of 64),
/// one block after another.
fn compress(state: &mut [u32; 4], data: &[u8]) {
    debug_assert_eq!(data.len() % 64, 0);
    let [mut a, mut b, mut c, mut d] = *state;
    for block in data.chunks_exact(64) {
        let mut x = [0u32; 16];
        for (w, q) in x.iter_mut().zip(block.chunks_exact(4)) {
            *w = u32::from_le_bytes([q[0], q[1], q[2], q[3]]);
        }
        let (aa, bb, cc, dd) = (a, b, c, d);
        // Each step ends `a = b + rotl(a + x + k + f(b, c, d))`; the parts of f that do not
        // wait for b are written so that they can be computed early.
        macro_rules! step {
            (F, $a:ident, $b:ident, $c:ident, $d:ident, $i:expr, $g:expr, $s:expr) => {
                let t = $a.wrapping_add(x[$g]).wrapping_add(K[$i]);
                $a = t
                    .wrapping_add($d ^ ($b & ($c ^ $d)))
                    .rotate_left($s)
                    .wrapping_add($b);
            };
            // (b & d) and (c & !d) never share a bit, so their or is their sum.
            (G, $a:ident, $b:ident, $c:ident, $d:ident, $i:expr, $g:expr, $s:expr) => {
                let t = $a
                    .wrapping_add(x[$g])
                    .wrapping_add(K[$i])
                    .wrapping_add($c & !$d);
                $a = t.wrapping_add($b & $d).rotate_left($s).wrapping_add($b);
            };
            (H, $a:ident, $b:ident, $c:ident, $d:ident, $i:expr, $g:expr, $s:expr) => {
                let t = $a.wrapping_add(x[$g]).wrapping_add(K[$i]);
                $a = t
                    .wrapping_add($b ^ ($c ^ $d))
                    .rotate_left($s)
                    .wrapping_add($b);
            };
            (I, $a:ident, $b:ident, $c:ident, $d:ident, $i:expr, $g:expr, $s:expr) => {
                let t = $a.wrapping_add(x[$g]).wrapping_add(K[$i]);
                $a = t
                    .wrapping_add($c ^ ($b | !$d))
                    .rotate_left($s)
                    .wrapping_add($b);
            };
        }
        md5_rounds!(step, a, b, c, d);
        a = a.wrapping_add(aa);
        b = b.wrapping_add(bb);
        c = c.wrapping_add(cc);
        d = d.wrapping_add(dd);
    }
    *state = [a, b, c, d];
}

#[cfg(test)]
mod tests;
