"""Small ONNX models whose outputs are known, one for each layout the detect plugin reads, built with
the onnx package (Debian's python3-onnx): `python3 detect_models.py FOLDER`.

The detectors' outputs are constants (the input is used, times zero, so that it is a real input):
the same five boxes in each layout, in the model input's pixels (320x320):
    A  centre (100, 100), 40x40, class 0, 0.9
    B  centre (104, 100), 40x40, class 0, 0.8    overlaps A (IoU 0.82): merged into A by NMS
    C  centre (102, 100), 40x40, class 1, 0.85   overlaps A, of another class: kept unless agnostic
    D  centre (250, 200), 20x20, class 1, 0.1    under the default threshold
    E  centre (250, 200), 60x30, class 0, 0.6
The classifiers' outputs are the mean of each input channel (R, G, B when fed RGB): a red picture
is class 0 ("red"), a blue one class 2 ("blue")."""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BOXES = [  # cx, cy, w, h, class, score
    (100, 100, 40, 40, 0, 0.9),
    (104, 100, 40, 40, 0, 0.8),
    (102, 100, 40, 40, 1, 0.85),
    (250, 200, 20, 20, 1, 0.1),
    (250, 200, 60, 30, 0, 0.6),
]
NAMES = "{0: 'cat', 1: 'dog'}"
SIZE = 320


def corners(cx, cy, w, h):
    return (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


def save(folder, name, graph_nodes, inputs, outputs, constants, metadata=None):
    graph = helper.make_graph(graph_nodes, name, inputs, outputs, constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="cvhost-tests")
    model.ir_version = 7
    for k, v in (metadata or {}).items():
        model.metadata_props.add(key=k, value=v)
    onnx.checker.check_model(model)
    onnx.save(model, f"{folder}/{name}.onnx")


def image_input(shape=(1, 3, SIZE, SIZE), element=TensorProto.FLOAT, name="images"):
    return helper.make_tensor_value_info(name, element, list(shape))


def constant_detector(folder, name, table, metadata=None, input_shape=(1, 3, SIZE, SIZE), output_name="output0"):
    """Output `table` (a numpy array) whatever the input: table + 0 * mean(input)."""
    out = np.asarray(table, np.float32)
    nodes = [
        helper.make_node("ReduceMean", ["images"], ["mean"], keepdims=0),
        helper.make_node("Mul", ["mean", "zero"], ["nothing"]),
        helper.make_node("Add", ["table", "nothing"], [output_name]),
    ]
    constants = [numpy_helper.from_array(out, "table"), numpy_helper.from_array(np.array(0, np.float32), "zero")]
    save(folder, name, nodes, [image_input(input_shape)], [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, list(out.shape))],
         constants, metadata)


def unconverted_detector(folder, name, table, metadata):
    """constant_detector's model through an onnxruntime contrib op (com.microsoft's MurmurHash3 of the
    input's mean) that OpenVINO has no conversion for: onnxruntime runs it, OpenVINO cannot."""
    out = np.asarray(table, np.float32)
    nodes = [
        helper.make_node("ReduceMean", ["images"], ["mean"], keepdims=0),
        helper.make_node("Cast", ["mean"], ["whole"], to=TensorProto.INT32),
        helper.make_node("MurmurHash3", ["whole"], ["hash"], domain="com.microsoft", positive=1),
        helper.make_node("Cast", ["hash"], ["hashed"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["hashed", "zero"], ["nothing"]),
        helper.make_node("Add", ["table", "nothing"], ["output0"]),
    ]
    constants = [numpy_helper.from_array(out, "table"), numpy_helper.from_array(np.array(0, np.float32), "zero")]
    graph = helper.make_graph(nodes, name, [image_input()], [helper.make_tensor_value_info("output0", TensorProto.FLOAT, list(out.shape))],
                              constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)],
                              producer_name="cvhost-tests")
    model.ir_version = 7
    for k, v in metadata.items():
        model.metadata_props.add(key=k, value=v)
    onnx.save(model, f"{folder}/{name}.onnx")


def multi_output(folder, name, tables):
    """Several constant outputs (an SSD-style model): name -> array."""
    nodes = [helper.make_node("ReduceMean", ["images"], ["mean"], keepdims=0),
             helper.make_node("Mul", ["mean", "zero"], ["nothing"])]
    constants = [numpy_helper.from_array(np.array(0, np.float32), "zero")]
    outputs = []
    for out_name, table in tables.items():
        t = np.asarray(table, np.float32)
        nodes.append(helper.make_node("Add", [out_name + "_table", "nothing"], [out_name]))
        constants.append(numpy_helper.from_array(t, out_name + "_table"))
        outputs.append(helper.make_tensor_value_info(out_name, TensorProto.FLOAT, list(t.shape)))
    save(folder, name, nodes, [image_input()], outputs, constants)


def colour_classifier(folder, name, nhwc_uint8=False, softmax=False):
    """[1, 3] scores: 10 x each channel's mean (0..1), through softmax when `softmax`."""
    nodes, constants = [], []
    if nhwc_uint8:
        inp = image_input((1, 64, 64, 3), TensorProto.UINT8)
        nodes += [helper.make_node("Cast", ["images"], ["floats"], to=TensorProto.FLOAT),
                  helper.make_node("ReduceMean", ["floats"], ["means"], axes=[1, 2], keepdims=0)]
        scale = 10 / 255
    else:
        inp = image_input((1, 3, 64, 64))
        nodes.append(helper.make_node("ReduceMean", ["images"], ["means"], axes=[2, 3], keepdims=0))
        scale = 10.0
    constants.append(numpy_helper.from_array(np.array(scale, np.float32), "scale"))
    nodes.append(helper.make_node("Mul", ["means", "scale"], ["logits" if softmax else "output0"]))
    if softmax:
        nodes.append(helper.make_node("Softmax", ["logits"], ["output0"], axis=1))
    save(folder, name, nodes, [inp], [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 3])], constants,
         {"names": "{0: 'red', 1: 'green', 2: 'blue'}", "task": "classify", "imgsz": "[64, 64]"})


def main(folder):
    meta = {"names": NAMES, "imgsz": f"[{SIZE}, {SIZE}]", "task": "detect", "stride": "32"}
    # YOLOv8: [1, 4+C, N].
    # More candidates than boxes (zero rows), as in every real model: 8.
    v8 = np.zeros((1, 6, 8), np.float32)
    for i, (cx, cy, w, h, c, s) in enumerate(BOXES):
        v8[0, :4, i] = (cx, cy, w, h)
        v8[0, 4 + c, i] = s
    constant_detector(folder, "yolov8", v8, meta)
    unconverted_detector(folder, "yolov8-unconverted", v8, meta)
    constant_detector(folder, "yolov8-dynamic", v8, meta, input_shape=(1, 3, "height", "width"))
    constant_detector(folder, "yolov8-dynamic-nometa", v8, None, input_shape=(1, 3, "height", "width"))
    # One class, no metadata: A, E and D (all class 0 here), and empty candidates.
    one = np.zeros((1, 5, 8), np.float32)  # more candidates than rows, as in every real model
    for i, k in enumerate((0, 4, 3)):
        cx, cy, w, h, _, s = BOXES[k]
        one[0, :, i] = (cx, cy, w, h, s)
    constant_detector(folder, "yolov8-oneclass", one)
    # YOLOv5: [1, N, 5+C], score = objectness x class probability.
    v5 = np.zeros((1, 8, 7), np.float32)
    for i, (cx, cy, w, h, c, s) in enumerate(BOXES):
        v5[0, i, :4] = (cx, cy, w, h)
        v5[0, i, 4] = 0.75 if s == 0.6 else s
        v5[0, i, 5 + c] = 0.8 if s == 0.6 else 1.0
    constant_detector(folder, "yolov5", v5, meta)
    # End to end: [1, 300, 6] corners, score, class; B is not merged (the model would have).
    e2e = np.zeros((1, 300, 6), np.float32)
    for i, (cx, cy, w, h, c, s) in enumerate(BOXES):
        e2e[0, i] = (*corners(cx, cy, w, h), s, c)
    constant_detector(folder, "end2end", e2e, meta)
    # SSD, raw: boxes 0..1 of the input (x1, y1, x2, y2), scores per class with class 0 background
    # (labels file: background, cat, dog); a sixth box that is background.
    boxes = [np.array(corners(cx, cy, w, h)) / SIZE for cx, cy, w, h, _, _ in BOXES] + [np.array([0.5, 0.5, 0.6, 0.6])]
    scores = []
    for _, _, _, _, c, s in BOXES:
        row = [0.05, 0.0, 0.0]
        row[1 + c] = s
        scores.append(row)
    scores.append([0.95, 0.02, 0.03])
    multi_output(folder, "ssd", {"boxes": [boxes], "scores": [scores]})
    # SSD as TensorFlow's object detection API exports it: y-first boxes, classes (1 = cat, 2 = dog)
    # and scores already merged, and a count (3 of the 4 rows are detections).
    rows = [BOXES[0], BOXES[2], BOXES[4], BOXES[1]]
    multi_output(folder, "ssd-tf", {
        "detection_boxes": [[np.array(corners(cx, cy, w, h))[[1, 0, 3, 2]] / SIZE for cx, cy, w, h, _, _ in rows]],
        "detection_scores": [[s for *_, s in rows]],
        "detection_classes": [[c + 1 for *_, c, _ in rows]],
        "num_detections": [3],
    })
    # Hostile metadata: a class numbered ten billion (once 1.8 GB made in create()), more names than
    # the output has classes, imgsz out of range; a box that is NaN beside good ones; a class name
    # with a terminal's escape.
    constant_detector(folder, "names-huge", v8, dict(meta, names="{0: 'a', 10000000000: 'b'}"))
    constant_detector(folder, "names-beyond", v8, dict(meta, names="{0: 'a', 1: 'b', 2: 'c', 3: 'd', 4: 'e'}"))
    constant_detector(folder, "imgsz-huge", v8, dict(meta, imgsz="100000"), input_shape=(1, 3, "height", "width"))
    constant_detector(folder, "imgsz-negative", v8, dict(meta, imgsz="-5"), input_shape=(1, 3, "height", "width"))
    nan = v8.copy()
    nan[0, :, 5] = (float("nan"), 100, 40, 40, 0.95, 0)
    nan[0, :, 6] = (200, 100, float("inf"), 40, 0.0, 0.97)
    constant_detector(folder, "nan-box", nan, dict(meta, names="{0: '\\x1b[31mcat', 1: 'dog'}"))
    # Classifiers.
    colour_classifier(folder, "colour")
    colour_classifier(folder, "colour-softmax", softmax=True)
    colour_classifier(folder, "colour-uint8-nhwc", nhwc_uint8=True)
    # What the plugin cannot read: a rank-4 output.
    constant_detector(folder, "unreadable", np.zeros((1, 2, 3, 4), np.float32))
    # An input it cannot feed: int64 pixels.
    nodes = [helper.make_node("Cast", ["images"], ["floats"], to=TensorProto.FLOAT),
             helper.make_node("ReduceMean", ["floats"], ["output0"], axes=[2, 3], keepdims=0)]
    save(folder, "int64-input", nodes, [image_input(element=TensorProto.INT64)],
         [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 3])], [])


if __name__ == "__main__":
    main(sys.argv[1])
