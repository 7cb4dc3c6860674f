#!/usr/bin/env bash
# Installs a release build of cvhost (made before, by `swift build -c release` as yourself: this
# script never builds, so `sudo scripts/install.sh` does not run the compiler as root) under PREFIX
# (default /usr/local):
#   PREFIX/bin/cvhost
#   PREFIX/lib/cvhost/plugins/libcvhost-*.so   (where cvhost looks for plugins by name)
#   PREFIX/lib/cvhost/plugins/NAME/NAME.py     (the plugins written in Python: detect)
#   PREFIX/lib/cvhost/swift/*.so               (the Swift runtime cvhost and the plugins need)
#   PREFIX/lib/cvhost/facedetect/              (the face plugin's CNN: libfacedetection and its OpenMP
#                                               runtime, as scripts/fetch-facedetect.sh keeps them)
#   PREFIX/lib/cvhost/python/cvhost/           (the Python plugin API and worker, run by python3)
#   PREFIX/include/cvhost/plugin.h             (for plugin authors)
#   PREFIX/share/cvhost/cvhost-events.schema.json
#   PREFIX/share/cvhost/web/                   (the page of --http)
# The binaries find the runtime through a RUNPATH relative to themselves ($ORIGIN/...), so the
# installation needs no Swift toolchain and may be moved as a whole. scripts/build-deb.sh packages
# this same layout.
#   scripts/install.sh [PREFIX]          (CVHOST_BIN=DIR: install the build in DIR instead)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-/usr/local}
die() { echo "install.sh: $*" >&2; exit 1; }

bin=${CVHOST_BIN:-.build/release}
[ -x "$bin/cvhost" ] || die "no build in $bin: run \`swift build -c release\` first (as yourself, not root), then this script"
command -v patchelf >/dev/null || die "patchelf is needed to point the binaries at their runtime (apt-get install patchelf)"
facedetect=.deps/libfacedetection
[ -f "$facedetect/yuface/libfacedetection.so" ] || die "the face plugin's CNN is not in .deps: run scripts/fetch-facedetect.sh first"

# The Swift runtime: every library the binaries load from the toolchain's folder, and what those load.
toolchain_libs=$(dirname "$(ldd "$bin/cvhost" | awk '$1 == "libswiftCore.so" { print $3 }')")
[ -f "$toolchain_libs/libswiftCore.so" ] || die "cannot find the Swift runtime $bin/cvhost was built against"
runtime=$(for f in "$bin/cvhost" "$bin"/libcvhost-*.so; do ldd "$f"; done |
          awk -v dir="$toolchain_libs/" 'index($3, dir) == 1 { print $3 }' | sort -u)

install -d "$prefix/bin" "$prefix/lib/cvhost/plugins" "$prefix/lib/cvhost/swift" "$prefix/include/cvhost" \
  "$prefix/share/cvhost/web" "$prefix/lib/cvhost/python/cvhost"
install -m 755 "$bin/cvhost" "$prefix/bin/cvhost"
patchelf --set-rpath '$ORIGIN/../lib/cvhost/swift' "$prefix/bin/cvhost"
for plugin in "$bin"/libcvhost-*.so; do
  install -m 644 "$plugin" "$prefix/lib/cvhost/plugins/"
  patchelf --set-rpath '$ORIGIN/../swift' "$prefix/lib/cvhost/plugins/$(basename "$plugin")"
done
for lib in $runtime; do install -m 644 "$lib" "$prefix/lib/cvhost/swift/"; done
# The plugin looks for it in ../facedetect beside its own folder; the library finds its OpenMP
# runtime through its RPATH $ORIGIN/../yuface.libs.
install -d "$prefix/lib/cvhost/facedetect/yuface" "$prefix/lib/cvhost/facedetect/yuface.libs"
install -m 644 "$facedetect/yuface/libfacedetection.so" "$prefix/lib/cvhost/facedetect/yuface/"
install -m 644 "$facedetect"/yuface.libs/* "$prefix/lib/cvhost/facedetect/yuface.libs/"
install -m 644 "$facedetect/LICENSE" "$prefix/lib/cvhost/facedetect/LICENSE"
install -m 644 Sources/CVHostPluginABI/include/cvhost/plugin.h "$prefix/include/cvhost/plugin.h"
install -m 644 Sources/CVHostPlugins/python/cvhost/*.py "$prefix/lib/cvhost/python/cvhost/"
for plugin in Plugins/python/*/; do
  name=$(basename "$plugin")
  install -d "$prefix/lib/cvhost/plugins/$name"
  install -m 644 "$plugin"*.py "$prefix/lib/cvhost/plugins/$name/"
done
install -m 644 schema/cvhost-events.schema.json "$prefix/share/cvhost/"
install -m 644 Sources/CVHostHTTP/web/* "$prefix/share/cvhost/web/"
echo "installed cvhost, $(ls "$prefix/lib/cvhost/plugins" | wc -l) plugins and $(wc -w <<< "$runtime") Swift runtime libraries under $prefix" >&2
