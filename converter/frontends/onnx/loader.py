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
from .functions import UseFunctionBody, expand_node
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


def _value_infos(model: Any, graph: Any = None) -> tuple[dict[str, list[int | None]], dict[str, int]]:
    shapes: dict[str, list[int | None]] = {}
    dtypes: dict[str, int] = {}
    graph = model.graph if graph is None else graph
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


def _type_map(onnx: Any, model: Any) -> dict[str, Any]:
    graph = model.graph
    types = {info.name: info.type for info in list(graph.value_info) + list(graph.input) + list(graph.output)}
    for init in graph.initializer:
        types.setdefault(init.name, onnx.helper.make_tensor_type_proto(init.data_type, list(init.dims)))
    return types


def _is_supported(node: Any, opset: int) -> bool:
    return node.domain in ("", "ai.onnx") and lookup(node.op_type, opset) is not None


def _expand_once(onnx: Any, model: Any, opset: int, round_: int, missing: dict[str, list[str]]) -> bool:
    """Replace each unsupported op that has an ONNX function body by its body; record the others. True if changed."""
    types = _type_map(onnx, _infer(onnx, model))
    result: list[Any] = []
    changed = False
    for i, node in enumerate(model.graph.node):
        if _is_supported(node, opset):
            result.append(node)
            continue
        input_types = [types.get(name, onnx.TypeProto()) for name in node.input]
        body = expand_node(onnx, node, opset, input_types, f"{node.name or node.op_type}_{round_}_{i}__")
        if body is None:
            label = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
            missing.setdefault(label, []).append(node.name or f"#{i}")
            result.append(node)
            continue
        result.extend(body)
        changed = True
    del model.graph.node[:]
    model.graph.node.extend(result)
    return changed


def _infer(onnx: Any, model: Any) -> Any:
    with contextlib.suppress(Exception):  # shape inference is best effort; conversion works without it
        return onnx.shape_inference.infer_shapes(model)
    return model


def _convert_node(ctx: Context, onnx: Any, proto: Any, index: int, depth: int = 0) -> None:
    source_name = proto.name or f"{proto.op_type}_{index}"
    name = next((out for out in proto.output if out), source_name)
    node = OnnxNode(name, proto.op_type, list(proto.input), list(proto.output), proto.domain, source_name)
    fn = lookup(proto.op_type, ctx.opset)
    if fn is None:
        raise ConvertError(f"{node.label()}: unsupported ONNX op at opset {ctx.opset}")
    attrs = _attributes(proto, onnx)
    names, has_var = _accepts(fn)
    unknown = set(attrs) - names
    try:
        if unknown and not has_var:
            raise UseFunctionBody(f"{node.label()}: unsupported attribute(s) {sorted(unknown)}")
        fn(ctx, node, **attrs)
    except UseFunctionBody as exc:
        types = [onnx.helper.make_tensor_type_proto(ctx.dtypes.get(name, 1), ctx.shape(name)) for name in proto.input]
        body = expand_node(onnx, proto, ctx.opset, types, f"{source_name}__fn_") if depth < 8 else None
        if body is None:
            raise ConvertError(str(exc)) from None
        for i, inner in enumerate(body):
            _convert_node(ctx, onnx, inner, i, depth + 1)


def convert_nodes(ctx: Context, nodes: list[Any]) -> None:
    """Convert ONNX NodeProtos built by a converter function (a rewrite into other ONNX ops)."""
    onnx = _import_onnx()
    for i, proto in enumerate(nodes):
        _convert_node(ctx, onnx, proto, i)


def convert_subgraph(ctx: Context, graph: Any, prefix: str, bindings: dict[str, str] | None = None) -> list[str]:
    """Convert a control-flow body's nodes into the main graph (tensors renamed with `prefix`; outer-scope names
    kept; body inputs named in `bindings` read those tensors instead); returns the body's output names."""
    onnx = _import_onnx()
    bindings = bindings or {}
    internal = {init.name for init in graph.initializer} | {i.name for i in graph.input}
    internal |= {out for node in graph.node for out in node.output if out}

    outer = ctx.scope  # names of the enclosing bodies, as they were renamed there

    def rename(name: str) -> str:
        if name in bindings:
            return bindings[name]
        return prefix + name if name in internal else outer.get(name, name)

    for init in graph.initializer:
        ctx.graph.constants[rename(init.name)] = _to_numpy(onnx, init)
    shapes, dtypes = _value_infos(None, graph)
    ctx.shapes.update({rename(k): v for k, v in shapes.items()})
    ctx.dtypes.update({rename(k): v for k, v in dtypes.items()})
    ctx.graph.reserve([prefix + name for name in internal])
    ctx.scope = {**outer, **{name: rename(name) for name in internal}}  # nested bodies may read this body's tensors
    try:
        for i, node in enumerate(graph.node):
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            copy.name = prefix + (node.name or f"{node.op_type}_{i}")
            del copy.input[:]
            del copy.output[:]
            copy.input.extend(rename(n) if n else "" for n in node.input)
            copy.output.extend(rename(n) if n else "" for n in node.output)
            _convert_node(ctx, onnx, copy, i)
    finally:
        ctx.scope = outer
    return [rename(out.name) for out in graph.output]


def load_onnx(source: str | Path | Any, progress: Any = None) -> Graph:
    """Convert an ONNX model (path or ModelProto) into a Graph of MNN ops.

    Mirrors MNNConvert's ONNX frontend (`tools/converter/source/onnx`). Ops without a converter function are
    replaced by their ONNX function body when they have one. Raises ConvertError listing every unsupported op type,
    with node names and the opset, before converting anything. `progress` (a `converter.progress.Progress`) advances
    once per source node.
    """
    onnx = _import_onnx()
    model = onnx.load(str(source)) if isinstance(source, (str, Path)) else source
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    missing: dict[str, list[str]] = {}
    if not all(_is_supported(node, opset) for node in model.graph.node):
        expanded = onnx.ModelProto()
        expanded.CopyFrom(model)
        for round_ in range(8):  # nested function bodies need the types of the previous round's tensors
            missing.clear()
            if not _expand_once(onnx, expanded, opset, round_, missing):
                break
        if missing:
            lines = [f"  {op}: {', '.join(names)}" for op, names in sorted(missing.items())]
            raise ConvertError(f"{len(missing)} unsupported ONNX op type(s) at opset {opset}:\n" + "\n".join(lines))
        model = expanded
    model = _infer(onnx, model)
    shapes, dtypes = _value_infos(model)
    graph = Graph()
    for info in list(model.graph.input) + list(model.graph.output):
        kind = info.type.WhichOneof("value")
        if kind not in (None, "tensor_type"):  # sequences, optionals, maps: MNN's graph inputs and outputs are tensors
            raise ConvertError(f"graph {'input' if info in model.graph.input else 'output'} '{info.name}' has an "
                               f"ONNX {kind.replace('_type', '')} type: only tensors are supported")
    for init in model.graph.initializer:
        graph.constants[init.name] = _to_numpy(onnx, init)
    for inp in model.graph.input:
        if inp.name in graph.constants:
            continue
        shape = [-1 if d is None else d for d in shapes.get(inp.name, [])]
        elem = dtypes.get(inp.name, 1)
        dtype = ONNX_TO_MNN_DTYPE.get(elem, fb.DataType.DT_FLOAT)
        if dtype in (fb.DataType.DT_BOOL, fb.DataType.DT_INT8, fb.DataType.DT_UINT8):
            dtype = fb.DataType.DT_INT32  # MNN's int8/uint8 tensors are for quantized kernels only
        graph.inputs[inp.name] = InputSpec(shape, dtype)
    graph.outputs = [out.name for out in model.graph.output]
    graph.ranks = {name: len(shape) for name, shape in shapes.items()}
    ctx = Context(graph, opset, shapes, dtypes)
    graph.reserve([name for proto in model.graph.node for name in list(proto.output) + list(proto.input)])
    problems: list[str] = []
    for i, proto in enumerate(model.graph.node):
        try:
            _convert_node(ctx, onnx, proto, i)
        except ConvertError as exc:  # keep going so one error lists every node MNN cannot take
            problems.append(str(exc))
        if progress is not None:
            progress.update()
    if len(problems) == 1:
        raise ConvertError(problems[0])
    if problems:
        raise ConvertError(f"{len(problems)} ONNX nodes cannot be converted (opset {opset}):\n" +
                           "\n".join(f"  {p}" for p in problems))
    return graph


def _to_numpy(onnx: Any, tensor: Any) -> np.ndarray:
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        raise ConvertError(f"initializer '{tensor.name}' uses external data; load the model with its data first")
    return onnx.numpy_helper.to_array(tensor)
