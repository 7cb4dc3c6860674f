#!/usr/bin/env python3
"""A soak run: N frames (default one million) through plugins in cvhost's process, in a worker
process and with instances=2 (and the Swift motion plugin), with /metrics scraped all along.
Prints, as it goes, cvhost's resident memory and open files (and its workers'), then the frames
each plugin processed and what grew after the warm-up. A leak shows as growth that keeps on;
the warm-up (the first 10% of the frames) is when caches and pools fill.

    swift build -c release && benchmarks/soak.py [--frames 1000000] [--size 160x120] [--scrape 0.5]
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CVHOST = os.environ.get("CVHOST", os.path.join(ROOT, ".build/release/cvhost"))
PLUGINS = ["null:results=1", "null:results=1,isolation=process", "null:results=1,instances=2", "motion:report=every"]


def family(pid):
    """pid and its children (the workers, started by any of its threads), recursively."""
    pids = [pid]
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for child in f.read().split():
                    pids += family(int(child))
        except OSError:
            pass
    return pids


def status_field(pid, key):
    """A number of /proc/PID/status (`VmRSS:` in KiB, `Threads:`), 0 when the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kb(pid):
    return status_field(pid, "VmRSS:")


def open_files(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--size", default="160x120")
    ap.add_argument("--scrape", type=float, default=0.5, help="seconds between /metrics scrapes")
    ap.add_argument("--every", type=float, default=10, help="seconds between the lines printed")
    args = ap.parse_args()
    if not os.access(CVHOST, os.X_OK):
        sys.exit(f"no cvhost at {CVHOST}: run swift build -c release first (or set CVHOST)")

    cmd = [CVHOST, "run", "--input", f"testsrc:{args.size}:unpaced", "--max-frames", str(args.frames),
           "--backpressure", "block", "--http", "127.0.0.1:0", "--metrics-interval", "0", "--no-stdin-commands"]
    for p in PLUGINS:
        cmd += ["--plugin", p]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = json.loads(proc.stdout.readline())
    url = started["http"].rstrip("/") + "/metrics"
    lines = {"result": 0, "other": 0}
    final = []

    def read():
        for line in proc.stdout:
            if '"event":"result"' in line:
                lines["result"] += 1
            else:
                lines["other"] += 1
                if '"final":true' in line:
                    final.append(json.loads(line))
                # With --http, cvhost serves on after its input ends, until a signal.
                if '"event":"session.stopped"' in line:
                    stop.set()
                    proc.send_signal(signal.SIGTERM)

    scrapes = {"ok": 0, "failed": 0}
    stop = threading.Event()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def scrape():
        while not stop.wait(args.scrape):
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    r.read()
                scrapes["ok"] += 1
            except OSError:
                scrapes["failed"] += 1

    scraper = threading.Thread(target=scrape, daemon=True)
    scraper.start()

    print(f"soak: {args.frames} frames of testsrc {args.size}, unpaced, block back-pressure; plugins {', '.join(PLUGINS)}; "
          f"/metrics every {args.scrape} s")
    print(f"{'s':>6} {'results':>9} {'cvhost RSS MB':>14} {'workers RSS MB':>15} {'open files':>11} {'processes':>10}")
    samples = []
    begin = time.monotonic()
    next_print = 0.0
    while proc.poll() is None:
        pids = family(proc.pid)
        sample = (time.monotonic() - begin, lines["result"], rss_kb(proc.pid) / 1024,
                  sum(rss_kb(p) for p in pids[1:]) / 1024, sum(open_files(p) for p in pids), len(pids))
        samples.append(sample)
        if sample[0] >= next_print:
            print(f"{sample[0]:6.0f} {sample[1]:9d} {sample[2]:14.1f} {sample[3]:15.1f} {sample[4]:11d} {sample[5]:10d}", flush=True)
            next_print += args.every
        time.sleep(0.5)
    stop.set()
    reader.join(timeout=10)
    err = proc.stderr.read()
    wall = time.monotonic() - begin
    if proc.returncode != 0:
        sys.exit(f"cvhost exited {proc.returncode}: {err.strip()[-500:]}")

    print(f"\ndone in {wall:.0f} s ({args.frames / wall:.0f} frames/s); {scrapes['ok']} scrapes of /metrics, {scrapes['failed']} failed")
    for m in final:
        frames = m.get("frames", {})
        print(f"  plugin {m.get('plugin_index')} {m.get('plugin')}: offered {frames.get('offered')}, processed {frames.get('processed')}, "
              f"dropped {frames.get('dropped_total')}")
    warm = [s for s in samples if s[1] >= 0.1 * lines["result"]]
    if len(warm) >= 2:
        first, last = warm[0], warm[-1]
        rss = [s[2] for s in warm]
        print(f"after the warm-up (from {first[0]:.0f} s to {last[0]:.0f} s): cvhost RSS {first[2]:.1f} -> {last[2]:.1f} MB "
              f"({last[2] - first[2]:+.1f}; between {min(rss):.1f} and {max(rss):.1f} all along), workers {first[3]:.1f} -> "
              f"{last[3]:.1f} MB ({last[3] - first[3]:+.1f}), open files {first[4]} -> {last[4]} ({last[4] - first[4]:+d}; "
              f"at most {max(s[4] for s in warm)})")


if __name__ == "__main__":
    main()
