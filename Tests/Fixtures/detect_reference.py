"""A YOLOv8 detector run by hand, with onnxruntime and numpy alone: the reference the detect plugin's
boxes are compared with (DetectPluginTests, on a trained model and real photos).

    python3 detect_reference.py MODEL.onnx SIZE IMAGE.ppm...   one JSON line per image: [[label, score, x, y, w, h], ...]

Written apart from the plugin, from Ultralytics' own definitions: LetterBox (one gain, the picture
resized with OpenCV's INTER_LINEAR, done here in numpy: half-pixel centres, edges clamped; grey 114
padding split with the odd pixel after), RGB scaled to 0..1, the [1, 4+C, N] output's best class per
candidate over 0.25, NMS per class at IoU 0.45 (boxes offset by class), scale_boxes, clip."""

import ast
import json
import sys

import numpy as np
import onnxruntime


def read_ppm(path):
    with open(path, "rb") as f:
        data = f.read()
    fields, at = [], 0
    while len(fields) < 4:
        while data[at:at + 1].isspace():
            at += 1
        start = at
        while not data[at:at + 1].isspace():
            at += 1
        fields.append(data[start:at])
    at += 1
    assert fields[0] == b"P6" and fields[3] == b"255", path
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data, np.uint8, w * h * 3, at).reshape(h, w, 3)


def resize_linear(image, width, height):
    """INTER_LINEAR: each output pixel's centre mapped back, the four nearest input pixels blended."""
    h, w = image.shape[:2]

    def taps(n_out, n_in):
        x = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
        x = np.clip(x, 0, n_in - 1)
        lo = np.floor(x).astype(np.int64)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, (x - lo)[:, None]

    y0, y1, fy = taps(height, h)
    x0, x1, fx = taps(width, w)
    img = image.astype(np.float64)
    rows = img[y0] * (1 - fy[:, :, None]) + img[y1] * fy[:, :, None]
    out = rows[:, x0] * (1 - fx[None]) + rows[:, x1] * fx[None]
    return np.clip(np.round(out), 0, 255).astype(np.uint8)


def letterbox(image, size):
    h, w = image.shape[:2]
    gain = min(size / w, size / h)
    nw, nh = int(round(w * gain)), int(round(h * gain))
    if (nw, nh) != (w, h):
        image = resize_linear(image, nw, nh)
    left, top = int(round((size - nw) / 2 - 0.1)), int(round((size - nh) / 2 - 0.1))
    out = np.full((size, size, 3), 114, np.uint8)
    out[top:top + nh, left:left + nw] = image
    return out, gain


def nms(boxes, scores, iou):
    order = np.argsort(-scores, kind="stable")
    keep = []
    while order.size:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        xx1 = np.maximum(boxes[i, 0], boxes[rest, 0])
        yy1 = np.maximum(boxes[i, 1], boxes[rest, 1])
        xx2 = np.minimum(boxes[i, 2], boxes[rest, 2])
        yy2 = np.minimum(boxes[i, 3], boxes[rest, 3])
        inter = np.clip(xx2 - xx1, 0, None) * np.clip(yy2 - yy1, 0, None)
        area = lambda b: (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
        order = rest[inter / (area(boxes[i]) + area(boxes[rest]) - inter) <= iou]
    return keep


def detect(session, names, size, rgb_image):
    h, w = rgb_image.shape[:2]
    boxed, gain = letterbox(rgb_image, size)
    blob = (boxed.astype(np.float32) / 255).transpose(2, 0, 1)[None]
    out = session.run(None, {session.get_inputs()[0].name: blob})[0][0].T  # [N, 4+C]
    classes = out[:, 4:].argmax(1)
    scores = out[np.arange(len(out)), 4 + classes]
    keep = scores > 0.25
    out, classes, scores = out[keep], classes[keep], scores[keep]
    boxes = np.concatenate([out[:, :2] - out[:, 2:4] / 2, out[:, :2] + out[:, 2:4] / 2], 1).astype(np.float64)
    kept = nms(boxes + classes[:, None] * 7680.0, scores.astype(np.float64), 0.45)[:300]
    pad_x, pad_y = round((size - w * gain) / 2 - 0.1), round((size - h * gain) / 2 - 0.1)
    found = []
    for i in kept:
        x1, y1, x2, y2 = boxes[i]
        x1, x2 = np.clip([(x1 - pad_x) / gain, (x2 - pad_x) / gain], 0, w)
        y1, y2 = np.clip([(y1 - pad_y) / gain, (y2 - pad_y) / gain], 0, h)
        found.append([names[int(classes[i])], float(scores[i]), float(x1), float(y1), float(x2 - x1), float(y2 - y1)])
    return found


def main(model, size, images):
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = ast.literal_eval(session.get_modelmeta().custom_metadata_map["names"])
    for path in images:
        print(json.dumps(detect(session, names, size, read_ppm(path))))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
