"""Select / Where with broadcasting and Padding (constant, reflect, symmetric, edge, negative pads) vs numpy."""

from __future__ import annotations

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import TensorDesc

from .helpers import Harness, assert_close, make_op, rand


@pytest.mark.parametrize(("c_shape", "a_shape", "b_shape", "c_dtype", "fmts"), [
    ((2, 13, 3, 2), (2, 13, 3, 2), (1,), np.int32, ("NCHW", "NC4HW4", "NCHW", "NC4HW4")),
    ((1, 5), (4, 1), (4, 5), np.float32, ("NCHW", "NCHW", "NCHW", "NCHW")),
    ((3, 1, 1), (1, 3, 2, 2), (1, 1, 2, 2), np.int32, ("NCHW", "NC4HW4", "NCHW", "NCHW")),
])
def test_select(backend: object, c_shape: tuple, a_shape: tuple, b_shape: tuple, c_dtype: type,
                fmts: tuple) -> None:
    rng = np.random.default_rng(0)
    cond = (rng.random(c_shape) > 0.5).astype(c_dtype)
    a, b = rand(a_shape, seed=1), rand(b_shape, seed=2)
    expected = np.where(cond != 0, a, b)
    (y,) = Harness(backend).run(fb.OpType.Select, make_op(fb.OpType.Select), [cond, a, b], fmts[:3],
                                [expected.shape], out_fmt=fmts[3])
    assert_close(y, expected, tol=0)


def run_pad(backend: object, x: np.ndarray, pads: list[int], mode: int, value: float | None, fmt: str) -> np.ndarray:
    h = Harness(backend)
    xin = h.tensor(x.shape, fmt)
    consts = [TensorRef(100, TensorDesc((len(pads),), np.int32), array=np.asarray(pads, np.int32), const=True)]
    if value is not None:
        consts.append(TensorRef(101, TensorDesc((1,)), array=np.asarray([value], np.float32), const=True))
    out_shape = tuple(d + pads[2 * i] + pads[2 * i + 1] for i, d in enumerate(x.shape))
    out = h.tensor(out_shape, fmt)
    p = fb.PadParamT()
    p.mode = mode
    execution = h.create(fb.OpType.Padding, make_op(fb.OpType.Padding, p), [xin, *consts], [out])
    assert execution is not None
    h.resize([execution], [xin], [out])
    backend.upload(xin.array, x)
    h.execute([execution])
    return backend.download(out.array)


@pytest.mark.parametrize(("mode", "name"), [(0, "constant"), (1, "reflect"), (2, "symmetric"), (3, "edge")])
@pytest.mark.parametrize("fmt", ["NCHW", "NC4HW4"])
def test_padding(backend: object, mode: int, name: str, fmt: str) -> None:
    x = rand((1, 3, 4, 5), seed=mode)
    pads = [0, 0, 1, 0, 2, 1, 1, 2]
    value = 1.5 if mode == 0 else None
    widths = [(pads[2 * i], pads[2 * i + 1]) for i in range(4)]
    kwargs = {"constant_values": 1.5} if mode == 0 else {}
    assert_close(run_pad(backend, x, pads, mode, value, fmt), np.pad(x, widths, mode=name, **kwargs), tol=0)


def test_padding_negative_crops(backend: object) -> None:
    x = rand((2, 6), seed=5)
    y = run_pad(backend, x, [0, -1, -2, 1], 0, None, "NCHW")
    assert_close(y, np.pad(x[:1, 2:], ((0, 0), (0, 1))), tol=0)
