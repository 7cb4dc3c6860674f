"""The packages the detect plugin runs on (onnxruntime, numpy, OpenCV's bindings), imported when an
instance starts, not when cvhost lists the plugin: `cvhost plugins detect` works without them, and
a run without them is refused with the Python that lacked them and the command that installs them."""

from __future__ import annotations

import os
import sys
import sysconfig

import cvhost

# The name each module is installed by.
PACKAGES = {"onnxruntime": "onnxruntime", "numpy": "numpy", "cv2": "opencv-python-headless", "openvino": "openvino"}


def require(*modules: str) -> None:
    """Imports the modules, or raises CreateError (exit 16) naming every one this Python lacks and
    the one command that installs them for it."""
    missing = []
    for module in modules:
        try:
            __import__(module)
        except ImportError as e:
            missing.append((module, e))
    if missing:
        raise cvhost.CreateError(refusal(missing)) from None


def importable(module: str) -> bool:
    """Whether this Python imports the module (a broken install is as good as none)."""
    try:
        __import__(module)
        return True
    except Exception:
        return False


def refusal(missing: list[tuple[str, ImportError]]) -> str:
    names = " and ".join(m for m, _ in missing)
    packages = " ".join(PACKAGES.get(m, m) for m, _ in missing)
    # The import's own error when it is not simply that the module is missing (a broken install).
    details = "".join(f" ({e})" for m, e in missing if e.name != m)
    python = f"{sys.executable} (Python {sys.version.split()[0]})"
    them = "them" if len(missing) > 1 else "it"
    if sys.prefix == sys.base_prefix and externally_managed():
        # Debian's python3 refuses pip (PEP 668): a virtual environment that still sees Debian's
        # numpy and OpenCV, and cvhost pointed at it.
        venv = "~/.local/share/cvhost/venv"
        return (f"{names} cannot be imported by {python}{details}, which takes no pip installs (PEP 668): install {them} "
                f"in a virtual environment with `python3 -m venv --system-site-packages {venv} && {venv}/bin/pip install {packages}` "
                f"and run cvhost with CVHOST_PYTHON={venv}/bin/python3")
    return (f"{names} cannot be imported by {python}{details}: install {them} with `{sys.executable} -m pip install {packages}` "
            "(or set CVHOST_PYTHON to a python3 that has them)")


def externally_managed() -> bool:
    """Whether this Python refuses `pip install` outside a virtual environment (PEP 668)."""
    return os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))


def cores() -> int:
    """The cores this process may use: its affinity (taskset, a service's CPUAffinity), and no more
    than its cgroup's CPU quota (a container's --cpus, a service's CPUQuota), rounded up."""
    try:
        n = len(os.sched_getaffinity(0))
    except OSError:
        n = os.cpu_count() or 1
    try:
        with open("/proc/self/cgroup") as f:
            group = next((line.strip().split(":", 2)[2] for line in f if line.startswith("0::")), None)
        if group is not None:
            with open(f"/sys/fs/cgroup{group}/cpu.max") as f:
                quota, period = f.read().split()
            if quota != "max":
                n = min(n, max(1, -(-int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return n
