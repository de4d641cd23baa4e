#!/usr/bin/env bash
# `stage report`'s peak RSS as the corpus grows: for each size, a generated corpus (the
# benchmark generator, seed 1) run through every stage at 2 shards and 2 partitions, then
# `stage report` run --runs times under /usr/bin/time; prints the largest RSS per size and the
# ratio of the last size's to the first's (the streaming report's target: within 1.25x from 50k
# to 200k documents). With --baseline BIN, the same work directories are reported by BIN too,
# in the same run, and the two reports compared byte for byte.
#
#   benches/report-memory.sh                                   50k and 200k documents
#   benches/report-memory.sh --docs 10000,50000 --runs 3 --baseline path/to/old/dupfind
#
# Needs /usr/bin/time; the corpora go to target/bench (1.6 GB for 50k and 200k).
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=50000,200000 runs=3 baseline="" work=target/bench
while [ $# -gt 0 ]; do
    case "$1" in
        --docs) sizes=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --baseline) baseline=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        *) echo "report-memory.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$work"
work=$(realpath "$work")
nice cargo build --release --quiet --locked --bin dupfind
nice cargo build --release --quiet --locked --example corpus
bin=$work/dupfind-report-memory
cp target/release/dupfind "$bin"
gen=target/release/examples/corpus

# Largest peak RSS (KB) of `stage report` by $1 over $runs runs on work directory $2; the
# report goes to $3.
peak() {
    local max=0 rss
    for _ in $(seq "$runs"); do
        /usr/bin/time -f "%M" -o "$work/report-memory.time" "$1" stage report --work "$2" > "$3"
        rss=$(cat "$work/report-memory.time")
        if [ "$rss" -gt "$max" ]; then max=$rss; fi
    done
    echo "$max"
}

# Every stage before the report, by build $1, in work directory $2 (made anew) over corpus $3.
stages() {
    rm -rf "$2"
    "$1" stage init --work "$2" --shards 2 --parts 2 -q "$3"
    for i in 0 1; do "$1" stage sign --work "$2" --shard "$i/2"; done
    for j in 0 1; do "$1" stage group --work "$2" --part "$j/2"; done
    "$1" stage components --work "$2"
    for i in 0 1; do "$1" stage route --work "$2" --shard "$i/2"; done
    for j in 0 1; do "$1" stage verify --work "$2" --part "$j/2"; done
}

printf "%-10s %12s %14s %16s\n" documents clusters "report RSS KB" "baseline RSS KB"
first="" last="" bfirst="" blast=""
for n in ${sizes//,/ }; do
    corpus=$work/corpus-$n
    if [ ! -d "$corpus" ]; then
        "$gen" gen --out "$corpus" --docs "$n" --seed 1 > /dev/null
    fi
    w=$work/report-memory-$n
    stages "$bin" "$w" "$corpus"
    rss=$(peak "$bin" "$w" "$w/report.json")
    clusters=$(grep -c '"min_similarity"' "$w/report.json" || true)
    brss="-"
    if [ -n "$baseline" ]; then
        # A baseline reads the work files its own build wrote: its own run of the stages.
        bw=$w-baseline
        stages "$baseline" "$bw" "$corpus"
        brss=$(peak "$baseline" "$bw" "$bw/report.json")
        if ! cmp -s "$w/report.json" "$bw/report.json"; then
            echo "report-memory.sh: the reports of $n documents differ from the baseline's" >&2
            exit 1
        fi
        bfirst=${bfirst:-$brss}
        blast=$brss
    fi
    printf "%-10s %12s %14s %16s\n" "$n" "$clusters" "$rss" "$brss"
    first=${first:-$rss}
    last=$rss
done
awk -v a="$first" -v b="$last" 'BEGIN { printf "largest / smallest: %.2fx\n", b / a }'
if [ -n "$baseline" ]; then
    awk -v a="$bfirst" -v b="$blast" 'BEGIN { printf "baseline largest / smallest: %.2fx\n", b / a }'
fi
