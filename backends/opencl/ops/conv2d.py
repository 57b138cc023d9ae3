"""Convolution and ConvolutionDepthwise on NC4HW4 feature maps with fused bias and ReLU / ReLU6.

Weights are packed once in on_resize: dense (and grouped, as block-diagonal) to `[OC4][IC4][kh][kw][4][4]`,
depthwise (channel multiplier 1) to `[C4][kh][kw][4]`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.conv_geometry import conv2d_params, conv_weights
from mnnpy.core.ir import NC4HW4

from .. import winograd
from ..backend import opencl_kernel
from ..execution import CLExecution, int4


def _c4(c: int) -> int:
    return -(-c // 4)


def conv_weight_count_ok(op: Any, in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> bool:
    """Whether the op's (float or IDSTQuan-encoded) weights resolve for these shapes (decoded once, in encode)."""
    try:
        params = conv2d_params(op.main, int(op.type), in_shape)
    except ValueError:
        return False
    conv = op.main
    if params.out_channels != out_shape[1]:
        return False
    if conv.weight is not None and len(conv.weight):
        kh, kw = params.kernel
        per = (params.in_channels * (params.out_channels // params.group) if params.transposed
               else params.out_channels * (params.in_channels // params.group))
        return len(conv.weight) == per * kh * kw
    return getattr(conv, "quanParameter", None) is not None


def pack_dense(weight: np.ndarray, ic: int, group: int) -> np.ndarray:
    """`(oc, ic/g, kh, kw)` weights -> `[OC4][IC4][kh][kw][4 in][4 out]` (groups block-diagonal, zero tails)."""
    oc, icg, kh, kw = weight.shape
    ocg = oc // group
    full = np.zeros((_c4(oc) * 4, _c4(ic) * 4, kh, kw), dtype=np.float32)
    for g in range(group):
        full[g * ocg:(g + 1) * ocg, g * icg:(g + 1) * icg] = weight[g * ocg:(g + 1) * ocg]
    blocks = full.reshape(_c4(oc), 4, _c4(ic), 4, kh, kw)
    return np.ascontiguousarray(blocks.transpose(0, 2, 4, 5, 3, 1))


def pack_depthwise(weight: np.ndarray) -> np.ndarray:
    """`(c, 1, kh, kw)` weights -> `[C4][kh][kw][4]` (zero channel tail)."""
    c, _, kh, kw = weight.shape
    full = np.zeros((_c4(c) * 4, kh, kw), dtype=np.float32)
    full[:c] = weight[:, 0]
    return np.ascontiguousarray(full.reshape(_c4(c), 4, kh, kw).transpose(0, 2, 3, 1))


@opencl_kernel(fb.OpType.Convolution, fb.OpType.ConvolutionDepthwise, formats=("NC4HW4",))
class ConvolutionExecution(CLExecution):
    """Direct convolution: 4 output pixels x 4 output channels per work item (1x1 stride 1 over flat pixels);
    depthwise by its own kernel."""

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        conv = op.main
        if conv is None or conv.common is None or len(inputs) != 1 or len(outputs) != 1:
            return False
        if getattr(conv, "symmetricQuan", None) is not None:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        if not (x.fmt == y.fmt == NC4HW4 and len(x.shape) == len(y.shape) == 4 and x.shape[0] == y.shape[0]):
            return False
        return conv_weight_count_ok(op, x.shape, y.shape)

    def _choose(self, algorithm: str, ic: int, oc: int, oh: int, ow: int) -> bool:
        """Whether to use `algorithm`: the backend config `convAlgorithm` (a name, or {op name: name}) forces it,
        else the cost rule decides."""
        force = self.backend.config.get("convAlgorithm")
        if isinstance(force, dict):
            force = force.get(self.op.name)
        if force is not None:
            return str(force).split(":")[0] == algorithm
        return winograd.worth_it(ic, oc, oh, ow)

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        n, ic, h, w = x.desc.shape
        oc, oh, ow = y.desc.shape[1:]
        params = conv2d_params(self.op.main, int(self.op.type), x.desc.shape)
        weight, bias_oc = conv_weights(self.op.main, params)
        kernel, stride, dilation, pads, group = params.kernel, params.stride, params.dilation, params.pads, params.group
        depthwise = group == ic == oc > 1
        bias = np.zeros(_c4(oc) * 4, dtype=np.float32)
        bias[:oc] = bias_oc
        act = 2 if params.relu6 else (1 if params.relu else 0)
        shape_args = [int4(n, _c4(ic), h, w), int4(_c4(oc), oh, ow), int4(*kernel, *stride),
                      int4(*dilation, pads[0], pads[1]), np.int32(act)]
        if depthwise and ic == oc:
            self.algorithm = "depthwise"
            packed = pack_depthwise(weight)
            args = [self.buf(x), self.constant(packed), self.constant(bias), self.buf(y), *shape_args]
            self.launch("conv", "dwconv2d", args, (ow, oh, _c4(oc) * n))
            return
        if winograd.usable(kernel, stride, dilation, group) and self._choose("winograd", ic, oc, oh, ow):
            self.algorithm = "winograd2x2"
            winograd.encode(self, x, y, weight, bias, pads, act)
            return
        packed = pack_dense(weight, ic, group)
        if kernel == (1, 1) and stride == (1, 1) and pads == (0, 0, 0, 0):
            self.algorithm = "conv1x1"
            pixels = n * h * w
            args = [self.buf(x), self.constant(packed), self.constant(bias), self.buf(y), int4(pixels, _c4(ic)),
                    int4(pixels, _c4(oc)), np.int32(act)]
            self.launch("conv", "conv1x1", args, (-(-pixels // 4), _c4(oc)))
            return
        self.algorithm = "direct"
        args = [self.buf(x), self.constant(packed), self.constant(bias), self.buf(y), *shape_args]
        self.launch("conv", "conv2d", args, (-(-ow // 4), oh, _c4(oc) * n))
