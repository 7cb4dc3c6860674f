#!/usr/bin/env bash
# Builds the Debian package of cvhost: OUTDIR/cvhost_VERSION_ARCH.deb (default OUTDIR: dist/).
# It holds what scripts/install.sh installs (cvhost, the plugins, the Swift runtime under
# /usr/lib/cvhost/swift, the header, the schema, the page of --http) under /usr, and:
#   /usr/share/man/man1/cvhost.1.gz                      (swift-argument-parser's generate-manual)
#   bash, zsh and fish completions                      (cvhost --generate-completion-script)
#   /lib/systemd/system/cvhost@.service                  (one instance per /etc/cvhost/NAME.yaml)
#   /usr/share/doc/cvhost/examples/camera.yaml           (a config file to start from)
# Its Depends are what dpkg-shlibdeps finds the binaries need (FFmpeg, zbar, OpenCV, libmosquitto,
# libv4lconvert): the package runs on a Debian 12 machine without a Swift toolchain.
#   scripts/build-deb.sh [OUTDIR]
# Builds with `swift build -c release` first; as yourself, not root (dpkg-deb makes root the owner).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
die() { echo "build-deb.sh: $*" >&2; exit 1; }
command -v dpkg-shlibdeps >/dev/null || die "dpkg-shlibdeps is needed (apt-get install dpkg-dev)"

swift build -c release >&2
swift build -c release --product generate-manual >&2
bin=$(swift build -c release --show-bin-path)
version=$("$bin/cvhost" --version)
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/root

CVHOST_BIN=$bin scripts/install.sh "$root/usr"

# The manual and completions, generated from the command-line definitions themselves.
install -d "$root/usr/share/man/man1" "$root/usr/share/bash-completion/completions" \
  "$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d"
"$bin/generate-manual" "$bin/cvhost" --date "$(date -u -r Package.swift +%Y-%m-%d)" -o "$stage" >&2
gzip -9n < "$stage/cvhost.1" > "$root/usr/share/man/man1/cvhost.1.gz"
"$bin/cvhost" --generate-completion-script bash > "$root/usr/share/bash-completion/completions/cvhost"
"$bin/cvhost" --generate-completion-script zsh > "$root/usr/share/zsh/vendor-completions/_cvhost"
"$bin/cvhost" --generate-completion-script fish > "$root/usr/share/fish/vendor_completions.d/cvhost.fish"

# Running it as a service.
install -d "$root/lib/systemd/system" "$root/etc/cvhost" "$root/usr/share/doc/cvhost/examples"
install -m 644 packaging/cvhost@.service "$root/lib/systemd/system/"
install -m 644 packaging/camera.yaml examples/python/*.py "$root/usr/share/doc/cvhost/examples/"
install -m 644 packaging/copyright "$root/usr/share/doc/cvhost/"

# Depends: the shared libraries the binaries load, by the packages that hold them (the bundled
# Swift runtime is found in the package itself, through -l); and procps, whose /bin/kill the
# unit's ExecReload runs (systemctl reload).
mkdir -p "$stage/debian"
printf 'Source: cvhost\n\nPackage: cvhost\nArchitecture: any\n' > "$stage/debian/control"
depends=$(cd "$stage" && dpkg-shlibdeps -O --ignore-missing-info -l"$root/usr/lib/cvhost/swift" \
            root/usr/bin/cvhost root/usr/lib/cvhost/plugins/*.so root/usr/lib/cvhost/swift/*.so 2>/dev/null |
          sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || die "dpkg-shlibdeps found no dependencies"

install -d "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<EOF
Package: cvhost
Version: $version
Architecture: $arch
Maintainer: cvhost developers <cvhost@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends, procps
Recommends: opencv-data, python3, python3-numpy, fonts-dejavu-core
Suggests: v4l-utils, mosquitto-clients, python3-opencv, python3-venv
Section: video
Priority: optional
Homepage: https://github.com/cvhost/cvhost
Description: plugin-based computer-vision host for cameras, video files and streams
 cvhost runs a capture session (V4L2 cameras, video files, still images, RTSP and HTTP
 streams, a test pattern) and hands every frame to plugins loaded at run time through a
 small, versioned C ABI: barcodes (zxing-cpp and zbar), faces (OpenCV), motion, your own ONNX
 model (detect, with onnxruntime from PyPI), and plugins of your own in C, C++, Swift, Rust or Python. Results are JSON Lines on stdout, in files or on an
 MQTT broker; --http serves a live view, Prometheus metrics and camera controls.
 .
 The Swift runtime it needs is bundled under /usr/lib/cvhost/swift. A service per camera:
 write /etc/cvhost/NAME.yaml and run: systemctl enable --now cvhost@NAME
EOF
(cd "$root" && find . -type f ! -path ./DEBIAN/\* ! -path ./etc/\* -printf '%P\0' | sort -z | xargs -0 md5sum) > "$stage/md5sums"
install -m 644 "$stage/md5sums" "$root/DEBIAN/md5sums"

mkdir -p "$out"
deb="$out/cvhost_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >&2
echo "$deb"
