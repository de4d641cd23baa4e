#!/usr/bin/env bash
# Object store benchmark: `dupfind scan` of the 10k benchmark corpus over S3 on loopback (moto,
# started here) against the same files on local disk; and a Parquet dump of it on S3 against
# the same dump on disk, and its bytes fetched against its size. Prints the throughput ratio (target: at least 0.5x), the requests
# per document, the requests a second, the CPU seconds of dupfind and of the server (on
# loopback they share the cores: the server's CPU per request bounds the rate) and the bytes
# fetched (DUPFIND_STORE_STATS). Both scans run with --keep first, and their clusters are
# compared: the default, oldest, orders members by modification time, an object's is its
# upload's, and strict clustering splits a component from its kept member on.
#
#   benches/s3.sh                          the corpus of benches/bench.sh (target/bench/corpus-10000)
#   benches/s3.sh --corpus DIR --runs 3    another corpus; best of R interleaved runs
#   benches/s3.sh --server s3s             s3s-fs (Rust, serves a directory) instead of moto
#
# Needs a Python with moto[server] and boto3: DUPFIND_TEST_PYTHON, else target/python-venv
# (.ci/venv makes it). The build is taken from $CARGO_TARGET_DIR when it is set. moto is a
# single Python process: it, not dupfind, bounds the requests a second here, so the ratio is a
# floor for a real store, whose latency is higher but which serves requests in parallel.
# s3s-fs (`cargo install s3s-fs@0.14.1 --features binary`; on PATH, or S3S_FS=path) answers
# several times faster, on its own threads (its listing walks the whole prefix again for each
# page: dupfind lists a level at a time, which it walks once).
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=target/bench/corpus-10000 runs=3 threads=2 server=moto
while [ $# -gt 0 ]; do
    case "$1" in
        --server) server=$2; shift 2 ;;
        --corpus) corpus=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        *) echo "s3.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
bin="${CARGO_TARGET_DIR:-target}/release/dupfind"
py="${DUPFIND_TEST_PYTHON:-target/python-venv/bin/python}"
if ! "$py" -c 'import moto.server, boto3' 2> /dev/null; then
    echo "s3.sh: no Python with moto[server] at $py (set DUPFIND_TEST_PYTHON, or run .ci/venv)" >&2
    exit 2
fi
[ -x "$bin" ] || cargo build --release --locked
[ -d "$corpus" ] || { echo "s3.sh: no corpus at $corpus (benches/bench.sh makes it)" >&2; exit 2; }

work=$(mktemp -d)
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench
export AWS_REGION=us-east-1
case "$server" in
    moto) "$py" -m moto.server -H 127.0.0.1 -p "$port" > "$work/server.log" 2>&1 & ;;
    s3s)
        s3s=${S3S_FS:-$(command -v s3s-fs || true)}
        [ -x "$s3s" ] || { echo "s3.sh: no s3s-fs (cargo install s3s-fs@0.14.1 --features binary)" >&2; exit 2; }
        mkdir "$work/store"
        "$s3s" --host 127.0.0.1 --port "$port" --access-key bench --secret-key bench \
            "$work/store" > "$work/server.log" 2>&1 &
        ;;
    *) echo "s3.sh: --server is moto or s3s" >&2; exit 2 ;;
esac
server_pid=$!
trap 'kill $server_pid 2> /dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do
    "$py" -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2> /dev/null && break
    sleep 0.1
done

# The Parquet dump: the corpus as a dataset of one Parquet file (path and text columns, and the
# annotations, which a scan does not read).
"$bin" scan -q "$corpus" --write-dataset "$work/pq" --dataset-format parquet --annotate > /dev/null
"$py" - "$corpus" "$work/pq" <<'PY'
import boto3, os, sys
from concurrent.futures import ThreadPoolExecutor
s3 = boto3.client("s3")
s3.create_bucket(Bucket="bench")
def put(args):
    path, key = args
    s3.upload_file(path, "bench", key)
jobs = []
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        p = os.path.join(root, f)
        jobs.append((p, "corpus/" + os.path.relpath(p, sys.argv[1])))
for f in os.listdir(sys.argv[2]):
    jobs.append((os.path.join(sys.argv[2], f), "pq/" + f))
with ThreadPoolExecutor(16) as ex:
    list(ex.map(put, jobs))
PY

docs=$(find "$corpus" -type f | wc -l)
best() { sort -n | head -1; }
# CPU seconds (user + system) the server has used so far: on loopback it shares the cores with
# dupfind, and its CPU per request is what bounds the requests a second.
server_cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f\n", ($14 + $15) / t }' "/proc/$server_pid/stat"; }
seconds() { # ARGS → wall seconds of one run; its stdout to $work/out, stderr to $work/err, and
    # its CPU seconds (user + system) to $work/cpu
    local start end
    start=$(date +%s.%N)
    DUPFIND_STORE_STATS=1 /usr/bin/time -f "%U %S" -o "$work/time" \
        "$bin" scan -j "$threads" --keep first "$@" > "$work/out" 2> "$work/err"
    end=$(date +%s.%N)
    awk '{ print $1 + $2 }' "$work/time" > "$work/cpu"
    echo "$end - $start" | bc
}
local_t=() s3_t=()
for _ in $(seq "$runs"); do
    local_t+=("$(seconds "$corpus")")
    cp "$work/out" "$work/local.json"
    cp "$work/cpu" "$work/local.cpu"
    before=$(server_cpu)
    s3_t+=("$(seconds s3://bench/corpus/)")
    echo "$(server_cpu) - $before" | bc > "$work/server.cpu"
    cp "$work/err" "$work/s3.err"
    cp "$work/out" "$work/s3.json"
    cp "$work/cpu" "$work/s3.cpu"
done
lt=$(printf '%s\n' "${local_t[@]}" | best)
st=$(printf '%s\n' "${s3_t[@]}" | best)
# The same clusters, the paths but for their prefix. `--keep first` above: the default, oldest,
# orders members by modification time, and an object's is its upload's, not its file's; strict
# clustering splits a component from its kept member on, so the clusters themselves would differ.
clusters() { jq -c "[.clusters[] | [.members[].path | sub(\"^$2\"; \"\")]]" "$1"; }
same=no
if [ "$(clusters "$work/local.json" "$corpus/")" = "$(clusters "$work/s3.json" "s3://bench/corpus/")" ]; then
    same=yes
fi
requests=$(sed -n 's/.*object store: \([0-9]*\) requests.*/\1/p' "$work/s3.err")
echo "corpus: $corpus ($docs documents), -j $threads, best of $runs"
echo "local disk:  $lt s (CPU $(cat "$work/local.cpu") s)"
echo "S3 ($server):   $st s   ratio $(echo "scale=3; $lt / $st" | bc)x   same clusters: $same"
echo "  requests/document $(echo "scale=3; $requests / $docs" | bc)   requests/s $(echo "$requests / $st" | bc)"
echo "  CPU (last run): dupfind $(cat "$work/s3.cpu") s, server $(cat "$work/server.cpu") s"

# The same documents as one object: a few ranged requests instead of one a file, so the
# server's CPU per request no longer bounds the rate.
pq=$(ls "$work/pq")
size=$(stat -c %s "$work/pq/$pq")
local_t=() s3_t=()
for _ in $(seq "$runs"); do
    local_t+=("$(seconds --text-field text "$work/pq/$pq")")
    cp "$work/out" "$work/local.json"
    s3_t+=("$(seconds --text-field text "s3://bench/pq/$pq")")
    cp "$work/out" "$work/s3.json"
done
lt=$(printf '%s\n' "${local_t[@]}" | best)
st=$(printf '%s\n' "${s3_t[@]}" | best)
same=no
if [ "$(jq -c '.clusters' "$work/local.json" | sed "s#$work/pq/##g")" = \
    "$(jq -c '.clusters' "$work/s3.json" | sed "s#s3://bench/pq/##g")" ]; then
    same=yes
fi
fetched=$(sed -n 's/.*requests, \([0-9]*\) bytes fetched.*/\1/p' "$work/err")
preq=$(sed -n 's/.*object store: \([0-9]*\) requests.*/\1/p' "$work/err")
echo "Parquet dump: $size bytes, $fetched fetched ($(echo "scale=3; $fetched / $size" | bc) of it) in $preq requests"
echo "  local disk $lt s, S3 $st s: ratio $(echo "scale=3; $lt / $st" | bc)x   same clusters: $same"
