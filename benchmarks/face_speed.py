#!/usr/bin/env python3
"""CPU per frame of the face plugin at 640x480, 1280x720 and 1920x1080, in one run: the CNN
(cvhost's defaults) with one instance and with instances=2, Haar (detector=haar), and the CNN
library called directly on the same frames (yuface, at the size cvhost detects at: 960 pixels
wide at most), so that cvhost's own part shows.

The clips: ../shared/corpus/video/faces_1920x1080.mp4 (90 frames, six moving faces) three times
over, scaled to each size with FFmpeg. cvhost's CPU includes decoding the video; the null plugin's run on the
same clip measures that, and "host + plugin" is the face run less the null run: the plugin's
conversions, copies and calls beside the detector's own time (with roll=false: the direct call
finds no eyes either; "cnn" is the defaults, with the roll from the eyes). The detector
runs on one thread per instance in both (OMP_NUM_THREADS=1 for the direct call).

    python3 -m pip install yuface==2023.5.1 numpy     (the direct call; skipped without it)
    benchmarks/face_speed.py [--corpus ../shared/corpus] [--cvhost .build/release/cvhost] [--repeat 3]
"""
import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time

from benchlib import timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [(640, 480), (1280, 720), (1920, 1080)]
DETECT_WIDTH = 960  # the face plugin's default for the CNN


def cvhost_cpu(cvhost, plugin, clip, repeat):
    """Median (CPU seconds, wall seconds) of `repeat` runs over the clip (block back-pressure: every frame)."""
    runs = [timed([cvhost, "run", "--plugin", plugin, "--input", clip, "-q", "--metrics-interval", "0"])[1:] for _ in range(repeat)]
    return statistics.median(r[1] for r in runs), statistics.median(r[0] for r in runs)


def direct_cpu(clip, width, height, repeat):
    """Median CPU seconds of yuface.detect over the clip's frames, decoded and scaled as cvhost does; None without yuface."""
    # One thread, as the plugin calls it (OpenMP reads this when the library loads).
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        import warnings

        import numpy as np
        import yuface
    except ImportError:
        return None
    warnings.filterwarnings("ignore")
    scale = min(1.0, DETECT_WIDTH / width)
    w, h = int(round(width * scale)) & ~1, int(round(height * scale)) & ~1
    raw = subprocess.check_output(["ffmpeg", "-loglevel", "error", "-i", clip, "-vf", f"scale={w}:{h}:flags=area",
                                   "-f", "rawvideo", "-pix_fmt", "bgr24", "-"])
    frames = np.frombuffer(raw, np.uint8).reshape(-1, h, w, 3)
    times = []
    for _ in range(repeat):
        start = time.process_time()
        for f in frames:
            yuface.detect(np.ascontiguousarray(f), conf=0.6)
        times.append(time.process_time() - start)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.path.join(ROOT, "..", "shared", "corpus"))
    ap.add_argument("--cvhost", default=os.path.join(ROOT, ".build", "release", "cvhost"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    source = os.path.join(os.path.realpath(args.corpus), "video", "faces_1920x1080.mp4")
    frames = 270
    print(f"CPU ms per frame (median of {args.repeat}); fps with instances=2 against one instance on this machine's {os.cpu_count()} cores")
    print(f"{'size':<10} {'null':>6} {'cnn':>7} {'roll=false':>10} {'host+plugin':>12} {'direct':>7} {'ratio':>6} {'haar':>7} "
          f"{'cnn fps':>8} {'x2 fps':>7} {'x2/x1':>6}")
    with tempfile.TemporaryDirectory(prefix="cvhost-face-speed-") as folder:
        for width, height in SIZES:
            clip = os.path.join(folder, f"faces_{width}x{height}.mp4")
            # Three times through the clip: the run's fixed costs (start, plugin creation) weigh less.
            subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-stream_loop", "2", "-i", source, "-vf", f"scale={width}:{height}",
                            "-c:v", "libx264", "-preset", "fast", "-crf", "18", clip], check=True)
            null_cpu, _ = cvhost_cpu(args.cvhost, "null:results=1", clip, args.repeat)
            cnn_cpu, cnn_wall = cvhost_cpu(args.cvhost, "face", clip, args.repeat)
            bare_cpu, _ = cvhost_cpu(args.cvhost, "face:roll=false", clip, args.repeat)
            _, two_wall = cvhost_cpu(args.cvhost, "face:instances=2", clip, args.repeat)
            haar_cpu, _ = cvhost_cpu(args.cvhost, "face:detector=haar", clip, args.repeat)
            direct = direct_cpu(clip, width, height, args.repeat)
            ms = lambda s: s / frames * 1000
            # The detector's work as the direct call does it (no roll from the eyes), with the plugin's conversions.
            plugin = bare_cpu - null_cpu
            direct_text = f"{ms(direct):>7.1f}" if direct is not None else f"{'-':>7}"
            ratio = f"{plugin / direct:>6.2f}" if direct else f"{'-':>6}"
            print(f"{width}x{height:<5} {ms(null_cpu):>6.1f} {ms(cnn_cpu):>7.1f} {ms(bare_cpu):>10.1f} {ms(plugin):>12.1f} {direct_text} {ratio} "
                  f"{ms(haar_cpu):>7.1f} {frames / cnn_wall:>8.1f} {frames / two_wall:>7.1f} {cnn_wall / two_wall:>6.2f}")


if __name__ == "__main__":
    main()
