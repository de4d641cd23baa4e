#!/usr/bin/env bash
# Streaming benchmark: peak RSS of `dupfind scan -j2` on JSON Lines dumps of growing size.
#
#   benches/dump.sh                       10k, 40k, 160k documents of ~5 KB (52 MB → 830 MB),
#                                         10k documents of ~50 KB, and the 40k dump gzip'd
#                                         and zstd'd
#   benches/dump.sh --docs "10000 40000"  other document counts (the middle one is compressed)
#   benches/dump.sh --big-kb 0            skip the large-document row
#
# Options: --docs "N ...", --big-kb KB, --runs R (best time kept), --threads J, --work DIR
# (default: a new directory under ${TMPDIR:-/tmp}, removed at the end), --no-compressed.
#
# The dumps come from the seeded corpus generator (benches/corpus.rs, `gen --jsonl`): one record
# a line, {"id": ..., "text": ...}, the same documents and near-duplicate families as the
# directory corpus of benches/bench.sh. Each dump is deleted as soon as it has been measured.
#
# A dump is streamed a batch of records at a time and only a signature and a small entry are
# kept per document, so peak RSS should grow with the number of documents (about 1 KB each)
# and not with the bytes of the dump: the 50 KB-document row should be about as high as the
# 5 KB row with the same count, and the compressed rows as high as the plain one. The table
# gives, besides RSS per document, the growth per document over the first (smallest) row.
set -euo pipefail
cd "$(dirname "$0")/.."

counts="10000 40000 160000" big_kb=50 runs=1 threads=2 work="" compressed=1
while [ $# -gt 0 ]; do
    case "$1" in
        --docs) counts=$2; shift 2 ;;
        --big-kb) big_kb=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --no-compressed) compressed=0; shift ;;
        *) echo "dump.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
if [ ! -x /usr/bin/time ]; then
    echo "dump.sh: needs /usr/bin/time (GNU time) for peak RSS" >&2
    exit 2
fi

cargo build --release --quiet --bin dupfind
cargo build --release --quiet --example corpus
bin=$PWD/target/release/dupfind
gen=$PWD/target/release/examples/corpus

if [ -z "$work" ]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/dupfind-dump.XXXXXX")
    trap 'rm -rf "$work"' EXIT
else
    mkdir -p "$work"
fi

# The largest dump is about 5.2 KB per document (JSON escaping adds a little); the compressed
# copies of the middle one need less than it does.
largest=0
for n in $counts; do [ "$n" -gt "$largest" ] && largest=$n; done
first=${counts%% *}
need=$((largest * 6 / 1000))                      # MB
if [ "$big_kb" -gt 0 ]; then
    big=$((first * big_kb * 12 / 10 / 1000))
    [ "$big" -gt "$need" ] && need=$big
fi
need=$((need * 2 + 100))
avail=$(df -Pm "$work" | awk 'NR == 2 { print $4 }')
echo "work directory $work: $avail MB free, up to $need MB needed"
if [ "$avail" -lt "$need" ]; then
    echo "dump.sh: not enough free space under $work" >&2
    exit 2
fi

# Runs the scan $runs times; sets secs (fastest wall time) and rss (its peak RSS, KB).
measure() {
    secs="" rss=""
    for _ in $(seq "$runs"); do
        local rc=0
        /usr/bin/time -f "%e %M" -o "$work/time.txt" \
            "$bin" scan -q -j "$threads" "$1" > /dev/null 2> "$work/err.txt" || rc=$?
        # 2 means duplicates were found.
        if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then cat "$work/err.txt" >&2; exit "$rc"; fi
        if [ -s "$work/err.txt" ]; then cat "$work/err.txt" >&2; fi
        local s r
        read -r s r < <(tail -n 1 "$work/time.txt")
        if [ -z "$secs" ] || awk -v a="$s" -v b="$secs" 'BEGIN { exit !(a < b) }'; then
            secs=$s rss=$r
        fi
    done
}

base_docs="" base_rss=""
printf "%-24s %10s %10s %8s %8s %8s %8s %9s %9s\n" "dump" "file MB" "text MB" "docs" \
    "seconds" "MB/s" "RSS MB" "KB/doc" "+KB/doc"
row() { # name file_bytes text_bytes docs secs rss_kb
    local delta="-"
    if [ -z "$base_docs" ]; then
        base_docs=$4 base_rss=$6
    elif [ "$4" -gt "$base_docs" ]; then
        delta=$(awk -v r="$6" -v b="$base_rss" -v d="$4" -v e="$base_docs" \
            'BEGIN { printf "%.2f", (r - b) / (d - e) }')
    fi
    awk -v n="$1" -v f="$2" -v t="$3" -v d="$4" -v s="$5" -v r="$6" -v x="$delta" 'BEGIN {
        printf "%-24s %10.1f %10.1f %8d %8.2f %8.1f %8.1f %9.2f %9s\n",
            n, f / 1e6, t / 1e6, d, s, (s > 0 ? t / s / 1e6 : 0), r / 1024, r / d, x }'
}

# Generates N documents of ~KB each into $dump; sets text_bytes (the dump's own size).
make_dump() {
    local n=$1 kb=$2
    dump="$work/dump-$n-${kb}k.jsonl"
    "$gen" gen --jsonl "$dump" --docs "$n" --seed 1 --doc-kb "$kb" 2> /dev/null
    text_bytes=$(stat -c %s "$dump")
}

# shellcheck disable=SC2086 # word splitting wanted
set -- $counts
middle=${2:-$1}
for n in $counts; do
    make_dump "$n" 5
    measure "$dump"
    row "$n x 5 KB" "$text_bytes" "$text_bytes" "$n" "$secs" "$rss"
    if [ "$compressed" = 1 ] && [ "$n" = "$middle" ]; then
        plain_bytes=$text_bytes
        gzip -1 -c "$dump" > "$dump.gz"
        zstd -q -3 -c "$dump" > "$dump.zst"
        rm -f "$dump"
        for ext in gz zst; do
            measure "$dump.$ext"
            row "$n x 5 KB, .$ext" "$(stat -c %s "$dump.$ext")" "$plain_bytes" "$n" "$secs" "$rss"
            rm -f "$dump.$ext"
        done
    fi
    rm -f "$dump"
done
if [ "$big_kb" -gt 0 ]; then
    make_dump "$first" "$big_kb"
    measure "$dump"
    row "$first x $big_kb KB" "$text_bytes" "$text_bytes" "$first" "$secs" "$rss"
    rm -f "$dump"
fi
echo "(text MB: uncompressed dump bytes; MB/s of those; +KB/doc: RSS growth per document over"
echo " the first row, for rows with more documents)"
