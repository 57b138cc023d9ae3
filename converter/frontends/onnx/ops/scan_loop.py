"""Scan over a sequence whose length is only known at run time, rewritten as an ONNX Loop (then MNN's While).

The Loop runs M = shape(first scan input)[axis] iterations; its body gathers element i (or M-1-i for a reversed
input) of every scan input, runs the Scan body and stacks the scan outputs on axis 0, which a Slice (reversed
output) and a Transpose (other output axis) then move into place. The rewrite is ONNX nodes converted as usual.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context, OnnxNode
from ..functions import UseFunctionBody


def _axis(ctx: Context, node: OnnxNode, name: str, axis: int, extra: int = 0) -> int:
    if axis >= 0:
        return axis
    rank = ctx.rank(name)
    if rank is None:
        raise UseFunctionBody(f"{node.label()}: a negative scan axis needs the rank of '{name}'")
    return axis + rank + extra


def scan_as_loop(ctx: Context, node: OnnxNode, body: Any, n_state: int, in_axes: list[int], in_dirs: list[int],
                 out_axes: list[int], out_dirs: list[int]) -> None:
    """Convert Scan `node` as an ONNX Loop built around its body."""
    import onnx
    from onnx import helper

    from ..loader import convert_nodes

    p = f"{node.name}__scanloop_"
    scan_ins = node.inputs[n_state:]
    axes = [_axis(ctx, node, name, a) for name, a in zip(scan_ins, in_axes, strict=True)]
    length = p + "M"
    nodes = [helper.make_node("Shape", [scan_ins[0]], [p + "shape"]),
             helper.make_node("Gather", [p + "shape", ctx.const(np.array(axes[0], np.int64), p + "axis")], [length],
                              axis=0)]
    last = p + "last"
    if any(in_dirs):
        nodes.append(helper.make_node("Sub", [length, ctx.const(np.array(1, np.int64), p + "one")], [last]))
    loop_body = onnx.GraphProto()
    loop_body.name = body.name + "_as_loop"
    it, cond = p + "i", p + "cond"
    loop_body.input.extend([helper.make_tensor_value_info(it, onnx.TensorProto.INT64, []),
                            helper.make_tensor_value_info(cond, onnx.TensorProto.BOOL, [])])
    loop_body.input.extend(body.input[:n_state])
    inner = []
    for k, (name, axis, direction) in enumerate(zip(scan_ins, axes, in_dirs, strict=True)):
        index = it
        if direction:
            index = p + f"rev{k}"
            inner.append(helper.make_node("Sub", [last, it], [index]))
        inner.append(helper.make_node("Gather", [name, index], [body.input[n_state + k].name], axis=axis))
    inner.append(helper.make_node("Identity", [cond], [p + "cond_out"]))
    loop_body.node.extend(inner + list(body.node))
    loop_body.initializer.extend(body.initializer)
    loop_body.value_info.extend(body.value_info)
    loop_body.output.extend([helper.make_tensor_value_info(p + "cond_out", onnx.TensorProto.BOOL, [])])
    loop_body.output.extend(body.output)
    n_scan_out = len(body.output) - n_state
    outputs = list(node.outputs) + [""] * (n_state + n_scan_out - len(node.outputs))
    stacked = [ctx.graph.unique_name(p + f"stacked{k}") if outputs[n_state + k] else "" for k in range(n_scan_out)]
    nodes.append(helper.make_node("Loop", [length, "", *node.inputs[:n_state]], outputs[:n_state] + stacked,
                                  name=node.name, body=loop_body))
    for k, target in enumerate(outputs[n_state:]):
        if not target:
            continue
        value = stacked[k]
        if out_dirs[k]:
            value = p + f"reversed{k}"
            nodes.append(helper.make_node("Slice", [stacked[k], *[ctx.const(np.array([v], np.int64)) for v in
                                                                  (-1, -(2**62), 0, -1)]], [value]))
        axis = _axis(ctx, node, target, out_axes[k])
        if axis == 0:
            nodes.append(helper.make_node("Identity", [value], [target]))
            continue
        rank = ctx.rank(target)
        if rank is None:
            raise UseFunctionBody(f"{node.label()}: scan output axis {out_axes[k]} needs the rank of '{target}'")
        perm = [*range(1, axis + 1), 0, *range(axis + 1, rank)]
        nodes.append(helper.make_node("Transpose", [value], [target], perm=perm))
    convert_nodes(ctx, nodes)
