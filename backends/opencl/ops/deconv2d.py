"""Deconvolution / DeconvolutionDepthwise (transposed convolution) on NC4HW4 maps, fused bias and ReLU / ReLU6.

The `(ic, oc/g, kh, kw)` weights are re-laid as a convolution's `(oc, ic/g, kh, kw)` per group and packed like
Convolution's (`[OC4][IC4][kh][kw][4][4]`, groups block-diagonal); the kernel gathers the input pixels that land on
each output pixel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4

from ..backend import opencl_kernel
from ..convparams import PAD_SAME, resolve_pads
from ..execution import CLExecution, int4
from .conv2d import pack_dense


def _c4(c: int) -> int:
    return -(-c // 4)


def _group(op: Any, ic: int) -> int:
    return ic if op.type == fb.OpType.DeconvolutionDepthwise else max(int(op.main.common.group), 1)


@opencl_kernel(fb.OpType.Deconvolution, fb.OpType.DeconvolutionDepthwise, formats=("NC4HW4",))
class DeconvolutionExecution(CLExecution):
    """Gather-form transposed convolution, one output pixel x 4 output channels per work item."""

    algorithm = "deconv"

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        conv = op.main
        if conv is None or conv.common is None or len(inputs) != 1 or len(outputs) != 1:
            return False
        if getattr(conv, "quanParameter", None) is not None:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        if not (x.fmt == y.fmt == NC4HW4 and len(x.shape) == len(y.shape) == 4 and x.shape[0] == y.shape[0]):
            return False
        ic, oc = x.shape[1], y.shape[1]
        group = _group(op, ic)
        kh, kw = max(int(conv.common.kernelY), 1), max(int(conv.common.kernelX), 1)
        count = len(conv.weight) if conv.weight is not None else 0
        return ic % group == 0 and oc % group == 0 and count == ic * (oc // group) * kh * kw

    def encode(self) -> None:
        conv, common = self.op.main, self.op.main.common
        x, y = self.inputs[0], self.outputs[0]
        n, ic, h, w = x.desc.shape
        oc, oh, ow = y.desc.shape[1:]
        group = _group(self.op, ic)
        kernel = (max(int(common.kernelY), 1), max(int(common.kernelX), 1))
        stride = (max(int(common.strideY), 1), max(int(common.strideX), 1))
        dilation = (max(int(common.dilateY), 1), max(int(common.dilateX), 1))
        if int(common.padMode) == PAD_SAME:
            top = max((h - 1) * stride[0] + (kernel[0] - 1) * dilation[0] + 1 - oh, 0) // 2
            left = max((w - 1) * stride[1] + (kernel[1] - 1) * dilation[1] + 1 - ow, 0) // 2
        else:
            top, left = resolve_pads(common, int(common.padMode), (h, w), (oh, ow), kernel, stride, dilation)[:2]
        icg, ocg = ic // group, oc // group
        stored = np.asarray(conv.weight, dtype=np.float32).reshape(group, icg, ocg, *kernel)
        weight = stored.transpose(0, 2, 1, 3, 4).reshape(oc, icg, *kernel)
        bias = np.zeros(_c4(oc) * 4, dtype=np.float32)
        if conv.bias is not None and len(conv.bias):
            bias[:oc] = np.asarray(conv.bias, dtype=np.float32)
        act = 2 if common.relu6 else (1 if common.relu else 0)
        args = [self.buf(x), self.constant(pack_dense(weight, ic, group)), self.constant(bias), self.buf(y),
                int4(n, _c4(ic), h, w), int4(_c4(oc), oh, ow), int4(*kernel, *stride), int4(*dilation, top, left),
                np.int32(act)]
        self.launch("conv", "deconv2d", args, (ow, oh, _c4(oc) * n))
