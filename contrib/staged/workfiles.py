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
"""

import json
import os
import uuid
import zlib


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


def read_summary(work, rel, plan, stage, shard=None, part=None, missing=""):
    """The summary `rel` (work-relative), checked: sealed, of this run, made with run.json's
    options, and written for its place."""
    path = os.path.join(work, rel)
    try:
        with open(path, "rb") as f:
            data = f.read()
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
    """The CRC-32 (zlib's) of the whole file at `path`, as 8 hex digits."""
    crc = 0
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                return "%08x" % crc
            crc = zlib.crc32(chunk, crc)


def check_parquet(work, rel, producer, stage, shard=None, part=None):
    """Checks the Parquet file `rel` against its producer's summary: its tag (run, place,
    attempt, digest) and its CRC-32."""
    import pyarrow.parquet as pq

    path = os.path.join(work, rel)
    lineage = producer["lineage"]
    try:
        meta = pq.read_metadata(path).metadata or {}
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
    want = lineage.get("files", {}).get(rel)
    if want is None:
        raise WorkFileError(f"{path} is not among the files its stage's summary lists")
    got = crc32_file(path)
    if got != want:
        raise WorkFileError(f"{path} is damaged: its CRC-32 is {got}, its stage recorded {want}")


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


def check_keys(work, plan, signed, part):
    """Checks partition `part`'s key files of every shard against the shards' summaries;
    returns the `consumed` map of a group summary."""
    consumed = {}
    for shard, summary in enumerate(signed):
        rel = f"sign/shard-{shard:06d}.keys-{part:06d}.parquet"
        check_parquet(work, rel, summary, "sign", shard=shard, part=part)
        consumed[f"sign/shard-{shard:06d}.json"] = summary["lineage"]["attempt"]
    return consumed


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
