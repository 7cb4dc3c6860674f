"""What a worker does first: the restrictions cvhost's own workers take (cvhost_worker_restrict)."""

from __future__ import annotations

import ctypes
import os

PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38


def restrict(parent: int) -> bool:
    """No new privileges for the worker or what it runs, killed when cvhost dies, and cvhost
    still there (it may have died before the line above took effect)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0) != 0:
        return False
    return os.getppid() == parent
