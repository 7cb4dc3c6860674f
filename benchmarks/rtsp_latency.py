#!/usr/bin/env python3
"""Capture-to-result latency and CPU per frame for barcodes on a live RTSP camera, cvhost beside
GStreamer's zbar pipeline, on the same stream from a loopback server.

The server (benchmarks/rtsp_live_server.py, gst-rtsp-server) encodes a live 1280x720@30 test
pattern with a QR code on every frame holding the frame's timestamp, and says when it drew each
frame (CLOCK_MONOTONIC). A reader's latency for a frame is the time its result line reached this
script minus the time the frame was drawn: encoding, RTSP/RTP, buffering, decoding and the barcode
reader, all included, the same for both. Each pipeline gets a fresh server; they run one after
another (never together: two cores). Pipelines:

  cvhost run --plugin barcode --input rtsp://127.0.0.1:PORT/live      (engine auto: zxing-cpp)
  cvhost run --plugin barcode:engine=zbar --input ...                 (the same reader as GStreamer's)
  gst-launch-1.0 -m rtspsrc location=... ! decodebin ! videoconvert ! zbar ! fakesink

Printed per pipeline: frames drawn in the measured window, frames with a result, latency p50/p99
(ms) and CPU ms per frame read (user+system of the reader's process over the window). Then, for
cvhost's first pipeline, where the time goes, stage by stage (the medians of each frame's steps,
from cvhost's CVHOST_FRAME_TRACE=1 stamps, on the same clock as the server's): drawn to the
frame's first RTP packet (encoding, payloading, loopback), its first to last packet, the last
packet to the decoder (joining the frame), decoding, the plugin's queue (conversion, hand-off),
the barcode reader, and the result line to this script (ordering, output, pipe).

    benchmarks/rtsp_latency.py [--seconds 20] [--warmup 3] [--size 1280x720] [--fps 30]
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from benchlib import cpu_seconds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))




def cvhost_stamp(line):
    """The frame timestamp in a cvhost result line, or None."""
    if not line.startswith('{"event":"result"'):
        return None
    text = json.loads(line)["data"].get("text") or ""
    m = re.search(r'"TIMESTAMP":(\d+)', text)
    return int(m.group(1)) if m else None


def gst_stamp(line):
    """The frame timestamp in a `gst-launch-1.0 -m` zbar message, or None."""
    if "barcode" not in line:
        return None
    m = re.search(r'TIMESTAMP\\?"\s*:\s*(\d+)', line)
    return int(m.group(1)) if m else None


STAGES = ["first_packet", "last_packet", "to_decoder", "decoded", "process_start", "process_end"]
STAGE_NAMES = ["drawn -> first packet (encoding, RTP, loopback)", "first -> last packet", "last packet -> decoder (joining the frame)",
               "decoding", "decoded -> plugin (conversion, queue)", "the barcode reader", "result -> line read here (order, output, pipe)"]


def measure(name, reader, parse, args, trace=False):
    """Starts a server and `reader(url)`; returns the figures of the measured window (and with
    `trace`, each stage's median, from cvhost's CVHOST_FRAME_TRACE lines on its stderr)."""
    server = subprocess.Popen([os.path.join(ROOT, "benchmarks", "rtsp_live_server.py"), "--size", args.size, "--fps", str(args.fps)],
                              stdout=subprocess.PIPE, text=True)
    ready = server.stdout.readline()
    if not ready.startswith("ready "):
        sys.exit(f"the RTSP server did not start: {ready!r}")
    url = f"rtsp://127.0.0.1:{ready.split()[1]}/live"
    drawn = {}  # frame pts -> monotonic ns when drawn

    def read_server():
        for line in server.stdout:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "frame":
                drawn[int(parts[1])] = int(parts[2])

    threading.Thread(target=read_server, daemon=True).start()
    errors = tempfile.TemporaryFile(mode="w+")
    env = dict(os.environ, CVHOST_FRAME_TRACE="1") if trace else None
    proc = subprocess.Popen(reader(url), stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
    traced = []  # (cvhost pts in µs, drawn ns, read ns) of each measured result
    window = {"start": None, "end": None, "cpu0": 0.0, "cpu1": 0.0}
    latencies, seen = [], set()

    def stop_later():
        time.sleep(args.warmup)
        window["start"] = time.monotonic_ns()
        window["cpu0"] = cpu_seconds(proc.pid)
        time.sleep(args.seconds)
        window["cpu1"] = cpu_seconds(proc.pid)
        window["end"] = time.monotonic_ns()
        proc.send_signal(signal.SIGINT)

    threading.Thread(target=stop_later, daemon=True).start()
    for line in proc.stdout:
        now = time.monotonic_ns()
        stamp = parse(line)
        if stamp is None or stamp in seen or stamp not in drawn:
            continue
        seen.add(stamp)
        start, end = window["start"], window["end"]
        if start is not None and drawn[stamp] >= start and (end is None or drawn[stamp] < end):
            latencies.append((now - drawn[stamp]) / 1e6)
            if trace:
                traced.append((round(json.loads(line)["pts"] * 1e6), drawn[stamp], now))
    proc.wait()
    server.kill()
    server.wait()
    if window["end"] is None:
        errors.seek(0)
        sys.exit(f"{name} ended before the measurement did: {errors.read().strip()[-500:]}")
    frames = sum(1 for t in drawn.values() if window["start"] <= t < window["end"])
    stages = None
    if trace:
        errors.seek(0)
        marks = {}  # pts µs -> stage -> ns
        for line in errors:
            parts = line.split()
            if len(parts) == 4 and parts[0] == "trace":
                marks.setdefault(round(int(parts[1]) / 1000), {}).setdefault(parts[2], int(parts[3]))
        steps = [[] for _ in STAGE_NAMES]
        for pts, drawn_ns, read_ns in traced:
            m = marks.get(pts, {})
            if all(s in m for s in STAGES):
                points = [drawn_ns] + [m[s] for s in STAGES] + [read_ns]
                for i in range(len(STAGE_NAMES)):
                    steps[i].append((points[i + 1] - points[i]) / 1e6)
        stages = [(n, statistics.median(v) if v else float("nan"), len(v)) for n, v in zip(STAGE_NAMES, steps)]
    return {
        "name": name, "drawn": frames, "read": len(latencies),
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p99": statistics.quantiles(latencies, n=100)[98] if len(latencies) >= 100 else float("nan"),
        "cpu_ms": (window["cpu1"] - window["cpu0"]) * 1000 / max(1, len(latencies)),
        "stages": stages,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cvhost", default=os.path.join(ROOT, ".build", "release", "cvhost"))
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--fps", type=int, default=30)
    args = ap.parse_args()
    if not os.access(args.cvhost, os.X_OK):
        sys.exit(f"{args.cvhost} not found: build it first (swift build -c release)")

    def cvhost(options=""):
        return lambda url: [args.cvhost, "run", "--plugin", "barcode" + options, "--input", url, "--metrics-interval", "0", "-q"]

    def gst(url):
        # stdbuf: gst-launch prints with stdio, which a pipe would otherwise hold back in blocks.
        return ["stdbuf", "-oL", "gst-launch-1.0", "-m", "rtspsrc", f"location={url}",
                "!", "decodebin", "!", "videoconvert", "!", "zbar", "!", "fakesink"]

    runs = [
        ("cvhost barcode (auto: zxing-cpp)", cvhost(), cvhost_stamp),
        ("cvhost barcode:engine=zbar", cvhost(":engine=zbar"), cvhost_stamp),
        ("gst rtspsrc ! ... ! zbar", gst, gst_stamp),
    ]
    print(f"barcode on a live {args.size}@{args.fps} RTSP stream, {args.seconds:g} s measured after {args.warmup:g} s")
    print(f"{'pipeline':<36} {'frames':>7} {'read':>6} {'p50 ms':>8} {'p99 ms':>8} {'CPU ms/frame':>13}")
    stages = None
    for name, reader, parse in runs:
        r = measure(name, reader, parse, args)
        print(f"{r['name']:<36} {r['drawn']:>7} {r['read']:>6} {r['p50']:>8.1f} {r['p99']:>8.1f} {r['cpu_ms']:>13.2f}", flush=True)
    # Where the time goes: a run of its own (the trace's lines cost a little), after the figures above.
    r = measure(runs[0][0], runs[0][1], runs[0][2], args, trace=True)
    print(f"\nwhere the time goes, {r['name']} (medians of {min(n for _, _, n in r['stages'])} frames; "
          f"p50 of the whole with the trace on: {r['p50']:.1f} ms)")
    for stage, ms, _ in r["stages"]:
        print(f"  {stage:<52} {ms:>7.2f} ms")


if __name__ == "__main__":
    main()
