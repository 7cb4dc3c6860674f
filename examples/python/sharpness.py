"""An example Python plugin for cvhost: how sharp each frame is, with OpenCV (Debian: python3-opencv).

The variance of the Laplacian: low for a blurred or out-of-focus picture, high for a sharp one.
A frame below the threshold is reported as blurred: a camera out of focus, a lens fogged up.

    cvhost plugins ./sharpness.py
    CVHOST_PYTHON=/usr/bin/python3 cvhost run --plugin ./sharpness.py:threshold=50 --input clip.mp4
    CVHOST_PYTHON=/usr/bin/python3 cvhost run --plugin ./sharpness.py:instances=2 --input clip.mp4
"""

import cv2

import cvhost


class Sharpness(cvhost.Plugin):
    api_version = (1, 0)
    name = "sharpness"
    version = "1.0.0"
    description = "variance of the Laplacian of each frame (OpenCV): blurred frames"
    pixel_formats = ("gray8",)  # luma is all it needs: no conversion
    stateless = True            # each frame on its own: instances=N run in parallel, results in frame order
    options = (
        cvhost.Option("threshold", float, 100.0, "a frame whose variance is below this is blurred", min=0, max=1e9),
        cvhost.Option("every", int, 1, "write the figure of every Nth frame (0: only blurred frames)", min=0, max=1000000),
    )

    def __init__(self, options):
        self.threshold = options["threshold"]
        self.every = options["every"]

    def process(self, frame):
        image = frame.array()  # a read-only numpy view of cvhost's frame: no copy
        variance = float(cv2.Laplacian(image, cv2.CV_64F).var())
        if self.every and frame.sequence % self.every == 0:
            self.emit("sharpness", {"variance": round(variance, 2)})
        if variance < self.threshold:
            self.emit("blurred", {"variance": round(variance, 2), "threshold": self.threshold})
