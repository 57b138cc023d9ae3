"""Control flow: If (taken branch, both branches + Select, or MNN's If op), Scan unrolled over a static length, Loop
unrolled when its trip count is a small constant, else MNN's While op in its ONNX Loop form."""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..bodies import convert_body, convert_loop_body, if_param, typed_loop_body
from ..context import OP, PARAM, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op
from .scan_loop import scan_as_loop


def _static(ctx: Context, name: str) -> bool:
    shape = ctx.shape(name)
    return shape is not None and all(d is not None and d >= 0 for d in shape)


def _branch_shapes(branch: Any) -> list[list[int] | None]:
    """Each branch output's shape as the branch graph declares it (None when it declares none or a dim is unknown)."""
    shapes = []
    for out in branch.output:
        t = out.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim] if t.HasField("shape") else None
        shapes.append(dims if dims is not None and None not in dims else None)
    return shapes


def _same_branch_shapes(then_branch: Any, else_branch: Any) -> bool:
    """Whether both branches declare the same static shape for every output: only then can both run, the result
    picked by a Select (the If's own declared output shape does not say what the branch not taken computes)."""
    a, b = _branch_shapes(then_branch), _branch_shapes(else_branch)
    return all(x is not None and x == y for x, y in zip(a, b, strict=True))


@onnx_op("If")
def if_op(ctx: Context, node: OnnxNode, *, then_branch: Any = None, else_branch: Any = None) -> None:
    """If -> a constant condition keeps only the taken branch; outputs of static shapes: both branches inlined, then
    Select(cond, then_out, else_out) per output (exact for side-effect-free branches); otherwise MNN's If op with
    both branches as subgraphs, so only the taken one runs (branches may differ in shape, or fail on the other's).
    """
    from ..loader import convert_subgraph

    cond = node.inputs[0]
    value = ctx.value(cond)
    if value is not None:
        taken = then_branch if bool(np.asarray(value).ravel()[0]) else else_branch
        outs = convert_subgraph(ctx, taken, f"{node.name}__then__")
        for src, dst in zip(outs, node.outputs, strict=True):
            ctx.alias(src, dst)
        return
    if not all(_static(ctx, out) for out in node.outputs) or not _same_branch_shapes(then_branch, else_branch):
        # branches may differ in shape (or fail on the other's inputs): run only the taken one
        then = convert_body(ctx, then_branch, f"{node.name}__then__", f"{node.name}/then")
        other = convert_body(ctx, else_branch, f"{node.name}__else__", f"{node.name}/else")
        inputs = list(dict.fromkeys(then.inputs + other.inputs))
        ctx.emit(OP.If, [cond, *inputs], list(node.outputs), PARAM.IfParam, if_param(then, other, inputs),
                 name=node.name, default_format=fb.MNN_DATA_FORMAT.NCHW)
        return
    then_outs = convert_subgraph(ctx, then_branch, f"{node.name}__then__")
    else_outs = convert_subgraph(ctx, else_branch, f"{node.name}__else__")
    for a, b, dst in zip(then_outs, else_outs, node.outputs, strict=True):
        ctx.emit(OP.Select, [cond, a, b], [dst])


def _slices(ctx: Context, x: str, axis: int, count: int) -> list[str]:
    """x split into `count` unit slices along `axis`, each with that axis squeezed away."""
    if count == 1:
        return [ctx.squeeze(x, [axis])]
    param = fb.SliceT()
    param.axis = axis
    param.sourceType = fb.NetSource.TORCH
    parts = [ctx.graph.unique_name(f"{x}_t{t}") for t in range(count)]
    ctx.emit(OP.Slice, [x], parts, PARAM.Slice, param)
    return [ctx.squeeze(p, [axis]) for p in parts]


def _stack(ctx: Context, parts: list[str], axis: int, output: str) -> None:
    expanded = [ctx.squeeze(p, [axis], unsqueeze=True) for p in parts]
    if len(expanded) == 1:
        ctx.alias(expanded[0], output)
        return
    param = fb.AxisT()
    param.axis = axis
    ctx.emit(OP.Concat, expanded, [output], PARAM.Axis, param)


SCAN_UNROLL_LIMIT = 64  # longer (or run-time) sequences run as a While instead of being unrolled


@onnx_op("Scan", since=9)
def scan(ctx: Context, node: OnnxNode, *, body: Any = None, num_scan_inputs: int = 0,
         scan_input_axes: list[int] | None = None, scan_input_directions: list[int] | None = None,
         scan_output_axes: list[int] | None = None, scan_output_directions: list[int] | None = None) -> None:
    """Scan -> the body converted once per step (static sequence length up to UNROLL_LIMIT), states threaded, outputs
    stacked; otherwise an ONNX Loop around the body (`scan_loop`), i.e. MNN's While."""
    n_state = len(node.inputs) - num_scan_inputs
    scan_ins = node.inputs[n_state:]
    in_axes = scan_input_axes or [0] * num_scan_inputs
    in_dirs = scan_input_directions or [0] * num_scan_inputs
    n_scan_out = len(body.output) - n_state
    out_axes = scan_output_axes or [0] * n_scan_out
    out_dirs = scan_output_directions or [0] * n_scan_out
    lengths = set()
    for name, axis in zip(scan_ins, in_axes, strict=True):
        shape = ctx.shape(name)
        lengths.add(None if shape is None or shape[axis] is None else int(shape[axis]))
    if None in lengths or len(lengths) != 1 or lengths.pop() > SCAN_UNROLL_LIMIT:
        scan_as_loop(ctx, node, body, n_state, in_axes, in_dirs, out_axes, out_dirs)
        return
    steps = int(ctx.shape(scan_ins[0])[in_axes[0]])
    states, collected = _scan_steps(ctx, node, node.name, body, list(node.inputs[:n_state]), scan_ins, in_axes,
                                    in_dirs, n_scan_out, steps)
    for k in range(n_state):
        if k < len(node.outputs) and node.outputs[k]:
            ctx.alias(states[k], node.outputs[k])
    for k in range(n_scan_out):
        target = node.outputs[n_state + k] if n_state + k < len(node.outputs) else ""
        if target:
            parts = collected[k][::-1] if out_dirs[k] else collected[k]
            _stack(ctx, parts, out_axes[k], target)


def _scan_steps(ctx: Context, node: OnnxNode, prefix: str, body: Any, states: list[str], scan_ins: list[str],
                in_axes: list[int], in_dirs: list[int], n_scan_out: int, steps: int
                ) -> tuple[list[str], list[list[str]]]:
    """The body converted once per step over `steps` slices of the scan inputs, states threaded: (final states,
    per scan output its per-step values in step order)."""
    from ..loader import convert_subgraph

    sliced = []
    for name, axis, direction in zip(scan_ins, in_axes, in_dirs, strict=True):
        parts = _slices(ctx, name, axis % max(ctx.need_rank(node, name), 1), steps)
        sliced.append(parts[::-1] if direction else parts)
    body_inputs = [i.name for i in body.input]
    n_state = len(states)
    collected: list[list[str]] = [[] for _ in range(n_scan_out)]
    for t in range(steps):
        bindings = dict(zip(body_inputs, states + [parts[t] for parts in sliced], strict=True))
        outs = convert_subgraph(ctx, body, f"{prefix}__step{t}__", bindings)
        states = outs[:n_state]
        for k, value in enumerate(outs[n_state:]):
            collected[k].append(value)
    return states, collected


@onnx_op("Scan", since=8)
def scan_v8(ctx: Context, node: OnnxNode, *, body: Any = None, num_scan_inputs: int = 0,
            directions: list[int] | None = None) -> None:
    """Scan-8 (a leading batch axis on every state and scan input, time on axis 1, optional sequence_lens) -> the
    opset-9 unrolling per batch entry, results stacked over the batch. Needs static shapes and no sequence_lens."""
    if node.input(0):
        raise UseFunctionBody(f"{node.label()}: Scan-8's sequence_lens is not supported")
    n_state = len(node.inputs) - 1 - num_scan_inputs
    states_in, scan_ins = list(node.inputs[1:1 + n_state]), list(node.inputs[1 + n_state:])
    shapes = [ctx.shape(name) for name in states_in + scan_ins]
    if num_scan_inputs < 1 or any(sh is None or None in sh or len(sh) < 1 for sh in shapes) \
            or len({sh[0] for sh in shapes}) != 1 or len({ctx.shape(x)[1] for x in scan_ins}) != 1 \
            or int(ctx.shape(scan_ins[0])[1]) > SCAN_UNROLL_LIMIT:
        raise UseFunctionBody(f"{node.label()}: Scan-8 needs static shapes, one batch size and at most "
                              f"{SCAN_UNROLL_LIMIT} steps")
    batch, steps = int(shapes[0][0]), int(ctx.shape(scan_ins[0])[1])
    n_scan_out = len(body.output) - n_state
    dirs = list(directions or [0] * num_scan_inputs)
    finals: list[list[str]] = [[] for _ in range(n_state)]
    stacked: list[list[str]] = [[] for _ in range(n_scan_out)]
    axis = ctx.const(np.int32(0), "axis")
    for b in range(batch):
        index = ctx.const(np.int32(b), "batch")
        entry = []
        for name in states_in + scan_ins:
            part = ctx.out(OP.GatherV2, [name, index, axis], name="GatherV2")
            ctx.shapes[part] = list(ctx.shape(name)[1:])
            entry.append(part)
        states, collected = _scan_steps(ctx, node, f"{node.name}__b{b}", body, entry[:n_state], entry[n_state:],
                                        [0] * num_scan_inputs, dirs, n_scan_out, steps)
        for k in range(n_state):
            finals[k].append(states[k])
        for k in range(n_scan_out):
            out = ctx.graph.unique_name(f"{node.name}__b{b}_out{k}")
            _stack(ctx, collected[k], 0, out)
            stacked[k].append(out)
    for k, parts in enumerate(finals + stacked):
        if k < len(node.outputs) and node.outputs[k]:
            _stack(ctx, parts, 0, node.outputs[k])


UNROLL_LIMIT = 16  # Loops with a constant trip count up to this are unrolled (official MNN's Session runs them)


def _always_true(body: Any) -> bool:
    """The body's condition output is its condition input passed through (maybe via Identity) or a constant true."""
    produced = {out: node for node in body.node for out in node.output}
    name, cond_in = body.output[0].name, body.input[1].name
    inits = {init.name: init for init in body.initializer}
    for _ in range(len(body.node) + 1):
        if name == cond_in:
            return True
        if name in inits:
            return bool(np.asarray(onnx_array(inits[name])).all())
        node = produced.get(name)
        if node is None or node.op_type not in ("Identity", "Constant"):
            return False
        if node.op_type == "Constant":
            value = next((a.t for a in node.attribute if a.name == "value"), None)
            return value is not None and bool(np.asarray(onnx_array(value)).all())
        name = node.input[0]
    return False


def onnx_array(tensor: Any) -> np.ndarray:
    """A TensorProto as numpy."""
    from onnx import numpy_helper

    return numpy_helper.to_array(tensor)


def _unroll(ctx: Context, node: OnnxNode, body: Any, trips: int) -> None:
    """The body converted once per iteration (i a constant), carried values threaded, scan outputs stacked."""
    from ..loader import convert_subgraph

    formal = [i.name for i in body.input]
    n_carried = len(formal) - 2
    carried = list(node.inputs[2:])
    cond = node.input(1) or ctx.const(np.array(True))
    scans: list[list[str]] = [[] for _ in range(len(body.output) - 1 - n_carried)]
    for t in range(trips):
        bindings = dict(zip(formal, [ctx.const(np.array(t, np.int64), "loop_i"), cond, *carried], strict=True))
        outs = convert_subgraph(ctx, body, f"{node.name}__iter{t}__", bindings)
        carried = outs[1: 1 + n_carried]
        for k, value in enumerate(outs[1 + n_carried:]):
            scans[k].append(value)
    for k, target in enumerate(node.outputs[:n_carried]):
        if target:
            ctx.alias(carried[k], target)
    for k, target in enumerate(node.outputs[n_carried:]):
        if target:
            _stack(ctx, scans[k], 0, target)


@onnx_op("Loop")
def loop(ctx: Context, node: OnnxNode, *, body: Any = None) -> None:
    """Loop -> unrolled when M is a constant <= UNROLL_LIMIT, cond constant true and the body never stops early;
    otherwise MNN's While op with the body as subgraph in MNN's ONNX Loop form (`LoopOnnx.cpp`): inputs (M, cond,
    carried..., outer values...), outputs (carried..., outer values..., scans...); M absent = 2^30, cond absent = 1.
    """
    trips, cond = ctx.value(node.input(0)), ctx.value(node.input(1))
    if (trips is not None and 0 < int(np.asarray(trips).ravel()[0]) <= UNROLL_LIMIT and len(body.output) > 0
            and (not node.input(1) or (cond is not None and bool(np.asarray(cond).all()))) and _always_true(body)):
        _unroll(ctx, node, typed_loop_body(ctx, body, list(node.inputs[2:])), int(np.asarray(trips).ravel()[0]))
        return
    n_carried = len(body.input) - 2
    body = typed_loop_body(ctx, body, list(node.inputs[2:]))
    name = f"{node.name}/Loop"
    sub = convert_loop_body(ctx, body, f"{node.name}__body__", f"{name}/body")
    limit = node.input(0) or ctx.const(np.array(1 << 30, np.int32), f"{node.name}_maxInt")
    keep = node.input(1) or ctx.const(np.array(1, np.int32), f"{node.name}_oneInt")
    outputs = [out or ctx.graph.unique_name(f"{name}_unused") for out in node.outputs]
    extra = [ctx.graph.unique_name(f"{name}_extra_unused_{t}") for t in sub.inputs]
    param = fb.WhileParamT()
    param.bodyGraph = sub.name
    ctx.emit(OP.While, [limit, keep, *node.inputs[2:], *sub.inputs],
             outputs[:n_carried] + extra + outputs[n_carried:], PARAM.WhileParam, param, name=name,
             default_format=fb.MNN_DATA_FORMAT.NCHW)
