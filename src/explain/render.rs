//! `explain`'s text for a terminal: the S-curve drawn, the figures aligned.

use std::io::{self, Write};

use super::model::*;
use super::BUCKET_ENTRY_BYTES;
use crate::messages::count;

/// Writes the explanation for a terminal: aligned lines, a table of the curve with a bar of
/// `#`, then the notes and warnings.
pub fn render_text(e: &Explanation, out: &mut dyn Write) -> io::Result<()> {
    match &e.method {
        MethodExplanation::MinHash(m) => render_minhash(m, out)?,
        MethodExplanation::SimHash(s) => render_simhash(s, out)?,
    }
    if let Some(steps) = &e.normalize {
        writeln!(
            out,
            "\nnormalize    {steps}, in this order, then lowercase and tokens at white space"
        )?;
    }
    if !e.warnings.is_empty() || !e.notes.is_empty() {
        writeln!(out)?;
    }
    for n in &e.notes {
        writeln!(out, "note: {n}")?;
    }
    for w in &e.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}

fn render_minhash(m: &MinHashExplanation, out: &mut dyn Write) -> io::Result<()> {
    let (t, k, b, r) = (m.threshold, m.num_perm, m.bands, m.rows);
    let how = match m.given {
        Given::Neither => "chosen from the threshold",
        Given::Both if (b, r) == (m.chosen.bands, m.chosen.rows) => {
            "given, the banding the threshold chooses too"
        }
        Given::Both => "given",
        Given::Bands => "bands given, rows as many as fit in K",
        Given::Rows => "rows given, bands as many as fit in K",
    };
    let banding = format!("{} × {}", count(b as u64, "band"), count(r as u64, "row"));
    let values = match m.values_unused {
        0 => format!("all {k} in bands and in the similarity estimate"),
        n => format!(
            "{} of {k} in bands; all {k} in the similarity estimate ({n} only there)",
            m.values_used
        ),
    };
    write!(
        out,
        "MinHash, Jaccard threshold {t}, K = {k} signature values\n\
         banding      {banding}, {how}\n\
         values       {values}\n\
         at t         P({t}) = {:.6}\n\
         crossing     P(s) = 0.5 at s = {:.4}; (1/b)^(1/r) ≈ {:.4}\n\
         fp mass      {:.6}  ∫₀ᵗ P(s) ds, chance candidates\n\
         fn mass      {:.6}  ∫ₜ¹ (1 − P(s)) ds, missed pairs\n\
         prefilter    {:.4}  exact verification skips lower estimates\n\
         std. error   ±{:.4}  √(t(1 − t)/K), of the estimate at t\n\
         memory/doc   {}\n",
        m.at_threshold,
        m.crossing,
        m.crossing_approximation,
        m.false_positive_mass,
        m.false_negative_mass,
        m.estimate_floor,
        m.standard_error,
        memory_text(&m.memory, "signature"),
    )?;
    let mark = |s: f64| match s - t {
        x if x.abs() < 1e-6 => "← threshold",
        x if x < 0.0 => "← t − 0.05",
        _ => "← t + 0.05",
    };
    // The points near the threshold first, so that they win the dedup against the grid (both
    // are the nearest f64 to a multiple of 0.05, so equal when they coincide).
    let near = m
        .near_threshold
        .iter()
        .map(|p| (p.similarity, p.probability, mark(p.similarity)));
    let grid = m.curve.iter().map(|p| (p.similarity, p.probability, ""));
    let mut rows: Vec<_> = near.chain(grid).collect();
    rows.sort_by(|x, y| x.0.total_cmp(&y.0));
    rows.dedup_by(|later, earlier| later.0 == earlier.0);
    let rows = rows
        .into_iter()
        .map(|(s, p, mark)| (format!("{s:.2}"), p, mark));
    table(out, "similarity", rows)
}

fn render_simhash(s: &SimHashExplanation, out: &mut dyn Write) -> io::Result<()> {
    let (d, n) = (s.max_distance, s.docs);
    let ranges: Vec<String> = s
        .pieces
        .iter()
        .map(|p| format!("[{},{})", p.shift, p.shift + p.width))
        .collect();
    // Eight ranges a line: D = 31 has 32 pieces.
    let ranges: Vec<String> = ranges.chunks(8).map(|c| c.join(" ")).collect();
    write!(
        out,
        "SimHash, {}-bit fingerprints, max distance D = {d}\n\
         pieces       {} tables, bits {}\n\
         cosine       {:.4} at distance D, cos(π·D/64)\n\
         chance       ≤ {:.2} per document among N = {n} (union bound, (N − 1)·Σ 2^−width)\n\
         memory/doc   {}\n",
        s.bits,
        s.tables,
        ranges.join("\n             "),
        s.cosine_at_max_distance,
        s.chance_candidates_per_doc,
        memory_text(&s.memory, "fingerprint"),
    )?;
    let rows = s.curve.iter().map(|p| {
        let mark = if p.distance == d { "← D" } else { "" };
        (p.distance.to_string(), p.probability, mark)
    });
    table(out, "distance", rows)
}

/// The curve as rows of x, P and a bar of 40 `#` at P = 1, with an optional mark.
fn table<'a>(
    out: &mut dyn Write,
    head: &str,
    rows: impl Iterator<Item = (String, f64, &'a str)>,
) -> io::Result<()> {
    writeln!(out, "\n  {head:>10}  P(candidate)")?;
    for (x, p, mark) in rows {
        let bar = "#".repeat((p * 40.0).round() as usize);
        let row = format!("  {x:>10}  {p:.6}  {bar:<40}  {mark}");
        writeln!(out, "{}", row.trim_end())?;
    }
    Ok(())
}

fn memory_text(m: &Memory, what: &str) -> String {
    format!(
        "{what} {} B + buckets {} × {BUCKET_ENTRY_BYTES} B + overhead {} B = {} B + path, \
         kept per document (a run's peak per document: docs/scale.md)",
        m.signature_bytes, m.bucket_entries, m.overhead_bytes, m.total_bytes
    )
}
