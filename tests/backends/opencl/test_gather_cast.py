"""GatherV2 (float and int32 data, negative indices), Cast float32 <-> int32 and int32 Raster on OpenCL."""

from __future__ import annotations

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.ir import Region, View

from .helpers import Harness, assert_close, make_op, rand


def gather_op(axis: int) -> fb.OpT:
    p = fb.AxisT()
    p.axis = axis
    return make_op(fb.OpType.GatherV2, p)


@pytest.mark.parametrize(("shape", "idx", "axis", "fmt"), [
    ((13, 8), [[0, 3, -1, 12, 5], [1, 1, 2, 0, -13]], 0, "NCHW"),
    ((2, 13, 3, 2), [12, 0, 4], 1, "NC4HW4"),
    ((3, 4, 5), [4, -2], 2, "NCHW"),
])
def test_gather(backend: object, shape: tuple, idx: list, axis: int, fmt: str) -> None:
    x = rand(shape, seed=len(shape))
    indices = np.asarray(idx, np.int32)
    expected = np.take(x, np.where(indices < 0, indices + shape[axis], indices), axis=axis)
    (y,) = Harness(backend).run(fb.OpType.GatherV2, gather_op(axis), [x, indices], [fmt, "NCHW"], [expected.shape],
                                out_fmt=fmt if expected.ndim == 4 else "NCHW")
    assert_close(y, expected, tol=0)


def test_gather_int_data(backend: object) -> None:
    x = np.arange(40, dtype=np.int32).reshape(8, 5) - 7
    indices = np.asarray([7, 0, 3], np.int32)
    (y,) = Harness(backend).run(fb.OpType.GatherV2, gather_op(0), [x, indices], ["NCHW", "NCHW"], [(3, 5)],
                                out_fmt="NCHW", out_dtype=np.int32)
    np.testing.assert_array_equal(y, x[indices])


@pytest.mark.parametrize("fmt", ["NCHW", "NC4HW4"])
def test_cast(backend: object, fmt: str) -> None:
    x = rand((1, 13, 2, 3), seed=2, low=-50, high=50)
    h = Harness(backend)
    cast = fb.CastParamT()
    (yi,) = h.run(fb.OpType.Cast, make_op(fb.OpType.Cast, cast), [x], [fmt], [x.shape], out_fmt=fmt,
                  out_dtype=np.int32)
    np.testing.assert_array_equal(yi, x.astype(np.int32))
    (yf,) = h.run(fb.OpType.Cast, make_op(fb.OpType.Cast, cast), [yi], [fmt], [x.shape], out_fmt=fmt)
    np.testing.assert_array_equal(yf, x.astype(np.int32).astype(np.float32))


def test_int_raster_transpose(backend: object) -> None:
    x = np.arange(2 * 3 * 5, dtype=np.int32).reshape(2, 3, 5)
    h = Harness(backend)
    ins, out = [h.tensor(x.shape, "NCHW", np.int32)], h.tensor((2, 5, 3), "NCHW", np.int32)
    region = Region(View(0, (15, 1, 5)), View(0, (15, 3, 1)), (2, 5, 3), 0)
    execution = h.create(fb.OpType.Raster, [region], ins, [out])
    assert execution is not None
    h.resize([execution], ins, [out])
    backend.upload(ins[0].array, x)
    h.execute([execution])
    np.testing.assert_array_equal(backend.download(out.array), x.transpose(0, 2, 1))


def test_mixed_dtype_raster_is_rejected(backend: object) -> None:
    h = Harness(backend)
    assert h.create(fb.OpType.Raster, [], [h.tensor((4,), "NCHW", np.int32)], [h.tensor((4,))]) is None
