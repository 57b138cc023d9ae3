"""Deconvolution and DeconvolutionDepthwise on NC4HW4 tensors, fused bias + ReLU/ReLU6 (MNN: `VulkanDeconvolution`).

A gather formulation: every output texel sums the input pixels that land on it, so no atomics are needed. Groups
(depthwise included) run as a block-diagonal dense weight, packed once per shape like the convolution's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from mnnpy.backends.vulkan.ops._base import FLT_MAX, VulkanExecution, op_param, vulkan_kernel
from mnnpy.backends.vulkan.ops.conv2d import _conv_geometry, pack_bias, pack_dense
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4


def transposed_dense(weight: np.ndarray, group: int) -> np.ndarray:
    """(IC, OC/g, KH, KW) transposed-convolution weights -> (OC, IC/g, KH, KW) per group, as a convolution's."""
    ic, ocg, kh, kw = weight.shape
    icg = ic // group
    grouped = weight.reshape(group, icg, ocg, kh, kw).transpose(0, 2, 1, 3, 4)
    return np.ascontiguousarray(grouped.reshape(group * ocg, icg, kh, kw))


@vulkan_kernel(fb.OpType.Deconvolution, fb.OpType.DeconvolutionDepthwise, formats=("NC4HW4",))
class VulkanDeconv2D(VulkanExecution):
    """One invocation per output texel; taps whose input position is fractional are skipped."""

    algorithm = "deconv-gather"

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        if len(inputs) != 1 or len(outputs) != 1 or op_param(op) is None:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        if x.fmt != NC4HW4 or y.fmt != NC4HW4 or len(x.shape) != 4 or len(y.shape) != 4:
            return False
        try:
            geometry = _conv_geometry()
            params = geometry.conv2d_params(op_param(op), int(op.type), x.shape)
            geometry.conv_weights(op_param(op), params)
        except (ImportError, ValueError, NotImplementedError):
            return False
        return y.shape[:2] == (x.shape[0], params.out_channels)

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        geometry = _conv_geometry()
        params = geometry.conv2d_params(op_param(self.op), int(self.op.type), x.desc.shape)
        weight, bias = geometry.conv_weights(op_param(self.op), params)
        lo, hi = (0.0, 6.0) if params.relu6 else (0.0, FLT_MAX) if params.relu else (-FLT_MAX, FLT_MAX)
        n, ic, h, w = x.desc.shape
        oc, oh, ow = y.desc.shape[1:]
        ic4, oc4 = -(-ic // 4), -(-oc // 4)
        (kh, kw), (sy, sx), (dy, dx) = params.kernel, params.stride, params.dilation
        top, left = params.pads[0], params.pads[1]
        packed = self.upload_once(f"dense{ic}", lambda: pack_dense(transposed_dense(weight, params.group), params.group,
                                                                   ic))
        total = n * oc4 * oh * ow
        values = (w, h, ic, ic4, ow, oh, oc4, total, kw, kh, sx, sy, left, top, dx, dy, lo, hi)
        bias_b = self.upload_once(f"bias{ic}", lambda: pack_bias(bias))
        self.dispatch("deconv2d", [self.bind(x), packed, bias_b], [self.bind(y)], "16iff", values, total)
