"""A detector's outputs as boxes: each layout's decoding into corners in the model input's pixels,
a score and a class, and non-maximum suppression (NMS) where the model has not merged its boxes.
numpy only, the same steps Ultralytics' own predictor takes (candidates over the threshold, at most
30,000 of them, NMS per class by offsetting each class's boxes, at most max_detections kept)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

MAX_CANDIDATES = 30_000
"""Boxes handed to NMS at most, the best first (Ultralytics' max_nms): a model that fires
everywhere costs bounded time."""

CLASS_OFFSET = 7680.0
"""How far apart each class's boxes are put for per-class NMS in one pass (Ultralytics' max_wh):
more than any input's size, so boxes of two classes never overlap."""


class Boxes:
    """Detections: corners (x1, y1, x2, y2), scores and class numbers, in one order."""

    def __init__(self, corners: Any, scores: Any, classes: Any) -> None:
        self.corners = np.asarray(corners, np.float32).reshape(-1, 4)
        self.scores = np.asarray(scores, np.float32).reshape(-1)
        self.classes = np.asarray(classes).reshape(-1).astype(np.int64)

    def __len__(self) -> int:
        return len(self.scores)

    def take(self, keep: Any) -> "Boxes":
        return Boxes(self.corners[keep], self.scores[keep], self.classes[keep])


def centres_to_corners(b: Any) -> Any:
    """(cx, cy, w, h) rows to (x1, y1, x2, y2)."""
    half = b[:, 2:4] / 2
    return np.concatenate([b[:, 0:2] - half, b[:, 0:2] + half], axis=1)


def decode(kind: str, outputs: list[Any], model: Any, threshold: float) -> tuple[Boxes, bool]:
    """The boxes over `threshold`, in the model input's pixels, and whether they still need NMS."""
    if kind == "yolov8":
        columns = outputs[0][0]  # [4+C, N]: the best score of each candidate, along rows in memory
        keep = columns[4:].max(axis=0) > threshold
        rows = columns[:, keep].T  # the candidates only, [M, 4+C]
        classes = rows[:, 4:].argmax(axis=1)
        best = rows[np.arange(len(rows)), 4 + classes]
        return Boxes(centres_to_corners(rows[:, :4]), best, classes), True
    if kind == "yolov5":
        rows = outputs[0][0]  # [N, 5+C]
        rows = rows[rows[:, 4] > threshold]
        scores = rows[:, 5:] * rows[:, 4:5]  # a class's score is its probability times objectness
        classes = scores.argmax(axis=1)
        best = scores[np.arange(len(rows)), classes]
        keep = best > threshold
        return Boxes(centres_to_corners(rows[keep, :4]), best[keep], classes[keep]), True
    if kind == "end2end":
        rows = outputs[0][0]  # [N, 6]
        rows = rows[rows[:, 4] > threshold]
        return Boxes(rows[:, :4], rows[:, 4], rows[:, 5]), False
    if kind == "ssd":
        return decode_ssd(outputs, model, threshold)
    raise ValueError(kind)


def decode_ssd(outputs: list[Any], model: Any, threshold: float) -> tuple[Boxes, bool]:
    """Boxes [N, 4] (corners, y-first as TensorFlow's detection_boxes, or centres; in pixels or
    0..1 of the input), scores [N, C] or [N], classes [N] and a count when the model gives them.
    A model that gives its classes or a count has merged its boxes already; one that gives
    scores per class has not."""
    value = {o.name: np.asarray(v) for o, v in zip(model.outputs, outputs)}
    parts = model.ssd
    boxes = value[parts["boxes"].name][0].astype(np.float32).reshape(-1, 4)  # every output's first dimension is the batch of 1
    scores = value[parts["scores"].name][0].astype(np.float32)
    classes = value[parts["classes"].name][0].reshape(-1) if "classes" in parts else None
    n = len(boxes)
    if "count" in parts:
        n = max(0, min(n, int(value[parts["count"].name].reshape(-1)[0])))
    boxes, scores = boxes[:n], scores[:n]
    if scores.ndim == 2 and classes is None:
        classes = scores.argmax(axis=1)
        best = scores[np.arange(n), classes]
    else:
        best = scores.reshape(n, -1).max(axis=1) if n else np.zeros(0, np.float32)
        classes = classes[:n] if classes is not None else np.zeros(n, np.int64)
    if model.ssd_order == "yxyx":
        boxes = boxes[:, [1, 0, 3, 2]]
    elif model.ssd_order == "cxcywh":
        boxes = centres_to_corners(boxes)
    # Corners given as fractions of the input (all within 0..1, with a little room) are scaled to its pixels.
    if n and float(np.abs(boxes).max()) <= 1.5:
        boxes = boxes * np.array([model.width, model.height, model.width, model.height], np.float32)
    keep = best > threshold
    merged = "count" in parts or "classes" in parts
    return Boxes(boxes[keep], best[keep], np.asarray(classes)[keep]), not merged


def suppress(boxes: Boxes, iou: float, agnostic: bool, max_detections: int) -> Boxes:
    """Greedy NMS: the best box of each class is kept, and every box of its class that overlaps it
    by more than `iou` (intersection over union) is dropped; `agnostic`: across classes."""
    if len(boxes) == 0:
        return boxes
    order = np.argsort(-boxes.scores, kind="stable")[:MAX_CANDIDATES]
    corners = boxes.corners[order].astype(np.float64)
    if not agnostic:
        corners = corners + (boxes.classes[order] * CLASS_OFFSET)[:, None]
    x1, y1, x2, y2 = corners.T
    areas = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    kept = []
    rest = np.arange(len(order))
    while rest.size and len(kept) < max_detections:
        i, others = rest[0], rest[1:]
        kept.append(i)
        w = np.clip(np.minimum(x2[i], x2[others]) - np.maximum(x1[i], x1[others]), 0, None)
        h = np.clip(np.minimum(y2[i], y2[others]) - np.maximum(y1[i], y1[others]), 0, None)
        inter = w * h
        union = areas[i] + areas[others] - inter
        overlap = np.where(union > 0, inter / np.where(union > 0, union, 1), 0)
        rest = others[overlap <= iou]
    return boxes.take(order[kept])


def best_first(boxes: Boxes, max_detections: int) -> Boxes:
    """Boxes a model merged itself: the best first, at most max_detections."""
    order = np.argsort(-boxes.scores, kind="stable")[:max_detections]
    return boxes.take(order)


def probabilities(scores: Any) -> Any:
    """A classifier's scores as probabilities: as they are when they already are (each in 0..1,
    summing to 1), else through softmax (a model that ends in raw logits)."""
    s = np.asarray(scores, np.float64).reshape(-1)
    if s.size and s.min() >= 0 and s.max() <= 1 and abs(s.sum() - 1) < 1e-3:
        return s
    e = np.exp(s - s.max())
    return e / e.sum()


def top(scores: Any, k: int, threshold: float, allowed: Optional[set[int]] = None) -> list[tuple[int, float]]:
    """The k best (class, probability) of a classifier's scores, at least `threshold`."""
    p = probabilities(scores)
    order = np.argsort(-p, kind="stable")
    picked = [(int(c), float(p[c])) for c in order if (allowed is None or int(c) in allowed) and p[c] >= threshold]
    return picked[:k]
