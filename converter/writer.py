"""Graph IR -> `fb.NetT` (MNN's Net): Input ops, Const ops next to their first reader, ops in topological order."""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from .graph import ConvertError, Graph, Node

MNN_VERSION = "3.6.1"

_BLOB_FIELDS: dict[Any, tuple[int, str, Any]] = {
    np.dtype(np.float32): (fb.DataType.DT_FLOAT, "float32s", np.float32),
    np.dtype(np.int32): (fb.DataType.DT_INT32, "int32s", np.int32),
    np.dtype(np.int64): (fb.DataType.DT_INT32, "int32s", np.int32),
    np.dtype(np.bool_): (fb.DataType.DT_INT32, "int32s", np.int32),
    np.dtype(np.uint8): (fb.DataType.DT_UINT8, "uint8s", np.uint8),
    np.dtype(np.int8): (fb.DataType.DT_INT8, "int8s", np.int8),
    np.dtype(np.float64): (fb.DataType.DT_FLOAT, "float32s", np.float32),
    np.dtype(np.float16): (fb.DataType.DT_FLOAT, "float32s", np.float32),
}


def make_blob(arr: np.ndarray) -> fb.BlobT:
    """A Const payload as MNNConvert writes it: NCHW, int64/bool stored as int32, scalars without dims."""
    arr = np.asarray(arr)
    entry = _BLOB_FIELDS.get(arr.dtype)
    if entry is None:
        if arr.dtype.kind in "iu":
            entry = _BLOB_FIELDS[np.dtype(np.int32)]
        else:
            raise ConvertError(f"constant of dtype {arr.dtype} cannot be stored in a .mnn Blob")
    data_type, field, np_type = entry
    if np_type is np.int32 and arr.dtype.kind in "iu" and arr.dtype.itemsize >= 4:
        # MNN stores int64 as int32 clamped, as MNNConvert does: Slice ends of INT64_MAX must stay "to the end"
        # (a plain astype wraps them to -1)
        info = np.iinfo(np.int32)
        arr = np.clip(arr, info.min, info.max)
    blob = fb.BlobT()
    blob.dims = list(arr.shape) if arr.ndim else None
    blob.dataFormat = fb.MNN_DATA_FORMAT.NCHW
    blob.dataType = data_type
    setattr(blob, field, arr.astype(np_type).ravel())
    return blob


def _input_op(name: str, shape: list[int], dtype: int, dformat: int = fb.MNN_DATA_FORMAT.NCHW) -> fb.OpT:
    param = fb.InputT()
    param.dims = list(shape)
    param.dtype = dtype
    param.dformat = dformat
    op = fb.OpT()
    op.type = fb.OpType.Input
    op.name = name
    op.mainType = fb.OpParameter.Input
    op.main = param
    return op


def _op(node: Node, index: dict[str, int]) -> fb.OpT:
    op = fb.OpT()
    op.type = node.op_type
    op.name = node.name
    op.inputIndexes = [index[name] for name in node.inputs]
    op.outputIndexes = [index[name] for name in node.outputs]
    op.mainType = node.param_type
    op.main = node.param
    op.defaultDimentionFormat = node.default_format
    return op


def graph_to_net(graph: Graph, biz_code: str = "MNN", source_type: int = fb.NetSource.ONNX) -> fb.NetT:
    """Build the Net. Unused constants are dropped; every tensor read must be produced by something."""
    names: list[str] = []
    index: dict[str, int] = {}

    def tensor(name: str) -> int:
        if name not in index:
            index[name] = len(names)
            names.append(name)
        return index[name]

    ops: list[fb.OpT] = []

    def emit_const(name: str) -> None:
        const = fb.OpT()
        const.type = fb.OpType.Const
        const.name = name
        const.mainType = fb.OpParameter.Blob
        const.main = make_blob(graph.constants[name])
        const.outputIndexes = [tensor(name)]
        ops.append(const)
        produced.add(name)

    produced: set[str] = set(graph.inputs)
    for name, spec in graph.inputs.items():
        tensor(name)
        op = _input_op(name, spec.shape, spec.dtype, spec.dformat)
        op.outputIndexes = [index[name]]
        ops.append(op)
    for node in graph.topological_order():
        for name in node.inputs:
            if name in produced or not name:
                continue
            if name not in graph.constants:
                raise ConvertError(f"op '{node.name}' reads tensor '{name}' that nothing produces")
            emit_const(name)
        if "" in node.inputs:
            raise ConvertError(f"op '{node.name}' has an empty input name")
        for name in node.inputs + node.outputs:
            tensor(name)
        ops.append(_op(node, index))
        produced.update(node.outputs)
    for name in graph.outputs:
        if name not in produced:
            if name not in graph.constants:
                raise ConvertError(f"graph output '{name}' is not produced by any op")
            emit_const(name)  # a constant output is a Const op (MNN can return it like any tensor)
    net = fb.NetT()
    net.bizCode = biz_code
    net.extraInfo = fb.ExtraInfoT()
    net.extraInfo.version = MNN_VERSION
    net.oplists = ops
    net.outputName = list(graph.outputs)
    net.sourceType = source_type
    net.tensorName = names
    net.subgraphs = list(graph.subgraphs) or None
    return net
