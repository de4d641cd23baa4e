#!/usr/bin/env bash
# The incremental index at scale (issue 18's figures): an index built over a large corpus and one
# over its first tenth; the same new documents scanned against each, with and without --update,
# in one run; then a re-run with nothing new, the whole large corpus again (unchanged),
# `index compact` and `index info`.
#
#   benches/index.sh --large target/bench/corpus-100000 --small target/bench/corpus-10000
#
# Options: --large DIR, --small DIR (the first tenth of --large, or any smaller corpus),
# --new N (new documents, default 1000), --runs R (best of R for the read-only scans, default 3),
# --work DIR (default target/bench-index; indexes are built there once and reused), -j N,
# --spread (below).
# Prints wall time, peak RSS (/usr/bin/time), bytes written (the files an update adds to the
# index directory, the manifest included) and index size / text size.
#
# The new documents: 70 % freshly generated text (another seed), 30 % lightly edited copies of
# documents of the small corpus, which both indexes hold: both scans find the same
# near-duplicates and verify the same pairs, so what differs is what the index's size costs.
# --spread takes the copies from all over the large corpus instead (the large index then finds
# ten times as many, and verifies them).
set -euo pipefail
cd "$(dirname "$0")/.."

large=target/bench/corpus-100000 small=target/bench/corpus-10000 new=1000 runs=3
work=target/bench-index jobs=2 spread=
while [ $# -gt 0 ]; do
    case "$1" in
        --large) large=$2; shift 2 ;;
        --small) small=$2; shift 2 ;;
        --new) new=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        -j) jobs=$2; shift 2 ;;
        --spread) spread=1; shift ;;
        *) echo "index.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
cargo build --release --quiet --bin dupfind
cargo build --release --quiet --example corpus
bin=$(realpath target/release/dupfind)
mkdir -p "$work"
work=$(realpath "$work")
large=$(realpath "$large") small=$(realpath "$small")

text_bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
dir_bytes() { find "$1" -type f ! -name lock -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

# The new documents.
if [ -n "$spread" ]; then source=$large newdir=$work/new-$new-spread; else source=$small newdir=$work/new-$new; fi
if [ ! -d "$newdir" ]; then
    rm -rf "$newdir.tmp"
    fresh=$((new * 7 / 10)) edited=$((new - new * 7 / 10))
    target/release/examples/corpus gen --out "$newdir.tmp/gen" --docs "$fresh" --seed 7 >&2
    mkdir -p "$newdir.tmp/edited"
    dirs=$(find "$source" -mindepth 1 -maxdepth 1 -type d | sort)
    ndirs=$(echo "$dirs" | wc -l)
    for i in $(seq 0 $((edited - 1))); do
        d=$(echo "$dirs" | sed -n "$(( (i * ndirs / edited) + 1 ))p")
        f=$(find "$d" -type f | sort | sed -n "$(( (i % 50) + 1 ))p")
        # One word substituted near the start, one sentence appended.
        sed '1s/^\([A-Za-z]*\)/Edited/' "$f" > "$newdir.tmp/edited/e$i.txt"
        echo "An added closing sentence for the benchmark copy number $i." >> "$newdir.tmp/edited/e$i.txt"
    done
    mv "$newdir.tmp" "$newdir"
fi

: > "$work/times.tsv"
# timed NAME CMD...: wall seconds, peak RSS (KB) and file-system output blocks into times.tsv;
# stdout to out-NAME.json, stderr to err-NAME.txt.
timed() {
    local name=$1; shift
    local rc=0 t0 t1
    t0=$(date +%s%N)
    nice /usr/bin/time -f "%M %O" -o "$work/time.txt" "$@" > "$work/out-$name.json" 2> "$work/err-$name.txt" || rc=$?
    t1=$(date +%s%N)
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then cat "$work/err-$name.txt" >&2; exit "$rc"; fi
    # Wall time from the clock in nanoseconds (/usr/bin/time rounds to 10 ms).
    printf '%s\t%s\t%s\n' "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')" \
        "$(tail -n 1 "$work/time.txt" | tr ' ' '\t')" >> "$work/times.tsv"
}
best() { awk -F'\t' -v n="$1" '$1 == n && (b == "" || $2 < b) { b = $2 } END { print b }' "$work/times.tsv"; }
rss() { awk -F'\t' -v n="$1" '$1 == n && $3 > r { r = $3 } END { printf "%.0f", r / 1024 }' "$work/times.tsv"; }

for size in small large; do
    corpus=${!size}
    if [ ! -f "$work/idx-$size/manifest" ]; then
        rm -rf "$work/idx-$size"
        timed "build-$size" "$bin" index build -q -j"$jobs" --index "$work/idx-$size" "$corpus"
    fi
done

for _ in $(seq "$runs"); do
    timed plain "$bin" scan -q -j"$jobs" "$newdir"
    for size in small large; do
        timed "against-$size" "$bin" scan -q -j"$jobs" --against "$work/idx-$size" "$newdir"
    done
done

for size in small large; do
    copy=$work/idx-$size-updated
    rm -rf "$copy"
    cp -a "$work/idx-$size" "$copy"
    before=$(dir_bytes "$copy")
    find "$copy" -type f -printf '%f %s %T@\n' | sort > "$work/files-before.txt"
    timed "update-$size" "$bin" scan -q -j"$jobs" --against "$copy" --update "$newdir"
    # Bytes written: every file the update created or replaced.
    find "$copy" -type f ! -name lock -printf '%f %s %T@\n' | sort > "$work/files-after.txt"
    written=$(comm -13 "$work/files-before.txt" "$work/files-after.txt" | awk '{ s += $2 } END { print s + 0 }')
    after=$(dir_bytes "$copy")
    echo "$size $before $after $written" >> "$work/sizes.txt.$$"
    # Again, with nothing new (not -q: stderr says that nothing was written).
    find "$copy" -type f -printf '%f %s %T@\n' | sort > "$work/files-before.txt"
    timed "again-$size" "$bin" scan -j"$jobs" --against "$copy" --update "$newdir"
    find "$copy" -type f -printf '%f %s %T@\n' | sort > "$work/files-after.txt"
    grep -q "nothing written" "$work/err-again-$size.txt" || { echo "index.sh: the re-run wrote" >&2; exit 1; }
    cmp -s "$work/files-before.txt" "$work/files-after.txt" || { echo "index.sh: the re-run changed the index" >&2; exit 1; }
done

# The whole large corpus again, unchanged: nothing read, nothing written.
timed unchanged-large "$bin" scan -q -j"$jobs" --against "$work/idx-large-updated" --update "$large"
grep -q '"unchanged_files": '"$(find "$large" -type f | wc -l)" "$work/out-unchanged-large.json" || {
    echo "index.sh: the unchanged corpus was read again" >&2; exit 1; }
timed compact "$bin" index compact --index "$work/idx-large-updated"
timed info "$bin" index info --index "$work/idx-large"

echo "new documents: $newdir ($(find "$newdir" -type f | wc -l) files, $(text_bytes "$newdir") bytes); -j$jobs; best of $runs for read-only scans"
for size in small large; do
    corpus=${!size}
    t=$(text_bytes "$corpus") i=$(dir_bytes "$work/idx-$size")
    docs=$(find "$corpus" -type f | wc -l)
    awk -v n="$size" -v d="$docs" -v t="$t" -v i="$i" 'BEGIN {
        printf "index %-5s %7d documents: text %6.1f MB, index %6.1f MB, index/text %.3f\n", n, d, t / 1e6, i / 1e6, i / t }'
    if grep -q "^build-$size" "$work/times.tsv"; then
        printf '  build: %.2f s, peak RSS %s MB\n' "$(best "build-$size")" "$(rss "build-$size")"
    fi
done
printf '%-28s %8s %10s\n' "run" "wall s" "peak MB"
for n in plain against-small against-large update-small update-large again-small again-large unchanged-large compact info; do
    printf '%-28s %8.4f %10s\n' "$n" "$(best "$n")" "$(rss "$n")"
done
awk -v p="$(best plain)" -v s="$(best against-small)" -v l="$(best against-large)" 'BEGIN {
    printf "against large / small: %.2fx; against large / plain: %.2fx (+%.4f s)\n", l / s, l / p, l - p }'
while read -r size before after written; do
    docs=$(find "${!size}" -type f | wc -l)
    added=$(grep -o '"updated_generation": *[0-9]*' "$work/out-update-$size.json" | head -1)
    awk -v n="$size" -v b="$before" -v a="$after" -v w="$written" -v d="$docs" -v k="$new" 'BEGIN {
        share = b / d * k
        printf "update %-5s: wrote %.2f MB; index grew %.2f MB; the new documents'"'"' share at the index'"'"'s bytes per document %.2f MB; written / share %.2f\n",
            n, w / 1e6, (a - b) / 1e6, share / 1e6, w / share }'
    [ -n "$added" ] || echo "  (no updated_generation in the report)"
done < "$work/sizes.txt.$$"
rm -f "$work/sizes.txt.$$"
