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
#   dictbomb  a 5 KB Parquet file whose 5,000 rows all point at one 4 MiB dictionary entry:
#          20 GB of text, 4 GiB in a batch of 1,024 rows sized by the footer's encoded size
#   ignore a git checkout whose 6 MB .gitignore holds 270,000 `**/dirN/*N.log` patterns, about
#          9 KB each once compiled
#   threads sixty-four distinct 1.5 MB texts at -j4, -j8 and -j16 under 128M: a few documents in
#          flight at a time, but every thread's malloc arena keeps what it freed unless the
#          allocator is bounded (src/budget/allocator.rs)
#
#   benches/memory.sh                                 all of them, default and smaller budgets
#   benches/memory.sh --cases "large window"          some of them
#   BASELINE=path/to/old/dupfind benches/memory.sh    the same runs with another build too
#
# Needs python3, zstd (the dump) and /usr/bin/time. Writes about 200 MB under target/bench/memory.
set -euo pipefail
cd "$(dirname "$0")/.."

cases="large window dump dictbomb ignore threads" work=target/bench/memory
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
elif case == "threads":
    for i in range(64):
        with open(os.path.join(out + ".tmp", "t%02d.txt" % i), "w") as f:
            f.write(words(250_000))
elif case == "dump":
    with open(os.path.join(out + ".tmp", "records.jsonl"), "w") as f:
        for i in range(2_000_000):
            f.write('{"text":"r%d"}\n' % (i % 1000))
elif case == "dictbomb":
    import subprocess
    # Written by hand, Thrift's compact protocol and all: one required string column "text",
    # a zstd dictionary page of one entry, a data page of 5,000 keys that are all 0.
    def varint(n):
        out = bytearray()
        while n >= 0x80:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        return bytes(out + bytes([n]))
    class Struct:
        def __init__(self):
            self.b, self.last = bytearray(), 0
        def field(self, fid, ty):
            self.b.append((fid - self.last) << 4 | ty)
            self.last = fid
            return self
        def int(self, fid, v, ty=5):  # i32 (5) or i64 (6), zigzag
            self.field(fid, ty).b.extend(varint(v << 1))
            return self
        def str(self, fid, s):
            self.field(fid, 8).b.extend(varint(len(s)) + s.encode())
            return self
        def struct(self, fid, s):
            self.field(fid, 12).b.extend(s.end())
            return self
        def list(self, fid, ty, items):
            self.field(fid, 9).b.append(len(items) << 4 | ty)
            for it in items:
                if ty == 12:
                    self.b.extend(it.end())
                elif ty == 8:
                    self.b.extend(varint(len(it)) + it.encode())
                else:
                    self.b.extend(varint(it << 1))
            return self
        def end(self):
            return bytes(self.b) + b"\0"
    zstd = lambda data: subprocess.run(["zstd", "-19", "-c", "-q"], input=data,
                                       stdout=subprocess.PIPE, check=True).stdout
    rows, block = 5000, (words(2000) + " ").encode()
    entry = (block * ((4 << 20) // len(block) + 1))[: 4 << 20]
    dictionary = struct.pack("<I", len(entry)) + entry
    keys = bytes([1]) + varint(rows << 1) + b"\0"  # bit width 1, one run of 5,000 zeros
    data = bytearray(b"PAR1")
    pages = []
    for kind, plain, header in ((2, dictionary, 7), (0, keys, 5)):
        packed = zstd(plain)
        own = Struct().int(1, 1 if kind == 2 else rows).int(2, 0 if kind == 2 else 8)
        if kind == 0:
            own.int(3, 3).int(4, 3)  # RLE levels (none: the column is required)
        pages.append(len(data))
        data += Struct().int(1, kind).int(2, len(plain)).int(3, len(packed)).struct(header, own).end()
        data += packed
    size = len(dictionary) + len(keys)
    meta = (Struct().int(1, 6).list(2, 5, [0, 3, 8]).list(3, 8, ["text"]).int(4, 6)
            .int(5, rows, 6).int(6, size, 6).int(7, len(data) - 4, 6).int(9, pages[1], 6)
            .int(11, pages[0], 6))
    group = Struct().list(1, 12, [Struct().int(2, 4, 6).struct(3, meta)]).int(2, size, 6).int(3, rows, 6)
    schema = [Struct().str(4, "schema").int(5, 1), Struct().int(1, 6).int(3, 0).str(4, "text").int(6, 0)]
    footer = Struct().int(1, 1).list(2, 12, schema).int(3, rows, 6).list(4, 12, [group]).end()
    data += footer + struct.pack("<I", len(footer)) + b"PAR1"
    with open(os.path.join(out + ".tmp", "bomb.parquet"), "wb") as f:
        f.write(data)
elif case == "ignore":
    os.makedirs(os.path.join(out + ".tmp", ".git"))
    with open(os.path.join(out + ".tmp", ".gitignore"), "w") as f:
        for i in range(270_000):
            f.write("**/dir%d/*%06d.log\n" % (i % 1000, i))
    for i in range(4):
        with open(os.path.join(out + ".tmp", "doc%d.txt" % i), "w") as f:
            f.write(words(300))
PY
    if [ "$1" = dump ]; then
        zstd -q --rm "$2.tmp/records.jsonl"
    fi
    mv "$2.tmp" "$2"
}

# case → threads (a row for each), extra flags, budgets to try ("-" is the default budget)
declare -A jobs=([large]=8 [window]=16 [dump]=2 [dictbomb]=2 [ignore]=2 [threads]="4 8 16")
declare -A flags=([large]="--shingle char" [window]="" [dump]="" [dictbomb]="" [ignore]="" [threads]="")
declare -A budgets=([large]="- 1G" [window]="- 256M" [dump]="- 1G" [dictbomb]="- 256M" [ignore]="- 256M" [threads]="128M")

to_bytes() { # 1G → bytes
    python3 -c 'import sys; s=sys.argv[1]; u={"K":1,"M":2,"G":3,"T":4}; print(int(float(s[:-1])*1024**u[s[-1]]) if s[-1] in u else int(s))' "$1"
}

printf '%-9s %-11s %-8s %9s %8s %5s %10s %s\n' build case budget "RSS MiB" seconds exit documents check
for c in $cases; do
    dir=$work/$c
    [ -d "$dir" ] || gen "$c" "$dir"
    for b in "${bins[@]}"; do
        name=${b%%=*} bin=${b#*=}
        for run in $(for j in ${jobs[$c]}; do printf "$j:%s " ${budgets[$c]}; done); do
            j=${run%%:*} budget=${run#*:} row=$c
            [ "$j" = "${jobs[$c]}" ] || row=$c-j$j
            args=(scan -q -j"$j" ${flags[$c]} --format json "$dir")
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
            printf '%-9s %-11s %-8s %9d %8.2f %5d %10s %s\n' "$name" "$row" "$budget" $((kb / 1024)) "$secs" "$code" "$docs" "$check"
            [ "$code" = 0 ] || sed -n '1,2s/^/          stderr: /p' "$work/err.txt" | cut -c1-160
        done
    done
done
