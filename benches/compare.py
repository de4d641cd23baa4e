#!/usr/bin/env python3
# Interleaved A/B timing of whole commands: median wall time and median CPU time (user+sys),
# MB/s from the corpus size, ratios against the first command. On a shared, noisy machine the
# CPU time is the steadier figure.
#
#   benches/compare.py RUNS BYTES "label=command" ...
#   benches/compare.py 9 51803039 "old=old/dupfind scan -q -j1 DIR" "new=target/release/dupfind scan -q -j1 DIR"
import subprocess, sys, time, statistics, os, shlex
reps=int(sys.argv[1]); nbytes=int(sys.argv[2]); cmds=[a.split('=',1) for a in sys.argv[3:]]
res={l:[] for l,_ in cmds}; cpu={l:[] for l,_ in cmds}
for r in range(reps):
    for l,c in cmds:
        t=time.perf_counter()
        p=subprocess.Popen(shlex.split(c),stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)
        _,st,ru=os.wait4(p.pid,0); d=time.perf_counter()-t
        rc=os.waitstatus_to_exitcode(st)
        if rc not in (0,2): print("FAIL",l,rc); sys.exit(1)
        res[l].append(d); cpu[l].append(ru.ru_utime+ru.ru_stime)
base=None; basec=None
for l,_ in cmds:
    m=statistics.median(res[l]); c=statistics.median(cpu[l])
    if base is None: base=m; basec=c
    print(f"{l:16s} wall {m:.3f}s {nbytes/m/1e6:6.1f} MB/s x{base/m:.3f} (min {min(res[l]):.3f}) | cpu {c:.3f}s x{basec/c:.3f}")
