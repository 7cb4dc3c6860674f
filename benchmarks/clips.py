#!/usr/bin/env python3
"""What keeping clips costs: CPU and memory of one live camera with clips off and on, beside what
Frigate runs per camera to record (`ffmpeg -c copy -f segment`), and the encode of a raw camera.

A 1920x1080@30 H.264 camera (4 Mbit/s, a keyframe a second) served in real time by the tests'
RTSP server (Tests/Servers/rtsp_server.py, gst-rtsp-server, on loopback). For SECONDS each, one
after another (never together: two cores):

  cvhost, clips off   cvhost run --plugin null --input rtsp://...
  cvhost, clips on    the same with --clips DIR:on=result,pre=5,post=10 and null:results=1, a result
                      on every frame: a clip always being written (the most clips can cost)
  ffmpeg segment      ffmpeg -rtsp_transport tcp -i rtsp://... -c copy -f segment -segment_time 10 ...
  raw 720p30          cvhost on the test pattern (testsrc:1280x720@30), clips off and on: the
                      libx264 encode of a camera that has no packets to copy

Printed per row: CPU ms per camera-second (user + system of the process, /proc), the peak RSS
(VmHWM), the bytes written a second. cvhost decodes every frame in both of its rows (its plugins
need pictures); ffmpeg decodes none: the difference of cvhost's two rows is what clips add.

    benchmarks/clips.py [--seconds 20] [--cvhost PATH]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchlib import cpu_seconds

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def folder_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def measure(cmd, seconds, out_dir, warmup=2.0):
    """Runs cmd for warmup + seconds; returns (CPU ms per second, peak RSS MB, bytes written a second)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(warmup)
    if proc.poll() is not None:
        sys.exit(f"{cmd[0]} ended early: {proc.stderr.read()[-800:]}")
    cpu0, bytes0, t0 = cpu_seconds(proc.pid), folder_bytes(out_dir), time.monotonic()
    time.sleep(seconds)
    cpu1, rss, t1 = cpu_seconds(proc.pid), peak_rss_mb(proc.pid), time.monotonic()
    bytes1 = folder_bytes(out_dir)
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
    return (cpu1 - cpu0) * 1000 / (t1 - t0), rss, (bytes1 - bytes0) / (t1 - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--cvhost", default=os.environ.get("CVHOST", os.path.join(ROOT, ".build/release/cvhost")))
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cvhost-clips-bench-")
    try:
        camera = os.path.join(work, "camera.mp4")
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30",
                        "-t", str(args.seconds * 4 + 20), "-c:v", "libx264", "-preset", "veryfast", "-b:v", "4M", "-g", "30",
                        "-pix_fmt", "yuv420p", camera], check=True)
        rows = []

        def camera_rows():
            server = subprocess.Popen(["/usr/bin/python3", os.path.join(ROOT, "Tests/Servers/rtsp_server.py"), "--file", camera],
                                      stdout=subprocess.PIPE, text=True)
            port = int(server.stdout.readline().split()[1])
            return server, f"rtsp://127.0.0.1:{port}/codes"

        cases = [
            ("cvhost, clips off", lambda url, d: [args.cvhost, "run", "--plugin", "null", "--input", url, "-q", "--metrics-interval", "0"]),
            ("cvhost, clips on", lambda url, d: [args.cvhost, "run", "--plugin", "null:results=1", "--input", url, "-q",
                                                  "--metrics-interval", "0", "--output", "file:/dev/null",
                                                  "--clips", f"{d}:on=result,pre=5,post=10,min_free_gb=0"]),
            ("ffmpeg -c copy -f segment", lambda url, d: ["ffmpeg", "-nostdin", "-v", "error", "-rtsp_transport", "tcp", "-i", url,
                                                           "-c", "copy", "-f", "segment", "-segment_time", "10", "-reset_timestamps", "1",
                                                           os.path.join(d, "%03d.mp4")]),
        ]
        for name, make in cases:
            out = os.path.join(work, name.split()[0] + str(len(rows)))
            os.makedirs(out, mode=0o700)
            server, url = camera_rows()
            try:
                rows.append((name, "1080p30 H.264 RTSP") + measure(make(url, out), args.seconds, out))
            finally:
                server.terminate()
                server.wait()
        for name, extra in [("cvhost raw, clips off", []), ("cvhost raw, clips on", ["--clips", "{d}:on=result,pre=5,post=10,min_free_gb=0"])]:
            out = os.path.join(work, "raw" + str(len(rows)))
            os.makedirs(out, mode=0o700)
            cmd = [args.cvhost, "run", "--plugin", "null:results=1", "--input", "testsrc:1280x720@30", "-q", "--metrics-interval", "0",
                   "--output", "file:/dev/null"] + [e.replace("{d}", out) for e in extra]
            rows.append((name, "720p30 test pattern") + measure(cmd, args.seconds, out))
        print(f"{'':28} {'input':22} {'CPU ms/s':>9} {'peak RSS MB':>12} {'written KB/s':>13}")
        for name, source, cpu, rss, rate in rows:
            print(f"{name:28} {source:22} {cpu:9.0f} {rss:12.0f} {rate / 1024:13.0f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
