#!/usr/bin/env bash
# Puts libfacedetection's CNN face detector (the YuNet family, weights compiled into the library),
# which the face plugin loads, into .deps/libfacedetection/ (with VERSION: the version below, the
# only place it is written), unless that version is there already.
#
# Where it comes from: no Debian package carries it, and its source builds only with a CMake
# download step. PyPI's `yuface` wheel (BSD-3) ships the library as it is built upstream:
# yuface/libfacedetection.so (the C++ entry `facedetect_cnn`, SONAME libfacedetection.so.v0.0.3)
# with the OpenMP runtime it needs (yuface.libs/libgomp-*.so, found through its RPATH
# $ORIGIN/../yuface.libs). This script fetches that wheel, pinned by version and SHA-256, and
# keeps those two files and the licence in the wheel's own layout. Nothing is fetched at run time.
#   scripts/fetch-facedetect.sh        (a 0.5 MB download, once)
set -euo pipefail
cd "$(dirname "$0")/.."
version=2023.5.1
sha256=fd03270a672da75b89809a2c999d5728ef19c6e701408a4d0bc9c00480c864a0
wheel=yuface-$version-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
prefix=.deps/libfacedetection
[ -f "$prefix/yuface/libfacedetection.so" ] && [ "$(cat "$prefix/VERSION" 2>/dev/null)" = "$version" ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "fetch-facedetect: fetching the yuface $version wheel (libfacedetection's CNN)" >&2
export PIP_ROOT_USER_ACTION=ignore
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.11 \
  --platform manylinux2014_x86_64 -d "$work" "yuface==$version" >&2
echo "$sha256  $work/$wheel" | sha256sum -c --quiet - || { echo "fetch-facedetect: $wheel is not the wheel pinned here" >&2; exit 1; }
python3 -m zipfile -e "$work/$wheel" "$work/x"
mkdir -p "$prefix.tmp/yuface" "$prefix.tmp/yuface.libs"
cp "$work/x/yuface/libfacedetection.so" "$prefix.tmp/yuface/"
cp "$work"/x/yuface.libs/libgomp-*.so* "$prefix.tmp/yuface.libs/"
cp "$work/x/yuface-$version.dist-info/LICENSE" "$prefix.tmp/LICENSE"
echo "$version" > "$prefix.tmp/VERSION"
rm -rf "$prefix" && mv "$prefix.tmp" "$prefix"
echo "fetch-facedetect: libfacedetection in $prefix" >&2
