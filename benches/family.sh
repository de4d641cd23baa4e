#!/usr/bin/env bash
# A family of near-copies whose pairs all fall just short of what is asked: the quadratic corner
# of exact verification. Generates N copies of one 1,000-word document, each with a share of
# its words substituted at random (--edit, default 0.03: pairwise Jaccard about 0.75 on word
# 5-shingles), and times `dupfind scan -j2` on families of growing size: at the default
# threshold and with --min-similarity above the family's similarity. Prints seconds, peak RSS,
# candidate pairs checked, and the time per document, whose growth from one size to the next
# shows how far from linear the run is.
#
#   benches/family.sh                           families of 1000, 2000, 4000 and 8000
#   benches/family.sh --sizes "2000 4000"       other sizes
#   benches/family.sh --containment             `scan --containment` instead: at its default
#                                               threshold, containment 0.8, a little above the
#                                               family's (about 0.74), so most pairs fail, the
#                                               passing ones chain about 60 % of the copies
#                                               together and every pair of the others must be
#                                               ruled out; and at -t 0.7, where the family is
#                                               one cluster
#   BASELINE=path/to/old/dupfind benches/family.sh   the same runs with another build
#
# `pairs` is stats.candidate_pairs (with --containment, the pairs checked); `clusters` the
# number of clusters and the size of the largest.
#
# Needs python3 (to write the files) and /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes="1000 2000 4000 8000" edit=0.03 work=target/bench/family
runs=("default" "--min-similarity 0.95")
while [ $# -gt 0 ]; do
    case "$1" in
        --sizes) sizes=$2; shift 2 ;;
        --containment) runs=("--containment" "--containment -t 0.7"); shift ;;
        --edit) edit=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        *) echo "family.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
cargo build --release --quiet --bin dupfind
bins=("new=$(realpath target/release/dupfind)")
[ -n "${BASELINE:-}" ] && bins+=("baseline=$(realpath "$BASELINE")")
mkdir -p "$work"

gen() { # gen N DIR
    python3 - "$1" "$2" "$edit" <<'PY'
import os, random, sys
n, out, edit = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
rng = random.Random(7)
vocab = ["w%05d" % i for i in range(50000)]
base = [rng.choice(vocab) for _ in range(1000)]
os.makedirs(out + ".tmp", exist_ok=True)
for i in range(n):
    words = [rng.choice(vocab) if rng.random() < edit else w for w in base]
    with open(os.path.join(out + ".tmp", "c%05d.txt" % i), "w") as f:
        f.write(" ".join(words) + "\n")
os.rename(out + ".tmp", out)
PY
}

printf '%-9s %6s %-26s %8s %8s %12s %10s %10s\n' build copies run seconds "RSS MB" "pairs" "ms/doc" clusters
for n in $sizes; do
    dir=$work/family-$n-$edit
    [ -d "$dir" ] || gen "$n" "$dir"
    for b in "${bins[@]}"; do
        name=${b%%=*} bin=${b#*=}
        for run in "${runs[@]}"; do
            args=(); [ "$run" = default ] || args=($run)
            /usr/bin/time -f "%e %M" -o "$work/time.txt" "$bin" scan -q -j2 "${args[@]}" "$dir" > "$work/out.json" || true
            read -r secs kb < "$work/time.txt"
            read -r pairs clusters < <(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
sizes = [c["size"] for c in r["clusters"]]
print(r["stats"]["candidate_pairs"], "%d/%d" % (len(sizes), max(sizes, default=0)))' "$work/out.json")
            printf '%-9s %6d %-26s %8.2f %8d %12d %10.3f %10s\n' "$name" "$n" "$run" "$secs" $((kb / 1024)) "$pairs" \
                "$(echo "$secs $n" | awk '{ printf "%.3f", 1000 * $1 / $2 }')" "$clusters"
        done
    done
done
