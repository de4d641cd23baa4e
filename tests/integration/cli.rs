//! The command line and the process: usage errors, help and version, `--quiet`, progress, broken
//! pipes, interrupts, stdin left unread and nothing written, `--exit-code`, and the other commands
//! (`completions`, `man`, `explain`).

use std::fs;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use super::util::{
    self, bin, chain, families, run_command, snapshot, text, wait_guarded, wait_in_syscall, words,
    TestDir,
};

// ---------------------------------------------------------------------------------------------
// The command line

#[test]
fn usage_errors_exit_2_with_a_message_and_nothing_on_stdout() {
    let t = families();
    for (args, says) in [
        (vec!["scan", "-t", "1.5", "."], "--threshold"),
        (vec!["scan", "-t", "0", "."], "--threshold"),
        (vec!["scan", "-k", "0", "."], "--num-perm"),
        (vec!["scan", "-n", "0", "."], "--ngram"),
        (
            vec!["scan", "--bands", "100", "--rows", "100", "."],
            "--bands",
        ),
        (
            vec!["scan", "-m", "simhash", "--bands", "4", "."],
            "--bands",
        ),
        (
            vec!["scan", "-m", "simhash", "--max-distance", "40", "."],
            "--max-distance",
        ),
        (
            vec!["scan", "--min-size", "2K", "--max-size", "1K", "."],
            "--min-size",
        ),
        (vec!["scan", "--max-size", "lots", "."], "--max-size"),
        (vec!["scan", "--include", "[", "."], "--include"),
        (vec!["scan", "-j", "0", "."], "--threads"),
        (vec!["scan", "-j", "4294967295", "."], "--threads"),
        (vec!["scan", "-n", "65", "."], "--ngram"),
        // A flag of the other method is an error, never silently ignored.
        (
            vec!["scan", "-m", "simhash", "-t", "0.9", "."],
            "--threshold",
        ),
        (vec!["scan", "-m", "simhash", "-k", "64", "."], "--num-perm"),
        (
            vec!["scan", "-m", "simhash", "--verify", "estimate", "."],
            "--verify",
        ),
        (
            vec!["scan", "-m", "simhash", "--sketch", "kperm", "."],
            "--sketch",
        ),
        (vec!["scan", "--max-distance", "5", "."], "--max-distance"),
        (vec!["scan", "--format", "xml", "."], "--format"),
        (vec!["scan", "--bogus", "."], "--bogus"),
        (vec!["frobnicate"], "frobnicate"),
        (vec![], "Usage"),
    ] {
        let r = t.run(&args);
        assert_eq!(r.code(), 2, "{args:?}");
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn help_and_version_work() {
    let t = TestDir::new();
    let version = env!("CARGO_PKG_VERSION");
    for (args, name) in [
        (vec!["--version"], "dupfind"),
        (vec!["-V"], "dupfind"),
        (vec!["scan", "--version"], "dupfind-scan"),
    ] {
        let v = t.run(&args);
        assert_eq!(v.code(), 0, "{args:?}");
        assert_eq!(v.stdout, format!("{name} {version}\n"), "{args:?}");
    }
    let h = t.run(&["--help"]);
    assert_eq!(h.code(), 0);
    assert!(h.stdout.contains("Usage: dupfind") && h.stdout.contains("scan"));
    for args in [vec!["scan", "--help"], vec!["help", "scan"]] {
        let s = t.run(&args);
        assert_eq!(s.code(), 0, "{args:?}");
        assert!(s.stderr.is_empty(), "{args:?}: {}", s.stderr);
        let flags = "--method --shingle --ngram --threshold --num-perm --bands --rows --sketch \
                     --max-distance --verify --seed --threads --format --include --exclude \
                     --min-size --max-size --follow-links --quiet --progress";
        for flag in words(flags).into_iter().chain(["Exit status"]) {
            assert!(s.stdout.contains(flag), "{args:?} lacks {flag}");
        }
    }
}

#[test]
fn quiet_silences_stderr() {
    let t = families();
    t.write("huge.txt", text(9, 2000));
    let args = ["--max-size", "4K", "."];
    let quiet = t.run(&[&["scan", "-q"][..], &args].concat());
    assert_eq!(quiet.code(), 0, "{}", quiet.stderr);
    assert_eq!(quiet.stderr, "");
    assert_eq!(quiet.json()["stats"]["skipped"]["too_large"], 1);
    // Without -q the same scan warns (and draws progress when asked); stdout is the same.
    let loud = t.run(&[&["scan", "--progress", "always"][..], &args].concat());
    assert_eq!(loud.stdout, quiet.stdout, "-q changes stderr only");
    assert_eq!(loud.warnings().len(), 1, "{}", loud.stderr);
    assert!(loud.stderr.contains("huge.txt"), "{}", loud.stderr);
}

#[test]
fn progress_goes_to_stderr_only() {
    let t = families();
    let quiet = t.run(&["scan", "--progress", "never", "."]);
    let shown = t.run(&["scan", "--progress", "always", "."]);
    assert_eq!(shown.code(), 0, "{}", shown.stderr);
    assert_eq!(quiet.stdout, shown.stdout);
    // stderr is a pipe here: `always` still reports, as plain lines for a log, and each bar
    // ends with a line of totals, in its units, whether or not the run lasted long enough for
    // a bar (a second).
    let totals: Vec<&str> = shown
        .stderr
        .lines()
        .filter(|l| l.starts_with("dupfind: progress: ") && !l.contains(" ["))
        .collect();
    assert_eq!(totals.len(), 2, "{}", shown.stderr);
    assert!(
        totals[0].starts_with("dupfind: progress: reading: 8 files in ")
            && totals[0].ends_with(" files/s)"),
        "{}",
        shown.stderr
    );
    assert!(
        totals[1].starts_with("dupfind: progress: verifying: ")
            && totals[1].ends_with(" documents/s)"),
        "{}",
        shown.stderr
    );
    assert!(!quiet.stderr.contains("progress"), "{}", quiet.stderr);
    let auto = t.run(&["scan", "."]);
    assert!(!auto.stderr.contains("progress"), "{}", auto.stderr);
}

// ---------------------------------------------------------------------------------------------
// The process: pipes, signals, stdin, no writes

/// A tree whose report is far larger than a pipe's buffer (64 KiB): 2,000 copies of one text
/// make one cluster of 2,000 members and 1,999 pairs.
fn long_report_tree() -> TestDir {
    let t = TestDir::new();
    let same = text(51, 50);
    for i in 0..2000 {
        t.write(format!("copy{i:04}.txt"), &same);
    }
    t
}

#[test]
fn broken_pipe_ends_quietly_with_the_scan_status() {
    let t = long_report_tree();
    let full = t.run(&["scan", "-q", "."]);
    assert!(full.stdout.len() > 256 * 1024, "{}", full.stdout.len());
    let mut child = t.command(&["scan", "."]).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    stdout.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"{\n  \"schem");
    drop(stdout);
    let r = wait_guarded(child);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert!(r.warnings().is_empty(), "{}", r.stderr);
}

#[test]
fn output_piped_into_head_ends_without_a_panic() {
    let t = long_report_tree();
    let status = TestDir::new();
    for (format, start) in [("json", "{\n  \"schem"), ("jsonl", "{\"type\":\"h")] {
        let status_file = status.join(format!("status-{format}"));
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(r#"{ "$0" scan --format "$2" .; echo "$?" > "$1"; } | head -c 10"#)
            .arg(util::bin())
            .arg(&status_file)
            .arg(format)
            .current_dir(t.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let r = run_command(sh);
        assert_eq!(r.code(), 0, "{}", r.stderr);
        assert_eq!(r.stdout, start);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(r.warnings().is_empty(), "{}", r.stderr);
        // dupfind's own status: the scan's, as if the reader had read everything.
        assert_eq!(fs::read_to_string(&status_file).unwrap().trim(), "0");
    }
}

#[test]
fn interrupt_exits_130_with_empty_or_complete_output() {
    let t = TestDir::new();
    for i in 0..3000u64 {
        t.write(format!("d{}/f{i}.txt", i % 30), text(i, 300));
    }
    let child = t.command(&["scan", "-j", "1", "."]).spawn().unwrap();
    // Give the binary time to install its handler; the outcome is checked either way.
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill(2) on the pid of a child that has not been waited for yet.
    let killed = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(killed, 0);
    let r = wait_guarded(child);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    match r.code() {
        130 => assert!(r.stdout.is_empty() || serde_json::from_str::<Value>(&r.stdout).is_ok()),
        // The scan may finish before the signal on a fast machine: then the output is whole.
        0 => assert_eq!(r.json()["stats"]["documents"], 3000),
        code => panic!("exit {code}: {}", r.stderr),
    }
}

#[test]
fn ctrl_c_after_the_o_file_is_replaced_leaves_the_status_of_the_run() {
    // Review finding 06: an interrupt that came after `-o`'s report was put in place, before the
    // run ended, made it exit 130, which says the file was left as it was. Deterministic: the
    // run is held, its report in place, at the warning `--format paths` writes after it, on a
    // standard error that is a full pipe.
    use std::io::Write;
    let t = TestDir::new();
    let a = text(5, 80);
    let b = format!("{a} extra");
    t.write(
        "d.jsonl",
        format!("{}\n{}\n", json!({"text": a}), json!({"text": b})),
    );
    let (mut err_read, mut err_write) = std::io::pipe().unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&err_write);
    // SAFETY: fcntl(2) on a descriptor this test owns; a pipe's size is a few pages, so filling
    // it without blocking takes a few writes.
    unsafe { libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK) };
    while err_write.write(&[b'.'; 4096]).is_ok() {}
    // SAFETY: as above; the child must block, not fail, on the full pipe.
    unsafe { libc::fcntl(fd, libc::F_SETFL, 0) };
    let mut child = t
        .command(&["scan", "--format", "paths", "-o", "rep.txt", "d.jsonl"])
        .stderr(err_write)
        .spawn()
        .unwrap();
    wait_in_syscall(child.id(), &[libc::SYS_write], 2);
    assert!(fs::read_to_string(t.join("rep.txt")).unwrap().is_empty());
    // The handler runs on the thread the `ctrlc` crate names; the run goes on only once the
    // handler has run and its thread waits again (one more voluntary context switch).
    let handler = fs::read_dir(format!("/proc/{}/task", child.id()))
        .unwrap()
        .map(|t| t.unwrap().path())
        .find(|t| fs::read_to_string(t.join("comm")).unwrap().trim() == "ctrl-c")
        .expect("the Ctrl-C handler's thread");
    let switches = || {
        let status = fs::read_to_string(handler.join("status")).unwrap();
        let line = status
            .lines()
            .find(|l| l.starts_with("voluntary_ctxt_switches:"));
        line.unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    let before = switches();
    // SAFETY: kill(2) on the pid of a child that has not been waited for yet.
    let killed = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(killed, 0);
    let waiting = || {
        let call = fs::read_to_string(handler.join("syscall")).unwrap();
        call.starts_with(&format!("{} ", libc::SYS_futex))
    };
    let start = std::time::Instant::now();
    while switches() == before || !waiting() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the handler never ran"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut stderr = Vec::new();
    err_read.read_to_end(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    let stderr = String::from_utf8_lossy(&stderr)
        .trim_start_matches('.')
        .to_string();
    assert!(
        stderr.contains("--format paths: 1 duplicate record"),
        "{stderr}"
    );
    // The run's own status: duplicates found, reported (scan's status without --exit-code).
    assert_eq!(status.code(), Some(0), "{stderr}");
}

#[test]
fn ctrl_c_while_the_file_list_is_read_from_stdin_exits_130_as_while_stdin_is() {
    // Review finding: `scan --files-from -` read its list before installing the handler, so a
    // SIGINT ignored by the parent (a shell's `&`) stayed ignored there; `scan -` exited 130.
    let t = TestDir::new();
    for args in ["-", "--files-from -"] {
        let script = format!("trap '' INT; exec \"$0\" scan {args}");
        let mut sh = std::process::Command::new("sh");
        sh.args(["-c", &script, bin()])
            .current_dir(t.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = sh.spawn().unwrap();
        // Blocked reading standard input: the list (or the document) never comes.
        wait_in_syscall(child.id(), &[libc::SYS_read, libc::SYS_splice], 0);
        // SAFETY: kill(2) on the pid of a child that has not been waited for yet.
        let killed = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        assert_eq!(killed, 0);
        // Its input stays open: only the signal can end it.
        let _stdin = child.stdin.take();
        let r = wait_guarded(child);
        assert_eq!(
            (r.code(), r.stdout.as_str()),
            (130, ""),
            "scan {args}: {}",
            r.stderr
        );
    }
}

#[test]
fn nothing_is_written_and_stdin_is_not_read() {
    let t = families();
    let cwd = TestDir::new();
    cwd.write("unrelated.txt", "in the working directory, not scanned");
    let (mut before, mut before_cwd) = (Vec::new(), Vec::new());
    snapshot(t.path(), &mut before);
    snapshot(cwd.path(), &mut before_cwd);

    // stdin is a pipe that stays open and empty: a scan that read it would never finish, and
    // the runner's hang guard would fail the test.
    let root = t.path().display().to_string();
    let mut cmd = Command::new(util::bin());
    cmd.args(["scan", "-j", "2", &root])
        .current_dir(cwd.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stdin = child.stdin.take();
    let r = wait_guarded(child);
    drop(stdin);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["stats"]["documents"], 8);
    assert_eq!(report["stats"]["clusters"], 2);

    let (mut after, mut after_cwd) = (Vec::new(), Vec::new());
    snapshot(t.path(), &mut after);
    snapshot(cwd.path(), &mut after_cwd);
    assert_eq!(before, after);
    assert_eq!(before_cwd, after_cwd);
}

// ---------------------------------------------------------------------------------------------
// Exit codes and the other commands

#[test]
fn exit_code_reports_whether_duplicates_were_found() {
    let t = chain();
    let r = t.run(&["scan", "--exit-code", "."]);
    assert_eq!(r.code(), 1, "{}", r.stderr);
    // Strict clusters by default: a ~ b and c ~ d.
    assert_eq!(
        r.json()["stats"]["clusters"],
        2,
        "the report is still printed"
    );
    assert_eq!(t.run(&["scan", "."]).code(), 0, "opt-in only");

    let lone = TestDir::new();
    lone.write("a.txt", text(1, 200))
        .write("b.txt", text(2, 200));
    assert_eq!(lone.run(&["scan", "--exit-code", "."]).code(), 0);
    // An unreadable input wins: status 2, whatever was found.
    let r = t.run(&["scan", "--exit-code", ".", "missing-root"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
}

#[test]
fn completions_and_man_pages_come_from_the_same_definitions() {
    let t = TestDir::new();
    for (shell, marker) in [
        ("bash", "_dupfind()"),
        ("zsh", "#compdef dupfind"),
        ("fish", "complete -c dupfind"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let r = t.run(&["completions", shell]);
        assert_eq!(r.code(), 0, "{shell}: {}", r.stderr);
        assert!(r.stdout.contains(marker), "{shell}: {}", r.stdout);
        assert!(
            r.stdout.contains("min-similarity"),
            "{shell} completes scan's flags"
        );
        assert_eq!(r.stderr, "");
    }
    let r = t.run(&["completions", "tcsh"]);
    assert_eq!(r.code(), 2);

    let top = t.run(&["man"]);
    assert_eq!(top.code(), 0, "{}", top.stderr);
    assert!(top.stdout.contains(".TH dupfind 1"), "{}", top.stdout);
    assert!(top.stdout.contains("completions"), "lists the subcommands");
    let scan = t.run(&["man", "scan"]);
    assert_eq!(scan.code(), 0, "{}", scan.stderr);
    assert!(
        scan.stdout.contains(".TH dupfind-scan 1"),
        "{}",
        scan.stdout
    );
    for flag in ["min\\-similarity", "exit\\-code", "cluster", "keep"] {
        assert!(scan.stdout.contains(flag), "man scan documents --{flag}");
    }
    let bad = t.run(&["man", "nope"]);
    assert_eq!(bad.code(), 2);
    assert!(
        bad.stderr.contains("no subcommand \"nope\""),
        "{}",
        bad.stderr
    );
    assert_eq!(bad.stdout, "");
}

#[test]
fn explain_says_what_was_given_in_true_and_grammatical_words() {
    // Review finding: `--rows 6` alone said the bands were "given"; `--bands 19 --rows 6` (the
    // banding the threshold chooses) got a note that more values could be banded; `-t 1` said
    // "1 bands".
    let t = TestDir::new();
    let line = |args: &[&str], start: &str| {
        let r = t.run(&[&["explain"][..], args].concat());
        assert_eq!(r.code(), 0, "{}", r.stderr);
        let found = r.stdout.lines().find(|l| l.starts_with(start));
        (found.unwrap_or_default().to_string(), r.stdout)
    };
    let (rows, out) = line(&["--rows", "6"], "banding");
    assert_eq!(
        rows,
        "banding      21 bands × 6 rows, rows given, bands as many as fit in K"
    );
    assert!(!out.contains("note:"), "{out}");
    let (bands, out) = line(&["--bands", "20"], "banding");
    assert_eq!(
        bands,
        "banding      20 bands × 6 rows, bands given, rows as many as fit in K"
    );
    assert!(!out.contains("note:"), "{out}");
    let (both, out) = line(&["--bands", "19", "--rows", "6"], "banding");
    assert_eq!(
        both,
        "banding      19 bands × 6 rows, given, the banding the threshold chooses too"
    );
    assert!(!out.contains("note:"), "{out}");
    let (_, out) = line(&["-t", "0.9", "--bands", "19", "--rows", "6"], "banding");
    assert!(
        out.contains(
            "note: 14 of 128 signature values are in no band (19 × 6 = 114), only in the \
             similarity estimate: 21 bands of 6 rows would fit in K = 128\n"
        ),
        "{out}"
    );
    let (one, _) = line(&["-t", "1"], "banding");
    assert_eq!(
        one,
        "banding      1 band × 128 rows, chosen from the threshold"
    );
    let (single, _) = line(&["--bands", "1", "--rows", "1", "-t", "1"], "banding");
    assert_eq!(single, "banding      1 band × 1 row, given");
    let r = t
        .write("a.txt", "one document")
        .run(&["scan", "-v", "-t", "1", "a.txt"]);
    assert!(
        r.stderr
            .contains("threshold 1: 1 band × 128 rows of 128 signature values"),
        "{}",
        r.stderr
    );
}

#[test]
fn explain_prints_the_curve_scan_uses() {
    let t = TestDir::new();
    let r = t.run(&["explain", "--format", "json"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let e = r.json();
    assert_eq!(
        (e["kind"].as_str(), e["bands"].as_u64(), e["rows"].as_u64()),
        (Some("minhash"), Some(19), Some(6))
    );
    // The banding scan chooses for the same settings.
    let corpus = TestDir::new();
    corpus.write("a.txt", text(1, 100));
    let scanned = corpus.run(&["scan", "."]).json();
    assert_eq!(scanned["params"]["bands"], e["bands"]);
    assert_eq!(scanned["params"]["rows"], e["rows"]);
    let curve = e["curve"].as_array().unwrap();
    assert_eq!(curve.len(), 10);
    for p in curve {
        let s = p["similarity"].as_f64().unwrap();
        let closed = 1.0 - (1.0 - s.powi(6)).powi(19);
        assert!(
            (p["probability"].as_f64().unwrap() - closed).abs() < 1e-12,
            "{p}"
        );
    }
    assert_eq!(e["values_unused"], 14);
    // The defaults do not warn about themselves.
    assert_eq!(
        (e["warnings"].clone(), e["notes"].clone()),
        (json!([]), json!([]))
    );
    let text_out = t.run(&["explain"]);
    assert_eq!((text_out.code(), text_out.stderr.as_str()), (0, ""));
    assert!(
        !text_out.stdout.contains("warning") && !text_out.stdout.contains("UNUSED"),
        "{}",
        text_out.stdout
    );

    let r = t.run(&[
        "explain", "-k", "128", "--bands", "10", "--rows", "5", "--format", "json",
    ]);
    let e = r.json();
    assert_eq!(e["values_unused"], 78);
    assert!(
        e["notes"][0].as_str().unwrap().contains("in no band"),
        "{e}"
    );
    let text_out = t.run(&["explain", "--bands", "10", "--rows", "5"]);
    assert!(
        text_out
            .stdout
            .contains("note: 78 of 128 signature values are in no band"),
        "{}",
        text_out.stdout
    );

    let sim = t
        .run(&[
            "explain",
            "-m",
            "simhash",
            "--max-distance",
            "3",
            "--format",
            "json",
        ])
        .json();
    assert_eq!(sim["tables"], 4);
    assert_eq!(sim["curve"][3]["probability"], 1.0);
    assert!(sim["curve"][4]["probability"].as_f64().unwrap() < 1.0);

    for bad in [
        &["explain", "-t", "2"][..],
        &["explain", "--bands", "100", "--rows", "100"],
        &["explain", "-m", "simhash", "-t", "0.9"],
    ] {
        let r = t.run(bad);
        assert_eq!(r.code(), 2, "{bad:?}");
        assert_eq!(r.stdout, "", "{bad:?}");
    }

    // scan says so when the curve is poor at the threshold.
    let r = corpus.run(&["scan", "--bands", "2", "--rows", "20", "."]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("false-negative probability > 5% at threshold + 0.05"),
        "{}",
        r.stderr
    );
}
