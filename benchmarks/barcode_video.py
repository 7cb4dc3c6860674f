#!/usr/bin/env python3
"""cvhost's barcode plugin beside GStreamer's zbar element on a corpus video, in one run.

Runs, in turn and REPEAT times each (median wall time reported):
  gst-launch-1.0 filesrc ! decodebin ! videoconvert ! zbar ! fakesink sync=false
  cvhost run --plugin barcode:instances=N --input VIDEO
and prints fps, CPU seconds, and decoded code instances (a decode whose symbology and payload
match a code fully inside that frame in the ground truth; anything else is a false read).

    benchmarks/barcode_video.py [--video ../shared/corpus/video/bar_1280x720.mp4] [--instances 2] [--repeat 3]
"""
import argparse
import collections
import csv
import json
import os
import re

from benchlib import gst_element_messages, norm_symbology, score_codes, side_by_side

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gst_decodes(out):
    """Per-frame (symbology, payload) from `gst-launch-1.0 -m` element messages of zbar."""
    found = collections.defaultdict(list)
    for frame, line in gst_element_messages(out, "barcode", "symbol="):
        sym = re.search(r'type=\(string\)([^,]+)', line)
        payload = re.search(r'symbol=\(string\)(?:"((?:[^"\\]|\\.)*)"|([^,]+))', line)
        if sym and payload:
            text = payload.group(1) if payload.group(1) is not None else payload.group(2)
            text = text.replace('\\"', '"').replace("\\\\", "\\").replace("\\ ", " ")
            found[frame].append((norm_symbology(sym.group(1)), text))
    return found


def cvhost_decodes(out):
    found = collections.defaultdict(list)
    for line in out.splitlines():
        e = json.loads(line)
        if e["event"] == "result":
            found[e["seq"]].append((norm_symbology(e["data"]["symbology"]), e["data"]["text"] or ""))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--video", default=os.path.join(ROOT, "..", "shared", "corpus", "video", "bar_1280x720.mp4"))
    ap.add_argument("--cvhost", default=os.path.join(ROOT, ".build", "release", "cvhost"))
    ap.add_argument("--instances", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    truth_file = os.path.splitext(args.video)[0] + "_gt.csv"
    truth = collections.defaultdict(collections.Counter)
    frames = 0
    for row in csv.DictReader(open(truth_file)):
        frames = max(frames, int(row["frame"]) + 1)
        if row["symbology"] != "NONE" and row["fully_inside"] in ("1", "True", "true"):
            truth[int(row["frame"])][(norm_symbology(row["symbology"]), row["payload"])] += 1
    instances = sum(sum(c.values()) for c in truth.values())
    runs = {
        "gstreamer zbar": (["gst-launch-1.0", "-m", "filesrc", f"location={args.video}", "!", "decodebin", "!", "videoconvert",
                            "!", "zbar", "!", "fakesink", "sync=false"], gst_decodes),
        f"cvhost barcode:instances={args.instances}": (
            [args.cvhost, "run", "--plugin", f"barcode:instances={args.instances}", "--input", args.video, "-q",
             "--metrics-interval", "0"], cvhost_decodes),
    }
    print(f"{os.path.basename(args.video)}: {frames} frames, {instances} code instances fully in frame; "
          f"median of {args.repeat} runs, alternating")
    fps = side_by_side(runs, frames, lambda found: score_codes(found, truth), args.repeat, "decoded")
    names = list(runs)
    print(f"speed-up of cvhost over GStreamer: {fps[names[1]] / fps[names[0]]:.2f}x")


if __name__ == "__main__":
    main()
