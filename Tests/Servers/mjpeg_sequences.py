#!/usr/bin/env python3
"""Reads cvhost's /stream.mjpg for SECONDS and prints, as one JSON list, the X-Sequence of every
picture it got (the frame each picture shows), for the live-view tests.

    mjpeg_sequences.py PORT SECONDS
"""
import json
import re
import socket
import sys
import time

port, seconds = int(sys.argv[1]), float(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET /stream.mjpg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
s.settimeout(1)
data, end = b"", time.monotonic() + seconds
while time.monotonic() < end:
    try:
        chunk = s.recv(1 << 16)
    except socket.timeout:
        continue
    if not chunk:
        break
    data += chunk
print(json.dumps([int(m) for m in re.findall(rb"\r\nX-Sequence: (\d+)\r\n", data)]))
