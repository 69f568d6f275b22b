//! Soak: two instances (one with a clock 5 minutes behind) and 16 clients doing PUT, overwrite,
//! GET, DELETE and multipart on a few shared keys for a bounded time. Every body names its
//! version and is checked byte for byte, so a torn or short read fails; and every read must be
//! allowed by linearizability: a version acknowledged before a client's own acknowledged write
//! to the same key started was overwritten by it, and may never be served to that client again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};

use crate::support::{self, random_bytes};

const KEYS: usize = 6;
const CLIENTS: usize = 16;
const DURATION: Duration = Duration::from_secs(20);
const MAX_OPS: usize = 150;

/// The body of version `(writer, seq)`: a header naming it, then bytes derived from it.
fn body(writer: usize, seq: usize) -> Vec<u8> {
    let len = 1000 + (writer * 7919 + seq * 104_729) % 150_000;
    let mut b = format!("v{writer}:{seq}:").into_bytes();
    b.extend(random_bytes(len, (writer * 100_000 + seq) as u64));
    b
}

fn version_of(b: &[u8]) -> Option<(usize, usize)> {
    let rest = b[..b.len().min(32)].strip_prefix(b"v")?;
    let i = rest.iter().position(|&c| c == b':')?;
    let w = std::str::from_utf8(&rest[..i]).ok()?.parse().ok()?;
    let rest = &rest[i + 1..];
    let j = rest.iter().position(|&c| c == b':')?;
    let s = std::str::from_utf8(&rest[..j]).ok()?.parse().ok()?;
    Some((w, s))
}

/// When each version's write started and was acknowledged (global operation counter).
#[derive(Default)]
struct History {
    started: HashMap<(usize, usize), u64>,
    acked: HashMap<(usize, usize), u64>,
}

#[test]
fn two_instances_sixteen_clients_no_torn_reads_no_lost_writes() {
    support::run(async {
        let a = support::gateway("soak").await;
        let b = support::gateway_with(a.db.name(), |c| c.test_clock_skew_ms = -300_000).await;
        a.sdk().create_bucket().bucket("soak").send().await.unwrap();
        let clock = Arc::new(AtomicU64::new(0));
        let history = Arc::new(Mutex::new(HashMap::<usize, History>::new()));
        let t0 = Instant::now();
        let mut tasks = Vec::new();
        for writer in 0..CLIENTS {
            let s3 = if writer % 2 == 0 { a.sdk() } else { b.sdk() };
            let (clock, history) = (clock.clone(), history.clone());
            tasks.push(tokio::spawn(async move {
                let mut counts = [0usize; 4];
                let mut multipart_done = false;
                // What this client last did to each key: (op start, Some(version) or None for
                // a delete), once acknowledged.
                let mut mine: HashMap<usize, u64> = HashMap::new();
                for seq in 0..MAX_OPS {
                    if t0.elapsed() > DURATION {
                        break;
                    }
                    let k = (writer * 31 + seq * 17) % KEYS;
                    let key = format!("k{k}");
                    let tick = || clock.fetch_add(1, Ordering::SeqCst);
                    match seq % 5 {
                        0 | 1 => {
                            let start = tick();
                            history.lock().unwrap().entry(k).or_default().started.insert((writer, seq), start);
                            let use_multipart = !multipart_done && seq > 20 && writer % 4 == 0;
                            if use_multipart {
                                multipart_done = true;
                                let data = body(writer, seq);
                                let mut big = data.clone();
                                big.extend(random_bytes(5 * 1024 * 1024 - data.len() % 1024, 1));
                                // The version header is in the first part; the full body is
                                // checked by length and header only for multipart versions.
                                let id = s3.create_multipart_upload().bucket("soak").key(&key).send().await.unwrap().upload_id().unwrap().to_owned();
                                let p1 = s3.upload_part().bucket("soak").key(&key).upload_id(&id).part_number(1).body(ByteStream::from(big)).send().await.unwrap();
                                let p2 = s3.upload_part().bucket("soak").key(&key).upload_id(&id).part_number(2).body(ByteStream::from_static(b"tail")).send().await.unwrap();
                                s3.complete_multipart_upload().bucket("soak").key(&key).upload_id(&id)
                                    .multipart_upload(CompletedMultipartUpload::builder()
                                        .parts(CompletedPart::builder().part_number(1).e_tag(p1.e_tag().unwrap()).build())
                                        .parts(CompletedPart::builder().part_number(2).e_tag(p2.e_tag().unwrap()).build())
                                        .build())
                                    .send().await.unwrap();
                                counts[3] += 1;
                            } else {
                                s3.put_object().bucket("soak").key(&key).body(ByteStream::from(body(writer, seq))).send().await.unwrap();
                                counts[0] += 1;
                            }
                            let ack = tick();
                            history.lock().unwrap().entry(k).or_default().acked.insert((writer, seq), ack);
                            mine.insert(k, start);
                        }
                        2 => {
                            let start = tick();
                            s3.delete_object().bucket("soak").key(&key).send().await.unwrap();
                            tick();
                            mine.insert(k, start);
                            counts[2] += 1;
                        }
                        _ => {
                            let got = s3.get_object().bucket("soak").key(&key).send().await;
                            counts[1] += 1;
                            let bytes = match got {
                                Ok(o) => o.body.collect().await.unwrap().into_bytes().to_vec(),
                                Err(e) => {
                                    assert_eq!(e.code(), Some("NoSuchKey"), "{e:?}");
                                    continue;
                                }
                            };
                            let v = version_of(&bytes).unwrap_or_else(|| panic!("unversioned body of {} bytes", bytes.len()));
                            let expect = body(v.0, v.1);
                            if bytes.len() == expect.len() {
                                assert!(bytes == expect, "torn read of {v:?}");
                            } else {
                                // A multipart version: its first bytes are the version's body.
                                assert!(bytes.len() > 5 * 1024 * 1024 && bytes[..expect.len()] == expect[..], "short or torn read of {v:?}: {} bytes", bytes.len());
                            }
                            let h = history.lock().unwrap();
                            let hk = h.get(&k).unwrap();
                            assert!(hk.started.contains_key(&v), "{v:?} was never written");
                            if let (Some(&my_start), Some(&acked)) = (mine.get(&k), hk.acked.get(&v)) {
                                assert!(
                                    acked > my_start,
                                    "client {writer} read {v:?} (acknowledged at {acked}) after its own write to k{k} that started at {my_start}: a lost write"
                                );
                            }
                        }
                    }
                }
                counts
            }));
        }
        let mut totals = [0usize; 4];
        for t in tasks {
            let c = t.await.unwrap();
            for i in 0..4 {
                totals[i] += c[i];
            }
        }
        println!(
            "soak: {} PUTs, {} GETs, {} DELETEs, {} multipart in {:.1} s",
            totals[0],
            totals[1],
            totals[2],
            totals[3],
            t0.elapsed().as_secs_f64()
        );
        // Alone it makes about 550 of each; on a 2-core machine that is compiling or running
        // other tests at the same time, far fewer. Enough to be no empty check either way.
        assert!(
            totals[0] > 10 && totals[1] > 10,
            "the soak did work: {totals:?}"
        );
        // A final acknowledged write per key is what both instances serve.
        for k in 0..KEYS {
            let key = format!("k{k}");
            let s3 = if k % 2 == 0 { b.sdk() } else { a.sdk() };
            s3.put_object()
                .bucket("soak")
                .key(&key)
                .body(ByteStream::from(body(99, k)))
                .send()
                .await
                .unwrap();
            for gw in [&a, &b] {
                let o = gw
                    .sdk()
                    .get_object()
                    .bucket("soak")
                    .key(&key)
                    .send()
                    .await
                    .unwrap();
                assert!(
                    o.body.collect().await.unwrap().into_bytes().as_ref() == body(99, k).as_slice()
                );
            }
        }
        // Nothing leaked once the janitor has run.
        assert!(
            support::eventually(20, || async {
                grids3::janitor::fsck::run(&a.state.store, false)
                    .await
                    .unwrap()
                    .problems()
                    == 0
            })
            .await
        );
    });
}
