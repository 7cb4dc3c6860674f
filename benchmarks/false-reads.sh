#!/usr/bin/env bash
# Which symbologies read codes where there are none? Runs the barcode plugin with both engines
# and every symbology on (engine=both, symbologies=all) over code-free video made by FFmpeg's
# generators (noise, cellular automata, fractals, test patterns, text) and counts reads per
# symbology and engine. The plugin's default set leaves out those that read anything here.
#
#   benchmarks/false-reads.sh [FRAMES_PER_SOURCE]     (default 300; needs a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-300}
bin=.build/release/cvhost
[ -x "$bin" ] || swift build -c release >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

sources=(
  "noise:nullsrc=s=640x480,geq=lum='random(1)*255':cb=128:cr=128"
  "coarse-noise:nullsrc=s=160x120,geq=lum='random(1)*255':cb=128:cr=128,scale=640:480:flags=neighbor"
  "cellauto:cellauto=s=640x480:rule=110,format=yuv420p"
  "life:life=s=640x480:mold=10:ratio=0.1:death_color=#101010:life_color=#f0f0f0,format=yuv420p"
  "mandelbrot:mandelbrot=s=640x480,format=yuv420p"
  "testsrc2:testsrc2=s=640x480"
  "smptebars:smptehdbars=s=640x480"
)
printf '%-14s %s\n' source "false reads by symbology/engine (engine=both, symbologies=all)"
total=$(mktemp)
for entry in "${sources[@]}"; do
  name=${entry%%:*}
  graph=${entry#*:}
  ffmpeg -nostdin -loglevel error -f lavfi -i "$graph" -frames:v "$frames" -c:v libx264 -qp 10 -pix_fmt yuv420p "$work/$name.mp4"
  "$bin" run --plugin barcode:engine=both,symbologies=all,inverted=true,mirrored=true --input "$work/$name.mp4" -q --metrics-interval 0 |
    python3 -c '
import collections, json, sys
c = collections.Counter("{symbology}/{engine}".format(**json.loads(l)["data"]) for l in sys.stdin if "\"event\":\"result\"" in l)
print(" ".join(f"{k}={v}" for k, v in sorted(c.items())) or "none")' | tee -a "$total" | sed "s/^/$(printf '%-14s ' "$name")/"
done
echo
echo "symbologies with any false read: $(tr ' ' '\n' <"$total" | grep = | cut -d= -f1 | sort -u | tr '\n' ' ')"
