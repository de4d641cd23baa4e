//! `--normalize`: each step against a reference normalization written here from the definitions
//! of docs/how-it-works.md (the Unicode tables straight, in the documented order, no fast
//! paths), then the tests' own shingling; the order of the list; the index, `explain` and
//! `--verify edit`. (The staged pipeline's parity is in `staged.rs`.)

use serde_json::Value;
use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, GeneralCategoryGroup, UnicodeGeneralCategory};

use super::util::{all_pairs, char_jaccard, cluster_paths, text, word_jaccard, TestDir};

/// `text` normalized by `steps` as docs/how-it-works.md defines them, one whole pass a step,
/// in the documented order whatever order `steps` lists them in.
pub(super) fn reference(steps: &[&str], text: &str) -> String {
    let mut t = text.to_string();
    if steps.contains(&"nfkc") {
        t = t.nfkc().collect();
    }
    if steps.contains(&"accents") {
        t = t
            .nfd()
            .filter(|c| c.general_category() != GeneralCategory::NonspacingMark)
            .nfc()
            .collect();
    }
    if steps.contains(&"digits") {
        t = t
            .chars()
            .map(|c| match c.general_category() {
                GeneralCategory::DecimalNumber => '0',
                _ => c,
            })
            .collect();
    }
    if steps.contains(&"punct") {
        t = t
            .chars()
            .filter(|c| {
                !c.is_ascii_punctuation()
                    && c.general_category_group() != GeneralCategoryGroup::Punctuation
            })
            .collect();
    }
    t
}

/// Prose with punctuation of every kind: commas, full stops, curly quotes, apostrophes,
/// hyphens, brackets, dashes, guillemets, an ASCII symbol.
fn punctuated(seed: u64, words: usize) -> String {
    let plain = text(seed, words);
    let marked: Vec<String> = plain
        .split(' ')
        .enumerate()
        .map(|(i, w)| match i % 9 {
            1 => format!("{w},"),
            2 => format!("“{w}”"),
            3 => format!("{w}'s"),
            4 => format!("{w}-{w}"),
            5 => format!("{w}."),
            6 => format!("({w})"),
            7 => format!("«{w}» —"),
            8 => format!("{w}=x;"),
            _ => w.to_string(),
        })
        .collect();
    marked.join(" ")
}

/// A digit string of `len` digits from `state`, in ASCII or (`script` 1, 2) Arabic-Indic or
/// Devanagari digits.
fn number(state: &mut u64, len: usize, script: u32) -> String {
    (0..len)
        .map(|_| {
            *state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let d = ((*state >> 33) % 10) as u32;
            let zero = [u32::from(b'0'), 0x0660, 0x0966][script as usize];
            char::from_u32(zero + d).unwrap()
        })
        .collect()
}

/// Words with a number every fourth word; `seed` picks the numbers' digits, `script` writes
/// every third number in another script; `longer` lists numbers given one digit more.
fn numbered(words: &str, seed: u64, script: u32, longer: &[usize]) -> String {
    let mut state = seed;
    let out: Vec<String> = words
        .split(' ')
        .enumerate()
        .map(|(i, w)| match i % 4 {
            3 => {
                let len = 2 + i % 3 + usize::from(longer.contains(&i));
                let s = if i % 3 == 0 { script } else { 0 };
                format!("{w} {}", number(&mut state, len, s))
            }
            _ => w.to_string(),
        })
        .collect();
    out.join(" ")
}

/// Words with accents on every other one, precomposed or (every fifth word) as a letter and
/// a combining mark, and capitals.
fn accented(seed: u64, words: usize) -> String {
    let plain = text(seed, words);
    let out: Vec<String> = plain
        .split(' ')
        .enumerate()
        .map(|(i, w)| {
            if i % 2 == 1 {
                return w.to_string();
            }
            let w: String = w
                .chars()
                .map(|c| match c {
                    'e' if i % 5 == 0 => "e\u{301}".to_string(),
                    'e' => "é".into(),
                    'a' => "à".into(),
                    'o' => "ô".into(),
                    'u' => "ü".into(),
                    'i' => "ï".into(),
                    'c' => "ç".into(),
                    'n' => "ñ".into(),
                    c => c.to_string(),
                })
                .collect();
            if i % 6 == 0 {
                w.to_uppercase()
            } else {
                w
            }
        })
        .collect();
    out.join(" ")
}

/// `text` in full-width forms, with the ligatures ﬁ and ﬀ.
fn full_width(text: &str) -> String {
    text.replace("fi", "ﬁ")
        .replace("ff", "ﬀ")
        .chars()
        .map(|c| match c {
            '!'..='~' => char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap(),
            c => c,
        })
        .collect()
}

/// A Japanese passage, and the same with half-width katakana and punctuation and full-width
/// digits, as older systems and some scrapers write it.
pub(super) const JAPANESE: &str =
    "東京の天気は今日も晴れです。2024年の夏はとても暑く、気温は35度を\
     超える日が続きました。コンピュータの研究所では、新しいデータセンターの建設が始まり、多くの技術\
     者がプロジェクトに参加しています。駅の近くにある小さなカフェでは、毎朝7時からコーヒーとパンを\
     売っています。週末には公園で音楽のイベントが開かれ、家族連れや学生たちが集まります。図書館は\
     午後9時まで開いていて、静かに本を読むことができます。";

/// [`JAPANESE`] as half-width katakana, half-width punctuation and full-width digits.
pub(super) fn japanese_half_width() -> String {
    let mut t = JAPANESE.to_string();
    for (full, half) in [
        ("コンピュータ", "ｺﾝﾋﾟｭｰﾀ"),
        ("データセンター", "ﾃﾞｰﾀｾﾝﾀｰ"),
        ("プロジェクト", "ﾌﾟﾛｼﾞｪｸﾄ"),
        ("カフェ", "ｶﾌｪ"),
        ("コーヒー", "ｺｰﾋｰ"),
        ("パン", "ﾊﾟﾝ"),
        ("イベント", "ｲﾍﾞﾝﾄ"),
        ("。", "｡"),
        ("、", "､"),
    ] {
        t = t.replace(full, half);
    }
    t.chars()
        .map(|c| match c {
            '0'..='9' => char::from_u32(c as u32 - 0x30 + 0xFF10).unwrap(),
            c => c,
        })
        .collect()
}

/// One pair of files a step makes near-duplicates, in its own directory under `root`.
pub(super) struct Case {
    /// The step.
    pub step: &'static str,
    /// The directory holding the pair.
    pub dir: String,
    /// The two files' texts.
    pub texts: [String; 2],
}

/// The pairs, one a step (and the Japanese one for nfkc with character shingles in `ja`),
/// written under `root`.
pub(super) fn corpus(t: &TestDir, root: &str) -> Vec<Case> {
    let original = punctuated(10, 300);
    let words = text(20, 300);
    let accents = accented(30, 300);
    let ascii = text(40, 300);
    let cases = [
        (
            "punct",
            [original.clone(), reference(&["punct"], &original)],
        ),
        (
            "digits",
            [
                numbered(&words, 1, 0, &[]),
                numbered(&words, 2, 1, &[7, 151]),
            ],
        ),
        (
            "accents",
            [accents.clone(), reference(&["accents"], &accents)],
        ),
        ("nfkc", [ascii.clone(), full_width(&ascii)]),
    ];
    let cases: Vec<Case> = cases
        .into_iter()
        .map(|(step, texts)| Case {
            step,
            dir: format!("{root}/{step}"),
            texts,
        })
        .collect();
    for c in &cases {
        t.write(format!("{}/a.txt", c.dir), &c.texts[0])
            .write(format!("{}/b.txt", c.dir), &c.texts[1]);
    }
    t.write(format!("{root}/ja/original.txt"), JAPANESE)
        .write(format!("{root}/ja/half-width.txt"), japanese_half_width());
    cases
}

/// Every pair's similarity, checked against the reference normalization under `steps` and the
/// tests' own shingling (`jaccard`) of the two files.
fn assert_reference_similarities(
    t: &TestDir,
    report: &Value,
    steps: &[&str],
    jaccard: fn(&str, &str, usize) -> f64,
) {
    let n = report["params"]["ngram"].as_u64().unwrap() as usize;
    for c in report["clusters"].as_array().unwrap() {
        let read = |i: &Value| {
            let path = c["members"][i.as_u64().unwrap() as usize]["path"]
                .as_str()
                .unwrap();
            reference(steps, &std::fs::read_to_string(t.join(path)).unwrap())
        };
        for p in c["pairs"].as_array().unwrap() {
            let want = jaccard(&read(&p["a"]), &read(&p["b"]), n);
            let got = p["similarity"].as_f64().unwrap();
            assert!((got - want).abs() < 1e-12, "{got} vs {want}: {p}");
        }
    }
}

fn scan(t: &TestDir, args: &[&str]) -> Value {
    let r = t.run(&[&["scan", "-q", "--pairs", "--format", "json"][..], args].concat());
    assert_eq!(r.code(), 0, "{args:?}: {}", r.stderr);
    r.json()
}

#[test]
fn each_step_finds_its_pair_with_the_reference_similarity() {
    let t = TestDir::new();
    let cases = corpus(&t, "c");
    for c in &cases {
        let [a, b] = &c.texts;
        let before = word_jaccard(a, b, 5);
        let after = word_jaccard(&reference(&[c.step], a), &reference(&[c.step], b), 5);
        assert!(
            before < 0.5 && after >= 0.9,
            "{}: {before} → {after}",
            c.step
        );
        // Missed without the step.
        let plain = scan(&t, &[&c.dir]);
        assert_eq!(plain["clusters"], serde_json::json!([]), "{}", c.step);
        let found = scan(&t, &["--normalize", c.step, &c.dir]);
        assert_eq!(found["params"]["normalize"], c.step);
        assert_eq!(cluster_paths(&found).len(), 1, "{}: {found}", c.step);
        assert_reference_similarities(&t, &found, &[c.step], word_jaccard);
        let p = all_pairs(&found)[0]["similarity"].as_f64().unwrap();
        assert!((p - after).abs() < 1e-12, "{}: {p} vs {after}", c.step);
        // Character shingles are cut from the same normalized text.
        let chars = scan(&t, &["--shingle", "char", "--normalize", c.step, &c.dir]);
        assert_eq!(cluster_paths(&chars).len(), 1, "{}: {chars}", c.step);
        assert_reference_similarities(&t, &chars, &[c.step], char_jaccard);
    }
}

#[test]
fn punct_finds_the_copy_stripped_of_its_punctuation() {
    let t = TestDir::new();
    let cases = corpus(&t, "c");
    let punct = &cases[0];
    // The stripped copy shares a third of the original's shingles as it is.
    let [a, b] = &punct.texts;
    assert!(word_jaccard(a, b, 5) < 0.4, "{}", word_jaccard(a, b, 5));
    let r = scan(&t, &["--normalize", "punct", &punct.dir]);
    assert_eq!(
        cluster_paths(&r),
        vec![vec!["c/punct/a.txt", "c/punct/b.txt"]]
    );
    assert_eq!(all_pairs(&r)[0]["similarity"], 1.0);
    assert_eq!(all_pairs(&r)[0]["exact"], false);
    // --verify edit compares the token sequences of the same normalized text.
    let edit = scan(
        &t,
        &["--verify", "edit", "--normalize", "punct", &punct.dir],
    );
    assert_eq!(all_pairs(&edit)[0]["similarity"], 1.0, "{edit}");
    // So does a dump's record, read again from the spill for verification.
    let line = |text: &str| serde_json::json!({ "text": text }).to_string();
    t.write("dump.jsonl", format!("{}\n{}\n", line(a), line(b)));
    let dump = scan(&t, &["--normalize", "punct", "dump.jsonl"]);
    assert_eq!(all_pairs(&dump)[0]["similarity"], 1.0, "{dump}");
}

#[test]
fn nfkc_with_character_shingles_finds_half_width_japanese() {
    let t = TestDir::new();
    corpus(&t, "c");
    let half = japanese_half_width();
    assert_eq!(reference(&["nfkc"], &half), JAPANESE);
    assert!(char_jaccard(JAPANESE, &half, 5) < 0.6);
    let plain = scan(&t, &["--shingle", "char", "c/ja"]);
    assert_eq!(plain["clusters"], serde_json::json!([]));
    let r = scan(&t, &["--shingle", "char", "--normalize", "nfkc", "c/ja"]);
    assert_eq!(
        cluster_paths(&r),
        vec![vec!["c/ja/half-width.txt", "c/ja/original.txt"]]
    );
    assert_eq!(all_pairs(&r)[0]["similarity"], 1.0);
}

#[test]
fn every_step_together_in_any_order_is_one_normalization() {
    let t = TestDir::new();
    corpus(&t, "c");
    let all = ["nfkc", "accents", "digits", "punct"];
    let first = t.run(&[
        "scan",
        "-q",
        "--pairs",
        "--normalize",
        "punct,digits,accents,nfkc",
        "c",
    ]);
    assert_eq!(first.code(), 0, "{}", first.stderr);
    let report = first.json();
    assert_eq!(report["params"]["normalize"], "nfkc,accents,digits,punct");
    assert_reference_similarities(&t, &report, &all, word_jaccard);
    // A pair a step, and the Japanese one, identical after nfkc (one token each: no spaces).
    assert_eq!(cluster_paths(&report).len(), 5, "{report}");
    for order in [
        &["--normalize", "nfkc,accents,digits,punct"][..],
        &[
            "--normalize",
            "digits",
            "--normalize",
            "punct,nfkc,accents,digits",
        ],
        &["--normalize=accents,punct", "--normalize=nfkc,digits"],
    ] {
        let r = t.run(&[&["scan", "-q", "--pairs"][..], order, &["c"]].concat());
        assert_eq!(r.stdout, first.stdout, "{order:?}");
    }
    // none is the default, spelled out.
    let none = t.run(&["scan", "-q", "--pairs", "--normalize", "none", "c"]);
    assert_eq!(none.stdout, t.run(&["scan", "-q", "--pairs", "c"]).stdout);
    assert!(none.json()["params"].get("normalize").is_none());
}

#[test]
fn an_unknown_step_is_refused_naming_the_steps() {
    let t = TestDir::new();
    t.write("a.txt", "text");
    for args in [
        &["scan", "--normalize", "punctuation", "."][..],
        &["scan", "--normalize", "punct,lower", "."],
        &[
            "index",
            "build",
            "--index",
            "idx",
            "--normalize",
            "case",
            ".",
        ],
        &["stage", "init", "--work", "w", "--normalize", "nfc", "."],
        &["explain", "--normalize", "diacritics"],
    ] {
        let r = t.run(args);
        assert_eq!(r.code(), 2, "{args:?}");
        assert!(
            r.stderr.contains("for '--normalize <STEPS>'")
                && r.stderr
                    .contains("[possible values: none, nfkc, accents, digits, punct]"),
            "{args:?}: {}",
            r.stderr
        );
    }
    let r = t.run(&["scan", "--normalize", "none,punct", "."]);
    assert_eq!(r.code(), 2);
    assert!(
        r.stderr
            .contains("--normalize none cannot be given with other steps"),
        "{}",
        r.stderr
    );
    assert!(!t.join("idx").exists() && !t.join("w").exists());
}

#[test]
fn an_index_keeps_its_steps_and_refuses_a_scan_with_others() {
    let t = TestDir::new();
    let cases = corpus(&t, "c");
    let accents = &cases[2];
    t.write("old/a.txt", &accents.texts[0])
        .write("new/b.txt", &accents.texts[1]);
    let build = t.run(&[
        "index",
        "build",
        "old",
        "--index",
        "idx",
        "--normalize",
        "punct,accents",
    ]);
    assert_eq!(build.code(), 0, "{}", build.stderr);
    let info = t.run(&["index", "info", "--index", "idx"]).json();
    assert_eq!(info["params"]["normalize"], "accents,punct");
    // The indexed document's set is derived from its stored content with the same steps.
    let r = scan(
        &t,
        &["new", "--against", "idx", "--normalize", "accents,punct"],
    );
    assert_eq!(
        cluster_paths(&r),
        vec![vec!["old/a.txt", "new/b.txt"]],
        "{r}"
    );
    assert_reference_similarities(&t, &r, &["accents", "punct"], word_jaccard);
    for (steps, uses) in [
        (None, "none"),
        (Some("accents"), "accents"),
        (Some("punct,accents,digits"), "accents,digits,punct"),
    ] {
        for update in [false, true] {
            let mut args = vec!["scan", "new", "--against", "idx"];
            if let Some(s) = steps {
                args.extend(["--normalize", s]);
            }
            if update {
                args.push("--update");
            }
            let r = t.run(&args);
            assert_eq!(r.code(), 2, "{args:?}");
            assert_eq!(r.stdout, "");
            let want = format!(
                "index was built with --normalize accents,punct, this scan uses --normalize {uses}"
            );
            assert!(r.stderr.contains(&want), "{args:?}: {}", r.stderr);
        }
    }
    assert_eq!(
        t.run(&["index", "info", "--index", "idx"]).json()["generation"],
        info["generation"]
    );
}

#[test]
fn explain_shows_the_steps_in_the_order_applied() {
    let t = TestDir::new();
    let r = t.run(&["explain", "--normalize", "punct,nfkc"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(
        r.stdout.contains(
            "normalize    nfkc,punct, in this order, then lowercase and tokens at white space"
        ),
        "{}",
        r.stdout
    );
    let json = t.run(&[
        "explain",
        "-m",
        "simhash",
        "--normalize",
        "digits,accents",
        "--format",
        "json",
    ]);
    assert_eq!(json.json()["normalize"], "accents,digits");
    let plain = t.run(&["explain", "--format", "json"]).json();
    assert!(plain.get("normalize").is_none(), "{plain}");
    assert!(!t.run(&["explain"]).stdout.contains("normalize"));
}
