#!/usr/bin/env python3
"""An HTTP server for the stream tests (Python's http.server): static files under --root (an HLS
playlist and its segments, made by FFmpeg), and /video.mjpg, an MJPEG stream as IP cameras serve
it (multipart/x-mixed-replace, one JPEG part per frame, paced at --fps) from the JPEG files in
--frames, sent once, then the connection is closed. Prints "ready PORT" (a free loopback port)
once it listens; runs until killed.

    http_server.py --root DIR [--frames DIR --fps 30]
"""
import argparse
import functools
import glob
import http.server
import os
import time


class Handler(http.server.SimpleHTTPRequestHandler):
    frames = []
    fps = 30.0

    def do_GET(self):
        if self.path != "/video.mjpg":
            return super().do_GET()
        self.send_response(200)
        self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=cvhostframe")
        self.end_headers()
        try:
            for path in self.frames:
                with open(path, "rb") as f:
                    jpeg = f.read()
                self.wfile.write(b"--cvhostframe\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(jpeg))
                self.wfile.write(jpeg + b"\r\n")
                self.wfile.flush()
                time.sleep(1 / self.fps)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--frames")
    ap.add_argument("--fps", type=float, default=30)
    args = ap.parse_args()
    Handler.frames = sorted(glob.glob(os.path.join(args.frames, "*.jpg"))) if args.frames else []
    Handler.fps = args.fps
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=args.root))
    print(f"ready {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
