#!/usr/bin/env bash
# Writes link-order.txt: the functions a scan runs, hottest first, which build.rs hands to LLD
# (`--symbol-ordering-file`) so that they sit together at the start of the code instead of
# spread over all of it (fewer code pages mapped: a smaller peak RSS for small scans).
# The names carry hashes of the compiler and dependency versions: run this again after
# updating either (a name the file holds that the binary does not is ignored, so a stale file
# costs nothing but its effect).
#
#   benches/link-order.sh                     scans of target/bench/corpus-10000 (words, char)
#   benches/link-order.sh DIR_OR_DUMP...      scans of these too, in both modes
#
# Needs valgrind (callgrind) and python3. The corpus is benches/bench.sh's (made if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=target/bench/corpus-10000
if [ ! -d "$corpus" ]; then
    cargo build --release --locked --quiet --example corpus
    mkdir -p target/bench
    target/release/examples/corpus gen --out "$corpus" --docs 10000 --seed 1 \
        --families "$corpus.families.tsv"
fi
# The binary as `cargo build --release` and `cargo install` build it: built with an example or
# the workspace, its dependencies' features and so its symbols' hashes differ.
cargo build --release --locked --quiet --bin dupfind
bin=target/release/dupfind
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

n=0
for input in "$corpus" "$@"; do
    for mode in word char; do
        n=$((n + 1))
        valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/$n.out" \
            "$bin" scan -q --shingle "$mode" "$input" > /dev/null 2> "$work/$n.err"
    done
done

python3 - "$work"/*.out > link-order.txt <<'PY'
import collections, re, sys

# Self cost per function name over every profile. In callgrind's format a cost line belongs to
# the current `fn=` unless it follows a `calls=` line, when it is the call's inclusive cost.
cost = collections.Counter()
for path in sys.argv[1:]:
    names, current, call = {}, None, False
    for line in open(path, errors="replace"):
        m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            if m.group(3):
                names[m.group(2)] = m.group(3)
            if m.group(1) == "fn":
                current = names.get(m.group(2))
            continue
        if line.startswith("calls="):
            call = True
            continue
        if line[:1].isdigit() or line[:1] in "+-*":
            fields = line.split()
            if not call and current and len(fields) > 1 and fields[1].isdigit():
                cost[current] += int(fields[1])
            call = False
    for name in names.values():
        cost[name] += 0
# The binary's own symbols only (not addresses, not "(below main)"), hottest first.
names = [n for n in cost if re.fullmatch(r"[A-Za-z_][\w.$]*", n)]
names.sort(key=lambda n: (-cost[n], n))
print("\n".join(names))
PY
echo "link-order.txt: $(wc -l < link-order.txt) functions; rebuild (cargo build --release) to use it" >&2
