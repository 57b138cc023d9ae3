"""MNN's fused Attention on OpenCL: online softmax with key/value tiles in local memory (kernels/attention.cl).

Same semantics as the CPU kernel: scale 1/sqrt(D); no mask input = causal; a float mask broadcast to
[B, H, Sq, Skv]; integer masks, head sizes above 128 or packed layouts fall back to the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4, broadcast_strides

from ..backend import opencl_kernel
from ..execution import CLExecution, int4
from ..tuning import round_up

TQ = 16  # query rows per work-group (they share each key/value tile)
TK = 16  # keys per tile
MAXD = 128


@opencl_kernel(fb.OpType.Attention, formats=("NCHW",))
class AttentionExecution(CLExecution):
    """softmax(q k^T / sqrt(D) + mask) v, a tile of keys at a time (MNN: AttentionBufExecution)."""

    algorithm = "attention-online-softmax"

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        if len(inputs) < 3 or any(len(r.desc.shape) != 4 for r in inputs[:3]):
            return False
        if any(r.desc.fmt == NC4HW4 for r in (*inputs, *outputs)):
            return False
        if max(inputs[0].desc.shape[3], inputs[2].desc.shape[3]) > MAXD:
            return False
        return len(inputs) == 3 or (inputs[3].desc.dtype.kind == "f" and len(inputs[3].desc.shape) <= 4)

    def encode(self) -> None:
        q, k, v = self.inputs[:3]
        b, sq, h, d = q.desc.shape
        bk, skv, hkv, dv = v.desc.shape
        flags = 0 if len(self.inputs) > 3 else 2
        mask = self.constant(np.zeros(1, np.float32))
        strides = (0, 0, 0, 0)
        if len(self.inputs) > 3:
            ref = self.inputs[3]
            zero = ref.const and isinstance(ref.array, np.ndarray) and not np.any(ref.array)
            if not zero:
                flags, mask, strides = 1, self.buf(ref), broadcast_strides(ref.desc.shape)
        args = [self.buf(q), self.buf(k), self.buf(v), mask, self.buf(self.outputs[0]), int4(b, sq, skv, h),
                int4(hkv, d, dv, flags), int4(*strides), np.float32(1.0 / np.sqrt(d)), np.int32(bk > 1)]
        kernel = self.backend.runtime.kernel("attention", "attention", f"-DTK={TK} -DMAXD={MAXD}")
        kernel.set_args(*args)
        lws = (TQ, 1, 1)
        self.launches.append((kernel, round_up((sq, h, b), lws), lws))
        self.algorithm = f"attention-online-softmax-tile{TK}"
