"""benchmarks/tracking.py's stand-in detector: emits, for each frame, the boxes a JSON file lists for
that frame number (label, confidence, bounds, and the box's true object, `truth`, -1 for a box of
nothing), so that cvhost's tracker (--track replay) sees exactly what supervision's does."""

import json

import cvhost


class Replay(cvhost.Plugin):
    api_version = (1, 1)
    name = "replay"
    pixel_formats = ("gray8",)
    options = (cvhost.Option("boxes", cvhost.File, "", "the JSON file: a list per frame of [x, y, w, h, confidence, truth(, label)]"),)

    def __init__(self, options):
        with open(options["boxes"]) as f:
            self.frames = json.load(f)

    def process(self, frame):
        n = frame.sequence
        for x, y, w, h, confidence, truth, *label in self.frames[n] if n < len(self.frames) else []:
            self.emit("object", {"label": label[0] if label else "person", "confidence": confidence, "truth": truth,
                                 "bounds": {"x": x, "y": y, "width": w, "height": h}})
