"""detect: the user's own ONNX model, with no code: a detector (YOLOv5/v7, YOLOv8/v9/v11, end-to-end
YOLOv10 exports, SSD-style) or a classifier, run with OpenVINO (where installed) or onnxruntime on the frames cvhost gives it.

    cvhost run --plugin detect:model=yolov8n.onnx --input rtsp://...

What the model is, what its input takes and its labels are read from the model file (its shapes and
the metadata Ultralytics exports carry); options set what the file cannot say. Its parts:
detect_model (the model and its layout), detect_prepare (frame to input, boxes back), detect_decode
(outputs to boxes, NMS), detect_runtime (the packages it needs, and how many cores it may use)."""

from __future__ import annotations

import difflib
import os
import sys
import time
from typing import Any, Optional

import cvhost

from detect_model import LAYOUTS, Model, printable
from detect_runtime import cores, importable, require

BACKGROUND = {"background", "__background__"}
"""Labels that mean "no object" in SSD-style models' class lists: never reported."""


def number_list(text: str, what: str) -> Optional[list[float]]:
    """`0.485+0.456+0.406` (or one number for all three channels)."""
    if not text:
        return None
    try:
        values = [float(v) for v in text.split("+")]
    except ValueError:
        values = []
    if len(values) == 1:
        values *= 3
    if len(values) != 3 or (what == "std" and any(v <= 0 for v in values)):
        raise cvhost.OptionError(f"{what}={text} is not {'three numbers above 0' if what == 'std' else 'three numbers'} "
                                 f"joined with + (one for each of R, G, B: 0.485+0.456+0.406), or one for all")
    return values


def read_labels(path: str, what: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            # Lines end at a newline alone (\r\n and \r read as one): str.splitlines would also
            # end one at \v, \f, U+0085 or U+2028, and so miscount the model's classes.
            lines = f.read().split("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise cvhost.OptionError(f"{what}={path} cannot be read: {e}") from None
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise cvhost.OptionError(f"{what}={path} holds no labels: write one a line, class 0 first")
    return [printable(line.strip()) for line in lines]


class Classes:
    """A model's labels: the labels file's, else the model's own (Ultralytics' names), else numbers."""

    def __init__(self, model: Model, path: str, what: str) -> None:
        given = read_labels(path, what) if path else None
        if given is not None and model.classes is not None and len(given) != model.classes:
            raise cvhost.OptionError(f"{what}={path} has {len(given)} labels and the model {model.path} has "
                                     f"{model.classes} classes: give one label a line for each class, class 0 first")
        self.names = given or model.names or []

    def label(self, class_id: int) -> str:
        return self.names[class_id] if 0 <= class_id < len(self.names) else str(class_id)

    def ids(self, wanted: str, what: str) -> Optional[set[int]]:
        """The class numbers of `classes=person+car`, or None for all."""
        if not wanted:
            return None
        ids, unknown = set(), []
        for name in (w.strip() for w in wanted.split("+")):
            # Labels are matched whatever their case (face_female is NudeNet's FACE_FEMALE).
            found = {i for i, n in enumerate(self.names) if n.lower() == name.lower()}
            if not found and name.isdigit():
                found = {int(name)}
            if not found:
                unknown.append(name)
            ids |= found
        if unknown:
            if not self.names:
                raise cvhost.OptionError(f"{what}: {', '.join(unknown)} is not a label of the model (numbers only: the model has no labels)")
            close = difflib.get_close_matches(unknown[0].lower(), [n.lower() for n in self.names], n=1, cutoff=0.6)
            hint = f"; did you mean {next(n for n in self.names if n.lower() == close[0])}?" if close else ""
            known = ", ".join(self.names[:100]) + (f", ... ({len(self.names)} in all)" if len(self.names) > 100 else "")
            raise cvhost.OptionError(f"{what}: {', '.join(unknown)} is not a label of the model{hint} (its labels: {known})")
        return ids


class Detect(cvhost.Plugin):
    api_version = (1, 4)
    name = "detect"
    version = "1.0.0"
    description = "your own ONNX model (OpenVINO or onnxruntime): YOLOv5/v8/v10/v11, SSD-style detectors and classifiers, read from the model file"
    pixel_formats = ("bgr24", "rgb24")
    stateless = True
    options = (
        cvhost.Option("model", cvhost.File, "", "the ONNX model file (required): a detector or a classifier"),
        cvhost.Option("type", str, "auto", "how to read its outputs; auto: from its shapes and metadata: yolov5 [1,N,5+C], "
                      "yolov8 [1,4+C,N], end2end [1,N,6], ssd (boxes and scores), classify [1,C]",
                      choices=("auto",) + tuple(LAYOUTS)),
        cvhost.Option("labels", cvhost.File, "", "labels file, one a line, class 0 first (default: the model's own names, else class numbers)"),
        cvhost.Option("confidence", float, 0.25, "lowest score reported (0-1)", min=0, max=1),
        cvhost.Option("iou", float, 0.45, "NMS: a box overlapping a better one of its class by more than this (intersection over union) is dropped", min=0, max=1),
        cvhost.Option("agnostic", bool, False, "NMS across classes: a box is dropped for a better one of any class"),
        cvhost.Option("max_detections", int, 300, "most objects reported a frame (best first)", min=1, max=10000),
        cvhost.Option("classes", str, "", "report only these labels, joined with + (person+car); default all"),
        cvhost.Option("size", str, "", "input size WIDTHxHEIGHT (or one number) for a model whose input size is not fixed "
                      "(default: the size it was exported at, from its metadata)"),
        cvhost.Option("resize", str, "auto", "how a frame is fitted to the input; auto: letterbox for detectors, crop for classifiers",
                      choices=("auto", "letterbox", "stretch", "crop")),
        cvhost.Option("pad", int, 114, "letterbox: the grey level of the padding", min=0, max=255),
        cvhost.Option("color", str, "rgb", "channel order the model was trained on (Ultralytics, PyTorch: rgb; OpenCV, Caffe: bgr)",
                      choices=("rgb", "bgr")),
        cvhost.Option("mean", str, "", "float inputs: subtracted after scaling to 0..1, per channel R+G+B (0.485+0.456+0.406); default 0"),
        cvhost.Option("std", str, "", "float inputs: divided by after the mean, per channel R+G+B (0.229+0.224+0.225); default 1"),
        cvhost.Option("ssd_boxes", str, "auto", "ssd: the order of a box's four numbers; auto: yxyx for TensorFlow's detection_boxes, else xyxy",
                      choices=("auto", "xyxy", "yxyx", "cxcywh")),
        cvhost.Option("top_k", int, 5, "classifiers: how many of the best labels are reported", min=1, max=1000),
        cvhost.Option("classify", cvhost.File, "", "a second stage: a classifier run on each object's box; its best label is added to the object"),
        cvhost.Option("classify_labels", cvhost.File, "", "the second stage's labels file (default: its own names)"),
        cvhost.Option("threads", int, 0, "the runtime's threads for each instance; 0: cvhost's thread plan (the cores it may use "
                      "divided among every plugin instance of the run)", min=0, max=256),
        cvhost.Option("runtime", str, "auto", "what runs the model: auto (OpenVINO where PyPI's openvino is installed, else "
                      "onnxruntime; onnxruntime when OpenVINO cannot compile the model, said in one line), onnxruntime, or openvino "
                      "(Intel's OpenVINO: often faster on Intel CPUs)", choices=("auto", "onnxruntime", "openvino")),
        cvhost.Option("precision", str, "auto", "runtime=openvino: auto (OpenVINO's choice: bf16 where the CPU computes in it, "
                      "faster and a little less exact) or f32", choices=("auto", "f32")),
    )

    def __init__(self, options: dict[str, Any]) -> None:
        if not options["model"]:
            raise cvhost.OptionError("give the model to run: --plugin detect:model=FILE.onnx")
        # auto: OpenVINO where it is installed (5.0 of 5 detections a second on 8 cameras here, where
        # onnxruntime kept 3.9-4.6: docs/benchmarks.md), falling back to onnxruntime.
        runtime, fallback = options["runtime"], options["runtime"] == "auto"
        if fallback:
            runtime = "openvino" if importable("openvino") else "onnxruntime"
        require("onnxruntime", "numpy", "cv2", *(("openvino",) if runtime == "openvino" else ()))
        import numpy
        import detect_decode
        import detect_prepare
        self.np, self.decode = numpy, detect_decode
        threads = options["threads"] or max(1, cores() // self.instance_count)
        said = self.instance_index == 0
        self.model = Model(options["model"], "model", threads, options["type"], options["size"], options["ssd_boxes"],
                           runtime, options["precision"], fallback=fallback, say=said)
        self.classes = Classes(self.model, options["labels"], "labels")
        self.wanted = self.classes.ids(options["classes"], "classes")
        self.confidence, self.iou = options["confidence"], options["iou"]
        self.agnostic, self.max_detections, self.top_k = options["agnostic"], options["max_detections"], options["top_k"]
        mean, std = number_list(options["mean"], "mean"), number_list(options["std"], "std")
        classifier = self.model.type == "classify"
        resize = options["resize"] if options["resize"] != "auto" else ("crop" if classifier else "letterbox")
        rgb = options["color"] == "rgb"
        self.input = detect_prepare.InputFormat(self.model, rgb, mean, std, options["pad"], resize)
        # How each size of picture captured maps to the model's input (several cameras: several sizes).
        self.geometries: dict[tuple[int, int], Any] = {}
        self.second = None
        # The host makes each frame the model's input picture (scaled, letterboxed, in the model's
        # channel order) in one pass from the captured frame, unless the model crops the middle
        # (which the host does not do); a second stage crops the frame as captured, which the host
        # hands over beside it (frame.full).
        self.scaled = resize in ("letterbox", "stretch")
        if self.scaled:
            # With on_motion=true, a frame that moved in a few places comes with them as squares of
            # the model's side and the captured picture: the model runs on each crop (process_batch).
            self.request_frames(self.model.width, self.model.height, resize, options["pad"], "rgb24" if rgb else "bgr24",
                                full=bool(options["classify"]), regions=not classifier)
        # benchmarks/detect.py: where each frame's time goes (preparing the input, session.run,
        # decoding), said on stderr at the end.
        self.timing = [0, 0.0, 0.0, 0.0] if os.environ.get("CVHOST_DETECT_TIMING") == "1" else None
        # Boxes and scores that were not numbers, skipped.
        self.nonfinite = 0
        if self.instance_index == 0 and os.environ.get("CVHOST_LOG_LEVEL", "info") in ("debug", "info"):
            # What was read from the model and what it is fed, once: where a wrong guess shows first
            # (not under cvhost -q, which says warnings and errors alone).
            self.describe(rgb, resize, options["pad"], threads)
        if options["classify"]:
            if classifier:
                raise cvhost.OptionError("classify= runs a classifier on each object a detector finds, and model= is a classifier itself")
            second = Model(options["classify"], "classify", threads, "classify", "", runtime=runtime,
                           precision=options["precision"], fallback=fallback, say=said)
            self.second = (second, Classes(second, options["classify_labels"], "classify_labels"),
                           detect_prepare.InputFormat(second, rgb, mean, std, options["pad"], "stretch"))

    def describe(self, rgb: bool, resize: str, pad: int, threads: int) -> None:
        m = self.model
        classes = len(self.classes.names) or m.classes or "an unknown number of"
        fitted = f"letterbox on {pad}" if resize == "letterbox" else resize
        made = " (made by cvhost)" if self.scaled else ""
        runtime = "onnxruntime" if m.compiled is None else f"OpenVINO ({m.precision})"
        per = f"{threads} {runtime} thread{'s' if threads > 1 else ''} for each of {self.instance_count} instance(s), {cores()} cores"
        sys.stderr.write(f"detect: {os.path.basename(m.path)}: {m.type}, {classes} classes; input {m.width}x{m.height} {m.element} "
                         f"{'NCHW' if m.nchw else 'NHWC'} {'RGB' if rgb else 'BGR'}, {fitted}{made}; {per}\n")

    def process(self, frame: cvhost.Frame) -> None:
        self.process_batch([frame])

    def process_batch(self, frames: list[cvhost.Frame]) -> None:
        """Frames of several cameras (shared instances): the model run once on all of them where
        its batch is open (Model.run_batch), each frame's objects decoded and emitted apart. A frame
        with motion regions (on_motion=true) is its regions' crops of the captured picture, run in
        the same batch, their boxes mapped back and merged (NMS: a box cut by a region's edge and
        found whole in another is one object)."""
        start = time.perf_counter()
        # One input of the model a whole frame or a region: (frame, picture, rgb, geometry, tensor, offset).
        prepared, by_regions = [], [bool(f.regions) and f.full is not None for f in frames]
        for f, regions in zip(frames, by_regions):
            if regions:
                prepared += [self.prepare_region(f, region) for region in f.regions]
            else:
                prepared.append(self.prepare(f, own=len(prepared) + len(frames) > 1) + ((0, 0),))
        ready = time.perf_counter()
        outputs = self.model.run_batch([p[4] for p in prepared])
        ran = time.perf_counter()
        try:
            at = 0
            for f, regions in zip(frames, by_regions):
                n = len(f.regions) if regions else 1
                if regions:
                    self.report_regions(f, prepared[at:at + n], outputs[at:at + n])
                else:
                    frame, picture, rgb, geometry, _, _ = prepared[at]
                    self.report(frame, geometry, picture, rgb, outputs[at])
                at += n
        finally:
            if self.timing is not None:
                t = self.timing
                t[0], t[1], t[2], t[3] = t[0] + len(frames), t[1] + ready - start, t[2] + ran - ready, t[3] + time.perf_counter() - ran

    def prepare(self, frame: cvhost.Frame, own: bool = False) -> tuple[cvhost.Frame, Any, bool, Any, Any]:
        """The frame, its picture, whether it is RGB, its geometry, and the model's input made of it
        (`own`: in memory of its own, not the buffer the next frame's is made in)."""
        picture = frame.array()
        # The picture as captured: what boxes are mapped back to.
        size = (frame.source_width, frame.source_height) if self.scaled else (frame.width, frame.height)
        geometry = self.geometries.get(size)
        if geometry is None:
            if len(self.geometries) >= 64:
                self.geometries.clear()  # cameras come and go: bounded
            geometry = self.geometries[size] = self.input.geometry(*size)
        rgb = frame.format == "rgb24"
        return frame, picture, rgb, geometry, self.input.tensor(picture, geometry, rgb, placed=self.scaled, own=own)

    def prepare_region(self, frame: cvhost.Frame, region: tuple[int, int, int, int]) -> tuple[Any, ...]:
        """A region of the captured picture (frame.full) as the model's input, in memory of its own."""
        x, y, w, h = region
        whole = frame.full.array()
        crop = whole[y:y + h, x:x + w]
        geometry = self.input.geometry(crop.shape[1], crop.shape[0])
        rgb = frame.format == "rgb24"
        return frame, crop, rgb, geometry, self.input.tensor(crop, geometry, rgb, placed=False, own=True), (x, y)

    def close(self) -> None:
        if self.nonfinite:
            sys.stderr.write(f"detect: instance {self.instance_index}: {self.nonfinite} boxes or scores that are not numbers skipped\n")
        if self.timing and self.timing[0]:
            n, prepare, run, decode = self.timing
            sys.stderr.write(f"detect: instance {self.instance_index}: {n} frames: prepare {prepare / n * 1e3:.2f} ms, "
                             f"run {run / n * 1e3:.2f} ms, decode {decode / n * 1e3:.2f} ms (means)\n")

    def report(self, frame: cvhost.Frame, geometry: Any, picture: Any, rgb: bool, outputs: list[Any]) -> None:
        """The model's outputs as `frame`'s results: decoded, merged, mapped back to the captured
        picture (`geometry`'s width x height)."""
        if self.model.type == "classify":
            self.report_classes(frame, outputs[0])
            return
        boxes = self.found(outputs)
        self.emit_objects(frame, geometry.to_picture(boxes.corners), boxes, geometry.width, geometry.height, picture, rgb)

    def report_regions(self, frame: cvhost.Frame, regions: list[tuple[Any, ...]], outputs: list[list[Any]]) -> None:
        """The objects of a frame's regions: each region's boxes in the captured picture (moved by
        its corner), all of them merged again, as one frame's."""
        parts = []
        for (_, _, _, geometry, _, (x, y)), out in zip(regions, outputs):
            boxes = self.found(out)
            corners = geometry.to_picture(boxes.corners)
            corners[:, [0, 2]] += x
            corners[:, [1, 3]] += y
            parts.append(self.decode.Boxes(corners, boxes.scores, boxes.classes))
        np = self.np
        merged = self.decode.Boxes(np.concatenate([p.corners for p in parts]), np.concatenate([p.scores for p in parts]),
                                   np.concatenate([p.classes for p in parts]))
        if len(parts) > 1:
            merged = self.decode.suppress(merged, self.iou, self.agnostic, self.max_detections)
        whole = frame.full.array()
        self.emit_objects(frame, merged.corners, merged, frame.source_width, frame.source_height, whole, frame.format == "rgb24")

    def found(self, outputs: list[Any]) -> Any:
        """The model's outputs as boxes in its input's pixels: decoded, the unusable and unwanted
        left out, merged (NMS) or ranked, at most max_detections."""
        boxes, needs_nms = self.decode.decode(self.model.type, outputs, self.model, self.confidence)
        # A box with a NaN or infinite corner or score is the model's failing, not the frame's: it
        # is skipped (and counted), the frame's other boxes are kept.
        finite = self.np.isfinite(boxes.corners).all(axis=1) & self.np.isfinite(boxes.scores)
        if not finite.all():
            self.skip_nonfinite(int((~finite).sum()))
            boxes = boxes.take(finite)
        if self.wanted is not None:
            boxes = boxes.take(self.np.isin(boxes.classes, list(self.wanted)))
        if self.classes.names:
            boxes = boxes.take(self.np.array([self.classes.label(int(c)).lower() not in BACKGROUND for c in boxes.classes], bool))
        if needs_nms:
            return self.decode.suppress(boxes, self.iou, self.agnostic, self.max_detections)
        return self.decode.best_first(boxes, self.max_detections)

    def emit_objects(self, frame: cvhost.Frame, corners: Any, boxes: Any, width: int, height: int, picture: Any, rgb: bool) -> None:
        """`boxes` (their `corners` in the captured picture, `width` x `height`) as `frame`'s results."""
        for (x1, y1, x2, y2), score, class_id in zip(corners, boxes.scores, boxes.classes):
            if x2 <= x1 or y2 <= y1:
                continue  # wholly outside the picture (in the padding)
            result = {
                "label": self.classes.label(int(class_id)),
                "class_id": int(class_id),
                "confidence": round(float(score), 4),
                "bounds": box(x1, y1, x2 - x1, y2 - y1, 2),
                "normalized": {"bounds": box(x1 / width, y1 / height, (x2 - x1) / width, (y2 - y1) / height, 6)},
            }
            if self.second is not None:
                # The box's pixels in the picture as captured: the full frame beside a scaled one.
                whole = frame.full.array() if self.scaled and frame.full is not None else picture
                result["classification"] = self.classify(whole, rgb, x1, y1, x2, y2)
            self.emit("object", result, frame=frame)

    def skip_nonfinite(self, n: int) -> None:
        if self.nonfinite == 0:
            sys.stderr.write(f"detect: {os.path.basename(self.model.path)} gave boxes or scores that are not numbers (NaN, infinite): "
                             "they are skipped (counted at the end), the frame's other boxes kept\n")
        self.nonfinite += n

    def report_classes(self, frame: cvhost.Frame, scores: Any) -> None:
        scores = self.np.where(self.np.isfinite(scores), scores, -self.np.inf)
        best = self.decode.top(scores, self.top_k, self.confidence, self.wanted)
        if not best:
            return
        ranked = [{"label": self.classes.label(c), "class_id": c, "confidence": round(p, 4)} for c, p in best]
        self.emit("classification", dict(ranked[0], top=ranked), frame=frame)

    def classify(self, picture: Any, rgb: bool, x1: float, y1: float, x2: float, y2: float) -> Optional[dict[str, Any]]:
        """The second stage's best label for the box's pixels (the full frame's, not the model's input)."""
        model, classes, form = self.second
        crop = picture[int(y1):max(int(y1) + 1, int(round(y2))), int(x1):max(int(x1) + 1, int(round(x2)))]
        geometry = form.geometry(crop.shape[1], crop.shape[0])
        best = self.decode.top(model.run(form.tensor(crop, geometry, rgb))[0], 1, 0.0)
        if not best:
            return None
        c, p = best[0]
        return {"label": classes.label(c), "class_id": c, "confidence": round(p, 4)}


def box(x: float, y: float, w: float, h: float, decimals: int) -> dict[str, float]:
    return {"x": round(float(x), decimals), "y": round(float(y), decimals),
            "width": round(float(w), decimals), "height": round(float(h), decimals)}

