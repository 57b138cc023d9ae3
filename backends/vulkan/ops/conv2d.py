"""Convolution and ConvolutionDepthwise on NC4HW4 tensors, fused bias + ReLU/ReLU6 (MNN: `VulkanConvolution`).

Algorithms: `conv1x1` (1x1, stride 1, no padding: a GEMM over channels, 4 pixels per invocation), `depthwise`
(group == channels, 4 texels per invocation), `winograd` (F(2x2, 3x3) for 3x3 stride-1 convolutions with enough
channels, see `ops/winograd.py` for the rule), else `direct` (general kxk with stride, dilation and padding; groups
run as a block-diagonal dense weight; 4 texels x 2 output channel blocks per invocation).
Weights are packed once per op (reused across resizes) into `[OC/4][IC/4][KH][KW][4 in][4 out]` (depthwise:
`[C/4][KH][KW][4]`); the direct path pads OC/4 to an even count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from mnnpy.backends.vulkan.backend import Binding
from mnnpy.backends.vulkan.ops import winograd
from mnnpy.backends.vulkan.ops._base import FLT_MAX, VulkanExecution, max_binding_bytes, op_param, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4


def _conv_geometry() -> Any:
    """The core's convolution geometry and weight decoding (shared by every backend)."""
    from mnnpy.core import conv_geometry

    return conv_geometry


def pack_dense(weight: np.ndarray, group: int, in_channels: int) -> np.ndarray:
    """(OC, IC/g, KH, KW) weights -> `[OC4][IC4][KH][KW][4 in][4 out]` float32, zero padded, groups expanded."""
    oc, icg, kh, kw = weight.shape
    dense = np.zeros((oc, in_channels, kh, kw), dtype=np.float32)
    ocg = oc // group
    for g in range(group):
        dense[g * ocg:(g + 1) * ocg, g * icg:(g + 1) * icg] = weight[g * ocg:(g + 1) * ocg]
    oc4, ic4 = -(-oc // 4), -(-in_channels // 4)
    padded = np.zeros((oc4 * 4, ic4 * 4, kh, kw), dtype=np.float32)
    padded[:oc, :in_channels] = dense
    return padded.reshape(oc4, 4, ic4, 4, kh, kw).transpose(0, 2, 4, 5, 3, 1).copy()


def pack_depthwise(weight: np.ndarray) -> np.ndarray:
    """(C, 1, KH, KW) weights -> `[C4][KH][KW][4]` float32, zero padded."""
    c, _, kh, kw = weight.shape
    c4 = -(-c // 4)
    padded = np.zeros((c4 * 4, kh, kw), dtype=np.float32)
    padded[:c] = weight[:, 0]
    return padded.reshape(c4, 4, kh, kw).transpose(0, 2, 3, 1).copy()


def pad_blocks(packed: np.ndarray) -> np.ndarray:
    """Pad the leading (output channel block) axis to an even count, for shaders computing 2 blocks at once."""
    if packed.shape[0] % 2 == 0:
        return packed
    return np.concatenate([packed, np.zeros((1, *packed.shape[1:]), packed.dtype)])


def pack_bias(bias: np.ndarray) -> np.ndarray:
    """Bias padded to a multiple of 4."""
    out = np.zeros(-(-bias.size // 4) * 4, dtype=np.float32)
    out[:bias.size] = bias
    return out


@vulkan_kernel(fb.OpType.Convolution, fb.OpType.ConvolutionDepthwise, formats=("NC4HW4",))
class VulkanConv2D(VulkanExecution):
    """2-D convolution; the algorithm is chosen per shape in `on_resize` and reported in `info()`."""

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        if len(inputs) != 1 or len(outputs) != 1 or op_param(op) is None:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        if x.fmt != NC4HW4 or y.fmt != NC4HW4 or len(x.shape) != 4:
            return False
        try:
            geometry = _conv_geometry()
            params = geometry.conv2d_params(op_param(op), int(op.type), x.shape)
            geometry.conv_weights(op_param(op), params)
            if geometry.conv2d_output_shape(params, x.shape) != y.shape:
                return False
        except (ImportError, ValueError, NotImplementedError):
            return False
        kh, kw = params.kernel
        packed_bytes = (-(-params.out_channels // 8) * 2) * -(-x.shape[1] // 4) * kh * kw * 64
        return packed_bytes <= max_binding_bytes()  # larger packed weights run on the CPU

    def _winograd(self) -> bool:
        x, y = self.inputs[0].desc, self.outputs[0].desc
        params = _conv_geometry().conv2d_params(op_param(self.op), int(self.op.type), x.shape)
        return winograd.chosen(params, x.shape[1], y.shape[1])

    def scratch_bytes(self) -> int:
        """Winograd's transformed tiles and products (V and M), planned in the arena; else none."""
        if not self._winograd():
            return 0
        n, oc, oh, ow = self.outputs[0].desc.shape
        return winograd.scratch_bytes(n, self.inputs[0].desc.shape[1], oc, oh, ow, self.backend.tensor_dtype.itemsize)

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        conv = op_param(self.op)
        geometry = _conv_geometry()
        params = geometry.conv2d_params(conv, int(self.op.type), x.desc.shape)
        weight, bias = geometry.conv_weights(conv, params)
        lo, hi = (0.0, 6.0) if params.relu6 else (0.0, FLT_MAX) if params.relu else (-FLT_MAX, FLT_MAX)
        n, ic, h, w = x.desc.shape
        oc, oh, ow = y.desc.shape[1:]
        ic4, oc4 = -(-ic // 4), -(-oc // 4)
        (kh, kw), (sy, sx), (dy, dx) = params.kernel, params.stride, params.dilation
        top, left = params.pads[0], params.pads[1]
        depthwise = params.group == ic == oc and params.group > 1
        pointwise = (kh, kw, sy, sx) == (1, 1, 1, 1) and not any(params.pads)
        if depthwise or pointwise:
            bias_b = self.upload_once(f"bias{ic}", lambda: pack_bias(bias))
        if depthwise:
            self.algorithm = "depthwise"
            items = n * ic4 * oh * -(-ow // 4)  # 4 output texels along x per invocation
            values = (w, h, ic, ic4, ow, oh, 0, items, kw, kh, sx, sy, left, top, dx, dy, lo, hi)
            packed_dw = self.upload_once(f"depthwise{ic}", lambda: pack_depthwise(weight))
            self.dispatch("depthwise", [self.bind(x), packed_dw, bias_b], [self.bind(y)], "16iff", values, items)
            return
        if pointwise:
            packed = self.upload_once(f"dense{ic}", lambda: pack_dense(weight, params.group, ic))
            self.algorithm = "conv1x1"
            pixels = n * h * w
            items = oc4 * -(-pixels // 4)  # 4 pixels (over batch and plane) per invocation
            values = (h * w, ic, ic4, oc4, items, pixels, lo, hi)
            self.dispatch("conv2d_1x1", [self.bind(x), packed, bias_b], [self.bind(y)], "6iff", values, items)
            return
        if winograd.chosen(params, ic, oc):
            self.algorithm = "winograd"
            self._encode_winograd(weight, bias, (n, ic, h, w), (oc, oh, ow), (top, left), (lo, hi))
            return
        self.algorithm = "direct"
        # 4 output texels along x times 2 output channel blocks per invocation (weights/bias padded to even OC4)
        items = n * -(-oc4 // 2) * oh * -(-ow // 4)
        packed = self.upload_once(f"dense8_{ic}", lambda: pad_blocks(pack_dense(weight, params.group, ic)))
        bias_b = self.upload_once(f"bias8_{ic}", lambda: pad_blocks(pack_bias(bias).reshape(-1, 4)))
        values = (w, h, ic, ic4, ow, oh, oc4, items, kw, kh, sx, sy, left, top, dx, dy, lo, hi)
        self.dispatch("conv2d", [self.bind(x), packed, bias_b], [self.bind(y)], "16iff", values, items)

    def _encode_winograd(self, weight: np.ndarray, bias: np.ndarray, in_shape: tuple[int, ...],
                         out_shape: tuple[int, ...], pads: tuple[int, int], act: tuple[float, float]) -> None:
        n, ic, h, w = in_shape
        oc, oh, ow = out_shape
        ic4, oc4 = -(-ic // 4), -(-oc // 4)
        tw, th, tiles = winograd.tile_counts(n, oh, ow)
        item = self.backend.tensor_dtype.itemsize
        total = winograd.scratch_bytes(n, ic, oc, oh, ow, item)
        scratch = self.bind(self.scratch_ref) if self.scratch_ref is not None else self.backend.scratch(total)
        v_bytes = 16 * ic4 * tiles * 4 * item
        m_off = (v_bytes + 63) // 64 * 64
        v = Binding(scratch.buffer, scratch.offset, v_bytes)
        m = Binding(scratch.buffer, scratch.offset + m_off, total - m_off)
        u = self.upload_once(f"winograd{ic}", lambda: winograd.transform_weights(weight))
        bias_b = self.upload_once(f"bias{ic}", lambda: pack_bias(bias))
        x, y = self.bind(self.inputs[0]), self.bind(self.outputs[0])
        self.dispatch("winograd_input", [x], [v], "12i", (w, h, ic, ic4, tw, th, tiles, ic4 * tiles,
                                                            pads[1], pads[0], 0, 0), ic4 * tiles)
        items = 16 * oc4 * -(-tiles // 4)
        self.dispatch("winograd_gemm", [v, u], [m], "4i", (ic4, oc4, tiles, items), items)
        self.dispatch("winograd_output", [m, bias_b], [y], "8iff", (ow, oh, oc4, oc4 * tiles, tw, th, tiles, 0, *act),
                      oc4 * tiles)
