"""Frozen TF GraphDef -> converter Graph, without TensorFlow: parsed with our own compiled proto subset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...graph import ConvertError, Graph, normalize_const
from . import edges
from . import tf_graph_pb2 as pb
from .context import Context, TfNode, tensor_key
from .registry import lookup

# TF DataType -> numpy dtype of its values.
NP_DTYPES: dict[int, Any] = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8,
                             9: np.int64, 10: np.bool_, 17: np.uint16, 19: np.float16, 22: np.uint32, 23: np.uint64}
# Ops that are dropped (no data outputs) or never graph outputs.
_SKIP = {"NoOp", "Assert", "SaveV2", "RestoreV2"}
_NOT_OUTPUTS = {"Const", "Placeholder", "NoOp", "Assert"}


def tensor_to_numpy(proto: Any) -> np.ndarray:
    """Decode a TensorProto (tensor_content or the typed *_val fields) into a numpy array."""
    dtype = NP_DTYPES.get(proto.dtype)
    if proto.dtype == pb.DT_STRING:  # Assert messages and the like: kept as objects, refused only if used
        shape = [int(d.size) for d in proto.tensor_shape.dim]
        return np.asarray(list(proto.string_val), dtype=object).reshape(shape if proto.string_val else [0])
    if dtype is None:
        raise ConvertError(f"constant of TF dtype {pb.DataType.Name(proto.dtype)} is not supported")
    shape = [int(d.size) for d in proto.tensor_shape.dim]
    count = int(np.prod(shape)) if shape else 1
    if proto.tensor_content:
        return np.frombuffer(proto.tensor_content, dtype).reshape(shape).copy()
    if proto.dtype == pb.DT_HALF:
        values = np.asarray(proto.half_val, np.uint16).view(np.float16)
    else:
        field = {1: "float_val", 2: "double_val", 9: "int64_val", 10: "bool_val", 22: "uint32_val",
                 23: "uint64_val"}.get(proto.dtype, "int_val")
        values = np.asarray(getattr(proto, field)).astype(dtype)
    if values.size == count:
        return values.reshape(shape)
    fill = values[-1] if values.size else dtype(0)
    result = np.full(count, fill, dtype)
    result[:values.size] = values
    return result.reshape(shape)


def _shape(proto: Any) -> list[int] | None:
    if proto.unknown_rank:
        return None
    return [int(d.size) for d in proto.dim]


def attr_value(value: Any) -> Any:
    """Decode an AttrValue into a Python value (bytes as str, shapes as lists, tensors as numpy)."""
    kind = value.WhichOneof("value")
    if kind == "s":
        return value.s.decode("utf-8", errors="replace")
    if kind == "shape":
        return _shape(value.shape)
    if kind == "tensor":
        return tensor_to_numpy(value.tensor)
    if kind == "list":
        lst = value.list
        for name in ("s", "i", "f", "b", "type", "shape", "tensor"):
            items = getattr(lst, name)
            if len(items):
                if name == "s":
                    return [item.decode("utf-8", errors="replace") for item in items]
                if name == "shape":
                    return [_shape(item) for item in items]
                if name == "tensor":
                    return [tensor_to_numpy(item) for item in items]
                return list(items)
        return []
    if kind is None:
        return None
    return getattr(value, kind)


def read_graph_def(source: str | Path | bytes | Any) -> Any:
    """A GraphDef message from a .pb path, its bytes, or a message (ours or TensorFlow's)."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_file():
            raise ConvertError(f"model file not found: {path}")
        source = path.read_bytes()
    graph_def = pb.GraphDef()
    if isinstance(source, (bytes, bytearray)):
        try:
            graph_def.ParseFromString(bytes(source))
        except Exception as exc:  # protobuf raises DecodeError (a Message error) on malformed bytes
            raise ConvertError(f"not a TensorFlow GraphDef: {exc}") from None
        return graph_def
    if isinstance(source, pb.GraphDef):
        return source
    graph_def.ParseFromString(source.SerializeToString())  # TensorFlow's own GraphDef message: same wire format
    return graph_def


def _needed(nodes: dict[str, TfNode], outputs: list[str]) -> list[TfNode]:
    """Nodes the outputs depend on, in topological order."""
    order: list[TfNode] = []
    state: dict[str, int] = {}
    for root in outputs:
        stack: list[tuple[str, bool]] = [(root.split(":")[0], False)]
        while stack:
            name, done = stack.pop()
            if done:
                state[name] = 2
                order.append(nodes[name])
                continue
            if state.get(name):
                continue
            if name not in nodes:
                raise ConvertError(f"tensor '{name}' is read but no node produces it")
            state[name] = 1
            stack.append((name, True))
            for ref in reversed(nodes[name].inputs):
                dep = ref.split(":")[0]
                if state.get(dep) == 1:
                    raise ConvertError(f"the graph has a cycle through '{dep}' (control flow is not supported)")
                if not state.get(dep):
                    stack.append((dep, False))
    return order


def load_graph_def(source: str | Path | bytes | Any, outputs: list[str] | None = None,
                   input_shapes: dict[str, list[int]] | None = None) -> Graph:
    """Convert a frozen GraphDef into a Graph of MNN ops.

    Mirrors MNNConvert's TensorFlow frontend (`tools/converter/source/tensorflow`). `outputs` defaults to the nodes
    nothing reads; `input_shapes` overrides Placeholder shapes (NHWC, as in TF). Raises one ConvertError listing
    every unsupported op type with its nodes, before anything is built.
    """
    graph_def = read_graph_def(source)
    nodes: dict[str, TfNode] = {}
    for proto in graph_def.node:
        inputs = [tensor_key(ref) for ref in proto.input if not ref.startswith("^")]
        attrs = {key: attr_value(value) for key, value in proto.attr.items()}
        nodes[proto.name] = TfNode(proto.name, proto.op, inputs, attrs)
    if outputs is None:
        read = {ref.split(":")[0] for node in nodes.values() for ref in node.inputs}
        outputs = [name for name, node in nodes.items() if name not in read and node.op not in _NOT_OUTPUTS]
    outputs = [tensor_key(name) for name in outputs]
    if not outputs:
        raise ConvertError("the graph has no outputs")
    order = [node for node in _needed(nodes, outputs) if node.op not in _SKIP]
    missing: dict[str, list[str]] = {}
    for node in order:
        if node.op not in ("Const", "Placeholder") and lookup(node.op) is None:
            missing.setdefault(node.op, []).append(node.name)
    if missing:
        lines = [f"  {op}: {', '.join(names)}" for op, names in sorted(missing.items())]
        raise ConvertError(f"{len(missing)} unsupported TensorFlow op type(s):\n" + "\n".join(lines))
    graph = Graph()
    graph.reserve([key for node in nodes.values() for key in (node.name, node.name + "__nchw")])
    ctx = Context(graph)
    for node in order:
        for key in node.inputs:
            ctx.readers[key] = ctx.readers.get(key, 0) + 1
    for key in outputs:
        ctx.readers[key] = ctx.readers.get(key, 0) + 1
    for node in order:
        if node.op == "Const":
            value = node.attr("value")
            if np.asarray(value).dtype == object:
                raise ConvertError(f"{node.label()}: string constants are not supported")
            graph.constants[node.name] = normalize_const(np.asarray(value))
            ctx.set_out(node.name, node.name)
        elif node.op == "Placeholder":
            edges.placeholder(ctx, node, (input_shapes or {}).get(node.name))
        else:
            handler = lookup(node.op)
            assert handler is not None
            handler(ctx, node)
    for key in outputs:
        if ctx.value(key) is not None:
            raise ConvertError(f"output '{key}' is a constant; MNN models cannot output constants")
    for key in outputs:
        edges.output(ctx, key)
    graph.outputs = list(outputs)
    return graph
