#!/usr/bin/env bash
# End-to-end benchmark: speed, peak memory and accuracy of the release binary on a generated
# corpus, side by side with the Python libraries when they are installed.
#
#   benches/bench.sh                    10,000 documents (~52 MB), 3 runs each, best time kept
#   benches/bench.sh --docs 100000      a bigger corpus
#   benches/bench.sh --scale            10k, 100k (and 1M with --max-docs 1000000): linearity
#   benches/bench.sh --corpus DIR       your own directory of text (no accuracy figures)
#   benches/bench.sh --cold            defaults only, the page cache dropped before every run
#                                       (root on Linux: writes /proc/sys/vm/drop_caches)
#   BASELINE=path/to/old/dupfind benches/bench.sh   adds rows for another build, same run
#
# Options: --docs N, --runs R, --corpus DIR, --no-peers, --scale, --max-docs N, --work DIR, --cold.
# Prints MB/s, documents/s and peak RSS (from /usr/bin/time when present) for -j1 and -j2,
# and recall/precision against the exact Jaccard reference (benches/corpus.rs) at J >= 0.8.
set -euo pipefail
cd "$(dirname "$0")/.."

docs=10000 runs=3 corpus="" peers=1 scale=0 max_docs=100000 work=target/bench cold=0
while [ $# -gt 0 ]; do
    case "$1" in
        --docs) docs=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --corpus) corpus=$2; shift 2 ;;
        --no-peers) peers=0; shift ;;
        --scale) scale=1; shift ;;
        --max-docs) max_docs=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --cold) cold=1; shift ;;
        *) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
# --cold drops the page cache before every run: as root directly, otherwise through sudo -n.
drop_caches() {
    sync
    if [ -w /proc/sys/vm/drop_caches ]; then
        echo 3 > /proc/sys/vm/drop_caches
    else
        echo 3 | sudo -n tee /proc/sys/vm/drop_caches > /dev/null
    fi
}
if [ "$cold" = 1 ] && ! drop_caches 2> /dev/null; then
    echo "bench.sh: --cold drops the page cache (/proc/sys/vm/drop_caches): run as root or with sudo -n" >&2
    exit 2
fi

# Apart, as every bench builds them: built with an example, the binary's dependencies take the
# dev-dependencies' features, and its symbols other hashes than link-order.txt names (build.rs).
cargo build --release --quiet --bin dupfind
cargo build --release --quiet --example corpus
bin=target/release/dupfind
gen=target/release/examples/corpus
mkdir -p "$work"
time_cmd=()
if [ -x /usr/bin/time ]; then time_cmd=(/usr/bin/time -f "%e %M" -o "$work/time.txt"); fi

# A corpus of N documents and its exact reference pairs, generated once and reused.
make_corpus() {
    local n=$1 truth=${2:-1} dir="$work/corpus-$1"
    if [ ! -f "$dir.families.tsv" ]; then
        rm -rf "$dir"
        "$gen" gen --out "$dir" --docs "$n" --seed 1 --families "$dir.families.tsv.tmp" >&2
        mv "$dir.families.tsv.tmp" "$dir.families.tsv"
    fi
    if [ "$truth" = 1 ] && [ ! -f "$dir.truth.tsv" ]; then
        echo "bench: exact reference for $n documents..." >&2
        "$gen" reference "$dir" > "$dir.truth.tsv.tmp"
        mv "$dir.truth.tsv.tmp" "$dir.truth.tsv"
    fi
    echo "$dir"
}

# Runs a command $runs times; sets best (seconds) and rss (KB) from the fastest run.
measure() {
    best="" rss="n/a"
    for _ in $(seq "$runs"); do
        local start end secs
        if [ "$cold" = 1 ]; then drop_caches; fi
        start=$(date +%s.%N)
        "${time_cmd[@]}" "$@" > "$work/out.tmp" 2> "$work/err.tmp" || {
            local rc=$?
            if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then cat "$work/err.tmp" >&2; return "$rc"; fi
        }
        end=$(date +%s.%N)
        secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
        if [ -z "$best" ] || awk -v s="$secs" -v b="$best" 'BEGIN { exit !(s < b) }'; then
            best=$secs
            if [ ${#time_cmd[@]} -gt 0 ]; then rss=$(awk '{ print $2 }' "$work/time.txt"); fi
            cp "$work/out.tmp" "$work/best.out"
        fi
    done
}

row() { # name threads seconds bytes docs rss accuracy
    awk -v n="$1" -v j="$2" -v s="$3" -v b="$4" -v d="$5" -v r="$6" -v a="$7" 'BEGIN {
        rssmb = (r == "n/a") ? "n/a" : sprintf("%.0f", r / 1024)
        printf "%-28s %3s %8.3f %9.1f %10.0f %8s  %s\n", n, j, s, b / s / 1e6, d / s, rssmb, a }'
}

header() {
    printf "%-28s %3s %8s %9s %10s %8s  %s\n" "run" "-j" "seconds" "MB/s" "docs/s" "RSS MB" "accuracy (J >= 0.8)"
}

bench_corpus() {
    local dir=$1 truth=${2:-}
    local bytes ndocs
    bytes=$(find "$dir" -type f -name '*.txt' -printf '%s\n' | awk '{ s += $1 } END { print s }')
    ndocs=$(find "$dir" -type f -name '*.txt' | wc -l)
    echo
    local cache="hot page cache"
    if [ "$cold" = 1 ]; then cache="page cache dropped before each run"; fi
    echo "corpus: $dir ($ndocs documents, $bytes bytes); best of $runs runs, $cache"
    header
    local -a configs=(
        "default (word 5, oph)|"
        "--cluster components|--cluster components"
        "--shingle char|--shingle char"
        "--sketch kperm|--sketch kperm"
        "--verify estimate|--verify estimate"
        "--method simhash|--method simhash"
    )
    if [ "$cold" = 1 ]; then configs=("default (word 5, oph)|"); fi
    local binaries=("dupfind|$bin")
    if [ -n "${BASELINE:-}" ]; then binaries+=("baseline|$BASELINE"); fi
    for b in "${binaries[@]}"; do
        local bname=${b%%|*} bpath=${b#*|}
        # The binary's pages dropped from the page cache, so that each build is loaded as exec
        # reads it: a fault maps the whole folio that holds a page, and the same binary written
        # by the linker or by cp peaked 2.7 MB apart (benches/speed.py). Written back first:
        # dirty pages stay.
        sync "$bpath" 2> /dev/null || true
        dd if="$bpath" iflag=nocache count=0 status=none 2> /dev/null || true
        for c in "${configs[@]}"; do
            local cname=${c%%|*} flags=${c#*|}
            for j in 1 2; do
                # shellcheck disable=SC2086
                measure "$bpath" scan -q -j "$j" $flags "$dir"
                local acc=""
                if [ -n "$truth" ] && [ "$j" = 1 ] && [[ "$cname" != *char* ]]; then
                    acc=$("$gen" score --truth "$truth" --root "$dir" --dupfind "$work/best.out" \
                        | awk '{ print $1, $3 }')
                fi
                row "$bname $cname" "$j" "$best" "$bytes" "$ndocs" "$rss" "$acc"
            done
        done
    done
    if [ "$peers" = 1 ] && [ "$cold" = 1 ]; then
        echo "peers: skipped with --cold (they are timed on a hot page cache only)"
    elif [ "$peers" = 1 ]; then
        for lib in datasketch rensa gaoya; do
            local line rc=0
            line=$(python3 benches/peers.py --lib "$lib" --ngram 5 --threshold 0.8 \
                --num-perm 128 --out "$work/$lib.pairs.tsv" "$dir" 2> "$work/err.tmp") || rc=$?
            if [ "$rc" -ne 0 ]; then
                echo "$lib: not installed (pip install $lib), skipped"
                continue
            fi
            local secs lib_secs acc=""
            secs=$(echo "$line" | sed -n 's/.* seconds=\([0-9.]*\).*/\1/p')
            lib_secs=$(echo "$line" | sed -n 's/.*lib_seconds=\([0-9.]*\).*/\1/p')
            if [ -n "$truth" ]; then
                acc=$("$gen" score --truth "$truth" --root "$dir" --pairs "$work/$lib.pairs.tsv" \
                    | awk '{ print $1, $3 }')
            fi
            row "$lib (python, end to end)" 1 "$secs" "$bytes" "$ndocs" "n/a" "$acc"
            row "$lib (library calls only)" 1 "$lib_secs" "$bytes" "$ndocs" "n/a" ""
        done
    fi
}

if [ -n "$corpus" ]; then
    bench_corpus "$corpus"
elif [ "$scale" = 1 ]; then
    echo "scaling, default settings, -j1 and -j2 (time and peak RSS should grow ~10x per step)$([ "$cold" = 1 ] && echo ", page cache dropped before each run")"
    header
    n=10000
    while [ "$n" -le "$max_docs" ]; do
        dir=$(make_corpus "$n" 0)
        bytes=$(find "$dir" -type f -name '*.txt' -printf '%s\n' | awk '{ s += $1 } END { print s }')
        for j in 1 2; do
            measure "$bin" scan -q -j "$j" "$dir"
            row "default, $n docs" "$j" "$best" "$bytes" "$n" "$rss" ""
        done
        n=$((n * 10))
    done
else
    dir=$(make_corpus "$docs")
    bench_corpus "$dir" "$dir.truth.tsv"
fi
