//! Per-stage throughput, in bytes of input text per second, on seeded English-like documents.
//!
//! ```text
//! cargo bench --bench stages              every group
//! cargo bench --bench stages -- shingle   one group (tokenize, shingle, sketch, band, verify,
//!                                         end_to_end_in_memory)
//! ```
//!
//! Every group reports MB/s of the text its input came from, even where the stage consumes
//! shingles or signatures, so the figures add up along the pipeline. Inputs are 200 documents of
//! about 5 KB (1 MB) from a fixed seed; `band` takes 2,000 documents' signatures because a
//! signature is only 512 bytes. The end-to-end figures (reading files, exact verification,
//! peers) come from `benches/bench.sh`; these isolate the in-memory stages the library exposes.

use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    black_box, criterion_group, criterion_main, BatchSize, BenchmarkGroup, BenchmarkId, Criterion,
    Throughput,
};

use dupfind::api::simhash;
use dupfind::api::Buckets;
use dupfind::api::{band_key, Banding, RECALL_WEIGHT};
use dupfind::api::{for_each_token, into_set, ShingleKind, Shingler};
use dupfind::api::{jaccard, jaccard_at_least};
use dupfind::api::{splitmix64, MinHasher, SketchKind};

/// The command line's defaults: 5-word shingles, 128 values, threshold 0.8.
const NGRAM: usize = 5;
const K: usize = 128;
const THRESHOLD: f64 = 0.8;

/// About 340 common English words, roughly in frequency order: the generator's rank 1 first.
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
study still learn plant cover food sun four between state keep eye never last let thought city \
tree cross farm hard start might story saw far sea draw left late run while press close night \
real life few north open seem together next white children begin got walk example ease paper \
group always music those both mark often letter until mile river car feet care second book \
carry took science eat room friend began idea fish mountain stop once base hear horse cut sure \
watch color face wood main enough plain girl usual young ready above ever red list though feel \
talk bird soon body dog family direct pose leave song measure door product black short numeral \
class wind question happen complete ship area half rock order fire south problem piece told";

/// A seeded, reproducible stream: the library's SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        splitmix64(&mut self.0)
    }

    /// Uniform in [0, 1) from the top 53 bits.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability 1/n.
    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }
}

/// Draws words with a Zipf–Mandelbrot skew, weight 1/(rank + 2.7): "the" about 6% of the text,
/// as in English, and the tail still common enough that 5-word shingles rarely repeat.
struct Vocabulary {
    words: Vec<&'static str>,
    /// Cumulative weights, the last one 1.
    cdf: Vec<f64>,
}

impl Vocabulary {
    fn new() -> Self {
        let words: Vec<&str> = WORDS.split_whitespace().collect();
        let weights: Vec<f64> = (1..=words.len()).map(|r| 1.0 / (r as f64 + 2.7)).collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let cdf = weights
            .iter()
            .map(|w| {
                acc += w / total;
                acc
            })
            .collect();
        Vocabulary { words, cdf }
    }

    fn pick(&self, rng: &mut Rng) -> &'static str {
        let u = rng.unit();
        let i = self.cdf.partition_point(|&c| c <= u);
        self.words[i.min(self.words.len() - 1)]
    }
}

/// `count` documents of about 5 KB: sentences of 6–20 words with a capital, an occasional comma
/// and a full stop, question or exclamation mark, in paragraphs of about five sentences.
fn documents(count: usize, seed: u64) -> Vec<String> {
    let vocab = Vocabulary::new();
    let mut rng = Rng(seed);
    (0..count)
        .map(|_| {
            let mut doc = String::with_capacity(5_200);
            while doc.len() < 5_000 {
                let len = 6 + rng.next() % 15;
                for i in 0..len {
                    let w = vocab.pick(&mut rng);
                    if i == 0 {
                        doc.push_str(&w[..1].to_uppercase());
                        doc.push_str(&w[1..]);
                    } else {
                        doc.push(' ');
                        doc.push_str(w);
                        if i + 1 < len && rng.one_in(12) {
                            doc.push(',');
                        }
                    }
                }
                doc.push(match rng.next() % 10 {
                    0 => '?',
                    1 => '!',
                    _ => '.',
                });
                doc.push_str(if rng.one_in(5) { "\n\n" } else { " " });
            }
            doc
        })
        .collect()
}

/// A near-duplicate of `doc`: about one space-separated word in 60 replaced by another word, so
/// 5-word shingle sets keep a Jaccard similarity of about 0.85.
fn edited(doc: &str, seed: u64) -> String {
    let vocab = Vocabulary::new();
    let mut rng = Rng(seed ^ 0xED17);
    doc.split(' ')
        .map(|w| {
            if rng.one_in(60) {
                vocab.pick(&mut rng)
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn bytes(docs: &[String]) -> u64 {
    docs.iter().map(|d| d.len() as u64).sum()
}

/// Every document's shingles, with repeats, in text order (what `Shingler::shingle` gives).
fn shingled(docs: &[String], kind: ShingleKind) -> Vec<Vec<u64>> {
    let mut s = Shingler::new(kind, NGRAM);
    docs.iter()
        .map(|d| {
            let mut out = Vec::new();
            s.shingle(d, &mut out);
            out
        })
        .collect()
}

fn as_sets(mut shingles: Vec<Vec<u64>>) -> Vec<Vec<u64>> {
    shingles.iter_mut().for_each(into_set);
    shingles
}

/// Short runs, so the whole bench takes a few minutes on two cores: 20 samples over 3 s.
fn group<'a>(c: &'a mut Criterion, name: &str, input: u64) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Bytes(input));
    g
}

fn tokenize(c: &mut Criterion) {
    let docs = documents(200, 1);
    let mut g = group(c, "tokenize", bytes(&docs));
    g.bench_function("for_each_token", |b| {
        let mut scratch = Vec::new();
        b.iter(|| {
            let mut tokens = 0usize;
            for d in &docs {
                for_each_token(d, &mut scratch, |t| {
                    black_box(t);
                    tokens += 1;
                });
            }
            tokens
        })
    });
    g.finish();
}

fn shingle(c: &mut Criterion) {
    let docs = documents(200, 2);
    let mut g = group(c, "shingle", bytes(&docs));
    for (name, kind) in [("word5", ShingleKind::Word), ("char5", ShingleKind::Char)] {
        g.bench_function(name, |b| {
            let mut s = Shingler::new(kind, NGRAM);
            let mut out = Vec::new();
            b.iter(|| {
                let mut total = 0;
                for d in &docs {
                    out.clear();
                    s.shingle(d, &mut out);
                    total += out.len();
                }
                total
            })
        });
    }
    g.finish();
}

fn sketch(c: &mut Criterion) {
    let docs = documents(200, 3);
    let mut g = group(c, "sketch", bytes(&docs));
    for (name, kind) in [("word5", ShingleKind::Word), ("char5", ShingleKind::Char)] {
        // As in `doc`: OPH takes the raw shingles (one mix per shingle, repeats cost nothing
        // extra); K-permutation takes the deduplicated set, since it pays K multiplies per input.
        let raw = shingled(&docs, kind);
        let sets = as_sets(raw.clone());
        for (sk, input) in [(SketchKind::Oph, &raw), (SketchKind::Kperm, &sets)] {
            let hasher = MinHasher::new(sk, K, 0);
            g.bench_function(BenchmarkId::new(sk.name(), name), |b| {
                let mut sig = vec![0u32; K];
                let mut scratch = Vec::new();
                b.iter(|| {
                    let mut x = 0u32;
                    for s in input {
                        hasher.sketch(s, &mut sig, &mut scratch);
                        x ^= sig[0];
                    }
                    x
                })
            });
        }
        // Sorted but not deduplicated: a repeated shingle weighs its count.
        let mut sorted = raw;
        sorted.iter_mut().for_each(|s| s.sort_unstable());
        g.bench_function(BenchmarkId::new("simhash", name), |b| {
            b.iter(|| {
                sorted
                    .iter()
                    .fold(0u64, |x, s| x ^ simhash::fingerprint(s, 0))
            })
        });
    }
    g.finish();
}

fn band(c: &mut Criterion) {
    // Signatures of 2,000 documents (10 MB of text), cut as a default scan cuts them.
    let docs = documents(2_000, 4);
    let hasher = MinHasher::new(SketchKind::Oph, K, 0);
    let mut sigs = vec![0u32; docs.len() * K];
    let mut scratch = Vec::new();
    for (s, sig) in shingled(&docs, ShingleKind::Word)
        .iter()
        .zip(sigs.chunks_mut(K))
    {
        hasher.sketch(s, sig, &mut scratch);
    }
    let banding = Banding::choose(THRESHOLD, K, RECALL_WEIGHT);
    let r = banding.rows;
    let mut g = group(c, "band", bytes(&docs));
    let keys = |band: usize| -> Vec<(u64, u32)> {
        sigs.chunks(K)
            .enumerate()
            .map(|(d, sig)| (band_key(band, &sig[band * r..(band + 1) * r]), d as u32))
            .collect()
    };
    g.bench_function(BenchmarkId::new("band_key", banding.bands), |b| {
        b.iter(|| (0..banding.bands).map(|i| keys(i).len()).sum::<usize>())
    });
    g.bench_function(BenchmarkId::new("from_keys", banding.bands), |b| {
        b.iter_batched(
            || (0..banding.bands).map(keys).collect::<Vec<_>>(),
            |tables| {
                tables
                    .into_iter()
                    .map(|t| Buckets::from_keys(t).len())
                    .sum::<usize>()
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn verify(c: &mut Criterion) {
    let docs = documents(200, 5);
    let copies: Vec<String> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| edited(d, i as u64))
        .collect();
    let raw: Vec<Vec<u64>> = shingled(&docs, ShingleKind::Word)
        .into_iter()
        .chain(shingled(&copies, ShingleKind::Word))
        .collect();
    let sets = as_sets(raw.clone());
    let (a, b) = sets.split_at(docs.len());
    let mean = a.iter().zip(b).map(|(x, y)| jaccard(x, y)).sum::<f64>() / a.len() as f64;
    assert!(
        (0.8..0.95).contains(&mean),
        "near-duplicates should sit just above the threshold, mean Jaccard {mean}"
    );

    let mut g = group(c, "verify", bytes(&docs) + bytes(&copies));
    // Character sets are about five times the word sets of the same text.
    let char_raw: Vec<Vec<u64>> = shingled(&docs, ShingleKind::Char)
        .into_iter()
        .chain(shingled(&copies, ShingleKind::Char))
        .collect();
    for (name, input) in [("word5", &raw), ("char5", &char_raw)] {
        g.bench_function(BenchmarkId::new("into_set", name), |bench| {
            bench.iter_batched(
                || input.clone(),
                |mut all| {
                    all.iter_mut().for_each(into_set);
                    all
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.bench_function("jaccard", |bench| {
        bench.iter(|| a.iter().zip(b).map(|(x, y)| jaccard(x, y)).sum::<f64>())
    });
    g.bench_function(BenchmarkId::new("jaccard_at_least", THRESHOLD), |bench| {
        bench.iter(|| {
            a.iter()
                .zip(b)
                .filter_map(|(x, y)| jaccard_at_least(x, y, THRESHOLD))
                .count()
        })
    });
    g.finish();
}

/// The in-memory part of a default scan's per-document work: word shingles, then an OPH
/// signature (no read, decode, content hash or kept set).
fn end_to_end_in_memory(c: &mut Criterion) {
    let docs = documents(200, 6);
    let mut g = group(c, "end_to_end_in_memory", bytes(&docs));
    for sk in [SketchKind::Oph, SketchKind::Kperm] {
        let hasher = MinHasher::new(sk, K, 0);
        g.bench_function(BenchmarkId::new("word5", sk.name()), |b| {
            let mut shingler = Shingler::new(ShingleKind::Word, NGRAM);
            let (mut shingles, mut scratch) = (Vec::new(), Vec::new());
            let mut sig = vec![0u32; K];
            b.iter(|| {
                let mut x = 0u32;
                for d in &docs {
                    shingles.clear();
                    shingler.shingle(d, &mut shingles);
                    if sk == SketchKind::Kperm {
                        into_set(&mut shingles);
                    }
                    hasher.sketch(&shingles, &mut sig, &mut scratch);
                    x ^= sig[0];
                }
                x
            })
        });
    }
    g.finish();
}

criterion_group!(
    stages,
    tokenize,
    shingle,
    sketch,
    band,
    verify,
    end_to_end_in_memory
);
criterion_main!(stages);
