//! Where a name is beneath its root, and where `move` puts it: one destination per name, never
//! the same for two.
//!
//! A name's root is the longest of the report's `roots` that holds it, the rest of the path
//! going down only (`r/./../x` is not beneath `r`). A file that is a root itself (named on the
//! command line), or that no root holds (listed by `--files-from`), is its own root: its
//! directory is opened as given and its destination is `DIR/NAME`. With one directory root the
//! tree below it goes to `DIR` as it is; with several, each to a subdirectory of `DIR` named
//! after the root (see [`Layout`]), so that `a/x.txt` and `b/x.txt` of roots `a` and `b` do not
//! meet at `DIR/x.txt`.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Result};

use super::report::Acting;
use crate::messages::display_path;

/// A name split at its root.
#[derive(Debug, PartialEq, Eq)]
pub struct Located<'a> {
    /// The directory opened as given: the root, or the file's own directory.
    pub top: &'a Path,
    /// The rest of the name below `top`, going down only.
    pub below: &'a Path,
    /// The index in `roots` of its directory root; None when the file is its own root.
    pub root: Option<usize>,
}

/// Splits `path` at the longest of the directory `roots` that holds it.
pub fn locate<'a>(roots: &'a [PathBuf], path: &'a Path) -> Option<Located<'a>> {
    let own = roots.iter().any(|r| r.as_path() == path);
    let held = (roots.iter().enumerate())
        .filter(|_| !own)
        .filter_map(|(i, r)| {
            let rest = path.strip_prefix(r).ok()?;
            let down = (rest.components()).all(|c| matches!(c, Component::Normal(_)));
            (down && !rest.as_os_str().is_empty()).then_some((i, r, rest))
        })
        .max_by_key(|(_, r, _)| r.components().count());
    if let Some((i, r, rest)) = held {
        return Some(Located {
            top: r,
            below: rest,
            root: Some(i),
        });
    }
    let name = path.file_name()?;
    let top = path.parent().filter(|p| !p.as_os_str().is_empty());
    Some(Located {
        top: top.unwrap_or(Path::new(".")),
        below: Path::new(name),
        root: None,
    })
}

/// Where `move --to DIR` puts each name: `DIR/BELOW` under one directory root, and under
/// several `DIR/LABEL/BELOW`, LABEL being the root as given when it goes down from where the
/// scan ran or from `/` (`photos`, `old/photos`, `/srv/data` → `srv/data`), else (`.`, `..`,
/// `../x`) its absolute path without the leading `/`: two roots that are not one directory have
/// two labels. A file that is its own root goes to `DIR/NAME`.
#[derive(Debug)]
pub struct Layout {
    /// Per root of the report: the subdirectory of `DIR` its tree goes to.
    prefixes: Vec<PathBuf>,
}

impl Layout {
    /// The layout of the report's `roots`; a root that is not a directory now (a file named on
    /// the command line) is no tree and counts for nothing.
    pub fn new(roots: &[PathBuf]) -> Layout {
        let dirs = (roots.iter())
            .filter(|r| std::fs::metadata(r).map_or(true, |m| m.is_dir()))
            .count();
        let prefixes = match dirs {
            0 | 1 => vec![PathBuf::new(); roots.len()],
            _ => roots.iter().map(|r| label(r)).collect(),
        };
        Layout { prefixes }
    }

    /// The destination under `to` of a name `below` its root (None: its own root).
    pub fn dest(&self, to: &Path, root: Option<usize>, below: &Path) -> PathBuf {
        match root.and_then(|i| self.prefixes.get(i)) {
            Some(prefix) => to.join(prefix).join(below),
            None => to.join(below),
        }
    }
}

/// The subdirectory named after `root` (see [`Layout`]).
fn label(root: &Path) -> PathBuf {
    let lexical: PathBuf = (root.components())
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    let up = (root.components()).any(|c| c == Component::ParentDir);
    if !up && !lexical.as_os_str().is_empty() {
        return lexical;
    }
    match std::fs::canonicalize(root) {
        Ok(abs) => abs
            .components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .collect(),
        // A root gone since the scan holds nothing to move; its name still keeps it apart.
        Err(_) => lexical,
    }
}

/// Refuses, before anything is moved, a report in which two names would go to one destination
/// (or one inside another's), listing them.
pub fn check_apart(acting: &Acting, layout: &Layout, to: &Path) -> Result<()> {
    let mut taken: HashMap<PathBuf, &Path> = HashMap::new();
    let mut clashes = Vec::new();
    for m in (acting.clusters.iter())
        .flat_map(|c| &c.duplicates)
        .map(|d| &d.member)
        .filter(|m| m.not_a_file.is_none())
    {
        for (i, name) in m.names.iter().enumerate() {
            // A symbolic link `scan -L` followed is left where it is.
            let link = i > 0 && std::fs::symlink_metadata(name).is_ok_and(|s| s.is_symlink());
            let Some(at) = locate(&acting.roots, name).filter(|_| !link) else {
                continue;
            };
            let dest = layout.dest(to, at.root, at.below);
            if let Some(other) = taken.get(&dest).filter(|o| **o != name.as_path()) {
                clashes.push(format!(
                    "{} and {} → {}",
                    display_path(other),
                    display_path(name),
                    display_path(&dest)
                ));
            }
            taken.entry(dest).or_insert(name);
        }
    }
    // A file where another needs a directory: `DIR/x` and `DIR/x/y`.
    for (dest, name) in &taken {
        let within = (dest.ancestors().skip(1))
            .take_while(|a| *a != to)
            .find_map(|a| taken.get(a).map(|o| (a, o)));
        if let Some((a, other)) = within {
            clashes.push(format!(
                "{} → {}, inside {} → {}",
                display_path(name),
                display_path(dest),
                display_path(other),
                display_path(a)
            ));
        }
    }
    if clashes.is_empty() {
        return Ok(());
    }
    clashes.sort();
    const SHOWN: usize = 10;
    let more = match clashes.len().saturating_sub(SHOWN) {
        0 => String::new(),
        n => format!("\n  … and {n} more"),
    };
    clashes.truncate(SHOWN);
    bail!(
        "--to {}: these duplicates would be moved to the same place, so nothing was moved:\n  \
         {}{more}\nA file named on the command line or listed by --files-from goes to DIR/NAME; \
         scan again with the directories that hold them as roots (each directory root has its \
         own subdirectory of DIR when there are several)",
        display_path(to),
        clashes.join("\n  ")
    )
}

/// Refuses `--to` naming something that is not a directory, once, before any file is looked at.
pub fn check_target(to: &Path) -> Result<()> {
    match std::fs::metadata(to) {
        Ok(m) if !m.is_dir() => bail!(
            "--to {}: not a directory (it is a file): choose a directory, or a path that does \
             not exist yet",
            display_path(to)
        ),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn at<'a>(roots: &'a [PathBuf], path: &'a str) -> (String, String, Option<usize>) {
        let l = locate(roots, Path::new(path)).unwrap_or_else(|| panic!("{path}"));
        let s = |p: &Path| p.to_string_lossy().into_owned();
        (s(l.top), s(l.below), l.root)
    }

    #[test]
    fn a_name_is_split_at_the_longest_root_holding_it_and_a_named_file_is_its_own() {
        let roots: Vec<PathBuf> = [".", "./a", "./b/copy1.txt"].map(PathBuf::from).into();
        let own = |top: &str, below: &str| (top.to_string(), below.to_string(), None);
        assert_eq!(
            at(&roots, "./a/x/y.txt"),
            ("./a".into(), "x/y.txt".into(), Some(1))
        );
        assert_eq!(at(&roots, "./c.txt"), (".".into(), "c.txt".into(), Some(0)));
        assert_eq!(at(&roots, "./b/copy1.txt"), own("./b", "copy1.txt"));
        assert_eq!(at(&roots, "./../x"), own("./..", "x"));
        assert_eq!(at(&roots, "elsewhere.txt"), own(".", "elsewhere.txt"));
    }

    #[test]
    fn several_roots_are_kept_apart_by_their_names() {
        assert_eq!(label(Path::new("./old/photos/")), Path::new("old/photos"));
        assert_eq!(label(Path::new("/srv/data")), Path::new("srv/data"));
        let here = std::env::current_dir().unwrap();
        let abs: PathBuf = here.components().skip(1).collect();
        assert_eq!(label(Path::new(".")), abs);
        assert_eq!(label(Path::new("src/..")), abs);
    }
}
