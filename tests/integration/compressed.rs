//! bzip2, xz, legacy .lzma and lz4 files, as documents and as JSON Lines dumps; the formats
//! recognised but not read.

use std::io::Write;

use serde_json::{json, Value};

use super::util::{edit, text, without_stored_files, TestDir};

pub(super) fn bzip2(data: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

pub(super) fn xz(data: &[u8]) -> Vec<u8> {
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn lzma(data: &[u8]) -> Vec<u8> {
    let options = liblzma::stream::LzmaOptions::new_preset(6).unwrap();
    let stream = liblzma::stream::Stream::new_lzma_encoder(&options).unwrap();
    let mut e = liblzma::write::XzEncoder::new_stream(Vec::new(), stream);
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// As the `lz4` tool writes it: a content checksum.
pub(super) fn lz4(data: &[u8]) -> Vec<u8> {
    let mut info = lz4_flex::frame::FrameInfo::new();
    info.content_checksum = true;
    let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

type Encoder = fn(&[u8]) -> Vec<u8>;

/// (path, error) of each error in a report.
fn errors(report: &Value) -> Vec<(&str, &str)> {
    (report["errors"].as_array().unwrap().iter())
        .map(|e| (e["path"].as_str().unwrap(), e["error"].as_str().unwrap()))
        .collect()
}

/// Each format: its name in messages, its usual suffix, its encoder.
const FORMATS: [(&str, &str, Encoder); 4] = [
    ("bzip2", "bz2", bzip2),
    ("xz", "xz", xz),
    ("lzma", "lzma", lzma),
    ("lz4", "lz4", lz4),
];

/// Three documents (a and b near-duplicates) and a dump of three records (1 and 3 near).
fn corpus() -> Vec<(&'static str, String)> {
    let a = text(601, 300);
    let r = text(611, 300);
    let line = |v: Value| serde_json::to_string(&v).unwrap();
    let dump = [
        line(json!({"id": "r1", "text": r})),
        line(json!({"id": "r2", "text": text(612, 300)})),
        line(json!({"id": "r3", "text": edit(&r, &[40])})),
    ]
    .join("\n")
        + "\n";
    vec![
        ("a.txt", a.clone()),
        ("b.txt", edit(&a, &[150])),
        ("c.txt", text(602, 300)),
        ("d.jsonl", dump),
    ]
}

/// The report with each path's directory and compressed suffix taken off.
fn normalized(mut report: Value, dir: &str, suffix: &str) -> Value {
    fn walk(v: &mut Value, dir: &str, suffix: &str) {
        match v {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    match value {
                        Value::String(s) if key == "path" => {
                            let s2 = s.strip_prefix(dir).unwrap_or(s);
                            *s = s2.strip_suffix(suffix).unwrap_or(s2).to_string();
                        }
                        _ => walk(value, dir, suffix),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| walk(i, dir, suffix)),
            _ => {}
        }
    }
    walk(&mut report, dir, suffix);
    without_stored_files(report)
}

#[test]
fn each_format_gives_the_report_of_the_plain_files_as_documents_and_dumps() {
    let t = TestDir::new();
    for (name, content) in corpus() {
        t.write(format!("plain/{name}"), &content);
        for (_, suffix, encode) in FORMATS {
            t.write(
                format!("{suffix}/{name}.{suffix}"),
                encode(content.as_bytes()),
            );
        }
    }
    let scan = |dir: &str| {
        let run = t.run(&["scan", "--keep", "first", "--pairs", dir]);
        assert_eq!(run.code(), 0, "{dir}: {}", run.stderr);
        run.json()
    };
    let plain = normalized(scan("plain"), "plain/", "");
    assert_eq!(plain["stats"]["documents"], 6, "{plain}");
    assert_eq!(plain["clusters"].as_array().unwrap().len(), 2, "{plain}");
    for (format, suffix, _) in FORMATS {
        let report = normalized(scan(suffix), &format!("{suffix}/"), &format!(".{suffix}"));
        assert_eq!(report, plain, "{format}");
    }
}

#[test]
fn a_truncated_file_of_each_format_is_an_input_error_naming_it() {
    let t = TestDir::new();
    let corpus = corpus();
    t.write("good.txt", &corpus[0].1);
    for (_, suffix, encode) in FORMATS {
        let doc = encode(corpus[2].1.as_bytes());
        t.write(format!("cut.txt.{suffix}"), &doc[..doc.len() - 5]);
        let dump = encode(corpus[3].1.as_bytes());
        t.write(format!("cut.jsonl.{suffix}"), &dump[..dump.len() * 2 / 3]);
    }
    let run = t.run(&["scan", "."]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["skipped"]["binary"], 0);
    let errors = r["errors"].as_array().unwrap();
    for (format, suffix, _) in FORMATS {
        for path in [
            format!("./cut.txt.{suffix}"),
            format!("./cut.jsonl.{suffix}"),
        ] {
            let e = errors
                .iter()
                .find(|e| e["path"] == path.as_str())
                .unwrap_or_else(|| panic!("{path}: {errors:?}"));
            let message = format!("{format} stream is corrupt or truncated: ");
            assert!(e["error"].as_str().unwrap().starts_with(&message), "{e}");
            assert!(run.stderr.contains(&path), "{}", run.stderr);
        }
    }
    // The good file, and the records of each cut dump before its cut, are still read.
    assert!(r["stats"]["documents"].as_u64().unwrap() >= 1, "{r}");
}

/// A .lzma file holds one stream: `xz -d` calls a second one joined to it corrupt, and so
/// must dupfind, or the file reads as an exact copy of its first stream's text and the second's
/// only copy is listed for removal.
#[test]
fn two_lzma_streams_joined_are_an_input_error_not_a_copy_of_the_first() {
    let t = TestDir::new();
    let (a, b) = (text(640, 300), text(641, 300));
    t.write("a.txt", &a);
    t.write(
        "ab.txt.lzma",
        [lzma(a.as_bytes()), lzma(b.as_bytes())].concat(),
    );
    t.write("a0.txt.lzma", [lzma(a.as_bytes()), vec![0; 8]].concat());
    let run = t.run(&["scan", "."]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["documents"], 1, "{r}");
    assert_eq!(r["clusters"], json!([]), "{r}");
    let errors = errors(&r);
    let trailing = "lzma stream is corrupt or truncated: data follows the end of its stream, \
                    and a .lzma file holds one stream (`xz -d` calls it corrupt too)";
    assert_eq!(
        errors,
        [("./a0.txt.lzma", trailing), ("./ab.txt.lzma", trailing)]
    );
    for path in ["./a0.txt.lzma", "./ab.txt.lzma"] {
        assert!(run.stderr.contains(path), "{}", run.stderr);
    }
}

/// xz streams joined are read whole, padding of a multiple of four bytes between and after
/// them skipped, as `xz -d` reads them; any other bytes after a stream are an error.
#[test]
fn joined_xz_streams_are_read_whole_and_trailing_garbage_is_an_error() {
    let t = TestDir::new();
    let (a, b) = (text(642, 300), text(643, 300));
    let (xa, xb) = (xz(a.as_bytes()), xz(b.as_bytes()));
    t.write("ab.txt", format!("{a}{b}"));
    t.write(
        "ab.txt.xz",
        [xa.clone(), vec![0; 4], xb.clone(), vec![0; 8]].concat(),
    );
    t.write(
        "a-garbage.txt.xz",
        [xa.clone(), b"garbage".to_vec()].concat(),
    );
    t.write("a-pad3.txt.xz", [xa, vec![0; 3]].concat());
    let run = t.run(&["scan", "--format", "paths", "."]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    // The joined file is an exact copy of the plain file; neither damaged file is read.
    assert_eq!(run.stdout, "./ab.txt.xz\n", "{}", run.stderr);
    for path in ["./a-garbage.txt.xz", "./a-pad3.txt.xz"] {
        let line = format!("{path}: xz stream is corrupt or truncated: ");
        assert!(run.stderr.contains(&line), "{}", run.stderr);
    }
}

#[test]
fn max_size_bounds_the_decompressed_size_in_each_format() {
    let t = TestDir::new();
    let big = vec![b'a'; 4 << 20];
    for (_, suffix, encode) in FORMATS {
        t.write(format!("bomb.{suffix}"), encode(&big));
    }
    let run = t.run(&["scan", "--max-size", "1M", "."]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["skipped"]["too_large"], FORMATS.len(), "{r}");
    assert_eq!(r["stats"]["documents"], 0);
}

#[test]
fn a_format_recognised_but_not_read_is_a_warning_and_an_input_error() {
    let t = TestDir::new();
    let a = text(620, 300);
    t.write("a.txt", &a)
        .write("b.txt", &a)
        .write("old.txt.Z", b"\x1f\x9d\x90some compressed bytes")
        .write("d.jsonl.lz", b"LZIP\x01\x0csome compressed bytes");
    let run = t.run(&["scan", "."]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["stats"]["skipped"]["binary"], 0);
    assert_eq!(r["stats"]["documents"], 2);
    assert_eq!(r["clusters"].as_array().unwrap().len(), 1);
    let errors = errors(&r);
    assert_eq!(
        errors,
        [
            (
                "./d.jsonl.lz",
                "compressed as lzip, which dupfind does not read; decompress it first"
            ),
            (
                "./old.txt.Z",
                "compressed as Unix compress (.Z), which dupfind does not read; decompress it \
                 first"
            ),
        ]
    );
    let warnings = run.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("./old.txt.Z: compressed as Unix compress")),
        "{warnings:?}"
    );
}

#[test]
fn an_xz_file_needing_more_memory_than_allowed_is_an_input_error_saying_so() {
    let t = TestDir::new();
    let mut data = lzma(text(630, 300).as_bytes());
    // The header's dictionary size: 1 GiB.
    data[1..5].copy_from_slice(&(1u32 << 30).to_le_bytes());
    t.write("huge-window.lzma", data);
    let run = t.run(&["scan", "."]);
    assert_eq!(run.code(), 2, "{}", run.stderr);
    let r = run.json();
    let error = r["errors"][0]["error"].as_str().unwrap();
    assert!(
        error.starts_with("lzma stream needs a dictionary of more than 128 MiB to decompress")
            && error.contains("decompress it first"),
        "{error}"
    );
}

#[test]
fn the_dataset_of_a_compressed_dump_is_the_plain_dump_s() {
    let t = TestDir::new();
    let dump = corpus().pop().unwrap().1;
    t.write("plain/d.jsonl", &dump);
    for (_, suffix, encode) in FORMATS {
        t.write(
            format!("{suffix}/d.jsonl.{suffix}"),
            encode(dump.as_bytes()),
        );
    }
    let dataset = |dir: &str| {
        let out = format!("out-{dir}");
        let run = t.run(&["scan", "--keep", "first", "--write-dataset", &out, dir]);
        assert_eq!(run.code(), 0, "{dir}: {}", run.stderr);
        std::fs::read_to_string(t.join(&out).join("part-00000.jsonl")).unwrap()
    };
    let plain = dataset("plain");
    // Record 3, a near-copy of record 1, is left out.
    assert_eq!(plain.lines().count(), 2, "{plain}");
    for (format, suffix, _) in FORMATS {
        assert_eq!(dataset(suffix), plain, "{format}");
    }
}

/// dupfind with `args`, `input` on its standard input.
pub(super) fn with_stdin(t: &TestDir, args: &[&str], input: &[u8]) -> super::util::Run {
    let mut cmd = t.command(args);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A refused command may exit before it reads: a broken pipe then is no failure.
    let _ = stdin.write_all(input);
    drop(stdin);
    super::util::wait_guarded(child)
}

/// Each cluster's size, similarities and sorted member paths (`-` renamed `stdin_is`), and the
/// document counts: what a scan of standard input shares with a scan of the file it held.
fn summary(r: &Value, stdin_is: &str) -> Value {
    let clusters: Vec<Value> = r["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let mut paths: Vec<&str> = c["members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["path"].as_str().unwrap())
                .map(|p| if p == "-" { stdin_is } else { p })
                .collect();
            paths.sort();
            json!([c["size"], c["min_similarity"], c["max_similarity"], paths])
        })
        .collect();
    let s = &r["stats"];
    json!([
        clusters,
        s["documents"],
        s["bytes"],
        s["exact_groups"],
        s["verified_pairs"]
    ])
}

#[test]
fn standard_input_is_a_document_named_dash() {
    let t = TestDir::new();
    let corpus = corpus();
    t.write("a.txt", &corpus[0].1)
        .write("b.txt", &corpus[1].1)
        .write("c.txt", &corpus[2].1);
    let files = t.run(&["scan", "a.txt", "b.txt", "c.txt"]);
    assert_eq!(files.code(), 0, "{}", files.stderr);
    let expected = summary(&files.json(), "");
    assert_eq!(expected[0].as_array().unwrap().len(), 1, "{expected}");
    // b.txt, a near-duplicate of a.txt, given as `-` (plain, and xz-compressed): it is read
    // again by verification, from the copy.
    for input in [corpus[1].1.as_bytes().to_vec(), xz(corpus[1].1.as_bytes())] {
        let run = with_stdin(&t, &["scan", "a.txt", "-", "c.txt"], &input);
        assert_eq!(run.code(), 0, "{}", run.stderr);
        let r = run.json();
        assert_eq!(summary(&r, "b.txt"), expected);
        let member = r["clusters"][0]["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["path"] == "-")
            .unwrap();
        assert_eq!(member["bytes"], corpus[1].1.len());
    }
    // Over --max-size: skipped as too large, as a file would be.
    let run = with_stdin(&t, &["scan", "--max-size", "1K", "-"], &[b'a'; 5000]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.json()["stats"]["skipped"]["too_large"], 1);
}

#[test]
fn standard_input_with_jsonl_is_a_dump_giving_the_file_s_report() {
    let t = TestDir::new();
    let dump = corpus().pop().unwrap().1;
    t.write("d.jsonl", &dump);
    let file = t.run(&["scan", "--pairs", "--jsonl", "d.jsonl"]);
    assert_eq!(file.code(), 0, "{}", file.stderr);
    let expected = normalized(file.json(), "d.jsonl", "");
    for input in [
        dump.as_bytes().to_vec(),
        lz4(dump.as_bytes()),
        bzip2(dump.as_bytes()),
    ] {
        let run = with_stdin(&t, &["scan", "--pairs", "--jsonl", "-"], &input);
        assert_eq!(run.code(), 0, "{}", run.stderr);
        let r = run.json();
        assert_eq!(r["clusters"][0]["members"][0]["path"], "-");
        assert_eq!(normalized(r, "-", ""), expected);
    }
}

#[test]
fn standard_input_given_twice_or_also_as_the_list_is_refused() {
    let t = TestDir::new();
    t.write("a.txt", "some words here");
    let run = with_stdin(&t, &["scan", "-", "a.txt", "-"], b"text");
    assert_eq!(run.code(), 2);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr
            .contains("`-` (standard input) is given 2 times; it can be read only once"),
        "{}",
        run.stderr
    );
    let run = with_stdin(&t, &["scan", "--files-from", "-", "-"], b"a.txt\n");
    assert_eq!(run.code(), 2);
    assert!(
        run.stderr
            .contains("--files-from - reads the list of inputs from standard input"),
        "{}",
        run.stderr
    );
}
