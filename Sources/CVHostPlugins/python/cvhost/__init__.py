"""cvhost's Python plugin API.

A Python plugin is a .py file that defines one subclass of `cvhost.Plugin`:

    import cvhost

    class Brightness(cvhost.Plugin):
        api_version = (1, 0)              # the API this plugin is written against
        name = "brightness"
        version = "1.0.0"
        description = "mean luma of each frame"
        pixel_formats = ("gray8",)        # most preferred first; the host converts
        stateless = True                  # may run as parallel instances (instances=N)
        options = (
            cvhost.Option("threshold", float, 0.5, "report frames darker than this", min=0, max=1),
        )

        def __init__(self, options):      # create: options as typed values, checked by cvhost
            self.threshold = options["threshold"]

        def process(self, frame):         # one frame: a read-only numpy view, valid during the call
            mean = float(frame.array().mean()) / 255
            if mean < self.threshold:
                self.emit("dark", {"mean": round(mean, 3)})

        def flush(self):                  # optional: after the last frame
            pass

        def close(self):                  # optional: the plugin ends
            pass

cvhost runs it as `cvhost run --plugin ./brightness.py:threshold=0.4 --input clip.mp4`, in a
worker process of its own (one per instance), with the same queues, metrics and output as a C
plugin. This module is shipped with cvhost and put on the worker's path; nothing is compiled.
"""

API_VERSION = (1, 4)
"""The version of this API: MAJOR changes break plugins, MINOR only adds. A plugin declares the
version it was written against (`api_version`); cvhost runs it when the majors match and the
plugin's minor is not newer than this one. 1.1 added File options, OptionError, CreateError,
instance_index, instance_count, request_frames and the frame's source size and content. 1.2 added
request_frames(full=True) and frame.full. 1.3 added process_batch and emit's frame=. 1.4 added
request_frames(regions=True) and frame.regions."""

PIXEL_FORMATS = ("gray8", "i420", "nv12", "yuyv", "rgb24", "bgr24")
"""The pixel formats a plugin may ask for, as cvhost's C ABI names them."""


class File(str):
    """An option type (API 1.1): a file the plugin reads, such as a model. cvhost makes a relative
    path absolute against the folder cvhost was started in (the worker runs in the plugin's
    folder) and refuses one that is not a readable file (exit 18); the plugin gets the absolute
    path, or "" when none was given."""


_TYPES = {bool: "bool", int: "int", float: "double", str: "string", File: "file"}


class Option:
    """One option of a plugin: `--plugin ./x.py:NAME=VALUE`. cvhost checks the value against the
    type, range and choices before the plugin runs (a bad value is exit 18) and hands it to the
    plugin's __init__ as a bool, int, float or str."""

    def __init__(self, name, type, default, help="", min=None, max=None, choices=None):
        if type not in _TYPES:
            raise TypeError(f"option {name}: type must be bool, int, float, str or cvhost.File, not {type!r}")
        if choices is not None and type is not str:
            raise TypeError(f"option {name}: choices go with type str")
        self.name, self.type, self.default, self.help = name, type, default, help
        self.min, self.max, self.choices = min, max, tuple(choices) if choices is not None else None

    def describe(self):
        kind = "enum" if self.choices else _TYPES[self.type]
        default = ("true" if self.default else "false") if self.type is bool else str(self.default)
        d = {"name": self.name, "type": kind, "default": default, "help": self.help}
        if self.min is not None or self.max is not None:
            d["min"] = float(self.min if self.min is not None else -1e300)
            d["max"] = float(self.max if self.max is not None else 1e300)
        if self.choices:
            d["choices"] = list(self.choices)
        return d

    def parse(self, text):
        """The value cvhost checked and normalized (as text), as this option's type."""
        if self.type is bool:
            return text == "true"
        return self.type(text)


class OptionError(Exception):
    """Raised by __init__ for an option value the plugin cannot use (a model file that is not one,
    a name not in a list): cvhost says the message as it is, in one line with the plugin's name,
    and exits with 18 (a bad option value), as for a C plugin's CVHOST_ERROR_OPTION_VALUE."""


class CreateError(Exception):
    """Raised by __init__ when the plugin cannot start for a reason that is not an option's value
    (a package missing from this Python): said in one line, exit 16. Any other exception from
    __init__ is exit 16 too, with its traceback on stderr."""


class Plugin:
    """The base of a Python plugin. Subclasses set the class attributes and define process();
    __init__(options), flush() and close() are optional."""

    api_version = None
    name = None
    version = "0"
    description = ""
    pixel_formats = ("gray8",)
    stateless = False
    options = ()
    instance_index = 0
    """Which of the plugin's instances this is (0-based), and how many there are (`instances=N`):
    set before __init__ runs (API 1.1; cvhost_host's instance_index and instance_count)."""
    instance_count = 1

    def __init__(self, options):
        pass

    def process(self, frame):
        raise NotImplementedError("a plugin defines process(self, frame)")

    def process_batch(self, frames):
        """Optional (API 1.3): several frames in one call, when cvhost gathers them: the frames of
        several inputs waiting for instances they share (`share`, `batch=N`), so that a model runs
        once on all of them. Emit each frame's results with `self.emit(type, result, frame=f)`.
        An exception fails every frame of the call. A plugin without it is given one frame a
        call (process()); with it, cvhost may still give one frame alone, here or to process()."""
        raise NotImplementedError

    def flush(self):
        pass

    def close(self):
        pass

    def request_frames(self, width, height, resize="letterbox", pad=114, pixel_format=None, full=False, regions=False):
        """Asks for frames of `width` x `height` (16 to 8192 each), scaled by cvhost from the frame
        as captured, in one pass with the conversion to `pixel_format` (one of the plugin's
        pixel_formats; None: the one cvhost chooses): `resize` "letterbox" (the whole picture
        scaled to fit, its shape kept, centred on grey `pad`, as Ultralytics' letterbox) or
        "stretch". Only in __init__ (API 1.1; the C ABI's host->request_frames). The frames then
        say where the picture lies in them: `frame.content` and `frame.source_width`/`source_height`.
        `full=True` (API 1.2): each frame's `frame.full` is also the picture at its captured size, in
        the same format (a detector reads the frame, a second stage crops the full one).
        `regions=True` (API 1.4): when the plugin is gated on motion (on_motion=true), a frame that
        moved in a few places comes with `frame.regions`, its motion gathered into squares of the
        larger side asked for, in the captured picture's pixels, and with `frame.full` to crop them
        from; an empty `frame.regions` means the whole frame."""
        if not getattr(self, "_cvhost_creating", False):
            raise RuntimeError("request_frames() is accepted only in __init__")
        if resize not in ("letterbox", "stretch"):
            raise ValueError(f"request_frames: resize is \"letterbox\" or \"stretch\", not {resize!r}")
        if not (16 <= int(width) <= 8192 and 16 <= int(height) <= 8192) or not 0 <= int(pad) <= 255:
            raise ValueError(f"request_frames: a size of 16 to 8192 each side and a pad of 0-255, not {width}x{height} pad {pad}")
        if pixel_format is not None and pixel_format not in self.pixel_formats:
            raise ValueError(f"request_frames: pixel_format is one of the plugin's pixel_formats {tuple(self.pixel_formats)}, "
                             f"not {pixel_format!r}")
        self._cvhost_frame_request = (int(width), int(height), resize, int(pad), pixel_format, bool(full), bool(regions))

    def emit(self, type, result, frame=None):
        """Writes one result of the frame being processed (in flush: of the last one): `type`
        names its kind ([a-z0-9_.]{1,64}), `result` is a dict of JSON values. cvhost checks it
        and writes it as one line, as for C plugins. Only within process(), process_batch() and
        flush(); in process_batch(), `frame` says which of its frames the result is of."""
        sink = getattr(self, "_cvhost_call", None)
        if sink is None:
            raise RuntimeError("emit() is accepted only within process(), process_batch() and flush()")
        sink(type, result, frame)


class Plane:
    """One plane of a frame: its bytes (a read-only memoryview of cvhost's shared memory, no
    copy), its rows' stride in bytes, and its size in samples."""

    __slots__ = ("data", "stride", "width", "height", "_channels")

    def __init__(self, data, stride, width, height, channels):
        self.data, self.stride, self.width, self.height, self._channels = data, stride, width, height, channels

    def array(self):
        """A read-only numpy view of the plane, (height, width) or (height, width, channels), with
        the plane's stride: no copy. Valid during the call only."""
        import numpy
        shape = (self.height, self.width) if self._channels == 1 else (self.height, self.width, self._channels)
        strides = (self.stride, 1) if self._channels == 1 else (self.stride, self._channels, 1)
        return numpy.ndarray(shape, numpy.uint8, self.data, 0, strides)


class Frame:
    """A frame, borrowed for the duration of process(): its planes view cvhost's memory."""

    __slots__ = ("width", "height", "format", "sequence", "delivery_index", "capture_time_ns",
                 "presentation_time_ns", "independent", "color_range", "color_matrix", "planes",
                 "source_width", "source_height", "content", "full", "regions")
    # source_width, source_height: the picture as captured (and turned); content: (x, y, width,
    # height), where it lies in this frame (letterbox: the part that is not padding). A point
    # (x, y) of this frame is ((x - cx) * source_width / cw, (y - cy) * source_height / ch) of it.
    # full: the picture at its captured size, a Frame in the same format, when the plugin asked
    # for it (request_frames(full=True)), or with its regions; else None.
    # regions: (x, y, width, height) of each place it moved, in full's pixels, for a plugin gated
    # on motion that asked for them (request_frames(regions=True)); () means the whole frame.

    def array(self):
        """The picture as one numpy view, no copy: (h, w) for gray8, (h, w, 3) for rgb24 and
        bgr24 (OpenCV's order for bgr24), (h, w, 2) for yuyv; the luma plane for i420 and nv12
        (planes[1:] hold the chroma)."""
        return self.planes[0].array()

    def __repr__(self):
        return f"<cvhost.Frame {self.sequence} {self.width}x{self.height} {self.format}>"
