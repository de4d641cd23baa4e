//! The documentation against the binary: the example corpus gives the clusters the README shows,
//! the README keeps the newcomer's two commands, docs/output.md lists exactly the fields the report
//! can hold, every example marked as checked in the README and docs/ is what the binary prints, and
//! their links lead to files and headings that exist.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::util::schema::{self, assert_schema, Keys};
use super::util::{self, cluster_paths, dots, machine_neutral, run_command, TestDir};

/// The repository's root.
fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}

#[test]
fn the_example_corpus_gives_the_clusters_the_readme_shows() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus");
    let mut cmd = Command::new(util::bin());
    cmd.args(["scan", "."])
        .current_dir(&corpus)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let r = run_command(cmd);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_schema(&report);
    assert_eq!(
        cluster_paths(&report),
        vec![
            dots(&[
                "archive/harbor-bridge-2024.txt",
                "news/harbor-bridge-updated.txt",
                "news/harbor-bridge.txt"
            ]),
            dots(&["recipes/bread-from-blog.txt", "recipes/bread.txt"]),
        ]
    );
    assert_eq!(report["stats"]["skipped"]["empty"], 1);
    assert_eq!(report["stats"]["exact_groups"], 1);
    assert_eq!(report["params"]["bands"], 19);
    assert_eq!(report["params"]["rows"], 6);
}

#[test]
fn the_readme_keeps_the_newcomers_two_commands() {
    let readme = read("README.md");
    for command in [
        "cargo run --release -- scan tests/data/corpus",
        "cargo test",
    ] {
        assert!(
            readme.lines().any(|l| l.trim_start().starts_with(command)),
            "README.md lacks a line starting with `{command}`"
        );
    }
}

#[test]
fn the_readme_lists_every_option_of_scan() {
    use clap::CommandFactory;
    let readme = read("README.md");
    let start = readme
        .find("## Options")
        .expect("README.md has an Options section");
    let end = start
        + readme[start..]
            .find("\n## ")
            .expect("a section after Options");
    let table = &readme[start..end];
    let cli = dupfind::cli::Cli::command();
    let scan = cli.find_subcommand("scan").expect("a scan subcommand");
    for arg in scan.get_arguments() {
        let Some(long) = arg.get_long() else {
            continue;
        };
        if ["help", "version"].contains(&long) {
            continue;
        }
        assert!(
            table.contains(&format!("--{long}")),
            "README.md's options table lacks --{long}"
        );
    }
}

#[test]
fn every_environment_variable_read_is_in_the_man_page() {
    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    sources(&repo().join("src"), &mut files);
    let mut read_vars = BTreeSet::new();
    for file in files {
        let code = fs::read_to_string(&file).unwrap();
        for call in ["var_os(\"", "env::var(\""] {
            for (i, _) in code.match_indices(call) {
                let rest = &code[i + call.len()..];
                read_vars.insert(rest[..rest.find('"').unwrap()].to_string());
            }
        }
    }
    assert!(read_vars.contains("NO_COLOR"), "{read_vars:?}");
    let man = TestDir::new().run(&["man", "scan"]).stdout;
    let environment = &man[man.find(".SH ENVIRONMENT").expect("an ENVIRONMENT section")..];
    for var in read_vars {
        assert!(
            environment.contains(&format!("\\fB{var}\\fR")),
            "dupfind reads {var}, which the man page's ENVIRONMENT does not list"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// docs/output.md's tables against the schema walk

/// Each table of docs/output.md (marked `<!-- fields: NAME -->`) and the key sets the schema walk
/// accepts for that object, one per method where the methods differ.
const DOCUMENTED: [(&str, &[Keys]); 13] = [
    ("report", &[schema::REPORT]),
    ("params", &[schema::PARAMS_MINHASH, schema::PARAMS_SIMHASH]),
    ("stats", &[schema::STATS]),
    ("stats.skipped", &[schema::SKIPPED]),
    ("stats.index", &[schema::STATS_INDEX]),
    ("cluster", &[schema::CLUSTER]),
    ("member", &[schema::MEMBER]),
    ("member.file", &[schema::FILE]),
    (
        "duplicate",
        &[schema::DUPLICATE_MINHASH, schema::DUPLICATE_SIMHASH],
    ),
    ("pair", &[schema::PAIR_MINHASH, schema::PAIR_SIMHASH]),
    ("error", &[schema::ERROR]),
    ("jsonl.header", &[schema::JSONL_HEADER]),
    ("jsonl.summary", &[schema::JSONL_SUMMARY]),
];

/// The rows of the table after each `<!-- fields: NAME -->` line: (field, whether its `present`
/// cell says `always`). A row's first cell is the field name in backticks.
fn field_tables(doc: &str) -> Vec<(String, Vec<(String, bool)>)> {
    let lines: Vec<&str> = doc.lines().collect();
    let mut tables = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = line
            .strip_prefix("<!-- fields: ")
            .and_then(|l| l.strip_suffix(" -->"))
        else {
            continue;
        };
        let rows: Vec<&str> = (lines[i + 1..].iter())
            .take_while(|l| l.starts_with('|'))
            .copied()
            .collect();
        assert!(rows.len() > 2, "{name}: no table after its marker");
        assert!(
            rows[0].starts_with("| field | present |"),
            "{name}: {}",
            rows[0]
        );
        let fields = rows[2..]
            .iter()
            .map(|row| {
                let cells: Vec<&str> = row.split('|').map(str::trim).collect();
                let field = (cells[1].strip_prefix('`'))
                    .and_then(|c| c.strip_suffix('`'))
                    .unwrap_or_else(|| panic!("{name}: not a `field`: {row}"));
                (field.to_string(), cells[2] == "always")
            })
            .collect();
        tables.push((name.to_string(), fields));
    }
    tables
}

#[test]
fn output_md_documents_every_field_of_the_report() {
    let tables = field_tables(&read("docs/output.md"));
    let names: Vec<&str> = tables.iter().map(|(n, _)| n.as_str()).collect();
    let expected: Vec<&str> = DOCUMENTED.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, expected, "the tables of docs/output.md, in order");
    for ((name, rows), (_, variants)) in tables.iter().zip(DOCUMENTED) {
        let documented: BTreeSet<&str> = rows.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(documented.len(), rows.len(), "{name}: a field listed twice");
        // Every key the walk accepts for some method, and no other.
        let accepted: BTreeSet<&str> = (variants.iter())
            .flat_map(|k| k.required.iter().chain(k.optional))
            .copied()
            .collect();
        assert_eq!(documented, accepted, "{name}: documented vs accepted keys");
        // `always` exactly for the keys every object of the kind has, whatever the method.
        let always: BTreeSet<&str> = (rows.iter().filter(|(_, a)| *a))
            .map(|(f, _)| f.as_str())
            .collect();
        let required: BTreeSet<&str> = (variants[0].required.iter())
            .filter(|k| variants.iter().all(|v| v.required.contains(k)))
            .copied()
            .collect();
        assert_eq!(
            always, required,
            "{name}: fields documented as always there"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Examples marked as checked

/// A copy of tests/data/corpus under `tests/data/corpus` in a temporary directory, its files as
/// old as a fresh clone makes them: oldest first, in path order (which `--keep oldest` reads).
fn fresh_clone_of_the_corpus() -> TestDir {
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let from = repo().join("tests/data/corpus");
    let mut all = Vec::new();
    files(&from, &mut all);
    all.sort();
    let t = TestDir::new();
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (i, path) in all.iter().enumerate() {
        let to = Path::new("tests/data/corpus").join(path.strip_prefix(&from).unwrap());
        t.write(&to, fs::read(path).unwrap());
        let file = fs::File::options().write(true).open(t.join(&to)).unwrap();
        file.set_modified(start + Duration::from_secs(i as u64))
            .unwrap();
    }
    t
}

/// One checked example: the arguments after `dupfind`, an optional JSON pointer into the output,
/// and the text the document shows.
struct Example {
    at: String,
    args: Vec<String>,
    pointer: Option<String>,
    shown: String,
}

/// The examples of `doc`: a fenced block after `<!-- check: dupfind ARGS [at /pointer] -->` holds
/// the output (or the JSON value at the pointer); one after `<!-- check -->` is a `console` block
/// whose first line is `$ dupfind ARGS` and the rest its output.
fn examples(file: &str, doc: &str) -> Vec<Example> {
    let lines: Vec<&str> = doc.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(spec) = line
            .strip_prefix("<!-- check")
            .and_then(|l| l.strip_suffix("-->"))
        else {
            continue;
        };
        let at = format!("{file}:{}", i + 1);
        assert!(lines[i + 1].starts_with("```"), "{at}: no block after it");
        let end = (i + 2..lines.len())
            .find(|&j| lines[j] == "```")
            .unwrap_or_else(|| panic!("{at}: the block does not end"));
        let mut block: Vec<&str> = lines[i + 2..end].to_vec();
        let command = match spec.trim().strip_prefix(':') {
            Some(command) => command.trim().to_string(),
            None => {
                let first = block.remove(0);
                let command = first.strip_prefix("$ ");
                command
                    .unwrap_or_else(|| panic!("{at}: {first}"))
                    .to_string()
            }
        };
        let (command, pointer) = match command.split_once(" at /") {
            Some((c, p)) => (c.to_string(), Some(format!("/{p}"))),
            None => (command, None),
        };
        let words: Vec<String> = command.split_whitespace().map(String::from).collect();
        assert_eq!(words[0], "dupfind", "{at}: {command}");
        assert!(!command.contains(['|', '>', '\'', '"']), "{at}: {command}");
        let shown = block.iter().map(|l| format!("{l}\n")).collect();
        out.push(Example {
            at,
            args: words[1..].to_vec(),
            pointer,
            shown,
        });
    }
    out
}

#[test]
fn the_examples_marked_as_checked_are_what_the_binary_prints() {
    let t = fresh_clone_of_the_corpus();
    let mut docs = vec!["README.md".to_string()];
    for e in fs::read_dir(repo().join("docs")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            docs.push(format!("docs/{name}"));
        }
    }
    let mut checked = Vec::new();
    for file in &docs {
        for ex in examples(file, &read(file)) {
            let args: Vec<&str> = ex.args.iter().map(String::as_str).collect();
            let r = t.run(&args);
            // Device and inode numbers and bytes on disk are the machine's, not the example's.
            let (shown, stdout) = (machine_neutral(&ex.shown), machine_neutral(&r.stdout));
            match &ex.pointer {
                None => assert_eq!(shown, stdout, "{}: {}", ex.at, r.stderr),
                Some(pointer) => {
                    let shown: Value = serde_json::from_str(&shown).unwrap();
                    let printed: Value = serde_json::from_str(&stdout).unwrap();
                    let printed = printed.pointer(pointer);
                    assert_eq!(Some(&shown), printed, "{}", ex.at);
                }
            }
            checked.push(file.clone());
        }
    }
    for file in ["README.md", "docs/output.md"] {
        assert!(checked.iter().any(|f| f == file), "{file} has no example");
    }
}

/// GitHub's anchor of a heading: lowercased, punctuation but `-` and `_` dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    (heading.trim().to_lowercase().chars())
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn the_links_of_the_readme_and_docs_lead_to_files_and_headings_that_exist() {
    let mut docs: Vec<PathBuf> = vec![repo().join("README.md"), repo().join("ARCHITECTURE.md")];
    for e in fs::read_dir(repo().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            docs.push(p);
        }
    }
    let mut checked = 0;
    for doc in &docs {
        let text = fs::read_to_string(doc).unwrap();
        for (at, _) in text.match_indices("](") {
            let rest = &text[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            // A destination may start on the next line.
            let target = rest[..end].trim();
            if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let file = if file.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(file)
            };
            assert!(
                file.exists(),
                "{}: link to {target}: no such file",
                doc.display()
            );
            if !anchor.is_empty() {
                let headings: Vec<String> = fs::read_to_string(&file)
                    .unwrap()
                    .lines()
                    .filter(|l| l.starts_with('#'))
                    .map(|l| slug(l.trim_start_matches('#')))
                    .collect();
                assert!(
                    headings.iter().any(|h| h == anchor),
                    "{}: link to {target}: no such heading in {} ({headings:?})",
                    doc.display(),
                    file.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} links found");
}
