"""Explicit int8 ops for mnnpy's runtime from MNN's quantised representation (see ``model``).

MNN decides at session creation, from ``quantInfo``, which ops run in int8 and inserts the converts. This pass does
the same on the net before the session is made: each quantised convolution becomes ``ConvInt8`` /
``DepthwiseConvInt8`` (int8 weights, int32 bias in units of ``s_in * s_w``, per-channel requantisation multiplier
``s_in * s_w / s_out``, fused ReLU / ReLU6 as an output clamp), its input and output get int8 twins, and
``FloatToInt8`` / ``Int8ToFloat`` ops are placed only where an int8 tensor meets a float producer or consumer. Residual
adds, max / global average pools and layout ops (reshape, transpose, concat, slice) whose tensors share one scale run
on the int8 codes too (layout ops keep their type: the CPU Raster moves int8 bytes as it moves floats).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from mnnpy.core.idst import is_int8_conv as _int8_conv
from mnnpy.core.idst import is_quantized
from mnnpy.schema import mnn_generated as fb

from .model import LAYOUT, _ints, data_inputs

INPUT_OFFSET = 128  # MNN's x86 int8 GEMM reads inputs as uint8 x + 128 (backends/cpu/int8/requant.py)

OT = fb.OpType


def _codes(main: Any, oc: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and per-channel weight scales of a symmetric IDSTQuan weight."""
    from mnnpy.core.idst import dequantize_idst

    q = main.quanParameter
    if q.readType != 0:
        raise ValueError("asymmetric weight codes are not an int8 convolution")
    alpha = np.asarray(q.alpha, np.float32).ravel()
    if alpha.size != oc:
        raise ValueError(f"{alpha.size} weight scales for {oc} channels")
    w = dequantize_idst(q, oc, size).reshape(oc, -1)
    codes = np.rint(w / np.where(alpha > 0, alpha, 1.0)[:, None])
    return np.clip(codes, -127, 127).astype(np.int8), alpha.astype(np.float64)


def _quant_param(scale: float, zero: int, lo: int, hi: int) -> Any:
    p = fb.QuantizedFloatParamT()
    p.tensorScale = np.asarray([scale], np.float32)
    p.zeroPoint, p.clampMin, p.clampMax, p.outputZeroPoint = zero, lo, hi, zero
    return p


def _convert_op(kind: int, name: str, src: int, dst: int, param: Any) -> Any:
    op = fb.OpT()
    op.type = kind
    op.name = name
    op.inputIndexes = np.asarray([src], np.int32)
    op.outputIndexes = np.asarray([dst], np.int32)
    op.mainType = fb.OpParameter.QuantizedFloatParam
    op.main = param
    return op


def _int8_op(op: Any, info: dict[int, Any]) -> Any:
    """ConvInt8 / DepthwiseConvInt8 twin of a quantised float convolution."""
    main = op.main
    c = main.common
    oc = int(c.outputCount)
    ic = int(c.inputCount) or oc
    icg = 1 if op.type == OT.ConvolutionDepthwise else ic // max(int(c.group), 1)
    codes, s_w = _codes(main, oc, oc * icg * c.kernelX * c.kernelY)
    i, o = _ints(op.inputIndexes)[0], _ints(op.outputIndexes)[0]
    s_in, s_out = float(info[i].scale), float(info[o].scale)
    zp_in, zp_out = int(info[i].zero), int(info[o].zero)
    f32 = np.float32
    bias = np.asarray(main.bias if main.bias is not None else np.zeros(oc), f32)
    alpha = np.maximum(s_w.astype(f32), f32(1e-6)) if op.type == OT.ConvolutionDepthwise else s_w.astype(f32)
    s_in32, s_out32 = f32(s_in), f32(s_out)
    sym = fb.QuantizedFloatParamT()
    sym.weight = codes.ravel()
    depthwise = op.type == OT.ConvolutionDepthwise
    # MNN's x86 int8 kernels, in their float32 steps (backends/cpu/int8/requant.py): depthwise truncates the bias to
    # accumulator units and scales by alpha * (s_in / s_out); the dense kernels scale by alpha, then by s_in / s_out,
    # and add a float bias in output codes that also cancels the +128 input offset of their uint8 GEMM
    if depthwise:
        sym.bias = np.trunc(bias / (s_in32 * alpha)).astype(np.int32)
        sym.scale = alpha * (s_in32 / s_out32)
    else:
        sym.bias = np.zeros(oc, np.int32)
        sym.scale = alpha
        sym.tensorScale = np.asarray([s_in32 / s_out32], f32)
        kernel_sum = codes.reshape(oc, -1).astype(np.int64).sum(axis=1).astype(f32) * alpha
        out_bias = (bias - kernel_sum * f32(INPUT_OFFSET) * s_in32) / s_out32
    sym.zeroPoint, sym.outputZeroPoint = zp_in, zp_out
    lo, hi = int(info[o].min), int(info[o].max)
    if c.relu or c.relu6:
        lo = max(lo, zp_out)
    if c.relu6:
        hi = min(hi, zp_out + round(6.0 / s_out))
    sym.clampMin, sym.clampMax = lo, hi
    new = fb.OpT()
    new.type = OT.DepthwiseConvInt8 if op.type == OT.ConvolutionDepthwise else OT.ConvInt8
    new.name = op.name
    new.mainType = fb.OpParameter.Convolution2D
    new.main = fb.Convolution2DT()
    new.main.common = copy.copy(c)
    new.main.common.relu = new.main.common.relu6 = False
    new.main.symmetricQuan = sym
    if not depthwise:
        new.main.bias = out_bias.astype(np.float32)
    return new


def _int8_add(op: Any, info: dict[int, Any], consts: set[int]) -> bool:
    """A residual add whose operands and result all carry quantInfo (MNN runs it in int8)."""
    ins, outs = _ints(op.inputIndexes), _ints(op.outputIndexes)
    return (op.type == OT.BinaryOp and op.main is not None and op.main.opType == fb.BinaryOpOperation.ADD
            and op.main.activationType in (0, 1) and len(ins) == 2 and len(outs) == 1
            and all(i in info and i not in consts for i in ins) and outs[0] in info)


def _int8_pool(op: Any, info: dict[int, Any]) -> bool:
    """A max pooling, or a global average pooling, whose input and output share one quantisation."""
    ins, outs = _ints(op.inputIndexes), _ints(op.outputIndexes)
    if op.type not in (OT.Pooling, OT.Pooling3D) or op.main is None:
        return False
    is_max = op.type == OT.Pooling and op.main.type == fb.PoolType.MAXPOOL
    if not is_max and not (op.main.type == fb.PoolType.AVEPOOL and op.main.isGlobal):
        return False
    if len(ins) != 1 or len(outs) != 1 or ins[0] not in info or outs[0] not in info:
        return False
    a, b = info[ins[0]], info[outs[0]]
    return bool(np.isclose(a.scale, b.scale, rtol=1e-6) and a.zero == b.zero)


def _int8_layout(op: Any, info: dict[int, Any]) -> bool:
    """A layout op whose data inputs and output share one quantisation: it moves int8 codes (an int8 Raster)."""
    if op.type not in LAYOUT or op.outputIndexes is None or len(op.outputIndexes) != 1:
        return False
    tensors = [*data_inputs(op), _ints(op.outputIndexes)[0]]
    if not all(i in info for i in tensors):
        return False
    first = info[tensors[0]]
    return all(np.isclose(info[i].scale, first.scale, rtol=1e-6) and info[i].zero == first.zero for i in tensors)


def _pool_op(op: Any) -> Any:
    """QuantizedMaxPool / QuantizedAvgPool (global) carrying the float op's Pool / Pool3D table."""
    new = fb.OpT()
    new.name = op.name
    new.type = OT.QuantizedMaxPool if op.main.type == fb.PoolType.MAXPOOL else OT.QuantizedAvgPool
    new.mainType = fb.OpParameter.Pool if op.type == OT.Pooling else fb.OpParameter.Pool3D
    new.main = copy.copy(op.main)
    return new


def _add_op(op: Any, info: dict[int, Any]) -> Any:
    """EltwiseInt8 twin of a quantised add (params: see backends/cpu/ops/int8_add.py)."""
    (a, b), o = _ints(op.inputIndexes), _ints(op.outputIndexes)[0]
    q = fb.QuantizedFloatParamT()
    q.tensorScale = np.asarray([info[a].scale, info[b].scale, info[o].scale], np.float32)
    q.floatzeros = np.asarray([info[a].zero, info[b].zero], np.float32)
    q.outputZeroPoint = q.zeroPoint = int(info[o].zero)
    q.clampMin = max(int(info[o].min), q.outputZeroPoint) if op.main.activationType == 1 else int(info[o].min)
    q.clampMax = int(info[o].max)
    new = fb.OpT()
    new.type, new.name = OT.EltwiseInt8, op.name
    new.mainType, new.main = fb.OpParameter.QuantizedFloatParam, q
    return new


def _round_trip(ops: list[Any], o: int, q: Any, names: list[str], twin_of: Any) -> int:
    """A float op's output that carries quantInfo is int8 data in MNN: quantise it, and give float readers the
    dequantised copy (a float average pool between int8 tensors of different scales included: its float mean is
    quantised, which lands nearer official MNN than truncating). Returns the copy's index."""
    ops.append(_convert_op(OT.FloatToInt8, f"{names[o]}__to_int8", o, twin_of(o),
                           _quant_param(1.0 / q.scale, int(q.zero), int(q.min), int(q.max))))
    back = len(names)
    names.append(f"{names[o]}__q")
    ops.append(_convert_op(OT.Int8ToFloat, f"{names[o]}__to_float", twin_of(o), back,
                           _quant_param(q.scale, int(q.zero), int(q.min), int(q.max))))
    return back


def _data(op: Any) -> list[int]:
    """Inputs that an int8 op reads as int8 (all, except the shape / axis inputs of layout ops)."""
    return data_inputs(op) if op.type in LAYOUT else _ints(op.inputIndexes)


def lower_int8(net: Any) -> Any:
    """A copy of ``net`` where quantised convolutions, residual adds and pools run as int8 ops (CPU int8 kernels).

    Tensors keep their indexes and names on the float side; int8 values live in new ``<name>__int8`` tensors.
    """
    out = copy.deepcopy(net)
    info = {int(d.index): d.quantInfo for d in out.extraTensorDescribe or [] if d.quantInfo is not None}
    names = [str(n) for n in out.tensorName or []]
    consts = {o for op in out.oplists or [] if op.type == OT.Const for o in _ints(op.outputIndexes)}
    int8_ops = {id(op) for op in out.oplists or [] if _int8_add(op, info, consts) or _int8_pool(op, info)
                or _int8_layout(op, info)
                or (_int8_conv(op) and all(i in info for i in (_ints(op.inputIndexes)[0], _ints(op.outputIndexes)[0])))}
    float_uses: dict[int, int] = {}
    for op in out.oplists or []:
        for i in _ints(op.inputIndexes) if id(op) not in int8_ops else _ints(op.inputIndexes)[len(_data(op)):]:
            float_uses[i] = float_uses.get(i, 0) + 1
    outputs = {names.index(n) for n in (str(o) for o in out.outputName or []) if n in names}
    twin: dict[int, int] = {}

    def twin_of(i: int) -> int:
        if i not in twin:
            twin[i] = len(names)
            names.append(f"{names[i]}__int8")
        return twin[i]

    ops: list[Any] = []
    alias: dict[int, int] = {}  # float tensor -> its int8-rounded copy, read by later float ops
    for op in out.oplists or []:
        if id(op) not in int8_ops:
            ins = _ints(op.inputIndexes)
            if any(i in alias for i in ins):
                op.inputIndexes = np.asarray([alias.get(i, i) for i in ins], np.int32)
            ops.append(op)
            for o in _ints(op.outputIndexes):
                if o in info and float_uses.get(o) and o not in outputs:
                    alias[o] = _round_trip(ops, o, info[o], names, twin_of)
            continue
        ins, o = _data(op), _ints(op.outputIndexes)[0]
        for i in ins:
            if i not in twin:
                q = info[i]
                ops.append(_convert_op(OT.FloatToInt8, f"{names[i]}__to_int8", i, twin_of(i),
                                       _quant_param(1.0 / q.scale, int(q.zero), int(q.min), int(q.max))))
        if op.type in LAYOUT:
            new = op  # same op and parameters, on the int8 twins (the CPU Raster moves bytes of any dtype)
        elif op.type == OT.BinaryOp:
            new = _add_op(op, info)
        else:
            new = _pool_op(op) if op.type in (OT.Pooling, OT.Pooling3D) else _int8_op(op, info)
        rest = _ints(op.inputIndexes)[len(ins):]  # shape / axis inputs of layout ops stay as they are
        new.inputIndexes = np.asarray([twin[i] for i in ins] + rest, np.int32)
        new.outputIndexes = np.asarray([twin_of(o)], np.int32)
        ops.append(new)
        if float_uses.get(o) or o in outputs:
            q = info[o]
            ops.append(_convert_op(OT.Int8ToFloat, f"{names[o]}__to_float", twin[o], o,
                                   _quant_param(q.scale, int(q.zero), int(q.min), int(q.max))))
    out.oplists = ops
    out.tensorName = names
    return out


def interpreter(model: str | bytes) -> Any:
    """An ``mnnpy.Interpreter`` that runs a quantised model with int8 kernels (float models pass unchanged)."""
    from mnnpy.interpreter import Interpreter
    from mnnpy.schema import load_net, net_to_bytes

    net = load_net(model)
    return Interpreter(net_to_bytes(lower_int8(net)) if is_quantized(net) else model)
