//! `--format paths`: the removable duplicates, one path a line (`-0`: each followed by a NUL),
//! each written as its exact bytes, for `xargs -0 rm`.
//!
//! Listed: every name (the path and its hard-link aliases) of each cluster's `duplicates`, in
//! cluster order, then member order. Never listed: a representative (the copy that is kept), a
//! `linked` member (not verified against the representative), a record of a JSON Lines dump (its
//! path is the whole dump's), a document of the index scanned against (its path is from another
//! run, maybe relative to another directory), standard input (`-` names no file, and `xargs rm`
//! would remove a file of that name), nor a duplicate whose representative is standard input
//! (the copy kept is no file). With new lines as separators, a name holding a new
//! line would read as two names, one of which might be a file to keep: it is left out, with a
//! warning naming `-0`. Nothing is checked on disk: a duplicate of an indexed representative is
//! listed on the index's word that the kept copy exists, where `dupfind remove` first checks
//! that its path still holds that content (docs/output.md, Paths).

use std::io::Write;

use base64::Engine as _;

use super::clusters::MemberOut;
use super::model::Report;
use crate::input::stdin;
use crate::messages::escape_controls;

/// Writes the list (`null`: NUL after each name, else a new line) in one pass over the
/// clusters, and returns why duplicates were left out of it, as warnings (none for a full list).
pub fn write(report: &Report, null: bool, out: &mut dyn Write) -> anyhow::Result<Vec<String>> {
    let (mut records, mut indexed, mut stdin) = (0, 0, false);
    let mut of_stdin = 0;
    let mut with_new_line = Vec::new();
    report.clusters.each(|c| {
        // Standard input is no file: a duplicate kept in its favour would be the last copy.
        if c.kept && is_stdin(c.representative()) {
            of_stdin += c.duplicates.len() as u64;
            return Ok(());
        }
        for m in c.duplicates.iter().map(|d| c.member(d)) {
            if m.line().is_some() {
                records += 1;
                continue;
            } else if m.indexed {
                indexed += 1;
                continue;
            } else if is_stdin(m) {
                stdin = true;
                continue;
            }
            for name in names(m) {
                if !null && name.contains(&b'\n') {
                    with_new_line.push(name);
                    continue;
                }
                out.write_all(&name)?;
                out.write_all(if null { b"\0" } else { b"\n" })?;
            }
        }
        Ok(())
    })?;
    let mut warnings = Vec::new();
    if stdin {
        warnings.push(
            "--format paths: standard input (`-`) is a duplicate and is not listed: it names no \
             file, and `xargs rm` would remove a file named `-`"
                .to_string(),
        );
    }
    if of_stdin > 0 {
        warnings.push(format!(
            "--format paths: {} kept in favour of standard input not listed: the copy kept is \
             no file, so removing them would lose the content",
            count(of_stdin, "duplicate")
        ));
    }
    if records > 0 {
        warnings.push(format!(
            "--format paths: {} of JSON Lines dumps not listed (a path names the whole dump; \
             --write-dataset writes the dump without them)",
            count(records, "duplicate record")
        ));
    }
    if indexed > 0 {
        warnings.push(format!(
            "--format paths: {} of the index (--against) not listed",
            count(indexed, "duplicate document")
        ));
    }
    for name in with_new_line {
        warnings.push(format!(
            "--format paths: {} not listed: its name holds a new line (use -0)",
            escape_controls(&String::from_utf8_lossy(&name))
        ));
    }
    Ok(warnings)
}

/// True for the member read from standard input: a walked or listed file is never named `-`
/// alone (a list's `-` becomes `./-`).
fn is_stdin(m: &MemberOut) -> bool {
    &*m.path == stdin::NAME && m.more.as_ref().is_none_or(|x| x.path_bytes.is_none())
}

/// A member's path and its aliases, as their exact bytes.
fn names(m: &MemberOut) -> Vec<Vec<u8>> {
    let more = m.more.as_deref();
    let mut out = vec![exact(&m.path, more.and_then(|x| x.path_bytes.as_deref()))];
    if let Some(more) = more {
        for (i, alias) in more.aliases.iter().enumerate() {
            let bytes = (more.aliases_bytes.as_ref()).and_then(|b| b.get(i)?.as_deref());
            out.push(exact(alias, bytes));
        }
    }
    out
}

/// The exact bytes of a name: the base64 the report keeps of a lossy one, else its text.
fn exact(lossy: &str, base64: Option<&str>) -> Vec<u8> {
    // The report's own encoding of bytes it read: decoding cannot fail.
    (base64.and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok()))
        .unwrap_or_else(|| lossy.as_bytes().to_vec())
}

fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
