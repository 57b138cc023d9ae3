"""Conventions checked against the official MNN wheel: (x, y) pair order, padding modes, pooling counts, resize."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mnnpy.expr as F  # noqa: N812 - the alias MNN scripts use

RNG = np.random.default_rng(0)
X = RNG.normal(size=(1, 3, 9, 8)).astype(np.float32)
W = RNG.normal(size=(4, 3, 3, 2)).astype(np.float32)
B = RNG.normal(size=4).astype(np.float32)


def _theirs(mnn: Any, fn: str, *args: Any, **kw: Any) -> np.ndarray:
    e = mnn.expr
    x = e.convert(e.const(X, list(X.shape), e.NCHW), e.NC4HW4)
    kw = {k: getattr(e.Padding_Mode, v.name) if isinstance(v, F.Padding_Mode) else v for k, v in kw.items()}
    extra = [e.const(a, list(a.shape), e.NCHW) if isinstance(a, np.ndarray) else a for a in args]
    return np.asarray(e.convert(getattr(e, fn)(x, *extra, **kw), e.NCHW).read())


def _ours(fn: str, *args: Any, **kw: Any) -> np.ndarray:
    extra = [F.const(a, a.shape) for a in args]
    return getattr(F, fn)(F.convert(F.const(X, X.shape), F.NC4HW4), *extra, **kw).read()


CASES = [
    ("conv2d", (W, B), {}), ("conv2d", (W, B), {"stride": (2, 1)}), ("conv2d", (W, B), {"dilate": (2, 1)}),
    ("conv2d", (W, B), {"padding": (1, 0), "padding_mode": F.CAFFE}),
    ("conv2d", (W, B), {"stride": (2, 2), "padding_mode": F.SAME}),
    ("max_pool", (), {"kernel": [3, 2], "stride": [1, 2]}),
    ("avg_pool", (), {"kernel": [2, 2], "stride": [2, 2], "pads": (1, 0), "padding_mode": F.CAFFE}),
    ("max_pool", (), {"kernel": [3, 3], "stride": [2, 2], "padding_mode": F.SAME}),
    ("avg_pool", (), {"kernel": [3, 3], "stride": [2, 2], "padding_mode": F.SAME}),
]


@pytest.mark.parametrize(("fn", "args", "kw"), CASES)
def test_matches_official_mnn(fn: str, args: tuple, kw: dict) -> None:
    mnn = pytest.importorskip("MNN", reason="official MNN wheel is the reference")
    theirs = _theirs(mnn, fn, *args, **kw)
    ours = _ours(fn, *args, **kw)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)


def test_resize_matches_official_mnn() -> None:
    mnn = pytest.importorskip("MNN", reason="official MNN wheel is the reference")
    theirs = _theirs(mnn, "resize", 2.0, 1.5)
    np.testing.assert_allclose(F.resize(F.const(X, X.shape), 2.0, 1.5).read(), theirs, rtol=1e-5, atol=1e-5)


def test_histogram_matches_official_mnn() -> None:
    mnn = pytest.importorskip("MNN", reason="official MNN wheel is the reference")
    x = np.array([0.5, 1, 1, 2, 2.9, 3, 5, -1, 9], np.float32)
    theirs = np.asarray(mnn.expr.histogram(mnn.expr.const(x, [9]), 4, 0, 3).read())
    np.testing.assert_array_equal(F.histogram(F.const(x, [9]), 4, 0, 3).read(), theirs)


def test_reverse_sequence_matches_official_mnn() -> None:
    mnn = pytest.importorskip("MNN", reason="official MNN wheel is the reference")
    x = np.arange(2 * 5 * 3, dtype=np.float32).reshape(2, 5, 3)
    lengths = np.array([3, 5], np.int32)
    e = mnn.expr
    theirs = np.asarray(e.reverse_sequence(e.const(x, [2, 5, 3]), e.const(lengths, [2], e.NCHW, e.int), 0, 1).read())
    ours = F.reverse_sequence(F.const(x, x.shape), F.const(lengths, [2], dtype=F.int), 0, 1).read()
    np.testing.assert_array_equal(ours, theirs)
    want = x.copy()
    for b, n in enumerate(lengths):
        want[b, :n] = x[b, :n][::-1]
    np.testing.assert_array_equal(ours, want)


@pytest.mark.parametrize(("iou", "score"), [(0.5, -1.0), (0.3, 0.4), (-1.0, -1.0)])
def test_nms_matches_official_mnn(iou: float, score: float) -> None:
    mnn = pytest.importorskip("MNN", reason="official MNN wheel is the reference")
    rng = np.random.default_rng(4)
    corner = rng.uniform(0, 50, (12, 2)).astype(np.float32)
    boxes = np.concatenate([corner, corner + rng.uniform(5, 20, (12, 2)).astype(np.float32)], 1)
    scores = rng.uniform(0, 1, 12).astype(np.float32)
    e = mnn.expr
    theirs = np.asarray(e.nms(e.const(boxes, [12, 4]), e.const(scores, [12]), 6, iou, score).read())
    ours = F.nms(F.const(boxes, [12, 4]), F.const(scores, [12]), 6, iou, score).read()
    np.testing.assert_array_equal(ours, theirs)
