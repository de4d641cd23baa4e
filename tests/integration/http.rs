//! `http(s)://` inputs, read from python's `http.server` (`util::www`): a server that ignores
//! `Range` and knows no WebDAV, as many static servers.

use super::util::www::Www;
use super::util::{
    cluster_paths, cluster_paths_below, edit, stats_but_reclaimable as stats, text, TestDir,
};

#[test]
fn documents_and_dumps_of_a_server_that_ignores_range_read_as_on_disk() {
    let t = TestDir::new();
    let a = text(9301, 300);
    t.write("www/a1.txt", &a)
        .write("www/a2.txt", edit(&a, &[40]))
        .write("www/a3.txt", edit(&a, &[200]))
        .write("www/b.txt", text(9302, 300));
    let lines: String = [a.clone(), edit(&a, &[7]), text(9303, 300)]
        .iter()
        .map(|s| format!("{}\n", serde_json::json!({ "text": s })))
        .collect();
    t.write("www/d.jsonl", lines);
    // Past the first window a dump is read (64 KiB): the rest is asked for from an offset.
    let big: String = (0..120u64)
        .map(|i| match i % 40 {
            0 => edit(&a, &[i as usize]),
            _ => text(9400 + i, 300),
        })
        .map(|s| format!("{}\n", serde_json::json!({ "text": s })))
        .collect();
    assert!(big.len() > 200 << 10);
    t.write("www/big.jsonl", big);
    let www = Www::start(&t.join("www"));
    let base = www.url("");
    let cases: [&[&str]; 5] = [
        &["a1.txt"],
        &["a2.txt", "a1.txt", "b.txt", "a3.txt"],
        &["d.jsonl"],
        &["d.jsonl", "a1.txt"],
        &["big.jsonl"],
    ];
    for names in cases {
        let urls: Vec<String> = names.iter().map(|n| www.url(n)).collect();
        let files: Vec<String> = names.iter().map(|n| format!("www/{n}")).collect();
        let args = |inputs: &[String]| {
            let mut a = vec!["scan".to_string(), "--text-field".into(), "text".into()];
            a.extend_from_slice(inputs);
            a
        };
        let disk = t.run(&args(&files).iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(disk.code(), 0, "{names:?}: {}", disk.stderr);
        let remote = t.run(&args(&urls).iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(remote.code(), 0, "{names:?}: {}", remote.stderr);
        assert!(remote.warnings().is_empty(), "{names:?}: {}", remote.stderr);
        let (remote, disk) = (remote.json(), disk.json());
        assert_eq!(
            cluster_paths_below(&remote, &base),
            cluster_paths_below(&disk, "www/"),
            "{names:?}"
        );
        assert_eq!(stats(&remote), stats(&disk), "{names:?}");
        assert_eq!(remote["errors"], serde_json::json!([]), "{names:?}");
    }
}

#[test]
fn a_missing_url_is_not_found_at_once_and_a_directory_is_not_listed() {
    let t = TestDir::new();
    let a = text(9311, 300);
    t.write("www/a.txt", &a)
        .write("www/sub/b.txt", edit(&a, &[9]));
    let www = Www::start(&t.join("www"));
    let missing = www.url("missing.txt");
    let r = t.run(&["scan", &missing, "www"]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let error = r.json()["errors"][0].clone();
    assert_eq!(error["path"], missing.as_str());
    assert_eq!(
        error["error"],
        "not found: the web server has no document at this URL (404 Not Found)"
    );
    assert_eq!(
        r.warnings(),
        [format!(
            "dupfind: warning: {missing}: not found: the web server has no document at this URL (404 Not Found)"
        )
        .as_str()]
    );
    // The local root is scanned beside it.
    assert_eq!(cluster_paths(&r.json()), [["www/a.txt", "www/sub/b.txt"]]);

    // A web server's directory: no listing asked for, whether the server would list it or not.
    for dir in [www.url("sub/"), www.url("")] {
        let r = t.run(&["scan", &dir]);
        assert_eq!(r.code(), 2, "{dir}: {}", r.stderr);
        let error = r.json()["errors"][0]["error"].clone();
        assert!(
            error.as_str().unwrap().contains("cannot be listed"),
            "{dir}: {error}"
        );
        assert!(!r.stderr.contains('<'), "{dir}: {}", r.stderr);
    }
}
