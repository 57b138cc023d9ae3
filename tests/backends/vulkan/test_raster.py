"""Vulkan Raster against the numpy reference raster (`mnnpy.core.geometry.raster`), across NCHW and NC4HW4."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.geometry.raster import raster
from mnnpy.core.ir import Region, TensorDesc, View

RNG = np.random.default_rng(3)


def _transpose_region(shape: tuple[int, int, int]) -> Region:
    """(A, B, C) -> (C, A, B) as one region over the source."""
    a, b, c = shape
    return Region(src=View(0, (b * c, c, 1)), dst=View(0, (b, 1, a * b)), size=(a, b, c), origin=0)


@pytest.mark.parametrize(("src_fmt", "dst_fmt"), [("NCHW", "NCHW"), ("NC4HW4", "NCHW"), ("NCHW", "NC4HW4"),
                                                  ("NC4HW4", "NC4HW4")])
def test_transpose_across_formats(run_op: Any, make_op: Any, src_fmt: str, dst_fmt: str) -> None:
    x = RNG.standard_normal((1, 13, 5, 3)).astype(np.float32)
    region = _transpose_region((13, 5, 3))
    want = raster([region], [x], (1, 3, 13, 5))
    (got,) = run_op(fb.OpType.Raster, [region], [(x, src_fmt)], [TensorDesc((1, 3, 13, 5), np.float32, dst_fmt)]).run()
    np.testing.assert_array_equal(got, want)


def test_concat_two_origins(run_op: Any) -> None:
    a = RNG.standard_normal((2, 3, 2, 2)).astype(np.float32)
    b = RNG.standard_normal((2, 127, 2, 2)).astype(np.float32)
    regions = [Region(View(0, (12, 4, 1)), View(0, (520, 4, 1)), (2, 3, 4), 0),
               Region(View(0, (508, 4, 1)), View(12, (520, 4, 1)), (2, 127, 4), 1)]
    want = np.concatenate([a, b], axis=1)
    np.testing.assert_array_equal(raster(regions, [a, b], want.shape), want)
    (got,) = run_op(fb.OpType.Raster, regions, [(a, "NC4HW4"), (b, "NCHW")],
                    [TensorDesc(want.shape, np.float32, "NC4HW4")]).run()
    np.testing.assert_array_equal(got, want)


def test_partial_cover_is_zero_filled(run_op: Any) -> None:
    x = RNG.standard_normal((1, 3, 4, 4)).astype(np.float32)
    region = Region(View(5, (16, 4, 1)), View(7, (36, 6, 1)), (3, 2, 2), 0)  # pad-like: inner 2x2 windows
    want = raster([region], [x], (1, 3, 6, 6))
    runner = run_op(fb.OpType.Raster, [region], [(x, "NCHW")], [TensorDesc((1, 3, 6, 6), np.float32, "NC4HW4")])
    runner.out_refs[0].array[...] = 7.0  # stale arena contents must not leak through
    (got,) = runner.run()
    np.testing.assert_array_equal(got, want)


def test_out_of_bounds_region_is_refused(run_op: Any) -> None:
    x = RNG.standard_normal((1, 3, 4, 4)).astype(np.float32)
    region = Region(View(0, (16, 4, 1)), View(43, (36, 6, 1)), (3, 2, 2), 0)  # writes past the 108-element output
    runner = run_op(fb.OpType.Raster, [region], [(x, "NCHW")], [TensorDesc((1, 3, 6, 6), np.float32, "NCHW")])
    assert runner.execution is None


def test_gathers_after_regions(run_op: Any) -> None:
    from mnnpy.core.geometry.fuse import Gather
    from mnnpy.core.pipeline import RasterSpec

    x = RNG.standard_normal((1, 13, 3, 2)).astype(np.float32)
    src_idx = RNG.permutation(x.size)[:50]
    dst_idx = RNG.permutation(78)[:50]
    region = Region(View(0, (0, 0, 1)), View(0, (0, 0, 1)), (1, 1, 20), 0)
    spec = RasterSpec([region], [Gather(0, src_idx, dst_idx)], False)
    want = raster([region], [x], (1, 13, 3, 2)).reshape(-1)
    want[dst_idx] = x.reshape(-1)[src_idx]
    (got,) = run_op(fb.OpType.Raster, spec, [(x, "NC4HW4")], [TensorDesc(x.shape, np.float32, "NC4HW4")]).run()
    np.testing.assert_array_equal(got.reshape(-1), want)


def test_many_regions_overlapping_in_order(run_op: Any) -> None:
    x = np.arange(40, dtype=np.float32).reshape(1, 1, 5, 8)
    regions = [Region(View(i, (0, 0, 1)), View(0, (0, 0, 1)), (1, 1, 8), 0) for i in range(0, 33, 8)]
    want = raster(regions, [x], (1, 8))  # the last region wins
    (got,) = run_op(fb.OpType.Raster, regions, [(x, "NCHW")], [TensorDesc((1, 8), np.float32, "NCHW")]).run()
    np.testing.assert_array_equal(got, want)


def test_grid_stride_covers_more_than_the_group_limit(run_op: Any, vk_runtime: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    n = 200_000  # with 1-wide work groups this needs more than maxComputeWorkGroupCount[0] = 65535 groups
    monkeypatch.setattr(vk_runtime.device, "group_size", lambda: 1)
    x = RNG.standard_normal((1, n)).astype(np.float32)
    region = Region(View(n - 1, (0, -1, 1)), View(0, (0, 1, 1)), (1, n, 1), 0)  # reverse, n rows of 1 element
    runner = run_op(fb.OpType.Raster, [region], [(x, "NCHW")], [TensorDesc((1, n), np.float32, "NCHW")])
    limit = vk_runtime.device.limits.max_group_count[0]
    assert runner.backend.dispatches[-1].groups == min(limit, 65535) < n
    (got,) = runner.run()
    np.testing.assert_array_equal(got, x[:, ::-1])
