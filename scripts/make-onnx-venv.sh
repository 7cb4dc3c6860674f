#!/usr/bin/env bash
# Makes (or completes) a virtual environment for the detect plugin: Debian's python3 with its own
# packages visible (numpy, OpenCV's bindings) and onnxruntime from PyPI, the version pinned here;
# and OpenVINO (PyPI's openvino, which reads ONNX files itself), the detect plugin's runtime=openvino.
#   scripts/make-onnx-venv.sh FOLDER
# Then: CVHOST_PYTHON=FOLDER/bin/python3 cvhost run --plugin detect:model=... (or activate it).
# It also holds NudeNet 3.4.2, for its wheel carries a trained YOLOv8n (320n.onnx, with Ultralytics'
# metadata): the real model the tests and benchmarks/detect.py run (nothing is fetched at run time).
set -euo pipefail
folder=${1:?usage: scripts/make-onnx-venv.sh FOLDER}
onnxruntime=1.32.0
openvino=2026.4.1
nudenet=3.4.2
if [ ! -x "$folder/bin/python3" ]; then
  echo "make-onnx-venv: making $folder on /usr/bin/python3" >&2
  /usr/bin/python3 -m venv --system-site-packages "$folder"
fi
if ! "$folder/bin/python3" -c "import onnxruntime, sys; sys.exit(onnxruntime.__version__ != '$onnxruntime')" 2>/dev/null; then
  echo "make-onnx-venv: installing onnxruntime $onnxruntime into $folder" >&2
  "$folder/bin/pip" install --quiet --disable-pip-version-check "onnxruntime==$onnxruntime" >&2
fi
if ! "$folder/bin/python3" -c "import openvino, sys; sys.exit(not openvino.__version__.startswith('$openvino'))" 2>/dev/null; then
  echo "make-onnx-venv: installing openvino $openvino into $folder" >&2
  # Its own dependencies: numpy (Debian's is there), openvino-telemetry, packaging.
  "$folder/bin/pip" install --quiet --disable-pip-version-check "openvino==$openvino" >&2
fi
if ! "$folder/bin/python3" -c 'import nudenet' 2>/dev/null; then
  echo "make-onnx-venv: installing nudenet $nudenet (its trained YOLOv8n) into $folder" >&2
  # Its own dependencies (onnxruntime, OpenCV) are there already: only the wheel and its model.
  "$folder/bin/pip" install --quiet --disable-pip-version-check --no-deps "nudenet==$nudenet" >&2
fi
