#!/usr/bin/env python3
"""What the live view costs: cvhost's CPU with 0, 1 and 10 MJPEG viewers of a live 1280x720@30
test pattern (null plugin) with the preview at 5 fps, 640 wide, and the time a /metrics scrape takes.

    benchmarks/live_view.py [--cvhost .build/release/cvhost] [--seconds 10]

Prints CPU ms per second of cvhost for each viewer count, the cost per viewer against the run
without viewers measured in the same session, pictures each viewer got, and scrape times.
"""
import argparse
import http.client
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14, 15)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def viewer(port, stop, counts, i):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /stream.mjpg HTTP/1.1\r\nHost: x\r\n\r\n")
    s.settimeout(0.5)
    tail = b""
    while not stop.is_set():
        try:
            data = s.recv(65536)
        except socket.timeout:
            continue
        if not data:
            break
        chunk = tail + data
        counts[i] += chunk.count(b"--cvhost-frame\r\n")
        tail = chunk[-16:]
    s.close()


def measure(pid, port, viewers, seconds):
    stop = threading.Event()
    counts = [0] * viewers
    threads = [threading.Thread(target=viewer, args=(port, stop, counts, i), daemon=True) for i in range(viewers)]
    for t in threads:
        t.start()
    time.sleep(1)  # settle
    before = cpu_seconds(pid)
    start_counts = list(counts)
    time.sleep(seconds)
    used = cpu_seconds(pid) - before
    got = [c - s for c, s in zip(counts, start_counts)]
    stop.set()
    for t in threads:
        t.join()
    return used / seconds * 1000, got


def scrape_times(port, n=200):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    times = []
    size = 0
    for _ in range(n):
        t = time.perf_counter()
        conn.request("GET", "/metrics")
        body = conn.getresponse().read()
        times.append((time.perf_counter() - t) * 1000)
        size = len(body)
    conn.close()
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1], size


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cvhost", default=".build/release/cvhost")
    ap.add_argument("--seconds", type=float, default=10)
    a = ap.parse_args()
    port = free_port()
    p = subprocess.Popen([a.cvhost, "run", "--plugin", "null", "--input", "testsrc:1280x720@30", "--http", f"127.0.0.1:{port}",
                          "--preview-fps", "5", "--preview-width", "640", "--metrics-interval", "0", "--no-stdin-commands"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.1)
        results = {}
        for n in (0, 1, 10, 0):
            ms, got = measure(p.pid, port, n, a.seconds)
            results.setdefault(n, []).append((ms, got))
            print(f"{n:2d} viewers: cvhost {ms:6.1f} CPU-ms/s" + (f", pictures per viewer {min(got)}-{max(got)} in {a.seconds:.0f} s" if got else ""))
        base = statistics.mean(ms for ms, _ in results[0])
        for n in (1, 10):
            ms = results[n][0][0]
            print(f"{n:2d} viewers: {(ms - base) / n:.2f} CPU-ms/s per viewer above none ({base:.1f} CPU-ms/s without viewers, same run)")
        p50, p99, size = scrape_times(port)
        print(f"/metrics: {size} bytes, scrape p50 {p50:.2f} ms, p99 {p99:.2f} ms (200 scrapes, one connection)")
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    sys.exit(main())
