#!/usr/bin/env python3
# Speed against a reference build, the table of issue 26: two builds run interleaved (round by
# round, every command once a round) at -j1 and -j2, with their defaults and with --shingle
# char, on each corpus given. Prints per command the median CPU time (user+sys) with its
# quartiles, the median wall time and the median peak RSS (and the largest, which an arena or a
# transparent huge page can push up in one run), then the ratios of medians: the new
# build's speed as a multiple of the reference's (CPU and wall; above 1 is faster), and each
# build's -j2 speed-up over its -j1 (wall). NEW may list several builds, comma-separated (a
# build before a change and after it), all run in the same rounds.
#
#   benches/speed.py REF NEW[,NEW...] RUNS DIR...
#   benches/speed.py /work/target-base/release/dupfind target/release/dupfind 15 \
#       target/bench/corpus-10000 target/bench/real
#
# On a shared, noisy machine the CPU time is the steadier figure; the wall time of -j2 needs a
# quiet one. Peak RSS is ru_maxrss: with the binary's pages (file-backed) counted. A fault in
# the binary maps the whole (large) folio of the page cache that holds the page (Linux 6.18 on
# ext4), so how many pages are counted depends on how the file came into the cache: the same
# binary written by the linker and by cp peaked at 55.0 and 57.7 MB on the 10k corpus. Each
# build's pages are dropped from the cache first, so every build is loaded as exec reads it.
#
# STEPS="punct digits accents nfkc nfkc,accents,digits,punct" adds a row for each --normalize
# STEPS, run by the new builds only (the reference may not have the option), and its cost as
# a ratio to the same build's defaults in the same rounds.
import os, shlex, statistics, subprocess, sys, time

if len(sys.argv) < 5:
    sys.exit("usage: speed.py REF NEW[,NEW...] RUNS DIR...")
ref, runs, dirs = sys.argv[1], int(sys.argv[3]), sys.argv[4:]
news = sys.argv[2].split(",")
builds = [("ref", ref)] + [(f"new{i + 1}" if len(news) > 1 else "new", n) for i, n in enumerate(news)]
for _, binary in builds:
    fd = os.open(binary, os.O_RDONLY)
    os.fsync(fd)  # dirty pages (a binary just copied) are not dropped
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def run(cmd):
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 2):
        sys.exit(f"speed.py: {shlex.join(cmd)} exited with {code}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def quartiles(xs):
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return q[0], q[2]


for d in dirs:
    size = sum(
        os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs
    )
    print(f"\n{d}: {size / 1e6:.1f} MB, {runs} interleaved runs")
    flavours = [("defaults", []), ("--shingle char", ["--shingle", "char"])]
    steps = [(f"--normalize {x}", ["--normalize", x]) for x in os.environ.get("STEPS", "").split()]
    cmds = {}
    for fname, extra in flavours + steps:
        for j in (1, 2):
            for bname, binary in builds:
                if bname != "ref" or (fname, extra) in flavours:
                    cmds[(fname, j, bname)] = [binary, "scan", "-q", f"-j{j}", *extra, d]
    got = {k: [] for k in cmds}
    for _ in range(runs):
        for k, c in cmds.items():
            got[k].append(run(c))
    med = {}
    for bname, binary in builds:
        print(f"  {bname}: {binary}")
    print(f"{'':16s} {'':4s} {'build':5s} {'cpu s (q1-q3)':>22s} {'wall s':>7s} {'peak RSS (max)':>16s}")
    for k, rows in got.items():
        wall, cpu, rss = zip(*rows)
        med[k] = (statistics.median(wall), statistics.median(cpu))
        lo, hi = quartiles(cpu)
        print(
            f"{k[0]:16s} -j{k[1]:<2d} {k[2]:5s} {med[k][1]:8.3f} ({lo:.3f}-{hi:.3f})"
            f" {med[k][0]:7.3f} {statistics.median(rss) / 1024:7.1f} MB ({max(rss) / 1024:.1f})"
        )
    for fname, _ in flavours:
        for j in (1, 2):
            for b, _ in builds[1:]:
                (rw, rc), (nw, nc) = med[(fname, j, "ref")], med[(fname, j, b)]
                print(f"{fname:16s} -j{j}: {b}/ref speed cpu x{rc / nc:.3f}  wall x{rw / nw:.3f}")
        for b, _ in builds:
            print(
                f"{fname:16s} {b} -j2 speed-up over -j1 (wall): "
                f"x{med[(fname, 1, b)][0] / med[(fname, 2, b)][0]:.3f}"
            )
    for fname, _ in steps:
        for j in (1, 2):
            for b, _ in builds[1:]:
                (dw, dc), (sw, sc) = med[("defaults", j, b)], med[(fname, j, b)]
                print(f"{fname:16s} -j{j}: {b} time / its defaults cpu x{sc / dc:.3f}  wall x{sw / dw:.3f}")
