"""quant / dequant / svd / raster: lazy Var ops (FloatToInt8, Int8ToFloat, Svd, Raster) vs numpy and official MNN."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.schema.errors import ModelError
from support import official

import mnnpy.expr as F  # noqa: N812 - the alias MNN scripts use

RNG = np.random.default_rng(7)


def _np_quant(x: np.ndarray, scale: np.ndarray, lo: int = -128, hi: int = 127, zero: int = 0) -> np.ndarray:
    return np.clip(np.round(x * scale) + zero, lo, hi).astype(np.int8)  # random data: no exact .5 ties (see below)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4), (1, 6, 3, 3)])
@pytest.mark.parametrize("per_channel", [False, True])
def test_quant_dequant_match_numpy(shape: tuple[int, ...], per_channel: bool) -> None:
    x = (RNG.normal(size=shape) * 60).astype(np.float32)
    channels = shape[1] if len(shape) > 1 and per_channel else 1
    scale = RNG.uniform(0.2, 2.0, size=channels).astype(np.float32)
    bshape = (1, channels) + (1,) * (len(shape) - 2) if channels > 1 else ()
    q = F.quant(F.const(x, x.shape), scale)
    assert q.op_type == "FloatToInt8" and q.dtype == F.int8 and q.shape == list(shape)
    expect = _np_quant(x, scale.reshape(bshape))
    np.testing.assert_array_equal(q.read(), expect)
    back = F.dequant(q, 1.0 / scale, 3)
    assert back.op_type == "Int8ToFloat" and back.dtype == F.float
    np.testing.assert_allclose(back.read(), (expect.astype(np.float32) - 3) / scale.reshape(bshape), rtol=1e-6)


def test_quant_clamps_and_shifts() -> None:
    x = np.array([-300.2, -3.3, 0.2, 4.7, 90.4, 260.0], np.float32)
    q = F.quant(F.const(x, x.shape), F.const(np.array([1.0], np.float32), [1]), -20, 50, 5)
    np.testing.assert_array_equal(q.read(), _np_quant(x, np.float32(1.0), -20, 50, 5))


def test_quant_dequant_match_official() -> None:
    mnn = official.require_mnn()
    e = mnn.expr
    x = (RNG.normal(size=(1, 4, 3, 2)) * 30).astype(np.float32)
    s = np.array([0.7], np.float32)
    theirs = e.dequant(e.quant(e.const(x, list(x.shape)), e.const(s, [1])), e.const(1 / s, [1]), 0).read()
    ours = F.dequant(F.quant(F.const(x, x.shape), s), 1 / s, 0).read()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_quant_bad_input() -> None:
    x = F.const(np.zeros((2, 3, 2), np.float32))
    with pytest.raises(ValueError, match="quant: scale has 2 values"):
        F.quant(x, [1.0, 2.0])
    with pytest.raises(ValueError, match="outside int8"):
        F.quant(x, [1.0], -200, 127)
    with pytest.raises(TypeError, match="dequant: input must be int8"):
        F.dequant(x, [1.0], 0)


@pytest.mark.parametrize("shape", [(2, 2), (5, 3), (7, 7), (40, 6)])
def test_svd_matches_numpy(shape: tuple[int, int]) -> None:
    a = RNG.normal(size=shape).astype(np.float32)
    w, u, vt = F.svd(F.const(a, a.shape))
    assert w.shape == [shape[1]] and u.shape == list(shape) and vt.shape == [shape[1]] * 2
    ref_u, ref_w, ref_vt = np.linalg.svd(a.astype(np.float64), full_matrices=False)
    np.testing.assert_allclose(w.read(), ref_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(u.read() @ np.diag(w.read()) @ vt.read(), a, rtol=1e-4, atol=1e-5)
    # singular vectors are unique up to sign per pair
    np.testing.assert_allclose(np.abs(u.read()), np.abs(ref_u), atol=1e-4)
    np.testing.assert_allclose(np.abs(vt.read()), np.abs(ref_vt), atol=1e-4)


def test_svd_matches_official_and_int_input() -> None:
    mnn = official.require_mnn()
    a = np.array([[1, 2, 0], [3, 4, -2], [5, 7, 1]], np.float32)  # square: MNN 3.6.1's Svd is wrong for M > N
    theirs = mnn.expr.svd(mnn.expr.const(a, [3, 3]))
    ours = F.svd(F.const(a.astype(np.int32), a.shape))
    for t, o in zip(theirs, ours, strict=True):
        np.testing.assert_allclose(np.abs(o.read()), np.abs(t.read()), rtol=1e-5, atol=1e-5)


def test_svd_bad_input() -> None:
    with pytest.raises(ValueError, match="2-D matrix"):
        F.svd(F.const(np.zeros((2, 2, 2), np.float32)))
    with pytest.raises(ModelError, match="rows >= columns"):
        F.svd(F.const(np.zeros((2, 3), np.float32)))[0].read()


def _region(src_off: int, src_st: tuple, dst_off: int, dst_st: tuple, size: tuple) -> list[int]:
    return [src_off, *src_st, dst_off, *dst_st, *size]


def test_raster_transpose_and_concat_match_numpy() -> None:
    a = RNG.normal(size=(3, 4)).astype(np.float32)
    t = F.raster([F.const(a, a.shape)], _region(0, (0, 1, 4), 0, (0, 3, 1), (1, 4, 3)), [4, 3])
    assert t.op_type == "Raster"
    np.testing.assert_array_equal(t.read(), a.T)
    b = RNG.normal(size=(2, 4)).astype(np.float32)
    regions = _region(0, (0, 4, 1), 0, (0, 4, 1), (1, 3, 4)) + _region(0, (0, 4, 1), 12, (0, 4, 1), (1, 2, 4))
    cat = F.raster([F.const(a, a.shape), F.const(b, b.shape)], regions, [5, 4])
    np.testing.assert_array_equal(cat.read(), np.concatenate([a, b]))


def test_raster_partial_cover_zero_fills_and_keeps_dtype() -> None:
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = F.raster([F.const(a, a.shape, F.NCHW, F.int)], _region(1, (0, 4, 2), 0, (0, 5, 1), (1, 3, 2)), [3, 5])
    expect = np.zeros((3, 5), np.int32)
    expect[:, :2] = a[:, 1::2]
    assert out.dtype == F.int
    np.testing.assert_array_equal(out.read(), expect)


def test_raster_on_placeholder_replans_nothing_for_new_data() -> None:
    from mnnpy.expr import graph

    x = F.placeholder([2, 3, 4])
    y = F.raster([x], _region(0, (12, 1, 3), 0, (12, 4, 1), (2, 3, 4)), [2, 3, 4])  # swap the last two axes
    for _ in range(2):
        data = RNG.normal(size=(2, 3, 4)).astype(np.float32)
        x.write(data)
        plans = graph.COUNTERS["plans"]
        np.testing.assert_array_equal(y.read().reshape(2, 3, 4), data.reshape(2, 4, 3).transpose(0, 2, 1)
                                      .reshape(2, 3, 4))
    assert graph.COUNTERS["plans"] == plans


def test_raster_bad_input() -> None:
    a = F.const(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="11 per input"):
        F.raster([a], [0, 1, 2], [3, 4])
    with pytest.raises(ModelError, match="outside a tensor of 12 elements"):
        F.raster([a], _region(0, (0, 4, 1), 0, (0, 4, 1), (1, 4, 4)), [4, 4]).read()


def test_saved_raster_svd_and_quant_graph_runs_in_official(tmp_path: Path) -> None:
    official.require_mnn()
    x = F.placeholder([4, 3])
    x.name = "data"
    t = F.raster([x], _region(0, (0, 1, 3), 0, (0, 4, 1), (1, 3, 4)), [3, 4])
    t.name = "t"
    q = F.dequant(F.quant(x, [4.0]), [0.25], 0)
    q.name = "q"
    w, u, _ = F.svd(F.matmul(x, x, True, False))  # square 3x3: MNN 3.6.1's Svd is right only for square input
    w.name = "svd"  # names the Svd expression: its outputs are saved as svd:0, svd:1
    path = tmp_path / "g.mnn"
    F.save([t, q, w, u], path)
    data = RNG.normal(size=(4, 3)).astype(np.float32) * 5
    outs = official.run(path, {"data": data})
    np.testing.assert_array_equal(outs["t"], data.T)
    x.write(data)
    np.testing.assert_allclose(outs["q"], q.read(), rtol=1e-6)
    np.testing.assert_allclose(outs["svd:0"], w.read(), rtol=1e-4)
    np.testing.assert_allclose(np.abs(outs["svd:1"]), np.abs(u.read()), rtol=1e-3, atol=1e-4)


def test_quant_rounds_ties_away_from_zero_like_official() -> None:
    mnn = official.require_mnn()
    e = mnn.expr
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5], np.float32)
    one = np.array([1.0], np.float32)
    theirs = e.dequant(e.quant(e.const(x, [6]), e.const(one, [1])), e.const(one, [1]), 0).read()
    np.testing.assert_array_equal(theirs, [1, 2, 3, -1, -2, -3])
    np.testing.assert_array_equal(F.quant(F.const(x, [6]), one).read(), theirs)
