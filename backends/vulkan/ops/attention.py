"""MNN's fused Attention and GroupNorm on Vulkan (shaders/attention.comp, shaders/groupnorm.comp).

Attention: a work-group per block of query rows of one (batch, head) shares key/value tiles in shared memory; each
row keeps an online softmax, so the [Sq, Skv] matrix is never stored; scale 1/sqrt(D); no mask input = causal
(MNN's semantics); a float mask broadcast to [B, H, Sq, Skv].
GroupNorm: one invocation per (batch, group) over plain row-major tensors, optional swish.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from mnnpy.backends.vulkan.ops._base import VulkanExecution, op_param, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NCHW, broadcast_strides

MAXD = 128  # the shader's private query / accumulator arrays


@vulkan_kernel(fb.OpType.Attention, formats=("NCHW",))
class VulkanAttention(VulkanExecution):
    """softmax(q k^T / sqrt(D) + mask) v per row, streaming over shared-memory key/value tiles."""

    algorithm = "attention-online-softmax-tiled"

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        if len(inputs) < 3 or any(len(r.desc.shape) != 4 or r.desc.fmt != NCHW for r in inputs[:3]):
            return False
        if outputs[0].desc.fmt != NCHW or max(inputs[0].desc.shape[3], inputs[2].desc.shape[3]) > MAXD:
            return False
        return len(inputs) == 3 or (inputs[3].desc.dtype.kind == "f" and inputs[3].desc.fmt == NCHW and
                                    len(inputs[3].desc.shape) <= 4)

    def encode(self) -> None:
        q, k, v = self.inputs[:3]
        b, sq, h, d = q.desc.shape
        bk, skv, hkv, dv = v.desc.shape
        flags, strides = (0, (0, 0, 0, 0)) if len(self.inputs) > 3 else (2, (0, 0, 0, 0))
        mask = self.upload_once("zero-mask", lambda: np.zeros(4, np.float32))
        if len(self.inputs) > 3:
            ref = self.inputs[3]
            zero = ref.const and isinstance(ref.array, np.ndarray) and not np.any(ref.array)
            if not zero:
                flags, mask, strides = 1, self.bind(ref), broadcast_strides(ref.desc.shape)
        values = (b, sq, skv, h, hkv, d, dv, flags, *strides, 1.0 / math.sqrt(d), int(bk > 1))
        group = self.backend.vdev.group_size()  # one work-group per block of `group` query rows of a (batch, head)
        self.dispatch("attention", [self.bind(q), self.bind(k), self.bind(v), mask], [self.bind(self.outputs[0])],
                      "iiiiiiiiiiiifi", values, b * h * -(-sq // group) * group)


@vulkan_kernel(fb.OpType.GroupNorm, formats=("NCHW",))
class VulkanGroupNorm(VulkanExecution):
    """Mean/variance per (batch, channel group), then per-channel gamma/beta and optional swish."""

    algorithm = "groupnorm"

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        p = op_param(op)
        if p is None or len(inputs) != 1 or len(outputs) != 1:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        groups = max(int(p.group or 1), 1)
        return x.fmt == NCHW and y.fmt == NCHW and x.shape == y.shape and len(x.shape) >= 2 and \
            x.shape[1] % groups == 0

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        p = op_param(self.op)
        n, c = x.desc.shape[:2]
        groups = max(int(p.group or 1), 1)
        gamma = np.asarray(p.gamma, np.float32) if p.gamma is not None and len(p.gamma) else np.ones(c, np.float32)
        beta = np.asarray(p.beta, np.float32) if p.beta is not None and len(p.beta) else np.zeros(c, np.float32)
        values = (n, c, groups, math.prod(x.desc.shape[2:]), 0, int(bool(getattr(p, "bSwish", 0))),
                  float(p.epsilon))
        self.dispatch("groupnorm", [self.bind(x), self.upload_once("gamma", lambda: gamma),
                                    self.upload_once("beta", lambda: beta)], [self.bind(y)], "iiiiiif", values,
                      n * groups)
