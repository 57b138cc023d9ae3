"""Loading and saving expression graphs as `.mnn` nets (MNN: `expr.load_as_dict`, `expr.save`)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from mnnpy.core.pipeline import blob_value
from mnnpy.expr import graph
from mnnpy.expr.graph import CONST, INPUT, OP, Node
from mnnpy.expr.var import Var
from mnnpy.schema import load_net, save_net
from mnnpy.schema import mnn_generated as fb

_FMT = {0: "NCHW", 1: "NHWC", 2: "NC4HW4", 3: "NHWC", 4: "NCHW"}


def _vars_of(path: str | os.PathLike) -> tuple[list[Var | None], list[str]]:
    net = load_net(os.fspath(path))
    names = [str(n) for n in (net.tensorName or [])]
    tensors: list[Var | None] = [None] * len(names)
    for op in net.oplists or []:
        outs = [int(i) for i in (op.outputIndexes if op.outputIndexes is not None else [])]
        ins = [int(i) for i in (op.inputIndexes if op.inputIndexes is not None else [])]
        name = str(op.name or "")
        if op.type == fb.OpType.Input:
            p = op.main
            dims = [1 if int(d) < 0 else int(d) for d in (p.dims if p.dims is not None else [])]
            node = Node(INPUT, shape=tuple(dims), fmt=_FMT.get(p.dformat, "NCHW"),
                        dtypes=[np.dtype(np.float32) if p.dtype == 1 else _np(p.dtype)], name=names[outs[0]])
        elif op.type == fb.OpType.Const:
            value = blob_value(op.main)
            node = Node(CONST, value=value, shape=value.shape, dtypes=[value.dtype],
                        fmt=_FMT.get(op.main.dataFormat, "NCHW"), name=names[outs[0]])
        else:
            missing = [names[i] for i in ins if tensors[i] is None]
            if missing:
                raise ValueError(f"op {name!r} reads tensors no op produced: {missing}")
            srcs = [t for t in (tensors[i] for i in ins) if t is not None]
            node = Node(OP, graph.copy_op(op), [Var(t.node, t.index) for t in srcs], len(outs), dtypes=None,
                        name=name)
        for k, t in enumerate(outs):
            tensors[t] = Var(node, k)
    return tensors, names


def _np(mnn_dtype: int) -> np.dtype:
    from mnnpy.core.shape._util import np_dtype

    return np_dtype(mnn_dtype)


def load_as_dict(fileName: str | os.PathLike) -> dict[str, Var]:  # noqa: N803 - MNN's name
    """Every tensor of a `.mnn` file as a Var by name: inputs are placeholders (MNN: `expr.load_as_dict`)."""
    tensors, names = _vars_of(fileName)
    return {n: v for n, v in zip(names, tensors, strict=True) if v is not None}


def load_as_list(fileName: str | os.PathLike) -> list[Var]:  # noqa: N803 - MNN's name
    """The Vars of a `.mnn` file's outputs (tensors no op reads) (MNN: `expr.load_as_list`)."""
    _, outputs = get_inputs_and_outputs(load_as_dict(fileName))
    return list(outputs.values())


def get_inputs_and_outputs(var_dict: dict[str, Var]) -> tuple[dict[str, Var], dict[str, Var]]:
    """Split a load_as_dict result into placeholders and outputs (no consumers) (MNN: same name)."""
    used: set[int] = set()
    for v in var_dict.values():
        used.update(id(i.node) for i in v.node.inputs)
    inputs = {k: v for k, v in var_dict.items() if v.node.kind == INPUT}
    outputs = {k: v for k, v in var_dict.items() if v.node.kind == OP and id(v.node) not in used}
    return inputs, outputs


def save(vars: Sequence[Var], fileName: str | os.PathLike, forInference: bool = True) -> None:  # noqa: N803
    """Write the graph computing `vars` as a `.mnn` file, outputs named after the Vars (MNN: `expr.save`)."""
    outs = list(vars)
    nodes = graph.topo(outs)
    net, _, out_idx = graph.build_net(nodes, outs)
    for k, n in enumerate(nodes):
        if n.name:
            first = net.oplists[k].outputIndexes[0]
            for j in range(n.n_out):
                net.tensorName[first + j] = n.name if n.n_out == 1 else f"{n.name}:{j}"
    if len(set(net.tensorName)) != len(net.tensorName):
        raise ValueError("save(): two Vars share a name")
    net.outputName = [net.tensorName[i] for i in out_idx]
    net.bizCode = "MNN"
    net.sourceType = fb.NetSource.ONNX
    net.extraInfo = fb.ExtraInfoT()
    net.extraInfo.version = "3.6.1"
    save_net(net, os.fspath(fileName))
