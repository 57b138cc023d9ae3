"""LayerNorm / RMSNorm over trailing axes (row-major) and Scale (per-channel affine on NC4HW4)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from mnnpy.backends.vulkan.ops._base import VulkanExecution, op_param, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4, NCHW


def _norm_size(op: Any, shape: tuple[int, ...]) -> int:
    axes = getattr(op_param(op), "axis", None)
    count = len(axes) if axes is not None and len(axes) else 1
    return math.prod(shape[len(shape) - count:])


@vulkan_kernel(fb.OpType.LayerNorm, formats=("NCHW",))
class VulkanLayerNorm(VulkanExecution):
    """One invocation per row: mean, variance, normalise, gamma/beta."""

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        p = op_param(op)
        if len(inputs) != 1 or len(outputs) != 1 or p is None or int(p.group or 1) != 1:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        if x.fmt != NCHW or y.fmt != NCHW or x.shape != y.shape or not x.shape:
            return False
        inner = _norm_size(op, x.shape)
        return all(v is None or len(v) in (0, inner) for v in (p.gamma, p.beta))

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        p = op_param(self.op)
        inner = _norm_size(self.op, x.desc.shape)
        rows = x.desc.size // inner
        rms = bool(getattr(p, "useRmsnorm", False))
        self.algorithm = "rmsnorm" if rms else "layernorm"
        gamma = np.asarray(p.gamma, np.float32) if p.gamma is not None and len(p.gamma) else np.ones(inner, np.float32)
        beta = np.asarray(p.beta, np.float32) if p.beta is not None and len(p.beta) else np.zeros(inner, np.float32)
        values = (rows, inner, int(rms), float(p.epsilon))
        gamma_b = self.upload_once(f"gamma{inner}", lambda: gamma)
        beta_b = self.upload_once(f"beta{inner}", lambda: beta)
        self.dispatch("layernorm", [self.bind(x), gamma_b, beta_b], [self.bind(y)], "iiif",
                      values, rows)


@vulkan_kernel(fb.OpType.Scale, formats=("NC4HW4",))
class VulkanScale(VulkanExecution):
    """y = x * scale[c] + bias[c], one invocation per 4-channel texel."""

    algorithm = "scale"

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        p = op_param(op)
        if len(inputs) != 1 or len(outputs) != 1 or p is None or p.scaleData is None:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        if x.fmt != NC4HW4 or y.fmt != NC4HW4 or x.shape != y.shape or len(x.shape) < 2:
            return False
        c = x.shape[1]
        return len(p.scaleData) == c and (p.biasData is None or len(p.biasData) in (0, c))

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        p = op_param(self.op)
        n, c = x.desc.shape[:2]
        area = math.prod(x.desc.shape[2:])
        c4 = -(-c // 4)
        scale = np.zeros(c4 * 4, np.float32)
        bias = np.zeros(c4 * 4, np.float32)
        scale[:c] = np.asarray(p.scaleData, np.float32)
        if p.biasData is not None and len(p.biasData):
            bias[:c] = np.asarray(p.biasData, np.float32)
        total = n * c4 * area
        scale_b = self.upload_once(f"scale{c}", lambda: scale)
        bias_b = self.upload_once(f"bias{c}", lambda: bias)
        self.dispatch("scale", [self.bind(x), scale_b, bias_b], [self.bind(y)], "3i",
                      (total, area, c4), total)
