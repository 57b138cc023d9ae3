"""Suzuki-Abe border following, the algorithm behind OpenCV's findContours (host numpy / Python, as MNN's C++).

Labels live in an int32 copy of the image framed by zeros: 1 = unvisited foreground, +nbd = border pixel of
contour nbd, -nbd = border pixel whose right neighbour is background.
"""

from __future__ import annotations

import numpy as np

# Freeman directions: 0 right, 1 up-right, 2 up, 3 up-left, 4 left, 5 down-left, 6 down, 7 down-right (y down)
DX = (1, 1, 0, -1, -1, -1, 0, 1)
DY = (0, -1, -1, -1, 0, 1, 1, 1)


def follow(img: np.ndarray, y0: int, x0: int, hole: bool, nbd: int, simple: bool) -> list[tuple[int, int]]:
    """Trace one border starting at (y0, x0); labels the visited pixels and returns (x, y) points (framed coords)."""
    s = s_end = 0 if hole else 4
    while True:
        s = (s - 1) & 7
        if img[y0 + DY[s], x0 + DX[s]] != 0:
            break
        if s == s_end:
            img[y0, x0] = -nbd
            return [(x0, y0)]
    y1, x1 = y0 + DY[s], x0 + DX[s]
    y3, x3 = y0, x0
    prev_s = s ^ 4
    pts: list[tuple[int, int]] = []
    while True:
        s_end = s
        while True:
            s += 1
            y4, x4 = y3 + DY[s & 7], x3 + DX[s & 7]
            if img[y4, x4] != 0:
                break
        s &= 7
        if 0 < s <= s_end:  # the right neighbour was examined and is background
            img[y3, x3] = -nbd
        elif img[y3, x3] == 1:
            img[y3, x3] = nbd
        if not simple or s != prev_s:
            pts.append((x3, y3))
        prev_s = s
        if y4 == y0 and x4 == x0 and y3 == y1 and x3 == x1:
            break
        y3, x3 = y4, x4
        s = (s + 4) & 7
    return pts


def find_all(binary: np.ndarray, simple: bool) -> tuple[list[list[tuple[int, int]]], list[int], list[bool]]:
    """Every border in discovery (raster) order: (points in image coords, parent index or -1, is_hole)."""
    h, w = binary.shape
    img = np.zeros((h + 2, w + 2), np.int32)
    img[1:-1, 1:-1] = binary != 0
    contours: list[list[tuple[int, int]]] = []
    parents: list[int] = []
    holes: list[bool] = []
    nbd = 1
    for y in range(1, h + 1):
        lnbd = 1
        row = img[y]
        for x in range(1, w + 1):
            p = row[x]
            start_outer = p == 1 and row[x - 1] == 0
            start_hole = not start_outer and p >= 1 and row[x + 1] == 0
            if start_outer or start_hole:
                if start_hole and p > 1:
                    lnbd = int(p)
                b = lnbd - 2  # contour index of border lnbd (nbd 2 is contour 0); -1 = the frame
                b_hole = holes[b] if b >= 0 else True
                if start_outer:
                    parent = b if b_hole else parents[b]
                else:
                    parent = (parents[b] if b >= 0 else -1) if b_hole else b
                nbd += 1
                pts = follow(img, y, x, start_hole, nbd, simple)
                contours.append([(px - 1, py - 1) for px, py in pts])
                parents.append(parent)
                holes.append(bool(start_hole))
            if row[x] != 1 and row[x] != 0:
                lnbd = abs(int(row[x]))
    return contours, parents, holes
