#!/usr/bin/env bash
# A Spark standalone cluster on this machine: a master and two workers on 127.0.0.1, each worker
# with its own work and scratch directories, so that the executors share no directory with the
# driver (a real cluster's situation, where only object stores are shared). Made to try
# contrib/spark/dupfind_spark.py with a spark:// master and to test it (tests/python).
#
#   contrib/spark/local-cluster.sh start     # prints the master's URL, spark://127.0.0.1:PORT
#   contrib/spark/local-cluster.sh stop      # stops every process it started, removes its files
#   contrib/spark/local-cluster.sh status    # the master's URL and exit status 0 when running
#
# Both commands are idempotent: `start` on a running cluster prints its URL again, `stop` on a
# stopped one does nothing. Settings, from the environment:
#   DUPFIND_SPARK_CLUSTER   its directory (pid files, logs, the workers' directories);
#                           default ${TMPDIR:-/tmp}/dupfind-spark-cluster-$UID
#   SPARK_MASTER_PORT       the master's port; default 7077 when free, else a free one
#   SPARK_WORKER_CORES      cores of each worker (default 1), SPARK_WORKER_MEMORY (default 1g)
#   SPARK_WORKERS           how many workers (default 2)
#   PYTHON                  the Python with pyspark (default python3); Spark is the one its pip
#                           package holds, unless SPARK_HOME is set. Java 17 must be on PATH.
# The daemons are Spark's own (spark-class org.apache.spark.deploy.master.Master and
# ...worker.Worker). Each runs in a process group of its own, recorded by its pid; the executors
# and their Python workers are in their worker's group, so `stop` ends them with it.
set -euo pipefail

dir=${DUPFIND_SPARK_CLUSTER:-${TMPDIR:-/tmp}/dupfind-spark-cluster-$(id -u)}
python=${PYTHON:-python3}
workers=${SPARK_WORKERS:-2}
cores=${SPARK_WORKER_CORES:-1}
memory=${SPARK_WORKER_MEMORY:-1g}
# Seconds to wait for the master to listen and every worker to register, and for a stopped
# daemon to exit before it is killed.
start_timeout=90
stop_timeout=15

die() {
    echo "local-cluster.sh: $*" >&2
    exit 2
}

# The pids recorded in the cluster's directory whose process still runs.
alive() {
    local f pid
    for f in "$dir"/*.pid; do
        [ -e "$f" ] || continue
        pid=$(cat "$f")
        if kill -0 "$pid" 2> /dev/null; then
            echo "$pid"
        fi
    done
}

running() {
    local n
    n=$(alive | wc -l)
    [ -f "$dir/master-url" ] && [ "$n" -eq $((workers + 1)) ]
}

# Any process whose working directory is below the cluster's directory (an executor or Python
# worker that left its group), so that nothing started here outlives `stop`.
strays() {
    local p cwd
    for p in /proc/[0-9]*; do
        cwd=$(readlink "$p/cwd" 2> /dev/null) || continue
        case "$cwd" in
            "$dir"/*) echo "${p#/proc/}" ;;
        esac
    done
}

stop() {
    local pids pid waited=0
    pids=$(alive)
    for pid in $pids; do
        kill -TERM -- "-$pid" 2> /dev/null || kill -TERM "$pid" 2> /dev/null || true
    done
    while [ -n "$(alive)" ] && [ "$waited" -lt $((stop_timeout * 10)) ]; do
        sleep 0.1
        waited=$((waited + 1))
    done
    for pid in $pids $(strays); do
        kill -KILL -- "-$pid" 2> /dev/null || kill -KILL "$pid" 2> /dev/null || true
    done
    if [ -n "$(strays)" ]; then
        sleep 1
        [ -z "$(strays)" ] || die "processes still run in $dir: $(strays | tr '\n' ' ')"
    fi
    rm -rf "$dir"
}

free_port() {
    "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

port_free() {
    "$python" -c 'import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)' "$1"
}

# Waits until the master's web UI lists every worker as alive (its JSON at /json/).
wait_ready() {
    "$python" - "$1" "$workers" "$start_timeout" << 'EOF' || return 1
import json, sys, time, urllib.request
url, want, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
deadline = time.monotonic() + timeout
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            state = json.load(r)
        if sum(w.get("state") == "ALIVE" for w in state.get("workers", [])) >= want:
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.25)
sys.exit(1)
EOF
}

# Starts a Spark daemon in a process group of its own: `setsid` execs the class (spark-class
# ends in exec), so the recorded pid is the JVM's and the group's.
daemon() {
    local name=$1
    shift
    setsid "$spark_home/bin/spark-class" "$@" < /dev/null > "$dir/logs/$name.log" 2>&1 &
    echo $! > "$dir/$name.pid"
}

start() {
    if running; then
        cat "$dir/master-url"
        return
    fi
    # A cluster half up (a daemon died): start afresh.
    stop
    command -v java > /dev/null || die "no java on PATH: Spark 3.5 needs Java 17 (Debian: apt-get install openjdk-17-jre-headless)"
    spark_home=${SPARK_HOME:-$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2> /dev/null)} \
        || die "no pyspark in $python (pip install pyspark, or set PYTHON or SPARK_HOME)"
    [ -x "$spark_home/bin/spark-class" ] || die "no bin/spark-class in $spark_home"
    export SPARK_HOME=$spark_home

    local port ui url w
    port=${SPARK_MASTER_PORT:-7077}
    if [ -z "${SPARK_MASTER_PORT:-}" ] && ! port_free "$port"; then
        port=$(free_port)
    fi
    ui=$(free_port)
    mkdir -p "$dir/logs"
    url="spark://127.0.0.1:$port"
    SPARK_LOCAL_DIRS="$dir/master/local" SPARK_LOCAL_IP=127.0.0.1 \
        daemon master org.apache.spark.deploy.master.Master \
        --host 127.0.0.1 --port "$port" --webui-port "$ui"
    for w in $(seq 1 "$workers"); do
        mkdir -p "$dir/worker-$w/work" "$dir/worker-$w/local" "$dir/worker-$w/tmp"
        # The worker's executors inherit its environment: their scratch (SPARK_LOCAL_DIRS, the
        # fetched files) and TMPDIR are the worker's own.
        SPARK_WORKER_DIR="$dir/worker-$w/work" SPARK_LOCAL_DIRS="$dir/worker-$w/local" \
            TMPDIR="$dir/worker-$w/tmp" SPARK_LOCAL_IP=127.0.0.1 \
            daemon "worker-$w" org.apache.spark.deploy.worker.Worker \
            --host 127.0.0.1 --webui-port "$(free_port)" --cores "$cores" --memory "$memory" \
            --work-dir "$dir/worker-$w/work" "$url"
    done
    if ! wait_ready "http://127.0.0.1:$ui/json/"; then
        echo "local-cluster.sh: the cluster did not start within $start_timeout s; its logs:" >&2
        tail -n 20 "$dir"/logs/*.log >&2 || true
        stop
        exit 2
    fi
    echo "$url" > "$dir/master-url"
    echo "$url"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status)
        running || die "not running (directory $dir)"
        cat "$dir/master-url"
        ;;
    *) die "usage: local-cluster.sh start|stop|status" ;;
esac
