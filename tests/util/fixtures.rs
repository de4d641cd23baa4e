//! The fixtures many tests start from: two near-duplicate families among unrelated documents (with
//! the checks of their clusters), and a chain of near-duplicates.

use serde_json::Value;

use super::{all_pairs, cluster_paths, clusters, dots, edit, text, word_jaccard, TestDir};

/// Two near-duplicate families among unrelated documents:
/// a.txt ~ sub/a-edited.txt (2 words of 300 edited: Jaccard 286/306),
/// b.txt ~ b-edited.txt ~ deeper/x/b-edited2.txt (1 and 2 words edited), and three others.
pub fn families() -> TestDir {
    let t = TestDir::new();
    let a = text(1, 300);
    let b = text(2, 300);
    t.write("a.txt", &a)
        .write("sub/a-edited.txt", edit(&a, &[40, 200]))
        .write("b.txt", &b)
        .write("b-edited.txt", edit(&b, &[10]))
        .write("deeper/x/b-edited2.txt", edit(&b, &[250, 280]))
        .write("other1.txt", text(3, 300))
        .write("other2.txt", text(4, 300))
        .write("sub/other3.txt", text(5, 300));
    t
}

/// The clusters of [`families`], each a well-formed spanning set of non-exact pairs.
pub fn assert_families(report: &Value) {
    assert_eq!(
        cluster_paths(report),
        vec![
            dots(&["a.txt", "sub/a-edited.txt"]),
            dots(&["b-edited.txt", "b.txt", "deeper/x/b-edited2.txt"]),
        ]
    );
    assert_eq!(report["stats"]["clusters"], 2);
    assert_eq!(report["stats"]["documents"], 8);
    assert_well_formed_clusters(report);
    for p in all_pairs(report) {
        assert_eq!(p["exact"], false, "{p}");
    }
}

/// Ids count up, sizes match, pairs are a spanning set (size − 1 of them, a < b < size) and the
/// min/max similarities are those of the pairs.
pub fn assert_well_formed_clusters(report: &Value) {
    for (i, c) in clusters(report).iter().enumerate() {
        assert_eq!(c["id"], i);
        let size = c["size"].as_u64().unwrap();
        assert_eq!(c["members"].as_array().unwrap().len() as u64, size);
        let pairs = c["pairs"].as_array().unwrap();
        assert_eq!(pairs.len() as u64, size - 1, "a spanning set of pairs");
        let mut sims = Vec::new();
        for p in pairs {
            let (a, b) = (p["a"].as_u64().unwrap(), p["b"].as_u64().unwrap());
            assert!(a < b && b < size, "{p}");
            sims.push(p["similarity"].as_f64().unwrap());
        }
        let min = sims.iter().copied().fold(f64::INFINITY, f64::min);
        let max = sims.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(c["min_similarity"].as_f64().unwrap(), min);
        assert_eq!(c["max_similarity"].as_f64().unwrap(), max);
    }
}

/// A chain a ~ b ~ c ~ d: each neighbour pair at J ≥ 0.8, every other pair below.
pub fn chain() -> TestDir {
    let t = TestDir::new();
    let a = text(131, 300);
    let b = edit(&a, &[20, 60, 100, 140]);
    let c = edit(&b, &[170, 190, 210, 230, 250, 270]);
    let d = edit(&c, &[2, 40, 80, 120]);
    let docs = [&a, &b, &c, &d];
    // The premise, computed independently of dupfind.
    for i in 0..4 {
        for j in i + 1..4 {
            let jac = word_jaccard(docs[i], docs[j], 5);
            assert_eq!(jac >= 0.8, j == i + 1, "{i} {j}: {jac}");
        }
    }
    t.write("a.txt", &a)
        .write("b.txt", &b)
        .write("c.txt", &c)
        .write("d.txt", &d)
        .write("other.txt", text(132, 300));
    t
}
