#!/usr/bin/python3
"""A live RTSP camera for the latency benchmark: GStreamer's gst-rtsp-server encoding a test
pattern live (H.264, WxH@FPS) with a QR code on every frame that holds the frame's timestamp
(GStreamer's debugqroverlay: {"TIMESTAMP": pts in ns, ...}).

    rtsp_live_server.py [--size 1280x720] [--fps 30]

Prints "ready PORT" once it listens, then one line "frame PTS_NS MONOTONIC_NS" for every frame as
the overlay draws it: when the frame was "captured", on CLOCK_MONOTONIC, which every process of
this machine shares, so a reader can subtract it from the time it got the frame's result. One
client at a time (each gets its own pipeline, its timestamps from 0). Runs under Debian's python3.
"""
import argparse
import sys
import time

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--fps", type=int, default=30)
    args = ap.parse_args()
    width, height = args.size.split("x")
    Gst.init(None)
    for element in ("x264enc", "debugqroverlay"):
        if Gst.ElementFactory.find(element) is None:
            sys.exit(f"rtsp_live_server: GStreamer has no {element}: run scripts/install-deps.sh --benchmarks")
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service("0")
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch(
        f"( videotestsrc is-live=true pattern=ball ! video/x-raw,width={width},height={height},framerate={args.fps}/1 "
        "! debugqroverlay name=qr pixel-size=4 x=10 y=10 ! videoconvert "
        f"! x264enc tune=zerolatency speed-preset=ultrafast key-int-max={args.fps} bitrate=4000 "
        "! rtph264pay name=pay0 pt=96 config-interval=1 )")

    def stamp(pad, info):
        print(f"frame {info.get_buffer().pts} {time.clock_gettime_ns(time.CLOCK_MONOTONIC)}", flush=True)
        return Gst.PadProbeReturn.OK

    def configure(_factory, media):
        media.get_element().get_by_name("qr").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, stamp)

    factory.connect("media-configure", configure)
    server.get_mount_points().add_factory("/live", factory)
    if server.attach(None) == 0:
        sys.exit("rtsp_live_server: cannot listen on 127.0.0.1")
    print(f"ready {server.get_bound_port()}", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
