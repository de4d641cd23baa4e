//! Writers killed (SIGKILL) at any moment: during an update and during a compaction, the index
//! is left at the old generation or the new one, whole (every checksum holds), never a mix; what
//! a killed writer left behind is removed by the next one; and a second writer gets a clear
//! error while the first holds the index.

use std::fs;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::{copy_dir, has_temp, index_files, is_temp, names, report};
use crate::util::{edit, text, TestDir, HANG_GUARD};

/// The generation and documents of an index, after `index info`'s check of every checksum.
fn state(dir: &Path) -> Result<(u64, u64, usize), String> {
    let i = dupfind::api::index_info(dir).map_err(|e| format!("{e:#}"))?;
    Ok((i.generation, i.documents, i.segments.len()))
}

/// Runs `args` on copies of `base` (at `dir` in their arguments), killing each at points spread
/// over a whole run and over the stretch from the moment it starts writing (a temporary file
/// appears); every copy must be left at `old` or `new` (generation, documents, segments), and
/// a killed writer's leftovers must not stop the next run. Returns how many kills left each.
fn kill_at_every_point(
    t: &TestDir,
    base: &str,
    args: &dyn Fn(&str) -> Vec<String>,
    old: (u64, u64, usize),
    new: (u64, u64, usize),
) {
    const KILLS: u32 = 24;
    const WRITE_KILLS: u32 = 8;
    let spawn = |dir: &str| -> Child {
        let a = args(dir);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let mut cmd = t.command(&a);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        cmd.spawn().unwrap()
    };
    // An uninterrupted run: how long one takes, and when it starts writing.
    copy_dir(&t.join(base), &t.join("full"));
    let start = Instant::now();
    let mut child = spawn("full");
    let mut writing = None;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < HANG_GUARD, "the writer hung");
        if writing.is_none() && has_temp(&t.join("full")) {
            writing = Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let duration = start.elapsed();
    assert!(status.success(), "{status:?}");
    assert_eq!(state(&t.join("full")), Ok(new));
    assert_eq!(state(&t.join(base)), Ok(old));
    let writing = writing.unwrap_or(duration);
    let spread =
        |span: Duration, n: u32| (0..n).map(move |i| span.mul_f64(f64::from(i) / f64::from(n - 1)));
    let points: Vec<(bool, Duration)> = (spread(duration, KILLS - WRITE_KILLS).map(|d| (false, d)))
        .chain(spread((duration - writing).mul_f64(1.25), WRITE_KILLS).map(|d| (true, d)))
        .collect();
    let (mut olds, mut with_leftovers, mut news) = (0, 0, 0);
    let mut leftover = None;
    for (i, &(from_write, point)) in points.iter().enumerate() {
        let dir = format!("{base}-kill{i}");
        copy_dir(&t.join(base), &t.join(&dir));
        let mut child = spawn(&dir);
        if from_write {
            let start = Instant::now();
            while !has_temp(&t.join(&dir)) && child.try_wait().unwrap().is_none() {
                assert!(start.elapsed() < HANG_GUARD, "the writer hung");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        std::thread::sleep(point);
        // SIGKILL; a child that has exited already is not harmed.
        child.kill().unwrap();
        let status = child.wait().unwrap();
        let left = names(&t.join(&dir));
        match state(&t.join(&dir)) {
            Ok(s) if s == old => {
                olds += 1;
                if left != names(&t.join(base)) {
                    with_leftovers += 1;
                    leftover.get_or_insert_with(|| dir.clone());
                }
            }
            Ok(s) if s == new => news += 1,
            other => panic!(
                "{dir} killed {point:?} after its {} of {duration:?}: {other:?} ({status:?})",
                if from_write { "write began" } else { "start" }
            ),
        }
        for name in left {
            assert!(
                name == "lock" || name == "manifest" || name.starts_with("seg-") || is_temp(&name),
                "{dir}: {name}"
            );
        }
    }
    eprintln!(
        "{base}: a run takes {duration:?}, writing from {writing:?}; {KILLS} kills: {olds} left \
         the old generation ({with_leftovers} of them with a killed writer's files), {news} the new"
    );
    assert!(olds >= 1, "no kill landed before the commit");
    // A killed writer's files do not stand in the way of the next run, which removes them.
    let dir = leftover.unwrap_or_else(|| format!("{base}-kill0"));
    let a = args(&dir);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let run = t.run(&a);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(state(&t.join(&dir)), Ok(new));
    assert_eq!(names(&t.join(&dir)), names(&t.join("full")));
}

#[test]
fn index_an_update_killed_at_any_moment_leaves_the_old_or_the_new_generation() {
    const OLD_DOCS: usize = 40;
    const NEW_DOCS: usize = 1500;
    let t = TestDir::new();
    for i in 0..OLD_DOCS {
        t.write(format!("base/{i:03}.txt"), text(10_000 + i as u64, 60));
    }
    for i in 0..NEW_DOCS {
        t.write(format!("new/{i:04}.txt"), text(20_000 + i as u64, 60));
    }
    report(&t, &["index", "build", "base", "--index", "gen1", "-q"]);
    let args = |dir: &str| -> Vec<String> {
        ["scan", "new", "--against", dir, "--update", "-q", "-j", "1"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let old = (1, OLD_DOCS as u64, 1);
    let new = (2, (OLD_DOCS + NEW_DOCS) as u64, 2);
    kill_at_every_point(&t, "gen1", &args, old, new);
    assert_eq!(names(&t.join("full")), index_files(&[1, 2]));
}

#[test]
fn index_a_compaction_killed_at_any_moment_leaves_the_old_or_the_new_generation() {
    let t = TestDir::new();
    for i in 0..400 {
        t.write(format!("base/{i:03}.txt"), text(30_000 + i as u64, 80));
    }
    report(&t, &["index", "build", "base", "--index", "idx", "-q"]);
    // Three more segments, one of them superseding documents of the first.
    for step in 0..3 {
        for i in 0..200 {
            t.write(
                format!("more{step}/{i:03}.txt"),
                text(40_000 + 1000 * step + i, 80),
            );
        }
        report(
            &t,
            &[
                "scan",
                &format!("more{step}"),
                "--against",
                "idx",
                "--update",
                "-q",
            ],
        );
    }
    for i in 0..50 {
        t.write(format!("base/{i:03}.txt"), text(50_000 + i as u64, 80));
    }
    report(&t, &["scan", "base", "--against", "idx", "--update", "-q"]);
    // Near-duplicates of a rewritten document, of one never rewritten, and of later ones.
    for (i, from) in [
        "base/000.txt",
        "base/100.txt",
        "more1/005.txt",
        "more2/199.txt",
    ]
    .iter()
    .enumerate()
    {
        let text = fs::read_to_string(t.join(from)).unwrap();
        t.write(format!("probe/{i}.txt"), edit(&text, &[7]));
    }
    let before = report(&t, &["scan", "probe", "--against", "idx", "-q"]);
    assert_eq!(before["stats"]["clusters"], 4, "{before}");
    let old = (5, 1000, 5);
    let new = (6, 1000, 1);
    let args = |dir: &str| -> Vec<String> {
        ["index", "compact", "--index", dir]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    kill_at_every_point(&t, "idx", &args, old, new);
    assert_eq!(names(&t.join("full")), index_files(&[6]));
    // The same report before and after the compaction.
    let after = report(&t, &["scan", "probe", "--against", "full", "-q"]);
    let strip = |mut r: serde_json::Value| {
        r["stats"]["index"]["generation"] = serde_json::json!(0);
        r
    };
    assert_eq!(strip(before), strip(after));
    fs::remove_dir_all(t.join("full")).unwrap();
}
