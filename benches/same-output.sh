#!/usr/bin/env bash
# Byte-identity check: the current release build against a pinned earlier one, same inputs, same
# seed, every mode a refactor must leave unchanged. Prints one line per case and exits 1 on the
# first difference (with a diff of the two outputs).
#
#   BASELINE=path/to/old/dupfind benches/same-output.sh            10k benchmark corpus + example
#   BASELINE=... benches/same-output.sh --docs 2000                 a smaller generated corpus
#
# Every case compares stdout, stderr and the exit status. Cases: defaults, --pairs, --cluster
# strict, --cluster components, -m simhash, --shingle char, --containment, --verify edit,
# --verify estimate, --sketch bottom-k, --sketch kperm, --format text, --format jsonl, -j1 and
# -j2, a JSON Lines dump (plain, gzip, zstd when the zstd command is there), seven of them again
# with -v (its notes), and index build followed by scan --against --update (reports; index info
# and the index files' sizes when both builds write the same index format). The build is taken
# from $CARGO_TARGET_DIR when it is set.
set -euo pipefail
cd "$(dirname "$0")/.."

docs=10000 work=target/same-output
while [ $# -gt 0 ]; do
    case "$1" in
        --docs) docs=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        *) echo "same-output.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
if [ -z "${BASELINE:-}" ]; then
    echo "same-output.sh: set BASELINE to the pinned build to compare with" >&2
    exit 2
fi
baseline=$(realpath "$BASELINE")

cargo build --release --quiet --bin dupfind
cargo build --release --quiet --example corpus
target=${CARGO_TARGET_DIR:-target}
bin=$(realpath "$target/release/dupfind")
gen=$target/release/examples/corpus
mkdir -p "$work"
work=$(realpath "$work")
corpus=$work/corpus-$docs
if [ ! -d "$corpus" ]; then
    "$gen" gen --out "$corpus.tmp" --docs "$docs" --seed 1 >&2
    mv "$corpus.tmp" "$corpus"
fi
if [ ! -f "$work/dump-$docs.jsonl" ]; then
    "$gen" gen --jsonl "$work/dump-$docs.jsonl.tmp" --docs "$docs" --seed 2 >&2
    mv "$work/dump-$docs.jsonl.tmp" "$work/dump-$docs.jsonl"
    gzip -1 -k -c "$work/dump-$docs.jsonl" > "$work/dump-$docs.jsonl.gz"
fi
if command -v zstd > /dev/null && [ ! -f "$work/dump-$docs.jsonl.zst" ]; then
    zstd -q -3 -k "$work/dump-$docs.jsonl" -o "$work/dump-$docs.jsonl.zst"
fi

cases=0
# same NAME ARGS...: runs both builds from $work with ARGS and compares stdout, stderr and the status.
same() {
    local name=$1; shift
    local rc_new=0 rc_old=0
    (cd "$work" && "$bin" "$@" > "$work/new.out" 2> "$work/new.err") || rc_new=$?
    (cd "$work" && "$baseline" "$@" > "$work/old.out" 2> "$work/old.err") || rc_old=$?
    if [ "$rc_new" != "$rc_old" ] || ! cmp -s "$work/new.out" "$work/old.out" || ! cmp -s "$work/new.err" "$work/old.err"; then
        echo "DIFFERENT: $name (exit $rc_new, baseline $rc_old): $*"
        diff "$work/old.out" "$work/new.out" | head -40
        diff "$work/old.err" "$work/new.err" | head -20
        exit 1
    fi
    cases=$((cases + 1))
    printf 'same  %-34s %8d bytes  exit %d\n' "$name" "$(wc -c < "$work/new.out")" "$rc_new"
}

c=$(basename "$corpus")
example=$(realpath tests/data/corpus)
for j in 1 2; do
    same "defaults -j$j" scan -q -j "$j" "$c"
    same "--pairs -j$j" scan -q -j "$j" --pairs "$c"
done
same "--cluster strict" scan -q --cluster strict "$c"
same "--cluster components" scan -q --cluster components "$c"
same "--cluster components --pairs" scan -q --cluster components --pairs "$c"
same "-m simhash" scan -q -m simhash "$c"
same "-m simhash --max-distance 6" scan -q -m simhash --max-distance 6 --pairs "$c"
same "--shingle char -j1" scan -q -j1 --shingle char "$c"
same "--shingle char -j2" scan -q -j2 --shingle char "$c"
same "--containment" scan -q --containment "$c"
same "--containment --pairs" scan -q --containment --pairs -t 0.7 "$c"
same "--verify edit" scan -q --verify edit "$c"
same "--verify edit --pairs" scan -q --verify edit --pairs --cluster components "$c"
same "--verify estimate" scan -q --verify estimate "$c"
same "--sketch bottom-k" scan -q --sketch bottom-k --verify estimate "$c"
same "--sketch kperm" scan -q --sketch kperm "$c"
same "--min-similarity 0.9" scan -q --min-similarity 0.9 --keep largest "$c"
same "--format text" scan -q --format text "$c"
same "--format jsonl" scan -q --format jsonl --cluster components "$c"
same "example corpus" scan -q "$example"
same "example corpus, text" scan -q --format text --pairs "$example"
same "JSON Lines dump" scan -q "dump-$docs.jsonl"
same "JSON Lines dump, gzip" scan -q --pairs "dump-$docs.jsonl.gz"
if [ -f "$work/dump-$docs.jsonl.zst" ]; then
    same "JSON Lines dump, zstd" scan -q --pairs "dump-$docs.jsonl.zst"
fi

# Without -q: the notes and warnings -v prints (no timings among them) must agree too.
same "-v defaults" scan -v "$c"
same "-v --containment --pairs" scan -v --containment --pairs "$c"
same "-v -m simhash --pairs" scan -v -m simhash --pairs "$c"
same "-v --verify edit" scan -v --verify edit "$c"
same "-v --sketch bottom-k" scan -v --sketch bottom-k --verify estimate --pairs "$c"
same "-v -t 0.5 --num-perm 64" scan -v -t 0.5 --num-perm 64 "$c"
same "-v dump" scan -v --pairs "dump-$docs.jsonl"
# The index: built from the first half of the corpus, then the rest scanned against it and
# added. Each build writes its own index; the reports, `index info` and the files must agree.
rm -rf "$work/half-a" "$work/half-b" "$work/idx-new" "$work/idx-old"
mkdir -p "$work/half-a" "$work/half-b"
find "$corpus" -type f -name '*.txt' | sort | awk -v a="$work/half-a" -v b="$work/half-b" \
    '{ printf "%s\t%s\n", $0, (NR % 2 ? a : b) }' | while IFS=$'\t' read -r f to; do
    ln "$f" "$to/$(basename "$f")" 2> /dev/null || cp "$f" "$to/"
done
index_case() { # name build|update
    local rc_new=0 rc_old=0
    if [ "$2" = build ]; then
        (cd "$work" && "$bin" index build -q --index idx-new half-a > new.out 2> new.err) || rc_new=$?
        (cd "$work" && "$baseline" index build -q --index idx-old half-a > old.out 2> old.err) || rc_old=$?
    else
        (cd "$work" && "$bin" scan -q --against idx-new --update half-b > new.out 2> new.err) || rc_new=$?
        (cd "$work" && "$baseline" scan -q --against idx-old --update half-b > old.out 2> old.err) || rc_old=$?
    fi
    if [ "$rc_new" != "$rc_old" ] || ! cmp -s "$work/new.out" "$work/old.out" || ! cmp -s "$work/new.err" "$work/old.err"; then
        echo "DIFFERENT: $1 (exit $rc_new, baseline $rc_old)"
        diff "$work/old.out" "$work/new.out" | head -40
        exit 1
    fi
    cases=$((cases + 1))
    printf 'same  %-34s %8d bytes  exit %d\n' "$1" "$(wc -c < "$work/new.out")" "$rc_new"
}
index_case "index build" build
index_case "scan --against --update" update
# index info (less the random index_id) and the index files' names and sizes, when both builds
# write the same index format (a segment's bytes hold its index's random id, so they differ).
(cd "$work" && "$bin" index info --index idx-new | grep -v '"index_id"' > new.out)
(cd "$work" && "$baseline" index info --index idx-old | grep -v '"index_id"' > old.out)
format_new=$(grep -o '"format_version": [0-9]*' "$work/new.out") format_old=$(grep -o '"format_version": [0-9]*' "$work/old.out")
if [ "$format_new" = "$format_old" ]; then
    cmp -s "$work/new.out" "$work/old.out" || { echo "DIFFERENT: index info"; diff "$work/old.out" "$work/new.out"; exit 1; }
    sizes() { find "$1" -type f ! -name lock -printf '%f %s\n' | sort; }
    [ "$(sizes "$work/idx-new")" = "$(sizes "$work/idx-old")" ] || { echo "DIFFERENT: index files"; exit 1; }
    cases=$((cases + 2))
    echo "same  index info and index file sizes"
else
    echo "skip  index info and files: index $format_old in the baseline, $format_new now"
fi
echo "all $cases cases byte-identical to $BASELINE"
