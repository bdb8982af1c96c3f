#!/usr/bin/env python3
"""Samples a benchmark's memory every 2 ms and prints each phase's peak, split into
anonymous memory and mapped files (docs/benchmarks.md; used for the import bench's re-import
peaks measured 2026-11-28 at 16b8d5e, docs/decisions/2026-11-25-heap-arenas.md).

    python3 scripts/bench/rss_sampler.py .build/release/hp-bench import --records 1000000

The command's stdout is printed as it is; its stderr lines ("first_import: 31.6 s", printed
without --json) mark where its phases end. VmHWM counts mapped code too (about 34 MB here),
so compare RssAnon across builds.
"""
import subprocess
import sys
import threading
import time

FIELDS = ("VmRSS", "RssAnon", "RssFile", "VmHWM")


def read_status(pid):
    values = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in FIELDS:
                    values[key] = int(rest.split()[0]) // 1024
    except OSError:
        return None
    return values if len(values) == len(FIELDS) else None


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: rss_sampler.py COMMAND [ARGS...]")
    proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    start = time.time()
    marks, rows = [], []

    def read_marks():
        for line in proc.stderr:
            marks.append((time.time() - start, line.strip()))

    reader = threading.Thread(target=read_marks)
    reader.start()
    while proc.poll() is None:
        values = read_status(proc.pid)
        if values is None:
            break
        rows.append((time.time() - start, values))
        time.sleep(0.002)
    reader.join()
    print(proc.stdout.read(), end="")
    ends = [t for t, line in marks if ":" in line and not line.startswith("generated")]
    generated = [t for t, line in marks if line.startswith("generated")]
    bounds = [generated[0] if generated else 0.0] + ends
    for i in range(len(bounds) - 1):
        seg = [v for t, v in rows if bounds[i] <= t < bounds[i + 1]]
        if not seg:
            continue
        top = max(seg, key=lambda v: v["VmRSS"])
        print("phase %d: peak RSS %d MB (anon %d, files %d); max anon %d MB; VmHWM %d MB" % (
            i + 1, top["VmRSS"], top["RssAnon"], top["RssFile"],
            max(v["RssAnon"] for v in seg), max(v["VmHWM"] for v in seg)))
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
