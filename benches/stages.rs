//! Per-stage throughput, in bytes of input text per second, on seeded English-like documents.
//!
//! ```text
//! cargo bench --bench stages              every group
//! cargo bench --bench stages -- shingle   one group (tokenize, shingle, sketch, band, verify)
//! ```
//!
//! The end-to-end figures (reading files, exact verification, peers) come from
//! `benches/bench.sh`; these isolate the in-memory stages the library exposes.

use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use dupfind::buckets::Buckets;
use dupfind::lsh::{band_key, Banding};
use dupfind::minhash::{splitmix64, MinHasher, SketchKind};
use dupfind::shingle::{for_each_token, into_set, ShingleKind, Shingler};
use dupfind::simhash;
use dupfind::verify::{jaccard, jaccard_at_least};

const WORDS: &str = "the of and to a in is it you that he was for on are with as I his they be \
at one have this from or had by hot word but what some we can out other were all there when up \
use your how said an each she which do their time if will way about many then them write would \
like so these her long make thing see him two has look more day could go come did number sound \
no most people my over know water than call first who may down side been now find any new work \
part take get place made live where after back little only round man year came show every good \
me give our under name very through just form sentence great think say help low line differ \
turn cause much mean before move right boy old too same tell does set three want air well also \
play small end put home read hand port large spell add even land here must big high such follow \
act why ask men change went light kind off need house picture try us again animal point mother \
world near build self earth father head stand own page should country found answer school grow \
study still learn plant cover food sun four between state keep eye never last let thought city";

/// A seeded, reproducible stream: the library's SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        splitmix64(&mut self.0)
    }
}

/// `count` documents of about 5 KB: sentences of Zipf-weighted words with capitals and stops.
fn documents(count: usize, seed: u64) -> Vec<String> {
    let words: Vec<&str> = WORDS.split_whitespace().collect();
    let mut rng = Rng(seed);
    (0..count)
        .map(|_| {
            let mut doc = String::new();
            while doc.len() < 5_000 {
                let len = 6 + rng.next() % 15;
                for i in 0..len {
                    // Zipf-like: the square of a uniform index favours the first words.
                    let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
                    let w = words[((u * u) * words.len() as f64) as usize];
                    if i == 0 {
                        doc.push_str(&w[..1].to_uppercase());
                        doc.push_str(&w[1..]);
                    } else {
                        doc.push(' ');
                        doc.push_str(w);
                    }
                }
                doc.push_str(".\n");
            }
            doc
        })
        .collect()
}

/// A copy of `doc` with about one word in 50 replaced.
fn edited(doc: &str, seed: u64) -> String {
    let mut rng = Rng(seed);
    doc.split(' ')
        .map(|w| if rng.next() % 50 == 0 { "changed" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

fn bytes(docs: &[String]) -> u64 {
    docs.iter().map(|d| d.len() as u64).sum()
}

fn shingled(docs: &[String], kind: ShingleKind) -> Vec<Vec<u64>> {
    let mut s = Shingler::new(kind, 5);
    docs.iter()
        .map(|d| {
            let mut out = Vec::new();
            s.shingle(d, &mut out);
            out
        })
        .collect()
}

fn configure<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g
}

fn tokenize(c: &mut Criterion) {
    let docs = documents(200, 1);
    let mut g = configure(c, "tokenize");
    g.throughput(Throughput::Bytes(bytes(&docs)));
    g.bench_function("for_each_token", |b| {
        let mut scratch = Vec::new();
        b.iter(|| {
            let mut n = 0usize;
            for d in &docs {
                for_each_token(d, &mut scratch, |t| n += t.len());
            }
            black_box(n)
        })
    });
    g.finish();
}

fn shingle(c: &mut Criterion) {
    let docs = documents(200, 2);
    let mut g = configure(c, "shingle");
    g.throughput(Throughput::Bytes(bytes(&docs)));
    for (name, kind) in [("word5", ShingleKind::Word), ("char5", ShingleKind::Char)] {
        g.bench_function(name, |b| {
            let mut s = Shingler::new(kind, 5);
            let mut out = Vec::new();
            b.iter(|| {
                for d in &docs {
                    out.clear();
                    s.shingle(d, &mut out);
                }
                black_box(out.len())
            })
        });
    }
    g.finish();
}

fn sketch(c: &mut Criterion) {
    let docs = documents(200, 3);
    let mut g = configure(c, "sketch");
    g.throughput(Throughput::Bytes(bytes(&docs)));
    for (name, kind) in [("word5", ShingleKind::Word), ("char5", ShingleKind::Char)] {
        let sets = shingled(&docs, kind);
        for sk in [SketchKind::Oph, SketchKind::Kperm] {
            let hasher = MinHasher::new(sk, 128, 0);
            g.bench_function(BenchmarkId::new(sk.name(), name), |b| {
                let mut sig = vec![0u32; 128];
                let mut scratch = Vec::new();
                b.iter(|| {
                    for s in &sets {
                        hasher.sketch(s, &mut sig, &mut scratch);
                    }
                    black_box(sig[0])
                })
            });
        }
        g.bench_function(BenchmarkId::new("simhash", name), |b| {
            b.iter(|| {
                sets.iter()
                    .fold(0u64, |x, s| x ^ simhash::fingerprint(s, 0))
            })
        });
    }
    g.finish();
}

fn band(c: &mut Criterion) {
    // Signatures of 2,000 documents; throughput counts the text they came from.
    let docs = documents(2_000, 4);
    let sets = shingled(&docs, ShingleKind::Word);
    let hasher = MinHasher::new(SketchKind::Oph, 128, 0);
    let mut sigs = vec![0u32; sets.len() * 128];
    let mut scratch = Vec::new();
    for (s, sig) in sets.iter().zip(sigs.chunks_mut(128)) {
        hasher.sketch(s, sig, &mut scratch);
    }
    let banding = Banding::choose(0.8, 128, dupfind::lsh::RECALL_WEIGHT);
    let mut g = configure(c, "band");
    g.throughput(Throughput::Bytes(bytes(&docs)));
    g.bench_function("keys_and_buckets", |b| {
        b.iter(|| {
            let mut buckets = 0usize;
            for band in 0..banding.bands {
                let r = banding.rows;
                let entries: Vec<(u64, u32)> = sigs
                    .chunks(128)
                    .enumerate()
                    .map(|(d, sig)| (band_key(band, &sig[band * r..(band + 1) * r]), d as u32))
                    .collect();
                buckets += Buckets::from_keys(entries).len();
            }
            black_box(buckets)
        })
    });
    g.finish();
}

fn verify(c: &mut Criterion) {
    let docs = documents(100, 5);
    let copies: Vec<String> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| edited(d, i as u64))
        .collect();
    let mut a = shingled(&docs, ShingleKind::Word);
    let mut b = shingled(&copies, ShingleKind::Word);
    let mut g = configure(c, "verify");
    g.throughput(Throughput::Bytes(bytes(&docs) + bytes(&copies)));
    g.bench_function("into_set", |bench| {
        bench.iter(|| {
            let mut n = 0;
            for s in a.iter().chain(&b) {
                let mut v = s.clone();
                into_set(&mut v);
                n += v.len();
            }
            black_box(n)
        })
    });
    for s in a.iter_mut().chain(b.iter_mut()) {
        into_set(s);
    }
    g.bench_function("jaccard", |bench| {
        bench.iter(|| a.iter().zip(&b).map(|(x, y)| jaccard(x, y)).sum::<f64>())
    });
    g.bench_function("jaccard_at_least_0.8", |bench| {
        bench.iter(|| {
            a.iter()
                .zip(&b)
                .filter_map(|(x, y)| jaccard_at_least(x, y, 0.8))
                .count()
        })
    });
    g.finish();
}

criterion_group!(stages, tokenize, shingle, sketch, band, verify);
criterion_main!(stages);
