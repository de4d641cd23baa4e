//! Hints for the mistakes a new user makes, added to clap's own error as `tip:` lines (as rg and
//! fd do): a path where a subcommand belongs (`dupfind DIR`), the benchmark corpus generator
//! taken for a subcommand (`dupfind corpus`), and scan's options given before `scan`.

use std::ffi::OsString;
use std::path::Path;

use clap::builder::StyledStr;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::CommandFactory;

use super::Cli;

/// Parses `args` (the program name first); an error carries the hints that apply.
pub fn try_parse_from(args: &[OsString]) -> Result<Cli, clap::Error> {
    use clap::Parser;
    Cli::try_parse_from(args).map_err(|e| with_hints(e, args))
}

/// `err` with a `tip:` for each hint that applies to `args`.
fn with_hints(mut err: clap::Error, args: &[OsString]) -> clap::Error {
    let tips = hints(&err, args);
    if tips.is_empty() {
        return err;
    }
    let mut all = match err.get(ContextKind::Suggested) {
        Some(ContextValue::StyledStrs(given)) => given.clone(),
        _ => Vec::new(),
    };
    all.extend(tips.into_iter().map(StyledStr::from));
    err.insert(ContextKind::Suggested, ContextValue::StyledStrs(all));
    err
}

/// The hints for an error, as text.
fn hints(err: &clap::Error, args: &[OsString]) -> Vec<String> {
    match err.kind() {
        ErrorKind::InvalidSubcommand => match err.get(ContextKind::InvalidSubcommand) {
            Some(ContextValue::String(name)) => not_a_subcommand(name),
            _ => Vec::new(),
        },
        ErrorKind::UnknownArgument if !subcommand_given(args) => {
            match err.get(ContextKind::InvalidArg) {
                Some(ContextValue::String(flag)) if is_scan_flag(flag) => vec![format!(
                    "{flag} is an option of scan, and goes after it: `dupfind scan {flag} …`"
                )],
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// Hints for a first word that is no subcommand.
fn not_a_subcommand(name: &str) -> Vec<String> {
    let scan = format!("to scan it: `dupfind scan {}`", shell_word(name));
    if Path::new(name).exists() {
        return vec![format!("'{name}' is a path; {scan}")];
    }
    if name == "corpus" {
        return vec![
            "the benchmark corpus generator is an example program of the source tree, not a \
             subcommand: `cargo run --release --example corpus -- gen --out DIR` (see \
             benches/corpus.rs)"
                .to_string(),
            "to scan a directory named corpus: `dupfind scan corpus`".to_string(),
        ];
    }
    if name.contains(['/', '.']) {
        return vec![format!(
            "to scan a path: `dupfind scan PATH` ('{name}' does not exist)"
        )];
    }
    Vec::new()
}

/// True when the first argument after the program name is a subcommand.
fn subcommand_given(args: &[OsString]) -> bool {
    let cmd = Cli::command();
    args.get(1)
        .and_then(|a| a.to_str())
        .is_some_and(|a| cmd.find_subcommand(a).is_some())
}

/// True when `flag` (`--name`, `--name=value`, `-x`, `-xVALUE`) is one of scan's options.
fn is_scan_flag(flag: &str) -> bool {
    let cmd = Cli::command();
    let Some(scan) = cmd.find_subcommand("scan") else {
        return false;
    };
    let mut args = scan.get_arguments();
    if let Some(long) = flag.strip_prefix("--") {
        let long = long.split('=').next().unwrap_or(long);
        args.any(|a| a.get_long() == Some(long))
    } else if let Some(short) = flag.strip_prefix('-').and_then(|s| s.chars().next()) {
        args.any(|a| a.get_short() == Some(short))
    } else {
        false
    }
}

/// `name` as one shell word: as it is when it needs no quoting, else in single quotes.
fn shell_word(name: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%".contains(c);
    if !name.is_empty() && name.chars().all(plain) {
        name.to_string()
    } else {
        format!("'{}'", name.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_text(args: &[&str]) -> String {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        match try_parse_from(&args) {
            Ok(_) => panic!("{args:?} parsed"),
            Err(e) => e.render().to_string(),
        }
    }

    #[test]
    fn a_path_given_as_a_subcommand_hints_scan() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().display().to_string();
        let text = error_text(&["dupfind", &path]);
        assert!(
            text.contains(&format!(
                "tip: '{path}' is a path; to scan it: `dupfind scan {path}`"
            )),
            "{text}"
        );
    }

    #[test]
    fn corpus_hints_the_example_program() {
        let text = error_text(&["dupfind", "corpus"]);
        assert!(
            text.contains("cargo run --release --example corpus"),
            "{text}"
        );
        assert!(text.contains("`dupfind scan corpus`"), "{text}");
    }

    #[test]
    fn scan_options_before_scan_hint_where_they_go() {
        let text = error_text(&["dupfind", "--min-size=1K", "."]);
        assert!(
            text.contains("tip: --min-size is an option of scan, and goes after it"),
            "{text}"
        );
        let text = error_text(&["dupfind", "-t", "0.9", "."]);
        assert!(text.contains("tip: -t is an option of scan"), "{text}");
        let text = error_text(&["dupfind", "scan", "--bogus"]);
        assert!(!text.contains("option of scan"), "{text}");
    }

    #[test]
    fn names_are_quoted_for_the_shell_when_needed() {
        assert_eq!(shell_word("dir/a-b.txt"), "dir/a-b.txt");
        assert_eq!(shell_word("my docs"), "'my docs'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
