//! The memory budget (`--max-memory`): what it refuses, and what it must not change. That it
//! bounds the peak is measured by `benches/memory.sh`, not here.

use super::util::{cluster_paths, dots, edit, text, TestDir};

/// A zstd frame of raw blocks holding `content` that declares a window of 2^`log` bytes.
fn zstd_with_window(content: &[u8], log: u8) -> Vec<u8> {
    // Magic; frame header: no content size, not single-segment, window descriptor (log − 10) << 3.
    let mut out = vec![0x28, 0xB5, 0x2F, 0xFD, 0x00, (log - 10) << 3];
    let chunks: Vec<&[u8]> = content.chunks(1 << 16).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let last = u32::from(i + 1 == chunks.len());
        // Block header: last-block bit, type 0 (raw), size.
        let header = last | (chunk.len() as u32) << 3;
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.extend_from_slice(chunk);
    }
    out
}

/// Two near copies.
fn pair(t: &TestDir) {
    let a = text(5, 400);
    t.write("a.txt", &a).write("b.txt", edit(&a, &[7]));
}

#[test]
fn a_document_over_the_budget_is_an_input_error_and_the_rest_is_scanned() {
    let t = TestDir::new();
    pair(&t);
    // 10 MiB of text needs about 115 MiB with word shingles: over a 64 MiB budget.
    let big = text(9, 2_000_000);
    assert!(big.len() > 8 << 20);
    t.write("big.txt", &big);
    let r = t.run(&["scan", ".", "--max-memory", "64M"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let report = r.json();
    assert_eq!(cluster_paths(&report), vec![dots(&["a.txt", "b.txt"])]);
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["path"], "./big.txt");
    let reason = errors[0]["error"].as_str().unwrap();
    assert!(
        reason.contains("more than --max-memory (64.0 MiB)"),
        "{reason}"
    );
    assert!(reason.contains("raise --max-memory"), "{reason}");
    assert!(r.stderr.contains("big.txt: needs about"), "{}", r.stderr);
    // Within the budget it is a document like the others.
    let r = t.run(&["scan", ".", "--max-memory", "256M"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.json()["stats"]["documents"], 3);
}

#[test]
fn a_binary_file_over_the_budget_is_skipped_as_binary_not_an_input_error() {
    let t = TestDir::new();
    pair(&t);
    // 10 MiB with a NUL in its first bytes: binary, whatever reading it as text would cost.
    let mut blob = vec![0u8, 1, 2, 3];
    blob.extend(text(9, 2_000_000).into_bytes());
    t.write("big.bin", &blob);
    let r = t.run(&["scan", ".", "--max-memory", "64M"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["skipped"]["binary"], 1);
    assert_eq!(report["errors"].as_array().map_or(0, Vec::len), 0);
    assert_eq!(cluster_paths(&report), vec![dots(&["a.txt", "b.txt"])]);
    // A UTF-16 file (its BOM, then NULs) is text, not binary: still over the budget.
    let mut utf16 = vec![0xFFu8, 0xFE];
    utf16.extend(text(9, 1_000_000).bytes().flat_map(|b| [b, 0]));
    t.write("big.bin", &utf16);
    let r = t.run(&["scan", ".", "--max-memory", "64M"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert_eq!(r.json()["errors"][0]["path"], "./big.bin");
}

#[test]
fn a_file_over_max_size_is_skipped_as_before_not_refused_by_the_budget() {
    let t = TestDir::new();
    pair(&t);
    // 10 MiB would need about 115 MiB to sketch, but --max-size says it is never read.
    t.write("big.txt", text(9, 2_000_000));
    let r = t.run(&["scan", ".", "--max-memory", "64M", "--max-size", "1M"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["skipped"]["too_large"], 1);
    assert_eq!(report["errors"].as_array().map_or(0, Vec::len), 0);
    assert_eq!(cluster_paths(&report), vec![dots(&["a.txt", "b.txt"])]);
}

#[test]
fn a_zstd_window_over_the_decoder_limit_is_refused_naming_the_option() {
    let t = TestDir::new();
    pair(&t);
    // 128 MiB declared for 30 KB of content: libzstd's own limit lets it through.
    t.write("c.txt.zst", zstd_with_window(text(11, 5000).as_bytes(), 27));
    let r = t.run(&["scan", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.json()["stats"]["documents"], 3);
    // A 256 MiB budget allows a decoder a 32 MiB window.
    let r = t.run(&["scan", ".", "--max-memory", "256M"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["documents"], 2);
    assert_eq!(cluster_paths(&report), vec![dots(&["a.txt", "b.txt"])]);
    let reason = report["errors"][0]["error"].as_str().unwrap();
    assert!(
        reason.contains("window of more than 32 MiB")
            && reason.contains("--max-memory 512M reads windows up to 64 MiB"),
        "{reason}"
    );
    // A window within the limit is read.
    t.write("c.txt.zst", zstd_with_window(text(11, 5000).as_bytes(), 25));
    let r = t.run(&["scan", ".", "--max-memory", "256M"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
}

#[test]
fn a_corpus_whose_signatures_exceed_the_budget_stops_saying_what_to_change() {
    let t = TestDir::new();
    // A document is charged about 1.8 KB at K = 128, 1.4 KB at K = 32: 40,000 records need
    // about 68 MiB, or 54 MiB.
    let mut dump = String::new();
    for i in 0..40_000 {
        dump.push_str(&format!("{{\"text\":\"record number {i}\"}}\n"));
    }
    t.write("d.jsonl", &dump);
    let r = t.run(&["scan", ".", "--max-memory", "64M"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "no partial report: {}", r.stdout);
    for what in [
        "the signatures of the first 40000 documents need about 68.4 MiB",
        "raise --max-memory to well over",
        "lower --num-perm",
        "docs/staged.md",
    ] {
        assert!(r.stderr.contains(what), "{}", r.stderr);
    }
    // A shorter signature fits.
    let r = t.run(&["scan", ".", "--max-memory", "64M", "-k", "32"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.json()["stats"]["documents"], 40_000);
}

#[test]
fn a_budget_below_the_least_is_a_usage_error() {
    let t = TestDir::new();
    pair(&t);
    let r = t.run(&["scan", ".", "--max-memory", "1M"]);
    assert_eq!(r.code(), 2);
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr.contains("--max-memory (1.0 MiB) is below 64M"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_tight_budget_changes_nothing_but_how_many_documents_are_in_flight() {
    let t = TestDir::new();
    // Forty 700 KB documents (about 7.7 MiB each to sketch, plus the pinned dump share): under
    // 64 MiB only a few fit at once, and the workers wait for each other.
    let base = text(3, 120_000);
    for i in 0..40 {
        t.write(format!("f{i:02}.txt"), edit(&base, &[i * 17 + 1]));
    }
    t.write("d.jsonl", "{\"text\":\"a record\"}\n");
    let tight = t.run(&["scan", ".", "--max-memory", "64M", "-j4", "--pairs"]);
    let loose = t.run(&["scan", ".", "-j1", "--pairs"]);
    assert_eq!(tight.code(), 0, "{}", tight.stderr);
    assert_eq!(loose.code(), 0, "{}", loose.stderr);
    assert_eq!(tight.stdout, loose.stdout);
    assert_eq!(tight.json()["clusters"][0]["size"], 40);
}

#[test]
fn a_copy_too_large_to_read_again_as_a_set_is_an_error_said_on_stderr() {
    let t = TestDir::new();
    // About 2.7 MB of text: sketched within 64 MiB (17 bytes a byte with --shingle char), but
    // read again as a set (33 bytes a byte) to describe its cluster, it needs more.
    let big = text(13, 500_000);
    assert!(
        big.len() > 2_300_000 && big.len() < 3_500_000,
        "{}",
        big.len()
    );
    t.write("a.txt", &big).write("b.txt", &big);
    let r = t.run(&["scan", ".", "--shingle", "char", "--max-memory", "64M"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let reason = r.json()["errors"][0]["error"].as_str().unwrap().to_string();
    assert!(
        reason.contains("to read again and compare as a set"),
        "{reason}"
    );
    assert!(reason.contains("use --verify estimate"), "{reason}");
    assert!(
        r.stderr.contains(&reason),
        "said on stderr too: {}",
        r.stderr
    );
    let r = t.run(&[
        "scan",
        ".",
        "--shingle",
        "char",
        "--max-memory",
        "64M",
        "--verify",
        "estimate",
    ]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(r.json()["stats"]["exact_groups"], 1);
}

/// The binary's relative relocations are packed (DT_RELR, build.rs) where glibc loads them: as
/// RELA entries they were a megabyte that the loader reads at every start, counted in the peak
/// RSS of every scan.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
#[test]
fn the_binary_packs_its_relative_relocations() {
    let glibc = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&glibc.stdout);
    let mut parts = version.trim().trim_start_matches("glibc ").split('.');
    let (major, minor): (u32, u32) = (
        parts.next().unwrap().parse().unwrap(),
        parts.next().unwrap().parse().unwrap(),
    );
    if (major, minor) < (2, 36) {
        return; // build.rs asks for them from glibc 2.36 on
    }
    let elf = std::fs::read(super::util::bin()).unwrap();
    let u16_at = |at: usize| u16::from_le_bytes(elf[at..at + 2].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap());
    // ELF64 header: program headers' offset, entry size and count; PT_DYNAMIC is type 2.
    let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36), u16_at(0x38));
    let dynamic = (0..phnum)
        .map(|i| phoff + i * phentsize)
        .find(|&ph| u32::from_le_bytes(elf[ph..ph + 4].try_into().unwrap()) == 2)
        .expect("a dynamic section");
    let (offset, size) = (
        u64_at(dynamic + 0x08) as usize,
        u64_at(dynamic + 0x20) as usize,
    );
    let tags: Vec<(u64, u64)> = (offset..offset + size)
        .step_by(16)
        .map(|at| (u64_at(at), u64_at(at + 8)))
        .take_while(|&(tag, _)| tag != 0)
        .collect();
    const DT_RELASZ: u64 = 8;
    const DT_RELR: u64 = 36;
    assert!(
        tags.iter().any(|&(t, _)| t == DT_RELR),
        "no DT_RELR: {tags:x?}"
    );
    let rela = tags
        .iter()
        .find(|&&(t, _)| t == DT_RELASZ)
        .map_or(0, |&(_, v)| v);
    assert!(rela < 64 << 10, "{rela} bytes of RELA relocations");
}
