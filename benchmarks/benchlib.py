"""Shared by the benchmarks: run a command, timed (wall and CPU of the child), print a table, and
read still images with zbarimg and with cvhost."""
import collections
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET


def cpu_seconds(pid):
    """CPU seconds (user + system) process `pid` has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    """A loopback TCP port nobody listens on now (for a server a benchmark starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, env=None):
    """Runs cmd; returns (stdout, stderr, wall seconds, CPU seconds of the child and its children).
    Exits on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    return proc.stdout, proc.stderr, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def timed(cmd):
    """Runs cmd; returns (stdout, wall seconds, CPU seconds of the child). Exits on failure."""
    out, _, wall, cpu = run(cmd)
    return out, wall, cpu


def gst_element_messages(out, *markers, fps=30):
    """(frame, line) for each `gst-launch-1.0 -m` element message in out that contains every
    marker; the frame number comes from the message's buffer timestamp at fps."""
    for line in out.splitlines():
        ts = re.search(r"timestamp=\(guint64\)(\d+)", line)
        if ts and all(m in line for m in markers):
            yield round(int(ts.group(1)) / 1e9 * fps), line


def norm_symbology(symbology):
    """QR-Code, QRCODE and qrcode all become QRCODE."""
    return symbology.replace("-", "").replace("_", "").upper()


def score_codes(found, truth):
    """found: {key: [(symbology, payload)]}; truth: {key: Counter((symbology, payload))}. Each true
    code counts once per key; anything else is a false read. Returns (correct, false)."""
    correct = false = 0
    for key, codes in found.items():
        left = collections.Counter(truth.get(key, {}))
        for code in codes:
            if left[code] > 0:
                left[code] -= 1
                correct += 1
            else:
                false += 1
    return correct, false


def side_by_side(runs, frames, score, repeat, found_label="found"):
    """Runs each of runs = {name: (command, parse)} `repeat` times, alternating, and prints fps and
    CPU per frame (medians) and score(parse(stdout)) = (found, false) of the last run.
    Returns {name: fps}."""
    results = {name: [] for name in runs}
    for _ in range(repeat):
        for name, (cmd, parse) in runs.items():
            out, wall, cpu = timed(cmd)
            results[name].append((wall, cpu, score(parse(out))))
    width = max(28, max(len(n) for n in runs) + 1)
    print(f"{'pipeline':<{width}} {'fps':>7} {'CPU-ms/frame':>13} {found_label:>8} {'false':>6}")
    fps = {}
    for name, rs in results.items():
        wall = statistics.median(r[0] for r in rs)
        cpu = statistics.median(r[1] for r in rs)
        found, false = rs[-1][2]
        fps[name] = frames / wall
        print(f"{name:<{width}} {frames / wall:>7.2f} {cpu / frames * 1000:>13.1f} {found:>8} {false:>6}")
    return fps


def zbarimg_decodes(images, normalize):
    """Reads `images` with zbarimg (100 at a time); returns ({realpath: [normalize(symbology, payload)]}, seconds)."""
    decodes = collections.defaultdict(list)
    start = time.perf_counter()
    for i in range(0, len(images), 100):
        out = subprocess.run(["zbarimg", "--xml", "-q"] + images[i:i + 100], capture_output=True, text=True).stdout
        root = ET.fromstring(out.replace("xmlns='http://zbar.sourceforge.net/2008/barcode'", ""))
        for source in root.iter("source"):
            for symbol in source.iter("symbol"):
                decodes[os.path.realpath(source.get("href"))].append(normalize(symbol.get("type"), symbol.find("data").text or ""))
    return decodes, time.perf_counter() - start


def cvhost_image_decodes(binary, plugin, images, normalize):
    """Runs `cvhost run --plugin PLUGIN --input IMAGES` (a folder or a glob); returns
    ({realpath: [normalize(symbology, text)]}, seconds). Exits if cvhost fails."""
    start = time.perf_counter()
    proc = subprocess.run([binary, "run", "--plugin", plugin, "--input", images, "-q", "--metrics-interval", "0"],
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"cvhost failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    decodes = collections.defaultdict(list)
    for line in proc.stdout.splitlines():
        e = json.loads(line)
        if e["event"] == "result":
            d = e["data"]
            decodes[os.path.realpath(e["image"])].append(normalize(d["symbology"], d["text"] or ""))
    return decodes, elapsed
