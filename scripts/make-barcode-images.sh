#!/usr/bin/env bash
# Makes barcode images with real encoders (qrencode, zint, FFmpeg) into OUTDIR:
#   qr-text.png      QR  "https://example.com/cvhost?id=42"
#   qr-utf8.png      QR  "Grüße, 日本" (UTF-8)
#   qr-binary.png    QR  the bytes 00 01 02 fe ff 80 (not text)
#   qr-inverted.png  QR  "INVERTED-QR", white on black
#   qr-mirrored.png  QR  "MIRRORED-QR", flipped left to right
#   ean13.png        EAN-13 4006381333931
#   code128.png      Code 128 "CVHOST-128"
#   scene.png        the text QR, the EAN-13 and the Code 128 together on a grey 1280x720 frame
#   blank.png        FFmpeg's test pattern: no code at all
#   datamatrix.png   DataMatrix "CVHOST-DM-0042"            (zint; 6 px modules, the symbol 40 px in from the corner)
#   aztec.png        Aztec "CVHOST AZTEC TICKET 0042"       (zint; the same)
#   pdf417.png       PDF417 "CVHOST-PDF417-0042"            (zint; the same)
#   microqr.png      Micro QR "CVH42"                       (zint; the same)
#   gs1-datamatrix.png  GS1 DataMatrix (01)09501101530003(17)270101(10)AB12 (zint --gs1)
#   qr-part1of2.png  QR "PART-ONE", symbol 1 of a structured-append pair (zint --structapp)
# Usage: scripts/make-barcode-images.sh OUTDIR
set -euo pipefail
out=${1:?usage: make-barcode-images.sh OUTDIR}
mkdir -p "$out"
ff() { ffmpeg -nostdin -loglevel error -y "$@"; }

qrencode -s 6 -m 4 -o "$out/qr-text.png" "https://example.com/cvhost?id=42"
qrencode -s 6 -m 4 -o "$out/qr-utf8.png" "Grüße, 日本"
printf '\x00\x01\x02\xfe\xff\x80' | qrencode -8 -s 6 -m 4 -o "$out/qr-binary.png"
qrencode -s 6 -m 4 --foreground=FFFFFF --background=000000 -o "$out/qr-inverted.png" "INVERTED-QR"
qrencode -s 6 -m 4 -o "$out/qr-mirrored-src.png" "MIRRORED-QR"
ff -i "$out/qr-mirrored-src.png" -vf hflip "$out/qr-mirrored.png"
rm "$out/qr-mirrored-src.png"
# zint prints D-Bus noise on stderr on machines without a session bus; the images are fine.
zint -b 13 -d 400638133393 --scale=1.5 -o "$out/ean13.png" 2>/dev/null
zint -b 20 -d "CVHOST-128" --scale=1.5 -o "$out/code128.png" 2>/dev/null
ff -f lavfi -i color=c=0xb0b0b0:s=1280x720 -i "$out/qr-text.png" -i "$out/ean13.png" -i "$out/code128.png" \
  -filter_complex "[0][1]overlay=60:60[a];[a][2]overlay=420:60[b];[b][3]overlay=420:340" -frames:v 1 "$out/scene.png"
ff -f lavfi -i testsrc2=s=640x480 -frames:v 1 "$out/blank.png"

# 2D codes zbar cannot read: zint draws the symbol (X-dimension 6 px, no quiet zone), FFmpeg pads
# it by 40 px of white on every side, so its corners are at 40 and 40 + its size.
zint2d() {
  local name=$1
  shift
  zint --scale=3 --noquietzones "$@" -o "$out/$name-symbol.png" 2>/dev/null
  ff -i "$out/$name-symbol.png" -vf "pad=iw+80:ih+80:40:40:white" "$out/$name.png"
  rm "$out/$name-symbol.png"
}
zint2d datamatrix -b 71 --square -d "CVHOST-DM-0042"
zint2d aztec -b 92 -d "CVHOST AZTEC TICKET 0042"
zint2d pdf417 -b 55 -d "CVHOST-PDF417-0042"
zint2d microqr -b 97 -d "CVH42"
zint2d gs1-datamatrix -b 71 --square --gs1 -d "[01]09501101530003[17]270101[10]AB12"
zint2d qr-part1of2 -b 58 --structapp=1,2,7 -d "PART-ONE"
