"""Shapes of While (ONNX Loop form): loop-carried values keep their shapes; scan outputs stack per iteration."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.core.subgraph import while_session
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType


@shape_fn(OT.While, needs_values=(0,))
def while_(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    trips = int(np.asarray(values[0]).ravel()[0])
    if trips < 0:
        raise ModelError(f"op {op.name!r}: While needs a known trip count")
    body = while_session(op, descs, in_values=values)
    outs = [body.graph.descs[i] for i in body.graph.outputs]
    carried = len(descs) - 2
    result = [TensorDesc(d.shape, d.dtype, NCHW) for d in descs[2:]]
    result += [TensorDesc((trips, *d.shape), d.dtype, NCHW) for d in outs[1 + carried:]]
    return result


@shape_fn(OT.If)
def if_(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    from mnnpy.core.subgraph import if_branch_session

    branches = [0 if np.asarray(values[0]).ravel()[0] else 1] if values[0] is not None else [0, 1]
    results, errors = [], []
    for b in branches:
        try:
            body, _ = if_branch_session(op, b, descs, values)
        except ModelError as exc:  # a branch that cannot run for these shapes is only an error if it is taken
            errors.append(exc)
            continue
        results.append([body.graph.desc(i) for i in body.graph.outputs])
    if not results:
        raise errors[0]
    if len(results) == 2 and [d.shape for d in results[0]] != [d.shape for d in results[1]]:
        raise ModelError(f"op {op.name!r}: If branches give different shapes and the condition is not constant")
    return [TensorDesc(d.shape, d.dtype, NCHW) for d in results[0]]
