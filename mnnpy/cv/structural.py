"""Structural analysis (MNN: `cv.findContours`, `contourArea`, `boundingRect`, `minAreaRect`, `boxPoints`,
`convexHull`, `connectedComponentsWithStats`).

Pure geometry on the host with numpy, as MNN's C++ computes it; images may be Vars or arrays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.cv import constants as cc
from mnnpy.cv._contours import find_all
from mnnpy.cv._util import to_np


def _points(curve: Any) -> np.ndarray:
    return np.asarray(to_np(curve)).reshape(-1, 2)


def findContours(image: Any, mode: int, method: int,
                 offset: Sequence[int] = (0, 0)) -> tuple[list[np.ndarray], np.ndarray]:
    """Borders of the non-zero regions of an 8-bit image (MNN: `cv.findContours`, Suzuki-Abe as OpenCV).

    Returns:
        (contours, hierarchy): int32 [N, 1, 2] point arrays and a [1, count, 4] (next, previous, first child,
        parent) table, in OpenCV's order.
    """
    img = np.asarray(to_np(image))
    img = img.reshape(img.shape[0], img.shape[1])
    simple = method != cc.CHAIN_APPROX_NONE
    contours, parents, holes = find_all(img, simple)
    n = len(contours)
    outer = [i for i in range(n) if not holes[i] and parents[i] == -1]
    keep = outer if mode == cc.RETR_EXTERNAL else list(range(n))
    if mode == cc.RETR_CCOMP:  # two levels: outer borders at the top, holes below their outer border
        parents = [(-1 if not holes[i] else parents[i]) for i in range(n)]
        parents = [p if p == -1 or not holes[p] else -1 for p in parents]
    if mode in (cc.RETR_LIST, cc.RETR_EXTERNAL):
        order = keep[::-1]
        hier = np.full((len(order), 4), -1, np.int32)
        for k in range(len(order)):
            hier[k, 0] = k + 1 if k + 1 < len(order) else -1
            hier[k, 1] = k - 1
    else:
        order, hier = _tree_order(keep, parents)
    ox, oy = int(offset[0]), int(offset[1])
    out = [np.asarray(contours[i], np.int32).reshape(-1, 1, 2) + np.array([ox, oy], np.int32) for i in order]
    return out, hier.reshape(1, -1, 4)


def _tree_order(keep: list[int], parents: list[int]) -> tuple[list[int], np.ndarray]:
    """Depth-first order with siblings newest first (OpenCV's tree traversal) and the hierarchy table."""
    children: dict[int, list[int]] = {}
    for i in keep:
        children.setdefault(parents[i], []).append(i)
    order: list[int] = []

    def visit(node: int) -> None:
        for child in reversed(children.get(node, [])):
            order.append(child)
            visit(child)

    visit(-1)
    pos = {c: k for k, c in enumerate(order)}
    hier = np.full((len(order), 4), -1, np.int32)
    for node, kids in children.items():
        sibs = [pos[c] for c in reversed(kids)]
        for k, idx in enumerate(sibs):
            hier[idx, 0] = sibs[k + 1] if k + 1 < len(sibs) else -1
            hier[idx, 1] = sibs[k - 1] if k > 0 else -1
            hier[idx, 3] = pos[node] if node >= 0 else -1
        if node >= 0 and sibs:
            hier[pos[node], 2] = sibs[0]
    return order, hier


def contourArea(contour: Any, oriented: bool = False) -> float:
    """Polygon area by the shoelace formula; signed when oriented (MNN: `cv.contourArea`)."""
    p = _points(contour).astype(np.float64)
    if len(p) < 3:
        return 0.0
    x, y = p[:, 0], p[:, 1]
    a = 0.5 * float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))
    return a if oriented else abs(a)


def boundingRect(array: Any) -> tuple[int, int, int, int]:
    """Up-right bounding box (x, y, w, h) of a point set, or of the non-zero pixels of a 2-D image
    (MNN: `cv.boundingRect`)."""
    arr = np.asarray(to_np(array))
    if (arr.ndim == 2 and arr.shape[1] != 2) or (arr.dtype == np.uint8 and arr.ndim == 2):
        ys, xs = np.nonzero(arr)
        if len(xs) == 0:
            return 0, 0, 0, 0
        pts = np.stack([xs, ys], 1)
    else:
        pts = arr.reshape(-1, 2)
    if np.issubdtype(pts.dtype, np.floating):
        lo = np.floor(pts.min(0)).astype(int)
        hi = np.floor(pts.max(0)).astype(int)
    else:
        lo, hi = pts.min(0).astype(int), pts.max(0).astype(int)
    return int(lo[0]), int(lo[1]), int(hi[0] - lo[0] + 1), int(hi[1] - lo[1] + 1)


def _hull_indices(p: np.ndarray) -> list[int]:
    """Andrew's monotone chain; indices counter-clockwise in (x right, y up) terms, starting at the min point."""
    idx = sorted(range(len(p)), key=lambda i: (p[i, 0], p[i, 1]))
    if len(idx) <= 2:
        return idx

    def cross(o: int, a: int, b: int) -> float:
        return float((p[a, 0] - p[o, 0]) * (p[b, 1] - p[o, 1]) - (p[a, 1] - p[o, 1]) * (p[b, 0] - p[o, 0]))

    lower: list[int] = []
    for i in idx:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], i) <= 0:
            lower.pop()
        lower.append(i)
    upper: list[int] = []
    for i in reversed(idx):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], i) <= 0:
            upper.pop()
        upper.append(i)
    return lower[:-1] + upper[:-1]


def convexHull(points: Any, hull: Any = None, clockwise: bool = False,
               returnPoints: bool = True) -> np.ndarray:  # noqa: N803 - cv2 name
    """Convex hull of a 2-D point set, [M, 1, 2] points or [M, 1] indices (MNN: `cv.convexHull`).

    Order follows OpenCV: clockwise=False walks the hull clockwise on screen (y down) from the largest (x, y)
    point; clockwise=True the other way from the smallest.
    """
    src = np.asarray(to_np(points))
    p = src.reshape(-1, 2)
    ccw = _hull_indices(p.astype(np.float64))  # counter-clockwise with y up = clockwise on screen
    seq = ccw if not clockwise else ccw[::-1]
    if len(seq) > 1:  # OpenCV starts from the max (x, y) point, or the min one when clockwise
        keys = [(p[i, 0], p[i, 1]) for i in seq]
        start = keys.index(min(keys)) if clockwise else keys.index(max(keys))
        seq = seq[start:] + seq[:start]
    if not returnPoints:
        return np.asarray(seq, np.int32).reshape(-1, 1)
    return p[seq].reshape(-1, 1, 2).astype(src.dtype)


def minAreaRect(points: Any) -> tuple[tuple[float, float], tuple[float, float], float]:
    """Smallest-area rotated rectangle ((cx, cy), (w, h), angle in [-90, 0)) by rotating calipers over the hull
    (MNN: `cv.minAreaRect`)."""
    p = _points(points).astype(np.float64)
    hull = p[_hull_indices(p)] if len(p) > 2 else p
    if len(hull) == 1:
        return (float(hull[0, 0]), float(hull[0, 1])), (0.0, 0.0), 90.0
    best = None
    for k in range(len(hull)):
        e = hull[(k + 1) % len(hull)] - hull[k]
        norm = math.hypot(e[0], e[1])
        if norm == 0:
            continue
        u = e / norm
        v = np.array([-u[1], u[0]])
        pu, pv = hull @ u, hull @ v
        area = (pu.max() - pu.min()) * (pv.max() - pv.min())
        if best is None or area < best[0] - 1e-9:
            best = (area, u, v, pu.min(), pu.max(), pv.min(), pv.max())
    assert best is not None
    _, u, v, u0, u1, v0, v1 = best
    center = u * (u0 + u1) / 2 + v * (v0 + v1) / 2
    w, h = u1 - u0, v1 - v0
    angle = math.degrees(math.atan2(u[1], u[0]))
    while angle >= 0:  # normalise to [-90, 0), swapping sides, as OpenCV 4.14 reports it
        angle -= 90
        w, h = h, w
    while angle < -90:
        angle += 90
        w, h = h, w
    return (float(center[0]), float(center[1])), (float(w), float(h)), float(angle)


def boxPoints(box: Any) -> np.ndarray:
    """The 4 corners of a rotated rectangle, float32 [4, 2] (MNN: `cv.boxPoints`)."""
    (cx, cy), (w, h), angle = box
    a = math.radians(angle)
    b, s = math.cos(a) * 0.5, math.sin(a) * 0.5
    p0 = (cx - s * h - b * w, cy + b * h - s * w)
    p1 = (cx + s * h - b * w, cy - b * h - s * w)
    return np.array([p0, p1, (2 * cx - p0[0], 2 * cy - p0[1]), (2 * cx - p1[0], 2 * cy - p1[1])], np.float32)


def connectedComponentsWithStats(image: Any, connectivity: int = 8,
                                 ltype: int = 4) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Label connected non-zero regions in raster order; stats [left, top, width, height, area] and centroids
    (MNN: `cv.connectedComponentsWithStats`)."""
    img = np.asarray(to_np(image))
    img = img.reshape(img.shape[0], img.shape[1]) != 0
    h, w = img.shape
    labels = np.zeros((h, w), np.int32)
    if connectivity == 8:
        nbrs = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]
    else:
        nbrs = [(-1, 0), (0, -1), (0, 1), (1, 0)]
    count = 0
    for y, x in zip(*np.nonzero(img), strict=True):
        if labels[y, x]:
            continue
        count += 1
        labels[y, x] = count
        stack = [(int(y), int(x))]
        while stack:
            cy, cx = stack.pop()
            for dy, dx in nbrs:
                ny, nx = cy + dy, cx + dx
                if 0 <= ny < h and 0 <= nx < w and img[ny, nx] and not labels[ny, nx]:
                    labels[ny, nx] = count
                    stack.append((ny, nx))
    n = count + 1
    if connectivity == 8 and count:  # OpenCV's block-based (2x2) scan numbers components by their first block
        key = ((np.arange(h)[:, None] // 2) * ((w + 1) // 2) + np.arange(w)[None, :] // 2).ravel()
        first = np.full(n, np.iinfo(np.int64).max)
        np.minimum.at(first, labels.ravel(), key)
        rank = np.zeros(n, np.int32)
        rank[1 + np.argsort(first[1:], kind="stable")] = np.arange(1, n, dtype=np.int32)
        labels = rank[labels]
    flat = labels.ravel()
    ys, xs = np.divmod(np.arange(h * w), w)
    area = np.bincount(flat, minlength=n)
    stats = np.zeros((n, 5), np.int32)
    for lab in range(n):
        sel = flat == lab
        if not sel.any():
            continue
        x0, x1, y0, y1 = xs[sel].min(), xs[sel].max(), ys[sel].min(), ys[sel].max()
        stats[lab] = [x0, y0, x1 - x0 + 1, y1 - y0 + 1, area[lab]]
    safe = np.maximum(area, 1)
    centroids = np.stack([np.bincount(flat, xs, n) / safe, np.bincount(flat, ys, n) / safe], 1)
    return n, labels, stats, centroids
