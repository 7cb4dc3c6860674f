#!/usr/bin/env bash
# Builds the zxing-cpp reader the barcode plugin links, into .deps/zxing-cpp/ (include/,
# lib/libZXing.a, and VERSION: the version below, the only place it is written), unless that
# version is there already.
#
# Why not Debian's libzxing-dev: Debian 12 ships zxing-cpp 1.4.0, whose DataMatrix and Aztec
# detectors search from the middle of the picture; on benchmarks/barcode_photos.py's photos it
# read 2 of 32 DataMatrix and 0 of 28 Aztec codes, where 3.1.1 reads 29 and 18. So the plugin
# builds 3.1.1 from its source release on PyPI (the zxing-cpp package's sdist carries the whole
# C++ core), checked against a pinned SHA-256, readers only, as a static library compiled with
# -fPIC: the plugin carries it inside and needs no zxing-cpp on the machine that runs it.
#   scripts/build-zxing.sh            (about 1.5 minutes on 2 cores, once)
set -euo pipefail
cd "$(dirname "$0")/.."
version=3.1.1
sha256=1051a521b21a9fe206702ad4186aeb195154e3e1badcd99576d030723f36382b
prefix=.deps/zxing-cpp
[ -f "$prefix/lib/libZXing.a" ] && [ "$(cat "$prefix/VERSION" 2>/dev/null)" = "$version" ] && exit 0
rm -rf "$prefix"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "build-zxing: fetching zxing-cpp $version's source release" >&2
# pip prepares an sdist's metadata before it saves it: that needs its build backend.
export PIP_ROOT_USER_ACTION=ignore
python3 -m pip install --quiet --disable-pip-version-check scikit-build-core >&2
python3 -m pip download --quiet --disable-pip-version-check --no-binary :all: --no-deps --no-build-isolation \
  -d "$work" "zxing-cpp==$version" >&2
tarball="$work/zxing_cpp-$version.tar.gz"
echo "$sha256  $tarball" | sha256sum -c --quiet - || { echo "build-zxing: $tarball is not the release pinned here" >&2; exit 1; }
tar xzf "$tarball" -C "$work"
echo "build-zxing: building its reader core (static, -fPIC)" >&2
cmake -S "$work/zxing_cpp-$version/core" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DZXING_READERS=ON -DZXING_WRITERS=OFF \
  -DCMAKE_INSTALL_PREFIX="$PWD/$prefix" >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" -j"$(nproc)" >"$work/build.log" 2>&1 || { tail -50 "$work/build.log" >&2; exit 1; }
cmake --install "$work/build" >/dev/null
echo "$version" > "$prefix/VERSION"
echo "build-zxing: zxing-cpp $version in $prefix" >&2
