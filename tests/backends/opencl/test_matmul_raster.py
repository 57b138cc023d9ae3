"""MatMul / BatchMatMul and Raster (transpose, concat, slice, layout conversion) on OpenCL vs numpy."""

from __future__ import annotations

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.ir import Region, View

from .helpers import Harness, assert_close, make_op, rand


def matmul_op(ta: bool = False, tb: bool = False, batch: bool = False) -> fb.OpT:
    if batch:
        main = fb.BatchMatMulParamT()
        main.adjX, main.adjY = ta, tb
        return make_op(fb.OpType.BatchMatMul, main)
    main = fb.MatMulT()
    main.transposeA, main.transposeB = ta, tb
    return make_op(fb.OpType.MatMul, main)


@pytest.mark.parametrize(("m", "k", "n"), [(1, 1, 1), (3, 13, 127), (13, 127, 3), (5, 7, 8), (2, 3, 6)])
@pytest.mark.parametrize(("ta", "tb"), [(False, False), (True, False), (False, True), (True, True)])
def test_matmul(backend: object, m: int, k: int, n: int, ta: bool, tb: bool) -> None:
    a = rand((k, m) if ta else (m, k), seed=m)
    b = rand((n, k) if tb else (k, n), seed=n)
    expected = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b)
    (y,) = Harness(backend).run(fb.OpType.MatMul, matmul_op(ta, tb), [a, b], ["NCHW"] * 2, [(m, n)], out_fmt="NCHW")
    assert_close(y, expected)


def test_matmul_bias(backend: object) -> None:
    a, b, bias = rand((4, 13)), rand((13, 7), seed=1), rand((7,), seed=2)
    (y,) = Harness(backend).run(fb.OpType.MatMul, matmul_op(), [a, b, bias], ["NCHW"] * 3, [(4, 7)], out_fmt="NCHW")
    assert_close(y, a.astype(np.float64) @ b + bias)


@pytest.mark.parametrize(("a_shape", "b_shape", "tb"), [((2, 3, 5), (2, 5, 6), False), ((4, 3, 5), (5, 7), False),
                                                         ((2, 2, 3, 13), (1, 6, 13), True)])
def test_batch_matmul(backend: object, a_shape: tuple, b_shape: tuple, tb: bool) -> None:
    a, b = rand(a_shape), rand(b_shape, seed=1)
    expected = a.astype(np.float64) @ (np.swapaxes(b, -1, -2) if tb else b)
    (y,) = Harness(backend).run(fb.OpType.BatchMatMul, matmul_op(tb=tb, batch=True), [a, b], ["NCHW"] * 2,
                                [expected.shape], out_fmt="NCHW")
    assert_close(y, expected)


def run_raster(backend: object, regions: list[Region], inputs: list[np.ndarray], in_fmts: list[str],
               out_shape: tuple, out_fmt: str) -> np.ndarray:
    h = Harness(backend)
    ins = [h.tensor(x.shape, f) for x, f in zip(inputs, in_fmts, strict=True)]
    out = h.tensor(out_shape, out_fmt)
    execution = h.create(fb.OpType.Raster, regions, ins, [out])
    h.resize([execution], ins, [out])
    for ref, x in zip(ins, inputs, strict=True):
        backend.upload(ref.array, x)
    h.execute([execution])
    return backend.download(out.array)


@pytest.mark.parametrize(("in_fmt", "out_fmt"), [("NCHW", "NCHW"), ("NC4HW4", "NCHW"), ("NCHW", "NC4HW4"),
                                                 ("NC4HW4", "NC4HW4")])
@pytest.mark.parametrize("c", [1, 3, 13, 127])
def test_raster_permute_nchw_to_nhwc(backend: object, in_fmt: str, out_fmt: str, c: int) -> None:
    x = rand((2, c, 3, 2), seed=c)
    area = 3 * 2
    # dst (n, hw, c) <- src (n, c, hw): z = n, y = hw, x = c
    region = Region(View(0, (c * area, 1, area)), View(0, (c * area, c, 1)), (2, area, c), 0)
    y = run_raster(backend, [region], [x], [in_fmt], (2, area, c, 1), out_fmt)
    assert_close(y, x.reshape(2, c, area).transpose(0, 2, 1).reshape(2, area, c, 1))


def test_raster_concat_channels_nc4hw4(backend: object) -> None:
    a, b = rand((1, 3, 2, 2), seed=1), rand((1, 13, 2, 2), seed=2)
    regions = [Region(View(0, (12, 4, 1)), View(0, (64, 4, 1)), (1, 3, 4), 0),
               Region(View(0, (52, 4, 1)), View(12, (64, 4, 1)), (1, 13, 4), 1)]
    y = run_raster(backend, regions, [a, b], ["NC4HW4", "NC4HW4"], (1, 16, 2, 2), "NC4HW4")
    assert_close(y, np.concatenate([a, b], axis=1))


def test_raster_partial_cover_zero_fills(backend: object) -> None:
    x = rand((3, 5), seed=3)
    # pad: write x into the middle of a (5, 9) output
    region = Region(View(0, (0, 5, 1)), View(9 + 2, (0, 9, 1)), (1, 3, 5), 0)
    y = run_raster(backend, [region], [x], ["NCHW"], (5, 9), "NCHW")
    assert_close(y, np.pad(x, ((1, 1), (2, 2))))


def test_raster_slice_with_strides(backend: object) -> None:
    x = rand((4, 10), seed=4)
    # x[1:4, 0:10:3] -> (3, 4), x stride 3 (scalar path)
    region = Region(View(10, (0, 10, 3)), View(0, (0, 4, 1)), (1, 3, 4), 0)
    y = run_raster(backend, [region], [x], ["NCHW"], (3, 4), "NCHW")
    assert_close(y, x[1:4, 0:10:3])


@pytest.mark.parametrize("c", [1, 3, 13, 127])
@pytest.mark.parametrize(("in_fmt", "out_fmt"), [("NCHW", "NC4HW4"), ("NC4HW4", "NCHW")])
def test_raster_layout_conversion_fast_path(backend: object, c: int, in_fmt: str, out_fmt: str) -> None:
    x = rand((2, c, 3, 5), seed=c)
    size = x.size
    region = Region(View(0, (size, size, 1)), View(0, (size, size, 1)), (1, 1, size), 0)
    h = Harness(backend)
    ins, out = [h.tensor(x.shape, in_fmt)], h.tensor(x.shape, out_fmt)
    execution = h.create(fb.OpType.Raster, [region], ins, [out])
    h.resize([execution], ins, [out])
    assert execution.algorithm in ("raster-pack", "raster-unpack")
    backend.upload(ins[0].array, x)
    h.execute([execution])
    assert_close(backend.download(out.array), x, tol=0)
    if out_fmt == "NC4HW4" and c % 4:
        tail = backend.read_physical(out.array).reshape(-(-c // 4), 2 * 15, 4)[-1, :, c % 4:]
        assert not tail.any()
