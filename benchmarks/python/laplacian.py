"""The function benchmarks/python_plugin.py runs on every frame, by cvhost and by a plain loop: how
sharp a picture is (the variance of the Laplacian of its luma)."""

import os

import cv2

# LAPLACIAN_THREADS=1: OpenCV on one thread (as per-frame Python code is); unset: OpenCV's default (every core).
if os.environ.get("LAPLACIAN_THREADS"):
    cv2.setNumThreads(int(os.environ["LAPLACIAN_THREADS"]))


# LAPLACIAN_WORK=N: the function N times per frame, for a heavier model's cost (the result is the same).
WORK = int(os.environ.get("LAPLACIAN_WORK", "1"))


def variance(gray):
    for _ in range(WORK - 1):
        cv2.Laplacian(gray, cv2.CV_64F).var()
    return float(cv2.Laplacian(gray, cv2.CV_64F).var())


def measure(bgr):
    """The same for a BGR picture, as cv2.VideoCapture gives them."""
    return variance(cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY))
