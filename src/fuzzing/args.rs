//! Command-line arguments with a grammar of their own: sizes (`--min-size 10K`) and globs
//! (`--include`, `--exclude`).

use std::path::Path;

use crate::cli::parse_size;
use crate::config::inputs::globs as build_globs;

/// Parses `data` as a size. Panics unless a size parsed is what its digits times its suffix
/// make: the same as the plain number written out, and 1024 times it with `K` after it.
pub fn size_arg(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    match parse_size(s) {
        Ok(n) => {
            assert_eq!(parse_size(&n.to_string()), Ok(n), "{s:?}");
            match n.checked_mul(1024) {
                Some(k) => assert_eq!(parse_size(&format!("{n}K")), Ok(k), "{s:?}"),
                None => assert!(parse_size(&format!("{n}K")).is_err(), "{s:?}"),
            }
        }
        Err(message) => assert!(!message.is_empty(), "{s:?}"),
    }
}

/// Builds `--include` patterns from the first lines of `data` (up to the first empty line, at
/// most 8) and matches every later line against them as a path. Panics unless a literal name
/// (letters, digits, `.`, `_`, `-`; no glob syntax) matches itself at any depth.
pub fn globs(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let patterns: Vec<String> = lines
        .by_ref()
        .take_while(|line| !line.is_empty())
        .take(8)
        .map(str::to_owned)
        .collect();
    let Ok(Some(set)) = build_globs(&patterns, "--include") else {
        return;
    };
    for path in lines {
        let _ = set.is_match(Path::new(path));
    }
    for p in &patterns {
        let literal = p
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if literal && p.chars().any(|c| c.is_ascii_alphanumeric()) {
            assert!(set.is_match(Path::new(p)), "{p:?} does not match itself");
            let deeper = Path::new("a").join("b").join(p);
            assert!(set.is_match(&deeper), "{p:?} does not match {deeper:?}");
        }
    }
}
