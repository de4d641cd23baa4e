"""contrib/spark/dupfind_spark.py on a Spark standalone cluster with no shared file system: a
master and two workers on loopback (contrib/spark/local-cluster.sh), each worker with its own
directories, the inputs and the work directory on S3 (moto in server mode on a free port). The
report, stderr and exit status are `scan`'s of the same objects.

The driver gets only URLs and the binary's path: the executors run the copy of the binary it
ships to them (found in each worker's own directory afterwards), and read and write the work
files on S3 themselves. Skipped only when there is no Java (.ci/python-tests installs it).
"""

import glob
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from conftest import ROOT

DRIVER = os.path.join(ROOT, "contrib", "spark", "dupfind_spark.py")
CLUSTER = os.path.join(ROOT, "contrib", "spark", "local-cluster.sh")
BUCKET = "dupfind-spark"


def free_port():
    """A port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3_env():
    """moto on a free port, an empty bucket, and the environment that names them (the fake
    credentials moto takes); moto is stopped afterwards."""
    port = free_port()
    moto = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert moto.poll() is None, "moto exited at start"
                assert time.monotonic() < deadline, "moto did not start within 60 s"
                time.sleep(0.1)
        env = dict(os.environ, AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
                   AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
                   AWS_REGION="us-east-1")
        import boto3

        boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1",
                     aws_access_key_id="test",
                     aws_secret_access_key="test").create_bucket(Bucket=BUCKET)
        yield env
    finally:
        moto.kill()
        moto.wait()


def s3_store(env):
    """pyarrow's file system of moto's S3 (this process's environment does not name it)."""
    from pyarrow import fs

    return fs.S3FileSystem(endpoint_override=env["AWS_ENDPOINT_URL"], access_key="test",
                           secret_key="test", region="us-east-1")


@pytest.fixture(scope="module")
def corpus_url(s3_env, docs):
    """The generated corpus, copied to s3://BUCKET/corpus/."""
    from pyarrow import fs

    store = s3_store(s3_env)
    # One file at a time: pyarrow 18's threaded copy of a directory to S3 can hang.
    fs.copy_files(docs, f"{BUCKET}/corpus", source_filesystem=fs.LocalFileSystem(),
                  destination_filesystem=store, use_threads=False)
    return f"s3://{BUCKET}/corpus/"


@pytest.fixture(scope="module")
def cluster(s3_env, tmp_path_factory):
    """The two-worker cluster, started with the S3 environment (the executors inherit it, as
    on a cluster whose machines have the bucket's role); stopped afterwards, even on failure.
    Yields (master URL, the cluster's directory)."""
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: Spark needs Java 17 (Debian: openjdk-17-jre-headless, "
                    "which .ci/python-tests installs)")
    home = tmp_path_factory.mktemp("cluster")
    env = dict(s3_env, DUPFIND_SPARK_CLUSTER=str(home / "spark"), PYTHON=sys.executable,
               SPARK_MASTER_PORT=str(free_port()))
    try:
        proc = subprocess.run([CLUSTER, "start"], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, check=False)
        assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
        yield proc.stdout.decode().strip(), home / "spark"
    finally:
        proc = subprocess.run([CLUSTER, "stop"], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, check=False)
        assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
        assert not (home / "spark").exists(), "stop leaves nothing behind"


def run(cmd, env):
    """(exit status, stdout, stderr) of `cmd`."""
    proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          check=False)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("options,shards,parts", [
    ([], 3, 2),
    (["--pairs", "--cluster", "components", "--exit-code"], 2, 3),
])
def test_cluster_report_on_s3_is_scans(dupfind, s3_env, corpus_url, cluster, options, shards,
                                       parts):
    """Inputs and work on S3, executors without the binary: scan's stdout, stderr, status."""
    master, home = cluster
    work = f"s3://{BUCKET}/work-{shards}-{parts}"
    # Every executor registers before the first job, so that each runs tasks (and fetches the
    # binary): a one-core executor per worker.
    got = run([sys.executable, DRIVER, "--master", master, "--dupfind", dupfind,
               "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0",
               "--work", work, "--shards", str(shards), "--parts", str(parts),
               *options, corpus_url], s3_env)
    want = run([dupfind, "scan", *options, corpus_url], s3_env)
    assert b'"path": "s3://' in want[1], "scan shows the documents' URLs"
    assert got[1] == want[1], "the Spark driver's report differs from scan's:\n" + got[2].decode()
    assert got[2] == want[2]
    assert got[0] == want[0]

    # The executors ran the driver's binary from their own directories: shipped to each worker.
    name = os.path.basename(dupfind)
    for worker in ("worker-1", "worker-2"):
        shipped = glob.glob(str(home / worker / "work" / "app-*" / "*" / name))
        assert shipped, f"{worker}'s executor holds no shipped {name}"
        assert all(os.access(p, os.X_OK) for p in shipped)
    # Every stage wrote its files to the bucket (the group files by the Python tasks).
    from pyarrow import fs

    store, root = s3_store(s3_env), work[len("s3://"):]
    names = {i.path[len(root) + 1:] for i in store.get_file_info(fs.FileSelector(root,
                                                                                 recursive=True))}
    assert {"run.json", "components/summary.json"} <= names
    for j in range(parts):
        assert {f"group/part-{j:06d}.parquet", f"group/part-{j:06d}.json",
                f"verify/part-{j:06d}.json"} <= names
    assert not [n for n in names if "dupfind-" in os.path.basename(n)], "no temporary objects"
