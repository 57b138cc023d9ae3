"""ONNX ModelProto -> converter Graph: initializers become constants, nodes go through the registered op functions."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ...graph import ConvertError, Graph, InputSpec
from .context import ONNX_TO_MNN_DTYPE, Context, OnnxNode
from .registry import lookup


def _import_onnx() -> Any:
    try:
        import onnx
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConvertError("converting ONNX models needs the 'onnx' package (pip install onnx)") from exc
    return onnx


def _attributes(proto: Any, onnx: Any) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for attr in proto.attribute:
        value = onnx.helper.get_attribute_value(attr)
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode("utf-8") for v in value]
        elif attr.type == onnx.AttributeProto.TENSOR:
            value = onnx.numpy_helper.to_array(value)
        result[attr.name] = value
    return result


def _value_infos(model: Any) -> tuple[dict[str, list[int | None]], dict[str, int]]:
    shapes: dict[str, list[int | None]] = {}
    dtypes: dict[str, int] = {}
    graph = model.graph
    for info in list(graph.value_info) + list(graph.input) + list(graph.output):
        tensor_type = info.type.tensor_type
        if not info.type.HasField("tensor_type"):
            continue
        dtypes[info.name] = tensor_type.elem_type
        if tensor_type.HasField("shape"):
            shapes[info.name] = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim]
    return shapes, dtypes


def _accepts(fn: Callable[..., None]) -> tuple[set[str], bool]:
    params = inspect.signature(fn).parameters
    names = {p.name for p in params.values() if p.kind == inspect.Parameter.KEYWORD_ONLY}
    has_var = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())
    return names, has_var


def _check_supported(model: Any, opset: int) -> None:
    missing: dict[str, list[str]] = {}
    for i, node in enumerate(model.graph.node):
        if node.domain not in ("", "ai.onnx") or lookup(node.op_type, opset) is None:
            label = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
            missing.setdefault(label, []).append(node.name or f"#{i}")
    if missing:
        lines = [f"  {op}: {', '.join(names)}" for op, names in sorted(missing.items())]
        raise ConvertError(f"{len(missing)} unsupported ONNX op type(s) at opset {opset}:\n" + "\n".join(lines))


def load_onnx(source: str | Path | Any) -> Graph:
    """Convert an ONNX model (path or ModelProto) into a Graph of MNN ops.

    Mirrors MNNConvert's ONNX frontend (`tools/converter/source/onnx`). Raises ConvertError listing every
    unsupported op type, with node names and the opset, before converting anything.
    """
    onnx = _import_onnx()
    model = onnx.load(str(source)) if isinstance(source, (str, Path)) else source
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    _check_supported(model, opset)
    with contextlib.suppress(Exception):  # shape inference is best effort; conversion works without it
        model = onnx.shape_inference.infer_shapes(model)
    shapes, dtypes = _value_infos(model)
    graph = Graph()
    for init in model.graph.initializer:
        graph.constants[init.name] = _to_numpy(onnx, init)
    for inp in model.graph.input:
        if inp.name in graph.constants:
            continue
        shape = [-1 if d is None else d for d in shapes.get(inp.name, [])]
        elem = dtypes.get(inp.name, 1)
        dtype = ONNX_TO_MNN_DTYPE.get(elem, fb.DataType.DT_FLOAT)
        if dtype == fb.DataType.DT_BOOL:
            dtype = fb.DataType.DT_INT32
        graph.inputs[inp.name] = InputSpec(shape, dtype)
    graph.outputs = [out.name for out in model.graph.output]
    ctx = Context(graph, opset, shapes, dtypes)
    graph.reserve([name for proto in model.graph.node for name in list(proto.output) + list(proto.input)])
    for i, proto in enumerate(model.graph.node):
        source_name = proto.name or f"{proto.op_type}_{i}"
        name = next((out for out in proto.output if out), source_name)
        node = OnnxNode(name, proto.op_type, list(proto.input), list(proto.output), proto.domain, source_name)
        fn = lookup(proto.op_type, opset)
        assert fn is not None
        attrs = _attributes(proto, onnx)
        names, has_var = _accepts(fn)
        unknown = set(attrs) - names
        if unknown and not has_var:
            raise ConvertError(f"{node.label()}: unsupported attribute(s) {sorted(unknown)}")
        fn(ctx, node, **attrs)
    for name in graph.outputs:
        graph.unique_name(name)
    return graph


def _to_numpy(onnx: Any, tensor: Any) -> np.ndarray:
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        raise ConvertError(f"initializer '{tensor.name}' uses external data; load the model with its data first")
    return onnx.numpy_helper.to_array(tensor)
