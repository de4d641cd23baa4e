#!/usr/bin/env bash
# `stage components` before and after a change: wall time, CPU time and peak RSS
# (/usr/bin/time -v) of this tree's build and of a baseline commit's, on one staged work
# directory (init, sign and group run once, by this tree's build), and a byte-for-byte
# comparison of the two builds' `components/` files.
#
#   benches/components.sh                              100k corpus, 2 shards x 2 parts, 1 run
#   benches/components.sh --corpus DIR --shards 4 --parts 3 --runs 3 --baseline 4033456
#   benches/components.sh --corpus DIR -- -m simhash --max-distance 6   (scan options for init)
#   benches/components.sh --corpus DIR --synthetic 3000000   (generated group files, see below)
#   benches/components.sh --synthetic 3000000 --threads "1 2" --runs 3   (how it scales)
#
# Options: --docs N (a generated corpus, target/bench/corpus-N, when --corpus is not given),
# --corpus DIR, --shards N, --parts M, --runs R (runs of each build, alternated; the best
# time and the largest RSS are printed), --baseline REV (default 4033456, the last commit
# holding every bucket in memory), --work DIR, --synthetic N (instead of the corpus's group
# files, those of N candidate documents in families made by benches/components_groups.py,
# which needs pyarrow: how memory grows with the candidates), --threads "T1 T2 ..." (run
# each build at `-j T1`, `-j T2`, ... in turn within every run, default "1"; with more than
# one, the table has a line per build and thread count and the wall-time ratio of each to
# the first count's, from the same runs). Every process runs under `nice`. Needs
# /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."

docs=100000 corpus="" synthetic="" shards=2 parts=2 runs=1 baseline=4033456 work=target/bench
threads=1
while [ $# -gt 0 ]; do
    case "$1" in
        --docs) docs=$2; shift 2 ;;
        --corpus) corpus=$2; shift 2 ;;
        --shards) shards=$2; shift 2 ;;
        --parts) parts=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --baseline) baseline=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --synthetic) synthetic=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --) shift; break ;;
        *) echo "components.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$work"
work=$(realpath "$work")

nice cargo build --release --quiet --locked --bin dupfind
nice cargo build --release --quiet --locked --example corpus
after=$work/dupfind-after
cp target/release/dupfind "$after"
# The baseline is built once per commit, in a target directory of its own: in this tree's,
# its crate (same name and version) would replace this tree's build, which cargo would then
# take for up to date.
before=$work/dupfind-$(git rev-parse --short "$baseline")
if [ ! -x "$before" ]; then
    src=$work/baseline-src
    rm -rf "$src" && mkdir -p "$src"
    git archive "$baseline" | tar -x -C "$src"
    (cd "$src" && nice cargo build --release --quiet --locked --bin dupfind --target-dir target)
    cp "$src/target/release/dupfind" "$before"
    rm -rf "$src"
fi

if [ -z "$corpus" ]; then
    corpus=$work/corpus-$docs
    if [ ! -d "$corpus" ]; then
        target/release/examples/corpus gen --out "$corpus.tmp" --docs "$docs" --seed 1 >&2
        mv "$corpus.tmp" "$corpus"
    fi
fi

# The work directory, up to the group stage (kept between runs of this script).
options=$(echo "$*" | tr -c 'a-zA-Z0-9.\n-' _)
stagework=$work/components-work-$(basename "$corpus")-${shards}x$parts${options:+-$options}
if [ "$(ls "$stagework"/group/part-*.json 2> /dev/null | wc -l)" -ne "$parts" ]; then
    rm -rf "$stagework"
    nice "$after" stage init --work "$stagework" --shards "$shards" --parts "$parts" -q "$@" "$corpus"
    for i in $(seq 0 $((shards - 1))); do
        nice "$after" stage sign --work "$stagework" --shard "$i/$shards" -j2
    done
    for j in $(seq 0 $((parts - 1))); do
        nice "$after" stage group --work "$stagework" --part "$j/$parts" -j2
    done
fi

if [ -n "$synthetic" ]; then
    from=$stagework
    stagework=$work/components-work-synthetic-$synthetic-${shards}x$parts
    if ! cmp -s "$from/run.json" "$stagework/run.json"; then
        rm -rf "$stagework" "$stagework.tmp"
        nice python3 benches/components_groups.py --from "$from" --out "$stagework.tmp" \
            --candidates "$synthetic"
        mv "$stagework.tmp" "$stagework"
    fi
fi

# timed NAME BINARY THREADS: one run of stage components; wall s, CPU s, peak RSS KB into
# times.tsv, and its outputs kept in $work/components-NAME.
timed() {
    local name=$1 bin=$2 j=$3
    nice /usr/bin/time -v -o "$work/time-$name.txt" "$bin" stage components --work "$stagework" -j "$j"
    awk -F': ' -v n="$name" '
        /Elapsed \(wall clock\)/ { k = split($2, t, ":"); w = 0; for (i = 1; i <= k; i++) w = w * 60 + t[i] }
        /User time/ { c += $2 } /System time/ { c += $2 } /Maximum resident/ { r = $2 }
        END { printf "%s\t%.2f\t%.2f\t%d\n", n, w, c, r }' "$work/time-$name.txt" >> "$work/times.tsv"
    rm -rf "$work/components-$name"
    cp -r "$stagework/components" "$work/components-$name"
}

: > "$work/times.tsv"
for _ in $(seq "$runs"); do
    for j in $threads; do
        timed "before-j$j" "$before" "$j"
        timed "after-j$j" "$after" "$j"
    done
done
# same A B: the components directories A and B hold the same files, but for each run's attempt
# token (in every file's lineage tag) and the summary's lineage (CRC-32s of the files).
same() {
    python3 - "$1" "$2" << 'EOF'
import json, sys
from pathlib import Path

def files(d):
    d = Path(d)
    summary = json.loads((d / "summary.json").read_text())
    token = summary["lineage"]["attempt"].encode()
    out = {}
    for p in sorted(d.iterdir()):
        b = p.read_bytes()
        if p.name == "summary.json":
            del summary["lineage"], summary["seal"]
            b = json.dumps(summary, sort_keys=True).encode()
        out[p.name] = b.replace(token, b"0" * len(token))
    return out

sys.exit(0 if files(sys.argv[1]) == files(sys.argv[2]) else 1)
EOF
}
for j in $threads; do
    for b in before after; do
        same "$work/components-before-j${threads%% *}" "$work/components-$b-j$j" || {
            echo "components.sh: $b -j$j's components files differ from before -j${threads%% *}'s" >&2
            exit 1
        }
    done
done
echo "threads: $threads; $(uptime)"
echo "corpus: $corpus${synthetic:+ (its plan; group files of $synthetic synthetic candidates)}; options: ${*:-none}; $shards shards x $parts parts; $runs runs of each; components files identical"
cat "$stagework/components/summary.json"
awk -F'\t' -v threads="$threads" '
    { n = $1; if (!(n in w) || $2 < w[n]) w[n] = $2; if (!(n in c) || $3 < c[n]) c[n] = $3; if ($4 > r[n]) r[n] = $4 }
    END {
        k = split(threads, t, " ")
        printf "%-8s %4s %8s %8s %12s %10s\n", "build", "-j", "wall s", "CPU s", "peak RSS MB", "speed-up"
        for (b = 1; b <= 2; b++) {
            name = b == 1 ? "before" : "after"
            for (i = 1; i <= k; i++) {
                n = name "-j" t[i]; f = name "-j" t[1]
                printf "%-8s %4s %8.2f %8.2f %12.1f %9.2fx\n", name, t[i], w[n], c[n], r[n] / 1024, w[f] / w[n]
            }
        }
    }' "$work/times.tsv"
