"""Loading a plugin file: importing it, finding its cvhost.Plugin subclass, checking what it
declares; and `describe`, what `cvhost plugins FILE` shows and cvhost checks options against."""

from __future__ import annotations

import difflib
import importlib.util
import os
import sys
import traceback
from typing import Any

import cvhost

from ._protocol import PROTOCOL_VERSION


class LoadError(Exception):
    """A plugin that cannot be loaded: `kind` is a PluginLoadError.Kind raw value (its exit code)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def private(folder: str) -> bool:
    """Whether only root or this user can change what is in `folder` (not a sticky /tmp)."""
    try:
        st = os.stat(folder)
    except OSError:
        return False
    others = st.st_mode & 0o002 or (st.st_mode & 0o020 and st.st_gid != 0)
    return st.st_uid in (0, os.geteuid()) and not others


def load(path: str) -> type:
    """Imports the plugin file and returns its cvhost.Plugin subclass, checked."""
    # The plugin's own modules beside it, when nobody else can put one there.
    folder = os.path.dirname(os.path.abspath(path))
    if private(folder) and folder not in sys.path:
        sys.path.insert(0, folder)
    name = "cvhost_plugin_" + "".join(c if c.isalnum() else "_" for c in os.path.basename(path)[:-3])
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LoadError("not_a_shared_object", f"plugin file {path} is not a Python file (.py)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise LoadError("invalid_descriptor", f"{e.filename or path}:{e.lineno}: {type(e).__name__}: {e.msg}")
    except ImportError as e:
        # The module is missing from the Python that ran it, which need not be the one the user
        # has in mind (a pyenv or a venv first on the PATH): name it, and how to choose another.
        raise LoadError("invalid_descriptor", f"{where(e, path)}: {type(e).__name__}: {e} (while importing {path} with "
                        f"{sys.executable}: install it for that Python, or set CVHOST_PYTHON to a python3 that has it)")
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


def where(error: BaseException, path: str) -> str:
    """FILE:LINE of the innermost frame of `error` in the plugin's own file, else the innermost."""
    frames = traceback.extract_tb(error.__traceback__)
    mine = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(path)]
    f = (mine or frames or [None])[-1]
    return f"{f.filename}:{f.lineno}" if f else path


def check(cls: type, path: str) -> None:
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
    if cls.process is cvhost.Plugin.process:
        # A typo (proces, Process) would pass the import and fail every frame: said now, with the name meant.
        own = [n for n, v in vars(cls).items() if callable(v) and not n.startswith("__")]
        near = difflib.get_close_matches("process", own, n=1, cutoff=0.6)
        raise LoadError("invalid_descriptor", f"plugin {path}: {cls.__name__} defines no process(self, frame)"
                        + (f" (did you mean to name '{near[0]}' process?)" if near else ""))
    formats = tuple(cls.pixel_formats)
    if not formats or any(f not in cvhost.PIXEL_FORMATS for f in formats):
        raise LoadError("invalid_descriptor",
                        f"plugin {path}: pixel_formats must list some of {', '.join(cvhost.PIXEL_FORMATS)}, not {formats!r}")
    for o in cls.options:
        if not isinstance(o, cvhost.Option):
            raise LoadError("invalid_descriptor", f"plugin {path}: options must be cvhost.Option(...), not {o!r}")


def describe(path: str) -> dict[str, Any]:
    cls = load(path)
    return {
        "protocol": PROTOCOL_VERSION,
        "api_version": list(cls.api_version),
        "name": cls.name,
        "version": str(cls.version),
        "description": str(cls.description or (cls.__doc__ or "").strip().split("\n")[0]),
        "pixel_formats": list(cls.pixel_formats),
        "stateless": bool(cls.stateless),
        "flush": cls.flush is not cvhost.Plugin.flush,
        "batch": cls.process_batch is not cvhost.Plugin.process_batch,
        "options": [o.describe() for o in cls.options],
    }
