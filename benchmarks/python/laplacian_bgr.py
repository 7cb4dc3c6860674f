"""The benchmark's function as a cvhost plugin on BGR frames (benchmarks/python_plugin.py): cvhost
converts each frame to BGR, as cv2.VideoCapture does, and the plugin runs measure() on it."""

import cvhost
from laplacian import measure


class LaplacianBGR(cvhost.Plugin):
    api_version = (1, 0)
    name = "laplacian-bgr"
    description = "variance of the Laplacian of each BGR frame's luma"
    pixel_formats = ("bgr24",)
    stateless = True

    def process(self, frame):
        self.emit("sharpness", {"variance": round(measure(frame.array()), 2)})
