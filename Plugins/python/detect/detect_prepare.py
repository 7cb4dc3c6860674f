"""A picture made into a model's input as the model was trained on it, and the model's boxes made
back into the picture's pixels.

Resizing: `letterbox` (the whole picture, its shape kept, centred on a pad of `pad`: what
Ultralytics trains and predicts with), `stretch` (to the input's size, shape not kept), `crop` (the
shorter side to the input's, then the middle: classifiers' usual way). Then the channel order the
model wants (RGB by default, as PyTorch-trained models take it), its layout (NCHW or NHWC) and
element type: uint8 as it is, float scaled to 0..1, less `mean`, over `std`."""

from __future__ import annotations

from typing import Any, Optional

import cv2
import numpy as np


class Geometry:
    """How a picture of width x height lies in the model's input: scaled by (sx, sy) and moved
    by (left, top). Undone for boxes by `to_picture`."""

    def __init__(self, width: int, height: int, model_width: int, model_height: int, resize: str) -> None:
        self.width, self.height = width, height
        self.model_width, self.model_height = model_width, model_height
        self.resize = resize
        if resize == "letterbox":
            # Ultralytics' LetterBox and scale_boxes, step for step: one gain for both sides, the
            # picture resized to the gain's rounded size, the pad split with the odd pixel after.
            gain = min(model_width / width, model_height / height)
            self.scaled = (int(round(width * gain)), int(round(height * gain)))
            pad_x, pad_y = (model_width - self.scaled[0]) / 2, (model_height - self.scaled[1]) / 2
            self.left, self.top = int(round(pad_x - 0.1)), int(round(pad_y - 0.1))
            self.right = model_width - self.scaled[0] - self.left
            self.bottom = model_height - self.scaled[1] - self.top
            self.sx = self.sy = gain
            self.back_left = round((model_width - width * gain) / 2 - 0.1)
            self.back_top = round((model_height - height * gain) / 2 - 0.1)
        elif resize == "crop":
            gain = max(model_width / width, model_height / height)
            self.scaled = (max(model_width, int(round(width * gain))), max(model_height, int(round(height * gain))))
            self.left, self.top = -((self.scaled[0] - model_width) // 2), -((self.scaled[1] - model_height) // 2)
            self.sx = self.sy = gain
            self.back_left, self.back_top = self.left, self.top
        else:
            self.scaled = (model_width, model_height)
            self.left = self.top = self.back_left = self.back_top = 0
            self.sx, self.sy = model_width / width, model_height / height

    def place(self, picture: Any, pad: int) -> Any:
        """The picture (h, w, 3) as the model's input picture (model_height, model_width, 3)."""
        if (picture.shape[1], picture.shape[0]) != self.scaled:
            picture = cv2.resize(picture, self.scaled, interpolation=cv2.INTER_LINEAR)
        if self.resize == "letterbox":
            if self.left or self.top or self.right or self.bottom:
                picture = cv2.copyMakeBorder(picture, self.top, self.bottom, self.left, self.right, cv2.BORDER_CONSTANT,
                                             value=(pad, pad, pad))
        elif self.resize == "crop":
            picture = picture[-self.top:-self.top + self.model_height, -self.left:-self.left + self.model_width]
        return picture

    def to_picture(self, corners: Any) -> Any:
        """Corners in the model input's pixels as the picture's, clipped to it."""
        c = corners.astype(np.float64)
        c[:, [0, 2]] = (c[:, [0, 2]] - self.back_left) / self.sx
        c[:, [1, 3]] = (c[:, [1, 3]] - self.back_top) / self.sy
        c[:, [0, 2]] = c[:, [0, 2]].clip(0, self.width)
        c[:, [1, 3]] = c[:, [1, 3]].clip(0, self.height)
        return c


class InputFormat:
    """What a model's input takes: its size, channel order, layout, element type and scaling."""

    def __init__(self, model: Any, rgb: bool, mean: Optional[list[float]], std: Optional[list[float]], pad: int, resize: str) -> None:
        self.width, self.height, self.nchw, self.element = model.width, model.height, model.nchw, model.element
        self.rgb, self.pad, self.resize = rgb, pad, resize
        # x / 255, less mean, over std: (x - 255 mean) x 1 / (255 std), per channel.
        self.mean = None if not mean or not any(mean) else np.array(mean, np.float32) * 255
        self.scale = 1 / (np.array(std or [1, 1, 1], np.float32) * 255)
        self.uniform = len(set(self.scale.tolist())) == 1
        # The tensor is written into the same memory every frame: one pass over the picture, no
        # allocation (session.run is done with it when it returns).
        shape = (1, 3, self.height, self.width) if self.nchw else (1, self.height, self.width, 3)
        self.buffer = np.empty(shape, np.float32) if self.element != "uint8" else None

    def geometry(self, width: int, height: int) -> Geometry:
        return Geometry(width, height, self.width, self.height, self.resize)

    def tensor(self, picture: Any, geometry: Geometry, rgb: bool, placed: bool = False, own: bool = False) -> Any:
        """A picture (h, w, 3 uint8, any strides; RGB or else BGR) as the model's input tensor: at
        its own size, or, `placed`, already the input's picture (the host made it). The tensor is
        made in a buffer used again by the next call, unless `own` (a batch keeps each frame's)."""
        if not placed:
            picture = geometry.place(picture, self.pad)
        if rgb != self.rgb:
            picture = picture[:, :, ::-1]
        if self.element == "uint8":
            return np.ascontiguousarray((picture.transpose(2, 0, 1) if self.nchw else picture)[None])
        buffer = np.empty_like(self.buffer) if own else self.buffer
        out = buffer[0]
        # Channels last (h, w, 3): the scale per channel broadcasts over the last axis.
        source = picture if self.mean is None else picture.astype(np.float32) - self.mean
        if self.nchw:
            if self.uniform:
                np.multiply(source.transpose(2, 0, 1), self.scale[0], out=out, casting="unsafe")
            else:
                for c in range(3):
                    np.multiply(source[:, :, c], self.scale[c], out=out[c], casting="unsafe")
        else:
            np.multiply(source, self.scale, out=out, casting="unsafe")
        return buffer.astype(np.float16) if self.element == "float16" else buffer
