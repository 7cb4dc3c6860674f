#!/usr/bin/env python3
"""Viewers of cvhost's /stream.mjpg for the live-view tests: READERS connections that read
everything, and STALLED connections that ask for the stream and then never read. Prints
"connected" once every connection is made, then, when stdin closes, one JSON line: the bytes and
pictures each reader got, and whether each stalled connection was closed by cvhost.

    mjpeg_viewers.py PORT READERS STALLED
"""
import json
import socket
import sys
import threading

port, readers, stalled = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
request = b"GET /stream.mjpg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
counts = [{"bytes": 0, "pictures": 0} for _ in range(readers)]


def read(i, s):
    tail = b""
    while True:
        try:
            data = s.recv(65536)
        except OSError:
            return
        if not data:
            return
        counts[i]["bytes"] += len(data)
        chunk = tail + data
        counts[i]["pictures"] += chunk.count(b"--cvhost-frame\r\n")
        tail = chunk[-16:]


sockets = []
for i in range(readers):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(request)
    threading.Thread(target=read, args=(i, s), daemon=True).start()
    sockets.append(s)
idle = []
for _ in range(stalled):
    s = socket.create_connection(("127.0.0.1", port))
    # A small receive buffer: the connection is full after a few pictures.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(request)
    idle.append(s)
print("connected", flush=True)
sys.stdin.read()


def closed_by_peer(s):
    """Whether cvhost closed the connection: reading everything that waits ends in EOF."""
    s.settimeout(2)
    try:
        while True:
            data = s.recv(1 << 20)
            if not data:
                return True
    except (socket.timeout, OSError):
        return False


print(json.dumps({"readers": counts, "stalled_closed": [closed_by_peer(s) for s in idle]}), flush=True)
