"""An example Python plugin for cvhost: the brightness of each frame, and when it crosses a threshold.

    cvhost plugins ./brightness.py
    cvhost run --plugin ./brightness.py:threshold=0.3 --input clip.mp4
"""

import cvhost


class Brightness(cvhost.Plugin):
    api_version = (1, 0)
    name = "brightness"
    version = "1.0.0"
    description = "mean luma of each frame (0..1), and dark/bright when it crosses a threshold"
    pixel_formats = ("gray8",)
    stateless = False  # it remembers whether the last frame was dark
    options = (
        cvhost.Option("threshold", float, 0.25, "a frame darker than this is dark", min=0, max=1),
        cvhost.Option("every", int, 1, "write the brightness of every Nth frame (0: only changes)", min=0, max=1000000),
    )

    def __init__(self, options):
        self.threshold = options["threshold"]
        self.every = options["every"]
        self.dark = None

    def process(self, frame):
        # frame.array() is a read-only view of cvhost's memory (no copy), valid during this call.
        y = frame.array()
        mean = float(y.mean()) / 255
        if self.every and frame.sequence % self.every == 0:
            self.emit("brightness", {"mean": round(mean, 4)})
        dark = mean < self.threshold
        if dark != self.dark:
            self.emit("dark" if dark else "bright", {"mean": round(mean, 4), "threshold": self.threshold})
            self.dark = dark
