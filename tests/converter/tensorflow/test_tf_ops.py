"""TF frontend, op by op: GraphDefs built with our protos, converted, run on mnnpy and official MNN vs numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .tf_build import GraphBuilder, check, conv2d, depthwise, pool

RNG = np.random.default_rng(0)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def test_conv_bias_bn_relu6(tmp_path: Path) -> None:
    g = GraphBuilder()
    x = _x(1, 9, 11, 5)
    w = _x(3, 3, 5, 13) * 0.3
    b = _x(13)
    gamma, beta, mean, var = _x(13), _x(13), _x(13), np.abs(_x(13)) + 0.5
    inp = g.placeholder("input", [1, 9, 11, 5])
    conv = g.op("Conv2D", [inp, g.const(w)], strides=[1, 2, 2, 1], padding="SAME", data_format="NHWC", T=1)
    biased = g.op("BiasAdd", [conv, g.const(b)], T=1)
    bn = g.op("FusedBatchNormV3", [biased] + [g.const(v) for v in (gamma, beta, mean, var)], epsilon=1e-3,
              is_training=False, T=1, U=1)
    g.op("Relu6", [bn], name="out", T=1)
    y = conv2d(x, w, (2, 2), "SAME") + b
    y = (y - mean) / np.sqrt(var + 1e-3) * gamma + beta
    net = check(g, {"input": x}, {"out": np.clip(y, 0, 6)}, tmp_path)
    convs = [op for op in net.oplists if op.type == 12]
    assert len(convs) == 1 and convs[0].main.common.relu6, "BiasAdd, BN and Relu6 fold into one convolution"


def test_conv_valid_dilated(tmp_path: Path) -> None:
    g = GraphBuilder()
    x = _x(1, 12, 10, 3)
    w = _x(3, 3, 3, 4)
    inp = g.placeholder("input", [1, 12, 10, 3])
    g.op("Conv2D", [inp, g.const(w)], name="out", strides=[1, 1, 1, 1], dilations=[1, 2, 2, 1], padding="VALID",
         T=1)
    check(g, {"input": x}, {"out": conv2d(x, w, (1, 1), "VALID", (2, 2))}, tmp_path)


def test_depthwise_relu(tmp_path: Path) -> None:
    g = GraphBuilder()
    x = _x(1, 8, 8, 7)
    w = _x(3, 3, 7, 1)
    inp = g.placeholder("input", [1, 8, 8, 7])
    dw = g.op("DepthwiseConv2dNative", [inp, g.const(w)], strides=[1, 2, 2, 1], padding="SAME", T=1)
    g.op("Relu", [dw], name="out", T=1)
    check(g, {"input": x}, {"out": np.maximum(depthwise(x, w, (2, 2), "SAME"), 0)}, tmp_path)


def test_pooling(tmp_path: Path) -> None:
    g = GraphBuilder()
    x = _x(1, 9, 9, 6)
    inp = g.placeholder("input", [1, 9, 9, 6])
    g.op("MaxPool", [inp], name="maxp", ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME", T=1)
    g.op("AvgPool", [inp], name="avgp", ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME", T=1)
    g.op("AvgPool", [inp], name="avgv", ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID", T=1)
    refs = {"maxp": pool(x, 3, 2, "SAME", "max"), "avgp": pool(x, 3, 2, "SAME", "avg"),
            "avgv": pool(x, 2, 2, "VALID", "avg")}
    check(g, {"input": x}, refs, tmp_path)


def test_elementwise_and_unary(tmp_path: Path) -> None:
    g = GraphBuilder()
    x = _x(2, 5, 3)
    c = _x(3)
    inp = g.placeholder("input", [2, 5, 3])
    cst = g.const(c)
    refs = {}
    for op, fn in (("AddV2", np.add), ("Sub", np.subtract), ("Mul", np.multiply), ("Maximum", np.maximum),
                   ("Minimum", np.minimum)):
        g.op(op, [inp, cst], name=op.lower(), T=1)
        refs[op.lower()] = fn(x, c)
    g.op("RealDiv", [inp, g.const(np.abs(c) + 1)], name="div", T=1)
    refs["div"] = x / (np.abs(c) + 1)
    sq = g.op("Square", [inp], name="square", T=1)
    refs["square"] = x * x
    g.op("Rsqrt", [g.op("AddV2", [sq, g.const(1.0)], T=1)], name="rsqrt", T=1)
    refs["rsqrt"] = 1 / np.sqrt(x * x + 1)
    g.op("Sqrt", [g.op("Abs", [inp], T=1)], name="sqrt", T=1)
    refs["sqrt"] = np.sqrt(np.abs(x))
    g.op("Sigmoid", [inp], name="sigmoid", T=1)
    refs["sigmoid"] = 1 / (1 + np.exp(-x))
    g.op("Tanh", [inp], name="tanh", T=1)
    refs["tanh"] = np.tanh(x)
    check(g, {"input": x}, refs, tmp_path)


def test_matmul_softmax_head(tmp_path: Path) -> None:
    g = GraphBuilder()
    x = _x(1, 4, 4, 8)
    w = _x(8, 10)
    b = _x(10)
    inp = g.placeholder("input", [1, 4, 4, 8])
    mean = g.op("Mean", [inp, g.const([1, 2], dtype=np.int32)], keep_dims=False, T=1, Tidx=3)
    logits = g.op("BiasAdd", [g.op("MatMul", [mean, g.const(w)], transpose_a=False, transpose_b=False, T=1),
                              g.const(b)], T=1)
    g.op("Softmax", [logits], name="probs", T=1)
    z = x.mean(axis=(1, 2)) @ w + b
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    check(g, {"input": x}, {"probs": e / e.sum(axis=-1, keepdims=True)}, tmp_path)


def test_batch_matmul(tmp_path: Path) -> None:
    g = GraphBuilder()
    a, b = _x(2, 3, 4), _x(2, 5, 4)
    pa, pb_ = g.placeholder("a", [2, 3, 4]), g.placeholder("b", [2, 5, 4])
    g.op("BatchMatMulV2", [pa, pb_], name="out", adj_x=False, adj_y=True, T=1)
    check(g, {"a": a, "b": b}, {"out": a @ b.transpose(0, 2, 1)}, tmp_path)


def test_floor_mod_int_and_float(tmp_path: Path) -> None:
    """TF FloorMod is floored (Python) mod for every dtype; MNN's integer kernels swap MOD and FLOORMOD, so an
    int32 FloorMod must become MOD for both runtimes to give the sign of the divisor."""
    g = GraphBuilder()
    x = RNG.integers(-9, 10, (2, 6)).astype(np.float32)
    divisor = np.array([-4, 3, 5, -2, 7, -3])
    inp = g.placeholder("input", [2, 6])
    ints = g.op("Cast", [inp], SrcT=1, DstT=3)
    mod_int = g.op("FloorMod", [ints, g.const(divisor, dtype=np.int32)], T=3)
    g.op("Cast", [mod_int], name="out_int", SrcT=3, DstT=1)
    g.op("FloorMod", [inp, g.const(divisor + 0.5)], name="out_float", T=1)
    check(g, {"input": x}, {"out_int": np.mod(x.astype(np.int32), divisor).astype(np.float32),
                            "out_float": np.mod(x, divisor + 0.5).astype(np.float32)}, tmp_path)
