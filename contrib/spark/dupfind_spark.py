#!/usr/bin/env python3
"""The staged pipeline (docs/staged.md) driven by PySpark; prints `dupfind scan`'s report.

    dupfind_spark.py --shards N --work DIR|URL [--parts M] [--dupfind BINARY] [--master URL]
                     [--executor-dupfind PATH] [--conf KEY=VALUE]... [--timings]
                     [scan options] INPUTS...

What runs where (docs/staged-engines.md has the whole story):

    stage init         the driver (a subprocess, started while the JVM starts)
    stage sign         Spark tasks, one per shard: the binary, over files in DIR, with as
                       many threads as a task has cores (spark.task.cpus)
    stage attach       the driver, with --against (the indexed documents the new ones meet)
    group              Spark SQL: the key files read by the tasks with pyarrow into Arrow
                       batches, grouped by (table, key) -- the shuffle -- and each partition's
                       buckets written by its task with pyarrow, in the group stage's exact
                       file contract
    stage components   the driver (one process; it streams the group files and holds about
                       20 bytes per candidate document, never the buckets or edges)
    stage route        Spark tasks, one per shard
    stage verify       Spark tasks, one per partition
    stage dataset      Spark tasks, one per shard (with --write-dataset; else nothing to do)
    stage report       the driver: its stdout is this script's, its exit status this script's

The work directory is read and written by the driver and by every task, each on its own: on a
cluster it is an object store URL (s3://bucket/prefix, gs://...), which the binary and pyarrow
read with the credentials of the environment, or a shared file system mounted at the same path
everywhere; the inputs likewise. Spark moves only Arrow batches and small values. On a cluster
(a master other than local[N]) the driver ships its binary to the executors (SparkContext.addFile)
unless --executor-dupfind names the path of the same binary on every executor. Every option this
script does not know is passed to `dupfind stage init` as a scan option or input (--against DIR,
--update and --prune too: the index, a local directory, is opened by init, attach and report on
the driver and by the sign and verify tasks, so on a cluster it must be at the same path on the
driver and on every executor). Nothing but the report goes to stdout; Spark's log is cut to
errors.
"""

import json
import os
import re
import subprocess
import sys
import time

# The content table's number in the key and bucket files (docs/staged.md).
CONTENT_TABLE = -1

# The staged pipeline's work-file contract in Python (lineage, seals, CRC-32s).
WORKFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "staged",
                         "workfiles.py")
sys.path.insert(0, os.path.dirname(WORKFILES))

import workfiles  # noqa: E402  (the work-file contract, beside run-local.sh)

USAGE = (
    "usage: dupfind_spark.py --shards N --work DIR|URL [--parts M] [--dupfind BINARY] "
    "[--master URL] [--executor-dupfind PATH] [--conf KEY=VALUE]... [--timings] "
    "[scan options] INPUTS..."
)


class StageError(Exception):
    """A stage of the binary failed: its command, exit status and stderr."""

    def __init__(self, what, status, stderr):
        super().__init__(f"{what} failed (exit status {status})")
        self.what = what
        self.status = status
        self.stderr = stderr


def parse_args(argv, prog="dupfind_spark", usage=USAGE, doc=None, valued=None):
    """Splits the command line into this script's options and `stage init`'s arguments.

    Parsed by hand, as contrib/staged/run-local.sh does, so that scan options with values
    (`-m simhash`, `--threshold 0.7`) pass through untouched and in order. Another driver
    (contrib/ray) gives its name, usage and help, and its own valued options (`valued`, flag →
    key) in place of Spark's --master and --conf.
    """
    spark = valued is None
    opts = {"shards": 1, "parts": 1, "work": None, "dupfind": None, "master": None,
            "executor_dupfind": None, "timings": False, "conf": []}
    rest = []
    valued = {"--shards": "shards", "--parts": "parts", "--work": "work",
              "--dupfind": "dupfind",
              **({"--master": "master", "--executor-dupfind": "executor_dupfind"}
                 if spark else valued)}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in valued and eq:
            opts[valued[name]] = value
        elif arg in valued:
            if i + 1 >= len(argv):
                raise SystemExit(f"{prog}: {arg} needs a value\n{usage}")
            opts[valued[arg]] = argv[i + 1]
            i += 1
        elif spark and name == "--conf":
            # Spark settings, as spark-submit's --conf (spark.task.cpus=4, spark.executor.memory=…).
            if not eq:
                if i + 1 >= len(argv):
                    raise SystemExit(f"dupfind_spark: --conf needs KEY=VALUE\n{USAGE}")
                value = argv[i + 1]
                i += 1
            if "=" not in value:
                raise SystemExit(f"dupfind_spark: --conf takes KEY=VALUE, not {value!r}")
            opts["conf"].append(tuple(value.split("=", 1)))
        elif arg == "--timings":
            opts["timings"] = True
        elif arg in ("-h", "--help"):
            print(doc or __doc__)
            raise SystemExit(0)
        else:
            rest.append(arg)
        i += 1
    if not opts["work"]:
        raise SystemExit(f"{prog}: --work DIR is required\n{usage}")
    for key in ("shards", "parts"):
        try:
            opts[key] = int(opts[key])
        except ValueError:
            raise SystemExit(f"{prog}: --{key} takes a count, not {opts[key]!r}") from None
        if opts[key] < 1:
            raise SystemExit(f"{prog}: --{key} must be at least 1")
    opts["work"] = workfiles.local_work(opts["work"])
    opts["dupfind"] = find_binary(opts["dupfind"], prog)
    return opts, rest


def find_binary(given, prog="dupfind_spark"):
    """The dupfind binary: --dupfind, else dupfind on PATH, else the `dupfind` command the Python
    package installed (pip install ./python; an executor's venv need not be on PATH), else this
    repository's release build."""
    if given:
        path = os.path.abspath(given)
    else:
        from shutil import which

        path = which("dupfind") or installed_command() or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..", "target", "release", "dupfind")
        path = os.path.abspath(path)
    if not os.access(path, os.X_OK):
        raise SystemExit(f"{prog}: no dupfind binary at {path} (build it: cargo build --release)")
    return path


def installed_command():
    """The `dupfind` command of the Python package in this interpreter, or None."""
    try:
        import dupfind
    except ImportError:
        return None
    return dupfind.command()


def task_binary(binary):
    """The path of the binary a task runs. `binary` is ("path", PATH), a binary every executor
    has at PATH (a local master's tasks run the driver's), or ("shipped", NAME), the driver's
    binary that `SparkContext.addFile` copied into each executor's scratch directory, made
    executable there."""
    how, value = binary
    if how == "path":
        return value
    from pyspark import SparkFiles

    path = SparkFiles.get(value)
    mode = os.stat(path).st_mode
    if mode & 0o100 == 0:
        os.chmod(path, mode | 0o755)
    return path


# The stages whose tasks open the index of a run --against one (docs/staged.md).
READS_INDEX = ("sign", "verify")


def index_dir(plan):
    """The index of a run --against one (run.json's `against.dir`, relative to `cwd`, the
    directory `stage init` ran in), or None."""
    import base64

    against = plan.get("against")
    if not against:
        return None
    path = os.fsdecode(base64.b64decode(against["dir"]))
    return os.path.join(os.fsdecode(base64.b64decode(plan["cwd"])), path)


def missing_index(index_at, stage, index, count):
    """The message of a task of `stage` that would open the index `index_at` on a machine that
    does not have it, or None. The binary would say only that the path is missing; this says
    where the index must be."""
    if index_at is None or stage not in READS_INDEX or os.path.isdir(index_at):
        return None
    import socket

    return (f"stage {stage} {index}/{count} on {socket.gethostname()}: there is no index at "
            f"{index_at} (--against) on this machine: the sign and verify tasks read the index, "
            "so it must be at that path on every machine that runs tasks (a shared file system, "
            "read-only) as well as on the driver's, where stage init, attach and report open it "
            "(and --update writes it); or run the whole pipeline on the index's machine (a "
            "local master, contrib/staged/run-local.sh)\n")


def run_stage(binary, stage, work, flag, index, count, threads, index_at=None):
    """Runs `dupfind stage STAGE --work WORK FLAG INDEX/COUNT --threads THREADS` (in a Spark task).

    Returns a dict: index, status, stderr, seconds. A failure is returned, not raised, so that
    the driver reports the binary's own message rather than a Python traceback through Py4J.
    `index_at` is the run's index (`index_dir`), checked first by the tasks that read it.
    """
    start = time.monotonic()
    missing = missing_index(index_at, stage, index, count)
    if missing:
        return {"index": index, "status": 2, "stdout": "", "seconds": 0.0, "stderr": missing}
    try:
        path = task_binary(binary)
        cmd = [path, "stage", stage, "--work", work, flag, f"{index}/{count}",
               "--threads", str(threads)]
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, check=False)
    except OSError as e:
        import socket

        return {"index": index, "status": 2, "stdout": "", "seconds": time.monotonic() - start,
                "stderr": f"dupfind_spark: cannot run the dupfind binary on {socket.gethostname()} "
                          f"({e}): give --executor-dupfind the path every executor has, or leave "
                          "it out to have the driver ship its own\n"}
    return {
        "index": index,
        "status": proc.returncode,
        "stderr": proc.stderr.decode("utf-8", "replace"),
        "stdout": proc.stdout.decode("utf-8", "replace"),
        "seconds": time.monotonic() - start,
    }


def run_in_tasks(sc, binary, stage, work, flag, count, index_at=None):
    """Runs a per-shard or per-partition stage as `count` Spark tasks, one index each, each
    binary with as many threads as a task has cores (`spark.task.cpus`).

    Forwards each task's stderr to ours, raises StageError for the first that failed, and
    returns (summed seconds of the binary, the longest task's seconds).
    """
    threads = max(1, int(sc.getConf().get("spark.task.cpus", "1")))
    results = (sc.parallelize(range(count), count)
               .map(lambda i: run_stage(binary, stage, work, flag, i, count, threads, index_at))
               .collect())
    return task_results(results, stage, flag, count)


def task_results(results, stage, flag, count):
    """The runs of a stage's tasks (`run_stage`'s dicts): each task's output forwarded to our
    stderr in index order, StageError raised for the first that failed; returns (summed
    seconds of the binary, the longest task's seconds)."""
    results = sorted(results, key=lambda r: r["index"])
    for r in results:
        if r["stderr"]:
            sys.stderr.write(r["stderr"])
        if r["stdout"]:
            # The stages write nothing on stdout; keep ours for the report alone.
            sys.stderr.write(r["stdout"])
    for r in results:
        if r["status"] != 0:
            raise StageError(f"dupfind stage {stage} {flag} {r['index']}/{count}", r["status"],
                             r["stderr"])
    seconds = [r["seconds"] for r in results]
    return sum(seconds), max(seconds)


def run_on_driver(cmd, what):
    """Runs a stage on the driver, its stderr forwarded; raises StageError when it fails."""
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, check=False)
    sys.stderr.write(proc.stderr.decode("utf-8", "replace"))
    sys.stderr.write(proc.stdout.decode("utf-8", "replace"))
    if proc.returncode != 0:
        raise StageError(what, proc.returncode, proc.stderr.decode("utf-8", "replace"))


def attach_on_driver(binary, work, plan, timings):
    """`dupfind stage attach` on the driver, in a run --against an index (nothing otherwise):
    once, after every shard is signed, before the group step, which reads its keys."""
    if plan.get("against"):
        timed(timings, "attach (driver)",
              lambda: run_on_driver([binary, "stage", "attach", "--work", work],
                                    "dupfind stage attach"))


# --- the group stage's files, as `dupfind stage group` writes them (src/stages/group.rs) ---


def group_files(part):
    """`group/part-J.parquet` and `group/part-J.json` (J zero-padded to six digits)."""
    return f"group/part-{part:06d}.parquet", f"group/part-{part:06d}.json"


def bucket_schema(metadata):
    """The group file's schema, tagged with its lineage (footer key-value metadata
    `dupfind.run` and `dupfind.lineage`, contrib/staged/workfiles.py)."""
    import pyarrow as pa

    return pa.schema([
        ("table", pa.int32()),
        ("key", pa.int64()),
        ("docs", pa.list_(pa.int64())),
        ("aux", pa.list_(pa.int64())),
    ], metadata=metadata)


class BucketFile:
    """One partition's `group/part-J.parquet`, written a table at a time to a local temporary
    file (zstd, tagged with its lineage) that `commit` makes the work file (renamed, or
    uploaded whole to a store); counts what it holds."""

    def __init__(self, work, part, metadata):
        import pyarrow.parquet as pq
        import workfiles

        self.work, self.rel = work, group_files(part)[0]
        self.schema = bucket_schema(metadata)
        self.temp = workfiles.temp_for(work, self.rel)
        self.out = pq.ParquetWriter(self.temp, self.schema, compression="zstd")
        self.buckets = self.largest = 0

    def write(self, table):
        """Appends buckets (columns table, key, docs, aux)."""
        import pyarrow.compute as pc

        self.out.write_table(table.cast(self.schema))
        self.buckets += table.num_rows
        if table.num_rows:
            self.largest = max(self.largest, pc.max(pc.list_value_length(table["docs"])).as_py())

    def commit(self):
        """Closes the file and makes it the work file; returns its CRC-32."""
        import workfiles

        self.out.close()
        crc = workfiles.crc32_file(self.temp)
        workfiles.commit(self.work, self.rel, self.temp)
        return crc

    def discard(self):
        """Removes the temporary file of a write that failed."""
        self.out.close()
        if os.path.exists(self.temp):
            os.unlink(self.temp)


class GroupError(Exception):
    """Key files the group step refuses (missing, stale, damaged): the message names them."""


def plan_parts(work, plan):
    """Each partition's group attempt: its id, the key rows it reads and the summaries it
    consumes (every shard's sign summary, and attach's in a run --against an index); and the
    CRC-32 of each key file, as its producer's summary records it: `crcs[I][J]` is shard I's of
    partition J, and with an index `crcs[N][J]` attach's (`key_source`). Every key file's tag is
    checked against its producer's summary from its footer alone (on a store, two range
    requests); its CRC-32 is checked by the task that reads it (`key_reader`)."""
    import workfiles

    try:
        signed = workfiles.signed_shards(work, plan)
        attached = workfiles.attached(work, plan)
        parts = []
        for j in range(plan["parts"]):
            consumed, keys = workfiles.check_keys(work, plan, signed, j, crc=False,
                                                  attached=attached)
            parts.append({"attempt": workfiles.fresh_attempt(), "keys": keys,
                          "consumed": consumed})
    except workfiles.WorkFileError as e:
        raise GroupError(str(e)) from None
    producers = signed + ([attached] if attached else [])
    crcs = [[p["lineage"]["files"][key_source(plan, i, j)] for j in range(plan["parts"])]
            for i, p in enumerate(producers)]
    return parts, crcs


def key_source(plan, i, part):
    """The key file of partition `part` of source `i`: shard I's for I < N, attach's for I = N
    (a run --against an index: the indexed documents' keys, one more shard)."""
    import workfiles

    if i < plan["shards"]:
        return workfiles.key_file(i, part)
    return workfiles.attach_key_file(part)


def finish_part(work, plan, part, info, out):
    """Commits partition `part`'s bucket file, then writes its summary (last)."""
    import workfiles

    crc = out.commit()
    workfiles.write_bytes(work, group_files(part)[1], workfiles.group_summary(
        plan, info["attempt"], part, info["keys"], out.buckets, out.largest, crc,
        info["consumed"]))


def open_part(work, plan, part, info):
    """Partition `part`'s bucket file, tagged with its attempt."""
    import workfiles

    return BucketFile(work, part, workfiles.tag(plan, info["attempt"], "group", part=part))


# The key rows as the reading tasks hand them to Spark: each with its partition.
KEY_ROWS = "part int, `table` int, `key` long, doc long, aux long"


def key_reader(work, plan, crcs):
    """The mapInArrow function reading the key files in the tasks: in, the ids I*M+J of source
    I's key file of partition J (`key_source`); out, its rows with their partition, as Arrow
    batches. Each file is read once (from a store, one streamed GET into the task's scratch
    directory) and its CRC-32 checked against its producer's summary (`crcs`, a broadcast)
    before a row leaves.
    """
    parts = plan["parts"]

    def read(batches):
        import pyarrow as pa
        import pyarrow.parquet as pq
        import workfiles

        for batch in batches:
            for i in batch.column(0).to_pylist():
                source, part = divmod(i, parts)
                rel = key_source(plan, source, part)
                with workfiles.fetched(work, rel) as (path, crc):
                    workfiles.check_crc(work, rel, crcs.value[source][part], crc)
                    for rows in pq.ParquetFile(path).iter_batches():
                        tag = pa.repeat(pa.scalar(part, pa.int32()), rows.num_rows)
                        yield pa.RecordBatch.from_arrays(
                            [tag, *(rows.column(c) for c in ("table", "key", "doc", "aux"))],
                            names=["part", "table", "key", "doc", "aux"])

    return read


def bucket_writer(work, plan, parts):
    """The mapInArrow function writing each partition's buckets and summary from its task.

    Its input is sorted by (part, table, key), and every row of a partition is in one task, so
    each partition's file is streamed batch by batch and finished when the next one starts.
    Yields one row per partition written: part, buckets, largest.
    """

    def write(batches):
        import pyarrow as pa
        import pyarrow.compute as pc

        schema = pa.schema([("part", pa.int32()), ("buckets", pa.int64()),
                            ("largest", pa.int64())])
        current, out = None, None
        try:
            for batch in batches:
                table = pa.Table.from_batches([batch])
                for part in pc.unique(table["part"]).to_pylist():
                    if part != current:
                        if out is not None:
                            finish_part(work, plan, current, parts[current], out)
                            yield pa.RecordBatch.from_pydict(
                                {"part": [current], "buckets": [out.buckets],
                                 "largest": [out.largest]}, schema=schema)
                        current, out = part, open_part(work, plan, part, parts[part])
                    rows = table.filter(pc.equal(table["part"], part))
                    out.write(rows.select(["table", "key", "docs", "aux"]))
            if out is not None:
                finish_part(work, plan, current, parts[current], out)
                yield pa.RecordBatch.from_pydict(
                    {"part": [current], "buckets": [out.buckets], "largest": [out.largest]},
                    schema=schema)
                out = None
        finally:
            if out is not None and os.path.exists(out.temp):
                out.discard()

    return write


def group_with_spark(spark, work, plan):
    """The group stage as Spark SQL: the shuffle, then each partition's files from its task.

    The key files of partition J (`sign/shard-I.keys-J.parquet`, and `attach/keys-J.parquet`
    in a run --against an index) become the buckets of
    `group/part-J.parquet`, as `dupfind stage group --part J/M` would write them: every
    (table, key) of two or more rows, `docs` increasing, `aux` parallel to it for the content
    table and empty for bands. Partitions without a bucket get an empty file from the driver.
    The tasks read and write the work files themselves (a local directory, or an object store
    through pyarrow): Spark moves only Arrow batches, with no access to the work directory.
    """
    from pyspark.sql import functions as F

    start = time.monotonic()
    parts = plan["parts"]
    info, crcs = plan_parts(work, plan)
    # One reading task per shard (and attach's): its key files are the ids [I*M, (I+1)*M).
    sources = len(crcs)
    keys = (spark.range(0, sources * parts, 1, sources)
            .mapInArrow(key_reader(work, plan, spark.sparkContext.broadcast(crcs)), KEY_ROWS))
    # Repartitioning by `part` is the one shuffle: the aggregate below needs its rows clustered
    # by (part, table, key), which rows clustered by `part` already are.
    members = F.sort_array(F.collect_list(F.struct("doc", "aux")))
    buckets = (keys.repartition(parts, "part")
               .groupBy("part", "table", "key")
               .agg(F.count(F.lit(1)).alias("n"), members.alias("m"))
               .where(F.col("n") >= 2)
               .select("part", "table", "key", F.col("m.doc").alias("docs"),
                       F.when(F.col("table") == CONTENT_TABLE, F.col("m.aux"))
                       .otherwise(F.array().cast("array<bigint>")).alias("aux"))
               .sortWithinPartitions("part", "table", "key"))
    opened = time.monotonic() - start
    try:
        written = (buckets.mapInArrow(bucket_writer(work, plan, info),
                                      "part int, buckets long, largest long")
                   .collect())
    except Exception as e:  # a task's WorkFileError, wrapped by Py4J and Spark
        refused = re.search(r"WorkFileError: ([^\n]*)", str(e))
        if refused:
            raise GroupError(refused.group(1)) from None
        raise
    job = time.monotonic() - start - opened
    done = {r["part"] for r in written}
    for part in range(parts):
        if part not in done:
            finish_part(work, plan, part, info[part], open_part(work, plan, part, info[part]))
    return {"buckets": sum(r["buckets"] for r in written), "opened": opened, "job": job}


def start_spark(master, parts, conf):
    """A quiet SparkSession (no UI, no progress bar, errors only in the log)."""
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.appName("dupfind")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(parts))
               .config("spark.driver.extraJavaOptions",
                       "-Dlog4j2.configurationFile=" + log4j_config()))
    for key, value in conf:
        builder = builder.config(key, value)
    if master:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:
        # Started with plain python rather than spark-submit: run locally on every core.
        builder = builder.master("local[*]")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def log4j_config():
    """The log4j2 configuration beside this script: Spark's log on stderr, errors only."""
    return "file:" + os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")


class Timings:
    """Wall time of each step, printed on stderr with --timings."""

    def __init__(self, enabled, prog="dupfind_spark"):
        self.enabled = enabled
        self.prog = prog
        self.start = time.monotonic()
        self.rows = []

    def add(self, what, seconds, note=""):
        """Records a step."""
        self.rows.append((what, seconds, note))

    def print(self):
        """Prints the steps and the total on stderr."""
        if not self.enabled:
            return
        out = sys.stderr
        out.write(f"{self.prog}: wall time (seconds)\n")
        for what, seconds, note in self.rows:
            out.write(f"  {what:<22}{seconds:8.2f}  {note}\n".rstrip() + "\n")
        out.write(f"  {'total':<22}{time.monotonic() - self.start:8.2f}\n")


def timed(timings, what, fn, note=None):
    """Runs fn(), recording its wall time; `note(result)` annotates the row."""
    start = time.monotonic()
    result = fn()
    timings.add(what, time.monotonic() - start, note(result) if note else "")
    return result


def task_note(count, unit):
    """The note of a per-shard or per-partition stage: its tasks and the binary's own time."""
    return lambda r: f"{count} {unit}; binary {r[0]:.2f} s summed, longest task {r[1]:.2f} s"


def executor_binary(sc, binary, given):
    """What the tasks run (see `task_binary`): the driver's binary itself under a local master;
    on a cluster, `given` (--executor-dupfind) when set, else the driver's binary, shipped to
    every executor with the job (an executor fetches it once, before its first task)."""
    if given:
        return ("path", given)
    if sc.master.startswith("local"):
        return ("path", binary)
    sc.addFile(binary)
    return ("shipped", os.path.basename(binary))


def run_pipeline(opts, init_args, timings):
    """Runs the stages; returns the report's exit status."""
    binary, work = opts["dupfind"], opts["work"]
    shards, parts = opts["shards"], opts["parts"]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    # init walks the inputs while the JVM starts: both are on the driver and independent.
    start = time.monotonic()
    init = start_init(opts, init_args)
    spark = None
    try:
        spark = start_spark(opts["master"], parts, opts["conf"])
        jvm_seconds = time.monotonic() - start
        finish_init(init)
        timings.add("spark start + init", time.monotonic() - start,
                    f"JVM and SparkSession {jvm_seconds:.2f} s, stage init alongside")
        plan = json.loads(workfiles.read_bytes(work, "run.json"))

        sc = spark.sparkContext
        # The work-file contract, for the group step's tasks (and this driver).
        sc.addPyFile(WORKFILES)
        tasks_binary = executor_binary(sc, binary, opts["executor_dupfind"])
        index_at = index_dir(plan)

        timed(timings, "sign",
              lambda: run_in_tasks(sc, tasks_binary, "sign", work, "--shard", shards, index_at),
              task_note(shards, "shard tasks"))
        attach_on_driver(binary, work, plan, timings)
        timed(timings, "group (Spark SQL)",
              lambda: group_with_spark(spark, work, plan),
              lambda g: f"{g['buckets']} buckets into {parts} partitions; key files opened "
                        f"{g['opened']:.2f} s, shuffle + aggregate + writes {g['job']:.2f} s")
        timed(timings, "components (driver)",
              lambda: run_on_driver([binary, "stage", "components", "--work", work],
                                    "dupfind stage components"))
        timed(timings, "route",
              lambda: run_in_tasks(sc, tasks_binary, "route", work, "--shard", shards),
              task_note(shards, "shard tasks"))
        timed(timings, "verify",
              lambda: run_in_tasks(sc, tasks_binary, "verify", work, "--part", parts, index_at),
              task_note(parts, "partition tasks"))
        # With --write-dataset, each shard's part of the deduplicated dataset; else nothing.
        timed(timings, "dataset",
              lambda: run_in_tasks(sc, tasks_binary, "dataset", work, "--shard", shards),
              task_note(shards, "shard tasks"))
    finally:
        stop_init(init)
        if spark is not None:
            timed(timings, "spark stop", spark.stop)
    return run_report(binary, work, timings)


def start_init(opts, init_args):
    """Starts `dupfind stage init` (the driver starts its engine meanwhile)."""
    cmd = [opts["dupfind"], "stage", "init", "--work", opts["work"], "--shards",
           str(opts["shards"]), "--parts", str(opts["parts"]), *init_args]
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def finish_init(init):
    """Waits for `stage init`, its output forwarded to stderr; raises StageError when it failed."""
    out, err = init.communicate()
    sys.stderr.write(err.decode("utf-8", "replace"))
    sys.stderr.write(out.decode("utf-8", "replace"))
    if init.returncode != 0:
        raise StageError("dupfind stage init", init.returncode, err.decode("utf-8", "replace"))


def stop_init(init):
    """Ends a `stage init` still running (the engine failed to start)."""
    if init.poll() is None:
        init.kill()
        init.wait()


def run_report(binary, work, timings):
    """`dupfind stage report` on the driver, its stdout ours; returns its exit status."""
    sys.stdout.flush()
    start = time.monotonic()
    status = subprocess.run([binary, "stage", "report", "--work", work],
                            stdin=subprocess.DEVNULL, check=False).returncode
    timings.add("report (driver)", time.monotonic() - start)
    return status


def main(argv):
    """Runs the pipeline; the exit status is the report's (as `dupfind scan`'s)."""
    opts, init_args = parse_args(argv)
    return run_timed(run_pipeline, opts, init_args)


def run_timed(pipeline, opts, init_args, prog="dupfind_spark"):
    """Runs `pipeline(opts, init_args, timings)` and prints its timings (with --timings);
    returns its exit status, or a failed stage's."""
    timings = Timings(opts["timings"], prog)
    try:
        status = pipeline(opts, init_args, timings)
    except GroupError as e:
        timings.print()
        sys.stderr.write(f"{prog}: {e}\n")
        return 2
    except StageError as e:
        timings.print()
        sys.stderr.write(f"{prog}: {e}\n")
        # The stage's own exit status (2 for an error, as scan's), never a success.
        return e.status if e.status > 0 else 2
    timings.print()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
