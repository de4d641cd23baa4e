//! `dupfind remove`, `move` and `link`: act on a JSON report's duplicates, each checked first to
//! be the file the report describes.
//!
//! Acted on: the `duplicates` of each cluster that are files this scan read (each with every
//! name, its path and its aliases). Never: a representative, a `linked` member, a record of a
//! JSON Lines dump, an indexed document or standard input; `link` only an `exact` duplicate,
//! byte-identical as stored, on its representative's file system. Before a file is touched, its
//! names are reached beneath their root ([`fs`]) and its status (device, inode, size,
//! modification time, number of names) and content hash must be the report's; the
//! representative's too for `link`. A file that differs is skipped, with a warning.
//!
//! stdout gets one line per action, as a shell command (`rm`, `mv -n`, `ln -f`): what was done,
//! or with `--dry-run` what would be (every check is made, nothing is changed). stderr gets the
//! warnings and a summary. The exit status is 2 when a file was skipped because it changed
//! since the scan, or an action failed; members left alone by the rules above are only noted.

pub mod fs;
pub mod report;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::exit::ExitCode;
use crate::messages::display_path;
use report::{Cluster, Member};

/// What to do with each duplicate.
#[derive(Clone, Debug)]
pub enum Action {
    /// Remove it.
    Remove,
    /// Move it to this directory, at its path below its root.
    Move(PathBuf),
    /// Replace it by a hard link to its representative.
    Link,
}

/// A command acting on a report.
#[derive(Clone, Debug)]
pub struct Options {
    /// The action.
    pub action: Action,
    /// The JSON report (`-`: standard input).
    pub report: PathBuf,
    /// Check everything and print the plan, change nothing.
    pub dry_run: bool,
}

/// What became of the duplicates.
#[derive(Debug, Default)]
struct Tally {
    files: u64,
    names: u64,
    freed: u64,
    /// Skipped because they differ from the report.
    changed: u64,
    /// Whose action failed.
    failed: u64,
    /// Left alone by rule (not a file this scan read, not an exact copy, …).
    left: u64,
}

/// Why a member was not acted on.
#[derive(Clone)]
enum Problem {
    /// It (or the representative) is not the file the report describes.
    Changed(String),
    /// The action failed.
    Failed(String),
    /// A rule leaves it alone.
    Left(String),
}

/// A member found as the report describes it.
struct Checked {
    /// Its path as the report gives it.
    path: PathBuf,
    places: Vec<fs::Place>,
    id: (u64, u64),
    raw: Vec<u8>,
    /// The bytes freed once every name is gone: its bytes on disk, when the names the report
    /// lists are all it has.
    frees: u64,
}

/// Runs the command; the action lines go to `out`.
pub fn run(opts: &Options, out: &mut dyn Write) -> Result<ExitCode> {
    let acting = report::read(&opts.report)?;
    let mut tally = Tally::default();
    for cluster in &acting.clusters {
        let mut rep: Option<Result<Checked, Problem>> = None;
        for d in &cluster.duplicates {
            let m = &d.member;
            let shown = display_path(&m.names[0]);
            let outcome = if let Some(what) = m.not_a_file {
                Err(Problem::Left(format!("not acted on: it is {what}")))
            } else if matches!(opts.action, Action::Link) && !d.exact {
                Err(Problem::Left(
                    "not linked: its content is not identical to the representative's".into(),
                ))
            } else {
                // Every action checks first that the kept copy is still there as the report
                // describes it: removing a duplicate of a file deleted or rewritten since the
                // scan would lose the last copy. With --keep none nothing is kept: remove and
                // move take the whole cluster, as the report lists it.
                let rep = match (&opts.action, &cluster.representative) {
                    (Action::Link, _) | (_, Some(_)) => Some(
                        rep.get_or_insert_with(|| representative(opts, &acting.roots, cluster))
                            .as_ref(),
                    ),
                    (_, None) => None,
                };
                match rep {
                    Some(Err(p)) => Err(p.clone()),
                    Some(Ok(r)) if matches!(opts.action, Action::Link) => {
                        act(opts, &acting.roots, m, Some(r), out)
                    }
                    _ => act(opts, &acting.roots, m, None, out),
                }
            };
            match outcome {
                Ok(c) => {
                    tally.files += 1;
                    tally.names += m.names.len() as u64;
                    tally.freed += c;
                }
                Err(Problem::Changed(why)) => {
                    tally.changed += 1;
                    eprintln!("dupfind: {shown}: skipped: {why}");
                }
                Err(Problem::Failed(why)) => {
                    tally.failed += 1;
                    eprintln!("dupfind: {shown}: {why}");
                }
                Err(Problem::Left(why)) => {
                    tally.left += 1;
                    eprintln!("dupfind: note: {shown}: {why}");
                }
            }
        }
    }
    out.flush()?;
    eprintln!("dupfind: {}", summary(opts, &tally));
    Ok(if tally.changed + tally.failed > 0 {
        ExitCode::Error
    } else {
        ExitCode::Success
    })
}

/// The representative of `cluster`, checked: the copy kept must still be the file the report
/// describes before any of its duplicates is acted on.
fn representative(
    opts: &Options,
    roots: &[PathBuf],
    cluster: &Cluster,
) -> Result<Checked, Problem> {
    let Some(rep) = &cluster.representative else {
        let why = "not linked: no member is kept (--keep none)";
        return Err(Problem::Left(why.into()));
    };
    if let Some(what) = rep.not_a_file {
        let why = match opts.action {
            Action::Link => format!("not linked: its representative is {what}"),
            _ => format!(
                "not acted on: its representative is {what}, not a file this scan read, so \
                 the kept copy cannot be checked"
            ),
        };
        return Err(Problem::Left(why));
    }
    let shown = display_path(&rep.names[0]);
    check(roots, rep).map_err(|p| match p {
        Problem::Changed(why) => Problem::Changed(format!("its representative {shown} {why}")),
        Problem::Failed(why) => Problem::Failed(format!("its representative {shown}: {why}")),
        Problem::Left(why) => Problem::Left(format!("its representative {shown}: {why}")),
    })
}

/// Finds `m`'s names beneath their roots and checks they are the file the report describes.
fn check(roots: &[PathBuf], m: &Member) -> Result<Checked, Problem> {
    let Some((file, hash)) = &m.file else {
        return Err(Problem::Left(
            "not acted on: the report has no `file` for it".into(),
        ));
    };
    let mut places = Vec::with_capacity(m.names.len());
    for name in &m.names {
        let shown = display_path(name);
        places.push(
            fs::place(roots, name).map_err(|why| Problem::Changed(format!("{shown} {why}")))?,
        );
    }
    let st = fs::stat(&places[0]).map_err(Problem::Changed)?;
    if let Some(why) = fs::differs(&st, file) {
        return Err(Problem::Changed(format!("{why} since the scan")));
    }
    let id = fs::id(&st);
    for (p, name) in places.iter().zip(&m.names).skip(1) {
        let same = fs::stat(p).is_ok_and(|s| fs::id(&s) == id);
        if !same {
            let why = format!(
                "its other name {} no longer leads to it",
                display_path(name)
            );
            return Err(Problem::Changed(why));
        }
    }
    let (raw, now) = fs::read(&places[0], id, m.bytes).map_err(Problem::Changed)?;
    if now != *hash {
        return Err(Problem::Changed(
            "its content changed since the scan".into(),
        ));
    }
    let all_names = file.links as usize == m.names.len();
    Ok(Checked {
        path: m.names[0].clone(),
        places,
        id,
        raw,
        frees: if all_names { file.disk_bytes } else { 0 },
    })
}

/// Checks `m` and acts on each of its names; the bytes freed.
fn act(
    opts: &Options,
    roots: &[PathBuf],
    m: &Member,
    rep: Option<&Checked>,
    out: &mut dyn Write,
) -> Result<u64, Problem> {
    let c = check(roots, m)?;
    let failed = |why: String| Problem::Failed(why);
    if let Some(r) = rep {
        if r.id.0 != c.id.0 {
            return Err(Problem::Left(
                "not linked: on another file system than its representative".into(),
            ));
        }
        if r.raw != c.raw {
            return Err(Problem::Left(
                "not linked: not byte-identical to its representative as stored (compressed \
                 differently?)"
                    .into(),
            ));
        }
    }
    for (place, name) in c.places.iter().zip(&m.names) {
        let line = match (&opts.action, rep) {
            (Action::Remove, _) => {
                if !opts.dry_run {
                    fs::remove(place, c.id).map_err(failed)?;
                }
                format!("rm -- {}", quote(name))
            }
            (Action::Move(to), _) => {
                let dest = to.join(&place.below_root);
                let exists = || {
                    failed(format!(
                        "not moved: {} exists: not overwritten",
                        display_path(&dest)
                    ))
                };
                if opts.dry_run && fs::exists(&dest) {
                    return Err(exists());
                }
                if !opts.dry_run {
                    fs::move_to(place, c.id, &dest, &c.raw).map_err(|why| {
                        failed(format!("not moved to {}: {why}", display_path(&dest)))
                    })?;
                }
                format!("mv -n -- {} {}", quote(name), quote(&dest))
            }
            (Action::Link, Some(r)) => {
                if !opts.dry_run {
                    fs::link_to(place, c.id, &r.places[0], r.id).map_err(failed)?;
                }
                format!("ln -f -- {} {}", quote(&r.path), quote(name))
            }
            (Action::Link, None) => return Err(Problem::Left("nothing to link to".into())),
        };
        writeln!(out, "{line}").map_err(|e| failed(e.to_string()))?;
    }
    Ok(c.frees)
}

/// The summary line: what was done (or would be), and what was not.
fn summary(opts: &Options, t: &Tally) -> String {
    let verb = match (&opts.action, opts.dry_run) {
        (Action::Remove, false) => "removed",
        (Action::Remove, true) => "would remove",
        (Action::Move(_), false) => "moved",
        (Action::Move(_), true) => "would move",
        (Action::Link, false) => "linked",
        (Action::Link, true) => "would link",
    };
    let freed = if opts.dry_run { "to free" } else { "freed" };
    let mut s = format!(
        "{verb} {} ({}), {} bytes {freed}",
        count(t.files, "file"),
        count(t.names, "name"),
        t.freed
    );
    if t.changed > 0 {
        s += &format!("; {} skipped: changed since the scan", t.changed);
    }
    if t.failed > 0 {
        s += &format!("; {} failed", t.failed);
    }
    if t.left > 0 {
        s += &format!("; {} left alone", t.left);
    }
    s
}

fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A name for a POSIX shell, as its exact bytes: single-quoted, or with a control character in
/// it, `$'…'` with octal escapes, so that each action stays on one line.
pub fn quote(name: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = name.as_os_str().as_bytes();
    if !bytes.iter().any(|&b| b < 0x20 || b == 0x7f) {
        let text = String::from_utf8_lossy(bytes);
        if std::str::from_utf8(bytes).is_ok() {
            return format!("'{}'", text.replace('\'', r"'\''"));
        }
    }
    let mut s = String::from("$'");
    for &b in bytes {
        match b {
            b'\'' => s.push_str(r"\'"),
            b'\\' => s.push_str(r"\\"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\{b:03o}")),
        }
    }
    s.push('\'');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_for_a_shell_on_one_line() {
        assert_eq!(quote(Path::new("a b.txt")), "'a b.txt'");
        assert_eq!(quote(Path::new("it's")), r"'it'\''s'");
        assert_eq!(quote(Path::new("two\nlines")), r"$'two\012lines'");
        use std::os::unix::ffi::OsStrExt;
        let latin1 = Path::new(std::ffi::OsStr::from_bytes(b"caf\xe9"));
        assert_eq!(quote(latin1), r"$'caf\351'");
    }
}
