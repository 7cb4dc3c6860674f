"""cvhost's worker protocol, the Python end (the Swift end: Sources/CVHostPlugins/WorkerMessage.swift
and WorkerChannel.swift; the two are written apart and kept in step by PROTOCOL_VERSION, which
both check at hello, and by the tests that run every message through both).

One message per SOCK_SEQPACKET packet, long ones split: each packet is led by a byte that says
whether more follow. A message is a kind byte, then its fields: integers little-endian, strings
and byte strings as a u64 length and the bytes.
"""

from __future__ import annotations

import socket
import struct
from typing import Optional

PROTOCOL_VERSION = 6
"""The version of the messages below. Hello carries cvhost's; the worker answers a hello of
another version with `failed` (and its own version in the message), and `ready` carries the
worker's, which cvhost checks in turn. 6: a frame's full frame is followed by its motion regions
(a count, then x, y, width, height each, u32), and ready's request flags may ask for them. 5: process_batch, several frames in one message (a count,
then each as a process message's frame), answered by each frame's results and `done` in turn. 4: the worker imports its plugin before the hello
(--preload); ready's request ends with its flags; a frame is followed by a byte saying whether the
full frame follows it (its memory and fields, as a frame's). 3: hello says which instance the
worker is of how many; ready carries the frames the plugin asked for (request_frames); frames say
where the picture lies in them. Version 1 had no version."""

# Message kinds (WorkerMessage.Kind).
HELLO, MEMORY, FORGET, PROCESS, ORDERED, FLUSH, SHARED_FLUSH, DESTROY, PROCESS_BATCH = 1, 2, 3, 4, 5, 6, 7, 8, 9
READY, FAILED, RESULT, DONE = 64, 65, 66, 67
PACKET_PAYLOAD = 32 * 1024
MAX_BATCH = 64  # the most frames in one process_batch message (the host option batch's range)

# cvhost_frame and cvhost_plane as Sources/CVHostPluginABI/abi_layout.c pins them (LP64): the 2.0
# fields, four planes, then 2.2's source size and content rectangle, then 2.3's `full` pointer
# and 2.4's region count and pointer (meaningless in a message: the full frame and the regions
# follow the frame).
FRAME = struct.Struct("<IIIIQqqQIIII")
PLANE = struct.Struct("<QIIIiQQ")
PLACEMENT = struct.Struct("<IIIIII")
PLACEMENT_AT = FRAME.size + 4 * PLANE.size
FRAME_SIZE = PLACEMENT_AT + PLACEMENT.size + 8 + 16
assert FRAME.size == 64 and PLANE.size == 40 and FRAME_SIZE == 272
MOST_REGIONS = 4  # FrameMotion.mostSquares
# cvhost_resize; cvhost_frame_request's flags.
RESIZE = {"stretch": 1, "letterbox": 2}
FRAME_REQUEST_FULL_FRAME = 1
FRAME_REQUEST_MOTION_REGIONS = 2


class Channel:
    """One instance's socket to cvhost (descriptor 3 + its index)."""

    def __init__(self, fd: int) -> None:
        self.sock = socket.socket(fileno=fd)

    def send(self, body: bytes, fds: tuple[int, ...] = ()) -> None:
        start = 0
        while True:
            end = min(len(body), start + PACKET_PAYLOAD)
            packet = bytes([1 if end < len(body) else 0]) + body[start:end]
            if start == 0 and fds:
                self.sock.sendmsg([packet], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("%di" % len(fds), *fds))])
            else:
                self.sock.send(packet)
            start = end
            if start >= len(body):
                return

    def receive(self) -> Optional[tuple[bytes, list[int]]]:
        """(message bytes, descriptors), or None when cvhost is gone."""
        message, fds = b"", []
        while True:
            try:
                data, ancillary, _, _ = self.sock.recvmsg(PACKET_PAYLOAD + 1, socket.CMSG_SPACE(4 * 4))
            except (ConnectionResetError, BrokenPipeError):
                return None
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds += struct.unpack("%di" % (len(payload) // 4), payload[:len(payload) // 4 * 4])
            if not data:
                return None
            message += data[1:]
            if data[0] == 0:
                return message, fds


class Reader:
    """Reads a message's fields in order; a field past its end raises (struct.error, IndexError)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def u8(self) -> int:
        self.at += 1
        return self.data[self.at - 1]

    def u32(self) -> int:
        (v,) = struct.unpack_from("<I", self.data, self.at)
        self.at += 4
        return v

    def u64(self) -> int:
        (v,) = struct.unpack_from("<Q", self.data, self.at)
        self.at += 8
        return v

    def bytes(self) -> bytes:
        n = self.u64()
        if self.at + n > len(self.data):
            raise IndexError("a field past the message's end")
        self.at += n
        return self.data[self.at - n:self.at]

    def string(self) -> str:
        return self.bytes().decode("utf-8", "replace")


def data(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def ready(request: Optional[tuple[int, int, int, int, int, int]] = None) -> bytes:
    """`request`: the frames asked for (width, height, resize, pad, pixel format fourcc or 0, flags)."""
    body = bytes([READY]) + struct.pack("<I", PROTOCOL_VERSION)
    return body + (b"\x01" + struct.pack("<6I", *request) if request else b"\x00")


def failed(kind: str, message: str) -> bytes:
    """`kind` is a PluginLoadError.Kind raw value (its exit code), or protocol_error."""
    return bytes([FAILED]) + data(kind.encode()) + data(message.encode())


def done(status: int) -> bytes:
    return bytes([DONE]) + struct.pack("<I", status & 0xFFFFFFFF)


def result(type: bytes, body: bytes) -> bytes:
    return bytes([RESULT]) + data(type) + data(body)
