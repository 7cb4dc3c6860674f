#!/usr/bin/python3
"""Where a live frame's time goes, stage by stage, from cvhost's own stamps (CVHOST_FRAME_TRACE=1:
one per frame and stage, on CLOCK_MONOTONIC) and this script's, on the same clock:

  v4l2:       a V4L2 camera (the kernel's vivid driver, in the VM of scripts/vivid-run.sh, under
              software emulation: its figures are the emulated machine's, slower than a real one's;
              the split between stages is what they show). The null plugin, one result a frame:
              the driver's timestamp -> cvhost took the buffer -> offered to the plugin (conversion)
              -> the plugin's process() -> its result line read by this script.
  live view:  the --http live view's MJPEG on this machine: a live test pattern, the preview at the
              source's rate; a viewer (this script, on a socket, as a browser's network side)
              stamps the first byte of each picture: the frame made -> offered -> the live view's
              thread took it -> JPEG written to the viewers -> the viewer's first byte.

Printed: the median and p99 of each step over the frames measured (after a warm-up).

    benchmarks/live_stages.py [--seconds 10] [--only v4l2|live-view]
    (v4l2 runs itself again inside the VM: scripts/vivid-run.sh, which needs root)
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

from benchlib import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CVHOST = os.path.join(ROOT, ".build", "release", "cvhost")

V4L2 = ["captured", "dequeued", "offered", "process_start", "process_end", "@line"]
V4L2_NAMES = ["driver timestamp -> buffer taken (DQBUF)", "buffer -> offered (conversion, hand-off)", "offered -> plugin's process()",
              "process() (the null plugin)", "result -> line read here (order, output, pipe)"]
VIEW = ["captured", "offered", "preview_start", "preview_sent", "@byte"]
VIEW_NAMES = ["frame made -> offered", "offered -> live view's thread", "JPEG encoding -> written to viewers",
              "written -> viewer's first byte (event loop, socket)"]


def trace_marks(lines):
    """pts µs -> stage -> monotonic ns, from cvhost's trace lines."""
    marks = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 4 and parts[0] == "trace":
            marks.setdefault(round(int(parts[1]) / 1000), {}).setdefault(parts[2], int(parts[3]))
    return marks


def steps(marks, stages, names, since_ns):
    per = [[] for _ in names]
    for m in marks.values():
        if all(s in m for s in stages) and m[stages[0]] >= since_ns:
            for i in range(len(names)):
                per[i].append((m[stages[i + 1]] - m[stages[i]]) / 1e6)
    return per


def report(title, names, per):
    n = min(len(v) for v in per)
    print(f"{title} ({n} frames)")
    total50 = 0
    for name, v in zip(names, per):
        p50 = statistics.median(v) if v else float("nan")
        p99 = statistics.quantiles(v, n=100)[98] if len(v) >= 100 else max(v, default=float("nan"))
        total50 += p50
        print(f"  {name:<52} p50 {p50:>8.2f} ms   p99 {p99:>8.2f} ms")
    print(f"  {'(sum of the medians)':<52}     {total50:>8.2f} ms", flush=True)


def run_cvhost(args, seconds, on_line=None):
    """Runs cvhost with the trace on; calls on_line(line, now_ns) for each stdout line; returns its stderr lines."""
    err_path = f"/tmp/cvhost-live-stages-{os.getpid()}.err"
    with open(err_path, "w") as err:
        proc = subprocess.Popen([CVHOST, "run", "--metrics-interval", "0", "-q", "--duration", str(seconds)] + args,
                                stdout=subprocess.PIPE, stderr=err, text=True, env=dict(os.environ, CVHOST_FRAME_TRACE="1"))
        for line in proc.stdout:
            if on_line:
                on_line(line, time.monotonic_ns())
        proc.wait()
    with open(err_path) as f:
        lines = f.readlines()
    os.unlink(err_path)
    return lines


def v4l2_inside(seconds, warmup):
    """In the VM: the null plugin on /dev/video0 (vivid's webcam input), one result a frame."""
    arrivals = {}

    def on_line(line, now):
        if line.startswith('{"event":"result"'):
            arrivals.setdefault(round(json.loads(line)["pts"] * 1e6), now)

    start = time.monotonic_ns()
    lines = run_cvhost(["--plugin", "null:results=1", "--device", "/dev/video0"], seconds + warmup, on_line)
    marks = trace_marks(lines)
    for pts, t in arrivals.items():
        if pts in marks:
            marks[pts]["@line"] = t
    report("V4L2 camera (vivid, 1 emulated CPU), null plugin", V4L2_NAMES, steps(marks, V4L2, V4L2_NAMES, start + int(warmup * 1e9)))


def v4l2(seconds, warmup):
    env = dict(os.environ, VIVID_MODE="webcam", VIVID_TIMEOUT=str(int(seconds + warmup) + 300))
    cmd = f"/usr/bin/python3 {os.path.abspath(__file__)} --inside-vm --seconds {seconds} --warmup {warmup}"
    subprocess.run([os.path.join(ROOT, "scripts", "vivid-run.sh"), cmd], env=env, check=True)


def live_view(seconds, warmup):
    port = free_port()
    first_bytes = {}
    stop = threading.Event()

    def viewer():
        for _ in range(200):
            try:
                sock = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.05)
        else:
            return
        sock.sendall(b"GET /stream.mjpg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        sock.settimeout(0.5)
        buf = b""
        chunks = []  # (offset in buf, arrival ns) of each recv's first byte
        while not stop.is_set():
            try:
                data = sock.recv(1 << 16)
            except socket.timeout:
                continue
            if not data:
                break
            chunks.append((len(buf), time.monotonic_ns()))
            buf += data
            while True:
                head = buf.find(b"--cvhost-frame\r\n")
                end = buf.find(b"\r\n\r\n", head) if head >= 0 else -1
                if head < 0 or end < 0:
                    break
                headers = dict(h.split(": ", 1) for h in buf[head + 16:end].decode().split("\r\n") if ": " in h)
                length = int(headers.get("Content-Length", "0"))
                if len(buf) < end + 4 + length:
                    break
                # The picture's first byte (its boundary) came with the last recv that began at or before it.
                arrived = [t for offset, t in chunks if offset <= head][-1]
                first_bytes.setdefault(round(float(headers["X-Pts"]) * 1e6), arrived)
                cut = end + 4 + length
                buf = buf[cut:]
                chunks = [(max(0, o - cut), t) for o, t in chunks]
                chunks = [c for i, c in enumerate(chunks) if i == len(chunks) - 1 or chunks[i + 1][0] > 0]
        sock.close()

    t = threading.Thread(target=viewer, daemon=True)
    t.start()
    start = time.monotonic_ns()
    lines = run_cvhost(["--plugin", "null", "--input", "testsrc:1280x720@30", "--http", f"127.0.0.1:{port}", "--preview-fps", "30",
                        "--preview-width", "640", "--no-stdin-commands"], seconds + warmup)
    stop.set()
    t.join()
    marks = trace_marks(lines)
    for pts, at in first_bytes.items():
        if pts in marks:
            marks[pts]["@byte"] = at
    report("live view MJPEG, testsrc:1280x720@30, preview 640 wide at 30 fps, one viewer", VIEW_NAMES,
           steps(marks, VIEW, VIEW_NAMES, start + int(warmup * 1e9)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--only", choices=["v4l2", "live-view"])
    ap.add_argument("--inside-vm", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not os.access(CVHOST, os.X_OK):
        sys.exit("build first: swift build -c release")
    if args.inside_vm:
        return v4l2_inside(args.seconds, args.warmup)
    if args.only in (None, "live-view"):
        live_view(args.seconds, args.warmup)
    if args.only in (None, "v4l2"):
        v4l2(args.seconds, args.warmup)


if __name__ == "__main__":
    main()
