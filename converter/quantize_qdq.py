"""ONNX QDQ models (QuantizeLinear / DequantizeLinear around Conv, Gemm, MatMul) to MNN's int8 representation.

``fold_qdq`` rewrites the ONNX graph before the frontend runs: every constant ``DequantizeLinear`` (weights, int32
biases) becomes a float initializer, and every activation ``QuantizeLinear -> DequantizeLinear`` pair is removed,
its scale and zero point remembered for the float tensor it quantised. The converted float net then gets, in
``apply_qdq``, the same form ``mnnpy quant`` writes (``mnnpy.quant.model``): each convolution whose input and output
were quantised and whose weights were symmetric int8 codes keeps those codes (IDSTQuan type 1, per-channel ``alpha``,
``scaleIn`` / ``scaleOut``), and every quantised tensor gets ``quantInfo`` (uint8 codes shifted to int8: zero point
minus 128). A ReLU that the ONNX quantiser folded into a quantisation range comes back as the int8 clamp.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType
_PASS_THROUGH = (OT.ConvertTensor, OT.Reshape, OT.Flatten, OT.Squeeze, OT.Unsqueeze)


@dataclass
class QdqInfo:
    """What ``fold_qdq`` removed: activation quantisation by float tensor name, int8 weights by their float bytes."""

    activations: dict[str, tuple[float, int]] = field(default_factory=dict)  # name -> (scale, int8 zero point)
    weights: dict[bytes, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # float bytes -> (codes, scale)


def _attr(node: Any, name: str, default: int) -> int:
    return next((a.i for a in node.attribute if a.name == name), default)


def _params(node: Any, values: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """Constant scale and zero point of a Q / DQ node (zero point int8 0 when absent); None when not constant."""
    if node.input[1] not in values or _attr(node, "block_size", 0):
        return None
    zero_name = node.input[2] if len(node.input) > 2 else ""
    if zero_name and zero_name not in values:
        return None
    zero = np.asarray(values[zero_name]) if zero_name else np.zeros(1, np.int8)
    return np.asarray(values[node.input[1]], np.float32), zero


def _int8_weight(node: Any, values: dict[str, np.ndarray]) -> bool:
    """A DequantizeLinear of constant symmetric int8 codes (a weight MNN's int8 convolution can take)."""
    params = _params(node, values) if node.op_type == "DequantizeLinear" else None
    return (params is not None and node.input[0] in values and values[node.input[0]].dtype == np.int8
            and values[node.input[0]].ndim >= 2 and not np.any(params[1]))


def fold_qdq(model: Any) -> QdqInfo | None:
    """Strip the QDQ nodes of a quantised model from ``model`` (an onnx ModelProto, changed in place).

    Only models where a Conv / Gemm / MatMul reads a constant symmetric int8 weight through DequantizeLinear are
    folded (None otherwise, the model untouched: standalone Q / DQ nodes convert as float arithmetic). Constant DQs
    become float initializers; activation Q -> DQ pairs with constant per-tensor parameters are removed.
    """
    from onnx import numpy_helper

    graph = model.graph
    dq_inputs = {name for n in graph.node if n.op_type == "DequantizeLinear" for name in n.input}
    if not dq_inputs:
        return None  # the common case: no reading of initializers at all
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer if t.name in dq_inputs}
    for n in graph.node:
        if n.op_type == "Constant" and n.output[0] in dq_inputs and n.attribute and n.attribute[0].name == "value":
            values[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    weight_dq = {n.output[0] for n in graph.node if _int8_weight(n, values)}
    if not any(n.op_type in ("Conv", "Gemm", "MatMul") and len(n.input) > 1 and n.input[1] in weight_dq
               for n in graph.node):
        return None
    producers = {o: n for n in graph.node for o in n.output}
    consumers: dict[str, list[Any]] = {}
    for n in graph.node:
        for name in n.input:
            consumers.setdefault(name, []).append(n)
    info, drop, rename = QdqInfo(), set(), {}
    outputs = {o.name for o in graph.output}
    for n in graph.node:
        params = _params(n, values) if n.op_type == "DequantizeLinear" else None
        if params is None:
            continue
        scale, zero = params
        if n.input[0] in values:  # a constant: weights or an int32 bias, dequantised as ONNX does (float32)
            codes = np.asarray(values[n.input[0]])
            shape = [1] * codes.ndim
            if scale.size > 1:
                shape[_attr(n, "axis", 1) % codes.ndim] = -1
            real = (codes.astype(np.float32) - zero.astype(np.float32).reshape(shape)) * scale.reshape(shape)
            if n.output[0] in weight_dq:
                info.weights[real.tobytes()] = (codes, np.broadcast_to(scale.reshape(shape), codes.shape))
            graph.initializer.append(numpy_helper.from_array(real.astype(np.float32), n.output[0]))
            drop.add(id(n))
            continue
        q = producers.get(n.input[0])
        if (q is None or q.op_type != "QuantizeLinear" or scale.size != 1 or zero.size != 1
                or zero.dtype not in (np.int8, np.uint8) or q.output[0] in outputs
                or any(c.op_type != "DequantizeLinear" for c in consumers.get(q.output[0], []))):
            continue  # left to the float QuantizeLinear / DequantizeLinear handlers
        source = q.input[0]
        if n.output[0] in outputs:  # keep the graph output's name: the quantised tensor takes it
            rename[source] = n.output[0]
            source = n.output[0]
        else:
            rename[n.output[0]] = source
        info.activations[source] = (float(scale.ravel()[0]), int(zero.ravel()[0]) - (128 if zero.dtype == np.uint8
                                                                                      else 0))
        drop.update((id(n), id(q)))
    kept = [n for n in graph.node if id(n) not in drop]
    for n in kept:
        for k, name in enumerate(n.input):
            n.input[k] = rename.get(name, name)
        for k, name in enumerate(n.output):
            n.output[k] = rename.get(name, name)
    del graph.node[:]
    graph.node.extend(kept)
    return info


def _follow(net: Any, index: int, info: QdqInfo, names: list[str], forward: bool) -> tuple[float, int] | None:
    """The quantisation of tensor ``index``, or of the tensor it passes unchanged to / from (ConvertTensor etc.)."""
    seen = 0
    while seen < 8:
        if names[index] in info.activations:
            return info.activations[names[index]]
        nxt = None
        for op in net.oplists or []:
            if op.type not in _PASS_THROUGH or op.inputIndexes is None or not len(op.inputIndexes):
                continue
            if forward and int(op.inputIndexes[0]) == index:
                nxt = int(op.outputIndexes[0])
            elif not forward and int(op.outputIndexes[0]) == index:
                nxt = int(op.inputIndexes[0])
        if nxt is None:
            return None
        index, seen = nxt, seen + 1
    return None


def apply_qdq(net: Any, info: QdqInfo | None) -> int:
    """Give ``net`` (converted from a folded QDQ model) MNN's int8 form; returns the number of int8 convolutions."""
    if info is None:
        return 0
    from mnnpy.quant.model import CONVS, DT_INT8, idst_buffer

    names = [str(n) for n in net.tensorName or []]
    quant: dict[int, tuple[float, int]] = {i: info.activations[n] for i, n in enumerate(names) if n in info.activations}
    count = 0
    for op in net.oplists or []:
        main = op.main
        if op.type not in CONVS or main is None or main.weight is None or len(op.inputIndexes) != 1:
            continue
        i, o = int(op.inputIndexes[0]), int(op.outputIndexes[0])
        q_in, q_out = _follow(net, i, info, names, False), _follow(net, o, info, names, True)
        codes_alpha = _weight_codes(np.asarray(main.weight, np.float32), int(main.common.outputCount), info)
        if q_in is None or q_out is None or codes_alpha is None:
            continue
        codes, alpha = codes_alpha
        quan = fb.IDSTQuanT()
        quan.buffer, quan.shapeInt32 = idst_buffer(codes)
        quan.alpha, quan.type, quan.quantScale, quan.aMaxOrBits, quan.aMin, quan.readType = alpha, 1, 1.0, 8, 0, 0
        quan.scaleIn, quan.scaleOut = q_in[0], q_out[0]
        sym = fb.QuantizedFloatParamT()
        sym.nbits, sym.clampMin, sym.clampMax, sym.outputDataType = 8, -128, 127, DT_INT8
        main.quanParameter, main.symmetricQuan, main.weight = quan, sym, None
        if main.bias is None:
            main.bias = np.zeros(len(alpha), np.float32)
        quant[i], quant[o] = q_in, q_out
        count += 1
    _set_quant_info(net, quant if count else {})
    return count


def _weight_codes(weight: np.ndarray, oc: int, info: QdqInfo) -> tuple[np.ndarray, np.ndarray] | None:
    """int8 codes [oc, rest] and per-output-channel scales of a folded weight (stored as in ONNX, or transposed as
    MNN stores a MatMul / Gemm transB=0 weight); None when the weight was not int8 or its scales vary along rest."""
    if weight.size % max(oc, 1):
        return None
    rows = weight.reshape(oc, -1)
    for onnx_layout, back in ((rows, lambda a: a.reshape(oc, -1)), (rows.T.copy(), lambda a: a.reshape(-1, oc).T)):
        hit = info.weights.get(np.ascontiguousarray(onnx_layout, np.float32).tobytes())
        if hit is None:
            continue
        codes, scale = back(hit[0]), back(hit[1])
        if not np.all(scale == scale[:, :1]):
            return None
        return np.ascontiguousarray(codes, np.int8), scale[:, 0].astype(np.float32)
    return None


def _set_quant_info(net: Any, quant: dict[int, tuple[float, int]]) -> None:
    from mnnpy.quant.model import DT_INT8

    by_index = {int(d.index): d for d in net.extraTensorDescribe or []}
    for index, (scale, zero) in sorted(quant.items()):
        d = by_index.get(index)
        if d is None:
            d = by_index[index] = fb.TensorDescribeT()
            d.index = index
        q = fb.TensorQuantInfoT()
        q.scale, q.zero, q.min, q.max, q.type = float(scale), float(zero), -128.0, 127.0, DT_INT8
        d.quantInfo = q
    net.extraTensorDescribe = sorted(by_index.values(), key=lambda d: int(d.index)) or None
