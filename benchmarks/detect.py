#!/usr/bin/env python3
"""The detect plugin against the plain loop a user writes for the same model, on one video file.

    benchmarks/detect.py [--sizes 320,640] [--repeat 3] [--loops 3]
    benchmarks/detect.py --batches 1,2,4,8 [--seconds 3]

Model: NudeNet's trained YOLOv8n (its PyPI wheel carries 320n.onnx; scripts/make-onnx-venv.sh puts
it in .venv-onnx), fed at each size. Video: the corpus's faces_1280x720.mp4 (people), played
--loops times. Python: .venv-onnx's (Debian's python3, its OpenCV, onnxruntime from PyPI).
  loop        cv2.VideoCapture(file); per frame: letterbox with cv2 (resize, pad 114), BGR to RGB,
              scaled to 0..1, NCHW; session.run (intra-op threads T); decode [1, 4+C, N]; NMS per
              class (numpy); boxes back to the frame. The same steps the plugin takes.
  cvhost xI   cvhost run --plugin detect:model=M,size=S,threads=T,instances=I
Printed per size: frames per second (wall time of the whole command, start-up included, median of
--repeat runs, alternating), the ratio to the loop in the same run, CPU ms per frame, and how each
frame's time splits inside the plugin (CVHOST_DETECT_TIMING=1: its means of preparing the input,
session.run, and decoding the outputs; `pre+post` is their share of session.run's time).

--batches: the model alone at 320, run on N frames at once (what the detect plugin's process_batch
does with the frames of several cameras, `batch=N`), with onnxruntime and, where installed,
OpenVINO (a compiled model for each N), threads = the cores: ms per frame, and the ratio to one
frame a run, over --seconds of runs each after three to warm up. This chose the default `batch`.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

from benchlib import run

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYTHON = os.environ.get("CVHOST_PYTHON", os.path.join(ROOT, ".venv-onnx/bin/python3"))
CVHOST = os.environ.get("CVHOST", os.path.join(ROOT, ".build/release/cvhost"))
VIDEO = os.path.join(ROOT, "../shared/corpus/video/faces_1280x720.mp4")

LOOP = r"""
import sys, time, cv2, numpy as np, onnxruntime as ort
video, model, size, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
o = ort.SessionOptions()
o.intra_op_num_threads = threads
o.inter_op_num_threads = 1
s = ort.InferenceSession(model, sess_options=o, providers=["CPUExecutionProvider"])
name = s.get_inputs()[0].name
cap = cv2.VideoCapture(video)
frames = objects = 0
run_s = 0.0
while True:
    ok, frame = cap.read()
    if not ok:
        break
    h, w = frame.shape[:2]
    gain = min(size / w, size / h)
    nw, nh = round(w * gain), round(h * gain)
    img = cv2.resize(frame, (nw, nh), interpolation=cv2.INTER_LINEAR)
    top, left = round((size - nh) / 2 - 0.1), round((size - nw) / 2 - 0.1)
    img = cv2.copyMakeBorder(img, top, size - nh - top, left, size - nw - left, cv2.BORDER_CONSTANT, value=(114, 114, 114))
    blob = np.ascontiguousarray(img[:, :, ::-1].transpose(2, 0, 1)[None], dtype=np.float32) / 255
    t = time.perf_counter()
    out = s.run(None, {name: blob})[0][0].T
    run_s += time.perf_counter() - t
    cls = out[:, 4:].argmax(1)
    score = out[np.arange(len(out)), 4 + cls]
    keep = score > 0.25
    out, cls, score = out[keep], cls[keep], score[keep]
    boxes = np.concatenate([out[:, :2] - out[:, 2:4] / 2, out[:, :2] + out[:, 2:4] / 2], 1) + cls[:, None] * 7680.0
    order, kept = np.argsort(-score), []
    while order.size:
        i, rest = order[0], order[1:]
        kept.append(i)
        iw = np.clip(np.minimum(boxes[i, 2], boxes[rest, 2]) - np.maximum(boxes[i, 0], boxes[rest, 0]), 0, None)
        ih = np.clip(np.minimum(boxes[i, 3], boxes[rest, 3]) - np.maximum(boxes[i, 1], boxes[rest, 1]), 0, None)
        area = lambda b: (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
        order = rest[iw * ih / (area(boxes[i]) + area(boxes[rest]) - iw * ih) <= 0.45]
    found = (boxes[kept] - cls[kept][:, None] * 7680.0 - [left, top, left, top]) / gain
    objects += len(found)
    frames += 1
print(frames, objects, run_s / max(frames, 1) * 1e3)
"""


BATCHES = r"""
import sys, time, numpy as np
model, sizes, cores, seconds = sys.argv[1], [int(n) for n in sys.argv[2].split(",")], int(sys.argv[3]), float(sys.argv[4])
def timed(run, n):
    x = np.random.default_rng(0).random((n, 3, 320, 320), dtype=np.float32)
    for _ in range(3):
        run(x)
    start, frames = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        run(x)
        frames += n
    return (time.perf_counter() - start) / frames * 1e3
import onnxruntime as ort
o = ort.SessionOptions()
o.intra_op_num_threads, o.inter_op_num_threads = cores, 1
o.add_session_config_entry("session.intra_op.allow_spinning", "0")
s = ort.InferenceSession(model, sess_options=o, providers=["CPUExecutionProvider"])
for n in sizes:
    print("onnxruntime", n, timed(lambda x: s.run(None, {"images": x}), n), flush=True)
try:
    import openvino as ov
except ImportError:
    sys.exit(0)
core = ov.Core()
for n in sizes:
    m = core.read_model(model)
    m.reshape({"images": [n, 3, 320, 320]})
    request = core.compile_model(m, "CPU", {"INFERENCE_NUM_THREADS": cores, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}).create_infer_request()
    print("openvino", n, timed(lambda x: request.infer({0: x}), n), flush=True)
"""


def batches(model, sizes, seconds):
    cores = len(os.sched_getaffinity(0))
    out = subprocess.run([PYTHON, "-c", BATCHES, model, sizes, str(cores), str(seconds)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(out.stderr)
    print(f"NudeNet's YOLOv8n at 320, {cores} threads, {seconds:g} s of runs each: ms per frame (vs one frame a run)")
    alone = {}
    for runtime, n, ms in (line.split() for line in out.stdout.strip().split("\n")):
        alone.setdefault(runtime, float(ms))
        print(f"  {runtime:12} batch {n:>2}: {float(ms):6.2f} ms   {alone[runtime] / float(ms):4.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="320,640")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--loops", type=int, default=3, help="times the 90-frame video is played")
    ap.add_argument("--batches", help="the model alone on N frames a run, e.g. 1,2,4,8")
    ap.add_argument("--seconds", type=float, default=3, help="--batches: seconds of runs for each N")
    a = ap.parse_args()
    model = subprocess.run([PYTHON, "-c", "import nudenet, os; print(os.path.dirname(nudenet.__file__) + '/320n.onnx')"],
                           capture_output=True, text=True).stdout.strip()
    if not os.path.exists(model):
        sys.exit(f"NudeNet's model is not in {PYTHON}'s packages: run scripts/install-deps.sh (it makes .venv-onnx)")
    if a.batches:
        return batches(model, a.batches, a.seconds)
    if not os.path.exists(CVHOST):
        sys.exit(f"no cvhost build at {CVHOST}: run swift build -c release first (or set CVHOST)")
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as tmp:
        video = os.path.join(tmp, "clip.mp4")
        subprocess.run(["ffmpeg", "-v", "error", "-stream_loop", str(a.loops - 1), "-i", VIDEO, "-c", "copy", video], check=True)
        frames = 90 * a.loops
        env = dict(os.environ, CVHOST_PYTHON=PYTHON, CVHOST_DETECT_TIMING="1")
        print(f"{frames} frames of 1280x720 H.264 (faces_1280x720.mp4), NudeNet's YOLOv8n, {cores} cores, {PYTHON}; "
              f"median of {a.repeat} runs, start-up included")
        for size in (int(s) for s in a.sizes.split(",")):
            runs = {f"loop, {cores} threads": ([PYTHON, "-c", LOOP, video, model, str(size), str(cores)], None)}
            for instances in (1, 2):
                threads = max(1, cores // instances)
                plugin = f"detect:model={model},size={size},threads={threads},instances={instances}"
                runs[f"cvhost x{instances}, {threads} threads"] = (
                    [CVHOST, "run", "--plugin", plugin, "--input", video, "--metrics-interval", "0", "-q"], None)
            walls = {n: [] for n in runs}
            cpus = {n: [] for n in runs}
            split = {}
            for _ in range(a.repeat):
                for name, (cmd, _) in runs.items():
                    out, err, wall, cpu = run(cmd, env)
                    if name.startswith("loop"):
                        n, objects, run_ms = out.split()
                        split[name] = f"session.run {float(run_ms):.1f} ms, {objects} objects"
                        done = int(n)
                    else:
                        done = sum(int(n) for n in re.findall(r'"final":true,"frames":\{[^}]*"processed":(\d+)', out))
                        objects = out.count('"type":"object"')
                        timing = [tuple(float(v) for v in m) for m in re.findall(r"prepare ([\d.]+) ms, run ([\d.]+) ms, decode ([\d.]+) ms", err)]
                        if timing:
                            prep, rn, dec = (statistics.mean(t[i] for t in timing) for i in range(3))
                            split[name] = (f"prepare {prep:.1f} + decode {dec:.1f} ms = {(prep + dec) / rn * 100:.0f}% of "
                                           f"session.run {rn:.1f} ms, {objects} objects")
                    if done != frames:
                        sys.exit(f"{name}: {done} frames processed, not {frames}")
                    walls[name].append(wall)
                    cpus[name].append(cpu)
            fps = {n: frames / statistics.median(w) for n, w in walls.items()}
            loop = next(iter(runs))
            print(f"\ninput {size}x{size}")
            print("  run                      frames/s   vs loop   CPU ms/frame   inside")
            for name in runs:
                per_frame = statistics.median(cpus[name]) / frames * 1e3
                print(f"  {name:23}  {fps[name]:8.1f}   {fps[name] / fps[loop]:5.2f}x   {per_frame:12.1f}   {split.get(name, '')}")


if __name__ == "__main__":
    main()
