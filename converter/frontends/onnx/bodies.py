"""Control-flow bodies as MNN subgraphs (`SubGraphProto`), as MNNConvert writes an ONNX If.

A branch is converted into a `Graph` of its own. The tensors it reads from enclosing scopes become its inputs (under
their outer names, which the If op's `aliasesInputs` name); outer constants are copied in. The body runs through
the pass pipeline and is written as a subgraph; bodies nested in it travel up to the top-level net.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mnnpy.schema import mnn_generated as fb

from ...graph import InputSpec
from .context import ONNX_TO_MNN_DTYPE, Context


@dataclass
class Body:
    """A converted body: its subgraph name, the outer tensors it reads (in order) and its output tensor names."""

    name: str
    inputs: list[str]
    outputs: list[str]


def _free_inputs(graph: Any, outputs: list[str]) -> list[str]:
    produced = {out for node in graph.nodes for out in node.outputs}
    wanted = [name for node in graph.nodes for name in node.inputs] + outputs
    return list(dict.fromkeys(n for n in wanted if n and n not in produced and n not in graph.constants))


def convert_body(ctx: Context, proto: Any, prefix: str, name: str) -> Body:
    """Convert ONNX graph `proto` (a branch) into subgraph `name`, stored in `ctx.graph.subgraphs`."""
    from ...passes import run_pipeline
    from ...writer import graph_to_net
    from .loader import convert_subgraph

    body = ctx.graph.child()
    sub = Context(body, ctx.opset, ctx.shapes, ctx.dtypes)
    sub.scope, sub.outer = ctx.scope, ctx
    outputs = convert_subgraph(sub, proto, prefix)
    inputs = _free_inputs(body, outputs)
    for tensor in inputs:
        shape = ctx.shape(tensor)
        dims = [-1] if shape is None else [-1 if d is None else int(d) for d in shape]
        dtype = ONNX_TO_MNN_DTYPE.get(ctx.dtypes.get(tensor, 1), fb.DataType.DT_FLOAT)
        if dtype in (fb.DataType.DT_BOOL, fb.DataType.DT_INT8, fb.DataType.DT_UINT8):
            dtype = fb.DataType.DT_INT32
        body.inputs[tensor] = InputSpec(dims, dtype)
    body.outputs = list(outputs)
    run_pipeline(body)
    net = graph_to_net(body)
    index = {tensor: i for i, tensor in enumerate(net.tensorName)}
    sg = fb.SubGraphProtoT()
    sg.name = name
    sg.tensors = list(net.tensorName)
    sg.nodes = list(net.oplists)
    sg.inputs = [index[tensor] for tensor in inputs]
    sg.outputs = [index[tensor] for tensor in body.outputs]
    ctx.graph.subgraphs.extend(body.subgraphs)
    ctx.graph.subgraphs.append(sg)
    return Body(name, inputs, list(body.outputs))


def _names(names: list[str] | None) -> Any:
    vec = fb.StringVecT()
    vec.data = names
    return vec


def if_param(then: Body, other: Body, inputs: list[str]) -> Any:
    """MNN's IfParam: per op input (the condition first) the body tensors it feeds, per output [then, else]."""
    param = fb.IfParamT()
    param.thenGraph, param.elseGraph = then.name, other.name
    param.aliasesInputs = [_names(None)] + [_names([tensor]) for tensor in inputs]
    param.aliasesOutputs = [_names([a, b]) for a, b in zip(then.outputs, other.outputs, strict=True)]
    return param
