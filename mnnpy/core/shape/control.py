"""Shapes of While (ONNX Loop form): loop-carried values keep their shapes; scan outputs stack per iteration.

MNN's ONNX Loop form (`LoopOnnx.cpp` + `WhileModule`, no cond graph): op inputs (M, cond, carried..., outer
values...), body inputs (i, cond, carried..., outer values...), body outputs (cond, carried..., outer values...,
scans...), op outputs (carried..., outer values..., scans stacked on a new axis 0). The outer values are carried
through unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.core.subgraph import while_session
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType


def body_session(op: Any, descs: list[TensorDesc], config: dict[str, Any] | None, values: list) -> Any:
    """The While body's Session, resized for the first iteration (i = 0, cond and the known carried values given:
    a body whose shapes depend on i, e.g. a Slice at i, is planned for that iteration and replanned when i changes).
    """
    body = while_session(op, descs, config, values)
    if body.graph is None:
        first = [np.array(0, np.int32), np.array(1, np.int32), *values[2:]]
        for idx, v in zip(body.net.body_inputs, first, strict=True):
            if v is not None and idx not in body.net.const_inputs:
                body.write(idx, np.asarray(v))
        body.resize()
    return body


def run_while(op: Any, descs: list[TensorDesc], values: list, config: dict[str, Any] | None,
              sessions: dict[tuple, Any]) -> tuple[list[np.ndarray], list[list[np.ndarray]], int]:
    """Iterate a While body on concrete inputs: (final carried values, scan outputs per iteration, iterations).

    `sessions` caches body Sessions by the carried shapes (a carried value may change shape between iterations);
    `values` are the op's input values (the ones known before running decide which body inputs are constants).
    """
    trips = int(np.asarray(values[0]).ravel()[0])
    cond = int(np.asarray(values[1]).ravel()[0])
    carried = [np.asarray(v) for v in values[2:]]
    scans: list[list[np.ndarray]] = []
    step = 0
    while step < trips and cond:
        key = tuple(c.shape for c in carried)
        body = sessions.get(key)
        if body is None:
            shaped = [TensorDesc(c.shape, descs[2 + k].dtype, NCHW) for k, c in enumerate(carried)]
            body = sessions[key] = body_session(op, [*descs[:2], *shaped], config, values)
        feeds = [np.array(step, np.int32), np.array(cond, np.int32), *carried]
        for idx, v in zip(body.net.body_inputs, feeds, strict=True):
            if idx not in body.net.const_inputs:
                body.write(idx, np.asarray(v))
        body.run()
        outs = [np.array(body.read(i)) for i in body.graph.outputs]
        if len(outs) < 1 + len(carried):
            raise ModelError(f"op {op.name!r}: the While body gives {len(outs)} outputs, needs at least "
                             f"{1 + len(carried)} (cond and the carried values)")
        cond = int(outs[0].ravel()[0])
        carried = outs[1: 1 + len(carried)]
        scans.append(outs[1 + len(carried):])
        step += 1
    return carried, scans, step


def stack_scans(op: Any, scans: list[list[np.ndarray]], descs: list[TensorDesc]) -> list[np.ndarray]:
    """Scan outputs stacked on a new axis 0 (`descs`: the per-iteration ones, used when there was no iteration)."""
    result = []
    for k, desc in enumerate(descs):
        parts = [s[k] for s in scans]
        if any(p.shape != parts[0].shape for p in parts):
            raise ModelError(f"op {op.name!r}: scan output {k} changes shape between iterations "
                             f"({sorted({p.shape for p in parts})})")
        result.append(np.stack(parts) if parts else np.zeros((0, *desc.shape), desc.dtype))
    return result


@shape_fn(OT.While, needs_values=(0,))
def while_(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    trips = int(np.asarray(values[0]).ravel()[0])
    if trips < 0:
        raise ModelError(f"op {op.name!r}: While needs a known trip count")
    body = body_session(op, descs, None, values)
    outs = [body.graph.descs[i] for i in body.graph.outputs]
    carried = len(descs) - 2
    scan_descs = outs[1 + carried:]
    if all(v is not None for v in values):  # everything known: run it, so a loop ended by its condition (or with
        # carried values that change shape) gets its true output shapes
        final, scans, _ = run_while(op, descs, values, None, {tuple(d.shape for d in descs[2:]): body})
        stacked = stack_scans(op, scans, scan_descs)
        return ([TensorDesc(v.shape, d.dtype, NCHW) for v, d in zip(final, descs[2:], strict=True)]
                + [TensorDesc(v.shape, d.dtype, NCHW) for v, d in zip(stacked, scan_descs, strict=True)])
    if scan_descs and trips >= 1 << 30:
        raise ModelError(f"op {op.name!r}: a Loop without a trip count (M) that has scan outputs needs its inputs "
                         f"known before running (the number of iterations decides the output shape)")
    result = [TensorDesc(d.shape, d.dtype, NCHW) for d in descs[2:]]
    result += [TensorDesc((trips, *d.shape), d.dtype, NCHW) for d in scan_descs]
    return result


@shape_fn(OT.If)
def if_(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    from mnnpy.core.subgraph import if_branch_session

    branches = [0 if np.asarray(values[0]).ravel()[0] else 1] if values[0] is not None else [0, 1]
    results, errors = [], []
    for b in branches:
        try:
            body, _ = if_branch_session(op, b, descs, values)
            if body.graph is None:  # the branch could not be planned for these shapes (dynamic dims left)
                raise body.resize_error or ModelError(f"op {op.name!r}: If branch {b} cannot be planned")
        except ModelError as exc:  # a branch that cannot run for these shapes is only an error if it is taken
            errors.append(exc)
            continue
        results.append([body.graph.desc(i) for i in body.graph.outputs])
    if not results:
        raise errors[0]
    if len(results) == 2 and [d.shape for d in results[0]] != [d.shape for d in results[1]]:
        raise ModelError(f"op {op.name!r}: If branches give different shapes and the condition is not constant")
    return [TensorDesc(d.shape, d.dtype, NCHW) for d in results[0]]
