"""Each mnnpy.expr function against numpy (or onnxruntime for convolution)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import mnnpy.expr as F  # noqa: N812 - the alias MNN scripts use

RNG = np.random.default_rng(7)
X = RNG.uniform(-2, 2, (2, 3, 4)).astype(np.float32)
POS = RNG.uniform(0.2, 0.9, (2, 3, 4)).astype(np.float32)
IMG = RNG.uniform(-1, 1, (2, 5, 7, 6)).astype(np.float32)
ERF = np.vectorize(math.erf)


def check(ours: F.Var, ref: Any, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    got = ours.read()
    ref = np.asarray(ref)
    assert list(got.shape) == list(ref.shape), (got.shape, ref.shape)
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=atol)


UNARY = [("abs", np.abs, X), ("negative", np.negative, X), ("floor", np.floor, X), ("ceil", np.ceil, X),
         ("square", np.square, X), ("sqrt", np.sqrt, POS), ("rsqrt", lambda v: 1 / np.sqrt(v), POS),
         ("exp", np.exp, X), ("log", np.log, POS), ("sin", np.sin, X), ("cos", np.cos, X), ("tan", np.tan, POS),
         ("asin", np.arcsin, POS), ("acos", np.arccos, POS), ("atan", np.arctan, X),
         ("reciprocal", np.reciprocal, POS), ("log1p", np.log1p, POS), ("acosh", np.arccosh, POS + 1),
         ("sinh", np.sinh, X), ("asinh", np.arcsinh, X), ("atanh", np.arctanh, POS), ("sign", np.sign, X),
         ("round", np.rint, X), ("cosh", np.cosh, X), ("erf", ERF, X), ("erfc", lambda v: 1 - ERF(v), X),
         ("expm1", np.expm1, X), ("sigmoid", lambda v: 1 / (1 + np.exp(-v)), X), ("tanh", np.tanh, X),
         ("softplus", lambda v: np.log1p(np.exp(v)), X), ("softsign", lambda v: v / (1 + np.abs(v)), X),
         ("gelu", lambda v: 0.5 * v * (1 + ERF(v / np.sqrt(2))), X)]


@pytest.mark.parametrize(("name", "ref", "x"), UNARY, ids=[u[0] for u in UNARY])
def test_unary(name: str, ref: Any, x: np.ndarray) -> None:
    check(getattr(F, name)(F.const(x, x.shape)), ref(x.astype(np.float64)))
    check(getattr(F, name)(F.scalar(float(x.flat[0]))), ref(np.float64(x.flat[0])))


def test_erfinv_inverts_erf() -> None:
    x = np.linspace(-0.999, 0.999, 101).astype(np.float32)
    y = F.erfinv(F.const(x, x.shape)).read()
    np.testing.assert_allclose(ERF(y.astype(np.float64)), x, atol=1e-6)


BINARY = [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("divide", np.divide),
          ("pow", lambda a, b: np.power(np.abs(a), b)), ("maximum", np.maximum), ("minimum", np.minimum),
          ("greater", np.greater), ("greater_equal", np.greater_equal), ("less", np.less),
          ("less_equal", np.less_equal), ("equal", np.equal), ("not_equal", np.not_equal),
          ("floordiv", np.floor_divide), ("floormod", np.mod), ("mod", np.fmod),
          ("squared_difference", lambda a, b: (a - b) ** 2), ("atan2", np.arctan2), ("logical_or", np.logical_or)]


@pytest.mark.parametrize(("name", "ref"), BINARY, ids=[b[0] for b in BINARY])
def test_binary_broadcast(name: str, ref: Any) -> None:
    a = np.abs(X) + 0.5 if name == "pow" else np.round(X * 2)
    b = RNG.uniform(0.5, 2, (3, 1)).astype(np.float32)
    if name in ("floordiv", "floormod", "mod", "equal", "not_equal", "logical_or"):
        b = np.round(b + 0.5)
    check(getattr(F, name)(F.const(a, a.shape), F.const(b, b.shape)), ref(a, b))


def test_integer_math_and_eltwise() -> None:
    a = np.array([7, -7, 9, 0], np.int32)
    b = np.array([2, 3, -4, 5], np.int32)
    va, vb = F.const(a, [4], dtype=F.int), F.const(b, [4], dtype=F.int)
    for name, ref in [("floordiv", np.floor_divide), ("floormod", np.mod), ("mod", np.fmod),
                      ("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                      ("bitwise_xor", np.bitwise_xor), ("add", np.add), ("multiply", np.multiply)]:
        out = getattr(F, name)(va, vb)
        assert out.dtype == F.int, name
        check(out, ref(a, b))
    check(F.eltwise_sum(F.const(X, X.shape), F.const(POS, POS.shape), [2.0, -1.0]), 2 * X - POS)
    check(F.eltwise_prod(F.const(X, X.shape), F.const(POS, POS.shape)), X * POS)
    check(F.eltwise_max(F.const(X, X.shape), F.const(POS, POS.shape)), np.maximum(X, POS))
    check(F.eltwise_sub(F.const(X, X.shape), F.const(POS, POS.shape)), X - POS)
    check(F.bias_add(F.const(X, X.shape), F.const([1.0, 2.0, 3.0, 4.0], [4])), X + np.array([1.0, 2.0, 3.0, 4.0]))
    check(F.cast(F.const(X, X.shape), F.int), X.astype(np.int32))
    assert F.cast(F.const(X, X.shape), F.int).dtype == F.int


def test_reductions_and_scans() -> None:
    v = F.const(X, X.shape)
    for name, ref in [("reduce_sum", np.sum), ("reduce_mean", np.mean), ("reduce_max", np.max),
                      ("reduce_min", np.min), ("reduce_prod", np.prod)]:
        for axis, keep in [([], False), ([1], True), ([0, 2], False), ([-1], False)]:
            check(getattr(F, name)(v, axis, keep), ref(X, axis=tuple(axis) or None, keepdims=keep), rtol=1e-4)
    mask = (X > 0).astype(np.int32)
    check(F.reduce_any(F.const(mask, mask.shape, dtype=F.int), [2]), mask.any(2))
    check(F.reduce_all(F.const(mask, mask.shape, dtype=F.int), [2]), mask.all(2))
    check(F.argmax(v, 1), X.argmax(1))
    check(F.argmin(v, 2), X.argmin(2))
    check(F.cumsum(v, 2), np.cumsum(X, 2))
    check(F.cumsum(v, 1, exclusive=True), np.cumsum(X, 1) - X)
    check(F.cumsum(v, 2, reverse=True), np.cumsum(X[..., ::-1], 2)[..., ::-1])
    check(F.cumprod(v, 1), np.cumprod(X, 1), rtol=1e-5)
    check(F.sort(v, 1), np.sort(X, 1))
    check(F.sort(v, -1, descend=True), -np.sort(-X, -1))
    check(F.sort(v, 0, arg=True), np.argsort(X, 0))
    mean, var = F.moments(F.const(IMG, IMG.shape), [2, 3], None, True)
    check(mean, IMG.mean((2, 3), keepdims=True))
    check(var, IMG.var((2, 3), keepdims=True), rtol=1e-4)


def test_shape_ops() -> None:
    v = F.const(X, X.shape)
    check(F.reshape(v, [4, -1]), X.reshape(4, -1))
    check(F.transpose(v, [2, 0, 1]), X.transpose(2, 0, 1))
    check(F.concat([v, v], 1), np.concatenate([X, X], 1))
    for got, want in zip(F.split(v, [1, 3], 2), np.split(X, [1], 2), strict=True):
        check(got, want)
    check(F.slice(v, [0, 1, 1], [-1, 2, 2]), X[:, 1:3, 1:3])
    check(F.strided_slice(v, [0, 2, 0], [2, 0, 4], [1, -1, 2], 0, 0, 0, 0, 0), X[0:2, 2:0:-1, 0:4:2])
    check(F.strided_slice(v, [1, 0, 0], [0, 0, 0], [1, 1, 1], 6, 6, 0, 0, 1), X[1])
    check(F.squeeze(F.const(X[:1], [1, 3, 4]), [0]), X[0])
    check(F.unsqueeze(v, [0, 3]), X[None, :, :, None])
    check(F.expand_dims(v, -1), X[..., None])
    check(F.stack([v, v], 2), np.stack([X, X], 2))
    for got, want in zip(F.unstack(v, 1), [X[:, i] for i in range(3)], strict=True):
        check(got, want)
    check(F.tile(v, [1, 2, 1]), np.tile(X, (1, 2, 1)))
    check(F.broadcast_to(F.const([1.0, 2.0], [2, 1]), [2, 3]), np.broadcast_to([[1.0], [2.0]], (2, 3)))
    check(F.pad(v, [[0, 0], [1, 2], [0, 1]]), np.pad(X, ((0, 0), (1, 2), (0, 1))))
    check(F.pad(v, [[0, 0], [1, 1], [2, 1]], F.REFLECT), np.pad(X, ((0, 0), (1, 1), (2, 1)), "reflect"))
    check(F.pad(v, [[0, 0], [1, 1], [2, 1]], F.SYMMETRIC), np.pad(X, ((0, 0), (1, 1), (2, 1)), "symmetric"))
    idx = np.array([[1, 0], [1, 1]], np.int32)
    check(F.gather(v, F.const(idx, idx.shape, dtype=F.int)), X[idx])
    nd = np.array([[1, 2], [0, 0]], np.int32)
    check(F.gather_nd(v, F.const(nd, nd.shape, dtype=F.int)), X[nd[:, 0], nd[:, 1]])
    check(F.scatter_nd(F.const([[1], [3]], [2, 1], dtype=F.int), F.const([5.0, 6.0], [2]), [4]), [0, 5, 0, 6])
    check(F.select(F.const(X > 0, X.shape, dtype=F.int), v, F.const(POS, POS.shape)), np.where(X > 0, X, POS))
    check(F.one_hot(F.const([0, 3, 1], [3], dtype=F.int), 4), np.eye(4)[[0, 3, 1]])
    check(F.shape(v), [2, 3, 4])
    check(F.rank(v), 3)
    check(F.size(v), 24)
    check(F.fill([2, 3], F.scalar(1.5)), np.full((2, 3), 1.5))
    check(F.zeros_like(v), np.zeros_like(X))
    check(F.range(1.0, 2.0, 0.25), np.arange(1.0, 2.0, 0.25))
    check(F.reverse(v, [1]), X[:, ::-1])
    check(F.where(F.const(X > 1, X.shape, dtype=F.int)), np.argwhere(X > 1))
    check(F.where(F.const([0, 3, 0, 1], [4])), [[1], [3]])
    check(F.setdiff1d(F.const([5, 1, 4, 1, 7], [5], dtype=F.int), F.const([1, 7], [2], dtype=F.int)), [5, 4])
    check(F.matrix_band_part(F.const(X[0], [3, 4]), 1, 0), np.tril(np.triu(X[0], -1)))
    check(F.unravel_index(F.const([5, 11], [2], dtype=F.int), [3, 4]), np.stack(np.unravel_index([5, 11], (3, 4))))
    check(F.crop(F.const(IMG, IMG.shape), F.const(np.zeros((2, 5, 3, 2), np.float32), [2, 5, 3, 2]), 2, [1, 2]),
          IMG[:, :, 1:4, 2:4])
    n, c, _, w = IMG.shape
    check(F.space_to_depth(F.const(IMG[:, :, :6], [n, c, 6, w]), 2),
          IMG[:, :, :6].reshape(n, c, 3, 2, 3, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * 4, 3, 3))
    s2d = F.space_to_depth(F.const(IMG[:, :, :6], [n, c, 6, w]), 2)
    check(F.depth_to_space(s2d, 2), IMG[:, :, :6])
    ch = RNG.normal(size=(1, 6, 2, 2)).astype(np.float32)
    check(F.channel_shuffle(F.const(ch, ch.shape), 2), ch.reshape(1, 2, 3, 2, 2).transpose(0, 2, 1, 3, 4)
          .reshape(1, 6, 2, 2))
    sb = F.space_to_batch_nd(F.const(IMG[:1, :, :6], [1, c, 6, w]), [2, 3], [[0, 0], [0, 0]])
    assert sb.shape == [6, c, 3, 2]
    check(F.batch_to_space_nd(sb, [2, 3], [[0, 0], [0, 0]]), IMG[:1, :, :6])


def _conv_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int, pad: int, group: int) -> np.ndarray:
    n, _, h, wd = x.shape
    oc, icg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, oc, oh, ow))
    ocg = oc // group
    for o in range(oc):
        g = o // ocg
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * icg:(g + 1) * icg, i * stride:i * stride + kh, j * stride:j * stride + kw]
                out[:, o, i, j] = (patch * w[o]).sum((1, 2, 3)) + b[o]
    return out


@pytest.mark.parametrize(("stride", "pad", "group", "oc"), [(1, 1, 1, 3), (2, 0, 1, 13), (1, 1, 5, 5)])
def test_conv_pool_and_activations(stride: int, pad: int, group: int, oc: int) -> None:
    c = IMG.shape[1]
    w = RNG.normal(size=(oc, c // group, 3, 3)).astype(np.float32)
    b = RNG.normal(size=oc).astype(np.float32)
    x = F.convert(F.const(IMG, IMG.shape), F.NC4HW4)
    y = F.conv2d(x, F.const(w, w.shape), F.const(b, [oc]), [stride, stride], [pad, pad], group=group,
                 padding_mode=F.CAFFE)
    ref = _conv_ref(IMG, w, b, stride, pad, group)
    check(y, ref, rtol=1e-4, atol=1e-4)
    same = F.conv2d(x, F.const(w, w.shape), F.const(b, [oc]), group=group, padding_mode=F.SAME)
    assert same.shape == [2, oc, 7, 6]
    check(F.max_pool(y, [2, 2], [2, 2]), ref[:, :, :ref.shape[2] // 2 * 2, :ref.shape[3] // 2 * 2]
          .reshape(2, oc, ref.shape[2] // 2, 2, ref.shape[3] // 2, 2).max((3, 5)), rtol=1e-4, atol=1e-4)
    check(F.avg_pool(F.const(IMG, IMG.shape), [2, 1], [2, 1]),
          IMG[:, :, :, :6].reshape(2, 5, 7, 3, 2).mean(4), rtol=1e-5)


def test_conv2d_transpose_matches_onnxruntime() -> None:
    onnx = pytest.importorskip("onnx", reason="onnx builds the reference model")
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
    w = RNG.normal(size=(5, 4, 3, 3)).astype(np.float32)
    b = RNG.normal(size=4).astype(np.float32)
    h = onnx.helper
    node = h.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1])
    graph = h.make_graph([node], "t", [h.make_tensor_value_info("x", 1, list(IMG.shape))],
                         [h.make_tensor_value_info("y", 1, None)],
                         [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None,
                                                                                                 {"x": IMG})[0]
    y = F.conv2d_transpose(F.const(IMG, IMG.shape), F.const(w, w.shape), F.const(b, [4]), [2, 2], [1, 1],
                           padding_mode=F.CAFFE)
    check(y, ref, rtol=1e-4, atol=1e-4)


def test_nn_activations_and_normalisation() -> None:
    v = F.const(IMG, IMG.shape)
    check(F.softmax(v, 1), np.exp(IMG) / np.exp(IMG).sum(1, keepdims=True), rtol=1e-5)
    check(F.relu(v), np.maximum(IMG, 0))
    check(F.relu(v, 0.1), np.where(IMG > 0, IMG, 0.1 * IMG))
    check(F.relu6(F.multiply(v, 8.0)), np.clip(IMG * 8, 0, 6))
    slopes = np.array([0.1, 0.2, 0.3, 0.4, 0.5], np.float32)
    check(F.prelu(v, slopes), np.where(IMG > 0, IMG, IMG * slopes[None, :, None, None]))
    check(F.elu(v, 0.7), np.where(IMG > 0, IMG, 0.7 * np.expm1(IMG)), rtol=1e-5)
    check(F.selu(v, 1.05, 1.67), 1.05 * np.where(IMG > 0, IMG, 1.67 * np.expm1(IMG)), rtol=1e-5)
    check(F.scale(v, 5, slopes, slopes * 2), IMG * slopes[None, :, None, None] + 2 * slopes[None, :, None, None])
    norm = np.sqrt((IMG ** 2).sum(1, keepdims=True) + 1e-6)
    check(F.normalize(v, 0, 1, 1e-6, [2.0]), IMG / norm * 2.0, rtol=1e-5)
    check(F.resize(v, 2.0, 2.0, nearest=True), IMG.repeat(2, 2).repeat(2, 3))
    bil = F.resize(v, 1.0, 2.0).read()  # x_scale, y_scale
    np.testing.assert_allclose(bil[:, :, 0::2], IMG, rtol=1e-5)  # asymmetric: even rows are the source rows
    np.testing.assert_allclose(bil[:, :, 1:-1:2], (IMG[:, :, :-1] + IMG[:, :, 1:]) / 2, rtol=1e-5, atol=1e-6)
