"""Eltwise (PROD, SUM with coefficients, MAXIMUM, SUB) over same-shape inputs, as a chain of binary kernels."""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef

from ..backend import opencl_kernel
from ..execution import CLExecution, tensor_desc

_E = fb.EltwiseType
BINARY_OF = {_E.PROD: fb.BinaryOpOperation.MUL, _E.MAXIMUM: fb.BinaryOpOperation.MAXIMUM,
             _E.SUB: fb.BinaryOpOperation.SUB, _E.SUM: fb.BinaryOpOperation.ADD}


@opencl_kernel(fb.OpType.Eltwise, formats=("NC4HW4", "NCHW", "NHWC"))
class EltwiseExecution(CLExecution):
    """`y = x0 op x1 op ...`; SUM with coefficients uses `axpby` (MNN: Eltwise)."""

    algorithm = "eltwise"

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        if op.main is None or op.main.type not in BINARY_OF or len(inputs) < 2 or len(outputs) != 1:
            return False
        coeff = list(op.main.coeff) if op.main.coeff is not None else []
        if coeff and (op.main.type != _E.SUM or len(coeff) != len(inputs)):
            return False
        return all(t.desc == outputs[0].desc for t in inputs)

    def encode(self) -> None:
        y = self.outputs[0]
        count = np.int32(y.array.elements)
        desc = tensor_desc(y)
        coeff = list(self.op.main.coeff) if self.op.main.coeff is not None else []
        acc = self.buf(self.inputs[0])
        for i, x in enumerate(self.inputs[1:], start=1):
            if coeff:
                first = np.float32(coeff[0] if i == 1 else 1.0)
                args = [acc, self.buf(x), self.buf(y), desc, first, np.float32(coeff[i]), count]
                self.launch("binary", "axpby", args, (int(count),))
            else:
                op = np.int32(BINARY_OF[self.op.main.type])
                args = [acc, self.buf(x), self.buf(y), desc, op, np.int32(0), count]
                self.launch("binary", "binary_same", args, (int(count),), options=f"-DBINARY_OP={int(op)}")
            acc = self.buf(y)
