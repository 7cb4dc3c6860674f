#!/usr/bin/env python3
"""cvhost's tracker (--track) against supervision's ByteTrack, on the same detections.

    scripts/install-deps.sh --benchmarks && swift build -c release
    .venv-tracking/bin/python3 benchmarks/tracking.py [--fps 30,10,5,3] [--frames 600]

Scripted scenes with ground truth (those of Tests/CVHostAnalyticsTests, written again here, and a
crowd of 16 people crossing one another both ways), seen by a noisy detector (boxes jittered a few
pixels, 8% of an object's frames missed, a box of nothing a second), at each frame rate:
  cvhost       a replay plugin (benchmarks/python/replay.py) emits the boxes; `--track replay`
               (its defaults: high 0.4, min_hits 3, lost 1.5 s)
  supervision  sv.ByteTrack(frame_rate=FPS, lost_track_buffer=45, minimum_consecutive_frames=3):
               1.5 s at any rate, reported after 3 frames, as cvhost's defaults
both scored by motmetrics against the true boxes (IoU >= 0.5): IDF1, identity switches,
fragmentations, MOTA, summed over every scene at that rate. Then counts at a line (x = 640, from
y 100 to 600) on scenes made to break counting, against the truth: cvhost's `--line` and
supervision's LineZone on its ByteTrack's tracks, with its default triggering anchors (the box's
four corners) and with the bottom centre alone (cvhost's anchor): a car parked on the line with
its box jittering 5 px, a walker whose label flips between two classes, a walker reported at
0.3 (both trackers told the detector reports from 0.25), two walkers crossing, and three faces 70
px high moving 55 or 45 px across a sloped line and back five times (less than a box height). Then the time per
frame at 10, 50 and 200 boxes: cvhost-bench --tracking (the analytics stage, one zone and one
line) and supervision's update_with_detections on the same kind of frame, on one core each.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time

import motmetrics as mm
import numpy as np
import supervision as sv

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CVHOST = os.environ.get("CVHOST", os.path.join(ROOT, ".build/release/cvhost"))
BENCH = os.path.join(os.path.dirname(CVHOST), "cvhost-bench")


def path(points, speed, start=0.0, pauses=None):
    """Where a box's centre is at a time along points at speed (px/s), pausing at the end of leg i for pauses[i] s."""
    pauses = pauses or {}
    legs, t = [], start
    for i in range(len(points) - 1):
        (ax, ay), (bx, by) = points[i], points[i + 1]
        d = math.hypot(bx - ax, by - ay) / speed
        legs.append(((ax, ay), (bx, by), t, t + d, pauses.get(i, 0)))
        t += d + pauses.get(i, 0)

    def at(time):
        for (ax, ay), (bx, by), begin, end, pause in legs:
            if begin <= time <= end:
                f = (time - begin) / max(end - begin, 1e-9)
                return ax + f * (bx - ax), ay + f * (by - ay)
            if end < time <= end + pause:
                return bx, by
        return None
    return at


def scenes():
    """(name, seconds, objects): each object (width, height, where(t) -> centre or None)."""
    person = lambda at: (60, 160, at)
    walk = path([(100, 400), (1200, 400)], 100)
    crowd = []
    rng = random.Random(3)
    for i in range(16):
        y = 180 + 30 * i
        left = i % 2 == 0
        crowd.append(person(path([(60 if left else 1220, y), (1220 if left else 60, y)], rng.uniform(80, 160), start=rng.uniform(0, 4))))
    return [
        ("crossing", 9, [person(path([(300, 400), (1000, 400)], 100)), person(path([(1000, 440), (300, 440)], 100, start=0.5))]),
        ("stop on the line", 11, [person(path([(300, 400), (640, 400), (1000, 400)], 100, pauses={0: 3}))]),
        ("hidden 0.9 s", 11.5, [person(lambda t: None if 4.0 <= t < 4.9 else walk(t)),
                                person(path([(1100, 640), (200, 640)], 100, start=1))]),
        ("parked and passing", 22, [(160, 100, path([(300, 500), (950, 500), (950, 100)], 150, pauses={0: 12})),
                                    (160, 100, path([(1250, 450), (650, 450)], 150, start=2))]),
        ("crowd of 16", 16, crowd),
    ]


def detect(objects, seconds, fps, seed):
    """Per frame: the true boxes {id: (x, y, w, h)} and the detector's [x, y, w, h, confidence, truth]."""
    rng = random.Random(seed)
    truth, seen = [], []
    for n in range(int(seconds * fps)):
        t = n / fps
        boxes, dets = {}, []
        for i, (w, h, at) in enumerate(objects):
            c = at(t)
            if c is None:
                continue
            boxes[i] = (c[0] - w / 2, c[1] - h / 2, w, h)
            if rng.random() < 0.08:
                continue
            j = lambda: rng.uniform(-3, 3)
            dets.append([c[0] - w / 2 + j(), c[1] - h / 2 + j(), w + j(), h + j(), 0.8, i])
        if rng.random() < 1.0 / fps:
            dets.append([rng.uniform(0, 1200), rng.uniform(0, 600), 50, 50, 0.45, -1])
        truth.append(boxes)
        seen.append(dets)
    return truth, seen


def run_cvhost(frames, fps, folder):
    """{frame: [(track id, box)]} from cvhost --track, fed the frames' boxes by the replay plugin."""
    boxes = os.path.join(folder, "boxes.json")
    with open(boxes, "w") as f:
        json.dump(frames, f)
    env = dict(os.environ, CVHOST_PYTHON="/usr/bin/python3")
    cmd = [CVHOST, "run", "--plugin", f"{HERE}/python/replay.py:boxes={boxes}", "--input", f"testsrc:320x240@{fps:g}:unpaced",
           "--max-frames", str(len(frames)), "--metrics-interval", "0", "-q", "--track", "replay"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    tracked = {}
    for line in out.splitlines():
        e = json.loads(line)
        if e["event"] == "result" and "track_id" in e["data"]:
            b = e["data"]["bounds"]
            tracked.setdefault(e["seq"], []).append((e["data"]["track_id"], (b["x"], b["y"], b["width"], b["height"])))
    return tracked


def run_supervision(frames, fps):
    tracker = sv.ByteTrack(frame_rate=fps, lost_track_buffer=45, minimum_consecutive_frames=3)
    tracked = {}
    for n, dets in enumerate(frames):
        xyxy = np.array([[x, y, x + w, y + h] for x, y, w, h, _, _ in dets], dtype=float).reshape(-1, 4)
        d = sv.Detections(xyxy=xyxy, confidence=np.array([c for *_, c, _ in dets], dtype=float),
                          class_id=np.zeros(len(dets), dtype=int))
        out = tracker.update_with_detections(d)
        tracked[n] = [(int(t), (a[0], a[1], a[2] - a[0], a[3] - a[1])) for t, a in zip(out.tracker_id, out.xyxy) if t is not None and t >= 0]
    return tracked


def score(truth, tracked, name):
    acc = mm.MOTAccumulator(auto_id=True)
    for n, boxes in enumerate(truth):
        gt_ids = list(boxes)
        hyp = tracked.get(n, [])
        distances = mm.distances.iou_matrix([boxes[i] for i in gt_ids], [b for _, b in hyp], max_iou=0.5)
        acc.update(gt_ids, [i for i, _ in hyp], distances)
    return acc


LINE = ((640, 100), (640, 600))


SLOPE = ((400, 150), (900, 600))


def small_moves(move):
    """Three faces (60 x 70) seen 2 s, then moving `move` px right across SLOPE and back five times, resting 1 s at each end."""
    faces = []
    for k, y in enumerate([250, 380, 510]):
        line_x = 400 + (y + 35 - 150) * 500 / 450
        left, right = (line_x - move / 2, y), (line_x + move / 2, y)
        points = [left, left] + [right, left] * 5
        faces.append((60, 70, path(points, move, start=0.2 * k, pauses={i: 2 if i == 0 else 1 for i in range(len(points))})))
    return faces


def counting_scenes():
    """(name, seconds, objects, truth count, jitter, confidence, labels, line): objects as in scenes()."""
    person = lambda at: (60, 160, at)
    return [
        ("parked on the line", 10, [(80, 40, path([(640, 380), (640, 381)], 120, pauses={0: 10}))], 0, 5, 0.8, None, LINE),
        ("label flips", 9, [person(path([(300, 400), (1000, 400)], 100))], 1, 3, 0.8, [("man", 0.7), ("woman", 0.3)], LINE),
        ("reported at 0.3", 9, [person(path([(300, 400), (1000, 400)], 100))], 1, 3, 0.3, None, LINE),
        ("two crossing", 9, [person(path([(300, 400), (1000, 400)], 100)), person(path([(1000, 440), (300, 440)], 100, start=0.5))], 2, 3, 0.8, None, LINE),
        ("small moves 55 px", 24, small_moves(55), 30, 2, 0.8, None, SLOPE),
        ("small moves 45 px", 24, small_moves(45), 30, 2, 0.8, None, SLOPE),
    ]


def counting_frames(objects, seconds, fps, jitter, confidence, labels, seed):
    rng = random.Random(seed)
    frames = []
    for n in range(int(seconds * fps)):
        t = n / fps
        dets = []
        for i, (w, h, at) in enumerate(objects):
            c = at(t)
            if c is None or rng.random() < 0.05:
                continue
            j = lambda: rng.uniform(-jitter, jitter)
            label = "person"
            if labels:
                pick = rng.random()
                label = labels[-1][0]
                for name, share in labels:
                    if pick < share:
                        label = name
                        break
                    pick -= share
            dets.append([c[0] - w / 2 + j(), c[1] - h / 2 + j(), w + j(), h + j(), confidence, i, label])
        frames.append(dets)
    return frames


def count_cvhost(frames, fps, folder, weak, line):
    boxes = os.path.join(folder, "counting.json")
    with open(boxes, "w") as f:
        json.dump(frames, f)
    env = dict(os.environ, CVHOST_PYTHON="/usr/bin/python3")
    (ax, ay), (bx, by) = line
    track = "replay:high=0.25" if weak else "replay"
    cmd = [CVHOST, "run", "--plugin", f"{HERE}/python/replay.py:boxes={boxes}", "--input", f"testsrc:1280x720@{fps:g}:unpaced",
           "--max-frames", str(len(frames)), "--metrics-interval", "0", "-q", "--track", track, "--line", f"door={ax},{ay} {bx},{by}",
           "--events"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False).stdout
    return sum(1 for line in out.splitlines() if '"event":"line.crossed"' in line)


def count_supervision(frames, fps, anchors, weak, line):
    tracker = sv.ByteTrack(track_activation_threshold=0.15 if weak else 0.25, frame_rate=fps, lost_track_buffer=45,
                           minimum_consecutive_frames=3)
    (ax, ay), (bx, by) = line
    zone = sv.LineZone(start=sv.Point(ax, ay), end=sv.Point(bx, by), **({"triggering_anchors": anchors} if anchors else {}))
    names = {}
    for dets in frames:
        xyxy = np.array([[x, y, x + w, y + h] for x, y, w, h, *_ in dets], dtype=float).reshape(-1, 4)
        ids = np.array([names.setdefault(d[6], len(names)) for d in dets], dtype=int)
        d = sv.Detections(xyxy=xyxy, confidence=np.array([d[4] for d in dets], dtype=float), class_id=ids)
        zone.trigger(tracker.update_with_detections(d))
    return zone.in_count + zone.out_count


def timing(boxes, frames=600):
    """supervision's ByteTrack: ms per frame with `boxes` moving boxes (the same kind as cvhost-bench --tracking)."""
    rng = random.Random(1)
    side = math.ceil(math.sqrt(boxes))
    start = [(40 + (i % side) * 1200 / side, 40 + (i // side) * 640 / side) for i in range(boxes)]
    velocity = [(rng.uniform(-2, 2), rng.uniform(-2, 2)) for _ in range(boxes)]
    made = []
    for n in range(frames + 30):
        xyxy = np.array([[sx + vx * n + rng.uniform(0, 2), sy + vy * n + rng.uniform(0, 2), 0, 0]
                         for (sx, sy), (vx, vy) in zip(start, velocity)], dtype=float)
        xyxy[:, 2], xyxy[:, 3] = xyxy[:, 0] + 30, xyxy[:, 1] + 60
        made.append(sv.Detections(xyxy=xyxy, confidence=np.array([rng.uniform(0.6, 1) for _ in range(boxes)]),
                                  class_id=np.zeros(boxes, dtype=int)))
    tracker = sv.ByteTrack(frame_rate=30, lost_track_buffer=45, minimum_consecutive_frames=3)
    for n in range(30):
        tracker.update_with_detections(made[n])
    begin = time.perf_counter()
    for n in range(30, frames + 30):
        tracker.update_with_detections(made[n])
    return (time.perf_counter() - begin) * 1e3 / frames


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fps", default="30,10,5,3")
    ap.add_argument("--frames", type=int, default=600, help="frames timed at each box count")
    ap.add_argument("--parts", default="tracking,counting,timing", help="which tables: tracking, counting, timing (comma-separated)")
    a = ap.parse_args()
    parts = set(a.parts.split(","))
    if not os.path.exists(CVHOST) or not os.path.exists(BENCH):
        sys.exit(f"no release build at {CVHOST}: run swift build -c release first")
    print(f"supervision {sv.__version__}, motmetrics {mm.__version__}; scenes: {', '.join(s[0] for s in scenes())}")
    print("  fps  tracker       IDF1   id switches  fragmentations   MOTA")
    with tempfile.TemporaryDirectory() as folder:
        for fps in [float(x) for x in a.fps.split(",")] if "tracking" in parts else []:
            accs = {"cvhost": [], "supervision": []}
            for k, (name, seconds, objects) in enumerate(scenes()):
                truth, frames = detect(objects, seconds, fps, seed=k)
                accs["cvhost"].append(score(truth, run_cvhost(frames, fps, folder), name))
                accs["supervision"].append(score(truth, run_supervision(frames, fps), name))
            for who, acc in accs.items():
                m = mm.metrics.create().compute_many(acc, metrics=["idf1", "num_switches", "num_fragmentations", "mota"],
                                                     generate_overall=True).loc["OVERALL"]
                print(f"  {fps:3g}  {who:12}  {m['idf1']:.3f}  {int(m['num_switches']):11d}  {int(m['num_fragmentations']):14d}  {m['mota']:.3f}")
    print("counts at a line (truth; cvhost; supervision LineZone with its default corner anchors, and bottom centre alone)")
    print("  fps  scene                truth  cvhost  sv corners  sv bottom-centre")
    with tempfile.TemporaryDirectory() as folder:
        for fps in [float(x) for x in a.fps.split(",")] if "counting" in parts else []:
            for k, (name, seconds, objects, truth, jitter, confidence, labels, line) in enumerate(counting_scenes()):
                frames = counting_frames(objects, seconds, fps, jitter, confidence, labels, seed=100 + k)
                weak = confidence < 0.4
                mine = count_cvhost(frames, fps, folder, weak, line)
                corners = count_supervision(frames, fps, None, weak, line)
                bottom = count_supervision(frames, fps, [sv.Position.BOTTOM_CENTER], weak, line)
                print(f"  {fps:3g}  {name:19}  {truth:5d}  {mine:6d}  {corners:10d}  {bottom:15d}")
    print("time per frame, one core (ms)")
    print("  boxes   cvhost   supervision")
    for boxes in (10, 50, 200) if "timing" in parts else ():
        out = subprocess.run([BENCH, "--tracking", str(boxes), str(a.frames)], capture_output=True, text=True, check=True).stdout
        mine = float(out.split(":")[1].split("ms")[0])
        print(f"  {boxes:5d}  {mine:7.3f}   {timing(boxes, a.frames):7.3f}")


if __name__ == "__main__":
    main()
