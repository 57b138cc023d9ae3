"""ConvInt8 / DepthwiseConvInt8 / FloatToInt8 / Int8ToFloat as registered CPU ops, run through a Session
(explicit int8 net, asymmetric zero points) against the float64 reference of the same quantised math."""

from __future__ import annotations

import numpy as np
import pytest
from mnnpy.backends.cpu.int8.conv import Int8ConvParams, reference_conv
from mnnpy.backends.cpu.int8.requant import dequantize, quantize
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema import net_to_bytes
from support.models import net_op

import mnnpy

OT = fb.OpType


def _qparam(scale: float, zero: int) -> fb.QuantizedFloatParamT:
    p = fb.QuantizedFloatParamT()
    p.tensorScale, p.zeroPoint, p.clampMin, p.clampMax = [scale], zero, -128, 127
    return p


def _conv(kind: int, p: Int8ConvParams) -> fb.Convolution2DT:
    oc = p.weight.shape[0]
    common = fb.Convolution2DCommonT()
    common.kernelY, common.kernelX = p.weight.shape[2:]
    common.strideY, common.strideX = p.stride
    common.pads = list(p.pads)
    common.padY, common.padX = p.pads[0], p.pads[1]
    common.group, common.outputCount = (oc if kind == OT.DepthwiseConvInt8 else p.group), oc
    common.inputCount = oc if kind == OT.DepthwiseConvInt8 else p.weight.shape[1] * p.group
    sym = fb.QuantizedFloatParamT()
    sym.weight, sym.bias, sym.scale = p.weight.ravel().tolist(), p.bias.tolist(), list(p.multiplier)
    sym.zeroPoint, sym.outputZeroPoint, sym.clampMin, sym.clampMax = p.in_zero, p.out_zero, p.lo, p.hi
    conv = fb.Convolution2DT()
    conv.common, conv.symmetricQuan = common, sym
    return conv


@pytest.mark.parametrize("depthwise", [False, True])
def test_int8_island_in_a_session(depthwise: bool) -> None:
    rng = np.random.default_rng(3)
    c, oc = 8, (8 if depthwise else 12)
    s_in, zp_in, zp_mid = 0.02, 5, -3
    w = rng.integers(-127, 128, size=(oc, 1 if depthwise else c, 3, 3)).astype(np.int8)
    p1 = Int8ConvParams(w, rng.integers(-300, 300, oc), rng.uniform(0.001, 0.01, oc), (2, 2), pads=(1, 1, 1, 1),
                        in_zero=zp_in, out_zero=zp_mid, lo=zp_mid, hi=127, depthwise=depthwise)
    w2 = rng.integers(-127, 128, size=(4, oc, 1, 1)).astype(np.int8)
    p2 = Int8ConvParams(w2, rng.integers(-300, 300, 4), rng.uniform(0.001, 0.01, 4), in_zero=zp_mid, out_zero=7)
    kind = OT.DepthwiseConvInt8 if depthwise else OT.ConvInt8
    inp = fb.InputT()
    inp.dims, inp.dtype, inp.dformat = [1, c, 9, 9], fb.DataType.DT_FLOAT, fb.MNN_DATA_FORMAT.NCHW
    net = fb.NetT()
    net.tensorName = ["x", "xq", "h", "yq", "y"]
    net.oplists = [
        net_op(OT.Input, "x", [], [0], fb.OpParameter.Input, inp),
        net_op(OT.FloatToInt8, "q", [0], [1], fb.OpParameter.QuantizedFloatParam, _qparam(1 / s_in, zp_in)),
        net_op(kind, "conv1", [1], [2], fb.OpParameter.Convolution2D, _conv(kind, p1)),
        net_op(OT.ConvInt8, "conv2", [2], [3], fb.OpParameter.Convolution2D, _conv(OT.ConvInt8, p2)),
        net_op(OT.Int8ToFloat, "dq", [3], [4], fb.OpParameter.QuantizedFloatParam, _qparam(0.1, 7)),
    ]
    net.outputName = ["y"]
    interp = mnnpy.Interpreter(net_to_bytes(net))
    session = interp.createSession({})
    x = rng.normal(size=(1, c, 9, 9)).astype(np.float32)
    interp.getSessionInput(session).copyFrom(mnnpy.Tensor([1, c, 9, 9], data=x, dimType=1))
    interp.runSession(session)
    got = interp.getSessionOutput(session).getNumpyData()
    xq = quantize(x, s_in, zp_in)
    want = dequantize(reference_conv(reference_conv(xq, p1), p2), 0.1, 7)
    np.testing.assert_array_equal(got, want)
    kinds = {c.info.get("algorithm") for c in session.commands if c.info}
    assert ("int8-dw3x3" if depthwise else "int8-indirect") in kinds and "int8-1x1" in kinds


@pytest.mark.parametrize("pool", [(3, 2, 1, False), (2, 2, 0, False), (1, 1, 0, True)])
def test_int8_max_pool(pool: tuple) -> None:
    k, s, pad, is_global = pool
    rng = np.random.default_rng(5)
    inp = fb.InputT()
    inp.dims, inp.dtype, inp.dformat = [1, 6, 9, 9], fb.DataType.DT_FLOAT, fb.MNN_DATA_FORMAT.NCHW
    p = fb.PoolT()
    p.kernelX = p.kernelY = k
    p.strideX = p.strideY = s
    p.padX = p.padY = pad
    p.type, p.isGlobal, p.ceilModel = fb.PoolType.MAXPOOL, is_global, False
    net = fb.NetT()
    net.tensorName = ["x", "xq", "pq", "y"]
    net.oplists = [
        net_op(OT.Input, "x", [], [0], fb.OpParameter.Input, inp),
        net_op(OT.FloatToInt8, "q", [0], [1], fb.OpParameter.QuantizedFloatParam, _qparam(1 / 0.05, 0)),
        net_op(OT.QuantizedMaxPool, "pool", [1], [2], fb.OpParameter.Pool, p),
        net_op(OT.Int8ToFloat, "dq", [2], [3], fb.OpParameter.QuantizedFloatParam, _qparam(0.05, 0)),
    ]
    net.outputName = ["y"]
    interp = mnnpy.Interpreter(net_to_bytes(net))
    session = interp.createSession({})
    x = rng.normal(size=(1, 6, 9, 9)).astype(np.float32)
    interp.getSessionInput(session).copyFrom(mnnpy.Tensor([1, 6, 9, 9], data=x, dimType=1))
    interp.runSession(session)
    got = interp.getSessionOutput(session).getNumpyData()
    xq = dequantize(quantize(x, 0.05), 0.05)
    if is_global:
        want = xq.max(axis=(2, 3), keepdims=True)
    else:
        xp = np.pad(xq, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
        oh = (9 + 2 * pad - k) // s + 1
        want = np.stack([xp[:, :, y * s:y * s + k, x_ * s:x_ * s + k].max(axis=(2, 3))
                         for y in range(oh) for x_ in range(oh)], axis=-1).reshape(1, 6, oh, oh)
    np.testing.assert_array_equal(got, want)


def test_int8_global_average_pool_as_mnn() -> None:
    """MNN's x86 fixed-point mean: ``((sum(x + 128) * (2**24 // n)) >> 24) - 128``, so whole-number means come out one
    lower (checked end to end against official MNN in tests/quant)."""
    p = fb.Pool3DT()
    p.type, p.isGlobal = fb.PoolType.AVEPOOL, True
    inp = fb.InputT()
    inp.dims, inp.dtype, inp.dformat = [2, 5, 3, 4], fb.DataType.DT_FLOAT, fb.MNN_DATA_FORMAT.NCHW
    net = fb.NetT()
    net.tensorName = ["x", "xq", "pq", "y"]
    net.oplists = [
        net_op(OT.Input, "x", [], [0], fb.OpParameter.Input, inp),
        net_op(OT.FloatToInt8, "q", [0], [1], fb.OpParameter.QuantizedFloatParam, _qparam(1.0, 0)),
        net_op(OT.QuantizedAvgPool, "gap", [1], [2], fb.OpParameter.Pool3D, p),
        net_op(OT.Int8ToFloat, "dq", [2], [3], fb.OpParameter.QuantizedFloatParam, _qparam(1.0, 0)),
    ]
    net.outputName = ["y"]
    interp = mnnpy.Interpreter(net_to_bytes(net))
    session = interp.createSession({})
    x = np.random.default_rng(6).integers(-100, 100, size=(2, 5, 3, 4)).astype(np.float32)
    x[0, 0], x[0, 1] = 0.0, 7.0  # whole-number means
    interp.getSessionInput(session).copyFrom(mnnpy.Tensor([2, 5, 3, 4], data=x, dimType=1))
    interp.runSession(session)
    sums = x.astype(np.int64).sum(axis=(2, 3), keepdims=True) + 128 * 12
    want = ((sums * ((1 << 24) // 12)) >> 24) - 128
    assert want[0, 0, 0, 0] == -1 and want[0, 1, 0, 0] == 6
    np.testing.assert_array_equal(interp.getSessionOutput(session).getNumpyData(), want)
