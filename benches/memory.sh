#!/usr/bin/env bash
# What `--max-memory` bounds, measured: the peak RSS of inputs built to make dupfind hold much
# more than their size, with the default budget and a smaller one. Each row prints the budget,
# the peak RSS, the wall time, the exit status and the documents reported; a row with a budget
# passes when its peak stays under the budget ("ok", else "OVER").
#
#   large  eight 24 MiB text files, --shingle char, -j8: each is sketched in about 16 bytes per
#          byte, so eight at once want about 3 GiB
#   window sixteen 80 KB zstd files whose frames declare a 128 MiB window, -j16
#   dump   a 5 KB zstd dump of 2 million short records: their signatures are the memory
#
#   benches/memory.sh                                 all three, default and smaller budgets
#   benches/memory.sh --cases "large window"          some of them
#   BASELINE=path/to/old/dupfind benches/memory.sh    the same runs with another build too
#
# Needs python3, zstd (the dump) and /usr/bin/time. Writes about 200 MB under target/bench/memory.
set -euo pipefail
cd "$(dirname "$0")/.."

cases="large window dump" work=target/bench/memory
while [ $# -gt 0 ]; do
    case "$1" in
        --cases) cases=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        *) echo "memory.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
cargo build --release --quiet --bin dupfind
bins=("new=$(realpath target/release/dupfind)")
[ -n "${BASELINE:-}" ] && bins+=("baseline=$(realpath "$BASELINE")")
mkdir -p "$work"

gen() { # gen CASE DIR
    python3 - "$1" "$2" <<'PY'
import os, random, struct, sys
case, out = sys.argv[1], sys.argv[2]
rng = random.Random(11)
os.makedirs(out + ".tmp", exist_ok=True)
vocab = ["w%04d" % i for i in range(5000)]
def words(n):
    return " ".join(rng.choice(vocab) for _ in range(n))
if case == "large":
    base = words(4_200_000)  # about 24 MiB
    for i in range(8):
        with open(os.path.join(out + ".tmp", "large%d.txt" % i), "w") as f:
            f.write(base[: len(base) - 1000 * i])
elif case == "window":
    for i in range(16):
        text = (("doc %d " % i) + words(13_000)).encode()
        # Frame header: no content size, not single-segment, window log 27 (128 MiB); raw blocks.
        frame = bytearray(b"\x28\xb5\x2f\xfd\x00" + bytes([(27 - 10) << 3]))
        for at in range(0, len(text), 1 << 16):
            chunk = text[at : at + (1 << 16)]
            last = 1 if at + len(chunk) >= len(text) else 0
            frame += struct.pack("<I", last | len(chunk) << 3)[:3] + chunk
        with open(os.path.join(out + ".tmp", "w%02d.txt.zst" % i), "wb") as f:
            f.write(frame)
elif case == "dump":
    with open(os.path.join(out + ".tmp", "records.jsonl"), "w") as f:
        for i in range(2_000_000):
            f.write('{"text":"r%d"}\n' % (i % 1000))
PY
    if [ "$1" = dump ]; then
        zstd -q --rm "$2.tmp/records.jsonl"
    fi
    mv "$2.tmp" "$2"
}

# case → threads, extra flags, budgets to try ("-" is the default budget)
declare -A jobs=([large]=8 [window]=16 [dump]=2)
declare -A flags=([large]="--shingle char" [window]="" [dump]="")
declare -A budgets=([large]="- 1G" [window]="- 256M" [dump]="- 1G")

to_bytes() { # 1G → bytes
    python3 -c 'import sys; s=sys.argv[1]; u={"K":1,"M":2,"G":3,"T":4}; print(int(float(s[:-1])*1024**u[s[-1]]) if s[-1] in u else int(s))' "$1"
}

printf '%-9s %-7s %-8s %9s %8s %5s %10s %s\n' build case budget "RSS MiB" seconds exit documents check
for c in $cases; do
    dir=$work/$c
    [ -d "$dir" ] || gen "$c" "$dir"
    for b in "${bins[@]}"; do
        name=${b%%=*} bin=${b#*=}
        for budget in ${budgets[$c]}; do
            args=(scan -q -j"${jobs[$c]}" ${flags[$c]} --format json "$dir")
            if [ "$budget" != - ]; then
                # An older build without the option is not run with it.
                "$bin" scan --help | grep -q -- --max-memory || continue
                args+=(--max-memory "$budget")
            fi
            code=0
            /usr/bin/time -f "%e %M" -o "$work/time.txt" "$bin" "${args[@]}" > "$work/out.json" 2> "$work/err.txt" || code=$?
            read -r secs kb < <(tail -1 "$work/time.txt")
            docs=$(python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1]))["stats"]["documents"])
except Exception: print("-")' "$work/out.json")
            check=""
            if [ "$budget" != - ]; then
                if [ $((kb * 1024)) -le "$(to_bytes "$budget")" ]; then check=ok; else check=OVER; fi
            fi
            printf '%-9s %-7s %-8s %9d %8.2f %5d %10s %s\n' "$name" "$c" "$budget" $((kb / 1024)) "$secs" "$code" "$docs" "$check"
            [ "$code" = 0 ] || sed -n '1,2s/^/          stderr: /p' "$work/err.txt" | cut -c1-160
        done
    done
done
