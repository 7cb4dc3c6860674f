"""The benchmark's function as a cvhost plugin on the frame's luma (benchmarks/python_plugin.py): no
conversion anywhere, the plugin runs variance() on a view of the decoder's Y plane."""

import cvhost
from laplacian import variance


class LaplacianGray(cvhost.Plugin):
    api_version = (1, 0)
    name = "laplacian-gray"
    description = "variance of the Laplacian of each frame's luma"
    pixel_formats = ("gray8",)
    stateless = True

    def process(self, frame):
        self.emit("sharpness", {"variance": round(variance(frame.array()), 2)})
