use super::lanes::{self, LANES};
use super::*;
use ::md5::Digest;

fn reference(data: &[u8]) -> [u8; 16] {
    ::md5::Md5::digest(data).into()
}

/// Bytes that differ per seed and position.
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn rfc_1321_test_suite() {
    let cases: [(&str, &str); 7] = [
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("a", "0cc175b9c0f1b6a831c399e269772661"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        (
            "abcdefghijklmnopqrstuvwxyz",
            "c3fcd3d76192e4007dfb496cca67e13b",
        ),
        (
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            "d174ab98d277d9f5a5611c2c9f419d9f",
        ),
        (
            "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
            "57edf4a22be3c955ac49da2e2107b67a",
        ),
    ];
    for (input, want) in cases {
        let mut h = Md5::new();
        h.update(input.as_bytes());
        assert_eq!(hex::encode(h.finalize()), want, "{input:?}");
    }
}

#[test]
fn any_split_of_any_length_gives_the_reference_digest() {
    for n in (0..300).chain([4095, 4096, 4097, 261_120, 261_121]) {
        let data = bytes(n as u64, n);
        let want = reference(&data);
        for cut in [0, 1, 55, 56, 63, 64, 65, n / 2, n.saturating_sub(1)] {
            let cut = cut.min(n);
            let mut h = Md5::new();
            h.update(&data[..cut]);
            h.update(&data[cut..]);
            assert_eq!(h.finalize(), want, "length {n}, cut at {cut}");
        }
    }
}

#[test]
fn the_lanes_agree_with_the_scalar_function_lane_by_lane() {
    let kernels: Vec<lanes::Kernel> = [lanes::Kernel::Avx512, lanes::Kernel::Avx2]
        .into_iter()
        .filter(|k| k.supported())
        .collect();
    eprintln!("kernels tested on this CPU: {kernels:?}");
    for kernel in kernels {
        for used in [LANES, 9, 8, 3] {
            lanes_agree(kernel, used);
        }
    }
}

/// Each lane below `used` of `kernel` against the one-message function.
fn lanes_agree(kernel: lanes::Kernel, used: usize) {
    for blocks in [0, 1, 2, 17, 300] {
        let bufs: Vec<Vec<u8>> = (0..LANES)
            .map(|i| bytes(i as u64 + 7, blocks * 64 + i))
            .collect();
        let mut states: [[u32; 4]; LANES] =
            std::array::from_fn(|i| [i as u32, 0xefcdab89 ^ i as u32, 0x98badcfe, 0x10325476]);
        let mut want = states;
        for (s, b) in want.iter_mut().zip(&bufs) {
            compress(s, &b[..blocks * 64]);
        }
        let data: [&[u8]; LANES] = std::array::from_fn(|i| &bufs[i][..]);
        lanes::compress_with(kernel, &mut states, data, blocks, used);
        assert_eq!(
            states[..used],
            want[..used],
            "{kernel:?}, {blocks} blocks, {used} lanes used"
        );
    }
}

/// A chunk document's shape: a header before the content.
fn chunk_like(content: &[u8]) -> Vec<u8> {
    let mut buf = vec![0xEE; 40];
    buf.extend_from_slice(content);
    buf
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_uploads_hash_through_the_engine_to_the_reference_digest() {
    let before = engine::lane_passes();
    let mut tasks = Vec::new();
    for u in 0..12u64 {
        tasks.push(tokio::spawn(async move {
            let data = bytes(100 + u, 2 * 1024 * 1024 + 77 * u as usize);
            let mut h = DeferredMd5::new();
            // A small leading piece (hashed in place), so that large pieces start inside a
            // block.
            h.push(std::sync::Arc::new(data[..13].to_vec()), 0..13)
                .await
                .unwrap();
            let mut at = 13;
            let mut i = 0;
            while at < data.len() {
                // Every fourth piece small: it queues behind the large ones at the engine.
                let n = match i % 4 {
                    3 => 1000 + u as usize,
                    _ => 261_120 + u as usize,
                }
                .min(data.len() - at);
                let buf = chunk_like(&data[at..at + n]);
                if u % 3 == 0 {
                    // As a sealed chunk is: the buffer comes back once hashed, unchanged.
                    let back = h.push_owned(buf, 40).await.unwrap();
                    assert_eq!(&back[40..], &data[at..at + n]);
                } else {
                    let end = buf.len();
                    h.push(std::sync::Arc::new(buf), 40..end).await.unwrap();
                }
                at += n;
                i += 1;
                tokio::task::yield_now().await;
            }
            let mut whole = data.clone();
            whole.extend_from_slice(b"held back");
            assert_eq!(
                h.digest_with(b"held back").await.unwrap(),
                reference(&whole),
                "upload {u}"
            );
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    if lanes::available() {
        assert!(
            engine::lane_passes() > before,
            "12 uploads at once never reached the lanes"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_upload_lets_go_of_its_pieces() {
    if !lanes::available() {
        eprintln!("no MD5 lanes here: no engine to hold pieces");
        return;
    }
    // Enough uploads hashing large pieces for the next one's to go to the engine.
    let mut others: Vec<DeferredMd5> = (0..4).map(|_| DeferredMd5::new()).collect();
    for h in &mut others {
        let buf = chunk_like(&bytes(1, 128 * 1024));
        let end = buf.len();
        h.push(std::sync::Arc::new(buf), 40..end).await.unwrap();
    }
    let mut h = DeferredMd5::new();
    let owner = std::sync::Arc::new(chunk_like(&bytes(2, 256 * 1024)));
    let end = owner.len();
    for _ in 0..20 {
        h.push(owner.clone(), 40..end).await.unwrap();
    }
    let held = std::sync::Arc::strong_count(&owner);
    drop(h);
    // Dropped unhashed, or hashed and let go: within about one DEFER either way.
    let t0 = std::time::Instant::now();
    while std::sync::Arc::strong_count(&owner) > 1 {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "the engine still holds a piece of an abandoned upload ({held} holders at drop)"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_waits_for_its_own_pieces_while_the_engine_is_behind() {
    if !lanes::available() {
        eprintln!("no MD5 lanes here: no engine to fall behind");
        return;
    }
    let arc = std::sync::Arc::new;
    let first = bytes(4, 256 * 1024);
    let second = bytes(5, 256 * 1024);
    // Routing depends on other uploads' recent pieces, and the first piece may be hashed
    // before the second is handed over (other tests fill the engine too): an attempt counts
    // only when both pieces went to the engine.
    for _ in 0..50 {
        let mut others: Vec<DeferredMd5> = (0..4).map(|_| DeferredMd5::new()).collect();
        for h in &mut others {
            let buf = chunk_like(&bytes(3, 128 * 1024));
            let end = buf.len();
            h.push(arc(buf), 40..end).await.unwrap();
        }
        let mut g = DeferredMd5::new();
        let one = arc(chunk_like(&first));
        let end = one.len();
        g.push(one, 40..end).await.unwrap();
        let two = arc(chunk_like(&second));
        // Behind, as if twice HELD_MAX were waiting: push returns only once this upload's
        // pieces are hashed, and the engine lets go of a piece before it says so.
        engine::pretend_held(2 * engine::HELD_MAX, true);
        let pushed = g.push(two.clone(), 40..end).await;
        let holders = std::sync::Arc::strong_count(&two);
        engine::pretend_held(2 * engine::HELD_MAX, false);
        pushed.unwrap();
        if g.handed() < 2 {
            continue;
        }
        assert_eq!(
            holders, 1,
            "push returned with its piece still at the engine"
        );
        let mut whole = first.clone();
        whole.extend_from_slice(&second);
        assert_eq!(g.digest_with(b"").await.unwrap(), reference(&whole));
        return;
    }
    panic!("in 50 attempts the pieces never both went to the engine");
}
