"""UnaryOp, ReLU (leaky), ReLU6 (clamp), ELU, Selu, Sigmoid, TanH: one elementwise kernel over physical elements."""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef

from ..backend import opencl_kernel
from ..execution import CLExecution, tensor_desc

UNSUPPORTED = {fb.UnaryOpOperation.ERFINV}
LEAKY_RELU, CLAMP, ELU, SELU = 100, 101, 102, 103


def _unary_code(op: Any) -> tuple[int, float, float]:
    """(kernel op code, a, b) for an op."""
    main = getattr(op, "main", None)
    if op.type == fb.OpType.ReLU:
        return LEAKY_RELU, float(getattr(main, "slope", 0.0) or 0.0), 0.0
    if op.type == fb.OpType.ReLU6:
        lo = float(getattr(main, "minValue", 0.0)) if main is not None else 0.0
        hi = float(getattr(main, "maxValue", 6.0)) if main is not None else 6.0
        return CLAMP, lo, hi
    if op.type == fb.OpType.ELU:
        return ELU, float(main.alpha) if main is not None else 1.0, 1.0
    if op.type == fb.OpType.Selu:
        alpha = float(main.alpha) if main is not None else 1.6732632
        return SELU, alpha, float(main.scale) if main is not None else 1.0507010
    if op.type == fb.OpType.Sigmoid:
        return fb.UnaryOpOperation.SIGMOID, 0.0, 0.0
    if op.type == fb.OpType.TanH:
        return fb.UnaryOpOperation.TANH, 0.0, 0.0
    return int(main.opType), 0.0, 0.0


@opencl_kernel(fb.OpType.UnaryOp, fb.OpType.ReLU, fb.OpType.ReLU6, fb.OpType.Sigmoid, fb.OpType.TanH,
               fb.OpType.ELU, fb.OpType.Selu, formats=("NC4HW4", "NCHW", "NHWC"))
class UnaryExecution(CLExecution):
    """`y = f(x)` elementwise; input and output share shape and layout."""

    algorithm = "unary"

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        if len(inputs) != 1 or len(outputs) != 1 or inputs[0].desc != outputs[0].desc:
            return False
        return not (op.type == fb.OpType.UnaryOp and (op.main is None or op.main.opType in UNSUPPORTED))

    def encode(self) -> None:
        code, a, b = _unary_code(self.op)
        x, y = self.inputs[0], self.outputs[0]
        count = y.array.elements
        args = [self.buf(x), self.buf(y), tensor_desc(y), np.int32(code), np.float32(a), np.float32(b),
                np.int32(count)]
        self.launch("unary", "unary", args, (count,), options=f"-DUNARY_OP={code}")

