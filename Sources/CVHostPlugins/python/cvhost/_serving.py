"""Serving one instance of a plugin on its socket: frames mapped from cvhost's shared memory
(read-only, no copy), calls made, results sent back for cvhost to check and write."""

from __future__ import annotations

import errno
import json
import mmap
import os
import sys
import threading
import traceback
from typing import Any, Callable, Optional

import cvhost

from ._protocol import (DESTROY, FLUSH, FORGET, FRAME, FRAME_SIZE, MAX_BATCH, MEMORY, MOST_REGIONS, ORDERED, PLACEMENT, PLACEMENT_AT, PLANE,
                        PROCESS, PROCESS_BATCH, SHARED_FLUSH, Channel, Reader, done, failed, result)

FOURCC = {0x59455247: "gray8", 0x32315559: "i420", 0x3231564E: "nv12", 0x56595559: "yuyv",
          0x33424752: "rgb24", 0x33524742: "bgr24"}
CHANNELS = {"gray8": (1,), "i420": (1, 1, 1), "nv12": (1, 2), "yuyv": (2,), "rgb24": (3,), "bgr24": (3,)}
RANGES = {0: "unknown", 1: "full", 2: "limited"}
MATRICES = {0: "none", 1: "bt601", 2: "bt709", 3: "bt2020"}


def json_value(value: Any) -> Any:
    """What json does not know but a plugin naturally emits: numpy's scalars (numpy.int64 from
    arr.sum(), numpy.bool_) as the Python number or bool they hold, numpy arrays as lists."""
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"a result's values are dicts, lists, str, int, float, bool, None and numpy numbers or arrays, "
                    f"not {type(value).__name__} ({value!r:.60})")


class Instance:
    """One instance of the plugin on one socket: its maps of cvhost's memory, its calls."""

    def __init__(self, channel: Channel, plugin: cvhost.Plugin, label: str) -> None:
        self.channel, self.plugin, self.label = channel, plugin, label
        self.maps: dict[int, tuple[mmap.mmap, memoryview]] = {}
        self.results: list[tuple[bytes, bytes]] = []
        # In process_batch: the call's frames (by id), each frame's results.
        self.batch: Optional[dict[int, int]] = None
        self.batch_results: list[list[tuple[bytes, bytes]]] = []
        self.errors: set[tuple[str, str, int]] = set()  # (type, file, line) of exceptions already printed
        self.thread: Optional[int] = None  # the thread of the call in progress: the only one whose emit() counts

    def emit(self, type: str, result: dict[str, Any], frame: Optional[cvhost.Frame] = None) -> None:
        # As the C ABI's emit says -EPERM: a result belongs to the call of its frame, so one from
        # a thread of the plugin's own (which would be stamped with whatever frame is in process()) is refused.
        if threading.get_ident() != self.thread:
            raise RuntimeError("emit() was called from a thread of the plugin's own: emit a frame's results "
                               "from process() or flush(), on the thread cvhost calls them on")
        if not isinstance(type, str):
            raise TypeError("emit(type, result): type is a str such as \"barcode\"")
        into = self.results
        if self.batch is not None:
            at = self.batch.get(id(frame)) if frame is not None else None
            if at is None:
                raise RuntimeError("emit() in process_batch() says which frame a result is of: "
                                   "self.emit(type, result, frame=f), f one of the frames it was given")
            into = self.batch_results[at]
        into.append((type.encode("utf-8", "replace"),
                     json.dumps(result, ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                                default=json_value).encode("utf-8")))

    def call(self, function: Callable[..., Any], *args: Any) -> None:
        """Runs one call of the plugin; its results, then `done` with 0 or -EIO for an exception."""
        self.results = []
        self.thread = threading.get_ident()
        self.plugin._cvhost_call = self.emit
        try:
            function(*args)
            status = 0
        except Exception as e:
            self.report(e)
            self.results = []
            status = -errno.EIO
        finally:
            self.plugin._cvhost_call = None
        for type, body in self.results:
            self.channel.send(result(type, body))
        self.channel.send(done(status))

    def call_batch(self, frames: list[Optional[cvhost.Frame]]) -> None:
        """One process_batch message: each frame's results, then its `done`, in the frames' order.
        A plugin with process_batch() is called once for the frames that could be mapped (an
        exception fails them all); one without it, process() for each."""
        usable = [f for f in frames if f is not None]
        own = type(self.plugin).process_batch is not cvhost.Plugin.process_batch
        if not own or len(usable) <= 1:
            for f in frames:
                if f is None:
                    self.channel.send(done(-errno.EINVAL))
                else:
                    self.call(self.plugin.process, f)
            return
        self.batch = {id(f): i for i, f in enumerate(usable)}
        self.batch_results = [[] for _ in usable]
        self.thread = threading.get_ident()
        self.plugin._cvhost_call = self.emit
        try:
            self.plugin.process_batch(usable)
            status = 0
        except Exception as e:
            self.report(e)
            status = -errno.EIO
        finally:
            self.plugin._cvhost_call = None
            self.batch = None
        # A failed call's results are dropped, as process()'s are.
        results = iter(self.batch_results if status == 0 else [[] for _ in usable])
        for f in frames:
            if f is None:
                self.channel.send(done(-errno.EINVAL))
                continue
            for type_, body in next(results):
                self.channel.send(result(type_, body))
            self.channel.send(done(status))
        self.batch_results = []

    def report(self, error: BaseException) -> None:
        """The traceback, once per distinct error (its type and where it was raised)."""
        # From the plugin's own frames on: the runtime's call is not the user's business.
        own = error.__traceback__.tb_next or error.__traceback__
        tb = traceback.extract_tb(own)
        key = (type(error).__name__, tb[-1].filename if tb else "", tb[-1].lineno if tb else 0)
        if key in self.errors:
            return
        self.errors.add(key)
        text = "".join(traceback.format_exception(type(error), error, own)).rstrip()
        sys.stderr.write(f"cvhost: [{self.label}] a Python exception (said once; the frames it fails are counted in frames.failed):\n{text}\n")
        sys.stderr.flush()

    def memory(self, memory_id: int, size: int, fds: list[int]) -> None:
        self.forget([memory_id])
        if not fds:
            return
        for extra in fds[1:]:
            os.close(extra)
        try:
            m = mmap.mmap(fds[0], size, mmap.MAP_SHARED, mmap.PROT_READ)
            self.maps[memory_id] = (m, memoryview(m))
        except (OSError, ValueError, OverflowError):
            pass  # its frames are refused as outside any memory
        finally:
            os.close(fds[0])

    def forget(self, ids: list[int]) -> None:
        for i in ids:
            entry = self.maps.pop(i, None)
            if entry is None:
                continue
            m, view = entry
            view.release()
            try:
                m.close()
            except BufferError:
                pass  # the plugin kept a view: the map goes when the last view does

    def frame(self, r: Reader) -> Optional[cvhost.Frame]:
        """A frame message's frame, with its full frame when one follows; None when a plane lies outside what is mapped."""
        f = self.placed(r)
        # Read to the frame's end either way: in a batch, the next frame follows.
        has_full = r.u8() == 1
        full = self.placed(r) if has_full else None
        count = r.u32()
        if count > MOST_REGIONS:
            raise ValueError(f"{count} regions in a frame")
        regions = tuple(tuple(r.u32() for _ in range(4)) for _ in range(count))
        if f is None or (has_full and full is None):
            return None
        f.full, f.regions = full, regions
        return f

    def placed(self, r: Reader) -> Optional[cvhost.Frame]:
        memory = [r.u64() for _ in range(r.u64())]
        raw = r.data[r.at:r.at + FRAME_SIZE]
        if len(raw) != FRAME_SIZE:
            return None
        r.at += FRAME_SIZE
        (_, fourcc, width, height, sequence, capture, pts, delivery, flags, crange, matrix, count) = FRAME.unpack_from(raw)
        f = cvhost.Frame()
        f.full, f.regions = None, ()
        f.width, f.height, f.format = width, height, FOURCC.get(fourcc, "0x%08x" % fourcc)
        f.sequence, f.delivery_index, f.capture_time_ns, f.presentation_time_ns = sequence, delivery, capture, pts
        f.independent = bool(flags & 1)
        f.color_range, f.color_matrix = RANGES.get(crange, str(crange)), MATRICES.get(matrix, str(matrix))
        sw, sh, cx, cy, cw, ch = PLACEMENT.unpack_from(raw, PLACEMENT_AT)
        f.source_width, f.source_height, f.content = sw, sh, (cx, cy, cw, ch)
        channels = CHANNELS.get(f.format, (1, 1, 1, 1))
        planes = []
        for i in range(min(count, 4, len(memory))):
            _, stride, pw, ph, _, offset, length = PLANE.unpack_from(raw, FRAME.size + i * PLANE.size)
            entry = self.maps.get(memory[i])
            if entry is None or offset + length > len(entry[1]):
                return None
            view = entry[1][offset:offset + length]
            planes.append(cvhost.Plane(view, stride, pw, ph, channels[i] if i < len(channels) else 1))
        f.planes = tuple(planes)
        return f

    def release(self, frame: cvhost.Frame) -> None:
        if frame.full is not None:
            self.release(frame.full)
        for p in frame.planes:
            try:
                p.data.release()
            except BufferError:
                pass  # a numpy view of it lives on: so does the map, until it goes

    def serve(self, on_destroy: Callable[[], None]) -> None:
        """Answers cvhost until it says destroy or goes away; then ends the process."""
        while True:
            got = self.channel.receive()
            if got is None:
                os._exit(0)
            message, fds = got
            r = Reader(message)
            kind = r.u8() if message else 0
            if kind == MEMORY:
                memory_id, size = r.u64(), r.u64()
                self.memory(memory_id, size, fds)
            elif kind == FORGET:
                self.forget([r.u64() for _ in range(r.u64())])
            elif kind in (PROCESS, ORDERED):
                frame = self.frame(r)
                if frame is None or kind == ORDERED:
                    self.channel.send(done(-errno.EINVAL))
                    continue
                self.call(self.plugin.process, frame)
                self.release(frame)
            elif kind == PROCESS_BATCH:
                count = r.u64()
                if not 1 <= count <= MAX_BATCH:
                    self.channel.send(failed("protocol_error", f"a batch of {count} frames (1 to {MAX_BATCH})"))
                    continue
                frames = [self.frame(r) for _ in range(count)]
                self.call_batch(frames)
                for f in frames:
                    if f is not None:
                        self.release(f)
            elif kind == FLUSH:
                self.call(self.plugin.flush)
            elif kind == SHARED_FLUSH:
                self.channel.send(done(0))
            elif kind == DESTROY:
                on_destroy()
                self.channel.send(done(0))
                os._exit(0)
            else:
                # A kind this runtime does not know (a cvhost newer than it): said at once, not
                # left for cvhost to time out on.
                for fd in fds:
                    os.close(fd)
                self.channel.send(failed("protocol_error", f"the Python runtime does not know message kind {kind}"))
