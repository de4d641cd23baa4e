//! `--format text`: the report for people reading in a terminal. One block per cluster, the
//! representative first (`keep`), then each duplicate with its similarity to it (`dup`), then
//! the members only linked to it through others (`link`), each followed by its other names if
//! it is hard-linked (`also`: `dupfind remove` removes them with it); unreadable inputs and a
//! one-line summary at the end, sizes in words and bytes. With `--containment` each duplicate shows how much of it is contained in
//! the representative. With `--pairs`, each verified pair follows (`pair`), with its evidence.
//! Names are escaped like warnings, so a file name cannot drive the terminal. Colour only when
//! asked (`--color`, decided in config). With `--keep none` a block has no `keep` line: every
//! member is a `dup`, with its similarity to its nearest member.

use std::io::{self, Write};

use super::clusters::{ClusterOut, DuplicateOut, MemberOut, PairOut};
use super::model::Report;
use crate::messages::{bytes_in_words, count, escape_controls};

const BOLD_GREEN: &str = "\x1b[1;32m";
const YELLOW: &str = "\x1b[33m";
const RED: &str = "\x1b[31m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// Writes the text form of `report`.
pub fn write(report: &Report, color: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    let paint = Paint(color);
    // New documents only: with --against, an indexed duplicate is no copy made by this run.
    let mut duplicates = 0u64;
    report.clusters.each(|c| {
        duplicates += (c.duplicates.iter())
            .filter(|d| !c.member(d).indexed)
            .count() as u64;
        Ok(write_cluster(report, c, paint, out)?)
    })?;
    for e in &report.errors {
        writeln!(
            out,
            "{}  {}: {}",
            paint.on(RED, "error"),
            match e.line {
                Some(line) => format!("{}:{line}", escape_controls(&e.path)),
                None => escape_controls(&e.path),
            },
            e.error
        )?;
    }
    let s = &report.stats;
    Ok(writeln!(
        out,
        "{}, {} among {} ({}), {} reclaimable; {} unreadable",
        count(report.clusters.len() as u64, "cluster"),
        count(duplicates, "duplicate"),
        count(s.documents, "document"),
        count(s.exact_groups, "exact group"),
        bytes_in_words(s.reclaimable_bytes),
        report.errors.len()
    )?)
}

/// ANSI colour, or none.
#[derive(Clone, Copy)]
struct Paint(bool);

impl Paint {
    fn on(self, code: &'static str, s: &str) -> String {
        if self.0 {
            format!("{code}{s}{RESET}")
        } else {
            s.to_string()
        }
    }
}

/// One cluster's block: a header line, the representative, its duplicates, its linked members.
fn write_cluster(
    report: &Report,
    c: &ClusterOut,
    paint: Paint,
    out: &mut dyn Write,
) -> io::Result<()> {
    let measure = if report.params.containment {
        "containment"
    } else {
        "similarity"
    };
    let header = format!(
        "cluster {} of {}: {} documents, {measure} {:.3} to {:.3}",
        c.id + 1,
        report.clusters.len(),
        c.size,
        c.min_similarity,
        c.max_similarity
    );
    writeln!(out, "{}", paint.on(DIM, &header))?;
    if c.kept {
        writeln!(
            out,
            "  {}  {}  {}",
            paint.on(BOLD_GREEN, "keep"),
            paint.on(BOLD_GREEN, &name(c.representative())),
            bytes_in_words(c.representative().bytes)
        )?;
        aliases(c.representative(), paint, out)?;
    }
    for d in &c.duplicates {
        let label = paint.on(YELLOW, "dup ");
        let s = similarity(d, c.kept);
        writeln!(out, "  {label}  {}  {s}", name(c.member(d)))?;
        aliases(c.member(d), paint, out)?;
    }
    for d in &c.linked {
        let label = paint.on(DIM, "link");
        let s = similarity(d, c.kept);
        writeln!(out, "  {label}  {}  {s}", name(c.member(d)))?;
        aliases(c.member(d), paint, out)?;
    }
    for p in &c.pairs {
        if let Some(evidence) = evidence(p) {
            let (a, b) = (&c.members[p.a as usize], &c.members[p.b as usize]);
            let label = paint.on(DIM, "pair");
            writeln!(out, "  {label}  {} ~ {}  {evidence}", name(a), name(b))?;
        }
    }
    writeln!(out)
}

/// A line for each other name of the member's file (its hard links in the roots), under its
/// path: what `dupfind remove` removes with it.
fn aliases(m: &MemberOut, paint: Paint, out: &mut dyn Write) -> io::Result<()> {
    for alias in m.more.as_ref().map_or(&[][..], |x| &x.aliases[..]) {
        let also = paint.on(DIM, "also");
        writeln!(out, "        {also} {} (same file)", escape_controls(alias))?;
    }
    Ok(())
}

/// `--pairs`' evidence for a pair: "similarity 0.833, jaccard 0.833, 410 shared shingles,
/// estimate 0.852, band 4" (SimHash: "hamming 2, cosine 0.995, piece 1"); None without
/// `--pairs`.
fn evidence(p: &PairOut) -> Option<String> {
    let m = p.more.as_deref()?;
    if m.estimate.is_none() && m.hamming.is_none() {
        return None;
    }
    let mut parts = vec![format!("similarity {:.3}", p.similarity)];
    if p.exact {
        parts.push("exact".to_string());
    }
    if let Some(c) = m.containment {
        parts.push(format!("containment {c:.3}"));
    }
    if let Some(j) = m.jaccard {
        parts.push(format!("jaccard {j:.3}"));
    }
    if let Some(n) = m.shared_shingles {
        parts.push(count(n, "shared shingle"));
    }
    if let Some(e) = m.edit_similarity {
        parts.push(format!("edit {e:.3}"));
    }
    if let Some(e) = m.estimate {
        parts.push(format!("estimate {e:.3}"));
    }
    if let Some(b) = m.band {
        parts.push(format!("band {b}"));
    }
    if let Some(h) = m.hamming {
        parts.push(format!("hamming {h}"));
    }
    if let Some(c) = m.cosine {
        parts.push(format!("cosine {c:.3}"));
    }
    if let Some(piece) = m.piece {
        parts.push(format!("piece {piece}"));
    }
    Some(parts.join(", "))
}

/// A member's path; a dump record's with its line and id: `dump.jsonl:12 (id a-17)`; an
/// indexed member's marked `[indexed]`.
fn name(m: &MemberOut) -> String {
    let path = escape_controls(&m.path);
    let name = match (m.line(), m.id()) {
        (Some(line), Some(id)) => format!("{path}:{line} (id {})", escape_controls(id)),
        (Some(line), None) => format!("{path}:{line}"),
        _ => path,
    };
    if m.indexed {
        format!("{name} [indexed]")
    } else {
        name
    }
}

/// "0.912", "1.000 exact", "0.953 distance 3", "~0.87 estimated"; with `--containment`,
/// "0.950 contained in keep" (the share of the duplicate found in the representative). With
/// `--keep none` (`kept` false) the similarity is to the member's nearest, and a containment
/// is that of the pair's smaller document: "0.950 containment".
fn similarity(d: &DuplicateOut, kept: bool) -> String {
    if d.exact {
        return "1.000 exact".to_string();
    }
    if d.containment.is_some() {
        let tilde = if d.estimated { "~" } else { "" };
        let what = if kept {
            "contained in keep"
        } else {
            "containment"
        };
        return format!("{tilde}{:.3} {what}", d.similarity);
    }
    match (d.distance, d.estimated) {
        (Some(dist), _) => format!("{:.3} distance {dist}", d.similarity),
        (None, true) => format!("~{:.3} estimated", d.similarity),
        (None, false) => format!("{:.3}", d.similarity),
    }
}
