#!/usr/bin/env bash
# The staged pipeline on one machine, every stage a separate process, the way a job array runs
# them (docs/staged.md shows the Slurm and Kubernetes forms): shards and partitions of one
# stage run side by side with `xargs -P`, stages one after the other. The report goes to stdout
# and the exit status is the report's, as for `dupfind scan`.
#
#   contrib/staged/run-local.sh --shards N --parts M --work DIR [scan options] INPUTS...
#
# Options: --shards N, --parts M (default 1 each), --work DIR (must not hold a run; made if
# missing; or a URL, s3://bucket/prefix, with the credentials and endpoint in the environment
# as the AWS CLI reads them: docs/staged.md#on-an-object-store), --jobs J (processes at once;
# default: the number of cores), --threads T (threads of each of those processes; default:
# cores / J, at least 1), --resume (DIR holds a run that
# stopped or a task that was run again: skip init, run every shard or partition that
# `dupfind stage status` finds missing, damaged or stale, stage by stage, and nothing else;
# --shards and --parts are read from DIR's run.json; scan options and inputs given with it
# must be the run's own, as `dupfind stage init --resume` checks them),
# --dupfind BINARY (default: dupfind on PATH, else target/release/dupfind of this repository);
# each also as --opt=VALUE. Everything else is passed to `dupfind stage init` as scan options and inputs.
set -euo pipefail

shards="" parts="" work="" jobs="" threads="" bin="" resume=0
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        # --opt=VALUE, as dupfind takes it: read as --opt VALUE.
        --shards=* | --parts=* | --work=* | --jobs=* | --threads=* | --dupfind=*)
            set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
        --shards | --parts | --work | --jobs | --threads | --dupfind)
            if [ $# -lt 2 ]; then
                echo "run-local.sh: $1 needs a value" >&2
                exit 2
            fi
            opt=${1#--}
            [ "$opt" != dupfind ] || opt=bin
            printf -v "$opt" %s "$2"
            shift 2 ;;
        --resume) resume=1; shift ;;
        *) args+=("$1"); shift ;;
    esac
done
if [ -z "$work" ]; then
    echo "run-local.sh: --work DIR is required" >&2
    exit 2
fi
if [ -z "$bin" ]; then
    if command -v dupfind > /dev/null; then
        bin=$(command -v dupfind)
    else
        bin="$(cd "$(dirname "$0")/../.." && pwd)/target/release/dupfind"
    fi
fi
if [ ! -x "$bin" ]; then
    echo "run-local.sh: no dupfind binary at $bin (build it: cargo build --release)" >&2
    exit 2
fi
case "$work" in
    s3://* | s3a://* | gs://* | az://* | abfs://* | abfss://*) url=1 ;;
    *) url=0 ;;
esac
cores=$(nproc 2> /dev/null || echo 2)
jobs=${jobs:-$cores}
threads=${threads:-$((cores / jobs > 0 ? cores / jobs : 1))}

# Each step's index list, its tasks' stderr and failed statuses, under one temporary directory.
tmp="" printer=""
# On the way out, however the run ends. Ctrl-C reaches the printer too, which may be gone (and
# reaped) by then: its kill failing must not fail the trap, which under `set -e` would end the
# run with 1, nothing said, in place of its status (130), and leave the temporary directory. A
# subshell (the printer, a command substitution) that Ctrl-C catches just after its fork, before
# it has let go of the script's traps, runs this too: only the script itself cleans up, else the
# step's files went from under its tasks.
cleanup() {
    [ "$BASHPID" = "$$" ] || return 0
    [ -z "$printer" ] || kill "$printer" 2> /dev/null || true
    [ -z "$tmp" ] || rm -rf "$tmp"
}
trap cleanup EXIT
# Ctrl-C ends the run with 130 wherever it comes (else one that came between two steps, or as a
# step's last process ended, was lost, and the run went on), and through the EXIT trap.
trap 'exit 130' INT
tmp=$(mktemp -d "${TMPDIR:-/tmp}/run-local.XXXXXX")

# Prints the stderr of each task listed in DIR/todo, in that order, as soon as the task and
# every one before it have ended (DIR/I.done), or once the step has ended (DIR/end: a task
# never started after Ctrl-C has no stderr to wait for).
in_order() { # dir
    local dir=$1 i
    while read -r i; do
        while [ ! -e "$dir/$i.done" ] && [ ! -e "$dir/end" ]; do
            sleep 0.05
        done
        # (Silent about a file gone: the script removes them all when Ctrl-C ends it.)
        [ ! -e "$dir/$i.err" ] || cat "$dir/$i.err" >&2 2> /dev/null
    done < "$dir/todo"
}

# One stage over indices 0..count-1, `jobs` processes of `threads` threads at a time; with
# --resume only those that `stage status` finds not done (asked just before the stage runs, so
# that a task made stale by one run again before it is run too). Tasks side by side would
# interleave their warnings: each task's stderr goes to a file, printed in index order, so that
# the run's stderr is scan's whatever --jobs. Any failure stops the run once the step ends, with
# the status of the first failed task by index (2, or 130 after Ctrl-C), as `dupfind scan`
# would end, not xargs' 123.
each() { # stage flag count
    local stage=$1 flag=$2 count=$3 dir="$tmp/$1" ran=0 first
    mkdir "$dir"
    if [ "$resume" = 0 ]; then
        seq 0 $((count - 1))
    else
        "$bin" stage status --work "$work" --todo "$stage"
    fi > "$dir/todo"
    in_order "$dir" &
    printer=$!
    # One task at a time is in order already: its stderr is left as it is, seen as it comes.
    xargs -r -P "$jobs" -I{} sh -c '
        d=$1 i=$2 j=$3; shift 3
        if [ "$j" = 1 ]; then "$@"; else "$@" 2> "$d/$i.err"; fi; s=$?
        [ "$s" = 0 ] || echo "$i $s" >> "$d/failed"
        : > "$d/$i.done"; exit "$s"' \
        sh "$dir" {} "$jobs" "$bin" stage "$stage" --work "$work" "$flag" "{}/$count" \
        --threads "$threads" < "$dir/todo" || ran=$?
    : > "$dir/end"
    wait "$printer"
    printer=""
    if [ "$ran" != 0 ]; then
        first=$(sort -n "$dir/failed" 2> /dev/null | head -n 1 | cut -d' ' -f2)
        exit "${first:-2}"
    fi
}

# True when the work directory holds a run's run.json (a store's is read by `stage status`,
# which must say it is missing: any other error, a bucket that does not exist, stops the run).
has_run() {
    if [ "$url" = 1 ]; then
        local said
        said=$("$bin" stage status --work "$work" 2>&1 > /dev/null) && return 0
        case "$said" in
            *"run.json is missing: run \`dupfind stage init\` first"*) return 1 ;;
        esac
        echo "$said" >&2
        exit 2
    else
        [ -e "$work/run.json" ]
    fi
}

started=0
if [ "$resume" = 0 ] || ! has_run; then
    "$bin" stage init --work "$work" --shards "${shards:-1}" --parts "${parts:-1}" "${args[@]}"
    started=1
fi
# The run's own counts (--shards and --parts need not be given again with --resume).
if [ "$url" = 1 ]; then
    counts=$("$bin" stage status --work "$work" |
        sed -n '1s/^run [0-9a-f]*: \([0-9]*\) shards, \([0-9]*\) partitions$/shards=\1 parts=\2/p')
else
    counts=$(sed -n 's/^  "\(shards\|parts\)": \([0-9]*\),$/\1=\2/p' "$work/run.json")
fi
for c in $counts; do
    want=${c#*=}
    given=${c%%=*}
    if [ -n "${!given}" ] && [ "${!given}" != "$want" ]; then
        echo "run-local.sh: --$given ${!given}: the run in $work has $want (see its run.json)" >&2
        exit 2
    fi
    printf -v "$given" %s "$want"
done
# Options and inputs given to resume a run must be the run's own: init checks them, naming what
# differs, and leaves the run as it is.
if [ "$started" = 0 ] && [ ${#args[@]} -gt 0 ]; then
    "$bin" stage init --resume --work "$work" --shards "$shards" --parts "$parts" "${args[@]}"
fi
each sign --shard "$shards"
# With --against: the indexed documents the new ones meet (no task otherwise).
if [ -n "$("$bin" stage status --work "$work" --todo attach)" ]; then
    "$bin" stage attach --work "$work"
fi
each group --part "$parts"
if [ "$resume" = 0 ] || [ -n "$("$bin" stage status --work "$work" --todo components)" ]; then
    "$bin" stage components --work "$work"
fi
each route --shard "$shards"
each verify --part "$parts"
each dataset --shard "$shards"   # with --write-dataset; nothing to do otherwise
rm -rf "$tmp"
trap - EXIT
exec "$bin" stage report --work "$work"
