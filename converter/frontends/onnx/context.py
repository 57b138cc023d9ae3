"""What an ONNX op converter sees: the node (name, inputs, outputs) and a context to read constants and emit ops."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ...graph import ConvertError, Graph
from ..context import EmitContext

OP = fb.OpType
PARAM = fb.OpParameter
BIN = fb.BinaryOpOperation
UN = fb.UnaryOpOperation

# ONNX TensorProto element type -> MNN DataType (MNN narrows int64 to int32 and computes fp16/double in float).
ONNX_TO_MNN_DTYPE = {
    1: fb.DataType.DT_FLOAT, 2: fb.DataType.DT_UINT8, 3: fb.DataType.DT_INT8, 4: fb.DataType.DT_INT32,
    5: fb.DataType.DT_INT32, 6: fb.DataType.DT_INT32, 7: fb.DataType.DT_INT32, 9: fb.DataType.DT_BOOL,
    10: fb.DataType.DT_FLOAT, 11: fb.DataType.DT_FLOAT, 12: fb.DataType.DT_INT32, 13: fb.DataType.DT_INT32,
    16: fb.DataType.DT_FLOAT,
}


@dataclass
class OnnxNode:
    """One ONNX node: omitted optional inputs are '' (and trailing ones are simply absent)."""

    name: str
    op_type: str
    inputs: list[str]
    outputs: list[str]
    domain: str = ""
    source_name: str = ""

    def input(self, i: int) -> str:
        """Input `i`'s tensor name, or '' when it is absent."""
        return self.inputs[i] if i < len(self.inputs) else ""

    def label(self) -> str:
        """How error messages name this node."""
        return f"{self.op_type} '{self.source_name or self.name}'"


class Context(EmitContext):
    """Conversion state shared by the op functions of one model (ONNX conventions: untyped BinaryOp/UnaryOp, ops
    writing a given output left unnamed, Reshape in NCHW)."""

    typed_float = False
    name_after_output = False

    def __init__(self, graph: Graph, opset: int, shapes: dict[str, list[int | None]],
                 dtypes: dict[str, int]) -> None:
        self.graph = graph
        self.opset = opset
        self.shapes = shapes
        self.dtypes = dtypes
        self.scope: dict[str, str] = {}  # inside control-flow bodies: body tensor name -> its name in the graph
        self.outer: Context | None = None  # the enclosing graph's context while converting a subgraph of its own

    # *** reading ***
    def value(self, name: str) -> np.ndarray | None:
        """The constant value of tensor `name`, or None if it is computed at run time."""
        if not name:
            return None
        return self.graph.constants.get(name)

    def need_value(self, node: OnnxNode, i: int, what: str) -> np.ndarray:
        """Constant input `i` of `node`, or a ConvertError saying MNN needs it constant."""
        value = self.value(node.input(i))
        if value is None:
            raise ConvertError(f"{node.label()}: {what} (input {i}) must be a constant for MNN")
        return value

    def shape(self, name: str) -> list[int | None] | None:
        """Static shape from ONNX shape inference (None entries are unknown dims), or None if unknown."""
        const = self.value(name)
        if const is not None:
            return list(const.shape)
        return self.shapes.get(name)

    def rank(self, name: str) -> int | None:
        """Rank of tensor `name` if known."""
        shape = self.shape(name)
        return None if shape is None else len(shape)

    def need_rank(self, node: OnnxNode, name: str) -> int:
        """Rank of `name`, or a ConvertError explaining that this conversion needs it."""
        rank = self.rank(name)
        if rank is None:
            raise ConvertError(f"{node.label()}: the rank of '{name}' is unknown (run onnx shape inference first)")
        return rank

    def is_float(self, name: str) -> bool:
        """True unless tensor `name` is known to be an integer or bool tensor."""
        const = self.value(name)
        if const is not None:
            return const.dtype.kind == "f"
        return self.dtypes.get(name, 1) in (1, 10, 11, 16)

    # *** emitting ***
    def out(self, op_type: int, inputs: list[str], outputs: list[str] | None = None, param_type: int = 0,
            param: Any = None, name: str | None = None, **kwargs: Any) -> str:
        """Like `emit`, returning the (first) output name."""
        return self.emit(op_type, inputs, outputs, param_type, param, name, **kwargs).outputs[0]

    def alias(self, src: str, dst: str) -> None:
        """Make `dst` a copy of `src` (an Identity op; the identity pass removes it)."""
        self.emit(OP.Identity, [src], [dst])

    def squeeze(self, x: str, axes: list[int] | None, output: str | None = None, unsqueeze: bool = False) -> str:
        """Squeeze/Unsqueeze with constant axes in the op's SqueezeParam."""
        param = fb.SqueezeParamT()
        param.squeezeDims = None if axes is None else [int(a) for a in axes]
        op_type = OP.Unsqueeze if unsqueeze else OP.Squeeze
        return self.out(op_type, [x], None if output is None else [output], PARAM.SqueezeParam, param,
                        name=None if output is not None else ("Unsqueeze" if unsqueeze else "Squeeze"))

    def shape_of(self, x: str) -> str:
        """Shape op (int32 vector) of a tensor."""
        return self.out(OP.Shape, [x], name="Shape", default_format=fb.MNN_DATA_FORMAT.NCHW)
