#!/usr/bin/env python3
"""The staged pipeline (docs/staged.md) driven by Ray; prints `dupfind scan`'s report.

    dupfind_ray.py --shards N --work DIR [--parts M] [--dupfind BINARY] [--address ADDR]
                   [--cpus-per-task C] [--timings] [scan options] INPUTS...

What runs where (docs/staged-engines.md):

    stage init         the driver (a subprocess, started while Ray starts)
    stage sign         Ray tasks, one per shard: the binary, over files in DIR
    stage attach       the driver, with --against (the indexed documents the new ones meet)
    stage group        Ray tasks, one per partition: the binary's own shuffle, reading every
                       shard's key file of its partition from DIR
    stage components   the driver
    stage route        Ray tasks, one per shard
    stage verify       Ray tasks, one per partition
    stage dataset      Ray tasks, one per shard (with --write-dataset; else nothing to do)
    stage report       the driver: its stdout is this script's, its exit status this script's

Each task runs the binary with as many threads as it has CPUs (--cpus-per-task, 1 unless set),
and Ray runs as many at once as the cluster has CPUs for. Without --address, `ray.init()` starts
a local cluster on this machine and stops it at the end; with one (`auto`, `ray://…`), the tasks
go to that cluster, whose nodes must all see DIR, the inputs and the binary at the same paths,
as Spark's executors must (and the index of --against DIR, which the sign and verify tasks read,
at the path the driver's `stage init` opened it). Every option this script does not know is
passed to `dupfind stage init` as a scan option or input. Nothing but the report goes to stdout.
"""

import json
import os
import sys
import time

# The Spark driver's pieces that are not Spark's: the command line, the binary, a stage's run
# and its failure, the timings.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spark"))
import dupfind_spark as common  # noqa: E402

USAGE = (
    "usage: dupfind_ray.py --shards N --work DIR [--parts M] [--dupfind BINARY] "
    "[--address ADDR] [--cpus-per-task C] [--timings] [scan options] INPUTS..."
)


def parse_args(argv):
    """This script's options, and `stage init`'s arguments, as the Spark driver splits them."""
    opts, rest = common.parse_args(
        argv, prog="dupfind_ray", usage=USAGE, doc=__doc__,
        valued={"--address": "address", "--cpus-per-task": "cpus"})
    try:
        opts["cpus"] = int(opts.get("cpus") or 1)
    except ValueError:
        raise SystemExit(f"dupfind_ray: --cpus-per-task takes a count, not {opts['cpus']!r}") \
            from None
    if opts["cpus"] < 1:
        raise SystemExit("dupfind_ray: --cpus-per-task must be at least 1")
    return opts, rest


def run_in_tasks(ray, binary, stage, work, flag, count, cpus, index_at):
    """Runs a per-shard or per-partition stage as `count` Ray tasks of `cpus` CPUs each, one
    index each (`index_at`: the run's index, which the sign and verify tasks check they see).
    Forwards each task's stderr to ours in index order, raises StageError for the first that
    failed, and returns (summed seconds of the binary, the longest task's seconds)."""
    task = ray.remote(num_cpus=cpus, max_retries=0)(common.run_stage)
    # Every Ray worker runs on a machine with the driver's binary at its path (a local cluster,
    # or the package's command on every node): the binary as the Spark driver's tasks take it.
    results = ray.get([task.remote(("path", binary), stage, work, flag, i, count, cpus, index_at)
                       for i in range(count)])
    return common.task_results(results, stage, flag, count)


def run_pipeline(opts, init_args, timings):
    """Runs the stages; returns the report's exit status."""
    import ray

    binary, work = opts["dupfind"], opts["work"]
    shards, parts, cpus = opts["shards"], opts["parts"], opts["cpus"]

    # init walks the inputs while Ray starts: both are on the driver and independent.
    start = time.monotonic()
    init = common.start_init(opts, init_args)
    started = False
    try:
        # The workers' own output (a task's prints, Ray's warnings) stays off our stdout.
        ray.init(address=opts.get("address"), log_to_driver=False, include_dashboard=False,
                 configure_logging=True, logging_level="error")
        started = True
        # The workers cannot import the Spark driver's module from beside this script (on a
        # cluster they have no copy of it): its task function goes to them by value.
        ray.cloudpickle.register_pickle_by_value(common)
        ray_seconds = time.monotonic() - start
        common.finish_init(init)
        timings.add("ray start + init", time.monotonic() - start,
                    f"ray.init {ray_seconds:.2f} s, stage init alongside")
        plan = json.loads(common.workfiles.read_bytes(work, "run.json"))
        index_at = common.index_dir(plan)

        def each(stage, flag, count, unit):
            common.timed(timings, stage,
                         lambda: run_in_tasks(ray, binary, stage, work, flag, count, cpus,
                                              index_at),
                         common.task_note(count, unit))

        def on_driver(stage):
            common.timed(timings, f"{stage} (driver)",
                         lambda: common.run_on_driver(
                             [binary, "stage", stage, "--work", work], f"dupfind stage {stage}"))

        each("sign", "--shard", shards, "shard tasks")
        common.attach_on_driver(binary, work, plan, timings)
        each("group", "--part", parts, "partition tasks")
        on_driver("components")
        each("route", "--shard", shards, "shard tasks")
        each("verify", "--part", parts, "partition tasks")
        # With --write-dataset, each shard's part of the deduplicated dataset; else nothing.
        each("dataset", "--shard", shards, "shard tasks")
    finally:
        common.stop_init(init)
        if started:
            common.timed(timings, "ray shutdown", ray.shutdown)
    return common.run_report(binary, work, timings)


def main(argv):
    """Runs the pipeline; the exit status is the report's (as `dupfind scan`'s)."""
    opts, init_args = parse_args(argv)
    return common.run_timed(run_pipeline, opts, init_args, "dupfind_ray")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
