//! Checks of the report's shape: every documented key, no other, each with its JSON type.
//!
//! The keys of each object are named constants ([`Keys`]), so that the test of docs/output.md can
//! compare the fields it documents with the ones checked here.

use serde_json::Value;

use super::clusters;

/// The keys of one kind of object: those always present, and those present only sometimes.
pub struct Keys {
    pub required: &'static [&'static str],
    pub optional: &'static [&'static str],
}

/// The whole `json` report.
pub const REPORT: Keys = Keys {
    required: &[
        "schema_version",
        "dupfind_version",
        "params",
        "roots",
        "stats",
        "clusters",
        "errors",
    ],
    optional: &["roots_bytes"],
};

/// `params` of a MinHash scan.
pub const PARAMS_MINHASH: Keys = Keys {
    required: &[
        "method",
        "shingle",
        "ngram",
        "sketch",
        "num_perm",
        "bands",
        "rows",
        "threshold",
        "verify",
        "seed",
        "cluster",
        "keep",
    ],
    optional: &["normalize", "min_similarity", "containment", "keep_by"],
};

/// `params` of a SimHash scan.
pub const PARAMS_SIMHASH: Keys = Keys {
    required: &[
        "method",
        "shingle",
        "ngram",
        "bits",
        "max_distance",
        "pieces",
        "verify",
        "seed",
        "cluster",
        "keep",
    ],
    optional: &["normalize", "min_similarity", "keep_by"],
};

/// The counts of `stats`, each a u64.
const STATS_COUNTS: [&str; 12] = [
    "files_seen",
    "documents",
    "bytes",
    "reclaimable_bytes",
    "exact_groups",
    "candidate_pairs",
    "verified_pairs",
    "clusters",
    "unique_documents",
    "exact_copies",
    "near_copies",
    "distinct_shingles",
];

/// `stats`.
pub const STATS: Keys = Keys {
    required: &[
        "files_seen",
        "documents",
        "bytes",
        "reclaimable_bytes",
        "exact_groups",
        "candidate_pairs",
        "verified_pairs",
        "largest_bucket",
        "largest_component",
        "clusters",
        "unique_documents",
        "exact_copies",
        "near_copies",
        "distinct_shingles",
        "skipped",
        "distinct_shingles_error",
    ],
    optional: &["edit_fallbacks", "index"],
};

/// `stats.index` (with `--against` and `index build`).
pub const STATS_INDEX: Keys = Keys {
    required: &["generation", "documents", "unchanged_files"],
    optional: &["updated_generation"],
};

/// `stats.skipped`, every one a u64.
pub const SKIPPED: Keys = Keys {
    required: &[
        "binary",
        "empty",
        "too_short",
        "not_regular",
        "too_large",
        "error",
        "symlink",
        "outside_roots",
        "bad_line",
        "hidden",
        "ignored",
    ],
    optional: &[],
};

/// A cluster (a JSON Lines `cluster` record adds `type`).
pub const CLUSTER: Keys = Keys {
    required: &[
        "id",
        "size",
        "min_similarity",
        "max_similarity",
        "representative",
        "duplicates",
        "members",
        "pairs",
    ],
    optional: &["linked"],
};

/// A member (also the representative, and the first fields of a duplicate or linked member).
pub const MEMBER: Keys = Keys {
    required: &["path", "bytes", "aliases", "content_hash"],
    optional: &[
        "path_bytes",
        "aliases_bytes",
        "line",
        "id",
        "indexed",
        "file",
    ],
};

/// A member's `file`: the file as the scan read it, every value a u64.
pub const FILE: Keys = Keys {
    required: &["device", "inode", "size", "links", "disk_bytes"],
    optional: &["modified_secs", "modified_nanos"],
};

/// A duplicate or linked member of a MinHash scan: the keys beyond a member's.
pub const DUPLICATE_MINHASH: Keys = Keys {
    required: &["similarity", "exact", "estimated"],
    optional: &["distance", "containment"],
};

/// A duplicate or linked member of a SimHash scan: the keys beyond a member's.
pub const DUPLICATE_SIMHASH: Keys = Keys {
    required: &["similarity", "exact", "estimated", "distance"],
    optional: &[],
};

/// A pair of a MinHash scan.
pub const PAIR_MINHASH: Keys = Keys {
    required: &["a", "b", "similarity", "exact"],
    optional: &[
        "jaccard",
        "shared_shingles",
        "edit_similarity",
        "estimate",
        "band",
        "contained",
        "container",
        "containment",
    ],
};

/// A pair of a SimHash scan.
pub const PAIR_SIMHASH: Keys = Keys {
    required: &["a", "b", "similarity", "distance", "exact"],
    optional: &["jaccard", "shared_shingles", "hamming", "cosine", "piece"],
};

/// An entry of `errors` (a JSON Lines `error` record adds `type`).
pub const ERROR: Keys = Keys {
    required: &["path", "error"],
    optional: &["path_bytes", "line"],
};

/// The JSON Lines `header` record.
pub const JSONL_HEADER: Keys = Keys {
    required: &[
        "type",
        "schema_version",
        "dupfind_version",
        "params",
        "roots",
    ],
    optional: &["roots_bytes"],
};

/// The JSON Lines `summary` record.
pub const JSONL_SUMMARY: Keys = Keys {
    required: &["type", "stats"],
    optional: &[],
};

fn assert_keys(v: &Value, required: &[&str], optional: &[&str], what: &str) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{what} is not an object: {v}"));
    for k in required {
        assert!(obj.contains_key(*k), "{what} lacks {k}: {v}");
    }
    for k in obj.keys() {
        assert!(
            required.contains(&k.as_str()) || optional.contains(&k.as_str()),
            "{what} has an undocumented key {k}"
        );
    }
}

fn assert_u64s(v: &Value, keys: &[&str], what: &str) {
    for k in keys {
        assert!(v[*k].is_u64(), "{what}.{k} is not a count: {v}");
    }
}

fn assert_params_schema(p: &Value) {
    let simhash = p["method"] == "simhash";
    if simhash {
        let keys = PARAMS_SIMHASH;
        assert_keys(p, keys.required, keys.optional, "params");
        assert_u64s(
            p,
            &["ngram", "bits", "max_distance", "pieces", "seed"],
            "params",
        );
    } else {
        let keys = PARAMS_MINHASH;
        assert_keys(p, keys.required, keys.optional, "params");
        assert_u64s(p, &["ngram", "num_perm", "bands", "rows", "seed"], "params");
        if let Some(c) = p.get("containment") {
            assert_eq!(c, true, "present only when true: {p}");
        }
        assert!(p["threshold"].is_f64(), "{p}");
        let sketches = ["oph", "kperm", "bottom-k"];
        assert!(sketches.contains(&p["sketch"].as_str().unwrap()), "{p}");
    }
    assert!(["minhash", "simhash"].contains(&p["method"].as_str().unwrap()));
    assert!(["word", "char"].contains(&p["shingle"].as_str().unwrap()));
    let verify = ["exact", "estimate", "edit"];
    assert!(verify.contains(&p["verify"].as_str().unwrap()), "{p}");
    assert!(["components", "strict"].contains(&p["cluster"].as_str().unwrap()));
    let keeps = [
        "first",
        "largest",
        "smallest",
        "newest",
        "oldest",
        "shortest-path",
        "none",
    ];
    assert!(keeps.contains(&p["keep"].as_str().unwrap()), "{p}");
    if let Some(by) = p.get("keep_by") {
        let by = by.as_str().unwrap();
        assert!(by.ends_with(":max") || by.ends_with(":min"), "{p}");
        assert_ne!(p["keep"], "none", "{p}");
    }
    if let Some(m) = p.get("min_similarity") {
        assert!(m.is_f64(), "{p}");
    }
}

fn assert_member_schema(m: &Value, extra_required: &[&str], extra_optional: &[&str]) {
    assert_keys(
        m,
        &[MEMBER.required, extra_required].concat(),
        &[MEMBER.optional, extra_optional].concat(),
        "member",
    );
    assert!(m["path"].is_string() && m["bytes"].is_u64(), "{m}");
    if let Some(indexed) = m.get("indexed") {
        assert_eq!(indexed, true, "present only when true: {m}");
    }
    if let Some(line) = m.get("line") {
        assert!(line.as_u64().is_some_and(|l| l >= 1), "{m}");
    }
    if let Some(id) = m.get("id") {
        assert!(id.is_string() && m.get("line").is_some(), "{m}");
    }
    let aliases = m["aliases"].as_array().unwrap();
    assert!(aliases.iter().all(Value::is_string), "{m}");
    if let Some(pb) = m.get("path_bytes") {
        assert!(pb.is_string(), "{m}");
    }
    if let Some(ab) = m.get("aliases_bytes") {
        let ab = ab.as_array().unwrap();
        assert_eq!(ab.len(), aliases.len(), "{m}");
        assert!(ab.iter().all(|b| b.is_null() || b.is_string()), "{m}");
    }
    let hash = m["content_hash"].as_str().unwrap();
    assert!(
        hash.len() == 32 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
        "{m}"
    );
    if let Some(f) = m.get("file") {
        assert!(m.get("line").is_none() && m.get("indexed").is_none(), "{m}");
        assert_keys(f, FILE.required, FILE.optional, "file");
        assert!(f["links"].as_u64().is_some_and(|l| l >= 1), "{m}");
        for k in ["device", "inode", "size", "disk_bytes", "modified_nanos"] {
            assert!(f.get(k).is_none_or(Value::is_u64), "{m}");
        }
        assert!(f.get("modified_secs").is_none_or(Value::is_i64), "{m}");
    }
}

/// `indexed_clusters`: clusters represented by an indexed document (`--against`), which have
/// no original among the documents of the run.
fn assert_stats_schema(s: &Value, indexed_clusters: u64) {
    assert_keys(s, STATS.required, STATS.optional, "stats");
    if let Some(f) = s.get("edit_fallbacks") {
        assert!(f.is_u64(), "{s}");
    }
    if let Some(index) = s.get("index") {
        let keys = STATS_INDEX;
        assert_keys(index, keys.required, keys.optional, "stats.index");
        assert_u64s(index, keys.required, "stats.index");
        if let Some(g) = index.get("updated_generation") {
            assert_eq!(
                g.as_u64(),
                index["generation"].as_u64().map(|g| g + 1),
                "{s}"
            );
        }
    } else {
        assert_eq!(indexed_clusters, 0, "indexed members without an index: {s}");
    }
    assert!(s["distinct_shingles_error"].is_f64(), "{s}");
    let parts = [
        "unique_documents",
        "clusters",
        "exact_copies",
        "near_copies",
    ];
    let sum: u64 = parts.iter().map(|k| s[*k].as_u64().unwrap()).sum();
    // With --against, a cluster represented by an indexed document has no original among
    // the documents of the run.
    let documents = s["documents"].as_u64().unwrap();
    assert_eq!(sum, documents + indexed_clusters, "{s}");
    assert_u64s(s, &STATS_COUNTS, "stats");
    let skipped = SKIPPED;
    assert_keys(
        &s["skipped"],
        skipped.required,
        skipped.optional,
        "stats.skipped",
    );
    assert_u64s(&s["skipped"], skipped.required, "stats.skipped");
}

/// A cluster; `extra` are keys beyond the cluster's own (the `type` of a JSON Lines record).
fn assert_cluster_schema(c: &Value, simhash: bool, extra: &[&str]) {
    let required = [CLUSTER.required, extra].concat();
    assert_keys(c, &required, CLUSTER.optional, "cluster");
    assert_u64s(c, &["id", "size"], "cluster");
    assert!(
        c["min_similarity"].is_f64() && c["max_similarity"].is_f64(),
        "{c}"
    );
    // `members` names each member; its hash and file are written with its role only.
    for m in c["members"].as_array().unwrap() {
        assert!(
            m.get("content_hash").is_none() && m.get("file").is_none(),
            "{m}"
        );
        let mut with_role = m.clone();
        with_role["content_hash"] = Value::from("0".repeat(32));
        assert_member_schema(&with_role, &[], &[]);
    }
    // Null with --keep none, when no member is kept.
    let kept = !c["representative"].is_null();
    if kept {
        assert_member_schema(&c["representative"], &[], &[]);
    }
    let duplicates = c["duplicates"].as_array().unwrap();
    // `linked` is written only when not empty; with `duplicates` it
    // lists every member but the representative (every member when none is kept).
    let linked = c.get("linked").map_or(&[][..], |l| l.as_array().unwrap());
    assert!(c.get("linked").is_none() || !linked.is_empty(), "{c}");
    assert!(kept || linked.is_empty(), "{c}");
    assert_eq!(
        duplicates.len() + linked.len() + usize::from(kept),
        c["members"].as_array().unwrap().len(),
        "{c}"
    );
    for d in duplicates.iter().chain(linked) {
        let keys = if simhash {
            DUPLICATE_SIMHASH
        } else {
            DUPLICATE_MINHASH
        };
        assert_member_schema(d, keys.required, keys.optional);
        assert!(
            d["similarity"].is_f64() && d["estimated"].is_boolean(),
            "{d}"
        );
    }
    for p in c["pairs"].as_array().unwrap() {
        if simhash {
            assert_keys(p, PAIR_SIMHASH.required, PAIR_SIMHASH.optional, "pair");
            assert!(p["distance"].is_u64(), "{p}");
        } else {
            assert_keys(p, PAIR_MINHASH.required, PAIR_MINHASH.optional, "pair");
        }
        assert_u64s(p, &["a", "b"], "pair");
        assert!(p["similarity"].is_f64() && p["exact"].is_boolean(), "{p}");
    }
}

fn assert_error_schema(e: &Value, extra: &[&str]) {
    assert_keys(
        e,
        &[ERROR.required, extra].concat(),
        ERROR.optional,
        "error",
    );
    assert!(e["path"].is_string() && e["error"].is_string(), "{e}");
    if let Some(line) = e.get("line") {
        assert!(line.as_u64().is_some_and(|l| l >= 1), "{e}");
    }
}

/// Clusters represented by an indexed document; an indexed member always represents its
/// cluster.
fn indexed_clusters(clusters: &[Value]) -> u64 {
    let mut n = 0;
    for c in clusters {
        let members = c["members"].as_array().unwrap();
        if members.iter().any(|m| m.get("indexed").is_some()) {
            if !c["representative"].is_null() {
                assert_eq!(c["representative"]["indexed"], true, "{c}");
            }
            n += 1;
        }
    }
    n
}

/// Walks a whole `json` report: every documented key, no other, each with its JSON type.
pub fn assert_schema(report: &Value) {
    assert_keys(report, REPORT.required, REPORT.optional, "report");
    assert_eq!(report["schema_version"], 2);
    assert_eq!(report["dupfind_version"], env!("CARGO_PKG_VERSION"));
    assert_params_schema(&report["params"]);
    assert_stats_schema(&report["stats"], indexed_clusters(clusters(report)));
    let simhash = report["params"]["method"] == "simhash";
    for c in clusters(report) {
        assert_cluster_schema(c, simhash, &[]);
    }
    for e in report["errors"].as_array().unwrap() {
        assert_error_schema(e, &[]);
    }
}

/// The same for JSON Lines records.
pub fn assert_jsonl_schema(records: &[Value]) {
    let (first, last) = (&records[0], &records[records.len() - 1]);
    let header = JSONL_HEADER;
    assert_keys(first, header.required, header.optional, "header");
    assert_eq!(first["type"], "header");
    assert_params_schema(&first["params"]);
    let simhash = first["params"]["method"] == "simhash";
    let summary = JSONL_SUMMARY;
    assert_keys(last, summary.required, summary.optional, "summary");
    assert_eq!(last["type"], "summary");
    let body = &records[1..records.len() - 1];
    let cluster_records: Vec<Value> = (body.iter())
        .filter(|r| r["type"] == "cluster")
        .cloned()
        .collect();
    assert_stats_schema(&last["stats"], indexed_clusters(&cluster_records));
    for r in &records[1..records.len() - 1] {
        match r["type"].as_str() {
            Some("cluster") => assert_cluster_schema(r, simhash, &["type"]),
            Some("error") => assert_error_schema(r, &["type"]),
            other => panic!("unexpected record type {other:?}: {r}"),
        }
    }
}
