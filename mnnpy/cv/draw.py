"""Drawing (MNN: `cv.line`, `arrowedLine`, `rectangle`, `circle`, `ellipse`, `polylines`, `fillPoly`,
`drawContours`). MNN.cv has no putText, so neither does mnnpy.cv.

As in MNN, drawing happens in place and returns None: a constant image Var is rewritten with `Var.write`, a
numpy array is modified directly. Rasterisation is host numpy (MNN's C++ draws on the host too) with OpenCV's
integer rasteriser (`_raster`): results equal OpenCV's pixel for pixel for LINE_4 and LINE_8, thick strokes,
ellipses and fills included. LINE_AA does what MNN's own rasteriser does: no antialiasing, thin strokes and
polygon edges 4-connected, i.e. OpenCV's LINE_4 pixels in the given colour (`_raster` notes).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from mnnpy.cv import _raster as rs
from mnnpy.cv import constants as cc
from mnnpy.cv._util import to_np
from mnnpy.expr.var import Var


@contextmanager
def _canvas(img: Any, color: Any) -> Iterator[rs.Target]:
    """The pixels of `img` with `color` converted to its element type; written back to a Var at the end."""
    arr = img.read().copy() if isinstance(img, Var) else img
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"drawing needs a numpy array or a constant image Var, got {type(img).__name__}")
    c = 1 if arr.ndim == 2 else arr.shape[2]
    vals = np.zeros(c, np.float64)
    given = np.asarray(color, np.float64).ravel()[:c]
    vals[: given.size] = given
    if arr.dtype == np.uint8:
        vals = np.clip(np.round(vals), 0, 255)
    yield rs.Target(arr, vals.astype(arr.dtype) if arr.ndim == 3 else vals.astype(arr.dtype)[0])
    if isinstance(img, Var):
        img.write(arr)


def _pt(p: Sequence[Any]) -> tuple[int, int]:
    return int(p[0]), int(p[1])


def _poly(p: Any) -> list[tuple[int, int]]:
    arr = np.asarray(to_np(p)).reshape(-1, 2).astype(np.int64)
    return [(int(x), int(y)) for x, y in arr]


def _check(thickness: int, shift: int, name: str) -> None:
    if not 0 <= shift <= rs.XY_SHIFT:
        raise ValueError(f"cv.{name}: shift must be in [0, {rs.XY_SHIFT}], got {shift}")
    if thickness > 32767:
        raise ValueError(f"cv.{name}: thickness must be <= 32767, got {thickness}")


def line(img: Any, pt1: Sequence[int], pt2: Sequence[int], color: Any, thickness: int = 1,
         lineType: int = cc.LINE_8, shift: int = 0) -> None:  # noqa: N803 - cv2 name
    """Draw a segment (MNN: `cv.line`)."""
    _check(thickness, shift, "line")
    if thickness < 0:
        raise ValueError(f"cv.line: thickness must be >= 0, got {thickness}")
    with _canvas(img, color) as t:
        rs.thick_line(t, _pt(pt1), _pt(pt2), thickness, lineType, 3, shift)


def arrowedLine(img: Any, pt1: Sequence[int], pt2: Sequence[int], color: Any, thickness: int = 1,
                line_type: int = cc.LINE_8, shift: int = 0, tipLength: float = 0.1) -> None:  # noqa: N803
    """Draw a segment with an arrow head at pt2 (MNN: `cv.arrowedLine`)."""
    a, b = _pt(pt1), _pt(pt2)
    tip = math.hypot(a[0] - b[0], a[1] - b[1]) * tipLength
    ang = math.atan2(a[1] - b[1], a[0] - b[0])
    line(img, a, b, color, thickness, line_type, shift)
    for off in (math.pi / 4, -math.pi / 4):
        p = (round(b[0] + tip * math.cos(ang + off)), round(b[1] + tip * math.sin(ang + off)))
        line(img, p, b, color, thickness, line_type, shift)


def rectangle(img: Any, pt1: Sequence[int], pt2: Sequence[int], color: Any, thickness: int = 1,
              lineType: int = cc.LINE_8, shift: int = 0) -> None:  # noqa: N803 - cv2 name
    """Draw an up-right rectangle outline, or fill it with thickness < 0 (MNN: `cv.rectangle`)."""
    _check(thickness, shift, "rectangle")
    (x1, y1), (x2, y2) = _pt(pt1), _pt(pt2)
    corners = [(x1, y1), (x2, y1), (x2, y2), (x1, y2)]
    with _canvas(img, color) as t:
        if thickness >= 0:
            rs.polyline(t, corners, True, thickness, lineType, shift)
        else:
            rs.fill_convex(t, corners, lineType, shift)


def circle(img: Any, center: Sequence[int], radius: int, color: Any, thickness: int = 1,
           lineType: int = cc.LINE_8, shift: int = 0) -> None:  # noqa: N803 - cv2 name
    """Draw a circle outline, or a disc with thickness < 0 (MNN: `cv.circle`)."""
    _check(thickness, shift, "circle")
    if radius < 0:
        raise ValueError(f"cv.circle: radius must be >= 0, got {radius}")
    cx, cy = _pt(center)
    with _canvas(img, color) as t:
        if thickness > 1 or lineType != cc.LINE_8 or shift > 0:
            up = rs.XY_SHIFT - shift
            r = int(radius) << up
            rs.ellipse(t, (cx << up, cy << up), (r, r), 0, 0, 360, thickness, lineType)
        else:
            rs.circle(t, cx, cy, int(radius), thickness < 0)


def ellipse(img: Any, center: Sequence[int], axes: Sequence[int], angle: float, startAngle: float,  # noqa: N803
            endAngle: float, color: Any, thickness: int = 1, lineType: int = cc.LINE_8,  # noqa: N803
            shift: int = 0) -> None:
    """Draw an elliptic arc, or a filled sector with thickness < 0 (MNN: `cv.ellipse`)."""
    _check(thickness, shift, "ellipse")
    if axes[0] < 0 or axes[1] < 0:
        raise ValueError(f"cv.ellipse: axes must be >= 0, got {tuple(axes)}")
    up = rs.XY_SHIFT - shift
    (cx, cy), (ax, ay) = _pt(center), _pt(axes)
    with _canvas(img, color) as t:
        rs.ellipse(t, (cx << up, cy << up), (ax << up, ay << up), round(angle), round(startAngle),
                   round(endAngle), thickness, lineType)


def polylines(img: Any, pts: Sequence[Any], isClosed: bool, color: Any, thickness: int = 1,  # noqa: N803
              lineType: int = cc.LINE_8, shift: int = 0) -> None:  # noqa: N803 - cv2 name
    """Draw polygonal chains (MNN: `cv.polylines`)."""
    _check(thickness, shift, "polylines")
    if thickness < 0:
        raise ValueError(f"cv.polylines: thickness must be >= 0, got {thickness}")
    with _canvas(img, color) as t:
        for poly in pts:
            rs.polyline(t, _poly(poly), bool(isClosed), thickness, lineType, shift)


def fillPoly(img: Any, pts: Sequence[Any], color: Any, lineType: int = cc.LINE_8, shift: int = 0,  # noqa: N803
             offset: Sequence[int] = (0, 0)) -> None:
    """Fill polygons (even-odd over all of them), outlines included (MNN: `cv.fillPoly`)."""
    _check(0, shift, "fillPoly")
    with _canvas(img, color) as t:
        edges: list = []
        for poly in pts:
            rs.collect_edges(t, _poly(poly), edges, lineType, shift, _pt(offset))
        rs.fill_edges(t, edges)


def drawContours(image: Any, contours: Sequence[Any], contourIdx: int, color: Any,  # noqa: N803
                 thickness: int = 1, lineType: int = cc.LINE_8, hierarchy: Any = None,  # noqa: N803
                 maxLevel: int = 2147483647, offset: Sequence[int] = (0, 0)) -> None:  # noqa: N803
    """Draw contour outlines, or fill them with thickness < 0 (MNN: `cv.drawContours`)."""
    chosen = list(contours) if contourIdx < 0 else [contours[contourIdx]]
    dx, dy = _pt(offset)
    moved = [[(x + dx, y + dy) for x, y in _poly(c)] for c in chosen]
    if thickness < 0:
        fillPoly(image, moved, color, lineType)
    else:
        polylines(image, moved, True, color, thickness, lineType)
