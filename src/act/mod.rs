//! `dupfind remove`, `move` and `link`: act on a JSON report's duplicates, each checked first to
//! be the file the report describes.
//!
//! Acted on: the `duplicates` of each cluster that are files this scan read (each with every
//! name, its path and its aliases). Never: a representative, a `linked` member, a record of a
//! JSON Lines dump, an indexed document or standard input; `link` only an `exact` duplicate,
//! byte-identical as stored, on its representative's file system. Before a file is touched, its
//! names are reached beneath their root ([`fs`]) and its status (device, inode, size,
//! modification time, number of names) and content hash must be the report's; its
//! representative's too, first: a duplicate whose kept copy is gone or changed is skipped. An
//! indexed representative (`--against`) is known by its path and content hash only: it is the
//! kept copy for `remove` and `move` while that path holds that content. A file that differs is
//! skipped, with a warning.
//!
//! stdout gets one line per step, as a shell command (`rm`, `mv -n`, `ln -f`; `cp -p -n`, `ln`
//! and `rm` for a hard-linked file moved to another file system): what was done, or with
//! `--dry-run` what would be (every check is made, nothing is changed). stderr gets the
//! warnings and a summary. The exit status is 2 when a file was skipped because it changed
//! since the scan, or an action failed; members left alone by the rules above are only noted.
//! Ctrl-C stops the run between two files, with the summary and status 130.

pub mod dest;
pub mod fs;
pub mod report;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::exit::ExitCode;
use crate::messages::{bytes_in_words, count, display_path};
use crate::report::FileOut;
use report::Member;

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
    /// Moved by a copy to another file system (the rest of `files` were renamed).
    copied: u64,
    /// Skipped, by kind ([`Skip`] as an index).
    skipped: [u64; 4],
    /// Whose action failed.
    failed: u64,
    /// Left alone by rule (not a file this scan read, not an exact copy, …).
    left: u64,
    /// Already a hard link to its representative (`link` run before).
    already: u64,
    /// Not looked at: Ctrl-C came first.
    unvisited: u64,
}

/// Why a duplicate was skipped: it is not as the report describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Skip {
    /// Its status or content changed.
    Changed = 0,
    /// It is gone.
    Gone = 1,
    /// Its path now leads out of its root.
    OutOfRoot = 2,
    /// The copy kept (its representative) is gone or changed.
    KeptCopy = 3,
}

impl Skip {
    const ALL: [Skip; 4] = [Skip::Changed, Skip::Gone, Skip::OutOfRoot, Skip::KeptCopy];

    /// The summary's words for a number of them.
    fn counted(self, n: u64) -> String {
        match self {
            Skip::Changed => format!("{n} changed since the scan"),
            Skip::Gone => format!("{n} gone since the scan"),
            Skip::OutOfRoot => format!("{n} now outside their root"),
            Skip::KeptCopy => format!("{n} whose representative is gone or changed"),
        }
    }
}

/// Why a member was not acted on.
#[derive(Clone)]
enum Problem {
    /// It (or the representative) is not the file the report describes.
    Skipped(Skip, String),
    /// The action failed.
    Failed(String),
    /// A rule leaves it alone.
    Left(String),
    /// `link`: it is already its representative's file; nothing to do.
    Already(String),
}

/// A member found as the report describes it.
struct Checked {
    /// Its path as the report gives it.
    path: PathBuf,
    /// The names acted on, and where each is: its hard links. A symbolic link that `scan -L`
    /// followed to it is left as it is, as `rm` and `mv` leave a link to what they remove.
    names: Vec<PathBuf>,
    places: Vec<fs::Place>,
    id: (u64, u64),
    hashes: fs::Hashes,
    /// The bytes freed once every name is gone: its bytes on disk, when the names the report
    /// lists are all it has.
    frees: u64,
}

/// What was done to a file.
struct Done {
    /// The bytes it freed.
    freed: u64,
    /// Moved to another file system by a copy.
    copied: bool,
    /// The names acted on.
    names: u64,
}

/// Runs the command; the action lines go to `out`.
///
/// Ctrl-C stops it between two files (a file's names are all acted on, or none), with the
/// summary of what was done and status 130.
pub fn run(opts: &Options, out: &mut dyn Write) -> Result<ExitCode> {
    crate::interrupt::install();
    if let Action::Move(to) = &opts.action {
        dest::check_target(to)?;
    }
    let acting = report::read(&opts.report)?;
    local_files(&acting, &opts.action)?;
    found_here(&acting)?;
    let layout = dest::Layout::new(&acting.roots);
    if let Action::Move(to) = &opts.action {
        dest::check_apart(&acting, &layout, to)?;
    }
    // From here an interrupt is only noted: the file being acted on is finished first.
    if !crate::interrupt::begin_output() {
        return Ok(ExitCode::Interrupted);
    }
    let mut tally = Tally::default();
    for cluster in &acting.clusters {
        if crate::interrupt::interrupted() {
            tally.unvisited += cluster.duplicates.len() as u64;
            continue;
        }
        let already = already_linked(opts, &acting.roots, cluster);
        let mut rep: Option<Result<Checked, Problem>> = None;
        for (d, &linked) in cluster.duplicates.iter().zip(&already) {
            if crate::interrupt::interrupted() {
                tally.unvisited += 1;
                continue;
            }
            let m = &d.member;
            let outcome = if let Some(what) = m.not_a_file {
                Err(Problem::Left(format!("not acted on: it is {what}")))
            } else if matches!(opts.action, Action::Link) && cluster.representative.is_none() {
                let why = "not linked: no member is kept (--keep none)";
                Err(Problem::Left(why.into()))
            } else if matches!(opts.action, Action::Link) && !d.exact {
                Err(Problem::Left(
                    "not linked: its content is not identical to the representative's".into(),
                ))
            } else if linked {
                Err(Problem::Already(
                    "already a hard link to its representative: nothing to do".into(),
                ))
            } else {
                // Every action checks first that the kept copy is still there as the report
                // describes it: removing a duplicate of a file deleted or rewritten since the
                // scan would lose the last copy. With --keep none nothing is kept: remove and
                // move take the whole cluster, as the report lists it.
                let rep = (cluster.representative.as_ref()).map(|r| {
                    rep.get_or_insert_with(|| {
                        let names = (cluster.duplicates.iter().zip(&already))
                            .filter(|(_, l)| **l)
                            .map(|(d, _)| d.member.names.len() as u32)
                            .sum();
                        representative(opts, &acting.roots, r, names)
                    })
                    .as_ref()
                });
                let at = (&layout, acting.roots.as_slice());
                match rep {
                    Some(Err(p)) => Err(p.clone()),
                    Some(Ok(r)) => act(opts, at, m, Some(r), out),
                    None => act(opts, at, m, None, out),
                }
            };
            tally.add(m, outcome);
        }
    }
    // What was done is said also when its list could not be written (a full disk behind
    // stdout): the files are gone either way.
    let flushed = out.flush();
    eprintln!("dupfind: {}", summary(opts, &tally));
    flushed?;
    let skipped: u64 = tally.skipped.iter().sum();
    Ok(if tally.unvisited > 0 || crate::interrupt::interrupted() {
        ExitCode::Interrupted
    } else if skipped + tally.failed > 0 {
        ExitCode::Error
    } else {
        ExitCode::Success
    })
}

impl Tally {
    /// Counts what became of `m`, and says on stderr why when it was not acted on.
    fn add(&mut self, m: &Member, outcome: Result<Done, Problem>) {
        let shown = m.shown();
        match outcome {
            Ok(done) => {
                self.files += 1;
                self.names += done.names;
                self.freed += done.freed;
                self.copied += u64::from(done.copied);
            }
            Err(Problem::Skipped(kind, why)) => {
                self.skipped[kind as usize] += 1;
                eprintln!("dupfind: warning: {shown}: skipped: {why}");
            }
            Err(Problem::Failed(why)) => {
                self.failed += 1;
                eprintln!("dupfind: warning: {shown}: {why}");
            }
            Err(Problem::Left(why)) => {
                self.left += 1;
                eprintln!("dupfind: note: {shown}: {why}");
            }
            Err(Problem::Already(why)) => {
                self.already += 1;
                eprintln!("dupfind: note: {shown}: {why}");
            }
        }
    }
}

/// Refuses a report whose members are objects of an object store and none a local file: these
/// commands act on local files only, and a note for each member would bury the reason.
fn local_files(acting: &report::Acting, action: &Action) -> Result<()> {
    let members = || {
        (acting.clusters.iter())
            .flat_map(|c| (c.representative.iter()).chain(c.duplicates.iter().map(|d| &d.member)))
    };
    let Some(object) = members().find(|m| m.not_a_file == Some(report::OBJECT)) else {
        return Ok(());
    };
    if members().any(|m| m.not_a_file.is_none()) {
        return Ok(());
    }
    let command = match action {
        Action::Remove => "remove",
        Action::Move(_) => "move",
        Action::Link => "link",
    };
    anyhow::bail!(
        "the report's members are objects of an object store ({}, …), not local files: dupfind \
         {command} acts on local files only. Nothing was done. List the duplicates with \
         `dupfind scan --format paths` (or from the report: `jq -r \
         '.clusters[].duplicates[].path'`) and delete or move them with the store's own tools \
         (`aws s3 rm`, `gcloud storage rm`, `az storage blob delete`)",
        object.shown()
    )
}

/// Refuses a report none of whose files is where it says, from here: its relative paths are
/// the scan's, taken from the directory it ran in, and every file missing at once means this is
/// another directory (or that all are gone), which a warning per file would hide.
fn found_here(acting: &report::Acting) -> Result<()> {
    let files: Vec<&Path> = (acting.clusters.iter())
        .flat_map(|c| {
            c.representative
                .iter()
                .chain(c.duplicates.iter().map(|d| &d.member))
        })
        .filter(|m| m.not_a_file.is_none())
        .map(|m| m.names[0].as_path())
        .collect();
    let relative = files.iter().any(|p| p.is_relative());
    if !relative || files.iter().any(|p| std::fs::symlink_metadata(p).is_ok()) {
        return Ok(());
    }
    let here = std::env::current_dir().map_or_else(|_| ".".into(), |d| display_path(&d));
    anyhow::bail!(
        "none of the report's {} is found from the current directory {here} ({}, …): a report's \
         relative paths are taken from the directory the scan ran in; run this command there. \
         Nothing was done (if they were all moved or removed since the scan, nothing is left to \
         do)",
        count(files.len() as u64, "file"),
        display_path(files[0])
    )
}

/// `link`: which duplicates of `cluster` are already its representative's file (a `link` run
/// before): every name of each leads to the inode the report gives the representative.
fn already_linked(opts: &Options, roots: &[PathBuf], cluster: &report::Cluster) -> Vec<bool> {
    let rep = (cluster.representative.as_ref()).and_then(|r| r.file.as_ref());
    let (Action::Link, Some(rep)) = (&opts.action, rep) else {
        return vec![false; cluster.duplicates.len()];
    };
    let leads = |name: &PathBuf| {
        fs::place(roots, name)
            .and_then(|p| fs::stat(&p))
            .is_ok_and(|st| fs::id(&st) == (rep.device, rep.inode))
    };
    (cluster.duplicates.iter())
        .map(|d| d.member.not_a_file.is_none() && d.member.names.iter().all(leads))
        .collect()
}

/// The representative `rep`, checked: the copy kept must still be the file the report
/// describes before any of its duplicates is acted on. `linked` names more than the report's
/// are its duplicates' made hard links to it by a `link` before.
fn representative(
    opts: &Options,
    roots: &[PathBuf],
    rep: &Member,
    linked: u32,
) -> Result<Checked, Problem> {
    if rep.indexed && !matches!(opts.action, Action::Link) {
        return indexed(rep);
    }
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
    let subject = format!("its representative {}", rep.shown());
    check(roots, rep, linked, &subject).map_err(|p| match p {
        Problem::Skipped(_, why) => Problem::Skipped(Skip::KeptCopy, why),
        p => p,
    })
}

/// An indexed representative (`--against`), of which the report has the path the index
/// recorded and the content hash, not the file: the copy kept when that path still holds that
/// content. Otherwise its cluster is left whole, as the index may be older than the file.
fn indexed(rep: &Member) -> Result<Checked, Problem> {
    let left = |why: String| {
        Problem::Left(format!(
            "not acted on: its representative {} (indexed) {why}, so no kept copy is known",
            rep.shown()
        ))
    };
    let fault = |f: fs::Fault| match f {
        fs::Fault::Gone => left("is not there".into()),
        fs::Fault::OutOfRoot(how) => left(format!("is reached {how}")),
        fs::Fault::Changed(why) => left(why),
        fs::Fault::Io(why) => left(format!("cannot be read: {why}")),
    };
    let Some(hash) = rep.hash else {
        return Err(left("has no content_hash in the report".into()));
    };
    // Its path is its own root: the index's, not this report's.
    let place = fs::place(&[], &rep.names[0]).map_err(fault)?;
    let st = fs::stat(&place).map_err(fault)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(left("is not a regular file".into()));
    }
    let id = fs::id(&st);
    let hashes = fs::read(&place, id, rep.bytes).map_err(fault)?;
    if hashes.content != hash {
        return Err(left("has other content than the index recorded".into()));
    }
    Ok(Checked {
        path: rep.names[0].clone(),
        names: vec![rep.names[0].clone()],
        places: vec![place],
        id,
        hashes,
        frees: 0,
    })
}

/// Finds `m`'s names beneath their roots and checks they are the file the report describes,
/// with `linked` names more (see [`representative`]); `subject` names it in the reasons ("it",
/// "its representative r/a.txt").
fn check(roots: &[PathBuf], m: &Member, linked: u32, subject: &str) -> Result<Checked, Problem> {
    let (Some(file), Some(hash)) = (&m.file, &m.hash) else {
        return Err(Problem::Left(
            "not acted on: the report has no `file` for it".into(),
        ));
    };
    let fault = |who: &str, f: fs::Fault| match f {
        fs::Fault::Gone => Problem::Skipped(Skip::Gone, format!("{who} is gone since the scan")),
        fs::Fault::OutOfRoot(how) => Problem::Skipped(
            Skip::OutOfRoot,
            format!("{who} leads out of its root {how}: not followed"),
        ),
        fs::Fault::Changed(why) => Problem::Skipped(Skip::Changed, format!("{who} {why}")),
        fs::Fault::Io(why) => Problem::Failed(format!("cannot check {who}: {why}")),
    };
    let mut places = Vec::with_capacity(m.names.len());
    for (i, name) in m.names.iter().enumerate() {
        let who = match i {
            0 => subject.to_string(),
            _ => format!("{subject}: its other name {}", display_path(name)),
        };
        places.push(fs::place(roots, name).map_err(|f| fault(&who, f))?);
    }
    let st = fs::stat(&places[0]).map_err(|f| fault(subject, f))?;
    let file = &FileOut {
        links: file.links.saturating_add(linked),
        ..file.clone()
    };
    if let Some(why) = fs::differs(&st, file) {
        return Err(Problem::Skipped(Skip::Changed, format!("{subject} {why}")));
    }
    let id = fs::id(&st);
    let mut names = vec![m.names[0].clone()];
    let mut hard = vec![true];
    for (p, name) in places.iter().zip(&m.names).skip(1) {
        let (same, link) = match fs::symlink_target(p) {
            Some(target) => (fs::id(&target) == id, true),
            None => (fs::stat(p).is_ok_and(|s| fs::id(&s) == id), false),
        };
        if !same {
            let why = format!(
                "{subject}: its other name {} no longer leads to it",
                display_path(name)
            );
            return Err(Problem::Skipped(Skip::Changed, why));
        }
        hard.push(!link);
        if !link {
            names.push(name.clone());
        }
    }
    let mut hard = hard.into_iter();
    places.retain(|_| hard.next().unwrap_or(false));
    let hashes = fs::read(&places[0], id, m.bytes).map_err(|f| fault(subject, f))?;
    if hashes.content != *hash {
        let why = format!("{subject} has other content than when scanned");
        return Err(Problem::Skipped(Skip::Changed, why));
    }
    let all_names = file.links as usize == names.len();
    Ok(Checked {
        path: m.names[0].clone(),
        names,
        places,
        id,
        hashes,
        frees: if all_names { file.disk_bytes } else { 0 },
    })
}

/// Checks `m` and acts on each of its names.
fn act(
    opts: &Options,
    (layout, roots): (&dest::Layout, &[PathBuf]),
    m: &Member,
    rep: Option<&Checked>,
    out: &mut dyn Write,
) -> Result<Done, Problem> {
    let c = check(roots, m, 0, "it")?;
    // An indexed representative is found by its path alone: it may be this very file.
    if rep.is_some_and(|r| r.id == c.id) {
        let why = "not acted on: it is the file of its representative";
        return Err(Problem::Left(why.into()));
    }
    let line = |out: &mut dyn Write, line: String| {
        writeln!(out, "{line}").map_err(|e| Problem::Failed(crate::messages::io_reason(&e)))
    };
    let done = |freed| Done {
        freed,
        copied: false,
        names: c.names.len() as u64,
    };
    match (&opts.action, rep) {
        (Action::Remove, _) => {
            for (place, name) in c.places.iter().zip(&c.names) {
                if !opts.dry_run {
                    fs::remove(place, c.id)
                        .map_err(|why| Problem::Failed(format!("not removed: {why}")))?;
                }
                line(out, format!("rm -- {}", quote(name)))?;
            }
            Ok(done(c.frees))
        }
        (Action::Move(to), _) => {
            let dests: Vec<PathBuf> = (c.places.iter())
                .map(|p| layout.dest(to, p.root, &p.below_root))
                .collect();
            let mut steps = Vec::new();
            let stored = c.hashes.stored;
            let moved = fs::move_file(&c.places, c.id, &dests, stored, opts.dry_run, &mut steps);
            // What was done is printed also when the rest failed.
            for l in move_lines(&steps, &c.names, &dests) {
                line(out, l)?;
            }
            moved.map_err(|why| Problem::Failed(format!("not moved: {why}")))?;
            let copied = steps.iter().any(|s| matches!(s, fs::Step::Copy(_)));
            Ok(Done {
                freed: if copied { c.frees } else { 0 },
                copied,
                names: c.names.len() as u64,
            })
        }
        (Action::Link, Some(r)) => {
            if r.id.0 != c.id.0 {
                return Err(Problem::Left(
                    "not linked: on another file system than its representative (move or \
                     remove it instead)"
                        .into(),
                ));
            }
            let same = r.hashes.stored == c.hashes.stored
                && fs::same_bytes(&r.places[0], r.id, &c.places[0], c.id)
                    .map_err(|why| Problem::Failed(format!("not linked: {why}")))?;
            if !same {
                return Err(Problem::Left(
                    "not linked: not byte-identical to its representative as stored \
                     (compressed differently?)"
                        .into(),
                ));
            }
            for (place, name) in c.places.iter().zip(&c.names) {
                if !opts.dry_run {
                    fs::link_to(place, c.id, &r.places[0], r.id)
                        .map_err(|why| Problem::Failed(format!("not linked: {why}")))?;
                }
                line(out, format!("ln -f -- {} {}", quote(&r.path), quote(name)))?;
            }
            Ok(done(c.frees))
        }
        (Action::Link, None) => Err(Problem::Left("not linked: nothing to link to".into())),
    }
}

/// The shell commands that do what the steps of a move did: `mv -n` for a rename (and for a
/// file of one name copied to another file system, as `mv` does it), else `cp -p -n`, `ln`
/// and `rm`, in the order done.
fn move_lines(steps: &[fs::Step], names: &[PathBuf], dests: &[PathBuf]) -> Vec<String> {
    use fs::Step;
    if let [Step::Copy(0), Step::Remove(0)] = steps {
        return vec![format!(
            "mv -n -- {} {}",
            quote(&names[0]),
            quote(&dests[0])
        )];
    }
    (steps.iter())
        .map(|s| match *s {
            Step::Move(i) => format!("mv -n -- {} {}", quote(&names[i]), quote(&dests[i])),
            Step::Copy(i) => format!("cp -p -n -- {} {}", quote(&names[i]), quote(&dests[i])),
            Step::Link { from, to } => {
                format!("ln -- {} {}", quote(&dests[from]), quote(&dests[to]))
            }
            Step::Remove(i) => format!("rm -- {}", quote(&names[i])),
        })
        .collect()
}

/// The summary line: what was done (or would be), and what was not.
fn summary(opts: &Options, t: &Tally) -> String {
    let dry = opts.dry_run;
    let verb = match (&opts.action, dry) {
        (Action::Remove, false) => "removed",
        (Action::Remove, true) => "would remove",
        (Action::Move(_), false) => "moved",
        (Action::Move(_), true) => "would move",
        (Action::Link, false) => "linked",
        (Action::Link, true) => "would link",
    };
    let freed = |n: u64| match (n, dry) {
        (0, false) => "nothing freed".to_string(),
        (0, true) => "nothing to free".to_string(),
        (n, false) => format!("{} freed", bytes_in_words(n)),
        (n, true) => format!("{} to free", bytes_in_words(n)),
    };
    let mut s = format!(
        "{verb} {} ({})",
        count(t.files, "file"),
        count(t.names, "name")
    );
    let renamed = t.files - t.copied;
    // A rename frees nothing: the data stays on its file system.
    match (&opts.action, t.copied, renamed) {
        _ if t.files == 0 => {}
        (Action::Move(_), 0, _) => s += &format!(", renamed on their file system: {}", freed(0)),
        (Action::Move(_), copied, renamed) => {
            let how = match renamed {
                0 => "copied to another file system".to_string(),
                _ => format!(
                    "{copied} copied to another file system and {renamed} renamed on theirs"
                ),
            };
            s += &format!(", {how}: {} where they were", freed(t.freed));
        }
        _ => s += &format!(", {}", freed(t.freed)),
    }
    if t.skipped.iter().any(|&n| n > 0) {
        let kinds: Vec<String> = (Skip::ALL.iter())
            .filter(|&&k| t.skipped[k as usize] > 0)
            .map(|&k| k.counted(t.skipped[k as usize]))
            .collect();
        s += &format!(
            "; skipped: {} (scan again to act on them as they are now)",
            kinds.join(", ")
        );
    }
    if t.failed > 0 {
        s += &format!("; {} failed", t.failed);
    }
    if t.left > 0 {
        s += &format!("; {} left alone (see the notes above)", t.left);
    }
    if t.already > 0 {
        s += &format!("; {} already linked to their representative", t.already);
    }
    if t.unvisited > 0 {
        s += &format!(
            "; interrupted: {} not looked at (run it again to finish)",
            t.unvisited
        );
    }
    s
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
    fn summaries_say_what_was_freed_and_why_others_were_skipped() {
        let opts = |action, dry_run| Options {
            action,
            report: PathBuf::new(),
            dry_run,
        };
        let mixed = Tally {
            files: 3,
            names: 4,
            freed: 8192,
            copied: 1,
            skipped: [1, 0, 2, 0],
            left: 1,
            ..Tally::default()
        };
        assert_eq!(
            summary(&opts(Action::Move("attic".into()), false), &mixed),
            "moved 3 files (4 names), 1 copied to another file system and 2 renamed on theirs: \
             8.0 KiB (8,192 bytes) freed where they were; skipped: 1 changed since the scan, 2 \
             now outside their root (scan again to act on them as they are now); 1 left alone \
             (see the notes above)"
        );
        let one = Tally {
            files: 1,
            names: 1,
            freed: 512,
            failed: 1,
            ..Tally::default()
        };
        assert_eq!(
            summary(&opts(Action::Link, true), &one),
            "would link 1 file (1 name), 512 bytes to free; 1 failed"
        );
    }

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
