#!/usr/bin/env bash
# Installs what cvhost needs on Debian 12 / Ubuntu 22.04+, and nothing that is already there, in tiers:
#   scripts/install-deps.sh               what building and running cvhost needs (the README's first command)
#   scripts/install-deps.sh --tests       and what the test suite needs (scripts/test.sh runs this)
#   scripts/install-deps.sh --benchmarks  and what the benchmarks compare cvhost with
# Needs root or sudo for apt. Swift 6 must be on PATH: see https://www.swift.org/install/linux/ (not in Debian).
set -euo pipefail

tier=run
case "${1:-}" in
  "") ;;
  --tests) tier=tests ;;
  --benchmarks) tier=benchmarks ;;
  *) echo "usage: scripts/install-deps.sh [--tests|--benchmarks]" >&2; exit 64 ;;
esac
tests=false; benchmarks=false
if [ "$tier" != run ]; then tests=true; fi
if [ "$tier" = benchmarks ]; then benchmarks=true; fi

# What building and running cvhost needs.
packages=(
  pkg-config
  # FFmpeg's libraries: decoding of video files, streams and still images; JPEG and clips.
  libavformat-dev libavcodec-dev libswscale-dev libavutil-dev
  # Snapshots with their boxes drawn (--snapshots DIR:draw=true): FFmpeg's drawbox and drawtext
  # filters (libavfilter) and the DejaVu Sans font they write the labels in.
  libavfilter-dev fonts-dejavu-core
  # libyuv: chroma upsampling for YUV to RGB (the conversion plugins ask for on every frame).
  libyuv-dev
  # Cameras: libv4l (libv4lconvert, for Bayer and vendor formats).
  libv4l-dev
  # The barcode plugin's two engines: libzbar, and zxing-cpp built from source by scripts/build-zxing.sh (with cmake).
  libzbar-dev cmake
  # The face plugin: OpenCV and its Haar cascades.
  libopencv-dev opencv-data
  # The broker outputs: libmosquitto (MQTT), librdkafka (Kafka), the NATS C client (JetStream).
  libmosquitto-dev librdkafka-dev libnats-dev
  # The event store (--events-db): SQLite.
  libsqlite3-dev
  # Packaging (scripts/install.sh, scripts/build-deb.sh): patchelf points the binaries at the bundled
  # Swift runtime, dpkg-shlibdeps (dpkg-dev) finds the package's Depends.
  patchelf dpkg-dev
)
if $tests; then
  # Real encoders for test fixtures and demo media (zint: EAN-13, Code 128, DataMatrix, Aztec,
  # PDF417); the schema validator's library.
  packages+=(ffmpeg qrencode zint python3-jsonschema)
  # Camera tests boot Debian's kernel (which carries the vivid driver) in a QEMU VM.
  packages+=(v4l-utils linux-image-amd64 qemu-system-x86 busybox-static cpio kmod xz-utils)
  # Stream tests: a real RTSP server (GStreamer's gst-rtsp-server, through Debian's python3).
  packages+=(gir1.2-gst-rtsp-server-1.0 python3-gst-1.0 python3-gi gstreamer1.0-plugins-good gstreamer1.0-plugins-bad)
  # Python plugins' tests and example: Debian's python3 with numpy and OpenCV's bindings, and venv for
  # a plugin run from a virtual environment (cvhost itself needs only a python3 at run time).
  packages+=(python3-numpy python3-opencv python3-venv)
  # The detect plugin's tests build their ONNX models with python3-onnx (Debian's onnx); onnxruntime,
  # which Debian does not package, goes into a virtual environment of the project's (below).
  packages+=(python3-onnx)
  # The brokers' tests: a real MQTT broker (mosquitto), a subscriber (mosquitto_sub), a test CA
  # (openssl); Kafka's topic read with kcat (the broker is librdkafka's mock cluster); nats-server
  # with JetStream.
  packages+=(mosquitto mosquitto-clients openssl kcat nats-server)
  # The event store's tests read its file with SQLite's own shell.
  packages+=(sqlite3)
  # The live view (--http): its tests check /metrics with promtool (Debian's prometheus), load the
  # page in headless Chromium, read the running page through the DevTools protocol with
  # websocket-client (Tests/Servers/page_probe.py), and make requests with curl (also inside the vivid VM).
  packages+=(prometheus chromium python3-websocket curl)
  # The package's test installs the .deb into a fresh Debian root made by debootstrap and checks the
  # unit with systemd-analyze (systemd).
  packages+=(debootstrap systemd)
  # scripts/test.sh --loaded and benchmarks/load_soak.py: stress-ng keeps the cores busy beside the suite.
  packages+=(stress-ng)
fi
# --benchmarks: what the benchmarks compare cvhost with (zbarimg, GStreamer's zbar element), the live
# RTSP camera of the latency benchmark (x264enc, in plugins-ugly), and libjpeg-turbo's cjpeg (webcam-like
# MJPEG frames for the MJPEG benchmark).
if $benchmarks; then
  packages+=(zbar-tools gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
             gstreamer1.0-libav gstreamer1.0-opencv gstreamer1.0-plugins-ugly libjpeg-turbo-progs)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# --benchmarks: the face benchmarks call libfacedetection's CNN directly through PyPI's yuface
# wheel (the same build the face plugin loads), beside cvhost.
if $benchmarks && ! python3 -c 'import yuface, numpy' 2>/dev/null; then
  echo "install-deps: installing yuface 2023.5.1 and numpy for $(command -v python3)" >&2
  python3 -m pip install --quiet yuface==2023.5.1 numpy >&2
fi

# --benchmarks: the tracking benchmark's comparison, supervision's ByteTrack and motmetrics, in .venv-tracking.
if $benchmarks; then scripts/make-tracking-venv.sh .venv-tracking; fi

# The python3 on PATH may not be Debian's (pyenv, venv): make sure it can import jsonschema.
if $tests && ! python3 -c 'import jsonschema' 2>/dev/null; then
  echo "install-deps: installing jsonschema for $(command -v python3)" >&2
  python3 -m pip install --quiet jsonschema >&2
fi

# The detect plugin's runtime: onnxruntime from PyPI (pinned), in .venv-onnx, a virtual environment
# over Debian's python3 that still sees Debian's numpy and OpenCV (never pip into Debian's python3).
# Tests run the plugin with CVHOST_PYTHON=.venv-onnx/bin/python3; it also holds NudeNet, a trained
# YOLOv8n detector that PyPI ships inside its wheel (the real-model comparison, benchmarks/detect.py).
if $tests; then scripts/make-onnx-venv.sh .venv-onnx; fi

if ! command -v swift >/dev/null; then
  echo "install-deps: swift is not on PATH: install Swift 6 from https://www.swift.org/install/linux/" >&2
  exit 1
fi

# The zxing-cpp reader the barcode plugin links (not Debian's 1.4: see the script).
scripts/build-zxing.sh
# The face plugin's CNN detector (libfacedetection, from a pinned wheel: see the script).
scripts/fetch-facedetect.sh
