"""raster.is_full: the interval fast path agrees with marking every element index."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mnnpy.core.geometry import raster
from mnnpy.core.ir import Region, View


def _marked(regions: list[Region], size: int) -> bool:
    hit = np.zeros(size, dtype=bool)
    for r in regions:
        idx = raster.region_indices(r.dst.offset, r.dst.stride, r.size)
        hit[idx[idx < size]] = True
    return bool(hit.all())


@st.composite
def region_sets(draw: st.DrawFn) -> tuple[list[Region], int]:
    size = draw(st.integers(1, 60))
    regions = []
    for _ in range(draw(st.integers(1, 4))):
        sizes = tuple(draw(st.integers(1, 4)) for _ in range(3))
        dense = draw(st.booleans())
        if dense:  # a dense block in some axis order
            order = draw(st.permutations([0, 1, 2]))
            strides = [0, 0, 0]
            step = 1
            for axis in reversed(order):
                strides[axis] = step
                step *= sizes[axis]
        else:
            strides = [draw(st.integers(0, 6)) for _ in range(3)]
        count = int(np.prod(sizes))
        reach = sum((n - 1) * s for n, s in zip(sizes, strides, strict=True))
        offset = draw(st.integers(0, max(0, size - 1 - reach))) if reach < size else 0
        if offset + reach >= size:
            continue
        regions.append(Region(src=View(0, (0, 0, 0)), dst=View(offset, tuple(strides)), size=sizes, origin=0))
        assert count >= 1
    return regions, size


@settings(derandomize=True, max_examples=300, deadline=None)
@given(region_sets())
def test_is_full_matches_marking(case: tuple[list[Region], int]) -> None:
    regions, size = case
    if not regions:
        return
    assert raster.is_full(regions, size) == _marked(regions, size)


def test_transpose_and_concat_are_full_without_marking() -> None:
    transpose = Region(src=View(0, (1, 64, 4096)), dst=View(0, (4096 * 64, 64, 1)), size=(1, 4096, 64), origin=0)
    assert raster.dense_span(transpose) == (0, 4096 * 64)
    halves = [Region(src=View(0, (0, 0, 1)), dst=View(k * 50, (0, 0, 1)), size=(1, 1, 50), origin=0) for k in (1, 0)]
    assert raster.is_full(halves, 100)
    assert not raster.is_full(halves[:1] * 2, 100)
