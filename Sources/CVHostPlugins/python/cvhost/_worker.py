"""The worker process of a Python plugin, and the description of one (`cvhost plugins ./x.py`).

    python3 RUNTIME/cvhost/__main__.py describe FILE            the plugin's info as one JSON object
    python3 RUNTIME/cvhost/__main__.py worker CHANNELS PARENT   serve cvhost on descriptors 3..

cvhost runs these by path (never `-m cvhost`, which puts the current folder first on sys.path), with
PYTHONSAFEPATH=1, in the plugin's folder: what is imported is the runtime, the plugin's own folder
when only its owner can change it, and the environment's packages.

The worker speaks cvhost's worker protocol (Sources/CVHostPlugins/WorkerMessage.swift: one
message per SOCK_SEQPACKET packet, long ones split, each packet led by a byte that says whether
more follow) and maps the frames' shared memory read-only with mmap, so that a plane is a view of
cvhost's pixels, not a copy. This file and that one change together: they ship together.
"""

import ctypes
import errno
import importlib.util
import json
import mmap
import os
import socket
import struct
import sys
import threading
import traceback

import cvhost

# Message kinds (WorkerMessage.Kind).
HELLO, MEMORY, FORGET, PROCESS, ORDERED, FLUSH, SHARED_FLUSH, DESTROY = 1, 2, 3, 4, 5, 6, 7, 8
READY, FAILED, RESULT, DONE = 64, 65, 66, 67
PACKET_PAYLOAD = 32 * 1024

# cvhost_frame and cvhost_plane as Sources/CVHostPluginABI/abi_layout.c pins them (LP64).
FRAME = struct.Struct("<IIIIQqqQIIII")
PLANE = struct.Struct("<QIIIiQQ")
FRAME_SIZE = FRAME.size + 4 * PLANE.size
assert FRAME.size == 64 and PLANE.size == 40 and FRAME_SIZE == 224

FOURCC = {0x59455247: "gray8", 0x32315559: "i420", 0x3231564E: "nv12", 0x56595559: "yuyv",
          0x33424752: "rgb24", 0x33524742: "bgr24"}
CHANNELS = {"gray8": (1,), "i420": (1, 1, 1), "nv12": (1, 2), "yuyv": (2,), "rgb24": (3,), "bgr24": (3,)}
RANGES = {0: "unknown", 1: "full", 2: "limited"}
MATRICES = {0: "none", 1: "bt601", 2: "bt709", 3: "bt2020"}

# Exit statuses (PluginWorker's): the parent is gone, or no hello came.
RESTRICT_FAILED, NO_HELLO = 70, 71


class LoadError(Exception):
    """A plugin that cannot be loaded: `kind` is a PluginLoadError.Kind raw value (its exit code)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


# MARK: - Loading


def private(folder):
    """Whether only root or this user can change what is in `folder` (not a sticky /tmp)."""
    try:
        st = os.stat(folder)
    except OSError:
        return False
    others = st.st_mode & 0o002 or (st.st_mode & 0o020 and st.st_gid != 0)
    return st.st_uid in (0, os.geteuid()) and not others


def load(path):
    """Imports the plugin file and returns its cvhost.Plugin subclass, checked."""
    # The plugin's own modules beside it, when nobody else can put one there.
    folder = os.path.dirname(os.path.abspath(path))
    if private(folder) and folder not in sys.path:
        sys.path.insert(0, folder)
    name = "cvhost_plugin_" + "".join(c if c.isalnum() else "_" for c in os.path.basename(path)[:-3])
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise LoadError("not_a_shared_object", f"plugin file {path} is not a Python file (.py)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise LoadError("invalid_descriptor", f"{e.filename or path}:{e.lineno}: {type(e).__name__}: {e.msg}")
    except Exception as e:
        raise LoadError("invalid_descriptor", f"{where(e, path)}: {type(e).__name__}: {e} (while importing {path})")
    classes = [c for c in vars(module).values()
               if isinstance(c, type) and issubclass(c, cvhost.Plugin) and c.__module__ == name]
    if len(classes) != 1:
        found = ", ".join(c.__name__ for c in classes) or "none"
        raise LoadError("no_entry_symbol",
                        f"plugin file {path} must define one subclass of cvhost.Plugin (found {found})")
    cls = classes[0]
    check(cls, path)
    return cls


def where(error, path):
    """FILE:LINE of the innermost frame of `error` in the plugin's own file, else the innermost."""
    frames = traceback.extract_tb(error.__traceback__)
    mine = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(path)]
    f = (mine or frames or [None])[-1]
    return f"{f.filename}:{f.lineno}" if f else path


def check(cls, path):
    version = cls.api_version
    if not (isinstance(version, tuple) and len(version) == 2 and all(isinstance(v, int) for v in version)):
        raise LoadError("invalid_descriptor",
                        f"plugin {path}: declare the API it is written for, api_version = {cvhost.API_VERSION!r}")
    if version[0] != cvhost.API_VERSION[0] or version[1] > cvhost.API_VERSION[1]:
        have = "%d.%d" % cvhost.API_VERSION
        raise LoadError("abi_mismatch",
                        f"plugin {path} is written for cvhost's Python API {version[0]}.{version[1]}; this cvhost has {have}"
                        + (": use a newer cvhost" if version[0] >= cvhost.API_VERSION[0] else ""))
    if not isinstance(cls.name, str):
        raise LoadError("invalid_descriptor", f"plugin {path}: give the plugin a name (name = \"...\")")
    formats = tuple(cls.pixel_formats)
    if not formats or any(f not in cvhost.PIXEL_FORMATS for f in formats):
        raise LoadError("invalid_descriptor",
                        f"plugin {path}: pixel_formats must list some of {', '.join(cvhost.PIXEL_FORMATS)}, not {formats!r}")
    for o in cls.options:
        if not isinstance(o, cvhost.Option):
            raise LoadError("invalid_descriptor", f"plugin {path}: options must be cvhost.Option(...), not {o!r}")


def describe(path):
    cls = load(path)
    return {
        "api_version": list(cls.api_version),
        "name": cls.name,
        "version": str(cls.version),
        "description": str(cls.description or (cls.__doc__ or "").strip().split("\n")[0]),
        "pixel_formats": list(cls.pixel_formats),
        "stateless": bool(cls.stateless),
        "flush": cls.flush is not cvhost.Plugin.flush,
        "options": [o.describe() for o in cls.options],
    }


# MARK: - The protocol


class Channel:
    def __init__(self, fd):
        self.sock = socket.socket(fileno=fd)

    def send(self, body, fds=()):
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

    def receive(self):
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
    def __init__(self, data):
        self.data, self.at = data, 0

    def u8(self):
        self.at += 1
        return self.data[self.at - 1]

    def u64(self):
        (v,) = struct.unpack_from("<Q", self.data, self.at)
        self.at += 8
        return v

    def bytes(self):
        n = self.u64()
        self.at += n
        return self.data[self.at - n:self.at]

    def string(self):
        return self.bytes().decode("utf-8", "replace")


def json_value(value):
    """What json does not know but a plugin naturally emits: numpy's scalars (numpy.int64 from
    arr.sum(), numpy.bool_) as the Python number or bool they hold, numpy arrays and other
    sequences (a tuple, a set is not one) as lists."""
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"a result's values are dicts, lists, str, int, float, bool, None and numpy numbers or arrays, "
                    f"not {type(value).__name__} ({value!r:.60})")


def data(b):
    return struct.pack("<Q", len(b)) + b


def done(status):
    return bytes([DONE]) + struct.pack("<I", status & 0xFFFFFFFF)


# MARK: - Serving


class Instance:
    """One instance of the plugin on one socket: its maps of cvhost's memory, its calls."""

    def __init__(self, channel, plugin, label):
        self.channel, self.plugin, self.label = channel, plugin, label
        self.maps = {}  # memory id -> (mmap, memoryview)
        self.results = []
        self.errors = set()  # (type, file, line) of exceptions already printed
        self.thread = None  # the thread of the call in progress: the only one whose emit() counts

    def emit(self, type, result):
        # As the C ABI's emit says -EPERM: a result belongs to the call of its frame, so one from
        # a thread of the plugin's own (which would be stamped with whatever frame is in process()) is refused.
        if threading.get_ident() != self.thread:
            raise RuntimeError("emit() was called from a thread of the plugin's own: emit a frame's results "
                               "from process() or flush(), on the thread cvhost calls them on")
        if not isinstance(type, str):
            raise TypeError("emit(type, result): type is a str such as \"barcode\"")
        self.results.append((type.encode("utf-8", "replace"),
                             json.dumps(result, ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                                        default=json_value).encode("utf-8")))

    def call(self, function, *args):
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
            self.channel.send(bytes([RESULT]) + data(type) + data(body))
        self.channel.send(done(status))

    def report(self, error):
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

    def memory(self, memory_id, size, fds):
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

    def forget(self, ids):
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

    def frame(self, r):
        memory = [r.u64() for _ in range(r.u64())]
        raw = r.data[r.at:r.at + FRAME_SIZE]
        if len(raw) != FRAME_SIZE:
            return None
        (_, fourcc, width, height, sequence, capture, pts, delivery, flags, crange, matrix, count) = FRAME.unpack_from(raw)
        f = cvhost.Frame()
        f.width, f.height, f.format = width, height, FOURCC.get(fourcc, "0x%08x" % fourcc)
        f.sequence, f.delivery_index, f.capture_time_ns, f.presentation_time_ns = sequence, delivery, capture, pts
        f.independent = bool(flags & 1)
        f.color_range, f.color_matrix = RANGES.get(crange, str(crange)), MATRICES.get(matrix, str(matrix))
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

    def release(self, frame):
        for p in frame.planes:
            try:
                p.data.release()
            except BufferError:
                pass  # a numpy view of it lives on: so does the map, until it goes

    def serve(self, on_destroy=None):
        while True:
            got = self.channel.receive()
            if got is None:
                os._exit(0)
            message, fds = got
            r = Reader(message)
            kind = r.u8()
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
            elif kind == FLUSH:
                self.call(self.plugin.flush)
            elif kind == SHARED_FLUSH:
                self.channel.send(done(0))
            elif kind == DESTROY:
                if on_destroy:
                    on_destroy()
                self.channel.send(done(0))
                os._exit(0)
            else:
                for fd in fds:
                    os.close(fd)


def restrict(parent):
    """As cvhost_worker_restrict: no new privileges, killed with cvhost, and cvhost still there."""
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0) != 0:
        return False
    return os.getppid() == parent


def worker(count, parent):
    if not restrict(parent):
        return RESTRICT_FAILED
    channels = [Channel(3 + i) for i in range(count)]
    got = channels[0].receive()
    if got is None:
        return NO_HELLO
    r = Reader(got[0])
    if r.u8() != HELLO:
        return NO_HELLO
    path, _, instances, label = r.string(), r.u64(), r.u64(), r.string()
    given = dict((r.string(), r.string()) for _ in range(r.u64()))
    # One instance per process: cvhost starts a worker for each (no GIL between them).
    if count != 1 or instances != 1:
        return NO_HELLO
    try:
        cls = load(path)
        options = {o.name: o.parse(given.get(o.name, o.describe()["default"])) for o in cls.options}
        plugin = cls(options)
    except LoadError as e:
        channels[0].send(bytes([FAILED]) + data(e.kind.encode()) + data(str(e).encode()))
        return 0
    except Exception as e:
        text = f"plugin {cls.name} could not be created: {where(e, path)}: {type(e).__name__}: {e}"
        sys.stderr.write("".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next or e.__traceback__)))
        channels[0].send(bytes([FAILED]) + data(b"create_failed") + data(text.encode()))
        return 0
    channels[0].send(bytes([READY]))

    def destroy():
        try:
            plugin.close()
        except Exception as e:
            sys.stderr.write(f"cvhost: [{label}] close() raised {type(e).__name__}: {e}\n")
    Instance(channels[0], plugin, label).serve(on_destroy=destroy)
    return 0


def main(argv):
    if len(argv) == 2 and argv[0] == "describe":
        try:
            info = describe(argv[1])
        except LoadError as e:
            print(json.dumps({"error": e.kind, "message": str(e)}))
            return 0
        print(json.dumps(info))
        return 0
    if len(argv) == 3 and argv[0] == "worker":
        return worker(int(argv[1]), int(argv[2]))
    sys.stderr.write("usage: cvhost/__main__.py describe FILE | worker CHANNELS PARENT_PID (cvhost runs these)\n")
    return 2
