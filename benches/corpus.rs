//! The benchmark corpus: a seeded generator, an exact Jaccard reference and a scorer.
//!
//! ```text
//! cargo run --release --example corpus -- gen --out DIR [--docs 10000] [--seed 1] [--families F]
//! cargo run --release --example corpus -- gen --jsonl FILE [--docs N] [--seed S] [--doc-kb 5]
//! cargo run --release --example corpus -- reference DIR > truth.tsv
//! cargo run --release --example corpus -- score --truth truth.tsv --root DIR --dupfind out.json
//! cargo run --release --example corpus -- score --truth truth.tsv --root DIR --pairs peer.tsv
//! ```
//!
//! `gen` writes English-like text (sentences drawn from a Zipf-weighted vocabulary of common
//! words) in ~5 KB files, 100 to a folder. About a third of the documents belong to
//! near-duplicate families: copies of a base document with a few words substituted (1–10 %),
//! sentences inserted or deleted, paragraphs swapped, headers and footers added, CRLF line ends,
//! or no change at all, sometimes edits of edits. `--families FILE` (keep it outside DIR) names
//! each file's family and edit.
//!
//! `--jsonl FILE` writes the same documents as one JSON Lines dump instead of a directory, one
//! record a line: `{"id":"0000/doc0000000.txt","text":"..."}` (the id is the file's name in the
//! directory form, so `--families` names records too). `--doc-kb N` scales the documents to
//! N KB on average (default 5: 2–8 KB each); with the same seed the corpus has the same
//! families and edits at every size.
//!
//! `reference` finds every pair with Jaccard ≥ t on exactly dupfind's shingling (it calls the
//! library's reader and shingler), by prefix filtering: order each set's shingles from rarest
//! to most common; two sets with J ≥ t must share one of the first |x| − ⌈t·|x|⌉ + 1 of each,
//! so only pairs sharing such a prefix shingle are compared, exactly. `--brute` compares every
//! pair instead (small corpora; the test below checks that both agree).
//!
//! `score` prints recall (the share of reference pairs whose two files end up in one reported
//! cluster, or are joined through the reported pairs) and precision (the share of reported
//! pairs whose exact Jaccard reaches t).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use rayon::prelude::*;

use dupfind::api::jaccard;
use dupfind::api::splitmix64;
use dupfind::api::{decode, Decoded};
use dupfind::api::{into_set, ShingleKind, Shingler};

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("corpus: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// `--name value` options after a subcommand.
struct Opts(HashMap<String, String>, Vec<String>);

impl Opts {
    fn parse(args: &[String]) -> Result<Opts> {
        let (mut named, mut free) = (HashMap::new(), Vec::new());
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if let Some(name) = a.strip_prefix("--") {
                if name == "brute" {
                    named.insert(name.to_string(), String::new());
                    continue;
                }
                let v = it
                    .next()
                    .with_context(|| format!("--{name} needs a value"))?;
                named.insert(name.to_string(), v.clone());
            } else {
                free.push(a.clone());
            }
        }
        Ok(Opts(named, free))
    }
    fn get<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T> {
        match self.0.get(name) {
            None => Ok(default),
            Some(v) => v.parse().ok().with_context(|| format!("bad --{name} {v}")),
        }
    }
    fn path(&self, name: &str) -> Result<PathBuf> {
        self.0
            .get(name)
            .map(PathBuf::from)
            .with_context(|| format!("--{name} is required"))
    }
}

fn run(args: Vec<String>) -> Result<()> {
    let Some((cmd, rest)) = args.split_first() else {
        bail!("usage: corpus gen|reference|score ... (see benches/corpus.rs)");
    };
    let o = Opts::parse(rest)?;
    let ngram = o.get("ngram", 5usize)?;
    let threshold = o.get("threshold", 0.8f64)?;
    match cmd.as_str() {
        "gen" => {
            let (out, sink) = match o.0.get("jsonl") {
                Some(file) => (PathBuf::from(file), Sink::Jsonl),
                None => (o.path("out")?, Sink::Files),
            };
            let families = o.0.get("families").map(PathBuf::from);
            let (docs, seed) = (o.get("docs", 10_000usize)?, o.get("seed", 1u64)?);
            let doc_kb = o.get("doc-kb", 5usize)?;
            if doc_kb == 0 {
                bail!("--doc-kb must be at least 1");
            }
            let shape = Shape { docs, seed, doc_kb };
            let stats = generate(&out, sink, families.as_deref(), shape)?;
            eprintln!(
                "corpus: wrote {} files, {} bytes to {}",
                stats.0,
                stats.1,
                out.display()
            );
            Ok(())
        }
        "reference" => {
            let root = PathBuf::from(o.1.first().context("reference needs a directory")?);
            let corpus = Corpus::load(&root, ngram)?;
            let pairs = if o.0.contains_key("brute") {
                corpus.brute_pairs(threshold)
            } else {
                corpus.prefix_pairs(threshold)
            };
            let mut w = BufWriter::new(std::io::stdout().lock());
            for (a, b, j) in pairs {
                writeln!(w, "{}\t{}\t{j:.6}", corpus.names[a], corpus.names[b])?;
            }
            w.flush()?;
            Ok(())
        }
        "score" => score(&o, ngram, threshold),
        other => bail!("unknown subcommand {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Generator

/// A seeded generator: the library's SplitMix64 stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        splitmix64(&mut self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// Common English words, roughly by frequency; drawn with Zipf weights 1/(rank+1).
const WORDS: &str = "the of and to a in is it you that he was for on are with as I his they be at \
one have this from or had by hot word but what some we can out other were all there when up use \
your how said an each she which do their time if will way about many then them write would like \
so these her long make thing see him two has look more day could go come did number sound no most \
people my over know water than call first who may down side been now find any new work part take \
get place made live where after back little only round man year came show every good me give our \
under name very through just form sentence great think say help low line differ turn cause much \
mean before move right boy old too same tell does set three want air well also play small end put \
home read hand port large spell add even land here must big high such follow act why ask men change \
went light kind off need house picture try us again animal point mother world near build self earth \
father head stand own page should country found answer school grow study still learn plant cover \
food sun four between state keep eye never last let thought city tree cross farm hard start might \
story saw far sea draw left late run don't while press close night real life few north open seem \
together next white children begin got walk example ease paper group always music those both mark \
often letter until mile river car feet care second book carry took science eat room friend began \
idea fish mountain stop once base hear horse cut sure watch color face wood main enough plain girl \
usual young ready above ever red list though feel talk bird soon body dog family direct pose leave \
song measure door product black short numeral class wind question happen complete ship area half \
rock order fire south problem piece told knew pass since top whole king space heard best hour better \
true during hundred five remember step early hold west ground interest reach fast verb sing listen \
six table travel less morning ten simple several vowel toward war lay against pattern slow center \
love person money serve appear road map rain rule govern pull cold notice voice unit power town fine \
certain fly fall lead cry dark machine note wait plan figure star box noun field rest correct able \
pound done beauty drive stood contain front teach week final gave green oh quick develop ocean warm \
free minute strong special mind behind clear tail produce fact street inch multiply nothing course \
stay wheel full force blue object decide surface deep moon island foot system busy test record boat \
common gold possible plane stead dry wonder laugh thousand ago ran check game shape equate miss \
brought heat snow tire bring yes distant fill east paint language among grand ball yet wave drop \
heart am present heavy dance engine position arm wide sail material size vary settle speak weight \
general ice matter circle pair include divide syllable felt perhaps pick sudden count square reason \
length represent art subject region energy hunt probable bed brother egg ride cell believe fraction \
forest sit race window store summer train sleep prove lone exercise wall catch mount wish sky board \
joy winter sat written wild instrument kept glass grass cow job edge sign visit past soft fun bright \
gas weather month million bear finish happy hope flower clothe strange gone jump baby eight village \
meet root buy raise solve metal whether push seven paragraph third shall held hair describe cook \
floor either result burn hill safe cat century consider type law bit coast copy phrase silent tall \
sand soil roll temperature finger industry value fight lie beat excite natural view sense ear else \
quite broke case middle kill son lake moment scale loud spring observe child straight consonant \
nation dictionary milk speed method organ pay age section dress cloud surprise quiet stone tiny \
climb cool design poor lot experiment bottom key iron single stick flat twenty skin smile crease \
hole trade melody trip office receive row mouth exact symbol die least trouble shout except wrote \
seed tone join suggest clean break lady yard rise bad blow oil blood touch grew cent mix team wire \
cost lost brown wear garden equal sent choose fell fit flow fair bank collect save control decimal";

struct Text {
    words: Vec<&'static str>,
    cumulative: Vec<f64>,
}

impl Text {
    fn new() -> Text {
        let words: Vec<&str> = WORDS.split_whitespace().collect();
        let mut total = 0.0;
        let cumulative = (0..words.len())
            .map(|r| {
                total += 1.0 / (r as f64 + 1.0);
                total
            })
            .collect();
        Text { words, cumulative }
    }

    fn word(&self, rng: &mut Rng) -> &'static str {
        let total = self.cumulative[self.cumulative.len() - 1];
        let x = (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * total;
        let i = self.cumulative.partition_point(|&c| c < x);
        self.words[i.min(self.words.len() - 1)]
    }

    fn sentence(&self, rng: &mut Rng) -> String {
        let n = rng.range(6, 22);
        let mut s = String::new();
        for i in 0..n {
            let w = self.word(rng);
            if i == 0 {
                let mut c = w.chars();
                if let Some(f) = c.next() {
                    s.extend(f.to_uppercase());
                    s.push_str(c.as_str());
                }
            } else {
                s.push(' ');
                s.push_str(w);
                if i + 1 < n && rng.chance(0.07) {
                    s.push(',');
                }
            }
        }
        s.push(match rng.below(10) {
            0 => '?',
            1 => '!',
            _ => '.',
        });
        s
    }

    /// Paragraphs of sentences, about `bytes` long.
    fn document(&self, rng: &mut Rng, bytes: usize) -> Vec<Vec<String>> {
        let mut doc = Vec::new();
        let mut len = 0;
        while len < bytes {
            let para: Vec<String> = (0..rng.range(3, 7)).map(|_| self.sentence(rng)).collect();
            len += para.iter().map(|s| s.len() + 1).sum::<usize>();
            doc.push(para);
        }
        doc
    }
}

fn render(doc: &[Vec<String>], crlf: bool) -> String {
    let nl = if crlf { "\r\n" } else { "\n" };
    let paras: Vec<String> = doc.iter().map(|p| p.join(" ")).collect();
    let mut s = paras.join(&format!("{nl}{nl}"));
    s.push_str(nl);
    s
}

/// One edit of a document, chosen at random; returns its name.
fn edit(text: &Text, rng: &mut Rng, doc: &mut Vec<Vec<String>>) -> &'static str {
    match rng.below(6) {
        0 | 1 => {
            // Substitute 1–10 % of the words.
            let rate = [0.01, 0.02, 0.05, 0.1][rng.below(4)];
            for para in doc.iter_mut() {
                for s in para.iter_mut() {
                    let words: Vec<String> = s
                        .split(' ')
                        .map(|w| {
                            if rng.chance(rate) {
                                text.word(rng).to_string()
                            } else {
                                w.to_string()
                            }
                        })
                        .collect();
                    *s = words.join(" ");
                }
            }
            "substitute"
        }
        2 => {
            for _ in 0..rng.range(1, 3) {
                let p = rng.below(doc.len());
                let at = rng.below(doc[p].len() + 1);
                doc[p].insert(at, text.sentence(rng));
            }
            "insert"
        }
        3 => {
            for _ in 0..rng.range(1, 3) {
                let p = rng.below(doc.len());
                if doc[p].len() > 1 {
                    let at = rng.below(doc[p].len());
                    doc[p].remove(at);
                }
            }
            "delete"
        }
        4 => {
            if doc.len() > 1 {
                let a = rng.below(doc.len());
                let b = rng.below(doc.len());
                doc.swap(a, b);
            }
            "reorder"
        }
        _ => {
            let header = format!(
                "From: archive-{}@example.org Subject: {} {}",
                rng.below(1000),
                text.word(rng),
                text.word(rng)
            );
            doc.insert(0, vec![header]);
            doc.push(vec![
                "-- Sent from the archive. Do not reply to this message.".into(),
            ]);
            "header"
        }
    }
}

/// Where the generated documents go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sink {
    /// One file per document, 100 to a folder, under a new directory.
    Files,
    /// One JSON Lines dump, one record per document.
    Jsonl,
}

/// What to generate.
struct Shape {
    docs: usize,
    seed: u64,
    /// Average document size in KB (documents are 0.4–1.6 times as long).
    doc_kb: usize,
}

/// Writes `docs` documents to `out`; returns (documents, text bytes).
fn generate(out: &Path, sink: Sink, families: Option<&Path>, shape: Shape) -> Result<(usize, u64)> {
    let Shape { docs, seed, doc_kb } = shape;
    let mut dump = match sink {
        Sink::Files => {
            if out.exists() && fs::read_dir(out)?.next().is_some() {
                bail!("{} exists and is not empty", out.display());
            }
            fs::create_dir_all(out)?;
            None
        }
        Sink::Jsonl => Some(BufWriter::new(
            fs::File::create(out).with_context(|| format!("creating {}", out.display()))?,
        )),
    };
    let text = Text::new();
    let mut rng = Rng(seed);
    let mut families: Box<dyn Write> = match families {
        Some(f) => Box::new(BufWriter::new(
            fs::File::create(f).with_context(|| format!("creating {}", f.display()))?,
        )),
        None => Box::new(std::io::sink()),
    };
    let (mut i, mut bytes, mut family) = (0usize, 0u64, 0usize);
    let mut write = |name_i: usize, body: &str, fam: usize, how: &str| -> Result<()> {
        let name = format!("{:04}/doc{name_i:07}.txt", name_i / 100);
        match dump.as_mut() {
            Some(w) => {
                serde_json::to_writer(&mut *w, &serde_json::json!({"id": name, "text": body}))?;
                w.write_all(b"\n")?;
            }
            None => {
                fs::create_dir_all(out.join(format!("{:04}", name_i / 100)))?;
                fs::write(out.join(&name), body).with_context(|| format!("writing {name}"))?;
            }
        }
        writeln!(families, "{name}\t{fam}\t{how}")?;
        bytes += body.len() as u64;
        Ok(())
    };
    while i < docs {
        let size = rng.range(2_000, 8_000) * doc_kb / 5;
        let base = text.document(&mut rng, size);
        write(i, &render(&base, false), family, "base")?;
        i += 1;
        // One document in eight starts a family of 1–6 more copies.
        if rng.chance(0.125) {
            let mut prev = base.clone();
            for _ in 0..rng.range(1, 6) {
                if i >= docs {
                    break;
                }
                // Edit the base or, sometimes, the previous copy (edits of edits: chains).
                let mut d = if rng.chance(0.3) {
                    prev.clone()
                } else {
                    base.clone()
                };
                let how = match rng.below(10) {
                    0 => "exact",
                    1 => "crlf",
                    _ => edit(&text, &mut rng, &mut d),
                };
                write(i, &render(&d, how == "crlf"), family, how)?;
                prev = d;
                i += 1;
            }
        }
        family += 1;
    }
    families.flush()?;
    if let Some(mut w) = dump {
        w.flush()?;
    }
    Ok((i, bytes))
}

// ---------------------------------------------------------------------------------------------
// Reference

/// Every `.txt` file under a root as a sorted shingle set.
struct Corpus {
    names: Vec<String>,
    sets: Vec<Vec<u64>>,
}

fn list(root: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for e in walkdir::WalkDir::new(root).sort_by_file_name() {
        let e = e?;
        if e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "txt") {
            let rel = e.path().strip_prefix(root)?;
            names.push(rel.to_string_lossy().into_owned());
        }
    }
    Ok(names)
}

fn shingle_set(path: &Path, ngram: usize) -> Result<Vec<u64>> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut set = Vec::new();
    if let Decoded::Text(t) = decode(&bytes) {
        Shingler::new(ShingleKind::Word, ngram).shingle(&t, &mut set);
        into_set(&mut set);
    }
    Ok(set)
}

impl Corpus {
    fn load(root: &Path, ngram: usize) -> Result<Corpus> {
        let names = list(root)?;
        let sets = names
            .par_iter()
            .map(|n| shingle_set(&root.join(n), ngram))
            .collect::<Result<Vec<_>>>()?;
        Ok(Corpus { names, sets })
    }

    fn brute_pairs(&self, t: f64) -> Vec<(usize, usize, f64)> {
        let n = self.sets.len();
        let mut pairs: Vec<_> = (0..n)
            .into_par_iter()
            .flat_map_iter(|a| {
                (a + 1..n).filter_map(move |b| {
                    let (x, y) = (&self.sets[a], &self.sets[b]);
                    if x.is_empty() || y.is_empty() {
                        return None;
                    }
                    let j = jaccard(x, y);
                    (j >= t).then_some((a, b, j))
                })
            })
            .collect();
        pairs.sort_by_key(|p| (p.0, p.1));
        pairs
    }

    fn prefix_pairs(&self, t: f64) -> Vec<(usize, usize, f64)> {
        let mut freq: HashMap<u64, u32> = HashMap::new();
        for s in &self.sets {
            for &h in s {
                *freq.entry(h).or_default() += 1;
            }
        }
        let prefixes: Vec<Vec<u64>> = self
            .sets
            .par_iter()
            .map(|s| {
                let mut order = s.clone();
                order.sort_by_key(|h| (freq[h], *h));
                // J ≥ t needs |x ∩ y| ≥ ⌈t·|x|⌉; the small epsilon keeps 0.8·5 = 4 from
                // rounding up to 5.
                let need = (t * s.len() as f64 - 1e-9).ceil() as usize;
                order.truncate(s.len() + 1 - need.max(1));
                order
            })
            .collect();
        let mut index: HashMap<u64, Vec<u32>> = HashMap::new();
        for (d, p) in prefixes.iter().enumerate() {
            for &h in p {
                index.entry(h).or_default().push(d as u32);
            }
        }
        let mut pairs: Vec<_> = (0..self.sets.len())
            .into_par_iter()
            .flat_map_iter(|a| {
                let mut others: Vec<u32> = prefixes[a]
                    .iter()
                    .flat_map(|h| index[h].iter().copied().filter(|&b| b as usize > a))
                    .collect();
                others.sort_unstable();
                others.dedup();
                let x = &self.sets[a];
                others
                    .into_iter()
                    .filter_map(|b| {
                        let y = &self.sets[b as usize];
                        let (lo, hi) = (x.len().min(y.len()), x.len().max(y.len()));
                        if (lo as f64) < t * hi as f64 - 1e-9 {
                            return None;
                        }
                        let j = jaccard(x, y);
                        (j >= t).then_some((a, b as usize, j))
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        pairs.sort_by_key(|p| (p.0, p.1));
        pairs
    }
}

// ---------------------------------------------------------------------------------------------
// Scoring

struct UnionFind(Vec<usize>);

impl UnionFind {
    fn find(&mut self, mut x: usize) -> usize {
        while self.0[x] != x {
            self.0[x] = self.0[self.0[x]];
            x = self.0[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        self.0[ra.max(rb)] = ra.min(rb);
    }
}

/// Reported pairs of relative paths, from dupfind's JSON or a peer's `a\tb` lines.
fn reported_pairs(o: &Opts, root: &Path) -> Result<Vec<(String, String)>> {
    let strip = |p: &str| -> String {
        Path::new(p)
            .strip_prefix(root)
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_else(|_| p.to_string())
    };
    if let Some(json) = o.0.get("dupfind") {
        let v: serde_json::Value = serde_json::from_slice(&fs::read(json)?)?;
        let mut out = Vec::new();
        for c in v["clusters"]
            .as_array()
            .context("no clusters in dupfind output")?
        {
            let members: Vec<String> = c["members"]
                .as_array()
                .context("no members")?
                .iter()
                .map(|m| strip(m["path"].as_str().unwrap_or("")))
                .collect();
            for p in c["pairs"].as_array().context("no pairs")? {
                let a = p["a"].as_u64().context("pair without a")? as usize;
                let b = p["b"].as_u64().context("pair without b")? as usize;
                out.push((members[a].clone(), members[b].clone()));
            }
        }
        Ok(out)
    } else {
        let text = fs::read_to_string(o.path("pairs")?)?;
        Ok(text
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(a, b)| (strip(a), strip(b)))
            .collect())
    }
}

fn score(o: &Opts, ngram: usize, t: f64) -> Result<()> {
    let root = o.path("root")?;
    let names = list(&root)?;
    let id: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let truth: Vec<(usize, usize)> = fs::read_to_string(o.path("truth")?)?
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            Some((*id.get(f.next()?)?, *id.get(f.next()?)?))
        })
        .collect();
    let reported = reported_pairs(o, &root)?;
    let mut uf = UnionFind((0..names.len()).collect());
    let mut pairs = Vec::with_capacity(reported.len());
    for (a, b) in &reported {
        match (id.get(a.as_str()), id.get(b.as_str())) {
            (Some(&x), Some(&y)) => {
                uf.union(x, y);
                pairs.push((x.min(y), x.max(y)));
            }
            _ => bail!("reported pair {a} / {b} is not in the corpus"),
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    let found = truth
        .iter()
        .filter(|&&(a, b)| uf.find(a) == uf.find(b))
        .count();
    let direct: HashSet<(usize, usize)> = pairs.iter().copied().collect();
    let found_direct = truth.iter().filter(|p| direct.contains(p)).count();
    let correct = pairs
        .par_iter()
        .filter(|&&(a, b)| {
            let x = shingle_set(&root.join(&names[a]), ngram).unwrap_or_default();
            let y = shingle_set(&root.join(&names[b]), ngram).unwrap_or_default();
            !x.is_empty() && !y.is_empty() && jaccard(&x, &y) >= t
        })
        .count();
    let ratio = |x: usize, n: usize| if n == 0 { 1.0 } else { x as f64 / n as f64 };
    println!(
        "recall={:.4} pair_recall={:.4} precision={:.4} truth_pairs={} reported_pairs={} missed={} false_pairs={}",
        ratio(found, truth.len()),
        ratio(found_direct, truth.len()),
        ratio(correct, pairs.len()),
        truth.len(),
        pairs.len(),
        truth.len() - found,
        pairs.len() - correct
    );
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
mod tests {
    use super::*;

    #[test]
    fn prefix_filtering_finds_exactly_the_brute_force_pairs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("c");
        generate(&root, Sink::Files, None, shape(400, 7)).unwrap();
        let corpus = Corpus::load(&root, 5).unwrap();
        for t in [0.5, 0.8, 0.9] {
            let brute = corpus.brute_pairs(t);
            assert!(brute.len() > 20, "the corpus has near-duplicates at {t}");
            assert_eq!(corpus.prefix_pairs(t), brute);
        }
    }

    fn shape(docs: usize, seed: u64) -> Shape {
        Shape {
            docs,
            seed,
            doc_kb: 5,
        }
    }

    #[test]
    fn jsonl_holds_the_same_documents_as_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let (root, dump) = (dir.path().join("c"), dir.path().join("c.jsonl"));
        let files = generate(&root, Sink::Files, None, shape(60, 5)).unwrap();
        assert_eq!(
            generate(&dump, Sink::Jsonl, None, shape(60, 5)).unwrap(),
            files
        );
        let text = fs::read_to_string(&dump).unwrap();
        let names = list(&root).unwrap();
        assert_eq!(text.lines().count(), names.len());
        for (line, name) in text.lines().zip(&names) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["id"], name.as_str());
            assert_eq!(
                v["text"],
                fs::read_to_string(root.join(name)).unwrap().as_str()
            );
        }
        let big = dir.path().join("big.jsonl");
        let (n, bytes) = generate(
            &big,
            Sink::Jsonl,
            None,
            Shape {
                doc_kb: 50,
                ..shape(60, 5)
            },
        )
        .unwrap();
        assert_eq!(n, 60);
        assert!(bytes > 8 * files.1, "{bytes} vs {}", files.1);
    }

    #[test]
    fn generator_is_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        generate(&dir.path().join("a"), Sink::Files, None, shape(50, 3)).unwrap();
        generate(&dir.path().join("b"), Sink::Files, None, shape(50, 3)).unwrap();
        for name in list(&dir.path().join("a")).unwrap() {
            assert_eq!(
                fs::read(dir.path().join("a").join(&name)).unwrap(),
                fs::read(dir.path().join("b").join(&name)).unwrap()
            );
        }
    }
}
