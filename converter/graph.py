"""Converter graph IR: tensors by name, nodes carrying an MNN op type and param object, constants as numpy.

Frontends build a `Graph`; passes rewrite it in place; `writer.graph_to_net` turns it into an `fb.NetT`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from mnnpy.schema import ModelError
from mnnpy.schema import mnn_generated as fb


class ConvertError(ModelError):
    """A model cannot be converted (unsupported ops, bad attributes, non-constant weights ...)."""


@dataclass
class Node:
    """One MNN op: `op_type` is an `fb.OpType` value, `param` an object-API table matching `param_type`."""

    name: str
    op_type: int
    inputs: list[str]
    outputs: list[str]
    param_type: int = 0
    param: Any = None
    default_format: int = fb.MNN_DATA_FORMAT.NHWC


@dataclass
class InputSpec:
    """A graph input: its shape (-1 for dynamic dims) and MNN data type."""

    shape: list[int]
    dtype: int = fb.DataType.DT_FLOAT
    dformat: int = fb.MNN_DATA_FORMAT.NCHW  # TF models declare NHWC inputs, as MNNConvert does


@dataclass
class Graph:
    """A model in MNN ops. Constant tensors live in `constants` (not as nodes) until the writer emits them."""

    nodes: list[Node] = field(default_factory=list)
    inputs: dict[str, InputSpec] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)  # static ranks known from the source model (hints)
    subgraphs: list[Any] = field(default_factory=list)  # finished control-flow bodies (fb.SubGraphProtoT), nested too
    _counter: itertools.count = field(default_factory=lambda: itertools.count(1), repr=False)
    _names: set[str] = field(default_factory=set, repr=False)

    def unique_name(self, base: str) -> str:
        """Return a tensor/op name starting with `base` that is not used yet in this graph."""
        if not self._names:
            self._refresh_names()
        name = base
        while name in self._names:
            name = f"{base}_{next(self._counter)}"
        self._names.add(name)
        return name

    def reserve(self, names: list[str]) -> None:
        """Mark names as taken (e.g. every tensor name of the source model) so generated names avoid them."""
        if not self._names:
            self._refresh_names()
        self._names.update(name for name in names if name)

    def _refresh_names(self) -> None:
        self._names.update(self.inputs, self.constants, self.outputs)
        for node in self.nodes:
            self._names.add(node.name)
            self._names.update(node.inputs)
            self._names.update(node.outputs)

    def child(self) -> Graph:
        """An empty graph for a control-flow body: it sees this graph's constants, and its generated names avoid every
        name taken here (a body reads outer tensors under their own names)."""
        if not self._names:
            self._refresh_names()
        body = Graph(constants=dict(self.constants), ranks=self.ranks)
        body._names = set(self._names)
        return body

    def add_const(self, value: Any, base: str = "Const", dtype: Any = None) -> str:
        """Store a constant (int64 narrowed to int32, float64 to float32) and return its tensor name."""
        arr = np.asarray(value, dtype=dtype)
        arr = normalize_const(arr)
        name = self.unique_name(base)
        self.constants[name] = arr
        return name

    def add(self, op_type: int, inputs: list[str], outputs: list[str] | None = None, param_type: int = 0,
            param: Any = None, name: str | None = None, **kwargs: Any) -> Node:
        """Append a node; missing output names are generated from the op type name."""
        label = op_type_name(op_type)
        if outputs is None:
            outputs = [self.unique_name(name or label)]
        else:
            for out in outputs:
                self._names.add(out)
        node = Node(name or outputs[0], op_type, list(inputs), list(outputs), param_type, param, **kwargs)
        self.nodes.append(node)
        return node

    def producers(self) -> dict[str, Node]:
        """Map tensor name -> the node producing it."""
        return {out: node for node in self.nodes for out in node.outputs}

    def consumers(self) -> dict[str, list[Node]]:
        """Map tensor name -> nodes reading it (a node reading a tensor twice appears once)."""
        result: dict[str, list[Node]] = {}
        for node in self.nodes:
            for name in dict.fromkeys(node.inputs):
                if name:
                    result.setdefault(name, []).append(node)
        return result

    def rename_input(self, old: str, new: str) -> None:
        """Make every reader of tensor `old` (and the graph outputs) read `new` instead."""
        for node in self.nodes:
            node.inputs = [new if name == old else name for name in node.inputs]
        self.outputs = [new if name == old else name for name in self.outputs]

    def topological_order(self) -> list[Node]:
        """Nodes sorted so each comes after the producers of its inputs (stable w.r.t. current order)."""
        producers = self.producers()
        done: set[int] = set()
        order: list[Node] = []
        visiting: set[int] = set()
        for root in self.nodes:
            stack: list[tuple[Node, bool]] = [(root, False)]
            while stack:
                node, expanded = stack.pop()
                key = id(node)
                if key in done:
                    continue
                if expanded:
                    visiting.discard(key)
                    done.add(key)
                    order.append(node)
                    continue
                if key in visiting:
                    raise ConvertError(f"graph has a cycle through op '{node.name}'")
                visiting.add(key)
                stack.append((node, True))
                for name in reversed(node.inputs):
                    dep = producers.get(name)
                    if dep is not None and id(dep) not in done:
                        stack.append((dep, False))
        return order


def normalize_const(arr: np.ndarray) -> np.ndarray:
    """Narrow a constant the way MNNConvert does: int64 -> int32 (saturating), float64 -> float32."""
    if arr.dtype == np.int64 or arr.dtype == np.uint64:
        info = np.iinfo(np.int32)
        return np.clip(arr, info.min, info.max).astype(np.int32)
    if arr.dtype in (np.float64, np.float16):
        return arr.astype(np.float32)
    if arr.dtype in (np.int16, np.uint16, np.uint32):
        return arr.astype(np.int32)
    return arr


_OP_NAMES: dict[int, str] = {}


def op_type_name(op_type: int) -> str:
    """Name of an `fb.OpType` value (e.g. 12 -> 'Convolution')."""
    if not _OP_NAMES:
        for key, value in vars(fb.OpType).items():
            if not key.startswith("_") and isinstance(value, int):
                _OP_NAMES.setdefault(value, key)
    return _OP_NAMES.get(op_type, f"Op{op_type}")
