#!/usr/bin/env bash
# The tracking benchmark's comparison (benchmarks/tracking.py): supervision's ByteTrack and
# motmetrics (IDF1), pinned, in a virtual environment over Debian's python3 (never pip into
# Debian's own). numpy stays Debian's 1.24 so that Debian's OpenCV, which supervision imports,
# still loads; supervision's own OpenCV wheel is not installed (--no-deps).
#   scripts/make-tracking-venv.sh FOLDER
set -euo pipefail
venv="${1:?usage: make-tracking-venv.sh FOLDER}"
if [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c 'import supervision, motmetrics' 2>/dev/null; then exit 0; fi
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet "numpy==1.24.2" "pandas<2.3" "scipy<1.14" pillow "matplotlib<3.10" defusedxml requests tqdm \
  motmetrics==1.4.0 >&2
"$venv/bin/pip" install --quiet --no-deps supervision==0.26.1 >&2
