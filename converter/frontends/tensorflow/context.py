"""What a TensorFlow op converter sees: the node and a context that tracks each TF tensor's layouts.

TF feature maps are NHWC; MNN runs convolutions and pooling on NC4HW4 (logical NCHW). Every TF tensor may have two
graph tensors: its NHWC value (TF semantics, named as in the TF graph) and, for 4-D tensors, an NCHW copy. Ops that
MNN runs in NCHW space (conv, pooling, resize, batch norm) read the NCHW copy and produce only an NCHW result;
layout-agnostic ops (activations, per-channel arithmetic, concat on the channel axis, spatial padding and
reductions) stay in whichever layout their inputs already have; everything else reads the NHWC value. A Permute is
emitted only where a tensor is needed in a layout it does not have yet, so a chain of NCHW ops never goes back to
NHWC (MNNConvert's TF path gets the same effect from its layout-convert insertion). Graph inputs and outputs are
NHWC-format tensors, as MNNConvert declares them; `edges.py` converts them once at each end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ...graph import ConvertError, Graph
from ..context import EmitContext

OP = fb.OpType
PARAM = fb.OpParameter
BIN = fb.BinaryOpOperation
UN = fb.UnaryOpOperation
TO_NCHW = [0, 3, 1, 2]
TO_NHWC = [0, 2, 3, 1]

# TF DataType -> MNN DataType (MNN's enum is TF's; int64 is narrowed to int32, half/double computed in float).
TF_TO_MNN_DTYPE = {1: fb.DataType.DT_FLOAT, 2: fb.DataType.DT_FLOAT, 3: fb.DataType.DT_INT32,
                   4: fb.DataType.DT_UINT8, 5: fb.DataType.DT_INT32, 6: fb.DataType.DT_INT8,
                   9: fb.DataType.DT_INT32, 10: fb.DataType.DT_BOOL, 19: fb.DataType.DT_FLOAT,
                   17: fb.DataType.DT_INT32, 22: fb.DataType.DT_INT32, 14: fb.DataType.DT_FLOAT}

Shape = list[int | None]


def tensor_key(ref: str) -> str:
    """Normalise a NodeDef input reference: 'node:0' -> 'node', 'node:2' stays, control inputs are not tensors."""
    if ref.endswith(":0"):
        return ref[:-2]
    return ref


@dataclass
class TfNode:
    """One TF NodeDef with decoded attributes; `inputs` are tensor keys (control inputs removed)."""

    name: str
    op: str
    inputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)

    def output(self, i: int = 0) -> str:
        """Key of output `i` (the node name for output 0, 'name:i' otherwise)."""
        return self.name if i == 0 else f"{self.name}:{i}"

    def attr(self, key: str, default: Any = None) -> Any:
        """Attribute `key`, or `default` when absent."""
        return self.attrs.get(key, default)

    def label(self) -> str:
        """How error messages name this node."""
        return f"{self.op} '{self.name}'"


class Context(EmitContext):
    """Conversion state of one TF graph: layouts per TF tensor, static shapes where known, the Graph built.
    Reshapes are in TF (NHWC) order."""

    reshape_format = fb.MNN_DATA_FORMAT.NHWC

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.shapes: dict[str, Shape | None] = {}
        self.readers: dict[str, int] = {}
        self._nhwc: dict[str, str] = {}
        self._nchw: dict[str, str] = {}

    # *** values and shapes ***
    def value(self, key: str) -> np.ndarray | None:
        """Constant value of TF tensor `key` (TF layout), or None if it is computed at run time."""
        name = self._nhwc.get(key)
        return None if name is None else self.graph.constants.get(name)

    def need_value(self, node: TfNode, i: int, what: str) -> np.ndarray:
        """Constant input `i` of `node`, or a ConvertError saying MNN needs it constant."""
        value = self.value(node.inputs[i])
        if value is None:
            raise ConvertError(f"{node.label()}: {what} (input {i}) must be a constant")
        return value

    def shape(self, key: str) -> Shape | None:
        """Static TF shape of `key` (None entries are unknown dims), or None when even the rank is unknown."""
        value = self.value(key)
        if value is not None:
            return list(value.shape)
        return self.shapes.get(key)

    def rank(self, key: str) -> int | None:
        """Rank of `key` if known."""
        shape = self.shape(key)
        return None if shape is None else len(shape)

    def need_rank(self, node: TfNode, key: str) -> int:
        """Rank of `key`, or a ConvertError saying this conversion needs it."""
        rank = self.rank(key)
        if rank is None:
            raise ConvertError(f"{node.label()}: the rank of '{key}' is unknown (give the Placeholder a shape)")
        return rank

    # *** layouts ***
    def is_nchw(self, key: str) -> bool:
        """True when `key` already has an NCHW copy (a 4-D feature map produced by an NCHW op)."""
        return key in self._nchw

    def x(self, key: str) -> str:
        """Graph tensor holding `key` in TF layout (a Permute back from NCHW is emitted on first use)."""
        if key in self._nhwc:
            return self._nhwc[key]
        if key not in self._nchw:
            raise ConvertError(f"tensor '{key}' is read before anything produces it")
        name = key if key not in self.graph.inputs else self.graph.unique_name(key + "__nhwc")
        out = self.permute(self._nchw[key], TO_NHWC, name)
        self._nhwc[key] = out
        return out

    def x_nchw(self, key: str) -> str:
        """Graph tensor holding 4-D `key` as NCHW (constants are transposed, others permuted on first use)."""
        if key in self._nchw:
            return self._nchw[key]
        value = self.value(key)
        if value is not None:
            name = self.const(np.transpose(as_rank4(value), TO_NCHW), key + "__nchw")
        else:
            name = self.permute(self.x(key), TO_NCHW, key + "__nchw")
        self._nchw[key] = name
        return name

    def set_out(self, key: str, name: str, nchw: bool = False, shape: Shape | None = None) -> None:
        """Record that graph tensor `name` holds TF tensor `key` (as NCHW when `nchw`), with its TF shape."""
        (self._nchw if nchw else self._nhwc)[key] = name
        if shape is not None:
            self.shapes[key] = list(shape)

    def forward(self, dst: str, src: str) -> None:
        """`dst` is the same value as `src` (Identity and friends): share its graph tensors, emit nothing."""
        for table in (self._nhwc, self._nchw):
            if src in table:
                table[dst] = table[src]
        if src in self.shapes:
            self.shapes[dst] = self.shapes[src]

    def rename_tensor(self, old: str, new: str) -> None:
        """Graph tensor `old` is now called `new` (the loader moves a name aside for a graph output)."""
        for table in (self._nhwc, self._nchw):
            for key, name in table.items():
                if name == old:
                    table[key] = new

    def out_name(self, key: str, nchw: bool = False) -> str:
        """Graph tensor name for TF tensor `key`: its own name in TF layout, `key__nchw` for the NCHW copy."""
        return key + "__nchw" if nchw else key

    # *** emitting ***
    def out(self, op_type: int, inputs: list[str], output: str | None = None, param_type: int = 0,
            param: Any = None, name: str | None = None, **kwargs: Any) -> str:
        """Like `emit` with at most one named output; returns the output name."""
        outputs = None if output is None else [output]
        return self.emit(op_type, inputs, outputs, param_type, param, name, **kwargs).outputs[0]

    def axis_op(self, op_type: int, inputs: list[str], axis: int, output: str | None = None) -> str:
        """An op whose parameter is MNN's Axis table (Concat, Softmax, Unpack)."""
        param = fb.AxisT()
        param.axis = int(axis)
        return self.out(op_type, inputs, output, PARAM.Axis, param, name=output)


def as_rank4(value: np.ndarray) -> np.ndarray:
    """A constant of rank <= 4 with leading 1s added, so it broadcasts as it would against an NHWC tensor."""
    if value.ndim > 4:
        raise ConvertError(f"a rank-{value.ndim} constant cannot meet a 4-D feature map")
    return value.reshape((1,) * (4 - value.ndim) + value.shape)
