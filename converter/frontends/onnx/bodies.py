"""Control-flow bodies as MNN subgraphs (`SubGraphProto`), as MNNConvert writes an ONNX If or Loop.

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


def _spec(ctx: Context, tensor: str) -> InputSpec:
    """How a body declares tensor `tensor` as an input: its known dims (-1 where unknown) and MNN dtype."""
    shape = ctx.shape(tensor)
    dims = [-1] if shape is None else [-1 if d is None else int(d) for d in shape]
    dtype = ONNX_TO_MNN_DTYPE.get(ctx.dtypes.get(tensor, 1), fb.DataType.DT_FLOAT)
    if dtype in (fb.DataType.DT_BOOL, fb.DataType.DT_INT8, fb.DataType.DT_UINT8):
        dtype = fb.DataType.DT_INT32
    return InputSpec(dims, dtype)


def _convert(ctx: Context, proto: Any, prefix: str) -> tuple[Any, list[str]]:
    from .loader import convert_subgraph

    body = ctx.graph.child()
    sub = Context(body, ctx.opset, ctx.shapes, ctx.dtypes)
    sub.scope, sub.outer = ctx.scope, ctx
    return body, convert_subgraph(sub, proto, prefix)


def _finish(ctx: Context, body: Any, name: str, inputs: list[str], outputs: list[str]) -> Body:
    """Declare the body's inputs and outputs, run the pass pipeline on it and store it as subgraph `name`."""
    from ...passes import run_pipeline
    from ...writer import graph_to_net

    for tensor in inputs:
        body.inputs[tensor] = _spec(ctx, tensor)
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


def convert_body(ctx: Context, proto: Any, prefix: str, name: str) -> Body:
    """Convert ONNX graph `proto` (a branch) into subgraph `name`, stored in `ctx.graph.subgraphs`."""
    body, outputs = _convert(ctx, proto, prefix)
    return _finish(ctx, body, name, _free_inputs(body, outputs), outputs)


def typed_loop_body(ctx: Context, proto: Any, carried: list[str]) -> Any:
    """A copy of Loop body `proto` with ONNX shape inference run inside it: body inputs without a type get i (int64
    scalar), cond (bool scalar) and, for carried values, the outer value's type with its rank (dims left unknown:
    they may change between iterations); outer-scope tensors the body reads are typed from the enclosing graph."""
    import onnx
    from onnx import helper

    typed = onnx.GraphProto()
    typed.CopyFrom(proto)
    for k, inp in enumerate(typed.input):
        tensor_type = inp.type.tensor_type
        if inp.type.HasField("tensor_type") and tensor_type.HasField("shape"):
            continue
        source = carried[k - 2] if k >= 2 and k - 2 < len(carried) else ""
        elem = (7, 9)[k] if k < 2 else (tensor_type.elem_type or ctx.dtypes.get(source, 1))
        rank = 0 if k < 2 else ctx.rank(source) if source else None
        if rank is not None:
            inp.type.CopyFrom(helper.make_tensor_type_proto(elem, [None] * rank))
    wrapper = onnx.GraphProto()
    wrapper.CopyFrom(typed)
    known = {i.name for i in typed.input} | {i.name for i in typed.initializer}
    known |= {out for node in typed.node for out in node.output}
    for name in dict.fromkeys(n for node in typed.node for n in node.input if n and n not in known):
        shape = ctx.shape(name)
        if shape is not None:
            wrapper.input.append(helper.make_tensor_value_info(name, ctx.dtypes.get(name, 1), shape))
    model = helper.make_model(wrapper, opset_imports=[helper.make_opsetid("", ctx.opset)])
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # inference is a best-effort hint; conversion reports what it then lacks
        return typed
    del typed.value_info[:]
    typed.value_info.extend(inferred.value_info)
    for out, done in zip(typed.output, inferred.output, strict=True):
        if not out.type.tensor_type.HasField("shape") and done.type.tensor_type.HasField("shape"):
            out.type.CopyFrom(done.type)
    return typed


def convert_loop_body(ctx: Context, proto: Any, prefix: str, name: str) -> Body:
    """Convert an ONNX Loop body into subgraph `name` in MNN's ONNX Loop form (`LoopOnnx.cpp`).

    Inputs: (i, cond, carried..., outer values...); outputs: (cond, carried..., outer values..., scans...): the
    outer-scope tensors the body reads are carried through unchanged. `Body.inputs` lists the outer values.
    """
    body, outputs = _convert(ctx, proto, prefix)
    formal = [prefix + inp.name for inp in proto.input]
    n_carried = len(formal) - 2
    outer = [t for t in _free_inputs(body, outputs) if t not in formal]
    for k, tensor in enumerate(formal[:2]):  # the iteration number and the condition are int32 scalars
        ctx.shapes[tensor], ctx.dtypes[tensor] = [], 6 if k == 0 else 9
    done = _finish(ctx, body, name, formal + outer,
                   outputs[: 1 + n_carried] + outer + outputs[1 + n_carried:])
    return Body(name, outer, done.outputs)


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
