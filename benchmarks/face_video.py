#!/usr/bin/env python3
"""cvhost's face plugin beside GStreamer's facedetect element on a corpus video, in one run.

Runs, in turn and REPEAT times each (median wall time reported):
  gst-launch-1.0 filesrc ! decodebin ! videoconvert ! facedetect display=false ! fakesink sync=false
  cvhost run --plugin face:OPTIONS --input VIDEO      (for each --plugin given)
and prints fps, CPU per frame, faces found (a box with IoU >= 0.3 against a ground-truth face of
that frame, each face counted once) and false alarms (boxes matching no face, outside the
ground truth's "ignore" regions).

    benchmarks/face_video.py [--video ../shared/corpus/video/faces_1920x1080.mp4] [--plugin SPEC ...] [--repeat 3]

By default cvhost runs twice: with its defaults (the CNN) and two instances, and with Haar's frontal
cascade only, as facedetect looks for faces (face:detector=haar,instances=2,profile=false).
"""
import argparse
import collections
import csv
import json
import os
import re
import subprocess

from benchlib import gst_element_messages, side_by_side

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def iou(a, b):
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    w = max(0.0, min(ax + aw, bx + bw) - max(ax, bx))
    h = max(0.0, min(ay + ah, by + bh) - max(ay, by))
    inter = w * h
    union = aw * ah + bw * bh - inter
    return inter / union if union > 0 else 0.0


def score(found, truth, ignore):
    """found, truth: {frame: [box]}; ignore: {frame: [box]}. Returns (hits, false alarms)."""
    hits = false = 0
    for frame, boxes in found.items():
        left = list(truth.get(frame, []))
        for box in sorted(boxes, key=lambda b: -b[2] * b[3]):
            best = max(range(len(left)), key=lambda i: iou(box, left[i]), default=None)
            if best is not None and iou(box, left[best]) >= 0.3:
                hits += 1
                left.pop(best)
                continue
            cx, cy = box[0] + box[2] / 2, box[1] + box[3] / 2
            if not any(x <= cx <= x + w and y <= cy <= y + h for x, y, w, h in ignore.get(frame, [])):
                false += 1
    return hits, false


def gst_faces(out):
    found = collections.defaultdict(list)
    for frame, line in gst_element_messages(out, '"facedetect', "faces="):
        plain = line.replace("\\", "")  # the structure text escapes ',', ' ', '=' and '('
        for x, y, w, h in re.findall(r"x=\(uint\)(\d+), y=\(uint\)(\d+), width=\(uint\)(\d+), height=\(uint\)(\d+)", plain):
            found[frame].append((float(x), float(y), float(w), float(h)))
    return found


def cvhost_faces(out):
    found = collections.defaultdict(list)
    for line in out.splitlines():
        e = json.loads(line)
        if e["event"] == "result" and e["type"] == "face":
            b = e["data"]["bounds"]
            found[e["seq"]].append((b["x"], b["y"], b["width"], b["height"]))
    return found


def id_switches(out, people):
    """How often a person's face_id changes from one frame where the person is found to the next.
    people: {frame: [(person, box)]} from the ground truth."""
    seen = collections.defaultdict(list)
    for line in out.splitlines():
        e = json.loads(line)
        if e["event"] == "result" and e["type"] == "face":
            b = e["data"]["bounds"]
            box = (b["x"], b["y"], b["width"], b["height"])
            match = max(people.get(e["seq"], []), key=lambda p: iou(box, p[1]), default=None)
            if match and iou(box, match[1]) >= 0.3:
                seen[match[0]].append((e["seq"], e["data"]["face_id"]))
    return sum(sum(1 for (_, a), (_, b) in zip(ids, ids[1:]) if a != b) for ids in (sorted(v) for v in seen.values()))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--video", default=os.path.join(ROOT, "..", "shared", "corpus", "video", "faces_1920x1080.mp4"))
    ap.add_argument("--cvhost", default=os.path.join(ROOT, ".build", "release", "cvhost"))
    ap.add_argument("--plugin", action="append", help="repeatable; default: face:instances=2 and face:detector=haar,instances=2,profile=false")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-gstreamer", action="store_true", help="measure cvhost only (for tuning)")
    args = ap.parse_args()
    truth, ignore = collections.defaultdict(list), collections.defaultdict(list)
    people = collections.defaultdict(list)
    frames = 0
    for row in csv.DictReader(open(os.path.splitext(args.video)[0] + "_gt.csv")):
        f = int(row["frame"])
        frames = max(frames, f + 1)
        if row["face_box"]:
            truth[f].append(tuple(json.loads(row["face_box"])))
            people[f].append((row["source"], tuple(json.loads(row["face_box"]))))
        ignore[f] = [tuple(b) for b in json.loads(row["ignore_boxes"] or "[]")]
    faces = sum(len(v) for v in truth.values())
    plugins = args.plugin or ["face:instances=2", "face:detector=haar,instances=2,profile=false"]
    runs = {f"cvhost {p}": ([args.cvhost, "run", "--plugin", p, "--input", args.video, "-q", "--metrics-interval", "0"], cvhost_faces)
            for p in plugins}
    if not args.skip_gstreamer:
        runs = {"gstreamer facedetect": (["gst-launch-1.0", "-m", "filesrc", f"location={args.video}", "!", "decodebin", "!",
                                           "videoconvert", "!", "facedetect", "display=false", "!", "fakesink", "sync=false"],
                                          gst_faces), **runs}
    print(f"{os.path.basename(args.video)}: {frames} frames, {faces} faces; median of {args.repeat} runs, alternating")
    fps = side_by_side(runs, frames, lambda found: score(found, truth, ignore), args.repeat)
    # The tracker: each person of the clip (six faces moving and zooming, made for the corpus) should
    # keep one face_id for as long as the person is found.
    for p in plugins:
        out = subprocess.run([args.cvhost, "run", "--plugin", p, "--input", args.video, "-q", "--metrics-interval", "0"],
                             capture_output=True, text=True).stdout
        print(f"cvhost {p}: {id_switches(out, people)} face_id switches over {len({q for v in people.values() for q, _ in v})} people")
    if not args.skip_gstreamer:
        base = fps["gstreamer facedetect"]
        for name in runs:
            if name != "gstreamer facedetect":
                print(f"speed-up of {name} over GStreamer: {fps[name] / base:.2f}x")


if __name__ == "__main__":
    main()
