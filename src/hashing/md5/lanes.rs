//! The MD5 compression function over 16 independent messages at once, one per 32-bit lane
//! of an AVX-512 register. One message's MD5 is a chain of dependent steps that no
//! instruction set shortens (about 5.6 cycles a byte here); 16 chains side by side cost
//! about as much as one, so while 16 uploads hash together each pays about a fifth of it
//! (measured 0.16 s/GiB with all 16 lanes busy, against 1.72 s/GiB for the md-5 crate's
//! assembly).
//!
//! The one module of grids3 with `unsafe` (the crate denies it elsewhere, and a test holds
//! that line): CPU intrinsics are unsafe to call. It reads only the bytes of the slices it is
//! given, checked before the call, and runs only where the CPU has AVX-512F.
#![allow(unsafe_code)]

use super::{K, SHIFTS};

/// Lanes hashed together.
pub const LANES: usize = 16;

/// Whether this CPU runs [`compress16`].
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Hashes `blocks` 64-byte blocks of each lane into its state: lane `i` reads
/// `data[i][..blocks * 64]`. Panics when a lane has fewer bytes, or when [`available`] is
/// false.
pub fn compress16(states: &mut [[u32; 4]; LANES], data: [&[u8]; LANES], blocks: usize) {
    assert!(available(), "AVX-512F is not available");
    for d in &data {
        assert!(
            blocks.checked_mul(64).is_some_and(|n| d.len() >= n),
            "a lane is shorter than its blocks"
        );
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has AVX-512F (checked above), and every lane has `blocks * 64`
    // readable bytes (checked above), which is all the loads read.
    unsafe {
        x86::compress16(states, data, blocks)
    }
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

    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn compress16(
        states: &mut [[u32; 4]; LANES],
        data: [&[u8]; LANES],
        blocks: usize,
    ) {
        let column = |j: usize| {
            let v: [u32; LANES] = std::array::from_fn(|i| states[i][j]);
            _mm512_loadu_si512(v.as_ptr().cast())
        };
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
        for (i, s) in states.iter_mut().enumerate() {
            *s = [out[0][i], out[1][i], out[2][i], out[3][i]];
        }
    }
}
