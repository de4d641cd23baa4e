"""The staged pipeline's work-file contract for engines written in Python (contrib/duckdb,
contrib/spark), as src/stages/lineage.rs defines it (docs/staged.md, "Lineage"):

- every Parquet file carries, in its footer's key-value metadata, `dupfind.run` (the run) and
  `dupfind.lineage` (JSON: run, stage, shard and/or part, attempt, digest);
- every summary is JSON with a `lineage` object (the same fields, plus `files`: each Parquet
  file it wrote and its CRC-32, and `consumed`: each summary it read and that summary's
  attempt), sealed by a last field `"seal": "xxxxxxxx"`, the CRC-32 (zlib's) of every byte
  before it.

A consumer checks each summary's seal, run, digest and place, and each Parquet file's tag and
CRC-32 against its producer's summary, so that a misplaced, stale or damaged file is an error
naming it. Only the standard library and pyarrow are used.

A work directory is a local path or a URL (`s3://bucket/prefix`, `gs://…`: whatever pyarrow's
`FileSystem.from_uri` opens, with the credentials, region and endpoint of the standard
environment, `AWS_ENDPOINT_URL` included). Files are named by their work-relative name (`rel`);
`location` is what a message shows. An object store has no rename, so a file written there is
sent whole from a local temporary file and appears only once complete (one PUT, or a multipart
upload that its completion makes visible), as the binary writes its own (docs/object-stores.md).
"""

import contextlib
import json
import os
import shutil
import tempfile
import uuid
import zlib

# Bytes read at a time when a file is streamed (CRC-32, a copy from an object store).
CHUNK = 1 << 20


class WorkFileError(Exception):
    """A work file that is missing, damaged, of another run or place, or stale."""


def fresh_attempt():
    """A new attempt id: 16 hex digits, as the binary makes them."""
    return uuid.uuid4().hex[:16]


def seal(obj):
    """`obj` as the bytes of a sealed summary (indented JSON whose last field is the seal)."""
    text = json.dumps(obj, indent=2)
    assert text.endswith("\n}"), "a summary is a JSON object"
    prefix = (text[:-2] + ",\n  ").encode("utf-8")
    return prefix + b'"seal": "%08x"\n}\n' % zlib.crc32(prefix)


def check_seal(data):
    """None when `data` (a summary's bytes) is sealed and intact, else why not."""
    key = b'"seal": "'
    at = data.rfind(key)
    if at < 0:
        return "it is not sealed"
    hexdigits, rest = data[at + len(key):at + len(key) + 8], data[at + len(key) + 8:]
    if rest not in (b'"\n}\n', b'"}\n'):
        return "its seal is not its last field"
    try:
        want = int(hexdigits, 16)
    except ValueError:
        return "its seal does not match its contents"
    if want != zlib.crc32(data[:at]):
        return "its seal does not match its contents"
    return None


def place_text(stage, shard=None, part=None):
    """'stage sign, shard 0, partition 1', as the binary names a place."""
    text = f"stage {stage}"
    if shard is not None:
        text += f", shard {shard}"
    if part is not None:
        text += f", partition {part}"
    return text


def check_place(path, found, run, place, misplaced):
    """Refuses a lineage or tag (`found`) of another run than `run`, or of another place than
    `place` (stage, shard, part); `misplaced` words the second, given the two places."""
    if found.get("run") != run:
        raise WorkFileError(f"{path} belongs to another run (run {found.get('run')}; this work "
                            f"directory's run is {run}): run that stage again")
    at = (found.get("stage"), found.get("shard"), found.get("part"))
    if at != place:
        raise WorkFileError(f"{path} " + misplaced.format(place_text(*at), place_text(*place)))


def is_url(work):
    """Whether `work` is on an object store (a URL other than file://)."""
    return "://" in work and not work.startswith("file://")


def local_work(work):
    """A local work directory's absolute path (a file:// URL's path), or the URL itself."""
    if work.startswith("file://"):
        work = work[len("file://"):]
    return work if is_url(work) else os.path.abspath(work)


def location(work, rel):
    """The path or URL of the work file `rel`, as messages name it."""
    return work.rstrip("/") + "/" + rel if is_url(work) else os.path.join(work, rel)


_STORES = {}


def store(work, rel):
    """(pyarrow file system, the path in it) of the work file `rel` of a work directory URL."""
    if work not in _STORES:
        from pyarrow import fs

        _STORES[work] = fs.FileSystem.from_uri(work.rstrip("/"))
    filesystem, root = _STORES[work]
    return filesystem, root + "/" + rel


def read_bytes(work, rel):
    """The whole work file `rel`; FileNotFoundError when there is none."""
    if not is_url(work):
        with open(os.path.join(work, rel), "rb") as f:
            return f.read()
    filesystem, path = store(work, rel)
    with filesystem.open_input_stream(path) as f:
        return f.read()


def parquet_metadata(work, rel):
    """The footer of the Parquet work file `rel` (on a store: range requests, not the file)."""
    import pyarrow.parquet as pq

    if not is_url(work):
        return pq.read_metadata(os.path.join(work, rel))
    filesystem, path = store(work, rel)
    with filesystem.open_input_file(path) as f:
        return pq.read_metadata(f)


def _copy_with_crc(source, sink):
    """Copies a stream to another (or nowhere, when `sink` is None); returns the CRC-32."""
    crc = 0
    while True:
        chunk = source.read(CHUNK)
        if not chunk:
            return "%08x" % crc
        crc = zlib.crc32(chunk, crc)
        if sink is not None:
            sink.write(chunk)


@contextlib.contextmanager
def fetched(work, rel):
    """Yields (a local path of the work file `rel`, its CRC-32): the file itself in a local
    directory; from a store, a copy in TMPDIR made in one streamed GET, removed afterwards."""
    if not is_url(work):
        path = os.path.join(work, rel)
        yield path, crc32_file(path)
        return
    filesystem, path = store(work, rel)
    fd, temp = tempfile.mkstemp(prefix=".dupfind-fetch-", suffix=os.path.basename(rel))
    try:
        with os.fdopen(fd, "wb") as sink, filesystem.open_input_stream(path) as source:
            crc = _copy_with_crc(source, sink)
        yield temp, crc
    finally:
        os.unlink(temp)


def temp_for(work, rel):
    """A fresh local file to write what becomes the work file `rel`: beside it in a local work
    directory (dot-prefixed: the stages skip it; the directory made when missing), in TMPDIR
    when the work directory is on a store."""
    if is_url(work):
        fd, temp = tempfile.mkstemp(prefix=".dupfind-put-")
        os.close(fd)
        return temp
    path = os.path.join(work, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return os.path.join(os.path.dirname(path), f".dupfind-{uuid.uuid4().hex}.tmp")


def commit(work, rel, temp):
    """Makes the complete local file `temp` (from `temp_for`) the work file `rel`. Locally:
    fsync, rename over any older file, fsync the directory. On a store: one upload, visible
    only once whole (an interrupted one leaves no object); the temporary file is removed."""
    if is_url(work):
        filesystem, path = store(work, rel)
        # A failure midway may still complete the upload (pyarrow closes, not aborts, a stream
        # dropped on an error): a reader trusts a file only through the summary written after
        # it, by its CRC-32, and a summary through its seal.
        try:
            with open(temp, "rb") as source, filesystem.open_output_stream(path) as sink:
                shutil.copyfileobj(source, sink, CHUNK)
        finally:
            os.unlink(temp)
        return
    path = os.path.join(work, rel)
    with open(temp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(temp, path)
    fd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes(work, rel, data):
    """Writes the work file `rel` whole, as `commit` makes it visible."""
    temp = temp_for(work, rel)
    try:
        with open(temp, "wb") as f:
            f.write(data)
        commit(work, rel, temp)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def read_summary(work, rel, plan, stage, shard=None, part=None, missing=""):
    """The summary `rel` (work-relative), checked: sealed, of this run, made with run.json's
    options, and written for its place."""
    path = location(work, rel)
    try:
        data = read_bytes(work, rel)
    except FileNotFoundError:
        raise WorkFileError(f"{path} is missing: {missing}") from None
    why = check_seal(data)
    if why:
        raise WorkFileError(f"{path} is damaged ({why}: not the summary a stage wrote)")
    summary = json.loads(data)
    lineage = summary.get("lineage") or {}
    check_place(path, lineage, plan["run"], (stage, shard, part),
                "was written by {}, not {}: it is in another task's place")
    if lineage.get("digest") != plan["digest"]:
        raise WorkFileError(f"{path} was made with other options than run.json's")
    return summary


def crc32_file(path):
    """The CRC-32 (zlib's) of the whole local file at `path`, as 8 hex digits."""
    with open(path, "rb") as f:
        return _copy_with_crc(f, None)


def check_parquet(work, rel, producer, stage, shard=None, part=None):
    """Checks the Parquet file `rel` against its producer's summary: its tag (run, place,
    attempt, digest) and its CRC-32."""
    check_tag(work, rel, producer, stage, shard, part)
    with fetched(work, rel) as (_, crc):
        check_crc(work, rel, producer["lineage"]["files"][rel], crc)


def check_tag(work, rel, producer, stage, shard=None, part=None):
    """Checks the tag in the Parquet file `rel`'s footer against its producer's summary (run,
    place, attempt, digest) and that the summary lists the file; returns the footer."""
    path = location(work, rel)
    lineage = producer["lineage"]
    try:
        footer = parquet_metadata(work, rel)
        meta = footer.metadata or {}
    except FileNotFoundError:
        raise WorkFileError(f"{path} is missing: its stage did not complete") from None
    except Exception as e:  # pyarrow raises several kinds for a damaged footer
        raise WorkFileError(f"{path} is damaged or truncated ({e})") from None
    raw = meta.get(b"dupfind.lineage")
    if raw is None:
        raise WorkFileError(f"{path} was not written by a dupfind stage (it has no lineage)")
    tag = json.loads(raw)
    check_place(path, tag, lineage["run"], (stage, shard, part),
                "was written for {}, not {}: it is misplaced")
    if tag.get("attempt") != lineage["attempt"] or tag.get("digest") != lineage["digest"]:
        raise WorkFileError(f"{path} was written by another attempt of its stage than the one "
                            "whose summary is in place: run that stage again")
    if rel not in lineage.get("files", {}):
        raise WorkFileError(f"{path} is not among the files its stage's summary lists")
    return footer


def check_crc(work, rel, want, got):
    """Checks the CRC-32 `got` of the work file `rel` against `want`, its producer's record."""
    if got != want:
        raise WorkFileError(f"{location(work, rel)} is damaged: its CRC-32 is {got}, its stage "
                            f"recorded {want}")


def tag(plan, attempt, stage, shard=None, part=None):
    """The key-value metadata of a Parquet file a Python engine writes for `stage`."""
    lineage = {"run": plan["run"], "stage": stage}
    if shard is not None:
        lineage["shard"] = shard
    if part is not None:
        lineage["part"] = part
    lineage.update({"attempt": attempt, "digest": plan["digest"]})
    return {"dupfind.run": plan["run"], "dupfind.lineage": json.dumps(lineage)}


def lineage(plan, attempt, stage, files, consumed, shard=None, part=None):
    """A summary's `lineage` object."""
    out = json.loads(tag(plan, attempt, stage, shard, part)["dupfind.lineage"])
    out["files"] = dict(sorted(files.items()))
    out["consumed"] = dict(sorted(consumed.items()))
    return out


def signed_shards(work, plan):
    """Every shard's sign summary, checked; raises naming the first that is missing."""
    shards = plan["shards"]
    out = []
    for shard in range(shards):
        rel = f"sign/shard-{shard:06d}.json"
        out.append(read_summary(work, rel, plan, "sign", shard=shard, missing=(
            f"shard {shard} has not been signed (run `dupfind stage sign --shard "
            f"{shard}/{shards}`)")))
    return out


def key_file(shard, part):
    """The work-relative name of shard `shard`'s key file of partition `part`."""
    return f"sign/shard-{shard:06d}.keys-{part:06d}.parquet"


def attached(work, plan):
    """In a run --against an index, `stage attach`'s summary, checked (its keys are one more
    shard's for the group step); None in a run without one."""
    if not plan.get("against"):
        return None
    return read_summary(work, "attach/summary.json", plan, "attach", missing=(
        "the indexed documents have not been attached (run `dupfind stage attach`)"))


def attach_key_file(part):
    """The work-relative name of `stage attach`'s key file of partition `part`."""
    return f"attach/keys-{part:06d}.parquet"


def check_keys(work, plan, signed, part, crc=True, attached=None):
    """Checks partition `part`'s key files of every shard (and attach's, given its summary in a
    run --against an index) against their producers' summaries; returns the `consumed` map of a
    group summary and the key rows of the files. Without `crc`, only their footers are read
    (whoever reads the files then checks their CRC-32s)."""
    sources = [(key_file(shard, part), summary, {"shard": shard}, f"sign/shard-{shard:06d}.json")
               for shard, summary in enumerate(signed)]
    if attached is not None:
        sources.append((attach_key_file(part), attached, {}, "attach/summary.json"))
    consumed, rows = {}, 0
    for rel, summary, at, name in sources:
        stage = summary["lineage"]["stage"]
        rows += check_tag(work, rel, summary, stage, part=part, **at).num_rows
        if crc:
            with fetched(work, rel) as (_, got):
                check_crc(work, rel, summary["lineage"]["files"][rel], got)
        consumed[name] = summary["lineage"]["attempt"]
    return consumed, rows


def group_summary(plan, attempt, part, keys, buckets, largest, crc, consumed):
    """The sealed bytes of `group/part-J.json`."""
    rel = f"group/part-{part:06d}.parquet"
    return seal({
        "lineage": lineage(plan, attempt, "group", {rel: crc}, consumed, part=part),
        "part": part,
        "keys": keys,
        "buckets": buckets,
        "largest": largest,
    })
