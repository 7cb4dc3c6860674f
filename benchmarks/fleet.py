#!/usr/bin/env python3
"""A site of cvhost nodes on a 3-server NATS JetStream cluster (all on loopback): how fast a dead
node's inputs run again elsewhere, what is lost or doubled on the way, and what the site costs the
store. Each node runs the null plugin (a result a frame) on test-pattern inputs given to the site,
writes its results to stdout (a file) and to the cluster's JetStream through a spool.

  takeover     --kills rounds of SIGKILL, then as many of SIGTERM: each time the node running the
               most inputs goes; the time from the signal to the first result of each of its inputs
               on another node (the frames' own times, ts, in the lines); p50 and max. The node is
               started again (same name and spool) and the site left to rebalance before the next.
  lost         result lines the nodes wrote to stdout that the stream does not hold once every node
               has stopped (a node killed resends its spool when it is started again)
  duplicates   result lines written twice (by event_id; the stream drops a resend by Nats-Msg-Id)
  store        messages and bytes a second between each node and the cluster (its store's
               connection, from the servers' /connz), in and out
  soak         --soak-minutes with --soak-inputs inputs on 3 nodes, a node SIGKILLed every minute and
               started again: every input running at the end, each kill's takeover, lost and doubled

    benchmarks/fleet.py [--inputs 6] [--kills 20] [--soak-minutes 10] [--soak-inputs 24]

Needs nats-server (scripts/install-deps.sh --tests) and a release build (swift build -c release).
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CVHOST = os.environ.get("CVHOST", os.path.join(ROOT, ".build/release/cvhost"))
sys.path.insert(0, HERE)
from benchlib import free_port  # noqa: E402


class Cluster:
    """Three nats-servers with JetStream, clustered, each with a monitoring port (/connz)."""

    def __init__(self, work):
        self.ports = [(free_port(), free_port(), free_port()) for _ in range(3)]
        routes = ",".join(f"nats://127.0.0.1:{r}" for _, r, _ in self.ports)
        self.procs = []
        for i, (client, route, monitor) in enumerate(self.ports):
            folder = os.path.join(work, f"nats{i}")
            os.makedirs(folder)
            self.procs.append(subprocess.Popen(
                ["nats-server", "-js", "-a", "127.0.0.1", "-p", str(client), "-m", str(monitor), "-sd", folder,
                 "--server_name", f"n{i}", "--cluster_name", "bench", "--cluster", f"nats://127.0.0.1:{route}",
                 "--routes", routes, "-l", os.path.join(folder, "log")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        self.hosts = ",".join(f"127.0.0.1:{c}" for c, _, _ in self.ports)

    def connections(self):
        """Every client connection of every server: name -> (in_msgs, out_msgs, in_bytes, out_bytes)."""
        out = {}
        for _, _, monitor in self.ports:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{monitor}/connz?limit=1024", timeout=5) as r:
                    for c in json.load(r).get("connections", []):
                        name = c.get("name", "")
                        prev = out.get(name, (0, 0, 0, 0))
                        out[name] = tuple(a + b for a, b in zip(prev, (c["in_msgs"], c["out_msgs"], c["in_bytes"], c["out_bytes"])))
            except OSError:
                pass
        return out

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait()


def fleet(url, *args, check=True):
    r = subprocess.run([CVHOST, "fleet", "--fleet", url, *args], capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise RuntimeError(f"cvhost fleet {' '.join(args)}: {r.stderr.strip()}")
    return r


def status(url):
    r = fleet(url, "status", "--json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


class Node:
    def __init__(self, name, url, cluster, work):
        self.name, self.url = name, url
        self.out = os.path.join(work, f"{name}.jsonl")
        self.err = os.path.join(work, f"{name}.err")
        self.spool = os.path.join(work, f"spool-{name}")
        self.first = cluster.hosts.split(",")[0]
        self.proc = None
        self.start()

    def start(self):
        os.makedirs(self.spool, mode=0o700, exist_ok=True)
        self.proc = subprocess.Popen(
            [CVHOST, "run", "--fleet", self.url, "--node", self.name, "--plugin", "null:results=1", "--results-only",
             "--no-stdin-commands", "--metrics-interval", "0", "--output", "-",
             "--output", f"nats://{self.first}/bench?spool={self.spool}&events=result"],
            stdout=open(self.out, "a"), stderr=open(self.err, "a"), stdin=subprocess.DEVNULL)

    def signal(self, sig):
        self.proc.send_signal(sig)
        self.proc.wait()


def results(nodes):
    """Every result line every node wrote: (source, node, ts, event_id)."""
    out = []
    for n in nodes:
        with open(n.out) as f:
            for line in f:
                try:
                    o = json.loads(line)
                except ValueError:
                    continue
                if o.get("event") == "result":
                    out.append((o["source"], o.get("node"), o["ts"], o["event_id"]))
    return out


def wait_spread(url, inputs, nodes, timeout=120):
    """Until every input streams and no node runs more than its share."""
    share = -(-inputs // nodes)
    deadline = time.time() + timeout
    while time.time() < deadline:
        s = status(url)
        if s:
            owners = [i.get("owner") for i in s["inputs"] if i.get("state") == "streaming"]
            if len(owners) == inputs and max(owners.count(o) for o in set(owners)) <= share and len(set(owners)) == nodes:
                return True
        time.sleep(1)
    return False


def takeover(url, nodes, victim, sig, timeout=60):
    """Signals the node; returns the seconds from it to the first result of each of its inputs on another node."""
    s = status(url)
    theirs = [i["name"] for i in s["inputs"] if i.get("owner") == victim.name]
    t0 = time.time()
    victim.signal(sig)
    firsts = {}
    deadline = t0 + timeout
    while time.time() < deadline and len(firsts) < len(theirs):
        time.sleep(0.5)
        for source, node, ts, _ in results([n for n in nodes if n is not victim]):
            if source in theirs and node != victim.name and ts > t0:
                firsts[source] = min(firsts.get(source, ts), ts)
    return [firsts.get(i, float("nan")) - t0 for i in theirs]


def stream_messages(cluster):
    """How many messages the bench's JetStream stream holds (the servers' /jsz): each line once (a resend is dropped by its id)."""
    most = 0
    for _, _, monitor in cluster.ports:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{monitor}/jsz?streams=true", timeout=5) as r:
                for account in json.load(r).get("account_details", []):
                    for st in account.get("stream_detail", []):
                        if st.get("name") == "CVHOST":
                            most = max(most, st["state"]["messages"])
        except OSError:
            pass
    return most


def traffic(cluster, names, seconds):
    before = cluster.connections()
    time.sleep(seconds)
    after = cluster.connections()
    rows = []
    for n in names:
        b, a = before.get(f"cvhost {n}", (0, 0, 0, 0)), after.get(f"cvhost {n}", (0, 0, 0, 0))
        rows.append((n, *[(y - x) / seconds for x, y in zip(b, a)]))
    return rows


def p50max(values):
    v = [x for x in values if x == x]
    return (statistics.median(v), max(v)) if v else (float("nan"), float("nan"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=6)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--soak-minutes", type=float, default=10)
    ap.add_argument("--soak-inputs", type=int, default=24)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cvhost-fleet-bench-")
    cluster = Cluster(work)
    try:
        time.sleep(3)
        url = f"nats://{cluster.hosts}/bench"
        for i in range(args.inputs):
            fleet(url, "add-input", f"cam{i}", "testsrc:160x120@5", "--needs", "null")
        nodes = [Node(n, url, cluster, work) for n in ("a", "b", "c")]
        if not wait_spread(url, args.inputs, 3):
            sys.exit("the site did not spread its inputs within 120 s")
        store = traffic(cluster, [n.name for n in nodes], 20)
        times = {}
        for sig in (signal.SIGKILL, signal.SIGTERM):
            times[sig] = []
            for _ in range(args.kills):
                s = status(url)
                counts = {n.name: sum(1 for i in s["inputs"] if i.get("owner") == n.name) for n in nodes}
                victim = max(nodes, key=lambda n: counts[n.name])
                times[sig] += takeover(url, nodes, victim, sig)
                victim.start()
                wait_spread(url, args.inputs, 3)
        print(f"{args.inputs} inputs (testsrc 160x120@5, null:results=1) on 3 nodes, a 3-server cluster, leases of 10 s")
        for sig, name in ((signal.SIGKILL, "SIGKILL"), (signal.SIGTERM, "SIGTERM")):
            p50, mx = p50max(times[sig])
            print(f"  takeover after {name}: p50 {p50:.1f} s, max {mx:.1f} s over {args.kills} ({len(times[sig])} inputs moved)")
        for name, in_msgs, out_msgs, in_bytes, out_bytes in store:
            print(f"  store traffic of node {name}: {in_msgs:.1f} msgs/s in, {out_msgs:.1f} out; {in_bytes / 1024:.2f} KiB/s in, {out_bytes / 1024:.2f} out")
        for n in nodes:
            n.signal(signal.SIGTERM)
        ids = [x[3] for x in results(nodes)]
        held = stream_messages(cluster)
        print(f"  result lines written to stdout: {len(ids)} (the same event_id twice: {len(ids) - len(set(ids))});"
              f" held by the stream: {held} ({len(set(ids)) - held:+d} written to stdout and not held)")

        if args.soak_minutes > 0:
            url = f"nats://{cluster.hosts}/soak"
            for i in range(args.soak_inputs):
                fleet(url, "add-input", f"cam{i}", "testsrc:160x120@5", "--needs", "null")
            soak = os.path.join(work, "soak")
            os.makedirs(soak)
            nodes = [Node(n, url, cluster, soak) for n in ("a", "b", "c")]
            if not wait_spread(url, args.soak_inputs, 3):
                sys.exit("the soak site did not spread its inputs within 120 s")
            end = time.time() + args.soak_minutes * 60
            kills = []
            k = 0
            while time.time() < end:
                started = time.time()
                victim = nodes[k % 3]
                k += 1
                kills += takeover(url, nodes, victim, signal.SIGKILL)
                victim.start()
                time.sleep(max(0, 60 - (time.time() - started)))
            ok = wait_spread(url, args.soak_inputs, 3)
            p50, mx = p50max(kills)
            lines = results(nodes)
            ids = [x[3] for x in lines]
            print(f"soak: {args.soak_inputs} inputs on 3 nodes, {args.soak_minutes:g} min, a node SIGKILLed every minute ({k} kills):"
                  f" takeover p50 {p50:.1f} s, max {mx:.1f} s; every input running at the end: {'yes' if ok else 'NO'};"
                  f" {len(ids)} result lines, the same event_id twice: {len(ids) - len(set(ids))}")
            for n in nodes:
                n.signal(signal.SIGTERM)
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
