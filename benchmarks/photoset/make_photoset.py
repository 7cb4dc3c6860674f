#!/usr/bin/env python3
"""Makes a realistic set of barcode photos, with ground truth, for benchmarks/barcode_photos.py.

Codes come from real encoders (zint, qrencode, segno, python-barcode); each is put on a label
(white paper with a quiet zone and printed text beside it), placed in a cluttered scene and put
through what a camera and the world do to it: perspective, defocus and motion blur, uneven
light and shadow, glare, low contrast, sensor noise, JPEG at low quality, small codes in 12 MP
frames, curved surfaces (a bottle), light-on-dark screens, and a print-and-photograph chain (ink
spread, paper texture, then a camera). Each degradation has its own strength drawn at random
from a fixed range chosen before any reader was run, so the set is not tuned to a reader.

Everything is drawn from one seeded generator: the same seed and package versions give the same
files. Writes OUT/images/NNN-<kind>-<symbology>.jpg and OUT/truth.json:
  [{"image": "images/...jpg", "kind": "blur", "codes": [{"symbology": "qrcode", "payload": "..."}]}, ...]

    benchmarks/photoset/make_photoset.py OUT [--seed 2026] [--per-kind 2]
"""
import argparse
import json
import os
import string
import subprocess
import sys
import tempfile

import cv2
import numpy as np

SYMBOLOGIES = ["qrcode", "microqr", "datamatrix", "aztec", "pdf417", "ean13", "upca", "code128", "code39"]
KINDS = ["clean", "perspective", "defocus", "motion", "shadow", "glare", "low_contrast", "noise", "jpeg",
         "small_12mp", "curved", "inverted", "printed"]
LINEAR = {"ean13", "upca", "code128", "code39"}


# ---------------------------------------------------------------- payloads

def check_digit(digits):
    """The GS1 check digit of an EAN-13 / UPC-A body."""
    total = sum(int(d) * (3 if i % 2 == 0 else 1) for i, d in enumerate(reversed(digits)))
    return str((10 - total % 10) % 10)


def payload(rng, symbology):
    alnum = string.ascii_uppercase + string.digits
    words = ["parcel", "gate", "order", "ticket", "shelf", "batch", "lot", "serial", "dock", "station"]
    if symbology == "qrcode":
        choice = rng.integers(4)
        if choice == 0:
            return f"https://example.com/{rng.choice(words)}/{int(rng.integers(1, 10**9))}?ref={''.join(rng.choice(list(alnum), 6))}"
        if choice == 1:
            return f"WIFI:S:{rng.choice(words)}-{int(rng.integers(100))};T:WPA;P:{''.join(rng.choice(list(alnum), 12))};;"
        if choice == 2:
            return " ".join(rng.choice(words, int(rng.integers(3, 12)))) + f" #{int(rng.integers(10**6))}"
        return f"BEGIN:VCARD\nVERSION:3.0\nFN:Ada {rng.choice(words).title()}\nTEL:+44{int(rng.integers(10**9, 10**10))}\nEND:VCARD"
    if symbology == "microqr":
        return "".join(rng.choice(list(string.digits if rng.integers(2) else alnum), int(rng.integers(5, 14))))
    if symbology == "datamatrix":
        return f"01{int(rng.integers(10**13, 10**14))}17{int(rng.integers(260101, 291231))}10{''.join(rng.choice(list(alnum), 6))}"
    if symbology == "aztec":
        return f"TKT{int(rng.integers(10**8))}/{rng.choice(words).upper()}/" + "".join(rng.choice(list(alnum), int(rng.integers(20, 60))))
    if symbology == "pdf417":
        fields = [f"DAQ{int(rng.integers(10**8))}", f"DCS{rng.choice(words).upper()}", f"DAC{rng.choice(words).upper()}",
                  f"DBB{int(rng.integers(19500101, 20051231))}", f"DAG{int(rng.integers(1, 999))} {rng.choice(words).upper()} ST"]
        return "@ANSI 636000" + "|".join(fields) + "".join(rng.choice(list(alnum), int(rng.integers(10, 80))))
    if symbology == "ean13":
        body = "".join(rng.choice(list(string.digits), 12))
        return body + check_digit(body)
    if symbology == "upca":
        body = "".join(rng.choice(list(string.digits), 11))
        return body + check_digit(body)
    if symbology == "code128":
        return "".join(rng.choice(list(alnum + "-"), int(rng.integers(6, 18))))
    if symbology == "code39":
        return "".join(rng.choice(list(alnum), int(rng.integers(5, 11))))
    raise ValueError(symbology)


# ---------------------------------------------------------------- encoders: 1 pixel per module

def read_gray(path):
    img = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    if img is None:
        sys.exit(f"make_photoset: an encoder wrote no image at {path}")
    return img


def encode(rng, symbology, data, tmp):
    """The code as a grey image, 1 px per module, dark on white, with its quiet zone; and the
    encoder's name. Encoders alternate where several can make a symbology."""
    out = os.path.join(tmp, "code.png")
    if symbology == "qrcode" and rng.integers(2):
        subprocess.run(["qrencode", "-s", "1", "-m", "4", "-l", str(rng.choice(list("LMQH"))), "-o", out, data], check=True)
        return read_gray(out), "qrencode"
    if symbology in ("qrcode", "microqr") and rng.integers(2):
        import segno
        code = segno.make(data, micro=symbology == "microqr", error="m" if symbology == "microqr" else str(rng.choice(list("lmqh"))))
        code.save(out, scale=1, border=2 if symbology == "microqr" else 4)
        return read_gray(out), "segno"
    if symbology in ("ean13", "code128", "code39") and rng.integers(2):
        import barcode
        from barcode.writer import ImageWriter
        cls = {"ean13": "ean13", "code128": "code128", "code39": "code39"}[symbology]
        # 2 px per module (its writer cannot draw 1 px bars), halved below.
        options = {"module_width": 0.4, "module_height": 24.0, "quiet_zone": 8.0, "write_text": False, "dpi": 127}
        code = barcode.get(cls, data[:12] if symbology == "ean13" else data, writer=ImageWriter(),
                           options={"add_checksum": False} if symbology == "code39" else None)
        path = code.save(os.path.join(tmp, "code"), options)
        img = read_gray(path)
        return cv2.resize(img, (img.shape[1] // 2, img.shape[0] // 2), interpolation=cv2.INTER_NEAREST), "python-barcode"
    zint_type = {"qrcode": 58, "microqr": 97, "datamatrix": 71, "aztec": 92, "pdf417": 55, "ean13": 13, "upca": 34,
                 "code128": 20, "code39": 8}[symbology]
    body = data[:-1] if symbology in ("ean13", "upca") else data  # zint adds the check digit
    args = ["zint", "-b", str(zint_type), "--scale=0.5", "--quietzones", "--notext", "-d", body, "-o", out]
    if symbology in LINEAR:
        args += ["--height", "50"]
    # zint prints D-Bus noise on stderr on machines without a session bus; the images are fine.
    subprocess.run(args, check=True, stderr=subprocess.DEVNULL)
    return read_gray(out), "zint"


# ---------------------------------------------------------------- scene

def clutter(rng, h, w):
    """A busy background: gradients, shapes, lines and printed words, in grey."""
    base = np.full((h, w), float(rng.integers(60, 200)), np.float32)
    gx = np.linspace(-1, 1, w)[None, :] * rng.uniform(-40, 40)
    gy = np.linspace(-1, 1, h)[:, None] * rng.uniform(-40, 40)
    img = np.clip(base + gx + gy, 0, 255).astype(np.uint8)
    scale = max(h, w) / 1280
    for _ in range(int(rng.integers(15, 40))):
        color = int(rng.integers(0, 256))
        x, y = int(rng.integers(w)), int(rng.integers(h))
        s = int(rng.integers(20, 200) * scale)
        shape = rng.integers(4)
        if shape == 0:
            cv2.rectangle(img, (x, y), (x + s, y + int(s * rng.uniform(0.3, 1.5))), color, -1)
        elif shape == 1:
            cv2.circle(img, (x, y), s // 2, color, -1)
        elif shape == 2:
            cv2.line(img, (x, y), (int(rng.integers(w)), int(rng.integers(h))), color, max(1, int(rng.integers(1, 8) * scale)))
        else:
            words = "".join(rng.choice(list(string.ascii_letters + "  0123456789"), int(rng.integers(5, 25))))
            cv2.putText(img, words, (x, y), cv2.FONT_HERSHEY_SIMPLEX, rng.uniform(0.5, 2.0) * scale, color,
                        max(1, int(2 * scale)))
    return img


def label(rng, code, module_px, symbology, text):
    """The code scaled to module_px per module (nearest: sharp print), on white paper with a
    margin and a line of text under it, like a printed label."""
    h, w = code.shape
    big = cv2.resize(code, (int(round(w * module_px)), int(round(h * module_px))), interpolation=cv2.INTER_NEAREST)
    margin = int(max(8, module_px * 3))
    text_h = int(max(14, big.shape[0] * (0.25 if symbology in LINEAR else 0.12)))
    paper = np.full((big.shape[0] + 2 * margin + text_h, big.shape[1] + 2 * margin), 255, np.uint8)
    paper[margin:margin + big.shape[0], margin:margin + big.shape[1]] = big
    font_scale = text_h / 40
    cv2.putText(paper, text[:40], (margin, margin + big.shape[0] + int(text_h * 0.8)), cv2.FONT_HERSHEY_SIMPLEX,
                font_scale, 30, max(1, int(font_scale * 2)))
    return paper


def random_homography(rng, w, h, tilt):
    """A homography that rotates by a random angle and tilts the plane by up to `tilt` (0..1)."""
    src = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
    jitter = rng.uniform(-tilt, tilt, (4, 2)) * np.float32([w, h]) * 0.5
    dst = src + jitter.astype(np.float32)
    angle = rng.uniform(-180, 180) if rng.integers(3) == 0 else rng.uniform(-25, 25)
    center = dst.mean(axis=0)
    rot = cv2.getRotationMatrix2D(tuple(float(c) for c in center), angle, 1.0)
    dst = (np.hstack([dst, np.ones((4, 1), np.float32)]) @ rot.T).astype(np.float32)
    return cv2.getPerspectiveTransform(src, dst)


def place(rng, scene, paper, target_width, tilt, curved=False):
    """Warps the label into the scene (perspective, rotation, optional cylinder) at a random
    place where it fits; returns the scene."""
    h, w = paper.shape
    s = target_width / w
    paper = cv2.resize(paper, (max(1, int(w * s)), max(1, int(h * s))), interpolation=cv2.INTER_AREA)
    if curved:  # wrapped round a cylinder whose axis is vertical: columns compress towards the edges
        ph, pw = paper.shape
        radius = pw / rng.uniform(1.6, 2.6)
        width_out = int(2 * radius * np.sin(min(np.pi / 2, pw / 2 / radius))) + 2
        map_x = np.zeros((ph, width_out), np.float32)
        for ox in range(width_out):
            t = np.arcsin(np.clip((ox - width_out / 2) / radius, -1, 1))
            map_x[:, ox] = t * radius + pw / 2
        map_y = np.repeat(np.arange(ph, dtype=np.float32)[:, None], width_out, axis=1)
        shade = (0.55 + 0.45 * np.cos(np.arcsin(np.clip((np.arange(width_out) - width_out / 2) / radius, -1, 1))))[None, :]
        paper = (cv2.remap(paper, map_x, map_y, cv2.INTER_LINEAR, borderValue=255) * shade).astype(np.uint8)
    h, w = paper.shape
    H = random_homography(rng, w, h, tilt)
    corners = cv2.perspectiveTransform(np.float32([[[0, 0]], [[w, 0]], [[w, h]], [[0, h]]]), H).reshape(4, 2)
    minx, miny = corners.min(axis=0)
    maxx, maxy = corners.max(axis=0)
    sh, sw = scene.shape
    bw, bh = maxx - minx, maxy - miny
    if bw >= sw or bh >= sh:
        return None
    ox = rng.uniform(-minx, sw - maxx)
    oy = rng.uniform(-miny, sh - maxy)
    T = np.float64([[1, 0, ox], [0, 1, oy], [0, 0, 1]]) @ H
    warped = cv2.warpPerspective(paper, T, (sw, sh), flags=cv2.INTER_LINEAR, borderValue=0)
    mask = cv2.warpPerspective(np.full_like(paper, 255), T, (sw, sh), flags=cv2.INTER_LINEAR, borderValue=0)
    alpha = mask.astype(np.float32) / 255
    return (scene * (1 - alpha) + warped * alpha).astype(np.uint8)


# ---------------------------------------------------------------- what cameras and the world do

def disk_kernel(radius):
    r = max(1, int(np.ceil(radius)))
    k = np.zeros((2 * r + 1, 2 * r + 1), np.float32)
    cv2.circle(k, (r, r), max(1, int(round(radius))), 1, -1)
    return k / k.sum()


def motion_kernel(length, angle):
    n = max(3, int(np.ceil(length)) | 1)
    k = np.zeros((n, n), np.float32)
    k[n // 2, :] = 1
    rot = cv2.getRotationMatrix2D((n / 2 - 0.5, n / 2 - 0.5), angle, 1.0)
    k = cv2.warpAffine(k, rot, (n, n))
    return k / max(k.sum(), 1e-6)


def camera(rng, img, noise_sigma=3.0, quality=88):
    """What every photo gets: a little optical softness and sensor noise."""
    img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.4, 0.8)).astype(np.float32)
    img += rng.normal(0, noise_sigma, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8), quality


def degrade(rng, kind, img, module_px):
    f = img.astype(np.float32)
    h, w = img.shape
    quality = int(rng.integers(75, 92))
    if kind == "defocus":
        f = cv2.filter2D(f, -1, disk_kernel(module_px * rng.uniform(0.35, 0.9)))
    elif kind == "motion":
        f = cv2.filter2D(f, -1, motion_kernel(module_px * rng.uniform(0.6, 1.6), rng.uniform(0, 180)))
    elif kind == "shadow":
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        angle = rng.uniform(0, np.pi * 2)
        edge = (np.cos(angle) * (xx - w / 2) + np.sin(angle) * (yy - h / 2)) / max(w, h)
        soft = rng.uniform(0.02, 0.15)
        f *= 1 - rng.uniform(0.45, 0.75) / (1 + np.exp(-edge / soft))
        f *= (0.6 + 0.4 * np.exp(-(((xx - w / 2) / w) ** 2 + ((yy - h / 2) / h) ** 2) * rng.uniform(1, 4)))
    elif kind == "glare":
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        cx, cy = rng.uniform(0.3, 0.7) * w, rng.uniform(0.3, 0.7) * h
        r = rng.uniform(0.05, 0.18) * max(w, h)
        f += rng.uniform(150, 320) * np.exp(-(((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r)))
    elif kind == "low_contrast":
        lo, hi = rng.uniform(80, 140), rng.uniform(150, 200)
        f = lo + (f / 255) * max(hi - lo, 25)
    elif kind == "noise":
        f += rng.normal(0, rng.uniform(12, 30), f.shape)
    elif kind == "jpeg":
        quality = int(rng.integers(6, 20))
    elif kind == "printed":
        f = cv2.GaussianBlur(f, (0, 0), module_px * rng.uniform(0.2, 0.45))
        f *= 0.75 + 0.25 * cv2.resize(rng.uniform(0.7, 1.0, (h // 16 + 1, w // 16 + 1)).astype(np.float32), (w, h))
        f += rng.normal(0, rng.uniform(6, 14), f.shape)
        quality = int(rng.integers(40, 70))
    return np.clip(f, 0, 255).astype(np.uint8), quality


def ink_spread(rng, paper, module_px):
    """Printing: dark ink bleeds into the paper (or toner runs thin), and the paper has grain."""
    k = max(1, int(round(module_px * rng.uniform(0.1, 0.3))))
    kernel = np.ones((k, k), np.uint8)
    out = cv2.erode(paper, kernel) if rng.integers(2) else cv2.dilate(paper, kernel)
    grain = rng.normal(0, 10, paper.shape).astype(np.float32)
    return np.clip(out.astype(np.float32) * rng.uniform(0.85, 0.95) + 10 + grain, 0, 255).astype(np.uint8)


# ---------------------------------------------------------------- one image

def make_image(rng, kind, symbologies, tmp):
    if kind == "small_12mp":
        size = (3000, 4000)
    elif kind == "inverted":
        size = (1080, 1920)
    else:
        size = (960, 1280)
    scene = clutter(rng, *size)
    codes = []
    module_px = 0.0
    for symbology in symbologies:
        data = payload(rng, symbology)
        code, _ = encode(rng, symbology, data, tmp)
        modules = code.shape[1]
        if kind == "small_12mp":
            module_px = rng.uniform(1.8, 3.2)
        elif kind in ("defocus", "motion", "printed"):
            module_px = rng.uniform(3.0, 7.0)
        else:
            module_px = rng.uniform(2.2, 6.0)
        paper = label(rng, code, 4, symbology, data)
        if kind == "printed":
            paper = ink_spread(rng, paper, 4)
        if kind == "inverted":
            paper = 255 - paper
        target = modules * module_px * paper.shape[1] / (modules * 4)
        tilt = {"perspective": 0.55, "printed": 0.3, "curved": 0.1}.get(kind, 0.15)
        placed = place(rng, scene, paper, target, tilt, curved=kind == "curved")
        if placed is None:
            continue
        scene = placed
        codes.append({"symbology": symbology, "payload": data})
    if kind == "inverted":  # a phone screen: dark surround, light code; the screen glows
        scene = np.clip(scene.astype(np.float32) * 0.9 + 10, 0, 255).astype(np.uint8)
    img, quality = degrade(rng, kind, scene, module_px)
    img, _ = camera(rng, img)
    if kind != "jpeg" and kind != "printed":
        quality = int(rng.integers(75, 92))
    return img, quality, codes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--per-kind", type=int, default=2, help="images per symbology and kind")
    ap.add_argument("--code-free", type=int, default=24, help="images with no code, for false reads")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    os.makedirs(os.path.join(args.out, "images"), exist_ok=True)
    truth = []
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [(kind, s) for kind in KINDS for s in SYMBOLOGIES for _ in range(args.per_kind)]
        for i, (kind, symbology) in enumerate(jobs):
            symbologies = [symbology]
            if rng.integers(6) == 0:  # now and then a second code of another symbology in the picture
                symbologies.append(str(rng.choice([s for s in SYMBOLOGIES if s != symbology])))
            img, quality, codes = make_image(rng, kind, symbologies, tmp)
            name = f"images/{n:03d}-{kind}-{symbology}.jpg"
            cv2.imwrite(os.path.join(args.out, name), img, [cv2.IMWRITE_JPEG_QUALITY, quality])
            truth.append({"image": name, "kind": kind, "codes": codes})
            n += 1
            if sys.stderr.isatty():
                print(f"\rmake_photoset: {i + 1}/{len(jobs)} images", end="", file=sys.stderr)
        for _ in range(args.code_free):
            scene = clutter(rng, 960, 1280)
            img, quality = degrade(rng, str(rng.choice(["clean", "noise", "jpeg", "shadow"])), scene, 3)
            img, _ = camera(rng, img)
            name = f"images/{n:03d}-none.jpg"
            cv2.imwrite(os.path.join(args.out, name), img, [cv2.IMWRITE_JPEG_QUALITY, quality])
            truth.append({"image": name, "kind": "none", "codes": []})
            n += 1
    if sys.stderr.isatty():
        print(file=sys.stderr)
    with open(os.path.join(args.out, "truth.json"), "w") as f:
        json.dump({"seed": args.seed, "images": truth}, f, indent=1)
    print(f"make_photoset: {n} images, {sum(len(t['codes']) for t in truth)} codes in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
