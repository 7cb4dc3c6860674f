#!/usr/bin/env python3
"""cvhost's barcode plugin beside zbarimg on the corpus's still images, in one run.

Both read every image of CORPUS/barcodes/images; each decode is scored against the ground
truth (gt.csv): correct when the image has a code of that symbology and payload not yet
matched, a false read otherwise. Prints images per second, correct decodes and false reads.

    benchmarks/barcode_stills.py [--corpus ../shared/corpus] [--cvhost .build/release/cvhost] [--plugin barcode]
"""
import argparse
import collections
import csv
import glob
import os
import sys

from benchlib import cvhost_image_decodes, norm_symbology, score_codes, zbarimg_decodes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.path.join(ROOT, "..", "shared", "corpus"))
    ap.add_argument("--cvhost", default=os.path.join(ROOT, ".build", "release", "cvhost"))
    ap.add_argument("--plugin", default="barcode")
    args = ap.parse_args()
    corpus = os.path.realpath(args.corpus)
    truth = collections.defaultdict(collections.Counter)
    for row in csv.DictReader(open(os.path.join(corpus, "barcodes", "gt.csv"))):
        image = os.path.realpath(os.path.join(corpus, row["image"]))
        truth[image]  # images without codes still count
        if row["symbology"] != "NONE":
            truth[image][(norm_symbology(row["symbology"]), row["payload"])] += 1
    pattern = os.path.join(corpus, "barcodes", "images", "*", "*.jpg")
    images = sorted(glob.glob(pattern))
    codes = sum(sum(c.values()) for c in truth.values())
    print(f"corpus: {len(images)} images, {codes} codes")
    print(f"{'tool':<34} {'images/s':>9} {'correct':>8} {'false':>6}")
    pair = lambda symbology, payload: (norm_symbology(symbology), payload)  # noqa: E731
    z, zt = zbarimg_decodes(images, pair)
    c, ct = cvhost_image_decodes(args.cvhost, args.plugin, pattern, pair)
    for name, decodes, elapsed in (("zbarimg", z, zt), (f"cvhost --plugin {args.plugin}", c, ct)):
        correct, false = score_codes(decodes, truth)
        print(f"{name:<34} {len(images) / elapsed:>9.1f} {correct:>8} {false:>6}")
    zc, zf = score_codes(z, truth)
    cc, cf = score_codes(c, truth)
    print(f"cvhost - zbarimg: {cc - zc:+d} correct, {cf - zf:+d} false reads")
    missed = [(i, code) for i, found in z.items() for code in found if code in truth[i] and code not in c.get(i, [])]
    for image, code in missed[:10]:
        print(f"  zbarimg read but cvhost did not: {os.path.relpath(image, corpus)} {code[0]} {code[1]}")
    return 0 if cc >= zc and cf <= zf else 1


if __name__ == "__main__":
    sys.exit(main())
