#!/usr/bin/python3
"""An RTSP camera that misbehaves, for the hardening tests: it serves an H.264 clip's frames (an
Annex B file, one slice a frame) over RTP interleaved in the RTSP connection (TCP), paced at 25
frames a second, and after the first --good frames sends one frame that never ends: fragments of
one NAL unit (FU-A), all with one RTP timestamp, none with the end bit or the marker, --endless
megabytes of them as fast as the client takes them; then the rest of the clip's frames, with
later timestamps, and a second later it closes the connection.

    hostile_rtsp_server.py --clip clip.h264 [--good 10] [--endless 300] [--port 0]

Prints "ready PORT" on stdout once it listens (--port 0, the default: a free port it picks);
serves one client, then exits. Only the requests FFmpeg's RTSP client sends are answered
(OPTIONS, DESCRIBE, SETUP over TCP, PLAY, TEARDOWN); UDP is refused (461), as some cameras do.
"""
import argparse
import base64
import os
import socket
import struct
import sys
import time


def nal_units(data):
    """The NAL units of an Annex B stream, without their start codes."""
    starts = []
    i = 0
    while True:
        i = data.find(b"\x00\x00\x01", i)
        if i < 0:
            break
        starts.append(i + 3)
        i += 3
    units = []
    for k, s in enumerate(starts):
        end = starts[k + 1] - 3 if k + 1 < len(starts) else len(data)
        while end > s and data[end - 1] == 0:  # a four-byte start code's leading zero
            end -= 1
        units.append(data[s:end])
    return units


class Camera:
    def __init__(self, conn, units, good, endless_mb):
        self.conn = conn
        self.seq = 0
        self.sps = next(u for u in units if u[0] & 0x1F == 7)
        self.pps = next(u for u in units if u[0] & 0x1F == 8)
        # Frames: each slice with the parameter sets or SEI before it.
        self.frames, current = [], []
        for u in units:
            current.append(u)
            if u[0] & 0x1F in (1, 5):
                self.frames.append(current)
                current = []
        self.good = good
        self.endless = endless_mb << 20

    def rtp(self, payload, timestamp, marker):
        header = struct.pack("!BBHII", 0x80, (0x80 if marker else 0) | 96, self.seq & 0xFFFF, timestamp & 0xFFFFFFFF, 0x1234)
        self.seq += 1
        packet = header + payload
        self.conn.sendall(b"$\x00" + struct.pack("!H", len(packet)) + packet)

    def send_unit(self, unit, timestamp, last):
        if len(unit) <= 1400:
            return self.rtp(unit, timestamp, last)
        indicator, kind = (unit[0] & 0xE0) | 28, unit[0] & 0x1F
        body = unit[1:]
        for at in range(0, len(body), 1400):
            start, end = at == 0, at + 1400 >= len(body)
            header = (0x80 if start else 0) | (0x40 if end else 0) | kind
            self.rtp(bytes([indicator, header]) + body[at:at + 1400], timestamp, last and end)

    def send_frame(self, frame, timestamp):
        for k, unit in enumerate(frame):
            self.send_unit(unit, timestamp, k == len(frame) - 1)

    def send_endless(self, timestamp):
        """A slice NAL unit begun and never ended: fragments as full as any, one timestamp, no marker."""
        indicator, kind = 0x60 | 28, 1
        filler = os.urandom(1400)
        self.rtp(bytes([indicator, 0x80 | kind]) + b"\x88" + filler[1:], timestamp, False)
        sent = 1400
        while sent < self.endless:
            self.rtp(bytes([indicator, kind]) + filler, timestamp, False)
            sent += 1400

    def play(self):
        t = 0
        for i, frame in enumerate(self.frames):
            if i == self.good:
                self.send_endless(t)
                t += 3600
            self.send_frame(frame, t)
            t += 3600
            time.sleep(0.04)
        # The end, as GStreamer's server says it: an RTCP BYE (FFmpeg hands out the last frame on it).
        bye = struct.pack("!BBHI", 0x81, 203, 1, 0x1234)
        self.conn.sendall(b"$\x01" + struct.pack("!H", len(bye)) + bye)
        time.sleep(1)


def serve(conn, units, args, port):
    data = b""
    camera = None
    while True:
        while b"\r\n\r\n" not in data:
            more = conn.recv(65536)
            if not more:
                return
            data += more
        head, data = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method = lines[0].split(" ")[0]
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
        cseq = headers.get("cseq", "0")
        extra, body, status = "", "", "200 OK"
        if method == "OPTIONS":
            extra = "Public: OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN\r\n"
        elif method == "DESCRIBE":
            camera = Camera(conn, units, args.good, args.endless)
            sprop = base64.b64encode(camera.sps).decode() + "," + base64.b64encode(camera.pps).decode()
            body = ("v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=hostile\r\nc=IN IP4 0.0.0.0\r\nt=0 0\r\n"
                    "m=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\n"
                    f"a=fmtp:96 packetization-mode=1;sprop-parameter-sets={sprop}\r\na=control:track0\r\n")
            extra = f"Content-Base: rtsp://127.0.0.1:{port}/cam/\r\nContent-Type: application/sdp\r\n"
        elif method == "SETUP":
            if "interleaved" not in headers.get("transport", ""):
                status = "461 Unsupported Transport"
            else:
                extra = "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\nSession: 12345678\r\n"
        elif method == "PLAY":
            extra = "Session: 12345678\r\n"
        elif method == "TEARDOWN":
            conn.sendall(f"RTSP/1.0 200 OK\r\nCSeq: {cseq}\r\n\r\n".encode())
            return
        else:
            status = "501 Not Implemented"
        if body:
            extra += f"Content-Length: {len(body)}\r\n"
        conn.sendall(f"RTSP/1.0 {status}\r\nCSeq: {cseq}\r\n{extra}\r\n{body}".encode())
        if method == "PLAY":
            try:
                camera.play()
            except (BrokenPipeError, ConnectionResetError):
                pass
            return


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--clip", required=True)
    ap.add_argument("--good", type=int, default=10)
    ap.add_argument("--endless", type=int, default=300, help="megabytes of the frame that never ends")
    args = ap.parse_args()
    with open(args.clip, "rb") as f:
        units = nal_units(f.read())
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(1)
    port = listener.getsockname()[1]
    print(f"ready {port}", flush=True)
    conn, _ = listener.accept()
    with conn:
        serve(conn, units, args, port)


if __name__ == "__main__":
    sys.exit(main())
