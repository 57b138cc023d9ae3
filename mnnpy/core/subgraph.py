"""Control-flow bodies (MNN: `SubGraphProto` run by While/If) as nets of their own, run by nested Sessions."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.core.ir import NCHW, TensorDesc
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


def while_session(op: Any, in_descs: list[TensorDesc], config: dict[str, Any] | None = None,
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
    if len(net.body_inputs) != len(in_descs):
        raise ModelError(f"op {op.name!r}: body takes {len(net.body_inputs)} inputs, the op has {len(in_descs)}")
    values = in_values or [None] * len(in_descs)
    net.const_inputs = set()
    for k in range(2, len(in_descs)):
        idx = net.body_inputs[k]
        passthrough = k - 1 < len(net.body_outputs) and net.body_outputs[k - 1] == idx
        if passthrough and values[k] is not None:
            net.oplists = [o for o in net.oplists if not (o.type == fb.OpType.Input and idx in o.outputIndexes)]
            net.oplists.insert(0, _const_op(idx, np.asarray(values[k]), net.tensorName[idx]))
            net.const_inputs.add(idx)
    i32 = np.dtype(np.int32)
    shapes: dict[int, TensorDesc] = {net.body_inputs[0]: TensorDesc((), i32), net.body_inputs[1]: TensorDesc((), i32)}
    shapes.update({i: d.with_(fmt=NCHW) for i, d in zip(net.body_inputs[2:], in_descs[2:], strict=True)})
    return Session(net, {**(config or {}), "backend": "CPU", "outputPaths": []}, shapes)


def _names(vec: Any) -> list[str]:
    data = getattr(vec, "data", None) or []
    return [d.decode() if isinstance(d, bytes) else str(d) for d in data]


def if_branch_session(op: Any, branch: int, in_descs: list[TensorDesc],
                      in_values: list[np.ndarray | None], config: dict[str, Any] | None = None) -> tuple[Any, dict]:
    """A Session of one If branch (0 = then, 1 = else) and the map op input position -> body tensor index.

    MNN's IfParam names, per op input, the body inputs it feeds (`aliasesInputs`) and, per op output, the
    [then, else] body tensors that produce it (`aliasesOutputs`).
    """
    from mnnpy.core.session import Session

    p = op.main
    net = body_net(op, p.thenGraph if branch == 0 else p.elseGraph)
    outs = [_names(v) for v in (p.aliasesOutputs or [])]
    net.outputName = [o[branch] if len(o) > branch else o[0] for o in outs]
    feeds: dict[int, list[int]] = {}
    for k, vec in enumerate(p.aliasesInputs or []):
        feeds[k] = [net.tensorName.index(n) for n in _names(vec) if n in net.tensorName]
    shapes, net.const_inputs = {}, set()
    for k, idxs in feeds.items():
        for idx in idxs:
            if in_values[k] is not None:
                net.oplists = [o for o in net.oplists if not (o.type == fb.OpType.Input and idx in o.outputIndexes)]
                net.oplists.insert(0, _const_op(idx, np.asarray(in_values[k]), net.tensorName[idx]))
                net.const_inputs.add(idx)
            else:
                shapes[idx] = in_descs[k].with_(fmt=NCHW)
    return Session(net, {**(config or {}), "backend": "CPU", "outputPaths": []}, shapes), feeds
