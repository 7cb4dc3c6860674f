#!/usr/bin/env python3
"""A 1080p MJPEG webcam's frames decoded three ways, in one run: cvhost's camera path (FFmpeg's JPEG
decoder, MJPEGDecoder, through `cvhost-bench --mjpeg`), libv4lconvert (what libv4l2's emulation
calls for an MJPEG camera; a small C harness, benchmarks/mjpeg_v4lconvert.c) and
`ffmpeg -threads 1 -f mjpeg -i FRAMES -f null -`. Each to I420 (ffmpeg: to the JPEG's own planes).

Frames are made like a webcam's: 4:2:2 with 2x1 luma sampling (16x8 blocks) by libjpeg-turbo's
cjpeg at quality 85, from the corpus's 1920x1080 video (or testsrc2 without the corpus). FFmpeg's
own mjpeg encoder is also run, 4:2:0: what libv4lconvert makes of a 1080p 4:2:0 JPEG is part of
the result. Prints CPU ms per frame, frames/s of one core, and frames refused; best of REPEAT.

    swift build -c release && benchmarks/mjpeg_decode.py [--frames 120] [--repeat 3]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

from benchlib import timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W, H = 1920, 1080


def make_frames(work, frames):
    """Two MJPEG files: webcam-like (cjpeg 4:2:2, 2x1) and FFmpeg's mjpeg encoder (4:2:0)."""
    video = os.path.join(ROOT, "..", "shared", "corpus", "video", "faces_1920x1080.mp4")
    source = ["-i", video] if os.path.exists(video) else ["-f", "lavfi", "-i", f"testsrc2=size={W}x{H}:rate=30"]
    ppm = os.path.join(work, "f%04d.ppm")
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", *source, "-vf", f"scale={W}:{H}", "-frames:v", str(frames), ppm],
                   check=True)
    webcam = os.path.join(work, "webcam-422.mjpeg")
    with open(webcam, "wb") as out:
        for f in sorted(glob.glob(os.path.join(work, "f*.ppm"))):
            out.write(subprocess.run(["cjpeg", "-sample", "2x1", "-quality", "85", f], check=True, capture_output=True).stdout)
    ffmpeg420 = os.path.join(work, "ffmpeg-420.mjpeg")
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", ppm, "-c:v", "mjpeg", "-pix_fmt", "yuvj420p", "-q:v", "3",
                    "-f", "mjpeg", ffmpeg420], check=True)
    made = len(glob.glob(os.path.join(work, "f*.ppm")))
    return made, [("webcam-like 4:2:2 (cjpeg 2x1)", webcam), ("FFmpeg mjpeg 4:2:0", ffmpeg420)]


def harness_run(cmd):
    """A harness printing {"frames", "failed", "cpu_seconds"}: (frames, failed, CPU s)."""
    out, _, _ = timed(cmd)
    r = json.loads(out.strip().splitlines()[-1])
    return r["frames"], r["failed"], r["cpu_seconds"]


def ffmpeg_run(path, frames):
    """ffmpeg decoding to nothing, one thread: (frames, failed, CPU s of the whole process)."""
    _, _, cpu = timed(["ffmpeg", "-nostdin", "-loglevel", "error", "-threads", "1", "-f", "mjpeg", "-i", path, "-f", "null", "-"])
    return frames, 0, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=120)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    bench = os.path.join(ROOT, ".build", "release", "cvhost-bench")
    if not os.path.exists(bench):
        sys.exit("build first: swift build -c release")
    for tool in ["cjpeg", "ffmpeg", "cc"]:
        if subprocess.run(["which", tool], capture_output=True).returncode != 0:
            sys.exit(f"{tool} is missing: scripts/install-deps.sh --benchmarks")
    with tempfile.TemporaryDirectory() as work:
        harness = os.path.join(work, "mjpeg_v4lconvert")
        subprocess.run(["cc", "-O2", os.path.join(ROOT, "benchmarks", "mjpeg_v4lconvert.c"), "-o", harness, "-lv4lconvert"], check=True)
        made, inputs = make_frames(work, args.frames)
        print(f"{W}x{H} MJPEG, {made} frames, one core, best of {args.repeat} (CPU time)")
        print(f"{'frames':32} {'decoder':44} {'CPU ms/frame':>12} {'frames/s':>9} {'refused':>8}")
        for label, path in inputs:
            runs = [
                ("cvhost (FFmpeg's decoder, I420 + grey view)", lambda: harness_run([bench, "--mjpeg", path, str(W), str(H)])),
                ("libv4lconvert (libv4l2's emulation), I420", lambda: harness_run([harness, path, str(W), str(H)])),
                ("ffmpeg -threads 1 -f mjpeg -i … -f null -", lambda: ffmpeg_run(path, made)),
            ]
            for name, run in runs:
                results = [run() for _ in range(args.repeat)]
                frames, failed, cpu = min(results, key=lambda r: r[2])
                per = cpu / frames * 1000 if frames else float("nan")
                fps = frames / cpu if cpu > 0 and frames else 0
                print(f"{label:32} {name:44} {per:12.2f} {fps:9.0f} {failed:8d}")


if __name__ == "__main__":
    main()
