#!/usr/bin/env python3
"""The barcode plugin beside zbarimg and zxing-cpp's own reader on realistic photos, in one run.

Makes the photo set on first use (benchmarks/photoset/make_photoset.py: real encoders, real
degradations, ground truth; kept in benchmarks/.photoset-SEED/) and installs what it needs from
PyPI (benchmarks/photoset/requirements.txt: the zxing-cpp reader and the encoders, pinned).
Then reads every image with
  zbarimg                      (libzbar's own tool, Debian's zbar-tools)
  zxing-cpp                    (the `zxing-cpp` package from PyPI, a newer zxing-cpp than Debian's; its defaults)
  cvhost barcode[:OPTIONS]     (the plugin's defaults, and each engine)
and prints, per symbology, the codes read (symbology and payload right) and false reads (a
code that is not in the picture), then the totals and images per second (one thread each).

    benchmarks/barcode_photos.py [--seed 2026] [--per-kind 2] [--cvhost .build/release/cvhost] [--plugin barcode:OPTIONS ...] [--by-kind]
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

from benchlib import cvhost_image_decodes, zbarimg_decodes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "benchmarks")

# Every tool's name for a symbology, to one name.
NAMES = {"QRCODE": "qrcode", "QRCODE_": "qrcode", "MICROQRCODE": "microqr", "MICROQR": "microqr",
         "DATAMATRIX": "datamatrix", "AZTEC": "aztec", "PDF417": "pdf417", "EAN13": "ean13", "UPCA": "upca",
         "CODE128": "code128", "CODE39": "code39", "ISBN13": "ean13", "I25": "i25", "ITF": "i25"}


def canonical(symbology, payload):
    key = symbology.replace("-", "").replace("_", "").replace(" ", "").upper()
    name = NAMES.get(key, key.lower())
    # A UPC-A is an EAN-13 with a leading 0: readers that report it as EAN-13 read it right.
    if name == "ean13" and len(payload) == 13 and payload.startswith("0"):
        return "upca", payload[1:]
    return name, payload


def ensure_packages():
    req = os.path.join(HERE, "photoset", "requirements.txt")
    try:
        import cv2  # noqa: F401
        import zxingcpp  # noqa: F401
        import segno  # noqa: F401
        import barcode  # noqa: F401
    except ImportError:
        print(f"barcode_photos: installing {req}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "-r", req], check=True)


def ensure_set(seed, per_kind):
    folder = os.path.join(HERE, f".photoset-{seed}-{per_kind}")
    if not os.path.exists(os.path.join(folder, "truth.json")):
        subprocess.run([sys.executable, os.path.join(HERE, "photoset", "make_photoset.py"), folder, "--seed", str(seed),
                        "--per-kind", str(per_kind)], check=True)
    with open(os.path.join(folder, "truth.json")) as f:
        truth = json.load(f)["images"]
    for t in truth:
        t["path"] = os.path.realpath(os.path.join(folder, t["image"]))
    return folder, truth


def run_zxingcpp(paths):
    import cv2
    import zxingcpp
    found = collections.defaultdict(list)
    start = time.perf_counter()
    for path in paths:
        img = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
        for r in zxingcpp.read_barcodes(img):
            found[path].append(canonical(str(r.format).split(".")[-1], r.text))
    return found, time.perf_counter() - start


def score(found, truth, group):
    """{group: [read, total, false]} where group(image_truth, code) names the row."""
    rows = collections.defaultdict(lambda: [0, 0, 0])
    for t in truth:
        left = collections.Counter((c["symbology"], c["payload"]) for c in t["codes"])
        for c in t["codes"]:
            rows[group(t, c)][1] += 1
        for code in found.get(t["path"], []):
            if left[code] > 0:
                left[code] -= 1
                rows[group(t, {"symbology": code[0]})][0] += 1
            else:
                rows[group(t, {"symbology": code[0]})][2] += 1
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--per-kind", type=int, default=2)
    ap.add_argument("--cvhost", default=os.path.join(ROOT, ".build", "release", "cvhost"))
    ap.add_argument("--plugin", action="append", dest="plugins",
                    help="a cvhost configuration to compare, repeatable (default: barcode and each engine)")
    ap.add_argument("--by-kind", action="store_true", help="also print the rows by degradation")
    args = ap.parse_args()
    ensure_packages()
    folder, truth = ensure_set(args.seed, args.per_kind)
    paths = [t["path"] for t in truth]
    codes = sum(len(t["codes"]) for t in truth)
    print(f"photo set {os.path.relpath(folder, ROOT)}: {len(paths)} images, {codes} codes "
          f"({sum(1 for t in truth if not t['codes'])} images without a code)")

    tools = {"zbarimg": zbarimg_decodes(paths, canonical), "zxing-cpp (PyPI)": run_zxingcpp(paths)}
    plugins = args.plugins or ["barcode", "barcode:engine=zbar", "barcode:engine=zxing", "barcode:engine=both"]
    if "barcode" not in plugins:
        plugins.insert(0, "barcode")
    for plugin in plugins:
        tools[f"cvhost {plugin}"] = cvhost_image_decodes(args.cvhost, plugin, os.path.join(folder, "images"), canonical)

    def table(group, label):
        scored = {name: score(found, truth, group) for name, (found, _) in tools.items()}
        rows = sorted({r for s in scored.values() for r in s})
        names = list(tools)
        width = max(12, *(len(n) for n in names))
        print(f"\n{label:<14}" + "".join(f"{n:>{width + 2}}" for n in names))
        for row in rows:
            cells = []
            for n in names:
                read, total, false = scored[n][row]
                cells.append(f"{read}/{total}" + (f" +{false}f" if false else ""))
            print(f"{row:<14}" + "".join(f"{c:>{width + 2}}" for c in cells))
        totals = {n: [sum(v[i] for v in scored[n].values()) for i in range(3)] for n in names}
        print(f"{'all':<14}" + "".join(f"{f'{t[0]}/{t[1]}' + (f' +{t[2]}f' if t[2] else ''):>{width + 2}}" for t in totals.values()))
        return totals

    totals = table(lambda t, c: c["symbology"], "symbology")
    if args.by_kind:
        table(lambda t, c: t["kind"], "degradation")
    print(f"\n{'tool':<40} {'read':>6} {'false':>6} {'images/s':>9}")
    for name, (_, elapsed) in tools.items():
        read, total, false = totals[name]
        print(f"{name:<40} {read:>6} {false:>6} {len(paths) / elapsed:>9.2f}")
    default = totals["cvhost barcode"][0]
    others = {n: t[0] for n, t in totals.items() if not n.startswith("cvhost")}
    print("\ncvhost's defaults read " + ", ".join(f"{default - v:+d} against {n}" for n, v in others.items()))
    return 0 if all(default >= v for v in others.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
