#!/usr/bin/env python3
"""A load soak: one cvhost with 8 inputs (the test pattern), the motion plugin, snapshots and clips
of its results, a NATS JetStream output with a spool (Debian's nats-server, started here on
loopback ports) and the live view, changed while it runs (an input added and removed, the
evidence listed, every few seconds), beside stress-ng (twice the cores busy), for MINUTES.
Prints cvhost's resident memory and open descriptors as it goes, then whether it crashed, the
lines it wrote (its file output) against the messages the stream stored (JetStream keeps one per
Nats-Msg-Id: a line lost is one missing), and what grew after the warm-up (the first tenth).

    swift build -c release && benchmarks/load_soak.py [--minutes 10] [--inputs 8] [--no-stress]
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from benchlib import free_port
from soak import open_files, rss_kb, status_field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CVHOST = os.environ.get("CVHOST", os.path.join(ROOT, ".build/release/cvhost"))


def request(port, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def lines_waiting(port):
    """Lines the outputs hold in memory now (their queues), from cvhost's /metrics."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return -1
    return int(sum(float(l.split()[-1]) for l in text.splitlines() if l.startswith("cvhost_output_lines_queued")))


def stream_messages(monitor):
    """Messages the JetStream server stores, from its monitoring endpoint (/jsz)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{monitor}/jsz", timeout=10) as r:
        return json.load(r).get("messages", 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--inputs", type=int, default=8)
    ap.add_argument("--change-every", type=float, default=5, help="seconds between run-time changes")
    ap.add_argument("--no-stress", action="store_true", help="without stress-ng beside it")
    ap.add_argument("--without", default="", help="parts left out, joined by +: snapshots, clips, nats, changes (to find what grows)")
    args = ap.parse_args()
    if not os.access(CVHOST, os.X_OK):
        sys.exit(f"load_soak: no {CVHOST}: swift build -c release (or CVHOST=path)")
    work = tempfile.mkdtemp(prefix="cvhost-load-soak-")
    os.chmod(work, 0o700)
    procs = []
    try:
        nats_port, monitor, http = free_port(), free_port(), free_port()
        nats = subprocess.Popen(["nats-server", "-js", "-a", "127.0.0.1", "-p", str(nats_port), "-m", str(monitor),
                                 "-sd", f"{work}/nats", "-l", f"{work}/nats.log"])
        procs.append(nats)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", nats_port), 1).close()
                break
            except OSError:
                time.sleep(0.1)
        if not args.no_stress:
            procs.append(subprocess.Popen(["stress-ng", "--cpu", str(2 * (os.cpu_count() or 2)), "--timeout", "0", "--quiet"]))
        lines = f"{work}/lines.jsonl"
        without = set(filter(None, args.without.split("+")))
        cmd = [CVHOST, "run", "--plugin", "motion:report=every", "--max-inputs", str(args.inputs + 4), "--output", f"file:{lines}",
               "--http", f"127.0.0.1:{http}", "--metrics-interval", "5"]
        if "nats" not in without:
            cmd += ["--output", f"nats://127.0.0.1:{nats_port}/cvhost?spool={work}/spool"]
        if "snapshots" not in without:
            cmd += ["--snapshots", f"{work}/snaps:on=result,max_gb=0.2"]
        if "clips" not in without:
            cmd += ["--clips", f"{work}/clips:on=result,pre=1,post=2,max=20,max_gb=0.5"]
        for i in range(args.inputs):
            cmd += ["--input", f"cam{i}=testsrc:160x120@10"]
        run = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(f"{work}/stderr", "w"))
        procs.append(run)
        start = time.time()
        end = start + args.minutes * 60
        samples, changes, refused = [], 0, 0
        added = False
        next_change = start + args.change_every
        while time.time() < end and run.poll() is None:
            time.sleep(1)
            now = time.time()
            if now >= next_change and "changes" not in without:
                next_change = now + args.change_every
                if added:
                    refused += request(http, "DELETE", "/inputs/extra") != 200
                else:
                    refused += request(http, "POST", "/inputs", {"name": "extra", "input": "testsrc:160x120@10"}) != 201
                added = not added
                request(http, "GET", "/clips")
                request(http, "GET", "/snapshots")
                changes += 1
            if int(now - start) % 10 == 0:
                s = (now - start, rss_kb(run.pid), open_files(run.pid), status_field(run.pid, "Threads:"), lines_waiting(http))
                samples.append(s)
                print(f"load_soak: {s[0]:5.0f} s  RSS {s[1] / 1024:6.1f} MB  descriptors {s[2]}  threads {s[3]}  "
                      f"lines waiting in memory {s[4]}", flush=True)
        crashed = run.poll()
        if crashed is None:
            run.send_signal(signal.SIGTERM)
            code = run.wait(timeout=120)
        else:
            code = crashed
        time.sleep(2)
        written = 0
        with open(lines) as f:
            for line in f:
                if '"event":"output.' not in line:
                    written += 1
        stored = stream_messages(monitor) if "nats" not in without else written
        # The warm-up: a fifth of the run, at least two minutes (each raw input's H.264 encoder for
        # its clips and the allocator's arenas reach their size in the first minute or two).
        warm = [s for s in samples if s[0] >= max(args.minutes * 12, min(120, args.minutes * 30))]
        print(f"load_soak: {args.inputs} inputs, {args.minutes:g} min{'' if args.no_stress else ' beside stress-ng'}: "
              f"exit {code}{' (crashed while running)' if crashed is not None else ''}; {changes} changes ({refused} refused)")
        print(f"load_soak: lines written {written}, stored by JetStream {stored}, lost {max(0, written - stored)}")
        if warm:
            first, last = warm[0], warm[-1]
            # The trend of RSS after the warm-up (least squares, MB a minute): the extra input added and
            # removed every change moves it up and down by its encoder; a leak is a slope.
            n = len(warm)
            mt = sum(s[0] for s in warm) / n
            mr = sum(s[1] for s in warm) / n
            den = sum((s[0] - mt) ** 2 for s in warm) or 1
            slope = sum((s[0] - mt) * (s[1] - mr) for s in warm) / den * 60 / 1024
            print(f"load_soak: after the warm-up ({warm[0][0]:.0f} s on) RSS {first[1] / 1024:.1f} -> {last[1] / 1024:.1f} MB "
                  f"(between {min(s[1] for s in warm) / 1024:.1f} and {max(s[1] for s in warm) / 1024:.1f}; trend {slope:+.2f} MB a minute), "
                  f"descriptors {first[2]} -> {last[2]} (at most {max(s[2] for s in warm)}), threads {first[3]} -> {last[3]}")
        errors = [l for l in open(f"{work}/stderr") if "error" in l or "fatal" in l.lower()]
        print(f"load_soak: {len(errors)} error lines on stderr" + (f", the first: {errors[0].strip()}" if errors else ""))
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
