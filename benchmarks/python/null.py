"""A Python plugin that does nothing: what cvhost costs a Python plugin per frame (cvhost-bench)."""

import cvhost


class Null(cvhost.Plugin):
    api_version = (1, 0)
    name = "null-py"
    description = "does nothing"
    pixel_formats = ("i420",)
    stateless = True

    def process(self, frame):
        pass
