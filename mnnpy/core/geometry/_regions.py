"""Building regions from n-D strided copies: drop size-1 dims, merge contiguous dims, split to 3-D."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from mnnpy.core.ir import Region, View


def strides_of(shape: Sequence[int]) -> list[int]:
    """Row-major element strides of a shape."""
    out = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        out[i] = out[i + 1] * shape[i + 1]
    return out


def strided_regions(sizes: Sequence[int], src_strides: Sequence[int], dst_strides: Sequence[int], src_offset: int,
                    dst_offset: int, origin: int) -> list[Region]:
    """Regions copying an n-D box: dst[dst_offset + i.dst_strides] = origin[src_offset + i.src_strides].

    Dims of size 1 are dropped, neighbours that are contiguous on both sides merged; when more than three dims
    remain, one region is emitted per index of the leading dims (MNN: ComputePermuteRegion).
    """
    if any(s == 0 for s in sizes):
        return []
    dims = [(int(n), int(s), int(d)) for n, s, d in zip(sizes, src_strides, dst_strides, strict=True) if n != 1]
    merged: list[tuple[int, int, int]] = []
    for n, s, d in dims:
        if merged:
            pn, ps, pd = merged[-1]
            if ps == s * n and pd == d * n:
                merged[-1] = (pn * n, s, d)
                continue
        merged.append((n, s, d))
    while len(merged) < 3:
        merged.insert(0, (1, 0, 0))
    outer, inner = merged[:-3], merged[-3:]
    size = (inner[0][0], inner[1][0], inner[2][0])
    src_st = (inner[0][1], inner[1][1], inner[2][1])
    dst_st = (inner[0][2], inner[1][2], inner[2][2])
    regions = []
    for idx in itertools.product(*(range(n) for n, _, _ in outer)):
        so = src_offset + sum(i * s for i, (_, s, _) in zip(idx, outer, strict=True))
        do = dst_offset + sum(i * d for i, (_, _, d) in zip(idx, outer, strict=True))
        regions.append(Region(View(so, src_st), View(do, dst_st), size, origin))
    return regions


def full_copy(count: int, origin: int) -> list[Region]:
    """One region copying `count` contiguous elements (MNN: makeFullSlice)."""
    return [Region(View(0, (0, 0, 1)), View(0, (0, 0, 1)), (1, 1, count), origin)] if count else []
