#!/usr/bin/env python3
"""Results through MQTT beside stdout: results per second, capture-to-arrival latency and CPU per
1000 results, with a real mosquitto broker on loopback (started here) and a real subscriber
(mosquitto_sub, which stamps each message's arrival: -F '%U %p').

  live:    null:results=20 on testsrc:640x480@60 for --seconds (1200 results/s offered); latency
           is the arrival time at the reader (this script for stdout, mosquitto_sub for MQTT)
           minus the result's `ts` (the frame's capture time).
  flood:   null:results=20 on testsrc:640x480:unpaced, --frames frames: as fast as it goes;
           results/s from cvhost's start to the last result's arrival.

CPU per 1000 results is cvhost's own (user + system); the broker's is printed beside it for MQTT.
The runs alternate, one at a time (two cores).

    benchmarks/mqtt_output.py [--seconds 10] [--frames 2000] [--qos 1]
"""
import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from benchlib import cpu_seconds, free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CVHOST = os.path.join(ROOT, ".build", "release", "cvhost")




def start_broker(folder):
    port = free_port()
    conf = os.path.join(folder, "mosquitto.conf")
    with open(conf, "w") as f:
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\nuser {os.environ.get('USER') or 'root'}\n"
                "max_queued_messages 0\nlog_type error\n")
    broker = subprocess.Popen(["/usr/sbin/mosquitto", "-c", conf])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return broker, port
        except OSError:
            time.sleep(0.02)
    sys.exit("mosquitto did not start")


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))] if values else float("nan")


def run(cvhost_args, sink, port, qos, expected=None, broker=None):
    """Runs cvhost writing to `sink` (stdout or mqtt); returns (results, seconds, latencies ms, cvhost CPU s, broker CPU s)."""
    arrivals = []  # (arrival ns, line)
    sub = None
    if sink == "mqtt":
        sub = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-q", str(qos), "-t", "bench/+/+/null/result",
                                "-F", "%U %p"], stdout=subprocess.PIPE, text=True, bufsize=1)
        time.sleep(0.3)

        def read_sub():
            for line in sub.stdout:
                stamp, _, payload = line.partition(" ")
                arrivals.append((int(float(stamp) * 1e9), payload))
        reader = threading.Thread(target=read_sub, daemon=True)
        reader.start()
        out = ["--output", f"mqtt://127.0.0.1:{port}/bench?qos={qos}&queue=1000000"]
    else:
        out = []
    broker_cpu0 = cpu_seconds(broker.pid) if broker else 0
    start = time.time_ns()
    proc = subprocess.Popen([CVHOST, "run", "--metrics-interval", "0", "-q"] + cvhost_args + out,
                            stdout=subprocess.PIPE, text=True, bufsize=1)
    if sink == "stdout":
        for line in proc.stdout:
            arrivals.append((time.time_ns(), line))
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"cvhost exited {proc.returncode}")
    cpu = usage.ru_utime + usage.ru_stime
    if sub:
        deadline = time.time() + 30
        while expected and len(arrivals) < expected and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        sub.terminate()
    broker_cpu = cpu_seconds(broker.pid) - broker_cpu0 if broker else 0
    results = [(t, json.loads(l)) for t, l in arrivals if '"event":"result"' in l]
    latencies = [(t - int(e["ts"] * 1e9)) / 1e6 for t, e in results]
    seconds = ((max(t for t, _ in results) - start) / 1e9) if results else float("nan")
    return len(results), seconds, latencies, cpu, broker_cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--frames", type=int, default=2000)
    ap.add_argument("--qos", type=int, default=1)
    args = ap.parse_args()
    if not os.access(CVHOST, os.X_OK):
        sys.exit("build first: swift build -c release")
    with tempfile.TemporaryDirectory() as folder:
        broker, port = start_broker(folder)
        try:
            live = ["--plugin", "null:results=20", "--input", "testsrc:640x480@60", "--duration", str(args.seconds)]
            flood = ["--plugin", "null:results=20", "--input", "testsrc:640x480:unpaced", "--max-frames", str(args.frames)]
            print(f"{'run':<28}{'results':>9}{'results/s':>11}{'p50 ms':>9}{'p99 ms':>9}{'cvhost CPU ms/1000':>20}{'broker CPU ms/1000':>20}")
            for name, cvargs, expected in [("live 640x480@60", live, None), ("flood (unpaced)", flood, args.frames * 20)]:
                for sink in ["stdout", "mqtt"]:
                    n, secs, lat, cpu, bcpu = run(cvargs, sink, port, args.qos, expected, broker if sink == "mqtt" else None)
                    label = f"{name}, {sink}" + (f" qos {args.qos}" if sink == "mqtt" else "")
                    per = 1e6 / n if n else float("nan")
                    broker_text = f"{bcpu * per:.1f}" if sink == "mqtt" else "-"
                    print(f"{label:<28}{n:>9}{n / secs:>11.0f}{percentile(lat, 50):>9.2f}{percentile(lat, 99):>9.2f}"
                          f"{cpu * per:>20.1f}{broker_text:>20}", flush=True)
        finally:
            broker.terminate()
            broker.wait()


if __name__ == "__main__":
    main()
