"""Drawing (MNN: `cv.line`, `arrowedLine`, `rectangle`, `circle`, `ellipse`, `polylines`, `fillPoly`,
`drawContours`). MNN.cv has no putText, so neither does mnnpy.cv.

As in MNN, drawing happens in place and returns None: a constant image Var is rewritten with `Var.write`, a
numpy array is modified directly. Rasterisation is host numpy (MNN's C++ draws on the host too): one-pixel lines
follow OpenCV's Bresenham iterator and circles its midpoint algorithm exactly; thick strokes, ellipses and
polygon fills are geometric approximations of OpenCV's fixed-point rasteriser.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.cv import constants as cc
from mnnpy.cv._util import to_np
from mnnpy.expr.var import Var


class _Canvas:
    """The pixels of an image being drawn on, written back to a Var on `done`."""

    def __init__(self, img: Any, color: Any) -> None:
        self.img = img
        self.arr = img.read().copy() if isinstance(img, Var) else img
        if not isinstance(self.arr, np.ndarray):
            raise TypeError("drawing needs a numpy array or a constant image Var")
        self.h, self.w = self.arr.shape[0], self.arr.shape[1]
        c = 1 if self.arr.ndim == 2 else self.arr.shape[2]
        vals = np.zeros(c, np.float64)
        given = np.asarray(color, np.float64).ravel()[:c]
        vals[: given.size] = given
        if self.arr.dtype == np.uint8:
            vals = np.clip(np.round(vals), 0, 255)
        self.color = vals.astype(self.arr.dtype) if self.arr.ndim == 3 else vals.astype(self.arr.dtype)[0]

    def put(self, xs: np.ndarray, ys: np.ndarray) -> None:
        xs, ys = np.asarray(xs, np.int64).ravel(), np.asarray(ys, np.int64).ravel()
        keep = (xs >= 0) & (xs < self.w) & (ys >= 0) & (ys < self.h)
        self.arr[ys[keep], xs[keep]] = self.color

    def put_mask(self, mask: np.ndarray) -> None:
        self.arr[mask] = self.color

    def done(self) -> None:
        if isinstance(self.img, Var):
            self.img.write(self.arr)


def _clip(w: int, h: int, p1: Sequence[int], p2: Sequence[int]) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """OpenCV's integer clipLine to the image rectangle; None when the segment misses it."""
    x1, y1, x2, y2 = int(p1[0]), int(p1[1]), int(p2[0]), int(p2[1])
    right, bottom = w - 1, h - 1

    def code(x: int, y: int, with_y: bool = True) -> int:
        c = (x < 0) + (x > right) * 2
        return c + ((y < 0) * 4 + (y > bottom) * 8 if with_y else 0)

    c1, c2 = code(x1, y1), code(x2, y2)
    if (c1 & c2) == 0 and (c1 | c2) != 0:
        if c1 & 12:
            a = 0 if c1 < 8 else bottom
            x1 += int((a - y1) * (x2 - x1) / (y2 - y1))
            y1 = a
            c1 = code(x1, y1, False)
        if c2 & 12:
            a = 0 if c2 < 8 else bottom
            x2 += int((a - y2) * (x2 - x1) / (y2 - y1))
            y2 = a
            c2 = code(x2, y2, False)
        if (c1 & c2) == 0 and (c1 | c2) != 0:
            if c1:
                a = 0 if c1 == 1 else right
                y1 += int((a - x1) * (y2 - y1) / (x2 - x1))
                x1 = a
                c1 = 0
            if c2:
                a = 0 if c2 == 1 else right
                y2 += int((a - x2) * (y2 - y1) / (x2 - x1))
                x2 = a
                c2 = 0
    return ((x1, y1), (x2, y2)) if (c1 | c2) == 0 else None


def _bresenham(p1: Sequence[int], p2: Sequence[int], connectivity: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV's LineIterator (left to right) for a one-pixel line."""
    x1, y1, x2, y2 = int(p1[0]), int(p1[1]), int(p2[0]), int(p2[1])
    if x2 < x1:
        x1, y1, x2, y2 = x2, y2, x1, y1
    dx, dy = x2 - x1, y2 - y1
    sy = -1 if dy < 0 else 1
    dy = abs(dy)
    steep = dy > dx
    major, minor = (dy, dx) if steep else (dx, dy)
    xs, ys = [], []
    x, y = x1, y1
    if connectivity == 4:  # one axis per step: major while err >= 0, else minor
        err = 0
        for _ in range(major + minor + 1):
            xs.append(x)
            ys.append(y)
            if err < 0:
                err += 2 * major
                x, y = (x + 1, y) if steep else (x, y + sy)
            else:
                err -= 2 * minor
                x, y = (x, y + sy) if steep else (x + 1, y)
        return np.asarray(xs), np.asarray(ys)
    err = major - 2 * minor
    for _ in range(major + 1):
        xs.append(x)
        ys.append(y)
        diag = err < 0
        err += -2 * minor + (2 * major if diag else 0)
        if steep:
            y += sy
            x += 1 if diag else 0
        else:
            x += 1
            y += sy if diag else 0
    return np.asarray(xs), np.asarray(ys)


def _stroke(canvas: _Canvas, p1: Sequence[float], p2: Sequence[float], thickness: int, line_type: int) -> None:
    if thickness <= 1:
        clipped = _clip(canvas.w, canvas.h, p1, p2)
        if clipped is None:
            return
        xs, ys = _bresenham(clipped[0], clipped[1], 4 if line_type == cc.LINE_4 else 8)
        canvas.put(xs, ys)
        return
    # OpenCV's ThickLine: a band of half-width t/2 (+0.5 for odd t) with filled round caps of radius round(t/2)
    hw = thickness / 2.0 + (thickness & 1) * 0.5
    cap = (thickness + 1) // 2
    r = max(hw, cap) + 1
    x0, x1 = math.floor(min(p1[0], p2[0]) - r), math.ceil(max(p1[0], p2[0]) + r)
    y0, y1 = math.floor(min(p1[1], p2[1]) - r), math.ceil(max(p1[1], p2[1]) + r)
    ys, xs = np.mgrid[y0:y1 + 1, x0:x1 + 1]
    ax, ay = float(p1[0]), float(p1[1])
    vx, vy = float(p2[0]) - ax, float(p2[1]) - ay
    den = vx * vx + vy * vy
    if den:
        t = ((xs - ax) * vx + (ys - ay) * vy) / den
        d2 = ((xs - ax) * vy - (ys - ay) * vx) ** 2 / den
        sel = (t >= 0) & (t <= 1) & (d2 <= hw * hw)
        canvas.put(xs[sel], ys[sel])
    for cx, cy in (p1, p2):
        _midpoint_circle(canvas, int(cx), int(cy), cap, True)


def _pt(p: Sequence[float], shift: int = 0) -> tuple[int, int]:
    return int(p[0]) >> shift if shift else int(p[0]), int(p[1]) >> shift if shift else int(p[1])


def line(img: Any, pt1: Sequence[int], pt2: Sequence[int], color: Any, thickness: int = 1,
         lineType: int = cc.LINE_8, shift: int = 0) -> None:  # noqa: N803 - cv2 name
    """Draw a segment (MNN: `cv.line`)."""
    canvas = _Canvas(img, color)
    _stroke(canvas, _pt(pt1, shift), _pt(pt2, shift), thickness, lineType)
    canvas.done()


def arrowedLine(img: Any, pt1: Sequence[int], pt2: Sequence[int], color: Any, thickness: int = 1,
                line_type: int = cc.LINE_8, shift: int = 0, tipLength: float = 0.1) -> None:  # noqa: N803
    """Draw a segment with an arrow head at pt2 (MNN: `cv.arrowedLine`)."""
    canvas = _Canvas(img, color)
    a, b = _pt(pt1, shift), _pt(pt2, shift)
    tip = math.hypot(a[0] - b[0], a[1] - b[1]) * tipLength
    ang = math.atan2(a[1] - b[1], a[0] - b[0])
    _stroke(canvas, a, b, thickness, line_type)
    for off in (math.pi / 4, -math.pi / 4):
        p = (round(b[0] + tip * math.cos(ang + off)), round(b[1] + tip * math.sin(ang + off)))
        _stroke(canvas, b, p, thickness, line_type)
    canvas.done()


def rectangle(img: Any, pt1: Sequence[int], pt2: Sequence[int], color: Any, thickness: int = 1,
              lineType: int = cc.LINE_8, shift: int = 0) -> None:  # noqa: N803 - cv2 name
    """Draw an up-right rectangle outline, or fill it with thickness < 0 (MNN: `cv.rectangle`)."""
    canvas = _Canvas(img, color)
    (x1, y1), (x2, y2) = _pt(pt1, shift), _pt(pt2, shift)
    if thickness < 0:
        xa, xb = sorted((x1, x2))
        ya, yb = sorted((y1, y2))
        ys, xs = np.mgrid[max(ya, 0):min(yb, canvas.h - 1) + 1, max(xa, 0):min(xb, canvas.w - 1) + 1]
        canvas.put(xs, ys)
    else:
        corners = [(x1, y1), (x2, y1), (x2, y2), (x1, y2)]
        for k in range(4):
            _stroke(canvas, corners[k], corners[(k + 1) % 4], thickness, lineType)
    canvas.done()


def _midpoint_circle(canvas: _Canvas, cx: int, cy: int, radius: int, fill: bool) -> None:
    err, dx, dy, plus, minus = 0, radius, 0, 1, (radius << 1) - 1
    while dx >= dy:
        y11, y12, y21, y22 = cy - dy, cy + dy, cy - dx, cy + dx
        x11, x12, x21, x22 = cx - dx, cx + dx, cx - dy, cx + dy
        if fill:
            for yy, xa, xb in ((y11, x11, x12), (y12, x11, x12), (y21, x21, x22), (y22, x21, x22)):
                xs = np.arange(xa, xb + 1)
                canvas.put(xs, np.full(xs.shape, yy))
        else:
            canvas.put(np.array([x11, x11, x12, x12, x21, x22, x21, x22]),
                       np.array([y11, y12, y11, y12, y21, y21, y22, y22]))
        dy += 1
        err += plus
        plus += 2
        if err > 0:
            err -= minus
            dx -= 1
            minus -= 2


def circle(img: Any, center: Sequence[int], radius: int, color: Any, thickness: int = 1,
           lineType: int = cc.LINE_8, shift: int = 0) -> None:  # noqa: N803 - cv2 name
    """Draw a circle outline, or a disc with thickness < 0 (MNN: `cv.circle`)."""
    canvas = _Canvas(img, color)
    cx, cy = _pt(center, shift)
    r = int(radius) >> shift if shift else int(radius)
    if thickness <= 1:
        _midpoint_circle(canvas, cx, cy, r, thickness < 0)
    else:  # OpenCV: a thick polyline through ellipse2Poly's points
        pts = _ellipse_points((cx, cy), (r, r), 0, 0, 360)
        for k in range(len(pts) - 1):
            _stroke(canvas, pts[k], pts[k + 1], thickness, lineType)
    canvas.done()


def _ellipse_points(center: Sequence[float], axes: Sequence[float], angle: float, start: float,
                    end: float) -> np.ndarray:
    """OpenCV's ellipse2Poly: points every `delta` degrees (delta from the ellipse size)."""
    size = max(axes[0], axes[1])
    delta = 90 if size < 3 else 30 if size < 10 else 18 if size < 15 else 5
    start, end = (start, end) if start <= end else (end, start)
    while start < 0:
        start, end = start + 360, end + 360
    while end > 360:
        start, end = start - 360, end - 360
    if end - start > 360:
        start, end = 0, 360
    a = math.radians(angle)
    alpha, beta = math.cos(a), math.sin(a)
    pts = []
    i = start
    while i < end + delta:
        t = math.radians(min(i, end))
        x, y = axes[0] * math.cos(t), axes[1] * math.sin(t)
        px, py = center[0] + x * alpha - y * beta, center[1] + x * beta + y * alpha
        pts.append((math.floor(px + 0.5), math.floor(py + 0.5)))
        i += delta
    return np.asarray(pts, np.int64)


def ellipse(img: Any, center: Sequence[int], axes: Sequence[int], angle: float, startAngle: float,  # noqa: N803
            endAngle: float, color: Any, thickness: int = 1, lineType: int = cc.LINE_8,  # noqa: N803
            shift: int = 0) -> None:
    """Draw an elliptic arc, or a filled sector with thickness < 0 (MNN: `cv.ellipse`)."""
    pts = _ellipse_points(_pt(center, shift), _pt(axes, shift), angle, startAngle, endAngle)
    if thickness < 0:
        if abs(endAngle - startAngle) < 360:
            pts = np.vstack([pts, [_pt(center, shift)]])
        fillPoly(img, [pts], color)
    else:
        polylines(img, [pts], False, color, thickness, lineType)


def polylines(img: Any, pts: Sequence[Any], isClosed: bool, color: Any, thickness: int = 1,  # noqa: N803
              lineType: int = cc.LINE_8, shift: int = 0) -> None:  # noqa: N803 - cv2 name
    """Draw polygonal chains (MNN: `cv.polylines`)."""
    canvas = _Canvas(img, color)
    for poly in pts:
        p = np.asarray(to_np(poly)).reshape(-1, 2).astype(np.int64) >> shift
        for k in range(len(p) - (0 if isClosed else 1)):
            _stroke(canvas, p[k], p[(k + 1) % len(p)], thickness, lineType)
    canvas.done()


def fillPoly(img: Any, pts: Sequence[Any], color: Any, lineType: int = cc.LINE_8, shift: int = 0,  # noqa: N803
             offset: Sequence[int] = (0, 0)) -> None:
    """Fill polygons (even-odd over all of them), boundary included (MNN: `cv.fillPoly`)."""
    canvas = _Canvas(img, color)
    ys, xs = np.mgrid[0:canvas.h, 0:canvas.w]
    inside = np.zeros((canvas.h, canvas.w), bool)
    polys = [(np.asarray(to_np(p)).reshape(-1, 2).astype(np.int64) >> shift) + np.asarray(offset) for p in pts]
    for p in polys:
        x0, y0 = p[:, 0].astype(np.float64), p[:, 1].astype(np.float64)
        x1, y1 = np.roll(x0, -1), np.roll(y0, -1)
        for k in range(len(p)):
            if y0[k] == y1[k]:
                continue
            crosses = ((y0[k] <= ys) & (ys < y1[k])) | ((y1[k] <= ys) & (ys < y0[k]))
            xcross = x0[k] + (ys - y0[k]) * (x1[k] - x0[k]) / (y1[k] - y0[k])
            inside ^= crosses & (xs < xcross)
    canvas.put_mask(inside)
    for p in polys:  # OpenCV's fill includes the polygon's edges
        for k in range(len(p)):
            bx, by = _bresenham(p[k], p[(k + 1) % len(p)])
            canvas.put(bx, by)
    canvas.done()


def drawContours(image: Any, contours: Sequence[Any], contourIdx: int, color: Any,  # noqa: N803
                 thickness: int = 1, lineType: int = cc.LINE_8, hierarchy: Any = None,  # noqa: N803
                 maxLevel: int = 2147483647, offset: Sequence[int] = (0, 0)) -> None:  # noqa: N803
    """Draw contour outlines, or fill them with thickness < 0 (MNN: `cv.drawContours`)."""
    chosen = list(contours) if contourIdx < 0 else [contours[contourIdx]]
    moved = [np.asarray(to_np(c)).reshape(-1, 2).astype(np.int64) + np.asarray(offset) for c in chosen]
    if thickness < 0:
        fillPoly(image, moved, color)
    else:
        polylines(image, moved, True, color, thickness, lineType)
