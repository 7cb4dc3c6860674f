#!/usr/bin/env python3
"""cvhost's face plugin beside GStreamer's facedetect on the corpus's face photos (21 images, 3 sizes).

facedetect runs once per image (gst-launch-1.0 filesrc ! decodebin ! videoconvert ! facedetect);
cvhost runs once over all of them. Each box is scored as in face_video.py (IoU >= 0.3 against the
ground truth, "ignore" regions not counted as false alarms). Prints images/s, found and false.

    benchmarks/face_stills.py [--corpus ../shared/corpus] [--plugin face]
"""
import argparse
import collections
import csv
import glob
import json
import os
import time

from benchlib import timed
from face_video import gst_faces, score

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.path.join(ROOT, "..", "shared", "corpus"))
    ap.add_argument("--cvhost", default=os.path.join(ROOT, ".build", "release", "cvhost"))
    ap.add_argument("--plugin", default="face")
    args = ap.parse_args()
    corpus = os.path.realpath(args.corpus)
    images = sorted(glob.glob(os.path.join(corpus, "faces", "images", "*", "*.jpg")))
    index = {path: i for i, path in enumerate(images)}
    truth, ignore = collections.defaultdict(list), collections.defaultdict(list)
    for row in csv.DictReader(open(os.path.join(corpus, "faces", "gt.csv"))):
        i = index[os.path.realpath(os.path.join(corpus, row["image"]))]
        if row["face_box"] not in ("", "NONE"):  # NONE: an image with no face
            truth[i].append(tuple(json.loads(row["face_box"])))
        ignore[i] = [tuple(b) for b in json.loads(row["ignore_boxes"] or "[]")]
    print(f"corpus: {len(images)} images, {sum(len(v) for v in truth.values())} faces")
    print(f"{'tool':<30} {'images/s':>9} {'found':>6} {'false':>6}")

    gst = collections.defaultdict(list)
    start = time.perf_counter()
    for i, path in enumerate(images):
        out, _, _ = timed(["gst-launch-1.0", "-m", "filesrc", f"location={path}", "!", "decodebin", "!", "videoconvert", "!",
                           "facedetect", "display=false", "!", "fakesink"])
        gst[i] = [box for boxes in gst_faces(out).values() for box in boxes]
    gst_time = time.perf_counter() - start

    out, cv_time, _ = timed([args.cvhost, "run", "--plugin", args.plugin, "--input", os.path.join(corpus, "faces", "images", "*", "*.jpg"),
                             "-q", "--metrics-interval", "0"])
    cv = collections.defaultdict(list)
    for line in out.splitlines():
        e = json.loads(line)
        if e["event"] == "result" and e["type"] == "face":
            b = e["data"]["bounds"]
            cv[index[os.path.realpath(e["image"])]].append((b["x"], b["y"], b["width"], b["height"]))
    for name, found, elapsed in (("gstreamer facedetect", gst, gst_time), (f"cvhost {args.plugin}", cv, cv_time)):
        hits, false = score(found, truth, ignore)
        print(f"{name:<30} {len(images) / elapsed:>9.2f} {hits:>6} {false:>6}")


if __name__ == "__main__":
    main()
