"""OpenCV's integer rasteriser, reimplemented for exact `mnnpy.cv` drawing (LINE_4 / LINE_8).

Coordinates are Python ints in OpenCV's 16-bit fixed point (XY_SHIFT) where OpenCV uses it: thick lines are
filled convex quadrilaterals with round caps (midpoint discs), ellipses are polygons from a 1-degree sine table,
polygons are filled by an active-edge scanline walk. C semantics are kept: `>>` floors, `/` truncates (`_tdiv`),
cvRound rounds half to even. Where OpenCV 4.14 behaves differently from older sources (thin sub-pixel LINE_8
lines round their ends and use the integer iterator, integer thick lines are pre-clipped, polygon edges start
from their clipped pixel outline) the 4.14 behaviour is followed, as checked against cv2 in tests/cv/test_draw.py.
LINE_AA follows MNN's rasteriser (tools/cv/source/imgproc/draw.cpp), which has no antialiasing: its Line() takes
every line type but 8 as 4-connected and its thin fixed-point strokes use Line2, so LINE_AA pixels are exactly
OpenCV's LINE_4 ones (no blended colours); thick strokes and fills are LINE_8's (the same for LINE_4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

XY_SHIFT = 16
XY_ONE = 1 << XY_SHIFT
HALF = XY_ONE >> 1
LINE_AA = 16
# sin of whole degrees 0..450 rounded to 7 decimals, as float32 (OpenCV's table for ellipse2Poly)
_SIN = np.round(np.sin(np.radians(np.arange(451))), 7).astype(np.float32).astype(np.float64)


def _tdiv(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


class Target:
    """Pixels being drawn: `hline` and `points` write the colour with clipping."""

    def __init__(self, arr: np.ndarray, color: np.ndarray) -> None:
        self.arr, self.color = arr, color
        self.h, self.w = arr.shape[0], arr.shape[1]

    def hline(self, y: int, x1: int, x2: int) -> None:
        if 0 <= y < self.h and x1 < self.w and x2 >= 0:
            self.arr[y, max(x1, 0):min(x2, self.w - 1) + 1] = self.color

    def points(self, xs: list[int], ys: list[int]) -> None:
        x, y = np.asarray(xs, np.int64), np.asarray(ys, np.int64)
        keep = (x >= 0) & (x < self.w) & (y >= 0) & (y < self.h)
        self.arr[y[keep], x[keep]] = self.color


def clip_line(w: int, h: int, p1: Sequence[int], p2: Sequence[int]) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """OpenCV's clipLine to [0, w) x [0, h) (double quotient, truncated); None when the segment misses it."""
    x1, y1, x2, y2 = int(p1[0]), int(p1[1]), int(p2[0]), int(p2[1])
    right, bottom = w - 1, h - 1

    def code(x: int, y: int | None) -> int:
        c = (x < 0) + (x > right) * 2
        return c if y is None else c + (y < 0) * 4 + (y > bottom) * 8

    c1, c2 = code(x1, y1), code(x2, y2)
    if (c1 & c2) == 0 and (c1 | c2) != 0:
        if c1 & 12:
            a = 0 if c1 < 8 else bottom
            x1 += int(float(a - y1) * (x2 - x1) / (y2 - y1))
            y1, c1 = a, code(x1, None)
        if c2 & 12:
            a = 0 if c2 < 8 else bottom
            x2 += int(float(a - y2) * (x2 - x1) / (y2 - y1))
            y2, c2 = a, code(x2, None)
        if (c1 & c2) == 0 and (c1 | c2) != 0:
            if c1:
                a = 0 if c1 == 1 else right
                y1 += int(float(a - x1) * (y2 - y1) / (x2 - x1))
                x1, c1 = a, 0
            if c2:
                a = 0 if c2 == 1 else right
                y2 += int(float(a - x2) * (y2 - y1) / (x2 - x1))
                x2, c2 = a, 0
    return ((x1, y1), (x2, y2)) if (c1 | c2) == 0 else None


def line(t: Target, p1: Sequence[int], p2: Sequence[int], connectivity: int = 8) -> None:
    """One-pixel integer line (OpenCV's LineIterator, left to right); connectivity 4 or 8 (LINE_AA: 4, as MNN)."""
    connectivity = 4 if connectivity in (1, 4, LINE_AA) else 8
    if not (0 <= p1[0] < t.w and 0 <= p2[0] < t.w and 0 <= p1[1] < t.h and 0 <= p2[1] < t.h):
        clipped = clip_line(t.w, t.h, p1, p2)
        if clipped is None:
            return
        p1, p2 = clipped
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
    err = 0 if connectivity == 4 else major - 2 * minor
    for _ in range(major + minor + 1 if connectivity == 4 else major + 1):
        xs.append(x)
        ys.append(y)
        move_minor = err < 0
        move_major = connectivity == 8 or not move_minor  # LINE_4: one axis per step
        if connectivity == 4:
            err += 2 * major if move_minor else -2 * minor
        else:
            err += -2 * minor + (2 * major if move_minor else 0)
        if steep:
            y += sy if move_major else 0
            x += 1 if move_minor else 0
        else:
            x += 1 if move_major else 0
            y += sy if move_minor else 0
    t.points(xs, ys)


def line2(t: Target, p1: Sequence[int], p2: Sequence[int]) -> None:
    """Fixed-point (XY_SHIFT) one-pixel line, OpenCV's Line2."""
    clipped = clip_line(t.w << XY_SHIFT, t.h << XY_SHIFT, p1, p2)
    if clipped is None:
        return
    (x1, y1), (x2, y2) = clipped
    ax, ay = abs(x2 - x1), abs(y2 - y1)
    horizontal = ax > ay
    if (horizontal and x2 < x1) or (not horizontal and y2 < y1):
        x1, y1, x2, y2 = x2, y2, x1, y1
    if horizontal:
        step = _tdiv((y2 - y1) << XY_SHIFT, ax | 1)
        count = (x2 - x1) >> XY_SHIFT
    else:
        step = _tdiv((x2 - x1) << XY_SHIFT, ay | 1)
        count = (y2 - y1) >> XY_SHIFT
    xs, ys = [(x2 + HALF) >> XY_SHIFT], [(y2 + HALF) >> XY_SHIFT]
    x1, y1 = x1 + HALF, y1 + HALF
    k = np.arange(count + 1, dtype=np.int64)
    if horizontal:
        xs += ((x1 >> XY_SHIFT) + k).tolist()
        ys += ((y1 + k * step) >> XY_SHIFT).tolist()
    else:
        ys += ((y1 >> XY_SHIFT) + k).tolist()
        xs += ((x1 + k * step) >> XY_SHIFT).tolist()
    t.points(xs, ys)


def circle(t: Target, cx: int, cy: int, radius: int, fill: bool) -> None:
    """OpenCV's midpoint circle (outline or filled disc)."""
    err, dx, dy, plus, minus = 0, radius, 0, 1, (radius << 1) - 1
    xs: list[int] = []
    ys: list[int] = []
    while dx >= dy:
        for yy, half in ((cy - dy, dx), (cy + dy, dx), (cy - dx, dy), (cy + dx, dy)):
            if fill:
                t.hline(yy, cx - half, cx + half)
            else:
                xs += [cx - half, cx + half]
                ys += [yy, yy]
        dy += 1
        err += plus
        plus += 2
        if err > 0:
            err -= minus
            dx -= 1
            minus -= 2
    t.points(xs, ys)


def fill_convex(t: Target, v: list[tuple[int, int]], line_type: int, shift: int) -> None:
    """OpenCV's FillConvexPoly: outline, then two edges walked down from the top vertex."""
    n = len(v)
    delta = (1 << shift) >> 1
    up = XY_SHIFT - shift
    imin = min(range(n), key=lambda i: (v[i][1], i))
    for (qx, qy), (px, py) in zip([v[-1], *v[:-1]], v, strict=True):  # the outline first
        if shift == 0:
            line(t, (qx, qy), (px, py), line_type)
        else:
            line2(t, (qx << up, qy << up), (px << up, py << up))
    xmin, xmax = (min(p[0] for p in v) + delta) >> shift, (max(p[0] for p in v) + delta) >> shift
    ymin, ymax = (v[imin][1] + delta) >> shift, (max(p[1] for p in v) + delta) >> shift
    if n < 3 or xmax < 0 or ymax < 0 or xmin >= t.w or ymin >= t.h:
        return
    ymax = min(ymax, t.h - 1)
    idx, di, ye, ex, edx = [imin, imin], [1, n - 1], [ymin, ymin], [-XY_ONE, -XY_ONE], [0, 0]
    edges, y = n, ymin
    while True:
        for i in (0, 1):
            if y < ye[i]:
                continue
            i0 = idx[i]
            j = (i0 + di[i]) % n
            while True:
                more = edges > 0
                edges -= 1
                if not more:
                    break
                ty = (v[j][1] + delta) >> shift
                if ty > y:
                    xs, xe = v[i0][0] << up, v[j][0] << up
                    ye[i], ex[i], idx[i] = ty, xs, j
                    edx[i] = _tdiv((xe - xs) * 2 + (ty - y), 2 * (ty - y))
                    break
                i0, j = j, (j + di[i]) % n
        if edges < 0:
            break
        if y >= 0:
            left, right = (1, 0) if ex[0] > ex[1] else (0, 1)
            t.hline(y, (ex[left] + HALF) >> XY_SHIFT, (ex[right] + HALF) >> XY_SHIFT)
        ex[0] += edx[0]
        ex[1] += edx[1]
        y += 1
        if y > ymax:
            break


class _Edge:
    __slots__ = ("dx", "next", "x", "y0", "y1")

    def __init__(self, y0: int, y1: int, x: int, dx: int) -> None:
        self.y0, self.y1, self.x, self.dx = y0, y1, x, dx
        self.next: _Edge | None = None


def collect_edges(t: Target, v: list[tuple[int, int]], edges: list[_Edge], line_type: int, shift: int,
                  offset: Sequence[int] = (0, 0)) -> None:
    """OpenCV's CollectPolyEdges: draws the outline and appends the non-horizontal edges (x in XY_SHIFT)."""
    delta = int(offset[1]) + ((1 << shift) >> 1)
    up = XY_SHIFT - shift

    def fixed(p: tuple[int, int]) -> tuple[int, int]:
        return (p[0] + int(offset[0])) << up, (p[1] + delta) >> shift

    pt0 = fixed(v[-1])
    for p in v:
        pt1 = fixed(p)
        t0, t1 = ((pt0[0] + HALF) >> XY_SHIFT, pt0[1]), ((pt1[0] + HALF) >> XY_SHIFT, pt1[1])
        line(t, t0, t1, line_type)
        c0y, c1y = pt0[1], pt1[1]
        if not (0 <= t0[0] < t.w and 0 <= t1[0] < t.w and 0 <= t0[1] < t.h and 0 <= t1[1] < t.h):
            clipped = clip_line(t.w, t.h, t0, t1)  # edges start from the clipped, pixel-rounded outline
            if clipped is not None:
                t0, t1 = clipped
                if t0[1] != t1[1]:
                    c0y, c1y = t0[1], t1[1]
        c0x, c1x = t0[0] << XY_SHIFT, t1[0] << XY_SHIFT
        if pt0[1] != pt1[1]:
            dx = _tdiv(c1x - c0x, c1y - c0y)
            if pt0[1] < pt1[1]:
                edges.append(_Edge(pt0[1], pt1[1], c0x + (pt0[1] - c0y) * dx, dx))
            else:
                edges.append(_Edge(pt1[1], pt0[1], c1x + (pt1[1] - c1y) * dx, dx))
        pt0 = pt1


def fill_edges(t: Target, edges: list[_Edge]) -> None:
    """OpenCV's FillEdgeCollection: active-edge scanline fill (pairs of edges, even-odd)."""
    total = len(edges)
    if total < 2:
        return
    ends = [e.x + (e.y1 - e.y0) * e.dx for e in edges]
    y_min, y_max = min(e.y0 for e in edges), max(e.y1 for e in edges)
    x_min, x_max = min(min(e.x for e in edges), min(ends)), max(max(e.x for e in edges), max(ends))
    if y_max < 0 or y_min >= t.h or x_max < 0 or x_min >= (t.w << XY_SHIFT):
        return
    edges = [*sorted(edges, key=lambda e: (e.y0, e.x, e.dx)), _Edge(2 ** 31 - 1, 0, 0, 0)]
    head = _Edge(2 ** 31 - 1, 0, 0, 0)
    i = 0
    e = edges[0]
    for y in range(e.y0, min(y_max, t.h)):
        draw = False
        prelast, last = head, head.next
        while last is not None or e.y0 == y:
            if last is not None and last.y1 == y:
                prelast.next = last = last.next
                continue
            keep = prelast
            if last is not None and (e.y0 > y or last.x < e.x):
                prelast, last = last, last.next
            elif i < total:
                prelast.next, e.next, prelast = e, last, e
                i += 1
                e = edges[i]
            else:
                break
            if draw:
                if y >= 0:
                    a, b = (prelast, keep) if keep.x > prelast.x else (keep, prelast)
                    t.hline(y, (a.x + XY_ONE - 1) >> XY_SHIFT, b.x >> XY_SHIFT)
                keep.x += keep.dx
                prelast.x += prelast.dx
            draw = not draw
        _bubble(head)


def _bubble(head: _Edge) -> None:
    """Re-sort the active edge list by x (OpenCV's in-place bubble sort)."""
    stop: _Edge | None = None
    while True:
        prelast, last = head, head.next
        exchanged: _Edge | None = None
        while last is not stop and last is not None and last.next is not None:
            te = last.next
            if last.x > te.x:
                prelast.next, last.next, te.next = te, te.next, last
                prelast = exchanged = te
            else:
                prelast, last = last, te
        if exchanged is None:
            return
        stop = exchanged
        if stop is head.next or stop is head:
            return


def thick_line(t: Target, p0: Sequence[int], p1: Sequence[int], thickness: int, line_type: int, flags: int,
               shift: int) -> None:
    """OpenCV's ThickLine: a one-pixel line, or a filled quadrilateral plus round caps (flags: 1 start, 2 end)."""
    if thickness > 1 and shift == 0:  # OpenCV 4.14 clips integer segments to the image grown by the thickness
        m = thickness
        c = clip_line(t.w + 2 * m, t.h + 2 * m, (p0[0] + m, p0[1] + m), (p1[0] + m, p1[1] + m))
        if c is None:
            return
        p0, p1 = (c[0][0] - m, c[0][1] - m), (c[1][0] - m, c[1][1] - m)
    up = XY_SHIFT - shift
    a, b = (int(p0[0]) << up, int(p0[1]) << up), (int(p1[0]) << up, int(p1[1]) << up)
    if thickness <= 1:
        if shift == 0 or line_type not in (4, LINE_AA):  # OpenCV 4.14: only LINE_4 keeps the fixed-point Line2
            line(t, ((a[0] + HALF) >> XY_SHIFT, (a[1] + HALF) >> XY_SHIFT),
                 ((b[0] + HALF) >> XY_SHIFT, (b[1] + HALF) >> XY_SHIFT), line_type)
        else:
            line2(t, a, b)
        return
    dx, dy = (a[0] - b[0]) / XY_ONE, (b[1] - a[1]) / XY_ONE
    r = dx * dx + dy * dy
    half_t = thickness << (XY_SHIFT - 1)
    if abs(r) > 2.220446049250313e-16:
        r = (half_t + (thickness & 1) * XY_ONE * 0.5) / math.sqrt(r)
        ox, oy = round(dy * r), round(dx * r)
        quad = [(a[0] + ox, a[1] + oy), (a[0] - ox, a[1] - oy), (b[0] - ox, b[1] - oy), (b[0] + ox, b[1] + oy)]
        fill_convex(t, quad, line_type, XY_SHIFT)
    for i, p in enumerate((a, b)):
        if flags & (i + 1):
            circle(t, (p[0] + HALF) >> XY_SHIFT, (p[1] + HALF) >> XY_SHIFT, (half_t + HALF) >> XY_SHIFT, True)


def polyline(t: Target, v: list[tuple[int, int]], closed: bool, thickness: int, line_type: int, shift: int) -> None:
    """OpenCV's PolyLine: thick segments, the first one with a start cap when open."""
    if not v:
        return
    p0 = v[-1] if closed else v[0]
    flags = 2 if closed else 3
    for p in v[0 if closed else 1:]:
        thick_line(t, p0, p, thickness, line_type, flags, shift)
        p0, flags = p, 2


def ellipse_poly(center: Sequence[float], axes: Sequence[float], angle: int, start: int, end: int,
                 delta: int) -> list[tuple[float, float]]:
    """OpenCV's ellipse2Poly in doubles: points every `delta` degrees from the 1-degree sine table."""
    angle %= 360
    start, end = min(start, end), max(start, end)
    while start < 0:
        start, end = start + 360, end + 360
    while end > 360:
        start, end = start - 360, end - 360
    if end - start > 360:
        start, end = 0, 360
    alpha, beta = _SIN[450 - angle], _SIN[angle]
    pts = []
    for i in range(start, end + delta, delta):
        ang = min(i, end)
        ang += 360 if ang < 0 else 0
        x, y = axes[0] * _SIN[450 - ang], axes[1] * _SIN[ang]
        pts.append((center[0] + x * alpha - y * beta, center[1] + x * beta + y * alpha))
    return pts if len(pts) != 1 else [tuple(center)] * 2


def ellipse(t: Target, center: tuple[int, int], axes: tuple[int, int], angle: int, start: int, end: int,
            thickness: int, line_type: int) -> None:
    """OpenCV's EllipseEx (centre and axes in XY_SHIFT fixed point): polyline, convex fill or sector fill."""
    axes = (abs(axes[0]), abs(axes[1]))
    size = (max(axes) + HALF) >> XY_SHIFT
    delta = 90 if size < 3 else 30 if size < 10 else 18 if size < 15 else 5
    v: list[tuple[int, int]] = []
    for px, py in ellipse_poly(center, axes, angle, start, end, delta):
        x = (round(px / XY_ONE) << XY_SHIFT)
        y = (round(py / XY_ONE) << XY_SHIFT)
        pt = (x + round(px - x), y + round(py - y))
        if not v or pt != v[-1]:
            v.append(pt)
    if len(v) == 1:
        v = [center, center]
    if thickness >= 0:
        polyline(t, v, False, thickness, line_type, XY_SHIFT)
    elif end - start >= 360:
        fill_convex(t, v, line_type, XY_SHIFT)
    else:
        edges: list[_Edge] = []
        collect_edges(t, [*v, center], edges, line_type, XY_SHIFT)
        fill_edges(t, edges)
