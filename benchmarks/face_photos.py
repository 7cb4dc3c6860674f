#!/usr/bin/env python3
"""Face detection recall and false detections on real photos and harder versions of them, for
OpenCV's Haar cascades (face:detector=haar), the CNN with cvhost's defaults (face), and the CNN
library called directly (libfacedetection through the yuface wheel, at each image's own size,
confidence 0.6), in one run.

The photos: the corpus's face photos (../shared/corpus/faces: scikit-image's astronaut, LFW
faces, OpenCV's sample photos; 21 images, 96 annotated faces). The versions, made here with
FFmpeg's filters from each photo and its boxes:
  small     half the size
  turned    rotated by 30 degrees, left and right in turn (boxes: the rotated box's bounding box)
  dark      a quarter of the light, with sensor-like noise
  blurred   a Gaussian blur of sigma width/400
  occluded  a black bar over the lower half of each face (a mask, a hand)
  mirrored  flipped left to right (also: how far yaw(mirrored) is from -yaw)
A hit is IoU >= 0.3 with a face (each face once); a detection matching no face and outside the
truth's "ignore" regions is false. Also prints, for the turned set, the error of each detector's
roll against the angle the photo was turned by (relative to the same face upright).

    python3 -m pip install yuface==2023.5.1 numpy     (the direct call; skipped without it)
    benchmarks/face_photos.py [--corpus ../shared/corpus] [--cvhost .build/release/cvhost] [--only 640x480] [--also face:OPTIONS]
"""
import argparse
import collections
import json
import math
import os
import subprocess
import sys
import tempfile

from face_video import iou

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETS = ["photos", "small", "turned", "dark", "blurred", "occluded", "mirrored"]


def size_of(path):
    out = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height",
                                   "-of", "csv=p=0", path], text=True)
    w, h = out.strip().split(",")[:2]
    return int(w), int(h)


def rotated_box(box, angle, w, h):
    """The bounding box of `box` turned by `angle` degrees (clockwise, about the image's centre), clipped."""
    x, y, bw, bh = box
    a = math.radians(angle)
    cx, cy = w / 2, h / 2
    pts = []
    for px, py in ((x, y), (x + bw, y), (x, y + bh), (x + bw, y + bh)):
        dx, dy = px - cx, py - cy
        pts.append((cx + dx * math.cos(a) - dy * math.sin(a), cy + dx * math.sin(a) + dy * math.cos(a)))
    x0, y0 = min(p[0] for p in pts), min(p[1] for p in pts)
    x1, y1 = max(p[0] for p in pts), max(p[1] for p in pts)
    cx0, cy0, cx1, cy1 = max(0, x0), max(0, y0), min(w, x1), min(h, y1)
    if cx1 <= cx0 or cy1 <= cy0 or (cx1 - cx0) * (cy1 - cy0) < 0.5 * (x1 - x0) * (y1 - y0):
        return None
    return (cx0, cy0, cx1 - cx0, cy1 - cy0)


def make_sets(corpus, folder, only=None):
    """Writes every version of every photo (of the size `only`, e.g. 640x480, when given) under
    folder/SET/; returns {set: {file: (faces, ignore, angle)}}."""
    gt = json.load(open(os.path.join(corpus, "faces", "gt.json")))
    sets = {s: {} for s in SETS}
    for i, entry in enumerate(gt["images"]):
        if only and f"/{only}/" not in entry["image"]:
            continue
        src = os.path.join(corpus, entry["image"])
        w, h = size_of(src)
        faces = [tuple(f) for f in entry["faces"]]
        ignore = [tuple(b) for b in entry.get("ignore", [])]
        name = os.path.splitext(os.path.basename(src))[0] + ".png"
        angle = 30 if i % 2 == 0 else -30
        bars = ",".join(f"drawbox=x={x:.0f}:y={y + bh * 0.5:.0f}:w={bw:.0f}:h={bh * 0.5:.0f}:color=black:t=fill"
                        for x, y, bw, bh in faces) or "null"
        versions = {
            "photos": ("null", faces, ignore, 0),
            "small": ("scale=iw/2:ih/2:flags=area", [tuple(v / 2 for v in f) for f in faces], [tuple(v / 2 for v in b) for b in ignore], 0),
            "turned": (f"rotate={angle}*PI/180:fillcolor=gray", [b for b in (rotated_box(f, angle, w, h) for f in faces) if b],
                       [b for b in (rotated_box(f, angle, w, h) for f in ignore) if b], angle),
            "dark": ("lutrgb=r=val*0.25:g=val*0.25:b=val*0.25,noise=alls=10:allf=t", faces, ignore, 0),
            "blurred": (f"gblur=sigma={w / 400:.2f}", faces, ignore, 0),
            "occluded": (bars, faces, ignore, 0),
            "mirrored": ("hflip", [(w - x - bw, y, bw, bh) for x, y, bw, bh in faces], [(w - x - bw, y, bw, bh) for x, y, bw, bh in ignore], 0),
        }
        for s, (vf, f, ig, a) in versions.items():
            os.makedirs(os.path.join(folder, s), exist_ok=True)
            out = os.path.join(folder, s, name)
            subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", src, "-vf", vf, out], check=True)
            sets[s][out] = (f, ig, a)
    return sets


def cvhost_faces(cvhost, plugin, folder):
    """{file: [(box, roll or None, yaw or None)]} from one cvhost run over a folder."""
    out = subprocess.run([cvhost, "run", "--plugin", plugin, "--input", folder + "/", "-q", "--metrics-interval", "0"],
                         capture_output=True, text=True)
    if out.returncode not in (0, 22):
        sys.exit(f"cvhost failed ({out.returncode}): {out.stderr[-500:]}")
    found = collections.defaultdict(list)
    for line in out.stdout.splitlines():
        e = json.loads(line)
        if e.get("event") == "result" and e.get("type") == "face":
            d = e["data"]
            b = d["bounds"]
            found[e["image"]].append(((b["x"], b["y"], b["width"], b["height"]), d["roll_angle"], d["yaw_angle"]))
    return found


def direct_faces(files):
    """The CNN called directly on each image at its own size (yuface), confidence 0.6; None without yuface."""
    try:
        import warnings

        import numpy as np
        import yuface
    except ImportError:
        return None
    warnings.filterwarnings("ignore")  # yuface warns of images over 960 pixels
    found = {}
    for path in files:
        w, h = size_of(path)
        raw = subprocess.check_output(["ffmpeg", "-loglevel", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "bgr24", "-"])
        img = np.frombuffer(raw, np.uint8).reshape(h, w, 3).copy()
        _, boxes, marks = yuface.detect(img, conf=0.6)
        found[path] = []
        for b, l in zip(boxes, marks):
            roll = math.degrees(math.atan2(float(l[3]) - float(l[1]), float(l[2]) - float(l[0])))
            found[path].append(((float(b[0]), float(b[1]), float(b[2]), float(b[3])), roll, None))
    return found


def match(found, faces, ignore):
    """Pairs (truth index, detection) for hits, and the count of false detections."""
    left = list(range(len(faces)))
    pairs, false = [], 0
    for det in sorted(found, key=lambda d: -d[0][2] * d[0][3]):
        best = max(left, key=lambda i: iou(det[0], faces[i]), default=None)
        if best is not None and iou(det[0], faces[best]) >= 0.3:
            pairs.append((best, det))
            left.remove(best)
            continue
        cx, cy = det[0][0] + det[0][2] / 2, det[0][1] + det[0][3] / 2
        if not any(x <= cx <= x + w and y <= cy <= y + h for x, y, w, h in ignore):
            false += 1
    return pairs, false


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.path.join(ROOT, "..", "shared", "corpus"))
    ap.add_argument("--cvhost", default=os.path.join(ROOT, ".build", "release", "cvhost"))
    ap.add_argument("--only", metavar="WxH", help="only the photos of this size (640x480: no scaling by cvhost, as with most photos)")
    ap.add_argument("--also", action="append", default=[], metavar="PLUGIN", help="another face plugin spec to score (face:min_confidence=0.5)")
    args = ap.parse_args()
    corpus = os.path.realpath(args.corpus)
    with tempfile.TemporaryDirectory(prefix="cvhost-faces-") as folder:
        sets = make_sets(corpus, folder, args.only)
        detectors = {"haar (face:detector=haar)": lambda s: cvhost_faces(args.cvhost, "face:detector=haar", os.path.join(folder, s)),
                     "cnn (face, cvhost's defaults)": lambda s: cvhost_faces(args.cvhost, "face", os.path.join(folder, s)),
                     "cnn called directly (yuface, 0.6)": lambda s: direct_faces(sets[s].keys())}
        for spec in args.also:
            detectors[spec] = lambda s, spec=spec: cvhost_faces(args.cvhost, spec, os.path.join(folder, s))
        results = {}
        for name, run in detectors.items():
            results[name] = {s: run(s) for s in SETS}
        print(f"{'set':<10} {'faces':>5}   " + "   ".join(f"{n:>34}" for n in detectors))
        totals = collections.defaultdict(lambda: [0, 0])
        hard = collections.defaultdict(lambda: [0, 0])
        for s in SETS:
            faces = sum(len(v[0]) for v in sets[s].values())
            cells = []
            for name in detectors:
                if results[name][s] is None:
                    cells.append(f"{'(yuface not installed)':>34}")
                    continue
                hits = false = 0
                for path, (f, ig, _) in sets[s].items():
                    pairs, fa = match(results[name][s].get(path, []), f, ig)
                    hits += len(pairs)
                    false += fa
                totals[name][0] += hits
                totals[name][1] += false
                if s not in ("photos", "mirrored"):
                    hard[name][0] += hits
                    hard[name][1] += false
                cells.append(f"{f'{hits}/{faces} found, {false} false':>34}")
            print(f"{s:<10} {faces:>5}   " + "   ".join(cells))
        print(f"{'harder (small+turned+dark+blurred+occluded)':<44} " + "   ".join(
            f"{n}: {hard[n][0]} found, {hard[n][1]} false" for n in detectors if results[n]['photos'] is not None))

        # Roll on the turned set: the turned face's roll minus the same face's roll upright, against the angle.
        print("roll error on the turned set (degrees, |measured change - 30|): ", end="")
        parts = []
        for name in detectors:
            if results[name]["turned"] is None:
                continue
            errors = []
            for (path, (f, ig, angle)), (upath, (uf, uig, _)) in zip(sets["turned"].items(), sets["photos"].items()):
                upright = dict(match(results[name]["photos"].get(upath, []), uf, uig)[0])
                rotated_truth = [rotated_box(b, angle, *size_of(upath)) for b in uf]
                for ti, det in match(results[name]["turned"].get(path, []), f, ig)[0]:
                    # Which upright face this turned one is: its truth box turned.
                    ui = next((k for k, rb in enumerate(rotated_truth) if rb and iou(rb, f[ti]) > 0.9), None)
                    if ui is None or ui not in upright or det[1] is None or upright[ui][1] is None:
                        continue
                    errors.append(abs((det[1] - upright[ui][1]) - angle))
            if errors:
                errors.sort()
                parts.append(f"{name.split(' (')[0]}: median {errors[len(errors) // 2]:.1f}, mean {sum(errors) / len(errors):.1f} over {len(errors)} faces")
        print("; ".join(parts))
        for name in detectors:
            if results[name]["mirrored"] is None or "haar" in name or "directly" in name:
                continue
            diffs = []
            for (path, (f, ig, _)), (upath, (uf, uig, _)) in zip(sets["mirrored"].items(), sets["photos"].items()):
                upright = dict(match(results[name]["photos"].get(upath, []), uf, uig)[0])
                for ti, det in match(results[name]["mirrored"].get(path, []), f, ig)[0]:
                    if ti in upright and det[2] is not None and upright[ti][2] is not None:
                        diffs.append(abs(det[2] + upright[ti][2]))
            if diffs:
                diffs.sort()
                print(f"yaw, {name}: |yaw(mirrored) + yaw| median {diffs[len(diffs) // 2]:.1f}, mean {sum(diffs) / len(diffs):.1f} degrees over {len(diffs)} faces")


if __name__ == "__main__":
    main()
