#!/usr/bin/env bash
# The staged pipeline against scan on one machine: wall and CPU time of contrib/staged/run-local.sh
# (every stage a separate process) as ratios to `dupfind scan` on the same corpus in the same
# run, runs interleaved; the time of each stage; the bytes each stage writes per document; and
# signing's throughput per core against scan's first pass.
#
#   benches/staged.sh                          10k corpus, 2 shards x 2 parts, -j2, 3 runs
#   benches/staged.sh --docs 100000 --shards 2 --parts 2 --runs 3
#
# Options: --docs N, --shards N, --parts M, --runs R, --work DIR. Needs /usr/bin/time.
# BASELINE=/path/to/dupfind runs that build too, interleaved with this one (scan and the staged
# run each round), and prints its ratios beside this build's: a change measured in one run.
set -euo pipefail
cd "$(dirname "$0")/.."

docs=10000 shards=2 parts=2 runs=3 work=target/bench
while [ $# -gt 0 ]; do
    case "$1" in
        --docs) docs=$2; shift 2 ;;
        --shards) shards=$2; shift 2 ;;
        --parts) parts=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        *) echo "staged.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
cargo build --release --quiet --bin dupfind
cargo build --release --quiet --example corpus
target=${CARGO_TARGET_DIR:-target}
bin=$(realpath "$target/release/dupfind")
builds=("$bin")
if [ -n "${BASELINE:-}" ]; then builds+=("$(realpath "$BASELINE")"); fi
mkdir -p "$work"
corpus=$work/corpus-$docs
if [ ! -d "$corpus" ]; then
    "$target/release/examples/corpus" gen --out "$corpus.tmp" --docs "$docs" --seed 1 >&2
    mv "$corpus.tmp" "$corpus"
fi
# "$corpus/": the corpus may be a symbolic link to one (find does not follow a link it is given).
bytes=$(find "$corpus/" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
stagework=$work/staged-work

# timed NAME CMD...: wall seconds, user+sys CPU seconds, peak RSS (KB) into $work/times.tsv
timed() {
    local name=$1; shift
    /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" "$@" > "$work/out-$name.json" 2> "$work/err-$name.txt" || {
        local rc=$?; if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then cat "$work/err-$name.txt" >&2; exit "$rc"; fi; }
    awk -v n="$name" '{ printf "%s\t%s\t%.3f\t%s\n", n, $1, $2 + $3, $4 }' "$work/time.txt" >> "$work/times.tsv"
}

: > "$work/times.tsv"
for _ in $(seq "$runs"); do
    for k in "${!builds[@]}"; do
        b=${builds[$k]} tag=""
        if [ "$k" = 1 ]; then tag=-baseline; fi
        timed "scan$tag" "$b" scan -q -j2 "$corpus"
        rm -rf "$stagework"
        timed "staged$tag" contrib/staged/run-local.sh --shards "$shards" --parts "$parts" --jobs 2 \
            --work "$stagework" --dupfind "$b" -q -j1 "$corpus"
        cmp -s "$work/out-scan$tag.json" "$work/out-staged$tag.json" || { echo "staged.sh: the reports differ" >&2; exit 1; }
    done
done
echo "corpus: $corpus ($docs documents, $bytes bytes); $shards shards x $parts parts; $runs runs; reports identical"
awk -F'\t' '
    { n = $1; if (!(n in w) || $2 < w[n]) w[n] = $2; if (!(n in c) || $3 < c[n]) c[n] = $3; if ($4 > r[n]) r[n] = $4 }
    END {
        printf "%-16s %8s %8s %10s\n", "run", "wall s", "CPU s", "peak RSS MB"
        for (n in w) printf "%-16s %8.3f %8.3f %10.0f\n", n, w[n], c[n], r[n] / 1024
        printf "ratios staged/scan: wall %.2fx, CPU %.2fx (best of each)\n", w["staged"] / w["scan"], c["staged"] / c["scan"]
        if ("scan-baseline" in w)
            printf "ratios of the baseline: wall %.2fx, CPU %.2fx (best of each)\n", w["staged-baseline"] / w["scan-baseline"], c["staged-baseline"] / c["scan-baseline"]
    }' "$work/times.tsv"

# Each stage alone, once, one process at a time (-j1 inside each).
rm -rf "$stagework"
: > "$work/times.tsv"
timed init "$bin" stage init --work "$stagework" --shards "$shards" --parts "$parts" -q -j1 "$corpus"
for i in $(seq 0 $((shards - 1))); do timed "sign$i" "$bin" stage sign --work "$stagework" --shard "$i/$shards"; done
for j in $(seq 0 $((parts - 1))); do timed "group$j" "$bin" stage group --work "$stagework" --part "$j/$parts"; done
timed components "$bin" stage components --work "$stagework"
for i in $(seq 0 $((shards - 1))); do timed "route$i" "$bin" stage route --work "$stagework" --shard "$i/$shards"; done
for j in $(seq 0 $((parts - 1))); do timed "verify$j" "$bin" stage verify --work "$stagework" --part "$j/$parts"; done
timed report "$bin" stage report --work "$stagework"
echo
echo "each stage, one process at a time (-j1):"
awk -F'\t' '{ printf "%-12s wall %7.3f s  CPU %7.3f s  RSS %5.0f MB\n", $1, $2, $3, $4 / 1024 }' "$work/times.tsv"
echo
echo "bytes written per document, by stage:"
for d in init sign group components route verify; do
    b=$(du -sb "$stagework/$d" | awk '{ print $1 }')
    awk -v d="$d" -v b="$b" -v n="$docs" 'BEGIN { printf "%-12s %10d bytes  %8.1f bytes/document\n", d, b, b / n }'
done

# Signing against scan's first pass: scan with a banding that makes no candidate is walk, read
# and sign; stage init + sign of one shard is the same work plus the Parquet files.
rm -rf "$stagework"
: > "$work/times.tsv"
for _ in $(seq "$runs"); do
    timed firstpass "$bin" scan -q -j1 --bands 1 --rows 128 "$corpus"
    rm -rf "$stagework"
    timed signing sh -c "'$bin' stage init --work '$stagework' -q -j1 --bands 1 --rows 128 '$corpus' && '$bin' stage sign --work '$stagework' --shard 0/1"
done
awk -F'\t' -v bytes="$bytes" '
    { n = $1; if (!(n in c) || $3 < c[n]) c[n] = $3 }
    END {
        printf "\nper core: scan first pass %.1f MB/s, init + sign %.1f MB/s: %.2fx (CPU, best of each)\n",
            bytes / c["firstpass"] / 1e6, bytes / c["signing"] / 1e6, c["firstpass"] / c["signing"]
    }' "$work/times.tsv"
