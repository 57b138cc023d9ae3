"""Drawing against OpenCV, pixel for pixel, for LINE_4 and LINE_8: one-pixel and thick lines, rectangles, circles,
ellipses and sectors, polylines, fillPoly (also with shift and offset) and drawContours, on random cases inside
and across the image border. LINE_AA does what MNN's rasteriser (tools/cv/source/imgproc/draw.cpp) does: no
antialiasing, every type but 8 taken as 4-connected, so its pixels are OpenCV's LINE_4 ones; compared with cv2's
LINE_4 (the official wheel's cv.line/circle/... crash with a segfault whenever a lineType is passed, so it cannot
be the oracle here)."""

from __future__ import annotations

import numpy as np
import pytest

import mnnpy as MNN  # noqa: N812 - the alias MNN scripts use

COLOR = (255, 0, 7)
LINE_TYPES = [4, 8]


def _both(cv2: object, name: str, *args: object, **kwargs: object) -> tuple[np.ndarray, np.ndarray]:
    """Draw with OpenCV and with mnnpy on fresh 40x50 BGR canvases; returns (ours, OpenCV's)."""
    ref = np.zeros((40, 50, 3), np.uint8)
    got = np.zeros((40, 50, 3), np.uint8)
    getattr(cv2, name)(ref, *args, **kwargs)
    assert getattr(MNN.cv, name)(got, *args, **kwargs) is None  # MNN draws in place and returns None
    return got, ref


def _same(cv2: object, name: str, *args: object, **kwargs: object) -> None:
    got, ref = _both(cv2, name, *args, **kwargs)
    np.testing.assert_array_equal(got, ref, err_msg=f"{name}{args}")


CASES = [((44, 0), (3, 3)), ((38, 39), (23, 24)), ((18, 35), (24, 29)), ((0, 0), (49, 39)), ((-5, 10), (60, 20)),
         ((10, -3), (12, 50)), ((7, 7), (7, 30)), ((3, 20), (45, 20))]


@pytest.mark.parametrize("p1,p2", CASES)
def test_thin_shapes_with_clipping(cv2, p1: tuple[int, int], p2: tuple[int, int]) -> None:
    for line_type in LINE_TYPES:
        _same(cv2, "line", p1, p2, COLOR, 1, line_type)
        for thickness in (1, -1):
            _same(cv2, "rectangle", p1, p2, COLOR, thickness, line_type)
        for radius in (1, 4, 13, 30):
            for thickness in (1, -1):
                _same(cv2, "circle", p1, radius, COLOR, thickness, line_type)
        for start, end in ((0, 360), (20, 250), (300, -40)):
            _same(cv2, "ellipse", p1, (22, 9), 33, start, end, COLOR, 1, line_type)
            _same(cv2, "ellipse", p1, (22, 9), 33, start, end, COLOR, -1, line_type)
        poly = np.array([p1, p2, (25, 5), (30, 33)], np.int32)
        _same(cv2, "polylines", [poly], True, COLOR, 1, line_type)
        _same(cv2, "fillPoly", [poly, poly[::-1] // 2 + 20], COLOR, line_type)
        _same(cv2, "drawContours", [poly.reshape(-1, 1, 2)], -1, COLOR, 1, line_type)
    _same(cv2, "arrowedLine", p1, p2, COLOR, 1)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("across_border", [False, True])
def test_thick_strokes_and_fills(cv2, seed: int, across_border: bool) -> None:
    rs = np.random.RandomState(seed)
    lo, hi = (-10, 60) if across_border else (12, 38)
    for _ in range(10):
        p1 = tuple(int(v) for v in rs.randint(lo, hi, 2))
        p2 = tuple(int(v) for v in rs.randint(lo, hi - 10, 2))
        for line_type in LINE_TYPES:
            for thickness in (2, 3, 5, 8):
                _same(cv2, "line", p1, p2, COLOR, thickness, line_type)
            _same(cv2, "rectangle", p1, p2, COLOR, int(rs.randint(2, 5)), line_type)
            _same(cv2, "arrowedLine", p1, p2, COLOR, int(rs.randint(2, 4)), line_type)
            for thickness in (2, 4):
                _same(cv2, "circle", p1, int(rs.randint(0, 8)), COLOR, thickness, line_type)
            axes = (int(rs.randint(0, 9)), int(rs.randint(0, 9)))
            angle, start, end = (float(v) for v in (rs.randint(0, 360), rs.randint(-100, 300), rs.randint(-100, 400)))
            _same(cv2, "ellipse", p1, axes, angle, start, end, COLOR, 3, line_type)
            poly = rs.randint(lo + 7, hi - 3, (int(rs.randint(3, 8)), 2)).astype(np.int32)
            _same(cv2, "polylines", [poly], bool(rs.randint(2)), COLOR, int(rs.randint(2, 6)), line_type)
            _same(cv2, "drawContours", [poly.reshape(-1, 1, 2)], 0, COLOR, -1, line_type)
            _same(cv2, "fillPoly", [poly], COLOR, line_type, offset=(int(rs.randint(-5, 6)), int(rs.randint(-5, 6))))


@pytest.mark.parametrize("seed", range(3))
def test_sub_pixel_shift(cv2, seed: int) -> None:
    rs = np.random.RandomState(10 + seed)
    for _ in range(8):
        sh = int(rs.randint(1, 5))
        pts = rs.randint(-5 << sh, 55 << sh, (5, 2)).astype(np.int32)
        inner = rs.randint(-10 << sh, 55 << sh, (5, 2)).astype(np.int32)
        centre = tuple(int(v) for v in inner[0])
        for line_type in LINE_TYPES:
            _same(cv2, "fillPoly", [pts], COLOR, line_type, sh)
            _same(cv2, "polylines", [inner], True, COLOR, int(rs.randint(1, 4)), line_type, sh)
            _same(cv2, "line", centre, tuple(int(v) for v in inner[1]), COLOR, 1, line_type, sh)
            _same(cv2, "circle", centre, int(rs.randint(0, 4 << sh)), COLOR, int(rs.randint(-1, 4)), line_type, sh)


AA = object()  # placeholder for the line type: LINE_AA for mnnpy, LINE_4 for OpenCV


def _aa_is_line4(cv2: object, name: str, *args: object, **kwargs: object) -> None:
    ref = np.zeros((40, 50, 3), np.uint8)
    got = np.zeros((40, 50, 3), np.uint8)
    getattr(cv2, name)(ref, *[cv2.LINE_4 if a is AA else a for a in args], **kwargs)
    getattr(MNN.cv, name)(got, *[MNN.cv.LINE_AA if a is AA else a for a in args], **kwargs)
    np.testing.assert_array_equal(got, ref, err_msg=f"{name}{args} LINE_AA")
    colours = {tuple(px) for px in got.reshape(-1, 3)}
    assert colours <= {(0, 0, 0), COLOR}, f"{name}: LINE_AA must not blend, got {sorted(colours)[:4]}"


@pytest.mark.parametrize("p1,p2", CASES)
def test_line_aa_as_mnn_draws_it(cv2, p1: tuple[int, int], p2: tuple[int, int]) -> None:
    """Thin strokes, curves and fills (with clipping) in LINE_AA equal OpenCV's LINE_4 ones."""
    _aa_is_line4(cv2, "line", p1, p2, COLOR, 1, AA)
    for thickness in (1, -1):
        _aa_is_line4(cv2, "rectangle", p1, p2, COLOR, thickness, AA)
        _aa_is_line4(cv2, "ellipse", p1, (22, 9), 33, 20, 250, COLOR, thickness, AA)
        for radius in (1, 4, 13):
            _aa_is_line4(cv2, "circle", p1, radius, COLOR, thickness, AA)
    poly = np.array([p1, p2, (25, 5), (30, 33)], np.int32)
    _aa_is_line4(cv2, "polylines", [poly], True, COLOR, 1, AA)
    _aa_is_line4(cv2, "fillPoly", [poly, poly[::-1] // 2 + 20], COLOR, AA)
    _aa_is_line4(cv2, "drawContours", [poly.reshape(-1, 1, 2)], -1, COLOR, 1, AA)
    _aa_is_line4(cv2, "arrowedLine", p1, p2, COLOR, 1, AA)


@pytest.mark.parametrize("seed", range(2))
def test_line_aa_thick_and_sub_pixel(cv2, seed: int) -> None:
    """Thick LINE_AA strokes are LINE_8's (= LINE_4's) quadrilaterals and discs; shifted ones use Line2."""
    rs = np.random.RandomState(20 + seed)
    for _ in range(8):
        p1, p2 = (tuple(int(v) for v in rs.randint(-10, 60, 2)) for _ in range(2))
        _aa_is_line4(cv2, "line", p1, p2, COLOR, int(rs.randint(2, 7)), AA)
        _aa_is_line4(cv2, "circle", p1, int(rs.randint(0, 9)), COLOR, int(rs.randint(2, 5)), AA)
        poly = rs.randint(-5, 55, (int(rs.randint(3, 7)), 2)).astype(np.int32)
        _aa_is_line4(cv2, "polylines", [poly], bool(rs.randint(2)), COLOR, int(rs.randint(1, 5)), AA)
        sh = int(rs.randint(1, 4))
        sub = rs.randint(-5 << sh, 55 << sh, (5, 2)).astype(np.int32)
        _aa_is_line4(cv2, "fillPoly", [sub], COLOR, AA, sh)
        _aa_is_line4(cv2, "line", tuple(int(v) for v in sub[0]), tuple(int(v) for v in sub[1]), COLOR, 1, AA, sh)


def test_line_aa_is_four_connected() -> None:
    """MNN's Line with a type other than 8 steps one axis at a time: dx + dy + 1 pixels, all in the colour."""
    canvas = np.zeros((12, 12), np.uint8)
    MNN.cv.line(canvas, (1, 2), (10, 6), 200, 1, MNN.cv.LINE_AA)
    ys, xs = np.nonzero(canvas)
    assert len(xs) == 9 + 4 + 1 and set(canvas[ys, xs]) == {200}
    steps = np.abs(np.diff(sorted(zip(xs.tolist(), ys.tolist(), strict=True)), axis=0)).sum(1)
    assert (steps == 1).all()


def test_draws_into_a_var_and_gray(cv2) -> None:
    img = MNN.expr.const(np.zeros((10, 12, 3), np.uint8), [10, 12, 3], MNN.expr.NHWC, MNN.expr.uint8)
    assert MNN.cv.rectangle(img, (1, 1), (5, 6), (255, 0, 0), 1) is None
    ref = np.zeros((10, 12, 3), np.uint8)
    cv2.rectangle(ref, (1, 1), (5, 6), (255, 0, 0), 1)
    np.testing.assert_array_equal(img.read(), ref)
    gray = np.zeros((9, 9), np.uint8)
    MNN.cv.circle(gray, (4, 4), 3, 200, -1)
    np.testing.assert_array_equal(gray, cv2.circle(np.zeros((9, 9), np.uint8), (4, 4), 3, 200, -1))


def test_bad_arguments_raise() -> None:
    canvas = np.zeros((5, 5, 3), np.uint8)
    with pytest.raises(ValueError, match=r"cv\.circle: radius"):
        MNN.cv.circle(canvas, (2, 2), -1, COLOR)
    with pytest.raises(ValueError, match=r"cv\.line: shift"):
        MNN.cv.line(canvas, (0, 0), (4, 4), COLOR, 1, 8, 17)
    with pytest.raises(TypeError, match="drawing needs a numpy array"):
        MNN.cv.line([[0]], (0, 0), (4, 4), COLOR)
