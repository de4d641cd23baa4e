//! The staged pipeline's work files are bound to their place, their attempt and the run's
//! options: a file copied into another shard's or partition's place, a summary copied over
//! another, a stage run again after its consumer, a `run.json` edited after a stage ran, or a
//! flipped bit is an error naming the file and what to run, never a report; `stage status`
//! says what is stale and `run-local.sh --resume` runs exactly that.

use std::fs;
use std::path::Path;

use super::staged::{corpus, local_driver, staged};
use super::util::{bin, run_command, Run, TestDir};

/// A staged run of the shared corpus at 2 shards and 2 partitions in `w`, and scan's report.
fn run_ok(t: &TestDir) -> String {
    corpus(t);
    let scan = t.run(&["scan", "-q", "c"]);
    let ok = staged(t, "w", 2, 2, &["-q", "c"]);
    assert_eq!(ok.code(), 0, "{}", ok.stderr);
    assert_eq!(ok.stdout, scan.stdout);
    scan.stdout
}

/// Asserts that `r` failed with exit 2, printed nothing on stdout and said `want` on stderr.
fn refused(r: &Run, want: &str) {
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(r.stderr.contains(want), "wanted {want:?} in:\n{}", r.stderr);
}

fn swap(a: &Path, b: &Path) {
    let (x, y) = (fs::read(a).unwrap(), fs::read(b).unwrap());
    fs::write(a, y).unwrap();
    fs::write(b, x).unwrap();
}

fn report(t: &TestDir) -> Run {
    t.run(&["stage", "report", "--work", "w"])
}

#[test]
fn key_files_of_one_shard_swapped_between_partitions_are_refused_by_group() {
    let t = TestDir::new();
    run_ok(&t);
    swap(
        &t.join("w/sign/shard-000000.keys-000000.parquet"),
        &t.join("w/sign/shard-000000.keys-000001.parquet"),
    );
    let r = t.run(&["stage", "group", "--work", "w", "--part", "0/2"]);
    refused(
        &r,
        "shard-000000.keys-000000.parquet was written for stage sign, shard 0, partition 1, not \
         stage sign, shard 0, partition 0: it is misplaced",
    );
}

#[test]
fn a_summary_copied_over_another_tasks_is_refused_by_report() {
    for (from, to, want) in [
        (
            "verify/part-000000.json",
            "verify/part-000001.json",
            "part-000001.json was written by stage verify, partition 0, not stage verify, \
             partition 1",
        ),
        (
            "sign/shard-000000.json",
            "sign/shard-000001.json",
            "shard-000001.json was written by stage sign, shard 0, not stage sign, shard 1",
        ),
        (
            "route/shard-000001.json",
            "route/shard-000000.json",
            "shard-000000.json was written by stage route, shard 1",
        ),
    ] {
        let t = TestDir::new();
        run_ok(&t);
        fs::copy(t.join("w").join(from), t.join("w").join(to)).unwrap();
        refused(&report(&t), want);
        // And the stages that read it refuse it too.
        if to.starts_with("sign") {
            let r = t.run(&["stage", "group", "--work", "w", "--part", "0/2"]);
            refused(&r, want);
        }
    }
}

#[test]
fn a_shard_signed_again_after_group_makes_the_run_stale_until_resumed() {
    let t = TestDir::new();
    let scan = run_ok(&t);
    // A retried task: shard 1 signed again after group consumed its keys.
    let r = t.run(&["stage", "sign", "--work", "w", "--shard", "1/2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    refused(&report(&t), "group/part-000000.json was made from attempt");
    assert!(report(&t)
        .stderr
        .contains("run `dupfind stage group --part 0/2 --work w` again"));
    // One partition grouped again: the other, and everything after, is still stale.
    let r = t.run(&["stage", "group", "--work", "w", "--part", "0/2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let status = t.run(&["stage", "status", "--work", "w"]);
    assert_eq!(status.code(), 0, "{}", status.stderr);
    assert!(
        status.stdout.contains("group       1 of 2 done")
            && status.stdout.contains("partition 1: stale")
            && status.stdout.contains("components  0 of 1 done")
            && status
                .stdout
                .contains("next: dupfind stage group --part 1/2"),
        "{}",
        status.stdout
    );
    let todo = t.run(&["stage", "status", "--work", "w", "--todo", "group"]);
    assert_eq!(todo.stdout, "1\n");
    // --resume runs exactly what is stale (and needs no --shards or --parts), and the report is
    // scan's again.
    let kept = t.join("w/sign/shard-000000.docs.parquet");
    let signed = fs::metadata(&kept).unwrap().modified().unwrap();
    let bin = super::util::bin();
    let again = local_driver(
        &t,
        &["--resume", "--work", "w", "--dupfind", bin, "-q", "c"],
    );
    assert_eq!(again.code(), 0, "{}", again.stderr);
    assert_eq!(again.stdout, scan);
    assert_eq!(fs::metadata(&kept).unwrap().modified().unwrap(), signed);
    let status = t.run(&["stage", "status", "--work", "w"]);
    assert!(
        status.stdout.contains("every task is done"),
        "{}",
        status.stdout
    );
}

#[test]
fn options_edited_in_run_json_after_sign_are_refused() {
    let t = TestDir::new();
    run_ok(&t);
    let plan = fs::read_to_string(t.join("w/run.json")).unwrap();
    let edited = plan.replace("\"threshold\": null", "\"threshold\": 0.3");
    assert_ne!(edited, plan, "run.json names the threshold:\n{plan}");
    fs::write(t.join("w/run.json"), &edited).unwrap();
    for args in [
        &["stage", "report", "--work", "w"][..],
        &["stage", "verify", "--work", "w", "--part", "0/2"],
        &["stage", "status", "--work", "w"],
    ] {
        refused(
            &t.run(args),
            "run.json was changed after `stage init` (its contents no longer match its digest)",
        );
    }
}

#[test]
fn a_flipped_bit_or_a_leftover_of_an_earlier_attempt_is_refused_by_name() {
    let t = TestDir::new();
    run_ok(&t);
    // The keys file of an earlier attempt of shard 1, beside the summary of a later one.
    let keys = t.join("w/sign/shard-000001.keys-000001.parquet");
    let first = fs::read(&keys).unwrap();
    let r = t.run(&["stage", "sign", "--work", "w", "--shard", "1/2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let second = fs::read(&keys).unwrap();
    fs::write(&keys, &first).unwrap();
    refused(
        &t.run(&["stage", "group", "--work", "w", "--part", "1/2"]),
        "shard-000001.keys-000001.parquet was written by another attempt of its stage",
    );
    // One bit of a value in an uncompressed column: the file still decodes.
    let mut flipped = second.clone();
    let at = flipped.len() / 3;
    flipped[at] ^= 0x10;
    fs::write(&keys, &flipped).unwrap();
    refused(
        &t.run(&["stage", "group", "--work", "w", "--part", "1/2"]),
        "shard-000001.keys-000001.parquet is damaged: its CRC-32 is",
    );
    // A summary with one byte changed.
    fs::write(&keys, &second).unwrap();
    let summary = t.join("w/sign/shard-000001.json");
    let text = fs::read_to_string(&summary).unwrap();
    let documents = text.lines().find(|l| l.contains("\"documents\"")).unwrap();
    fs::write(
        &summary,
        text.replace(documents, &documents.replace(": ", ": 1")),
    )
    .unwrap();
    refused(
        &t.run(&["stage", "group", "--work", "w", "--part", "1/2"]),
        "shard-000001.json is damaged (its seal does not match its contents",
    );
}

#[test]
fn a_work_file_whose_footer_declares_billions_of_schema_children_is_refused_before_it_is_decoded() {
    let t = TestDir::new();
    run_ok(&t);
    // The parquet fuzz target's 47-byte file whose root declares 2³¹ − 1 children, in a group
    // file's place (fuzz/regressions/staged_work/group-file-footer-…): the parquet crate
    // reserved 16 GiB for them before the file's lineage and CRC-32 were checked, an abort
    // under `ulimit -v`.
    let bad = fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/regressions/parquet/schema-num-children-i32-max"),
    )
    .unwrap();
    fs::write(t.join("w/group/part-000000.parquet"), &bad[1..]).unwrap();
    // Address space as a cgroup or a batch system limits it: a shell that becomes dupfind.
    let mut limited = std::process::Command::new("sh");
    limited
        .args(["-c", "ulimit -v 4194304 && exec \"$0\" \"$@\""])
        .arg(bin())
        .args(["stage", "components", "--work", "w"])
        .current_dir(t.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let r = run_command(limited);
    refused(
        &r,
        "group/part-000000.parquet is damaged or truncated (not a Parquet file a stage wrote): \
         not a readable Parquet file: corrupt footer: schema element 0 declares 2147483647 \
         children",
    );
}

#[test]
fn a_damaged_or_lost_work_file_marks_its_producer_to_run_again_and_resume_repairs_it() {
    let t = TestDir::new();
    let scan = run_ok(&t);
    let docs = t.join("w/sign/shard-000000.docs.parquet");
    let mut bytes = fs::read(&docs).unwrap();
    let at = bytes.len() / 3;
    bytes[at] ^= 0x01;
    fs::write(&docs, &bytes).unwrap();
    let status = t.run(&["stage", "status", "--work", "w"]);
    assert_eq!(status.code(), 0, "{}", status.stderr);
    assert!(
        status.stdout.contains("sign        1 of 2 done")
            && status.stdout.contains(
                "shard 0: invalid: sign/shard-000000.docs.parquet, which it wrote, is damaged"
            )
            && status
                .stdout
                .contains("next: dupfind stage sign --shard 0/2"),
        "{}",
        status.stdout
    );
    let todo = t.run(&["stage", "status", "--work", "w", "--todo", "sign"]);
    assert_eq!(todo.stdout, "0\n");
    let bin = super::util::bin();
    let again = local_driver(
        &t,
        &["--resume", "--work", "w", "--dupfind", bin, "-q", "c"],
    );
    assert_eq!(again.code(), 0, "{}", again.stderr);
    assert_eq!(again.stdout, scan);

    // A file gone: the same.
    fs::remove_file(t.join("w/sign/shard-000001.keys-000000.parquet")).unwrap();
    let status = t.run(&["stage", "status", "--work", "w"]);
    assert!(
        status.stdout.contains(
            "shard 1: invalid: sign/shard-000001.keys-000000.parquet, which it wrote, is missing"
        ),
        "{}",
        status.stdout
    );
    let again = local_driver(
        &t,
        &["--resume", "--work", "w", "--dupfind", bin, "-q", "c"],
    );
    assert_eq!(again.code(), 0, "{}", again.stderr);
    assert_eq!(again.stdout, scan);
}
