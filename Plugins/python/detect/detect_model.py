"""An ONNX model as the detect plugin runs it: what its input wants (size, layout, element type)
and what its outputs are (YOLOv5, YOLOv8, end-to-end, SSD-style or a classifier), read from the
model itself with onnxruntime (its shapes and the metadata Ultralytics writes in its exports:
names, imgsz, task); and the runtime that runs it: onnxruntime's session, or OpenVINO's compiled
model (runtime=openvino: Intel's, which reads ONNX files itself, often faster on Intel CPUs)."""

from __future__ import annotations

import ast
import sys
from typing import Any, Optional

import cvhost


LAYOUTS = {
    "yolov5": "one output [1, N, 5+C]: cx, cy, w, h, objectness, C class scores (YOLOv5, v7)",
    "yolov8": "one output [1, 4+C, N]: cx, cy, w, h, C class scores, no objectness (YOLOv8, v9, v11)",
    "end2end": "one output [1, N, 6]: x1, y1, x2, y2, score, class, boxes already merged (YOLOv10, exports with nms=True)",
    "ssd": "boxes [1, N, 4] and scores [1, N, C] or [1, N], maybe classes [1, N] and a count [1]",
    "classify": "one output [1, C]: class scores for the whole frame",
}
"""The output layouts the plugin reads (`type=`), and what each is."""
TYPES = tuple(LAYOUTS)

ELEMENTS = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(uint8)": "uint8"}

MAX_SIDE = 8192
"""The largest input side the plugin feeds (size=, or the imgsz a model's metadata says)."""
MAX_CLASSES = 65536
"""The most classes a model may name in its metadata."""


def printable(name: str) -> str:
    """A class name without control characters (a terminal's escapes, line breaks): names come
    from the model file, which anyone may have written, and reach stderr and every output."""
    return "".join(c if c.isprintable() else "?" for c in name)[:200]


def first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def openvino_reason(error: BaseException) -> str:
    """OpenVINO's reason in its error's lines, which begin with where it was raised and checked
    ("Exception from src/...", "Check 'false' failed at ...", "Summary:"): the last line of its own."""
    lines = [line.strip().lstrip("- ").strip() for line in str(error).splitlines()]
    said = [line for line in lines if line and not line.startswith(("Exception from", "Check '", "Summary:"))]
    return said[-1] if said else first_line(error)


def dim(d: Any) -> Optional[int]:
    """A dimension's size, or None when the model leaves it open (a name, or nothing)."""
    return d if isinstance(d, int) and d > 0 else None


def shape_text(shape: list[Any]) -> str:
    return "[" + ", ".join(str(d) if isinstance(d, int) else "?" for d in shape) + "]"


class Output:
    def __init__(self, name: str, shape: list[Any], element: str) -> None:
        self.name, self.shape, self.element = name, shape, element
        self.lower = name.lower()

    def __repr__(self) -> str:
        return f"{self.name} {shape_text(self.shape)}"


class OpenVINORefused(Exception):
    """OpenVINO could not read or compile the model (its first line)."""


class Model:
    """One model file, loaded. `what` is the option that named it (model, classify), for errors."""

    def __init__(self, path: str, what: str, threads: int, forced_type: str, size: str, ssd_boxes: str = "auto",
                 runtime: str = "onnxruntime", precision: str = "auto", fallback: bool = False, say: bool = True) -> None:
        """`fallback`: onnxruntime runs the model when OpenVINO cannot (said in one line when `say`),
        rather than the model being refused (runtime=auto)."""
        import onnxruntime as ort
        self.path, self.what = path, what
        self.runtime, self.precision = runtime, None
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3  # errors only: its warnings about the graph are not the user's business
        # Its threads sleep between frames rather than spin: the host decodes and converts beside it.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as e:
            raise cvhost.OptionError(f"{what}={path} is not an ONNX model onnxruntime {ort.__version__} can load: {first_line(e)}") from None
        self.metadata = dict(self.session.get_modelmeta().custom_metadata_map)
        self.read_input(size)
        self.outputs = [Output(o.name, list(o.shape), o.type) for o in self.session.get_outputs()]
        # Frames run together only where the file leaves the batch open, in its input and every
        # output (a model exported with a fixed batch of 1 runs them one by one).
        self.batches = dim(self.session.get_inputs()[0].shape[0]) is None and all(
            o.shape and dim(o.shape[0]) is None for o in self.outputs)
        self.ssd: Optional[dict[str, Output]] = None
        self.type, self.classes = self.layout(forced_type)
        self.names = self.metadata_names()
        if self.names and self.classes and len(self.names) > self.classes:
            raise self.refuse(f"its metadata names {len(self.names)} classes (the last {self.names[-1]!r}), but its output has "
                              f"{self.classes}: the file's metadata does not belong to this model")
        # An SSD's box order: TensorFlow's object detection API writes detection_boxes y first.
        boxes = self.ssd["boxes"].name if self.ssd else ""
        self.ssd_order = ssd_boxes if ssd_boxes != "auto" else ("yxyx" if boxes == "detection_boxes" else "xyxy")
        self.compiled = None
        if runtime == "openvino":
            try:
                self.compile_openvino(threads, precision)
            except OpenVINORefused as e:
                cannot = f"{what}={path} cannot be run by OpenVINO {self.ov.__version__.split('-')[0]}: {e}"
                if not fallback:
                    raise cvhost.OptionError(f"{cannot} (runtime=onnxruntime runs it otherwise)") from None
                self.runtime, self.compiled = "onnxruntime", None
                if say:
                    sys.stderr.write(f"detect: {cannot}; it runs on onnxruntime (runtime=onnxruntime does not try OpenVINO)\n")

    def compile_openvino(self, threads: int, precision: str) -> None:
        """OpenVINO's compiled model in place of onnxruntime's session (which read the model and is let go):
        its input made the size fed, its threads as many, its precision OpenVINO's choice for the CPU
        (bf16 where the CPU computes in it: faster, a little less exact) or f32."""
        import openvino as ov
        self.ov, self.ov_core = ov, ov.Core()
        self.ov_config = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
        if precision == "f32":
            self.ov_config["INFERENCE_PRECISION_HINT"] = "f32"
        # One frame a run in a model compiled for it (a fixed shape runs faster on a CPU than an
        # open one: 7.9 against 10.8 ms a frame, YOLOv8n at 320), batches in one compiled with the
        # batch open (7.5 against 6.7 ms a frame in fours): both now, as compiling one (0.15 s for
        # YOLOv8n here) would hold every camera's frames if it came with the first batch.
        self.ov_runs = {1: self.openvino_compile(1)}
        if self.batches:
            self.ov_runs[0] = self.openvino_compile(-1)
        self.compiled = self.ov_runs[1][0]
        hint = self.compiled.get_property("INFERENCE_PRECISION_HINT")
        self.precision = hint.to_string() if hasattr(hint, "to_string") else str(hint)
        self.session = None

    def openvino_compile(self, batch: int) -> tuple[Any, Any, list[Any]]:
        """OpenVINO's compiled model, its request and its outputs for `batch` frames at once (-1: any)."""
        try:
            model = self.ov_core.read_model(self.path)
            shape = [batch, 3, self.height, self.width] if self.nchw else [batch, self.height, self.width, 3]
            model.reshape({self.input_name: shape})
            compiled = self.ov_core.compile_model(model, "CPU", self.ov_config)
        except Exception as e:
            raise OpenVINORefused(openvino_reason(e)) from None
        return compiled, compiled.create_infer_request(), [compiled.output(o.name) for o in self.outputs]

    def refuse(self, why: str) -> cvhost.OptionError:
        return cvhost.OptionError(f"{self.what}={self.path}: {why}")

    def read_input(self, size: str) -> None:
        inputs = self.session.get_inputs()
        if len(inputs) != 1:
            raise self.refuse(f"the model has {len(inputs)} inputs ({', '.join(i.name for i in inputs)}): "
                              "the detect plugin feeds models that take one image")
        i = inputs[0]
        self.input_name = i.name
        self.element = ELEMENTS.get(i.type)
        if self.element is None:
            raise self.refuse(f"its input {i.name} is {i.type}: the detect plugin feeds float, float16 or uint8 images")
        shape = list(i.shape)
        if len(shape) != 4 or not (dim(shape[1]) == 3 or dim(shape[3]) == 3):
            raise self.refuse(f"its input {i.name} is {shape_text(shape)}: the detect plugin feeds images as "
                              "[1, 3, H, W] (NCHW) or [1, H, W, 3] (NHWC)")
        self.nchw = dim(shape[1]) == 3
        height, width = (shape[2], shape[3]) if self.nchw else (shape[1], shape[2])
        fixed = (dim(width), dim(height))
        asked = parse_size(size) if size else None
        if size and asked is None:
            raise cvhost.OptionError(f"size={size} is not a size: write WIDTHxHEIGHT (640x384) or one number (640)")
        if fixed[0] and fixed[1]:
            if asked and asked != fixed:
                raise self.refuse(f"its input is {fixed[0]}x{fixed[1]} and cannot take size={size}: leave size out")
            self.width, self.height = fixed
        elif asked:
            self.width, self.height = asked
        else:
            trained = self.metadata_size()
            if trained is None:
                raise self.refuse(f"its input {i.name} is {shape_text(shape)}, of no fixed size, and the model does not say "
                                  "the size it was trained at: give size=WIDTHxHEIGHT (e.g. size=640)")
            self.width, self.height = trained

    def metadata_size(self) -> Optional[tuple[int, int]]:
        """Ultralytics' imgsz ([h, w] or one number): the size the model was trained and exported at.
        A size outside 1..MAX_SIDE (a model file's metadata is anyone's to write) is refused."""
        text = self.metadata.get("imgsz", "")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value, value]
        if not (isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            return None
        if not all(1 <= v <= MAX_SIDE for v in value):
            raise self.refuse(f"its metadata says imgsz={text[:40]}, not a size of 1 to {MAX_SIDE} pixels: give size=WIDTHxHEIGHT")
        return (value[1], value[0])

    def metadata_names(self) -> Optional[list[str]]:
        """Ultralytics' names ({0: 'person', ...}, a Python literal), as a list by class number.
        A class number past MAX_CLASSES is refused: a 300-byte file must not make a list of
        ten billion names."""
        try:
            value = ast.literal_eval(self.metadata.get("names", ""))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        if isinstance(value, dict) and all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in value):
            if value and max(value) >= MAX_CLASSES:
                raise self.refuse(f"its metadata names class {max(value)}, past the {MAX_CLASSES} classes a model may have")
            return [printable(str(value.get(k, k))) for k in range(max(value) + 1)] if value else None
        if isinstance(value, (list, tuple)):
            if len(value) > MAX_CLASSES:
                raise self.refuse(f"its metadata names {len(value)} classes, past the {MAX_CLASSES} a model may have")
            return [printable(str(v)) for v in value]
        return None

    def layout(self, forced: str) -> tuple[str, Optional[int]]:
        """The output layout, and the number of classes when the shapes tell it."""
        outs = self.outputs
        task = self.metadata.get("task", "")
        single = outs[0] if len(outs) == 1 else None
        found = None
        if forced in ("auto", "classify") and single and len(single.shape) == 2:
            found = ("classify", dim(single.shape[1]))
        elif forced == "classify" or (forced == "auto" and task == "classify"):
            raise self.refuse(self.unreadable("classify"))
        elif forced in ("auto", "yolov5", "yolov8", "end2end") and single and len(single.shape) == 3:
            found = self.yolo_layout(single, forced)
        elif forced in ("auto", "ssd") and len(outs) >= 2:
            self.ssd = self.ssd_outputs()
            if self.ssd is not None:
                scores = self.ssd["scores"]
                found = ("ssd", dim(scores.shape[2]) if len(scores.shape) == 3 else None)
        if found is None:
            raise self.refuse(self.unreadable(forced))
        return found

    def yolo_layout(self, out: Output, forced: str) -> Optional[tuple[str, Optional[int]]]:
        """[1, a, b]: YOLOv8's a is 4+C and b the candidates (thousands), YOLOv5's b is 5+C and a
        the candidates; an end-to-end model's b is 6 and a its most detections (300). Where the
        model names its classes, their count decides; else the smaller dimension is the classes'."""
        a, b = dim(out.shape[1]), dim(out.shape[2])
        names = self.metadata_names()
        n = len(names) if names else None
        end2end = str(self.metadata.get("end2end", "")).lower() == "true"
        if forced == "auto":
            if end2end or (b == 6 and a is not None and a <= 1000 and n != 1):
                forced = "end2end"
            elif n is not None and a == 4 + n:
                forced = "yolov8"
            elif n is not None and b == 5 + n:
                forced = "yolov5"
            elif a is not None and (b is None or a < b):
                forced = "yolov8"
            elif b is not None and (a is None or b < a):
                forced = "yolov5"
        if forced == "end2end":
            return ("end2end", None) if b == 6 else None
        if forced == "yolov8":
            return ("yolov8", a - 4) if a is not None and a > 4 else None
        if forced == "yolov5":
            return ("yolov5", b - 5) if b is not None and b > 5 else None
        return None

    def ssd_outputs(self) -> Optional[dict[str, Output]]:
        """Which output is which of an SSD-style model: by name where names say (boxes, scores,
        classes or labels, num or count), else by shape (the one [1, N, 4] is the boxes)."""
        found: dict[str, Output] = {}
        rest = []
        for o in self.outputs:
            if len(o.shape) == 3 and dim(o.shape[2]) == 4 and "boxes" not in found and ("box" in o.lower or "score" not in o.lower):
                found["boxes"] = o
            elif len(o.shape) <= 1 or (len(o.shape) == 2 and dim(o.shape[1]) == 1) or "num" in o.lower or "count" in o.lower:
                found.setdefault("count", o)
            else:
                rest.append(o)
        for o in rest:
            if "class" in o.lower or "label" in o.lower or (len(o.shape) == 2 and o.element != "tensor(float)" and "score" not in o.lower):
                found.setdefault("classes", o)
            elif "scores" not in found:
                found["scores"] = o
        if "boxes" not in found or "scores" not in found:
            return None
        return found

    def unreadable(self, forced: str) -> str:
        shapes = ", ".join(repr(o) for o in self.outputs)
        if forced != "auto":
            return f"its outputs ({shapes}) are not what type={forced} reads: {LAYOUTS[forced]}"
        return (f"cannot tell how to read its outputs ({shapes}): set type= to one of {', '.join(TYPES)} "
                f"(cvhost plugins detect says what each reads)")

    def run(self, tensor: Any) -> list[Any]:
        """The outputs for one input tensor (of one frame, or of several stacked)."""
        if self.compiled is not None:
            _, request, outputs = self.ov_runs[1 if tensor.shape[0] == 1 else 0]
            result = request.infer({0: tensor})
            return [result[o] for o in outputs]
        return self.session.run(None, {self.input_name: tensor})

    def run_batch(self, tensors: list[Any]) -> list[list[Any]]:
        """Each tensor's outputs (as run() gives them, a batch of 1): in one run where the model's
        batch is open, else one by one."""
        if len(tensors) == 1 or not self.batches:
            return [self.run(t) for t in tensors]
        import numpy
        outputs = self.run(numpy.concatenate(tensors, axis=0))
        return [[o[i:i + 1] for o in outputs] for i in range(len(tensors))]


def parse_size(text: str) -> Optional[tuple[int, int]]:
    parts = text.lower().split("x")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        return None
    if len(values) == 1:
        values *= 2
    if len(values) != 2 or not all(16 <= v <= MAX_SIDE for v in values):
        return None
    return (values[0], values[1])
