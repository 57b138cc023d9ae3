"""More TF ops: Conv2DBackpropInput, Split/SplitV, Tile, Range, ArgMax, PlaceholderWithDefault, ZerosLike."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from .tf_build import GraphBuilder, check, conv2d, convert, pad_same

RNG = np.random.default_rng(5)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _i32(values: object) -> np.ndarray:
    return np.asarray(values, np.int32)


def _conv_transpose(x: np.ndarray, w: np.ndarray, out_hw: tuple[int, int], stride: int, padding: str) -> np.ndarray:
    """tf.nn.conv2d_transpose: scatter every input pixel through the [kh, kw, oc, ic] filter, then crop."""
    n, h, wd, _ = x.shape
    kh, kw, oc, _ = w.shape
    full = np.zeros((n, (h - 1) * stride + kh, (wd - 1) * stride + kw, oc))
    for i in range(h):
        for j in range(wd):
            full[:, i * stride: i * stride + kh, j * stride: j * stride + kw] += np.einsum("nc,hwoc->nhwo",
                                                                                         x[:, i, j], w)
    top = pad_same(out_hw[0], kh, stride)[0] if padding == "SAME" else 0
    left = pad_same(out_hw[1], kw, stride)[0] if padding == "SAME" else 0
    return full[:, top: top + out_hw[0], left: left + out_hw[1]]


@pytest.mark.parametrize(("padding", "out_hw"), [("SAME", (10, 12)), ("VALID", (11, 13))])
def test_conv2d_backprop_input(tmp_path: Path, padding: str, out_hw: tuple[int, int]) -> None:
    g = GraphBuilder()
    x, w = _x(1, 5, 6, 4), _x(3, 3, 3, 4)
    inp = g.placeholder("input", [1, 5, 6, 4])
    sizes = g.const(_i32([1, *out_hw, 3]), dtype=np.int32)
    g.op("Conv2DBackpropInput", [sizes, g.const(w), inp], name="out", strides=[1, 2, 2, 1], padding=padding, T=1)
    check(g, {"input": x}, {"out": _conv_transpose(x, w, out_hw, 2, padding)}, tmp_path)


def test_split_tile_range_argmax(tmp_path: Path) -> None:
    g = GraphBuilder()
    x = _x(2, 6, 4)
    inp = g.placeholder("input", [2, 6, 4])
    g.op("Split", [g.const(1, dtype=np.int32), inp], name="split", num_split=3, T=1)
    g.op("SplitV", [inp, g.const(_i32([1, -1]), dtype=np.int32), g.const(2, dtype=np.int32)], name="splitv",
         num_split=2, T=1, Tlen=3)
    g.op("Tile", [inp, g.const(_i32([1, 2, 1]), dtype=np.int32)], name="tile", T=1, Tmultiples=3)
    steps = g.op("Range", [g.const(0.0), g.const(4.0), g.const(1.0)], Tidx=1)
    g.op("Mul", [inp, steps], name="ramp", T=1)
    g.op("ArgMax", [inp, g.const(-1, dtype=np.int32)], name="argmax", T=1, Tidx=3, output_type=3)
    default = g.op("PlaceholderWithDefault", [g.const(2.0)], dtype=1, shape=[])
    zeros = g.op("ZerosLike", [inp], T=1)
    g.op("AddV2", [g.op("Mul", [inp, default], T=1), zeros], name="twice", T=1)
    refs = {"split:1": x[:, 2:4], "split:2": x[:, 4:], "splitv": x[..., :1], "splitv:1": x[..., 1:],
            "tile": np.tile(x, (1, 2, 1)), "ramp": x * np.arange(4), "argmax": x.argmax(-1).astype(np.float64),
            "twice": 2 * x}
    check(g, {"input": x}, refs, tmp_path)


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
def test_where_and_non_max_suppression(tmp_path: Path, runtime: str) -> None:
    """tf.where(x > 0) and tf.image.non_max_suppression (V3, with a score threshold) on computed inputs: counts from
    the values, so both runtimes run them through their Module API. References: numpy's argwhere and TensorFlow."""
    tf = pytest.importorskip("tensorflow", reason="TensorFlow is the NMS reference")
    from support import official

    import mnnpy

    lib = mnnpy if runtime == "mnnpy" else official.require_mnn()
    g = GraphBuilder()
    inp = g.placeholder("input", [4, 5])
    boxes_in = g.placeholder("boxes", [8, 4])
    positive = g.op("Greater", [inp, g.const(0.0)], T=1)
    g.op("Where", [positive], name="where", T=10)
    scores = g.op("Sigmoid", [g.op("Sum", [inp, g.const(_i32([0]), dtype=np.int32)], T=1, Tidx=3)], T=1)
    scores8 = g.op("ConcatV2", [scores, g.op("Neg", [scores], T=1), g.const(0, dtype=np.int32)], T=1, N=2, Tidx=3)
    scores8 = g.op("Slice", [scores8, g.const(_i32([0]), dtype=np.int32), g.const(_i32([8]), dtype=np.int32)],
                   T=1, Index=3)
    g.op("NonMaxSuppressionV3", [boxes_in, scores8, g.const(5, dtype=np.int32), g.const(0.4), g.const(0.1)],
         name="nms", T=1, T_threshold=1)
    path = tmp_path / "model.mnn"
    convert(g, path, ["where", "nms"])
    module = lib.nn.load_module_from_file(str(path), ["input", "boxes"], ["where", "nms"])
    for scale in (1.0, 3.0):
        x = _x(4, 5) * scale
        corners = RNG.uniform(0, 4, (8, 2, 2)).astype(np.float32)
        boxes = np.concatenate([corners.min(1), corners.max(1)], 1)
        outs = module.forward([lib.expr.const(x, [4, 5], lib.expr.NHWC), lib.expr.const(boxes, [8, 4], lib.expr.NHWC)])
        got = {name: np.array(v.read()) for name, v in zip(["where", "nms"], outs, strict=True)}  # int outputs:
        # read as they are (official MNN's expr.convert fails on them)
        s = 1 / (1 + np.exp(-x.sum(0)))
        s8 = np.concatenate([s, -s])[:8].astype(np.float32)
        ref_nms = tf.image.non_max_suppression(boxes, s8, 5, 0.4, 0.1).numpy()
        np.testing.assert_array_equal(got["where"], np.argwhere(x > 0))
        np.testing.assert_array_equal(got["nms"], ref_nms)


def test_select_logic_gather_topk_onehot_cumsum(tmp_path: Path) -> None:
    """SelectV2 (broadcast), TF1 Select (a vector condition picks rows), LogicalAnd / LogicalNot, GatherNd, TopKV2,
    OneHot, Cumsum (exclusive, reverse), BroadcastTo and LogSoftmax against numpy."""
    g = GraphBuilder()
    x, y = _x(4, 5), _x(4, 5)
    inp, other = g.placeholder("input", [4, 5]), g.placeholder("other", [4, 5])
    pos = g.op("Greater", [inp, g.const(0.0)], T=1)
    big = g.op("Greater", [other, g.const(-0.5)], T=1)
    g.op("SelectV2", [pos, inp, g.const(np.float32(-1.0))], name="select_v2", T=1)
    rows = g.op("Greater", [g.op("Sum", [inp, g.const(_i32([1]), dtype=np.int32)], T=1, Tidx=3), g.const(0.0)], T=1)
    g.op("Select", [rows, inp, other], name="select_rows", T=1)
    both = g.op("LogicalAnd", [pos, big])
    g.op("Cast", [g.op("LogicalNot", [both]), ], name="not_both", SrcT=10, DstT=1)
    g.op("GatherNd", [inp, g.const(_i32([[1, 2], [3, 0], [0, 4]]), dtype=np.int32)], name="gather_nd", Tparams=1,
         Tindices=3)
    g.op("TopKV2", [inp, g.const(3, dtype=np.int32)], name="topk", T=1, sorted=True)
    g.op("OneHot", [g.const(_i32([0, 3, 5, 1]), dtype=np.int32), g.const(5, dtype=np.int32), g.const(2.0),
                    g.const(-1.0)], name="one_hot", T=1, TI=3, axis=-1)
    g.op("Cumsum", [inp, g.const(1, dtype=np.int32)], name="cumsum", T=1, Tidx=3, exclusive=True, reverse=True)
    g.op("BroadcastTo", [g.op("Sum", [inp, g.const(_i32([0]), dtype=np.int32)], T=1, Tidx=3, keep_dims=True),
                         g.const(_i32([3, 5]), dtype=np.int32)], name="broadcast", T=1, Tidx=3)
    g.op("LogSoftmax", [inp], name="log_softmax", T=1)
    rev = np.cumsum(x[:, ::-1], axis=1)[:, ::-1]
    shifted = x - x.max(1, keepdims=True)
    order = np.argsort(-x, axis=1, kind="stable")[:, :3]
    refs = {"select_v2": np.where(x > 0, x, -1.0), "select_rows": np.where((x.sum(1) > 0)[:, None], x, y),
            "not_both": (~((x > 0) & (y > -0.5))).astype(np.float64), "gather_nd": x[[1, 3, 0], [2, 0, 4]],
            "topk": np.take_along_axis(x, order, 1), "topk:1": order.astype(np.float64),
            "one_hot": np.where(np.arange(5) == np.array([0, 3, 5, 1])[:, None], 2.0, -1.0),
            "cumsum": rev - x, "broadcast": np.broadcast_to(x.sum(0, keepdims=True), (3, 5)),
            "log_softmax": shifted - np.log(np.exp(shifted).sum(1, keepdims=True))}
    check(g, {"input": x, "other": y}, refs, tmp_path)


def test_depth_to_space_and_back(tmp_path: Path) -> None:
    """DepthToSpace / SpaceToDepth (NHWC, block 2) after a conv, so they read an NCHW feature map, against numpy."""
    g = GraphBuilder()
    x, w = _x(1, 4, 6, 8), _x(1, 1, 8, 8)
    inp = g.placeholder("input", [1, 4, 6, 8])
    conv = g.op("Conv2D", [inp, g.const(w)], strides=[1, 1, 1, 1], padding="VALID", T=1)
    up = g.op("DepthToSpace", [conv], name="d2s", block_size=2, T=1)
    g.op("SpaceToDepth", [up], name="s2d", block_size=2, T=1)
    g.op("SpaceToDepth", [inp], name="s2d_in", block_size=2, T=1)
    y = np.einsum("nhwc,co->nhwo", x, w[0, 0])
    d2s = y.reshape(1, 4, 6, 2, 2, 2).transpose(0, 1, 3, 2, 4, 5).reshape(1, 8, 12, 2)
    s2d_in = x.reshape(1, 2, 2, 3, 2, 8).transpose(0, 1, 3, 2, 4, 5).reshape(1, 2, 3, 32)
    check(g, {"input": x}, {"d2s": d2s, "s2d": y, "s2d_in": s2d_in}, tmp_path)


def test_space_to_batch_atrous_conv(tmp_path: Path) -> None:
    """TF1's atrous convolution: SpaceToBatchND -> Conv2D VALID -> BatchToSpaceND, against a dilated conv."""
    g = GraphBuilder()
    x, w = _x(1, 9, 10, 3), _x(3, 3, 3, 4)
    inp = g.placeholder("input", [1, 9, 10, 3])
    s2b = g.op("SpaceToBatchND", [inp, g.const(_i32([2, 2]), dtype=np.int32),
                                  g.const(_i32([[2, 3], [2, 2]]), dtype=np.int32)], name="s2b", T=1)
    conv = g.op("Conv2D", [s2b, g.const(w)], strides=[1, 1, 1, 1], padding="VALID", T=1)
    g.op("BatchToSpaceND", [conv, g.const(_i32([2, 2]), dtype=np.int32),
                            g.const(_i32([[0, 1], [0, 0]]), dtype=np.int32)], name="atrous", T=1)
    ref = conv2d(np.pad(x, [(0, 0), (2, 2), (2, 2), (0, 0)]), w, padding="VALID", dilations=(2, 2))
    check(g, {"input": x}, {"atrous": ref}, tmp_path)
