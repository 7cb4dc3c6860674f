#!/usr/bin/env python3
"""A TCP server that accepts connections and never says anything: what a hung camera does.
Prints "ready PORT" once it listens on a free loopback port; runs until killed."""
import socket
import time

server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(8)
print(f"ready {server.getsockname()[1]}", flush=True)
held = []
while True:
    connection, _ = server.accept()
    held.append(connection)  # kept open, never answered
    time.sleep(0.01)
