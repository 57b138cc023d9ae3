"""Expand ONNX ops that are defined as functions (RMSNormalization, Attention, losses, ...) into their body nodes.

Used for op types with no converter function, and when a converter function raises `UseFunctionBody` for an attribute
combination MNN has no direct op for (as onnx's reference evaluator falls back to function bodies).
"""

from __future__ import annotations

from typing import Any

from ...graph import ConvertError


class UseFunctionBody(ConvertError):  # noqa: N818 - a signal, not a failure, when the op has a function body
    """Raised by an op converter to ask the loader to convert the op's ONNX function body instead."""


def _function_proto(onnx: Any, node: Any, opset: int, input_types: list[Any]) -> Any | None:
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain or "")
    except Exception:
        return None
    plain = [v for v in schema.function_opset_versions if v <= opset]
    dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    data = None
    if plain:
        data = schema.get_function_with_opset_version(max(plain))
    elif dependent:
        try:
            data = schema.get_context_dependent_function_with_opset_version(
                max(dependent), node.SerializeToString(), [t.SerializeToString() for t in input_types])
        except Exception:
            return None
    if not data:
        return None
    function = onnx.FunctionProto()
    function.ParseFromString(data)
    return function if function.node else None


def _with_defaults(onnx: Any, node: Any, opset: int) -> dict[str, Any]:
    attrs = {a.name: a for a in node.attribute}
    schema = onnx.defs.get_schema(node.op_type, opset, node.domain or "")
    for name, spec in schema.attributes.items():
        if name not in attrs and spec.default_value is not None and spec.default_value.type:
            attrs[name] = spec.default_value
    return attrs


def _renamed_graph(onnx: Any, graph: Any, outer: Any) -> Any:
    """A copy of control-flow body `graph` whose reads of enclosing-scope tensors go through `outer` (recursively)."""
    copy = onnx.GraphProto()
    copy.CopyFrom(graph)
    local = {i.name for i in copy.input} | {i.name for i in copy.initializer}
    local |= {out for node in copy.node for out in node.output}

    def rename(name: str) -> str:
        return name if not name or name in local else outer(name)

    for node in copy.node:
        inputs = [rename(n) for n in node.input]
        del node.input[:]
        node.input.extend(inputs)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                attr.g.CopyFrom(_renamed_graph(onnx, attr.g, rename))
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    g.CopyFrom(_renamed_graph(onnx, g, rename))
    for out in copy.output:
        out.name = rename(out.name)
    return copy


def expand_node(onnx: Any, node: Any, opset: int, input_types: list[Any], prefix: str) -> list[Any] | None:
    """The function-body nodes of `node` with tensors renamed into the graph (inside control-flow bodies too), or None
    if it has no body."""
    function = _function_proto(onnx, node, opset, input_types)
    if function is None:
        return None
    names: dict[str, str] = {}
    for i, name in enumerate(function.input):
        names[name] = node.input[i] if i < len(node.input) else ""
    for i, name in enumerate(function.output):
        if i < len(node.output) and node.output[i]:
            names[name] = node.output[i]
    attrs = _with_defaults(onnx, node, opset)

    def rename(name: str) -> str:
        if name in names:
            return names[name]
        return prefix + name if name else ""

    result = []
    for inner in function.node:
        new = onnx.NodeProto()
        new.op_type = inner.op_type
        new.domain = inner.domain
        new.name = prefix + (inner.name or inner.op_type)
        new.input.extend(rename(n) for n in inner.input)
        new.output.extend(rename(n) for n in inner.output)
        for attr in inner.attribute:
            if attr.ref_attr_name:
                if attr.ref_attr_name not in attrs:
                    continue
                copy = onnx.AttributeProto()
                copy.CopyFrom(attrs[attr.ref_attr_name])
                copy.name = attr.name
                new.attribute.append(copy)
            elif attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                copy = onnx.AttributeProto()
                copy.CopyFrom(attr)
                if attr.type == onnx.AttributeProto.GRAPH:
                    copy.g.CopyFrom(_renamed_graph(onnx, attr.g, rename))
                for g in copy.graphs:
                    g.CopyFrom(_renamed_graph(onnx, g, rename))
                new.attribute.append(copy)
            else:
                new.attribute.append(attr)
        result.append(new)
    return result
