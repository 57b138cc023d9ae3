"""Control-flow bodies (MNN: `SubGraphProto` run by While/If) as nets of their own, run by nested Sessions."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError


def body_net(op: Any, name: str) -> Any:
    """The named subgraph of a While/If op as an `fb.NetT` (inputs/outputs keep the subgraph's order)."""
    graphs = getattr(op, "subgraphs", None) or {}
    sg = graphs.get(str(name))
    if sg is None:
        raise ModelError(f"op {op.name!r}: subgraph {name!r} not found in the model")
    net = fb.NetT()
    net.oplists = list(sg.nodes or [])
    net.tensorName = [str(t) for t in (sg.tensors or [])]
    net.outputName = [net.tensorName[int(i)] for i in np.asarray(sg.outputs).ravel()]
    net.subgraphs = list(graphs.values())
    net.body_inputs = [int(i) for i in np.asarray(sg.inputs).ravel()]
    net.body_outputs = [int(i) for i in np.asarray(sg.outputs).ravel()]
    return net


def _const_op(name_index: int, value: np.ndarray, name: str) -> Any:
    blob = fb.BlobT()
    blob.dims = list(value.shape)
    blob.dataFormat = 0
    if value.dtype.kind == "f":
        blob.dataType, blob.float32s = 1, value.astype(np.float32).ravel()
    else:
        blob.dataType, blob.int32s = 3, value.astype(np.int32).ravel()
    op = fb.OpT()
    op.type, op.name, op.inputIndexes, op.outputIndexes = fb.OpType.Const, name, [], [name_index]
    op.mainType, op.main = fb.OpParameter.Blob, blob
    return op


def while_session(op: Any, in_shapes: list[tuple[int, ...]], config: dict[str, Any] | None = None,
                  in_values: list[np.ndarray | None] | None = None) -> Any:
    """A Session of a While op's body (ONNX Loop form: M, cond, carried...).

    Loop-carried inputs that the body passes through unchanged and whose value is known become constants of the
    body, so shape subgraphs inside it fold (MNN's converter passes the input shape this way).
    """
    from mnnpy.core.session import Session

    p = op.main
    if p is None or not p.bodyGraph:
        raise ModelError(f"op {op.name!r}: While without a body graph is not supported")
    net = body_net(op, p.bodyGraph)
    if len(net.body_inputs) != len(in_shapes):
        raise ModelError(f"op {op.name!r}: body takes {len(net.body_inputs)} inputs, the op has {len(in_shapes)}")
    values = in_values or [None] * len(in_shapes)
    net.const_inputs = set()
    for k in range(2, len(in_shapes)):
        idx = net.body_inputs[k]
        passthrough = k - 1 < len(net.body_outputs) and net.body_outputs[k - 1] == idx
        if passthrough and values[k] is not None:
            net.oplists = [o for o in net.oplists if not (o.type == fb.OpType.Input and idx in o.outputIndexes)]
            net.oplists.insert(0, _const_op(idx, np.asarray(values[k]), net.tensorName[idx]))
            net.const_inputs.add(idx)
    shapes = {net.body_inputs[0]: (), net.body_inputs[1]: ()}
    shapes.update({i: s for i, s in zip(net.body_inputs[2:], in_shapes[2:], strict=True)})
    return Session(net, {**(config or {}), "backend": "CPU", "outputPaths": []}, shapes)
