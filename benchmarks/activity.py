#!/usr/bin/env python3
"""Cameras that cost what happens in front of them: N live sub-stream cameras (640x360 at 15 frames a
second, H.264), one in four busy (the corpus's people, faces_1280x720.mp4 scaled down, looped) and
the rest still (its first picture held, with a sensor's noise), in one cvhost process, detect
(NudeNet's YOLOv8n at 320, 5 detections a second) tracked with a counting line, each way in turn:

  ungated     every camera's detector at 5 a second, as before issue 62
  gated       detect:on_motion=true: frames offered only while the camera moves (and one every
              motion_refresh, 10 s), on the motion's regions
  decode      the null plugin at 5 a second, no motion: what decoding and the host cost alone
  motion      the same with --motion on: decoding, the host and the motion detector

Served by the tests' RTSP server (Tests/Servers/rtsp_server.py, gst-rtsp-server on loopback: each
client its own stream from the start, paced in real time, never re-encoded). One run of --seconds a
way after a warm-up (every camera's first result, then 8 s). Printed per way:

  keeps up     the busy cameras' detections within 5% of 5 a second (gated and ungated), no frame
               dropped late on any camera, and the p99 under 300 ms
  busy det/s   the slowest busy camera's detections a second; still det/s: the still cameras' mean
  late         frames dropped late (the plugin busy when they came), all cameras
  p99 ms       from a frame's capture to its result lines' arrival at a reader of stdout
  CPU ms/cam-s CPU (user + system, cvhost and its workers) per camera-second; its split: decode =
               the decode way's; motion = the motion way's less decode's; inference and the rest =
               the gated (or ungated) way's less motion's (less decode's when ungated)
  tracks/crossings  on the busy cameras, the tracks the analytics started and the counting line's
               crossings, the whole run (gated against ungated)

    benchmarks/activity.py [--cameras 16] [--busy 4] [--seconds 30] [--ways ungated,gated,decode,motion]
                           [--runtime auto|onnxruntime|openvino]

Needs scripts/install-deps.sh (.venv-onnx with onnxruntime, OpenVINO and NudeNet's model), the corpus
beside the project and a release build (swift build -c release).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cameras import CVHOST, MODEL, PYTHON, ROOT, VIDEO, cpu_and_rss, percentile, stamp_arrivals, stolen, tree  # noqa: E402

WARMUP = 8.0
RATE = 5.0


def sub_streams(work, seconds):
    """The busy camera's file (the corpus's people at 640x360@15) and the still one's (its first
    picture held, with temporal noise of 3 levels), each long enough to outlast the run."""
    length = seconds + WARMUP + 60
    busy, still = os.path.join(work, "busy.mp4"), os.path.join(work, "still.mp4")
    loops = int(length / 3) + 1
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-stream_loop", str(loops), "-i", VIDEO, "-t", str(length),
                    "-vf", "scale=640:360,fps=15", "-an", "-c:v", "libx264", "-preset", "veryfast", "-bf", "0", "-g", "30",
                    "-pix_fmt", "yuv420p", busy], check=True)
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", VIDEO, "-frames:v", "1", "-vf", "scale=640:360", os.path.join(work, "still.png")],
                   check=True)
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-loop", "1", "-framerate", "15", "-i", os.path.join(work, "still.png"), "-t", str(length),
                    "-vf", "noise=alls=3:allf=t", "-c:v", "libx264", "-preset", "veryfast", "-bf", "0", "-g", "30", "-pix_fmt", "yuv420p", still],
                   check=True)
    return busy, still


def server(busy, still):
    p = subprocess.Popen(["/usr/bin/python3", os.path.join(ROOT, "Tests/Servers/rtsp_server.py"), "--file", busy, "--also", f"still={still}"],
                         stdout=subprocess.PIPE, text=True)
    port = int(p.stdout.readline().split()[1])
    return p, f"rtsp://127.0.0.1:{port}/codes", f"rtsp://127.0.0.1:{port}/still"


def command(way, urls, out, runtime):
    if way in ("decode", "motion"):
        plugin = f"null:max_fps={RATE:g},results=1"
    else:
        plugin = f"detect:model={MODEL},max_fps={RATE:g},runtime={runtime}" + (",on_motion=true" if way == "gated" else "")
    cmd = [CVHOST, "run", "--plugin", plugin, "--metrics-interval", "2", "--output", f"file:{out}", "--output", "-", "--results-only",
           "-q", "--reconnect"]
    if way in ("ungated", "gated"):
        cmd += ["--track", "detect", "--line", "door=0.5,0.1 0.5,0.9"]
    if way == "motion":
        cmd += ["--motion", "on"]
    for i, url in enumerate(urls):
        cmd += ["--input", f"c{i}={url}"]
    return cmd


def run(way, urls, busy_count, work, seconds, runtime):
    out = os.path.join(work, f"{way}.jsonl")
    env = dict(os.environ, CVHOST_PYTHON=PYTHON)
    proc = subprocess.Popen(command(way, urls, out, runtime), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    arrived = {}
    reader = threading.Thread(target=stamp_arrivals, args=(proc.stdout, arrived), daemon=True)
    reader.start()
    # The warm-up from every busy camera's first result (a still one gated may give none for a while).
    ready_by = time.monotonic() + 120
    while time.monotonic() < ready_by and not {f"c{i}" for i in range(busy_count)} <= {s for (s, _) in list(arrived)}:
        time.sleep(0.1)
    time.sleep(WARMUP)
    warmup_end = time.time()
    cpu0, _ = cpu_and_rss(tree(proc.pid))
    t0 = time.monotonic()
    time.sleep(seconds)
    cpu1, rss = cpu_and_rss(tree(proc.pid))
    t1 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
    reader.join(timeout=10)
    lines = [json.loads(l) for l in open(out) if l.startswith("{")]
    per = {}
    for e in lines:
        if e.get("event") == "metrics" and e.get("ts", 0) >= warmup_end:
            per.setdefault(e["source"], []).append(e)
    stats = {}
    for source, ms in per.items():
        a, b = ms[0], ms[-1]
        span = max(1e-9, b["ts"] - a["ts"])
        stats[source] = {"detections": (b["frames"]["processed"] - a["frames"]["processed"]) / span,
                         "late": b["frames"]["dropped"].get("late", 0) - a["frames"]["dropped"].get("late", 0),
                         "offered": b["frames"]["offered"] - a["frames"]["offered"]}
    # What the analytics counted on the busy cameras: tracks (people), and the line's crossings.
    crossings = (sum(1 for e in lines if e.get("event") == "track.started" and int(e["source"][1:]) < busy_count),
                 sum(1 for e in lines if e.get("event") == "line.crossed" and int(e["source"][1:]) < busy_count))
    delays = [d for (source, _), (at, d) in arrived.items() if at >= warmup_end]
    return stats, (cpu1 - cpu0) * 1000 / (t1 - t0), rss, percentile(delays, 0.99), crossings


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cameras", type=int, default=16)
    ap.add_argument("--busy", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--ways", default="ungated,gated,decode,motion")
    ap.add_argument("--runtime", default="auto", choices=("auto", "onnxruntime", "openvino"))
    args = ap.parse_args()
    for need, what in [(CVHOST, "a release build: swift build -c release"), (MODEL, "scripts/install-deps.sh (NudeNet in .venv-onnx)"),
                       (VIDEO, "the corpus beside the project")]:
        if not os.path.exists(need):
            sys.exit(f"{need} is missing: {what}")
    work = tempfile.mkdtemp(prefix="cvhost-activity-")
    results = {}
    try:
        busy, still = sub_streams(work, args.seconds)
        for way in args.ways.split(","):
            srv, busy_url, still_url = server(busy, still)
            steal0 = stolen()
            try:
                urls = [busy_url] * args.busy + [still_url] * (args.cameras - args.busy)
                stats, cpu, rss, p99, crossings = run(way, urls, args.busy, work, args.seconds, args.runtime)
            finally:
                srv.terminate()
                srv.wait()
            steal1 = stolen()
            steal = (steal1[0] - steal0[0]) / max(1, steal1[1] - steal0[1]) * 100
            busy_det = [stats.get(f"c{i}", {}).get("detections", 0) for i in range(args.busy)]
            still_det = [stats.get(f"c{i}", {}).get("detections", 0) for i in range(args.busy, args.cameras)]
            late = sum(s["late"] for s in stats.values())
            offered = sum(s["offered"] for s in stats.values())
            kept = (min(busy_det) >= RATE * 0.95 and late == 0 and (p99 or 0) < 300) if way in ("ungated", "gated") else None
            results[way] = dict(cpu=cpu / args.cameras, rss=rss, p99=p99, crossings=crossings)
            print(f"{way:8} {args.cameras} cameras ({args.busy} busy): "
                  + (f"{'keeps up' if kept else 'falls behind':12} " if kept is not None else "")
                  + f"busy det/s {min(busy_det):5.2f}  still det/s {sum(still_det) / max(1, len(still_det)):5.2f}  "
                  f"late {late}/{offered} ({late / max(1, offered) * 100:.1f}%)  p99 {p99 or 0:6.0f} ms  "
                  f"CPU {cpu / args.cameras:5.0f} ms/cam-s  RSS {rss:5.0f} MB  tracks/crossings {crossings[0]}/{crossings[1]}  steal {steal:2.0f}%",
                  flush=True)
        if {"decode", "motion"} <= results.keys():
            decode, motion = results["decode"]["cpu"], results["motion"]["cpu"]
            print(f"\nCPU ms per camera-second: decode and the host {decode:.0f}, motion {motion - decode:.0f}", end="")
            for way in ("gated", "ungated"):
                if way in results:
                    rest = results[way]["cpu"] - (motion if way == "gated" else decode)
                    print(f", inference and the rest {way} {rest:.0f}", end="")
            print()
        if {"gated", "ungated"} <= results.keys():
            g, u = results["gated"]["crossings"], results["ungated"]["crossings"]
            print(f"on the busy cameras, tracks and crossings: gated {g[0]} and {g[1]}, ungated {u[0]} and {u[1]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
