//! The MD5 compression function over 16 independent messages at once, one per 32-bit lane
//! of an AVX-512 register, or 8 at a time in the lanes of an AVX2 register where the CPU has
//! no AVX-512 (many AMD and older Intel servers). One message's MD5 is a chain of dependent
//! steps that no instruction set shortens (about 5.6 cycles a byte here); chains side by side
//! cost about as much as one, so while uploads hash together each pays a fraction of it
//! (measured 0.16 s/GiB with all 16 AVX-512 lanes busy, against 1.72 s/GiB for the md-5
//! crate's assembly; AVX2, without AVX-512's rotate and three-input logic, needs about twice
//! the instructions a step for half the lanes: see [`Kernel::Avx2`]).
//!
//! The one module of grids3 with `unsafe` (the crate denies it elsewhere, and a test holds
//! that line): CPU intrinsics are unsafe to call. It reads only the bytes of the slices it is
//! given, checked before the call, and runs a kernel only where the CPU has its features.
#![allow(unsafe_code)]

use super::{K, SHIFTS};

/// Lanes hashed together.
pub const LANES: usize = 16;

/// The instruction sets the lanes run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// 16 lanes in one AVX-512F register.
    Avx512,
    /// Two passes of 8 lanes in AVX2 registers; a pass whose 8 lanes are all idle is skipped.
    /// Measured on an AMD EPYC without AVX-512: see BENCHMARKS.md (issue 36, eighth session).
    Avx2,
}

impl Kernel {
    /// Whether this CPU runs the kernel.
    pub fn supported(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Kernel::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
                Kernel::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }
}

/// The best kernel this CPU runs.
pub fn kernel() -> Option<Kernel> {
    [Kernel::Avx512, Kernel::Avx2]
        .into_iter()
        .find(|k| k.supported())
}

/// Whether this CPU runs the lanes at all.
pub fn available() -> bool {
    kernel().is_some()
}

/// Hashes `blocks` 64-byte blocks of each lane into its state: lane `i` reads
/// `data[i][..blocks * 64]`. Panics when a lane has fewer bytes, or when [`available`] is
/// false.
pub fn compress16(states: &mut [[u32; 4]; LANES], data: [&[u8]; LANES], blocks: usize) {
    compress(states, data, blocks, LANES);
}

/// [`compress16`] where only lanes below `used` matter: the others may be left as they were
/// (the AVX2 kernel skips a pass of 8 idle lanes).
pub fn compress(states: &mut [[u32; 4]; LANES], data: [&[u8]; LANES], blocks: usize, used: usize) {
    compress_with(
        kernel().expect("no MD5 lanes on this CPU"),
        states,
        data,
        blocks,
        used,
    );
}

/// [`compress`] with this kernel. Panics when the CPU does not run it.
pub fn compress_with(
    kernel: Kernel,
    states: &mut [[u32; 4]; LANES],
    data: [&[u8]; LANES],
    blocks: usize,
    used: usize,
) {
    assert!(kernel.supported(), "{kernel:?} is not available");
    for d in &data {
        assert!(
            blocks.checked_mul(64).is_some_and(|n| d.len() >= n),
            "a lane is shorter than its blocks"
        );
    }
    #[cfg(target_arch = "x86_64")]
    match kernel {
        // SAFETY: the CPU has AVX-512F (checked above), and every lane has `blocks * 64`
        // readable bytes (checked above), which is all the loads read.
        Kernel::Avx512 => unsafe { x86::compress16(states, data, blocks) },
        Kernel::Avx2 => {
            for (half, s) in states.chunks_exact_mut(8).enumerate() {
                if half * 8 >= used {
                    break;
                }
                let s: &mut [[u32; 4]; 8] = s.try_into().expect("8 lanes");
                let d: [&[u8]; 8] = std::array::from_fn(|i| data[half * 8 + i]);
                // SAFETY: the CPU has AVX2 (checked above), and every lane has
                // `blocks * 64` readable bytes (checked above), which is all the loads read.
                unsafe { x86::compress8(s, d, blocks) }
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (states, used);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{K, LANES, SHIFTS};
    use std::arch::x86_64::*;

    /// Truth tables of MD5's four functions for `vpternlogd` over (b, c, d):
    /// F = b ? c : d, G = d ? b : c, H = b ^ c ^ d, I = c ^ (b | !d).
    const F: i32 = 0xCA;
    const G: i32 = 0xE4;
    const H: i32 = 0x96;
    const I: i32 = 0x39;

    /// The lanes' states as the kernels load them: word j of every lane's state together.
    fn columns<const N: usize>(states: &[[u32; 4]; N]) -> [[u32; N]; 4] {
        std::array::from_fn(|j| std::array::from_fn(|i| states[i][j]))
    }

    /// The inverse of [`columns`]: each lane's state back from the kernel's registers.
    fn set_rows<const N: usize>(states: &mut [[u32; 4]; N], cols: [[u32; N]; 4]) {
        for (i, s) in states.iter_mut().enumerate() {
            *s = [cols[0][i], cols[1][i], cols[2][i], cols[3][i]];
        }
    }

    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn compress16(
        states: &mut [[u32; 4]; LANES],
        data: [&[u8]; LANES],
        blocks: usize,
    ) {
        let cols = columns(states);
        let column = |j: usize| _mm512_loadu_si512(cols[j].as_ptr().cast());
        let (mut a, mut b, mut c, mut d) = (column(0), column(1), column(2), column(3));
        for j in 0..blocks {
            // Block j of every lane, one register each, transposed so that register w holds
            // word w of all 16 lanes: 16 loads and 64 shuffles (gathers cost twice as much).
            let r: [__m512i; LANES] =
                std::array::from_fn(|i| _mm512_loadu_si512(data[i].as_ptr().add(64 * j).cast()));
            let mut t = [_mm512_setzero_si512(); 16];
            for g in 0..8 {
                t[2 * g] = _mm512_unpacklo_epi32(r[2 * g], r[2 * g + 1]);
                t[2 * g + 1] = _mm512_unpackhi_epi32(r[2 * g], r[2 * g + 1]);
            }
            // u[4q + k] holds, in each 128-bit quarter Q, word 4Q + k of lanes 4q..4q+4.
            let mut u = [_mm512_setzero_si512(); 16];
            for q in 0..4 {
                let (t0, t1, t2, t3) = (t[4 * q], t[4 * q + 1], t[4 * q + 2], t[4 * q + 3]);
                u[4 * q] = _mm512_unpacklo_epi64(t0, t2);
                u[4 * q + 1] = _mm512_unpackhi_epi64(t0, t2);
                u[4 * q + 2] = _mm512_unpacklo_epi64(t1, t3);
                u[4 * q + 3] = _mm512_unpackhi_epi64(t1, t3);
            }
            let mut x = [_mm512_setzero_si512(); 16];
            for k in 0..4 {
                let p = _mm512_shuffle_i32x4::<0x44>(u[k], u[4 + k]);
                let q = _mm512_shuffle_i32x4::<0xEE>(u[k], u[4 + k]);
                let p2 = _mm512_shuffle_i32x4::<0x44>(u[8 + k], u[12 + k]);
                let q2 = _mm512_shuffle_i32x4::<0xEE>(u[8 + k], u[12 + k]);
                x[k] = _mm512_shuffle_i32x4::<0x88>(p, p2);
                x[4 + k] = _mm512_shuffle_i32x4::<0xDD>(p, p2);
                x[8 + k] = _mm512_shuffle_i32x4::<0x88>(q, q2);
                x[12 + k] = _mm512_shuffle_i32x4::<0xDD>(q, q2);
            }
            let (aa, bb, cc, dd) = (a, b, c, d);
            macro_rules! step {
                ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $i:expr, $g:expr, $s:expr) => {
                    let t = _mm512_add_epi32(
                        _mm512_add_epi32($a, x[$g]),
                        _mm512_set1_epi32(K[$i] as i32),
                    );
                    let f = _mm512_ternarylogic_epi32::<$f>($b, $c, $d);
                    $a = _mm512_add_epi32(
                        _mm512_rol_epi32::<{ $s as i32 }>(_mm512_add_epi32(t, f)),
                        $b,
                    );
                };
            }
            md5_rounds!(step, a, b, c, d);
            a = _mm512_add_epi32(a, aa);
            b = _mm512_add_epi32(b, bb);
            c = _mm512_add_epi32(c, cc);
            d = _mm512_add_epi32(d, dd);
        }
        let mut out = [[0u32; LANES]; 4];
        for (o, v) in out.iter_mut().zip([a, b, c, d]) {
            _mm512_storeu_si512(o.as_mut_ptr().cast(), v);
        }
        set_rows(states, out);
    }

    /// [`compress16`] for 8 lanes in AVX2 registers. The same steps as above, with what
    /// AVX2 lacks spelled out: each round function in two or three logic operations instead
    /// of one `vpternlogd`, and each rotate as two shifts and an or.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn compress8(states: &mut [[u32; 4]; 8], data: [&[u8]; 8], blocks: usize) {
        let cols = columns(states);
        let mut a = _mm256_loadu_si256(cols[0].as_ptr().cast());
        let mut b = _mm256_loadu_si256(cols[1].as_ptr().cast());
        let mut c = _mm256_loadu_si256(cols[2].as_ptr().cast());
        let mut d = _mm256_loadu_si256(cols[3].as_ptr().cast());
        let ones = _mm256_set1_epi32(-1);
        for j in 0..blocks {
            // Words 0..8 of the 8 lanes' block j, then words 8..16, each an 8 x 8 transpose:
            // 8 loads and 24 shuffles, so that register w holds word w of all 8 lanes.
            let mut x = [_mm256_setzero_si256(); 16];
            for half in 0..2 {
                let mut r = [_mm256_setzero_si256(); 8];
                for (i, r) in r.iter_mut().enumerate() {
                    *r = _mm256_loadu_si256(data[i].as_ptr().add(64 * j + 32 * half).cast());
                }
                let mut t = [_mm256_setzero_si256(); 8];
                for g in 0..4 {
                    t[2 * g] = _mm256_unpacklo_epi32(r[2 * g], r[2 * g + 1]);
                    t[2 * g + 1] = _mm256_unpackhi_epi32(r[2 * g], r[2 * g + 1]);
                }
                // u[4q + k] holds word k of lanes 4q..4q+4 in its low half and word 4 + k in
                // its high half.
                let mut u = [_mm256_setzero_si256(); 8];
                for q in 0..2 {
                    let (t0, t1, t2, t3) = (t[4 * q], t[4 * q + 1], t[4 * q + 2], t[4 * q + 3]);
                    u[4 * q] = _mm256_unpacklo_epi64(t0, t2);
                    u[4 * q + 1] = _mm256_unpackhi_epi64(t0, t2);
                    u[4 * q + 2] = _mm256_unpacklo_epi64(t1, t3);
                    u[4 * q + 3] = _mm256_unpackhi_epi64(t1, t3);
                }
                for k in 0..4 {
                    x[8 * half + k] = _mm256_permute2x128_si256::<0x20>(u[k], u[4 + k]);
                    x[8 * half + 4 + k] = _mm256_permute2x128_si256::<0x31>(u[k], u[4 + k]);
                }
            }
            let (aa, bb, cc, dd) = (a, b, c, d);
            // F = b ? c : d, G = d ? b : c, H = b ^ c ^ d, I = c ^ (b | !d).
            macro_rules! fun {
                (F, $b:ident, $c:ident, $d:ident) => {
                    _mm256_xor_si256($d, _mm256_and_si256($b, _mm256_xor_si256($c, $d)))
                };
                (G, $b:ident, $c:ident, $d:ident) => {
                    _mm256_xor_si256($c, _mm256_and_si256($d, _mm256_xor_si256($b, $c)))
                };
                (H, $b:ident, $c:ident, $d:ident) => {
                    _mm256_xor_si256(_mm256_xor_si256($b, $c), $d)
                };
                (I, $b:ident, $c:ident, $d:ident) => {
                    _mm256_xor_si256($c, _mm256_or_si256($b, _mm256_xor_si256($d, ones)))
                };
            }
            macro_rules! step {
                ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $i:expr, $g:expr, $s:expr) => {
                    let t = _mm256_add_epi32(
                        _mm256_add_epi32($a, x[$g]),
                        _mm256_set1_epi32(K[$i] as i32),
                    );
                    let t = _mm256_add_epi32(t, fun!($f, $b, $c, $d));
                    let t = _mm256_or_si256(
                        _mm256_slli_epi32::<{ $s as i32 }>(t),
                        _mm256_srli_epi32::<{ 32 - $s as i32 }>(t),
                    );
                    $a = _mm256_add_epi32(t, $b);
                };
            }
            md5_rounds!(step, a, b, c, d);
            a = _mm256_add_epi32(a, aa);
            b = _mm256_add_epi32(b, bb);
            c = _mm256_add_epi32(c, cc);
            d = _mm256_add_epi32(d, dd);
        }
        let mut out = [[0u32; 8]; 4];
        for (o, v) in out.iter_mut().zip([a, b, c, d]) {
            _mm256_storeu_si256(o.as_mut_ptr().cast(), v);
        }
        set_rows(states, out);
    }
}
