#!/usr/bin/env python3
"""How many cameras one machine takes: N live 720p30 H.264 cameras, each with a detector at 5
detections a second (NudeNet's YOLOv8n at 320), tracked, with one counting line, three ways:

  one process     cvhost run --plugin detect:model=M,max_fps=5 --track detect --line ... --input c1=rtsp://... (xN):
                  one detect instance shared by every camera, the thread plan
  a process each  N times cvhost run ... --input c1=rtsp://... (what one cvhost@camN unit per camera gives)
  plain loops     N times the loop a user writes: cv2.VideoCapture(rtsp) reading every frame, and on
                  every sixth one letterbox, onnxruntime's session.run, decode, NMS (onnxruntime's
                  default threads: the cores)

The cameras: the corpus's faces_1280x720.mp4 (people), looped, served in real time by the tests'
RTSP server (Tests/Servers/rtsp_server.py: gst-rtsp-server on loopback, each client its own
stream from the start). For each way and each N in --counts, one run of --seconds after a warm-up:

  keeps up     every camera's detections within 5% of 5 a second, and no frame dropped late (cvhost:
               frames.dropped.late; a loop: it read its camera's 30 frames a second)
  det/s        the slowest camera's detections a second
  steal        the share of the cores' time the hypervisor gave to other machines during the run
               (/proc/stat): on a shared host, figures at the edge of keeping up move with it
  CPU ms/cam-s CPU (user + system, the process and its workers, /proc) per camera-second
  RSS MB/cam   resident memory of the processes (and workers) divided by N
  p50/p99 ms   from a frame's capture to its results, after the warm-up (cvhost: a result line's
               arrival at a reader of stdout less its ts, the frame's capture time; a loop: from its
               read to its boxes), the worst camera's

Printed: a row per way and N, then per way the most cameras that kept up. Runs one after another
(never together: two cores). Needs scripts/install-deps.sh (the .venv-onnx with onnxruntime and
NudeNet's model) and a release build (swift build -c release).

    benchmarks/cameras.py [--counts 1,2,4,6,8] [--seconds 20] [--ways one,each,loop] [--instances N] [--runtime openvino]
                          [--batch N] [--options K=V,...]

--instances N: the detect plugin's instances in cvhost (default cvhost's: one process, shared by the
cameras, an instance per core; a process each, one).
--batch N: the most frames of several cameras in one detect call (one process; default: cvhost's).
--options: more of the detect plugin's options, as written after detect: (batch_wait_ms=10).
--runtime openvino: cvhost's detect with runtime=openvino, the loops with OpenVINO's compiled model
(both at OpenVINO's own precision for the CPU).

"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYTHON = os.environ.get("CVHOST_PYTHON", os.path.join(ROOT, ".venv-onnx/bin/python3"))
CVHOST = os.environ.get("CVHOST", os.path.join(ROOT, ".build/release/cvhost"))
MODEL = os.path.join(ROOT, ".venv-onnx/lib/python3.11/site-packages/nudenet/320n.onnx")
VIDEO = os.path.join(ROOT, "../shared/corpus/video/faces_1280x720.mp4")
WARMUP = 8.0
RATE = 5.0

LOOP = r"""
import json, sys, time, cv2, numpy as np, onnxruntime as ort
url, model, seconds, warmup, out, runtime = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
size = 320
if runtime == "openvino":
    import openvino as ov
    core = ov.Core()
    m = core.read_model(model)
    m.reshape({m.inputs[0].any_name: [1, 3, size, size]})
    request = core.compile_model(m, "CPU", {"PERFORMANCE_HINT": "LATENCY"}).create_infer_request()
    infer = lambda blob: request.infer({0: blob})[0]
else:
    s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    infer = lambda blob: s.run(None, {name: blob})[0]
cap = cv2.VideoCapture(url, cv2.CAP_FFMPEG)
start = time.monotonic()
reads = detections = 0
latencies = []
n = 0
while True:
    ok, frame = cap.read()
    now = time.monotonic()
    if not ok:
        break
    n += 1
    counting = now - start >= warmup
    if counting:
        reads += 1
    if n % 6 == 0:
        h, w = frame.shape[:2]
        gain = min(size / w, size / h)
        nw, nh = round(w * gain), round(h * gain)
        img = cv2.resize(frame, (nw, nh), interpolation=cv2.INTER_LINEAR)
        top, left = (size - nh) // 2, (size - nw) // 2
        img = cv2.copyMakeBorder(img, top, size - nh - top, left, size - nw - left, cv2.BORDER_CONSTANT, value=(114, 114, 114))
        blob = np.ascontiguousarray(img[:, :, ::-1].transpose(2, 0, 1)[None], dtype=np.float32) / 255
        o = infer(blob)[0].T
        cls = o[:, 4:].argmax(1)
        score = o[np.arange(len(o)), 4 + cls]
        keep = score > 0.25
        boxes = o[keep, :4]
        xyxy = np.stack([boxes[:, 0] - boxes[:, 2] / 2, boxes[:, 1] - boxes[:, 3] / 2, boxes[:, 0] + boxes[:, 2] / 2, boxes[:, 1] + boxes[:, 3] / 2], 1)
        cv2.dnn.NMSBoxes(xyxy.tolist(), score[keep].tolist(), 0.25, 0.45)
        if counting:
            detections += 1
            latencies.append((time.monotonic() - now) * 1000)
    if now - start >= warmup + seconds:
        break
span = max(1e-9, time.monotonic() - start - warmup)
latencies.sort()
pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else None
json.dump({"reads": reads / span, "detections": detections / span, "p50": pick(0.5), "p99": pick(0.99)}, open(out, "w"))
"""


def tree(pid):
    """pid and every process below it."""
    found, frontier = [pid], [pid]
    while frontier:
        parent = frontier.pop()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent:
                found.append(int(entry))
                frontier.append(int(entry))
    return found


def cpu_and_rss(pids):
    """CPU seconds (user + system) and resident MB, summed over `pids` (gone ones count nothing)."""
    cpu, rss = 0.0, 0.0
    tick, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / tick
            rss += int(fields[21]) * page / 2**20
        except OSError:
            pass
    return cpu, rss


def camera_file(work, seconds):
    """The corpus clip looped to outlast the longest run, as it is (no re-encoding)."""
    path = os.path.join(work, "camera.mp4")
    loops = int((seconds + WARMUP + 30) / 3) + 1
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-stream_loop", str(loops), "-i", VIDEO, "-c", "copy", "-an", path], check=True)
    return path


def server(path):
    p = subprocess.Popen(["/usr/bin/python3", os.path.join(ROOT, "Tests/Servers/rtsp_server.py"), "--file", path],
                         stdout=subprocess.PIPE, text=True)
    port = int(p.stdout.readline().split()[1])
    return p, f"rtsp://127.0.0.1:{port}/codes"


RUNTIME = "onnxruntime"
EXTRA = ""


def cvhost_command(urls, out):
    cmd = [CVHOST, "run", "--plugin", f"detect:model={MODEL},max_fps={RATE:g},runtime={RUNTIME}{EXTRA}", "--track", "detect",
           "--line", "door=0.5,0.1 0.5,0.9", "--metrics-interval", "2", "--output", f"file:{out}", "--output", "-", "--results-only",
           "-q", "--reconnect"]
    for i, url in enumerate(urls):
        cmd += ["--input", f"c{i}={url}"]
    return cmd


def stamp_arrivals(stream, arrivals):
    """Reads result lines as they come: (source, seq) -> arrival less the frame's capture time, seconds (the first line of a frame)."""
    for line in stream:
        now = time.time()
        try:
            e = json.loads(line)
        except ValueError:
            continue
        arrivals.setdefault((e.get("source"), e.get("seq")), (now, now - e["ts"]))


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else None


def cvhost_camera_stats(out, warmup_end_ts):
    """Per camera: detections a second after the warm-up, frames dropped late."""
    lines = [json.loads(l) for l in open(out) if l.startswith("{")]
    per = {}
    for e in lines:
        if e.get("event") != "metrics" or e.get("plugin") != "detect":
            continue
        per.setdefault(e["source"], []).append(e)
    stats = {}
    for source, ms in per.items():
        after = [m for m in ms if m["ts"] >= warmup_end_ts]
        if len(after) < 2:
            continue
        a, b = after[0], after[-1]
        span = b["ts"] - a["ts"]
        late = b["frames"]["dropped"].get("late", 0) - a["frames"]["dropped"].get("late", 0)
        stats[source] = {"detections": (b["frames"]["processed"] - a["frames"]["processed"]) / span, "late": late}
    return stats


def stolen():
    """(steal, total) jiffies of every CPU so far (/proc/stat): time the hypervisor gave to others."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    return values[7], sum(values[:8])


def run_cvhost(urls, work, each, seconds):
    """cvhost with every camera in one process, or a process each."""
    groups = [[u] for u in urls] if each else [urls]
    procs, outs, readers, arrivals = [], [], [], []
    for i, group in enumerate(groups):
        out = os.path.join(work, f"out-{len(urls)}-{int(each)}-{i}.jsonl")
        if os.path.exists(out):
            os.remove(out)
        env = dict(os.environ, CVHOST_PYTHON=PYTHON)
        proc = subprocess.Popen(cvhost_command(group, out), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        arrivals.append({})
        readers.append(threading.Thread(target=stamp_arrivals, args=(proc.stdout, arrivals[-1]), daemon=True))
        readers[-1].start()
        procs.append(proc)
        outs.append(out)
    # The warm-up counts from the moment every camera has given its first result, as a loop's counts
    # from its camera opened and its model loaded: cvhost's start (8 RTSP sessions, the model compiled)
    # is not a camera falling behind.
    def ready():
        return all({f"c{i}" for i in range(len(group))} <= {s for (s, _) in list(arrived)} for group, arrived in zip(groups, arrivals))
    ready_by = time.monotonic() + 120
    while time.monotonic() < ready_by and not ready():
        time.sleep(0.1)
    time.sleep(WARMUP)
    warmup_end = time.time()
    pids = [p for proc in procs for p in tree(proc.pid)]
    cpu0, _ = cpu_and_rss(pids)
    t0 = time.monotonic()
    time.sleep(seconds)
    pids = [p for proc in procs for p in tree(proc.pid)]
    cpu1, rss = cpu_and_rss(pids)
    t1 = time.monotonic()
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    for r in readers:
        r.join(timeout=10)
    missing = {"detections": 0, "late": 1}
    cams = []
    for out, group, arrived in zip(outs, groups, arrivals):
        stats = cvhost_camera_stats(out, warmup_end)
        for i in range(len(group)):
            delays = [d for (source, _), (at, d) in arrived.items() if source == f"c{i}" and at >= warmup_end]
            cams.append(dict(stats.get(f"c{i}", missing), p50=percentile(delays, 0.5), p99=percentile(delays, 0.99)))
    return cams, (cpu1 - cpu0) * 1000 / (t1 - t0), rss


def run_loops(urls, work, seconds):
    procs, outs = [], []
    script = os.path.join(work, "loop.py")
    with open(script, "w") as f:
        f.write(LOOP)
    for i, url in enumerate(urls):
        out = os.path.join(work, f"loop-{len(urls)}-{i}.json")
        procs.append(subprocess.Popen([PYTHON, script, url, MODEL, str(seconds), str(WARMUP), out, RUNTIME], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True))
        outs.append(out)
    time.sleep(WARMUP)
    pids = [p for proc in procs for p in tree(proc.pid)]
    cpu0, _ = cpu_and_rss(pids)
    t0 = time.monotonic()
    time.sleep(seconds * 0.9)
    cpu1, rss = cpu_and_rss(pids)
    t1 = time.monotonic()
    for proc in procs:
        try:
            proc.wait(timeout=seconds + 60)
        except subprocess.TimeoutExpired:
            proc.kill()
    cams = []
    for out in outs:
        try:
            r = json.load(open(out))
        except (OSError, ValueError):
            r = {"reads": 0, "detections": 0, "p50": None, "p99": None}
        # A loop keeps up when it reads its camera's frames as they come (30 a second).
        cams.append({"detections": r["detections"], "late": 0 if r["reads"] >= 29.0 else 1, "p50": r["p50"], "p99": r["p99"],
                     "reads": r["reads"]})
    return cams, (cpu1 - cpu0) * 1000 / (t1 - t0), rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--counts", default="1,2,4,6,8")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--ways", default="one,each,loop")
    ap.add_argument("--instances", type=int, help="detect's instances (default: cvhost's)")
    ap.add_argument("--runtime", default="onnxruntime", choices=("onnxruntime", "openvino"))
    ap.add_argument("--batch", type=int)
    ap.add_argument("--options", default="")
    args = ap.parse_args()
    global RUNTIME, EXTRA
    RUNTIME = args.runtime
    EXTRA = ((f",instances={args.instances}" if args.instances else "") + (f",batch={args.batch}" if args.batch else "")
             + (f",{args.options}" if args.options else ""))
    for need, what in [(CVHOST, "a release build: swift build -c release"), (MODEL, "scripts/install-deps.sh (NudeNet in .venv-onnx)"),
                       (VIDEO, "the corpus beside the project")]:
        if not os.path.exists(need):
            sys.exit(f"{need} is missing: {what}")
    counts = [int(c) for c in args.counts.split(",")]
    ways = args.ways.split(",")
    names = {"one": "cvhost, one process", "each": "cvhost, a process each", "loop": f"plain loops (cv2 + {args.runtime})"}
    work = tempfile.mkdtemp(prefix="cvhost-cameras-")
    rows, best = [], {}
    try:
        clip = camera_file(work, args.seconds)
        for way in ways:
            for n in counts:
                srv, url = server(clip)
                steal0 = stolen()
                try:
                    if way == "loop":
                        cams, cpu, rss = run_loops([url] * n, work, args.seconds)
                    else:
                        cams, cpu, rss = run_cvhost([url] * n, work, way == "each", args.seconds)
                finally:
                    srv.terminate()
                    srv.wait()
                steal1 = stolen()
                steal = (steal1[0] - steal0[0]) / max(1, steal1[1] - steal0[1]) * 100
                slowest = min(c["detections"] for c in cams)
                kept = all(c["late"] == 0 and abs(c["detections"] - RATE) <= RATE * 0.05 for c in cams)
                p50 = max((c["p50"] for c in cams if c["p50"] is not None), default=None)
                p99 = max((c["p99"] for c in cams if c["p99"] is not None), default=None)
                rows.append((names[way], n, kept, slowest, cpu / n, rss / n, p50, p99, steal))
                if kept:
                    best[way] = max(best.get(way, 0), n)
                print(f"{names[way]:32} {n:3} cameras: {'keeps up' if kept else 'falls behind':12} det/s {slowest:5.2f}  "
                      f"CPU {cpu / n:6.0f} ms/cam-s  RSS {rss / n:6.0f} MB/cam  p50/p99 {p50 or 0:6.0f}/{p99 or 0:6.0f} ms  "
                      f"steal {steal:3.0f}%", flush=True)
        print()
        print(f"{'':32} {'N':>3} {'keeps up':>9} {'det/s':>6} {'CPU ms/cam-s':>13} {'RSS MB/cam':>11} {'p50 ms':>7} {'p99 ms':>7} {'steal':>6}")
        for name, n, kept, slowest, cpu, rss, p50, p99, steal in rows:
            print(f"{name:32} {n:3} {'yes' if kept else 'no':>9} {slowest:6.2f} {cpu:13.0f} {rss:11.0f} {p50 or 0:7.0f} {p99 or 0:7.0f} "
                  f"{steal:5.0f}%")
        print()
        for way in ways:
            print(f"most cameras kept up, {names[way]}: {best.get(way, 0)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
