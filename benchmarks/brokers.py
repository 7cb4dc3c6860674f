#!/usr/bin/env python3
"""Results through each broker output in one run: MQTT (mosquitto), Kafka (librdkafka's mock
cluster, hosted by Tests/Servers/kafka_mock_cluster.c) and NATS JetStream (nats-server -js, file
storage), each started here on loopback, one at a time (two cores).

  live:   null:results=20 on testsrc:64x48@(RATE/20) for --seconds: RATE results/s offered. Latency is
          cvhost's own (the final metrics' output.latency_ms): from a line's making to the broker's
          acknowledgement, for the lines acknowledged by the end of the input. Sustained: the run
          exits 0 (nothing dropped, nothing left) and `drain s` is how long the last lines took.
  flood:  null:results=20 on testsrc:64x48:unpaced, --frames frames: as fast as it goes; results/s
          from cvhost's start to its exit (which waits for every acknowledgement). No latency: it is
          the backlog's.

CPU per 1000 results is cvhost's own (user + system), and the broker's beside it. The Kafka figures
are against librdkafka's mock cluster (in memory, no replication): they measure cvhost's side and
librdkafka's, not a Kafka cluster's.

    benchmarks/brokers.py [--seconds 10] [--rate 20000] [--frames 5000] [--spool]
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

from benchlib import cpu_seconds, free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CVHOST = os.path.join(ROOT, ".build", "release", "cvhost")




def wait_port(port, what):
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.02)
    sys.exit(f"{what} did not start")


class Mosquitto:
    name = "mqtt"

    def __init__(self, folder):
        port = free_port()
        conf = os.path.join(folder, "mosquitto.conf")
        with open(conf, "w") as f:
            f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\nuser {os.environ.get('USER') or 'root'}\n"
                    "max_queued_messages 0\nmax_inflight_messages 0\nlog_type error\n")
        self.process = subprocess.Popen(["/usr/sbin/mosquitto", "-c", conf], stderr=subprocess.DEVNULL)
        wait_port(port, "mosquitto")
        self.url = f"mqtt://127.0.0.1:{port}/bench?"


class KafkaMock:
    name = "kafka"

    def __init__(self, folder):
        helper = os.path.join(folder, "kafka_mock_cluster")
        subprocess.run(["cc", "-O2", "-o", helper, os.path.join(ROOT, "Tests", "Servers", "kafka_mock_cluster.c"), "-lrdkafka"], check=True)
        self.process = subprocess.Popen([helper, "3"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        bootstrap = self.process.stdout.readline().strip()
        self.process.stdin.write("topic bench 3\n")
        self.process.stdin.flush()
        if self.process.stdout.readline().strip() != "ok":
            sys.exit("the mock cluster did not make the topic")
        self.url = f"kafka://{bootstrap}/bench?"


class NATS:
    name = "nats"

    def __init__(self, folder):
        port = free_port()
        self.process = subprocess.Popen(["/usr/sbin/nats-server", "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", os.path.join(folder, "js")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, "nats-server")
        self.url = f"nats://127.0.0.1:{port}/bench?"


def run(args, url, broker_pid):
    """Runs cvhost with its lines to `url` (and stdout, read here for the final metrics).
    Returns (seconds, results, seconds after the final metrics line, final output section, cvhost CPU s, broker CPU s)."""
    broker0 = cpu_seconds(broker_pid)
    start = time.monotonic()
    proc = subprocess.Popen([CVHOST, "run", "-q", "--metrics-interval", "0", "--output", url, "--output", "-"] + args,
                            stdout=subprocess.PIPE, text=True, bufsize=1 << 16)
    final = None
    results = 0
    final_at = start
    for line in proc.stdout:
        if '"event":"result"' in line:
            results += 1
        elif '"event":"metrics"' in line and '"final":true' in line:
            final = json.loads(line)
            final_at = time.monotonic()
    _, status, usage = os.wait4(proc.pid, 0)
    end = time.monotonic()
    seconds = end - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"cvhost exited {code} on {url.split('?')[0]}")
    if final is None:
        sys.exit("no final metrics line")
    output = next(o for o in final["output"] if o["output"] != "stdout")
    return seconds, results, end - final_at, output, usage.ru_utime + usage.ru_stime, cpu_seconds(broker_pid) - broker0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rate", type=int, default=20000, help="results a second offered in the live run (a multiple of 20)")
    ap.add_argument("--frames", type=int, default=5000)
    ap.add_argument("--spool", action="store_true", help="with spool=DIR (every line on disk until acknowledged)")
    args = ap.parse_args()
    if not os.access(CVHOST, os.X_OK):
        sys.exit("build first: swift build -c release")
    fps = args.rate // 20
    live = ["--plugin", "null:results=20", "--input", f"testsrc:64x48@{fps}", "--duration", str(args.seconds)]
    flood = ["--plugin", "null:results=20", "--input", "testsrc:64x48:unpaced", "--max-frames", str(args.frames)]
    print(f"{'output':<8}{'run':<8}{'results':>9}{'results/s':>11}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'drain s':>9}{'cvhost CPU ms/1000':>20}{'broker CPU ms/1000':>20}")
    for kind in [Mosquitto, KafkaMock, NATS]:
        with tempfile.TemporaryDirectory() as folder:
            broker = kind(folder)
            try:
                for name, cvargs in [("live", live), ("flood", flood)]:
                    url = broker.url
                    if args.spool:
                        spool = os.path.join(folder, f"spool-{name}")
                        url += f"spool={spool}&"
                    seconds, n, drain, out, cpu, bcpu = run(cvargs, url + "queue=1000000", broker.process.pid)
                    latency = (out.get("latency_ms") or {}) if name == "live" else {}
                    rate = n / (args.seconds if name == "live" else seconds)
                    per = 1e6 / n if n else float("nan")
                    cells = "".join(f"{latency[k]:>9.2f}" if k in latency else f"{'-':>9}" for k in ["p50", "p99", "max"])
                    print(f"{kind.name:<8}{name:<8}{n:>9}{rate:>11.0f}{cells}{drain:>9.2f}{cpu * per:>20.1f}{bcpu * per:>20.1f}", flush=True)
            finally:
                if isinstance(broker, KafkaMock):
                    broker.process.stdin.close()
                else:
                    broker.process.terminate()
                broker.process.wait()


if __name__ == "__main__":
    main()
