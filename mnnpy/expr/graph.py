"""The expression graph and its evaluation through the core (MNN: `Expr` + `Executor`).

A `Node` is either a leaf (a constant holding a numpy array, or a placeholder/input) or an MNN op (`fb.OpT` with
its parameters, input Vars and a number of outputs). Evaluating Vars turns the subgraph into an in-memory
`fb.NetT` and runs it through a core `Session` (shape inference, constant folding, geometry, schedule, CPU
backend). Placeholders, and constants of at least FEED_MIN elements whose values no shape depends on, become Input
tensors written at run time; smaller constants are baked into the net. Sessions are cached by graph structure, leaf
shapes/dtypes and the baked constants' contents: a second evaluation of an unchanged graph (or of the same graph on
new data) only writes the inputs and runs (see `COUNTERS`).
"""

from __future__ import annotations

import copy
import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mnnpy.expr.enums import MNN_OF_NP
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

if TYPE_CHECKING:
    from mnnpy.core.session import Session
    from mnnpy.expr.var import Var

CONST = "const"
INPUT = "input"
OP = "op"
# plans: Sessions created (graph structure or shapes new); runs: evaluations; hits: plan-cache hits
COUNTERS: dict[str, int] = {"plans": 0, "runs": 0, "hits": 0}
CACHE_SIZE = 64
_EPOCH = [0]  # bumped when a graph is rewired in place (replace / fix_as_*), invalidating cached results
_FORMAT_CODE = {"NCHW": 0, "NHWC": 1, "NC4HW4": 2}
_OP_NAMES = {v: k for k, v in vars(fb.OpType).items() if not k.startswith("_")}


class Node:
    """One expression (MNN: `Expr`): a constant, a placeholder or an op with input Vars."""

    __slots__ = ("_digest", "_key", "dtypes", "fmt", "inputs", "kind", "n_out", "name", "op", "shape", "value",
                 "version")

    def __init__(self, kind: str, op: Any = None, inputs: list[Var] | None = None, n_out: int = 1,
                 value: np.ndarray | None = None, shape: tuple[int, ...] = (), fmt: str = "NCHW",
                 dtypes: list[np.dtype] | None = None, name: str = "") -> None:
        self.kind = kind
        self.op = op
        self.inputs = list(inputs or [])
        self.n_out = n_out
        self.value: Any = value
        self.shape = tuple(shape)
        self.fmt = fmt
        self.dtypes: Any = dtypes  # None: unknown until shape inference (ops loaded from a model)
        self.name = name
        self.version = 0
        self._digest: bytes | None = None
        self._key: Any = None

    def op_key(self) -> Any:
        """Plan-cache key of the op (type + parameters), computed once: parameters are never mutated."""
        if self._key is None:
            self._key = op_key(self.op)
        return self._key

    def digest(self) -> bytes:
        """Hash of a constant's contents (cached until the value changes)."""
        if self._digest is None:
            h = hashlib.blake2b(digest_size=16)
            h.update(np.ascontiguousarray(self.value).tobytes())
            self._digest = h.digest()
        return self._digest

    def set_value(self, value: np.ndarray) -> None:
        """Store a new leaf value and invalidate everything computed from it."""
        self.value = value
        self.shape = tuple(value.shape)
        self.dtypes = [value.dtype]
        self.version += 1
        self._digest = None

    def become(self, other: Node) -> None:
        """Take over another node's contents in place (MNN: `Expr::replace`), so dependents see the change."""
        for slot in ("kind", "op", "inputs", "n_out", "value", "shape", "fmt", "dtypes", "name"):
            setattr(self, slot, getattr(other, slot))
        self.version += 1
        self._digest = None
        self._key = None
        _EPOCH[0] += 1


def param_key(obj: Any) -> Any:
    """A hashable description of an object-API parameter table (arrays by content)."""
    if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        return obj
    if isinstance(obj, np.ndarray):
        return (obj.dtype.str, obj.shape, hashlib.blake2b(obj.tobytes(), digest_size=16).digest())
    if isinstance(obj, (list, tuple)):
        return tuple(param_key(v) for v in obj)
    if isinstance(obj, np.generic):
        return obj.item()
    return (type(obj).__name__, tuple((k, param_key(v)) for k, v in sorted(vars(obj).items())))


def op_key(op: Any) -> Any:
    """Key of an op for the plan cache (type + parameters)."""
    return (int(op.type), int(op.mainType or 0), param_key(op.main))


def topo(outputs: list[Var]) -> list[Node]:
    """Nodes the outputs depend on, inputs first (iterative post-order)."""
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(v.node, False) for v in reversed(outputs)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for v in reversed(node.inputs):
            if id(v.node) not in seen:
                stack.append((v.node, False))
    return order


def stamp(nodes: list[Node]) -> tuple:
    """What a cached result depends on: the rewiring epoch and every leaf's version."""
    return (_EPOCH[0], tuple((id(n), n.version) for n in nodes if n.kind != OP))


@dataclass
class Plan:
    """A planned net: the core Session plus where leaves and outputs live in its tensor table."""

    session: Session
    input_tensors: list[int]  # tensor index per fed leaf (placeholder or fed constant), in node order
    output_tensors: list[int]


_PLANS: OrderedDict[Any, Plan] = OrderedDict()


FEED_MIN = 64  # constants at least this big are fed at run time, so new data reuses the plan


def fed_constants(nodes: list[Node]) -> set[int]:
    """Constants passed as run-time inputs instead of baked into the net (ids of their nodes).

    Big constants are fed, except where a shape function reads their values (Reshape's shape, Interp's sizes, ...):
    the plan then depends on constant shapes only, and a numpy-style script running on new data re-plans nothing.
    """
    from mnnpy.core import registry

    registry.load_core()
    value_inputs: set[int] = set()
    for n in reversed(nodes):  # consumers first, so value needs propagate to everything upstream
        if n.kind != OP:
            continue
        if id(n) in value_inputs:
            value_inputs.update(id(v.node) for v in n.inputs)
            continue
        entry = registry.SHAPES.get(int(n.op.type))
        for k in entry.needs_values if entry is not None else ():
            if k < len(n.inputs):
                value_inputs.add(id(n.inputs[k].node))
    # NHWC / NC4HW4 constants are always fed: the core's Const op ignores the Blob's dataFormat (reads it as NCHW)
    return {id(n) for n in nodes if n.kind == CONST and (n.value.size >= FEED_MIN or n.fmt != "NCHW")
            and id(n) not in value_inputs}


def _structure(nodes: list[Node], outputs: list[Var], fed: set[int]) -> Any:
    pos = {id(n): i for i, n in enumerate(nodes)}
    parts: list[Any] = []
    for n in nodes:
        if id(n) in fed:
            parts.append(("F", n.value.dtype.str, n.value.shape, n.fmt))
        elif n.kind == CONST:
            parts.append(("C", n.value.dtype.str, n.value.shape, n.digest()))
        elif n.kind == INPUT:
            parts.append(("I", np.dtype(n.dtypes[0]).str, n.shape, n.fmt))
        else:
            parts.append(("O", n.op_key(), n.n_out, tuple((pos[id(v.node)], v.index) for v in n.inputs)))
    return (tuple(parts), tuple((pos[id(v.node)], v.index) for v in outputs))


def _blob(value: np.ndarray, fmt: str) -> Any:
    b = fb.BlobT()
    b.dims = list(value.shape)
    b.dataFormat = _FORMAT_CODE.get(fmt, 0)
    dt = value.dtype
    b.dataType = MNN_OF_NP.get(dt, 1)
    flat = value.ravel()
    if dt.kind == "f":
        b.dataType = 1
        b.float32s = flat.astype(np.float32)
    elif dt == np.uint8:
        b.uint8s = flat
    elif dt == np.int8:
        b.int8s = flat
    else:
        b.dataType = 3
        b.int32s = flat.astype(np.int32)
    return b


def build_net(nodes: list[Node], outputs: list[Var], fed: set[int] | None = None) -> tuple[Any, list[int], list[int]]:
    """An `fb.NetT` for the nodes (leaves as Const / Input ops); returns it, fed-leaf and output tensors.

    Placeholders and the constants in `fed` become Input ops, in node order.
    """
    fed = fed or set()
    net = fb.NetT()
    net.oplists = []
    net.tensorName = []
    first: dict[int, int] = {}
    inputs: list[int] = []
    for i, n in enumerate(nodes):
        first[id(n)] = len(net.tensorName)
        net.tensorName.extend(f"t{i}" if n.n_out == 1 else f"t{i}:{k}" for k in range(n.n_out))
        op = fb.OpT()
        op.name = n.name or f"e{i}"
        op.outputIndexes = [first[id(n)] + k for k in range(n.n_out)]
        if n.kind == CONST and id(n) not in fed:
            op.type, op.mainType, op.main = fb.OpType.Const, fb.OpParameter.Blob, _blob(n.value, n.fmt)
            op.inputIndexes = []
        elif n.kind in (INPUT, CONST):
            p = fb.InputT()
            p.dims = list(n.shape)
            p.dtype = MNN_OF_NP.get(np.dtype(n.dtypes[0]), 1)
            p.dformat = _FORMAT_CODE.get(n.fmt, 0)
            op.type, op.mainType, op.main = fb.OpType.Input, fb.OpParameter.Input, p
            op.inputIndexes = []
            inputs.append(first[id(n)])
        else:
            src = n.op
            op.type, op.mainType, op.main = src.type, src.mainType, src.main
            op.defaultDimentionFormat = src.defaultDimentionFormat
            op.inputIndexes = [first[id(v.node)] + v.index for v in n.inputs]
        net.oplists.append(op)
    outs = [first[id(v.node)] + v.index for v in outputs]
    net.outputName = [net.tensorName[o] for o in outs]
    return net, inputs, outs


def plan(outputs: list[Var], nodes: list[Node] | None = None, fed: set[int] | None = None) -> Plan:
    """The cached (or newly created) Session that computes `outputs` (MNN: `Executor::makeCache`)."""
    from mnnpy.core.session import Session

    nodes = topo(outputs) if nodes is None else nodes
    fed = fed_constants(nodes) if fed is None else fed
    key = _structure(nodes, outputs, fed)
    found = _PLANS.get(key)
    if found is not None:
        _PLANS.move_to_end(key)
        COUNTERS["hits"] += 1
        return found
    net, inputs, outs = build_net(nodes, outputs, fed)
    session = Session(net, dict(CONFIG))
    result = Plan(session, inputs, outs)
    COUNTERS["plans"] += 1
    _PLANS[key] = result
    while len(_PLANS) > CACHE_SIZE:
        _PLANS.popitem(last=False)
    return result


# the schedule config of expression sessions (MNN: the global Executor's backend config)
CONFIG: dict[str, Any] = {"backend": "CPU", "numThread": 1, "precision": "normal"}


def set_thread_number(n: int) -> None:
    """Threads for expression sessions; planned nets are dropped (MNN: `expr.set_thread_number`)."""
    configure(numThread=max(1, int(n)))


def configure(**changes: Any) -> None:
    """Change the expression session config (backend, numThread, precision) and drop the planned nets."""
    if any(CONFIG.get(k) != v for k, v in changes.items()):
        CONFIG.update(changes)
        clear_cache()


def clear_cache() -> None:
    """Forget every planned net (MNN: `expr.gc`)."""
    _PLANS.clear()


def evaluate(outputs: list[Var]) -> list[np.ndarray]:
    """Compute Vars through the core: plan (or reuse), write placeholders, run, read outputs."""
    nodes = topo(outputs)
    fed = fed_constants(nodes)
    p = plan(outputs, nodes, fed)
    leaves = [n for n in nodes if n.kind == INPUT or id(n) in fed]
    for n, idx in zip(leaves, p.input_tensors, strict=True):
        if n.value is None:
            raise ModelError(f"placeholder {n.name or '<unnamed>'} {list(n.shape)} has no value: write() it first")
        p.session.write(idx, n.value)
    p.session.run()
    COUNTERS["runs"] += 1
    return [np.array(p.session.read(i)) for i in p.output_tensors]


def describe(var: Var) -> tuple[tuple[int, ...], np.dtype, str]:
    """Shape, dtype and format of a Var as the core's shape inference sees them (plans if needed)."""
    node = var.node
    if node.kind != OP:
        return node.shape, node.dtypes[0], node.fmt
    p = plan([var])
    desc = p.session.graph.descs[p.output_tensors[0]]
    fmt = desc.fmt
    if node.op.type == fb.OpType.ConvertTensor and p.output_tensors[0] in p.session.graph.values:
        fmt = ("NCHW", "NHWC", "NC4HW4")[node.op.main.dest]  # constant folding reports folded values as NCHW
    return desc.shape, desc.dtype, fmt


def op_type_name(t: int) -> str:
    """MNN's OpType name."""
    return _OP_NAMES.get(int(t), f"OpType{t}")


def make_op(op_type: int, main_type: int = 0, main: Any = None, name: str = "") -> Any:
    """An `fb.OpT` without tensor indices (they are assigned per built net)."""
    op = fb.OpT()
    op.type = op_type
    op.mainType = main_type
    op.main = main
    op.name = name
    op.defaultDimentionFormat = fb.MNN_DATA_FORMAT.NCHW
    return op


def copy_op(op: Any) -> Any:
    """A shallow copy of an OpT (parameters shared, they are never mutated)."""
    return copy.copy(op)
