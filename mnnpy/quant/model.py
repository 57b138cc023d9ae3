"""Which ops get int8, and the quantised net in MNN's own representation (what MNN 3.6.1's ``mnnquant`` writes).

A quantised convolution stays a ``Convolution`` / ``ConvolutionDepthwise`` op: its weights become symmetric
per-output-channel int8 codes in an ``IDSTQuan`` (type 1, 256-entry linear codebook -128..127, one byte per code,
``alpha`` = weight scale per channel, ``aMin`` 0, ``aMaxOrBits`` 8, ``scaleIn`` / ``scaleOut`` = feature scales);
``symmetricQuan`` carries the clamp range and ``outputDataType`` DT_INT8; the float bias stays. Every tensor read
or written by an int8 op gets ``extraTensorDescribe[].quantInfo`` ``{scale, zero 0, min -clamp, max clamp,
DT_INT8}``; the runtime decides where int8 islands start and end from these. Layout ops and pools between int8
tensors give their data inputs and output one scale (the largest calibrated threshold of the group), so they move
int8 codes without requantising.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mnnpy.core.idst import CONVS
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType
POOLS = (OT.Pooling, OT.Pooling3D)
# layout ops that move int8 codes unchanged (int8 Raster): their data inputs and output share one scale
LAYOUT = (OT.Reshape, OT.Flatten, OT.Squeeze, OT.Unsqueeze, OT.ExpandDims, OT.Permute, OT.Transpose, OT.Concat,
          OT.Slice, OT.SliceTf, OT.StridedSlice)
DT_INT8 = 6


@dataclass
class QuantPlan:
    """Ops chosen for int8 and the tensors to calibrate."""

    convs: list[Any] = field(default_factory=list)
    others: list[Any] = field(default_factory=list)  # BinaryOp ADD and pooling: quantInfo only
    layout: list[Any] = field(default_factory=list)  # layout ops between int8 ops: one shared scale
    targets: dict[str, tuple[list, list]] = field(default_factory=dict)


def _ints(v: Any) -> list[int]:
    return [int(i) for i in np.asarray(v if v is not None else [], dtype=np.int64).ravel()]


def data_inputs(op: Any) -> list[int]:
    """Inputs of a layout op that carry data (all of a Concat's; the first otherwise, the rest are shapes/axes)."""
    ins = _ints(op.inputIndexes)
    return ins if op.type == OT.Concat else ins[:1]


def plan(net: Any, skip: list[str] | None = None) -> QuantPlan:
    """Pick convolutions with constant float weights (and the adds/pools between them) for int8."""
    skip_set = set(skip or [])
    consts = {o for op in net.oplists or [] if op.type == OT.Const for o in _ints(op.outputIndexes)}
    result = QuantPlan()
    for op in net.oplists or []:
        name = str(op.name or "")
        ins, outs = _ints(op.inputIndexes), _ints(op.outputIndexes)
        if name in skip_set or not ins or not outs or name in result.targets:
            continue
        if op.type in CONVS and op.main is not None and op.main.weight is not None and len(op.main.weight) \
                and op.main.quanParameter is None and len(ins) == 1:
            result.convs.append(op)
        elif (op.type == OT.BinaryOp and op.main is not None and op.main.opType == fb.BinaryOpOperation.ADD
              and len(ins) == 2 and not set(ins) & consts) or op.type in POOLS:
            result.others.append(op)
        elif op.type in LAYOUT and not set(data_inputs(op)) & consts and len(outs) == 1:
            result.layout.append(op)
            ins = data_inputs(op)
        else:
            continue
        result.targets[name] = (ins, outs)
    return result


def quantize_weight(weight: np.ndarray, clamp: int = 127, method: str = "MAX_ABS") -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-row int8 codes and scales of a [oc, rest] weight (``MAX_ABS``, or ``ADMM`` refinement)."""
    w = np.asarray(weight, np.float64)
    scale = np.abs(w).max(axis=1) / clamp
    scale = np.where(scale > 0, scale, 1e-8)
    if method == "ADMM":
        for _ in range(10):  # alternate: codes for the scale, then the least-squares scale for the codes
            q = np.clip(np.rint(w / scale[:, None]), -clamp, clamp)
            qq = (q * q).sum(axis=1)
            scale = np.where(qq > 0, (w * q).sum(axis=1) / np.maximum(qq, 1e-30), scale)
            scale = np.where(scale > 0, scale, 1e-8)
    codes = np.clip(np.rint(w / scale[:, None]), -clamp, clamp).astype(np.int8)
    return codes, scale.astype(np.float32)


def idst_buffer(codes: np.ndarray) -> tuple[np.ndarray, bool]:
    """IDSTQuan type-1 buffer of int8 codes [oc, rest]: header, the linear 256-value codebook, one byte per code.

    Returns:
        (buffer as int8, shapeInt32 flag).
    """
    oc, rest = codes.shape
    wide = max(oc, rest) >= 1 << 16
    dims = np.asarray([oc, rest], "<u4" if wide else "<u2").view(np.uint8)
    codebook = np.arange(-128, 128, dtype=np.int16).astype(np.int8).view(np.uint8)
    index = (codes.astype(np.int16) + 128).astype(np.uint8).ravel()
    buf = np.concatenate([np.array([2], np.uint8), dims, np.array([0], np.uint8), codebook, index])
    return buf.view(np.int8), wide


def quantize_conv(op: Any, s_in: float, s_out: float, feature_clamp: int, weight_clamp: int, method: str) -> None:
    """Turn a float convolution into MNN's weight-int8 + feature-scale form (in place)."""
    main = op.main
    oc = int(main.common.outputCount)
    codes, scale = quantize_weight(np.asarray(main.weight, np.float32).reshape(oc, -1), weight_clamp, method)
    quan = fb.IDSTQuanT()
    quan.buffer, quan.shapeInt32 = idst_buffer(codes)
    quan.alpha = scale
    quan.type = 1
    quan.quantScale = 1.0
    quan.scaleIn = float(s_in)
    quan.scaleOut = float(s_out)
    quan.aMaxOrBits = 8
    quan.aMin = 0
    quan.readType = 0
    sym = fb.QuantizedFloatParamT()
    sym.nbits = 8
    sym.clampMin = -feature_clamp
    sym.clampMax = feature_clamp
    sym.outputDataType = DT_INT8
    main.quanParameter = quan
    main.symmetricQuan = sym
    main.weight = None
    if main.bias is None:
        main.bias = np.zeros(oc, np.float32)


def set_quant_info(net: Any, scales: dict[int, float], clamp: int) -> None:
    """Write ``extraTensorDescribe[].quantInfo`` for the given tensors (existing describes are kept)."""
    descs = list(net.extraTensorDescribe or [])
    by_index = {int(d.index): d for d in descs}
    for index in sorted(scales):
        d = by_index.get(index)
        if d is None:
            d = fb.TensorDescribeT()
            d.index = index
            descs.append(d)
            by_index[index] = d
        info = fb.TensorQuantInfoT()
        info.scale = float(scales[index])
        info.zero = 0.0
        info.min = float(-clamp)
        info.max = float(clamp)
        info.type = DT_INT8
        d.quantInfo = info
    net.extraTensorDescribe = sorted(descs, key=lambda d: int(d.index))


def apply(net: Any, quant_plan: QuantPlan, thresholds: dict[int, float], feature_clamp: int = 127,
          weight_clamp: int = 127, weight_method: str = "MAX_ABS", kept: list[str] | None = None) -> dict[str, int]:
    """Quantise the planned ops of ``net`` in place from calibrated thresholds; returns counts for the report.

    ``kept`` (when given) receives one line per convolution kept in float: its name and the tensor that stayed 0.
    """
    scales: dict[int, float] = {}
    shared = quant_plan.layout + [op for op in quant_plan.others if op.type in POOLS]  # pools keep their scale too
    thresholds = shared_thresholds(thresholds, shared)

    def scale_of(i: int) -> float:
        return thresholds.get(i, 0.0) / feature_clamp

    done = {"convs": 0, "skipped": 0, "others": 0, "layout": 0}
    for op in quant_plan.convs:
        i, o = _ints(op.inputIndexes)[0], _ints(op.outputIndexes)[0]
        if scale_of(i) <= 0 or scale_of(o) <= 0:
            done["skipped"] += 1  # a tensor that never left zero: keep the op in float
            if kept is not None:
                kept.append(f"{op.name}: {'input' if scale_of(i) <= 0 else 'output'} tensor "
                            f"{i if scale_of(i) <= 0 else o} was 0 on every calibration sample")
            continue
        quantize_conv(op, scale_of(i), scale_of(o), feature_clamp, weight_clamp, weight_method)
        scales[i], scales[o] = scale_of(i), scale_of(o)
        done["convs"] += 1
    for op in quant_plan.others:
        ins, outs = _ints(op.inputIndexes), _ints(op.outputIndexes)
        if op.type in POOLS:
            outs_scale = {outs[0]: scales.get(ins[0], scale_of(ins[0]))}
        else:
            outs_scale = {outs[0]: scale_of(outs[0])}
        wanted = {i: scales.get(i, scale_of(i)) for i in ins[:2 if op.type == OT.BinaryOp else 1]} | outs_scale
        if all(v > 0 for v in wanted.values()):
            for k, v in wanted.items():
                scales.setdefault(k, v)
            done["others"] += 1
    for op in quant_plan.layout:  # only between tensors that are int8 already: an int8 Raster, no new islands
        ins, out = data_inputs(op), _ints(op.outputIndexes)[0]
        if all(i in scales for i in ins) or out in scales:
            for k in (*ins, out):
                scales[k] = scale_of(k)
            done["layout"] += 1
    set_quant_info(net, scales, feature_clamp)
    return done


def shared_thresholds(thresholds: dict[int, float], ops: list[Any]) -> dict[int, float]:
    """Thresholds where the data inputs and output of each op (layout ops, pools) share the largest of their
    thresholds, so the op moves int8 codes without requantising (a Concat's inputs get one scale). Tensors are
    grouped transitively."""
    parent: dict[int, int] = {}

    def root(i: int) -> int:
        while parent.get(i, i) != i:
            i = parent[i]
        return i

    for op in ops:
        ins, out = data_inputs(op), _ints(op.outputIndexes)[0]
        for i in ins:
            parent[root(i)] = root(out)
    group_max: dict[int, float] = {}
    for i in parent.keys() | {p for p in parent.values()}:
        group_max[root(i)] = max(group_max.get(root(i), 0.0), thresholds.get(i, 0.0))
    return {**thresholds, **{i: group_max[root(i)] for i in parent.keys() | set(parent.values())}}
