//! The documentation against the binary: the example corpus gives the clusters the README shows.

use std::path::Path;
use std::process::{Command, Stdio};

use super::util::schema::assert_schema;
use super::util::{self, cluster_paths, dots, run_command};

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
