"""EltwiseInt8 (op 518) as mnnpy's int8 residual add: ``q = clamp(zo + (s_a/s_o)(qa - za) + (s_b/s_o)(qb - zb))``.

In mnnpy's lowered nets (``mnnpy.quant.lower``) the op carries a ``QuantizedFloatParam``: ``tensorScale`` =
``[s_a, s_b, s_out]``, ``floatzeros`` = ``[za, zb]``, ``outputZeroPoint``, and the output clamp (a fused ReLU raises
``clampMin`` to the output zero point). Both operands are widened once and combined in float32 as MNN's
``MNNBinaryAddInt8`` does (``backends/cpu/int8/requant.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.backends.cpu.int8.requant import add_int8
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import cpu_kernel, shape_fn

OT = fb.OpType


@shape_fn(OT.EltwiseInt8)
def add_int8_shape(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """Broadcast shape of the two int8 operands."""
    if len(descs) != 2:
        raise ModelError(f"op {op.name!r}: EltwiseInt8 takes two inputs")
    return [TensorDesc(np.broadcast_shapes(descs[0].shape, descs[1].shape), np.dtype(np.int8), NCHW)]


@cpu_kernel(OT.EltwiseInt8, formats=(NCHW,))
class AddInt8(CPUExecution):
    """int8 + int8 -> int8 (float32 requantisation inside the kernel)."""

    def on_resize(self) -> None:
        q = self.op.main
        scales = np.asarray(q.tensorScale if q is not None and q.tensorScale is not None else [], np.float64)
        zeros = np.asarray(q.floatzeros if q.floatzeros is not None else [0, 0], np.float64)
        if scales.size != 3 or zeros.size != 2:
            raise ModelError(f"op {self.op.name!r}: EltwiseInt8 needs tensorScale [s_a, s_b, s_out] and 2 zeros")
        if any(r.desc.dtype != np.int8 for r in self.inputs):
            raise ModelError(f"op {self.op.name!r}: EltwiseInt8 needs int8 inputs")
        if not np.all(np.isfinite(scales)) or np.any(scales <= 0):
            raise ModelError(f"op {self.op.name!r}: EltwiseInt8 scales must be positive, got {scales.tolist()}")
        self.scales = (float(scales[0]), float(scales[1]), float(scales[2]))
        self.za, self.zb = int(zeros[0]), int(zeros[1])
        self.zo, self.lo, self.hi = int(q.outputZeroPoint), int(q.clampMin), int(q.clampMax)

    def on_execute(self) -> None:
        add_int8(self.inputs[0].array, self.za, self.inputs[1].array, self.zb, self.scales, self.zo, self.lo, self.hi,
                 self.y.array)

    def info(self) -> dict[str, Any]:
        return {"algorithm": "int8-add"}
