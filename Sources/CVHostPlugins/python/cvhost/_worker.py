"""The worker process of a Python plugin, and the description of one (`cvhost plugins ./x.py`).

    python3 RUNTIME/cvhost/__main__.py describe FILE                           the plugin's info as one JSON object
    python3 RUNTIME/cvhost/__main__.py worker [--preload FILE] CHANNELS PARENT   serve cvhost on descriptors 3..

A worker given --preload imports FILE as it starts, before cvhost's hello comes: cvhost starts a
plugin's first worker while it describes the plugin, and the two imports run side by side.

cvhost runs these by path (never `-m cvhost`, which puts the current folder first on sys.path), with
PYTHONSAFEPATH=1, in the plugin's folder: what is imported is the runtime, the plugin's own folder
when only its owner can change it, and the environment's packages.

The runtime's parts: _protocol (the messages, the Python end of WorkerMessage.swift), _loader
(importing and checking a plugin file, describe), _serving (one instance on its socket), _sandbox
(the worker's restrictions); this file starts them.
"""

from __future__ import annotations

import json
import sys
import traceback

import cvhost

from ._loader import LoadError, describe, load, where
from ._protocol import FRAME_REQUEST_FULL_FRAME, FRAME_REQUEST_MOTION_REGIONS, HELLO, PROTOCOL_VERSION, RESIZE, Channel, Reader, failed, ready
from ._sandbox import restrict
from ._serving import FOURCC, Instance

# Exit statuses (PluginWorker's): the restrictions could not be taken, or no hello came.
RESTRICT_FAILED, NO_HELLO = 70, 71


def worker(count: int, parent: int, preload: str | None = None) -> int:
    """One instance per process: cvhost starts a worker for each (no GIL between them)."""
    if not restrict(parent):
        return RESTRICT_FAILED
    if count != 1:
        return NO_HELLO
    preloaded = None
    if preload:
        try:
            preloaded = (preload, load(preload))
        except Exception:
            pass  # imported again when the hello comes, and the error answered then
    channel = Channel(3)
    got = channel.receive()
    if got is None:
        return NO_HELLO
    r = Reader(got[0])
    try:
        if r.u8() != HELLO:
            return NO_HELLO
        version = r.u32()
        if version != PROTOCOL_VERSION:
            channel.send(failed("abi_mismatch", f"cvhost speaks worker protocol {version} and its Python runtime ({__file__}) "
                                f"speaks {PROTOCOL_VERSION}: the runtime is not this cvhost's (unset CVHOST_PYTHON_RUNTIME)"))
            return 0
        path, _, instances, first, total, label = r.string(), r.u64(), r.u64(), r.u64(), r.u64(), r.string()
        given = dict((r.string(), r.string()) for _ in range(r.u64()))
    except Exception as e:  # a hello cut short or garbled
        sys.stderr.write(f"cvhost: a worker's hello could not be read: {e}\n")
        return NO_HELLO
    if instances != 1:
        return NO_HELLO
    cls = None
    try:
        cls = preloaded[1] if preloaded and preloaded[0] == path else load(path)
        options = {o.name: o.parse(given.get(o.name, o.describe()["default"])) for o in cls.options}
        # Known to __init__ already (a plugin sizes its threads by them): set before it runs.
        plugin = cls.__new__(cls)
        plugin.instance_index, plugin.instance_count = first, total
        plugin._cvhost_creating = True
        try:
            plugin.__init__(options)
        finally:
            plugin._cvhost_creating = False
    except LoadError as e:
        channel.send(failed(e.kind, str(e)))
        return 0
    except (cvhost.OptionError, cvhost.CreateError) as e:
        # The plugin's own refusal, worded for the user: one line, no traceback.
        kind = "bad_option_value" if isinstance(e, cvhost.OptionError) else "create_failed"
        channel.send(failed(kind, f"plugin {cls.name}: {e}"))
        return 0
    except Exception as e:
        name = getattr(cls, "name", path)
        text = f"plugin {name} could not be created: {where(e, path)}: {type(e).__name__}: {e}"
        sys.stderr.write("".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next or e.__traceback__)))
        channel.send(failed("create_failed", text))
        return 0
    asked = getattr(plugin, "_cvhost_frame_request", None)
    if asked:
        width, height, resize, pad, pixel_format, full, regions = asked
        fourcc = next((code for code, name in FOURCC.items() if name == pixel_format), 0)
        channel.send(ready((width, height, RESIZE[resize], pad if resize == "letterbox" else 0, fourcc,
                            (FRAME_REQUEST_FULL_FRAME if full else 0) | (FRAME_REQUEST_MOTION_REGIONS if regions else 0))))
    else:
        channel.send(ready())

    def destroy() -> None:
        try:
            plugin.close()
        except Exception as e:
            sys.stderr.write(f"cvhost: [{label}] close() raised {type(e).__name__}: {e}\n")
    Instance(channel, plugin, label).serve(on_destroy=destroy)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "describe":
        try:
            info = describe(argv[1])
        except LoadError as e:
            print(json.dumps({"error": e.kind, "message": str(e), "protocol": PROTOCOL_VERSION}))
            return 0
        print(json.dumps(info))
        return 0
    if len(argv) == 5 and argv[0] == "worker" and argv[1] == "--preload":
        return worker(int(argv[3]), int(argv[4]), preload=argv[2])
    if len(argv) == 3 and argv[0] == "worker":
        return worker(int(argv[1]), int(argv[2]))
    sys.stderr.write("usage: cvhost/__main__.py describe FILE | worker [--preload FILE] CHANNELS PARENT_PID (cvhost runs these)\n")
    return 2
