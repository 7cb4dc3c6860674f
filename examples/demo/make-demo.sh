#!/usr/bin/env bash
# Makes examples/demo/codes.mp4, the README's demo input, with real encoders: a QR code
# (qrencode) gliding across the frame, an EAN-13 (zint) from the start and a Code 128 (zint)
# from the second second on; 3 s, 960x540, 30 fps, H.264 (FFmpeg's libx264).
#   examples/demo/make-demo.sh        (needs qrencode, zint, ffmpeg: scripts/install-deps.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/../../scripts/make-barcode-images.sh" "$work"
ffmpeg -nostdin -loglevel error -y -f lavfi -i color=c=0xc8c8c8:s=960x540:r=30:d=3 \
  -i "$work/qr-text.png" -i "$work/ean13.png" -i "$work/code128.png" \
  -filter_complex "[0][1]overlay=x='40+t*60':y=60[a];[a][2]overlay=540:40[b];[b][3]overlay=x=480:y=300:enable='gte(t,1)'" \
  -c:v libx264 -preset slow -crf 26 -pix_fmt yuv420p -movflags +faststart "$here/codes.mp4"
echo "made $here/codes.mp4"
