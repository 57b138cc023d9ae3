"""Drawing against OpenCV: one-pixel lines, rectangles and midpoint circles exactly; thick strokes, ellipses and
polygon fills by overlap (OpenCV's fixed-point polygon rasteriser is approximated)."""

from __future__ import annotations

import numpy as np
import pytest

import mnnpy as MNN  # noqa: N812 - the alias MNN scripts use

COLOR = (255, 0, 7)


def _both(cv2: object, name: str, *args: object) -> tuple[np.ndarray, np.ndarray]:
    """Draw with OpenCV and with mnnpy on fresh 40x50 BGR canvases; returns (ours, OpenCV's)."""
    ref = np.zeros((40, 50, 3), np.uint8)
    got = np.zeros((40, 50, 3), np.uint8)
    getattr(cv2, name)(ref, *args)
    assert getattr(MNN.cv, name)(got, *args) is None  # MNN draws in place and returns None
    return got, ref


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    ma, mb = a.any(-1), b.any(-1)
    return float((ma & mb).sum()) / max(float((ma | mb).sum()), 1.0)


CASES = [((44, 0), (3, 3)), ((38, 39), (23, 24)), ((18, 35), (24, 29)), ((0, 0), (49, 39)), ((-5, 10), (60, 20)),
         ((10, -3), (12, 50)), ((7, 7), (7, 30)), ((3, 20), (45, 20))]


@pytest.mark.parametrize("p1,p2", CASES)
def test_exact_shapes(cv2, p1: tuple[int, int], p2: tuple[int, int]) -> None:
    for line_type in (MNN.cv.LINE_8, MNN.cv.LINE_4):
        got, ref = _both(cv2, "line", p1, p2, COLOR, 1, line_type)
        np.testing.assert_array_equal(got, ref)
    got, ref = _both(cv2, "arrowedLine", p1, p2, COLOR, 1)
    np.testing.assert_array_equal(got, ref)
    for thickness in (1, 2, -1):
        got, ref = _both(cv2, "rectangle", p1, p2, COLOR, thickness)
        np.testing.assert_array_equal(got, ref)
    for radius in (1, 4, 13):
        for thickness in (1, -1):
            got, ref = _both(cv2, "circle", p1, radius, COLOR, thickness)
            np.testing.assert_array_equal(got, ref)
    poly = np.array([p1, p2, (25, 5), (30, 33)], np.int32)
    got, ref = _both(cv2, "polylines", [poly], True, COLOR, 1)
    np.testing.assert_array_equal(got, ref)
    contour = poly.reshape(-1, 1, 2)
    got, ref = _both(cv2, "drawContours", [contour], -1, COLOR, 1)
    np.testing.assert_array_equal(got, ref)


def test_approximate_shapes(cv2) -> None:
    rs = np.random.RandomState(0)
    for _ in range(6):
        p1 = tuple(int(v) for v in rs.randint(0, 45, 2))
        p2 = tuple(int(v) for v in rs.randint(0, 38, 2))
        got, ref = _both(cv2, "line", p1, p2, COLOR, 3)
        assert _iou(got, ref) > 0.75
        got, ref = _both(cv2, "circle", p1, 9, COLOR, 3)
        assert _iou(got, ref) > 0.75
        got, ref = _both(cv2, "ellipse", p1, (12, 7), 30, 0, 360, COLOR, 1)
        assert _iou(got, ref) > 0.7  # thin arcs: one-pixel offsets weigh heavily
        got, ref = _both(cv2, "ellipse", p1, (12, 7), 30, 20, 250, COLOR, -1)
        assert _iou(got, ref) > 0.9
        poly = rs.randint(0, 45, (5, 2)).astype(np.int32)
        got, ref = _both(cv2, "fillPoly", [poly], COLOR)
        assert _iou(got, ref) > 0.85
        got, ref = _both(cv2, "drawContours", [poly.reshape(-1, 1, 2)], 0, COLOR, -1)
        assert _iou(got, ref) > 0.85


def test_draws_into_a_var(cv2) -> None:
    img = MNN.expr.const(np.zeros((10, 12, 3), np.uint8), [10, 12, 3], MNN.expr.NHWC, MNN.expr.uint8)
    assert MNN.cv.rectangle(img, (1, 1), (5, 6), (255, 0, 0), 1) is None
    ref = np.zeros((10, 12, 3), np.uint8)
    cv2.rectangle(ref, (1, 1), (5, 6), (255, 0, 0), 1)
    np.testing.assert_array_equal(img.read(), ref)
    gray = np.zeros((9, 9), np.uint8)
    MNN.cv.circle(gray, (4, 4), 3, 200, -1)
    np.testing.assert_array_equal(gray, cv2.circle(np.zeros((9, 9), np.uint8), (4, 4), 3, 200, -1))
