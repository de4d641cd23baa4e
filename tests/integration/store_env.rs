//! What the environment sets for object stores and the pool, and what a store's error says:
//! the same bytes on every run, and a value that would not do refused before any work.

use super::util::{text, Run, TestDir};

/// A URL on a loopback port nothing listens on: every request to it is refused at once.
fn unreachable_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/x.txt")
}

/// True when `s` holds a duration as Rust writes one (`1.715369414s`, `300ms`, `60s`).
fn holds_duration(s: &str) -> bool {
    let b = s.as_bytes();
    (0..b.len()).any(|i| {
        let starts = b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric());
        if !starts {
            return false;
        }
        let end = (i..b.len())
            .find(|&j| !(b[j].is_ascii_digit() || b[j] == b'.'))
            .unwrap_or(b.len());
        let rest = &s[end..];
        ["ns", "µs", "ms", "s"].iter().any(|u| {
            rest.strip_prefix(u)
                .is_some_and(|after| !after.starts_with(|c: char| c.is_ascii_alphanumeric()))
        })
    })
}

#[test]
fn a_url_that_cannot_be_read_gives_the_same_report_and_stderr_every_run() {
    let t = TestDir::new();
    t.write("in/a.txt", text(9301, 80))
        .write("in/b.txt", text(9302, 80));
    let url = unreachable_url();
    let scan = || {
        let mut cmd = t.command(&["scan", "in", &url]);
        // Retried until the deadline, so the count of retries differs from run to run.
        cmd.env("DUPFIND_STORE_TIMEOUT", "0.4");
        super::util::run_command(cmd)
    };
    let (first, second) = (scan(), scan());
    assert_eq!(first.code(), 2, "{}", first.stderr);
    assert_eq!(first.stdout, second.stdout);
    assert_eq!(first.stderr, second.stderr);
    let errors = first.json()["errors"].clone();
    let error = errors[0]["error"].as_str().unwrap();
    assert_eq!(errors[0]["path"], url.as_str());
    assert!(error.contains(&url) && error.contains("retries"), "{error}");
    assert!(!holds_duration(error), "{error}");
    assert!(!holds_duration(&first.stderr), "{}", first.stderr);
    // The staged pipeline reads the URL in its own task: its report and warnings are scan's.
    let mut staged = super::staged::local_driver_command(
        &t,
        &[
            "--shards",
            "2",
            "--work",
            "w",
            "--dupfind",
            super::util::bin(),
            "in",
            &url,
        ],
    );
    staged.env("DUPFIND_STORE_TIMEOUT", "0.4");
    let staged = super::util::run_command(staged);
    assert_eq!(staged.code(), first.code(), "{}", staged.stderr);
    assert_eq!(staged.stdout, first.stdout);
    assert_eq!(staged.stderr, first.stderr);
}

#[test]
fn the_duration_check_sees_a_duration() {
    for timed in [
        "in 1.715369414s, after",
        "took 300ms",
        "retry_timeout: 60s ",
    ] {
        assert!(holds_duration(timed), "{timed}");
    }
    for untimed in [
        "os error 111",
        "127.0.0.1:5171/x.txt",
        "at most 10)",
        "bits",
    ] {
        assert!(!holds_duration(untimed), "{untimed}");
    }
}

/// A scan of a local file and `url` with `name=value`.
fn scan_with(t: &TestDir, name: &str, value: &str, url: Option<&str>) -> Run {
    let mut args = vec!["scan", "in"];
    args.extend(url);
    let mut cmd = t.command(&args);
    cmd.env(name, value);
    super::util::run_command(cmd)
}

#[test]
fn a_store_timeout_that_would_not_do_is_refused_before_any_work() {
    let t = TestDir::new();
    t.write("in/a.txt", text(9303, 80));
    let url = unreachable_url();
    for value in [
        "1e300",
        "99999999999999999999",
        "0",
        "-5",
        "abc",
        "inf",
        "NaN",
    ] {
        let run = scan_with(&t, "DUPFIND_STORE_TIMEOUT", value, Some(&url));
        assert_eq!(run.code(), 2, "{value}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{value}");
        assert!(
            run.stderr
                .contains(&format!("DUPFIND_STORE_TIMEOUT={value}: not a timeout"))
                && run.stderr.contains("above 0 and at most 86400"),
            "{value}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
    // Refused as a bad flag is: a scan that reads no URL too, before it starts.
    let local = scan_with(&t, "DUPFIND_STORE_TIMEOUT", "-5", None);
    assert_eq!(local.code(), 2, "{}", local.stderr);
    for value in ["1.5", "60", " "] {
        let run = scan_with(&t, "DUPFIND_STORE_TIMEOUT", value, None);
        assert_eq!(run.code(), 0, "{value}: {}", run.stderr);
    }
}

#[test]
fn rayon_num_threads_has_the_bound_of_dash_j() {
    let t = TestDir::new();
    t.write("in/a.txt", text(9304, 80));
    for value in ["20000", "1025", "abc", "-2"] {
        let run = scan_with(&t, "RAYON_NUM_THREADS", value, None);
        assert_eq!(run.code(), 2, "{value}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{value}");
        assert!(
            run.stderr.contains(&format!("RAYON_NUM_THREADS={value}:"))
                && run.stderr.contains("1 to 1024 (as -j)"),
            "{value}: {}",
            run.stderr
        );
    }
    for value in ["1", "1024", "0", ""] {
        let run = scan_with(&t, "RAYON_NUM_THREADS", value, None);
        assert_eq!(run.code(), 0, "{value}: {}", run.stderr);
    }
    // Refused beside -j too: rayon's global pool, were anything to start one, would read it.
    let mut cmd = t.command(&["scan", "-j", "2", "in"]);
    cmd.env("RAYON_NUM_THREADS", "20000");
    let run = super::util::run_command(cmd);
    assert_eq!(run.code(), 2, "{}", run.stderr);
}

#[test]
fn a_stage_s_threads_have_the_bound_of_scan_s() {
    let t = TestDir::new();
    let run = t.run(&[
        "stage", "sign", "--work", "w", "--shard", "0/1", "-j", "20000",
    ]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("20000 is not in 1..=1024"),
        "{}",
        run.stderr
    );
}
