"""Shared by the benchmarks: run a command, timed (wall and CPU of the child), and print a table."""
import resource
import subprocess
import sys
import time


def timed(cmd):
    """Runs cmd; returns (stdout, wall seconds, CPU seconds of the child). Exits on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return proc.stdout, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
