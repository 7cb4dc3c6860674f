#!/usr/bin/env bash
# How much memory slow readers of a clip cost the live view: N clients (curl, at RATE a second)
# ask for a 20 MB clip with `Range: bytes=0-` and read it slowly; prints cvhost's resident memory
# before and with them, and the status the next asker gets (503 once 32 answers are in flight).
#
#   benchmarks/slow-readers.sh [N] [RATE]        (default 60 readers at 20k; a debug or release build)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-60}
rate=${2:-20k}
bin=.build/release/cvhost
[ -x "$bin" ] || bin=.build/debug/cvhost
[ -x "$bin" ] || { swift build >&2; bin=.build/debug/cvhost; }
work=$(mktemp -d)
chmod 700 "$work"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
# A 20 MB clip the folder's index names (a line as cvhost writes it).
head -c 20971520 /dev/urandom > "$work/big.mp4"
printf 'cvhost-evidence\t2\tclips\t0\n+\tbig.mp4\t20971520\t%s\tcam\tresult\t\n' "$(date +%s%N)" > "$work/.cvhost-evidence"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" run --plugin null --input testsrc:64x48@5 --http "127.0.0.1:$port" --clips "$work" --metrics-interval 0 >/dev/null 2>"$work/stderr" &
cvhost=$!
pids+=("$cvhost")
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.2; done
rss() { awk '/VmRSS/{print $2 / 1024}' "/proc/$cvhost/status"; }
before=$(rss)
for _ in $(seq "$n"); do
  curl -s --limit-rate "$rate" -H 'Range: bytes=0-' -o /dev/null "http://127.0.0.1:$port/clips/big.mp4" &
  pids+=("$!")
done
sleep 8
with=$(rss)
next=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/clips/big.mp4" || true)
answers=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^cvhost_http_file_answers /{print $2}')
printf 'slow-readers: %d readers at %s/s of a 20 MB clip: RSS %.1f MB before, %.1f MB with them; %s in flight; the next asker: %s\n' \
  "$n" "$rate" "$before" "$with" "${answers:-?}" "$next"
