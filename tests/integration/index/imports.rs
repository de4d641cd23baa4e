//! The source depends one way: no top-level module imports one that imports it back; the middle
//! imports no driver (`app`, `scan`, `deliver`) and no side path (`index`, `stages`); no file
//! of `src/index` imports one that imports it back
//! (through any chain), and no module the index imports imports the index. Read from the
//! `crate::` and `super::` paths of each file's code, its tests left out.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The code of a file: its unit tests (from `#[cfg(test)]` before `mod tests`) and its
/// comments left out.
fn code(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let end = (0..lines.len())
        .find(|&i| {
            lines[i].trim() == "#[cfg(test)]"
                && lines[i + 1..]
                    .iter()
                    .take(2)
                    .any(|l| l.starts_with("mod tests {"))
        })
        .unwrap_or(lines.len());
    lines[..end]
        .iter()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `.rs` files under `dir` (or the file `dir.rs`), as paths relative to `src()`.
fn files_of(module: &str) -> Vec<PathBuf> {
    let file = src().join(format!("{module}.rs"));
    if file.is_file() {
        return vec![PathBuf::from(format!("{module}.rs"))];
    }
    walkdir::WalkDir::new(src().join(module))
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| p.strip_prefix(src()).unwrap().to_path_buf())
        .collect()
}

/// The module path of a file (`index/segment/mod.rs` → [index, segment]).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Every path a file's code names from the crate's root, as module segments: `crate::a::b`
/// and `super::b` (resolved against the file's module), a `{…}` group giving one path each.
fn paths_in(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let parent = module[..module.len() - 1].to_vec();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent)] {
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().last();
            rest = &rest[at + prefix.len()..];
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                expand(rest, base.clone(), &mut out);
            }
        }
    }
    out
}

/// The paths `text` names after `path::`: one, or one per element of a group.
fn expand(text: &str, mut path: Vec<String>, out: &mut Vec<Vec<String>>) {
    let len = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(text.len());
    path.extend(
        text[..len]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(String::from),
    );
    let Some(group) = text[len..].strip_prefix('{') else {
        out.push(path);
        return;
    };
    let (mut depth, mut start) = (0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            ',' | '}' if depth == 0 => {
                expand(group[start..i].trim_start(), path.clone(), out);
                if c == '}' {
                    return;
                }
                start = i + 1;
            }
            _ => {}
        }
    }
}

/// The file of `src/index` that `path` (under `index`) leads to: the longest prefix of it that is
/// a module with a file of its own.
fn index_node(path: &[String]) -> Option<String> {
    (2..=path.len()).rev().find_map(|k| {
        let rel = path[1..k].join("/");
        let found = src().join(format!("index/{rel}.rs")).is_file()
            || src().join(format!("index/{rel}/mod.rs")).is_file();
        found.then_some(rel)
    })
}

#[test]
fn index_files_import_each_other_one_way_and_no_module_they_import_imports_the_index() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut outside = BTreeSet::new();
    for rel in files_of("index") {
        let name = rel.to_string_lossy();
        if name.ends_with("testing.rs") || name.ends_with("store/tests.rs") {
            continue;
        }
        let module = module_of(&rel);
        let from = module[1..].join("/");
        let code = code(&src().join(&rel));
        for path in paths_in(&code, &module) {
            match path.first().map(String::as_str) {
                Some("index") => {
                    // A module's own ancestors hold it; they are not imports.
                    if let Some(to) = index_node(&path).filter(|to| !from.starts_with(to.as_str()))
                    {
                        edges.entry(from.clone()).or_default().insert(to);
                    }
                }
                Some(top) => {
                    outside.insert(top.to_string());
                }
                None => {}
            }
        }
    }
    // A depth-first walk: reaching a file still on the stack is a cycle.
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if let Some(at) = stack.iter().position(|s| s == n) {
            panic!(
                "src/index imports in a cycle: {} → {n}",
                stack[at..].join(" → ")
            );
        }
        if !done.insert(n.to_string()) {
            return;
        }
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            visit(m, edges, stack, done);
        }
        stack.pop();
    }
    let mut done = BTreeSet::new();
    for n in edges.keys() {
        visit(n, &edges, &mut Vec::new(), &mut done);
    }
    assert!(edges.len() > 10, "{edges:?}");
    assert!(
        outside.contains("ingest") && outside.contains("report"),
        "{outside:?}"
    );
    for top in outside {
        for rel in files_of(&top) {
            let back = paths_in(&code(&src().join(&rel)), &module_of(&rel))
                .into_iter()
                .any(|p| p.first().is_some_and(|m| m == "index"));
            assert!(
                !back,
                "src/index imports {top}, and {} imports index",
                rel.display()
            );
        }
    }
}

/// The crate's top-level modules (each `src/*.rs` file or `src/*/` folder but `lib.rs` and
/// `main.rs`), each with the top-level modules its code names.
fn top_level_imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in fs::read_dir(src()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" || name == "main" {
            continue;
        }
        let uses = out.entry(name.clone()).or_default();
        for rel in files_of(&name) {
            for p in paths_in(&code(&src().join(&rel)), &module_of(&rel)) {
                if let Some(top) = p.first().filter(|t| **t != name) {
                    uses.insert(top.clone());
                }
            }
        }
    }
    out
}

#[test]
fn no_top_level_module_imports_one_that_imports_it_back() {
    let imports = top_level_imports();
    assert!(
        imports["scan"].contains("candidates") && imports["stages"].contains("verify"),
        "{imports:?}"
    );
    let mut both = Vec::new();
    for (a, uses) in &imports {
        for b in uses {
            if a < b && imports.get(b).is_some_and(|u| u.contains(a)) {
                both.push(format!("{a} ↔ {b}"));
            }
        }
    }
    assert!(
        both.is_empty(),
        "top-level modules that import each other: {both:?}"
    );
}

/// The drivers (`app`, `scan`, `deliver`, `embed`: a run put together, `embed` for the Python
/// package) and the side paths (`index`, `stages`) that feed the middle documents and take its
/// values out; `fuzzing` calls them all.
const OUTER: [&str; 7] = [
    "app", "scan", "deliver", "embed", "index", "stages", "fuzzing",
];

#[test]
fn the_middle_imports_no_driver_and_no_side_path() {
    let imports = top_level_imports();
    assert!(
        imports["stages"].contains("conclude") && imports["index"].contains("candidates"),
        "{imports:?}"
    );
    let wrong: Vec<String> = imports
        .iter()
        .filter(|(m, _)| !OUTER.contains(&m.as_str()))
        .flat_map(|(m, uses)| {
            uses.iter()
                .filter(|u| OUTER.contains(&u.as_str()))
                .map(move |u| format!("{m} → {u}"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "the middle imports a driver or a side path: {wrong:?}"
    );
}
