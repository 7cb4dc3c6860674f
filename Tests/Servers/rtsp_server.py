#!/usr/bin/python3
"""A real RTSP server for the tests: GStreamer's gst-rtsp-server (Debian's
gir1.2-gst-rtsp-server-1.0) serving an MP4 file's video (H.264 by default; --codec h265 or mpeg4
for those) at rtsp://127.0.0.1:PORT/codes, paced in real time like a camera, to as many clients
as connect.

    rtsp_server.py [--port PORT] --file clip.mp4 [--codec h264|h265|mpeg4] [--user U --password P] [--udp-only]
                   [--also PATH=FILE ...]

--also serves another file at rtsp://127.0.0.1:PORT/PATH the same way (a camera's second stream).

--user/--password require Basic authentication; --udp-only refuses TCP interleaving (RTP over the
RTSP connection) as some cameras do, answering SETUP over TCP with 461 Unsupported Transport.
Prints "ready PORT" on stdout once it listens (--port 0, the default: a free port it picks);
runs until killed. Runs under Debian's python3
(/usr/bin/python3), which has the GObject bindings.
"""
import argparse
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtsp", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtsp, GstRtspServer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--file", required=True)
    ap.add_argument("--user")
    ap.add_argument("--password")
    ap.add_argument("--udp-only", action="store_true")
    ap.add_argument("--codec", choices=["h264", "h265", "mpeg4"], default="h264")
    ap.add_argument("--also", action="append", default=[])
    args = ap.parse_args()
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(args.port))
    def factory_of(path):
        factory = GstRtspServer.RTSPMediaFactory()
        # The file's video as it is (no re-encoding), paced by the server's clock.
        parse, pay = {"h264": ("h264parse", "rtph264pay config-interval=1"), "h265": ("h265parse", "rtph265pay config-interval=1"),
                      "mpeg4": ("mpeg4videoparse", "rtpmp4vpay config-interval=1")}[args.codec]
        factory.set_launch(f'( filesrc location="{path}" ! qtdemux ! {parse} ! {pay} name=pay0 pt=96 )')
        # Every client gets the file from its start (a camera would give the present moment).
        factory.set_shared(False)
        factory.set_protocols(GstRtsp.RTSPLowerTrans.UDP if args.udp_only else
                              GstRtsp.RTSPLowerTrans.UDP | GstRtsp.RTSPLowerTrans.TCP)
        if args.user:
            auth = GstRtspServer.RTSPAuth()
            token = GstRtspServer.RTSPToken()
            token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, "user")
            auth.add_basic(GstRtspServer.RTSPAuth.make_basic(args.user, args.password), token)
            server.set_auth(auth)
            permissions = GstRtspServer.RTSPPermissions()
            permissions.add_permission_for_role("user", GstRtspServer.RTSP_PERM_MEDIA_FACTORY_ACCESS, True)
            permissions.add_permission_for_role("user", GstRtspServer.RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, True)
            factory.set_permissions(permissions)
        return factory

    server.get_mount_points().add_factory("/codes", factory_of(args.file))
    for also in args.also:
        mount, path = also.split("=", 1)
        server.get_mount_points().add_factory("/" + mount, factory_of(path))
    if server.attach(None) == 0:
        sys.exit(f"rtsp_server: cannot listen on 127.0.0.1:{args.port}")
    print(f"ready {server.get_bound_port()}", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
