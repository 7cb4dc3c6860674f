#!/usr/bin/env python3
"""A Python plugin run by cvhost versus the plain Python loop it replaces, on one video file.

    benchmarks/python_plugin.py [--frames 900] [--size 1280x720] [--repeat 3] [--opencv-threads N] [--work N]

Both run the same OpenCV function on every frame (benchmarks/python/laplacian.py: the variance of
the Laplacian of the picture's luma), with Debian's python3 and python3-opencv:
  loop            cv2.VideoCapture(file), read() each frame (BGR), measure(frame): gray, then variance
  cvhost luma xN  --plugin laplacian_gray.py:instances=N: variance() of a view of the decoded Y plane
  cvhost BGR xN   --plugin laplacian_bgr.py:instances=N: cvhost converts to BGR (bilinear, accurate
                  rounding, full chroma), then measure() as the loop does
N workers run N interpreters: no GIL between them. --opencv-threads 1 runs OpenCV on one thread in
every process (as most per-frame Python code runs); by default OpenCV uses every core itself.
--work N runs the function N times per frame: a heavier model, beside which decoding weighs less. Printed: frames per second of each (wall time of
the whole command, start-up included, median of --repeat runs, alternating), the ratio to the
loop, measured in the same run, and the cores each kept busy (CPU time over wall time) and its CPU
time per frame: a loop that already keeps more than one core busy (FFmpeg decodes on its own
threads) leaves less for N workers to win on a machine of few cores.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from benchlib import run

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYTHON = os.environ.get("CVHOST_PYTHON", "/usr/bin/python3")
CVHOST = os.environ.get("CVHOST", os.path.join(ROOT, ".build/release/cvhost"))
PLUGINS = os.path.join(HERE, "python")

LOOP = """
import sys, cv2
sys.path.insert(0, sys.argv[2])  # cvhost's runtime: the plugin file imports cvhost
sys.path.insert(0, sys.argv[3])
from laplacian import measure
cap = cv2.VideoCapture(sys.argv[1])
n = 0
while True:
    ok, frame = cap.read()
    if not ok:
        break
    measure(frame)
    n += 1
print(n)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=900)
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--opencv-threads", type=int, default=0, help="OpenCV's threads in each process (0: its default)")
    ap.add_argument("--work", type=int, default=1, help="the function's runs per frame (a heavier model)")
    a = ap.parse_args()
    runtime = os.path.join(os.path.dirname(CVHOST), "cvhost_CVHostPlugins.resources/python")
    if not os.path.isdir(runtime):
        sys.exit(f"no cvhost build at {CVHOST}: run swift build -c release first (or set CVHOST)")
    with tempfile.TemporaryDirectory() as tmp:
        video = os.path.join(tmp, "clip.mp4")
        subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"testsrc2=size={a.size}:rate=30", "-frames:v", str(a.frames),
                        "-c:v", "libx264", "-pix_fmt", "yuv420p", video], check=True)
        # The plugins import laplacian.py from their folder.
        env = dict(os.environ, CVHOST_PYTHON=PYTHON, PYTHONPATH=PLUGINS)
        if a.opencv_threads:
            env["LAPLACIAN_THREADS"] = str(a.opencv_threads)
        env["LAPLACIAN_WORK"] = str(a.work)
        runs = {
            "loop": ([PYTHON, "-c", LOOP, video, runtime, PLUGINS], env),
        }
        for kind in ("luma", "BGR"):
            for n in (1, 2):
                plugin = os.path.join(PLUGINS, f"laplacian_{'gray' if kind == 'luma' else 'bgr'}.py:instances={n}")
                runs[f"cvhost {kind} x{n}"] = ([CVHOST, "run", "--plugin", plugin, "--input", video, "--metrics-interval", "0", "-q"], env)
        walls = {name: [] for name in runs}
        cpus = {name: [] for name in runs}
        for _ in range(a.repeat):
            for name, (cmd, e) in runs.items():
                out, _, wall, cpu = run(cmd, e)
                frames = int(out.strip()) if name == "loop" else out.count('"type":"sharpness"')
                if frames != a.frames:
                    sys.exit(f"{name}: {frames} frames measured, not {a.frames}")
                walls[name].append(wall)
                cpus[name].append(cpu)
    fps = {name: a.frames / statistics.median(w) for name, w in walls.items()}
    threads = a.opencv_threads or "its default"
    print(f"{a.frames} frames of {a.size} H.264, {os.cpu_count()} cores, {PYTHON}, OpenCV threads: {threads}, work {a.work}; "
          f"median of {a.repeat} runs, start-up included")
    print("  run              frames/s   vs loop   cores busy   CPU ms/frame")
    for name in runs:
        cores = statistics.median(cpus[name]) / statistics.median(walls[name])
        per_frame = statistics.median(cpus[name]) / a.frames * 1e3
        print(f"  {name:15}  {fps[name]:8.1f}   {fps[name] / fps['loop']:5.2f}x   {cores:10.2f}   {per_frame:12.2f}")


if __name__ == "__main__":
    main()
