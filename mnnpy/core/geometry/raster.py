"""The numpy reference Raster: applies regions in the logical index space (MNN: CPURaster semantics)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mnnpy.core.ir import Region


def region_view(flat: np.ndarray, offset: int, stride: Sequence[int], size: Sequence[int]) -> np.ndarray:
    """A 3-D strided view of a flat array starting at `offset` (no copy; writable when `flat` is)."""
    item = flat.itemsize
    base = flat[offset:] if offset else flat
    return as_strided(base, shape=tuple(size), strides=tuple(int(s) * item for s in stride))


def region_indices(view_offset: int, stride: Sequence[int], size: Sequence[int]) -> np.ndarray:
    """Flat element indices a view touches, in region iteration order."""
    z, y, x = np.meshgrid(np.arange(size[0]), np.arange(size[1]), np.arange(size[2]), indexing="ij")
    return (view_offset + z * stride[0] + y * stride[1] + x * stride[2]).ravel()


def dense_span(region: Region) -> tuple[int, int] | None:
    """`(start, end)` when the region's destination is one contiguous block (its non-trivial dims, ordered by
    stride, nest densely: strides 1, n0, n0*n1), else None."""
    dims = sorted((st, n) for st, n in zip(region.dst.stride, region.size, strict=True) if n > 1)
    expect = 1
    for stride, n in dims:
        if stride != expect:
            return None
        expect *= n
    return region.dst.offset, region.dst.offset + expect


def is_full(regions: Sequence[Region], size: int) -> bool:
    """Whether the regions write every element of a tensor of `size` elements (else it is zero-filled first).

    Dense destination blocks (copies, transposes, concatenations, slices of the outer axis) are checked as
    intervals in O(regions); only other shapes mark element indices.
    """
    total = sum(r.count for r in regions)
    if total < size:
        return False
    spans = [dense_span(r) for r in regions]
    if all(span is not None for span in spans):
        end = 0
        for lo, hi in sorted(s for s in spans if s is not None):
            if lo > end:
                return False
            end = max(end, hi)
        return end >= size
    hit = np.zeros(size, dtype=bool)
    for r in regions:
        hit[region_indices(r.dst.offset, r.dst.stride, r.size)] = True
    return bool(hit.all())


def raster(regions: Sequence[Region], origins: Sequence[np.ndarray], out_shape: Sequence[int],
           dtype: np.dtype | None = None) -> np.ndarray:
    """Apply regions: a new array of `out_shape` (zero-filled) written from the logical origin arrays."""
    dt = np.dtype(dtype) if dtype is not None else (origins[0].dtype if origins else np.dtype(np.float32))
    out = np.zeros(math.prod(out_shape), dtype=dt)
    flat_origins = [np.ascontiguousarray(o).reshape(-1) for o in origins]
    for r in regions:
        src = region_view(flat_origins[r.origin], r.src.offset, r.src.stride, r.size)
        dst = region_view(out, r.dst.offset, r.dst.stride, r.size)
        dst[...] = src
    return out.reshape(tuple(out_shape))
