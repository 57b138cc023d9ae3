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
from mnnpy.core.conv_geometry import conv2d_params, conv_weights
from mnnpy.core.ir import NC4HW4

from ..backend import opencl_kernel
from ..execution import CLExecution, int4
from .conv2d import conv_weight_count_ok, pack_dense


def _c4(c: int) -> int:
    return -(-c // 4)


@opencl_kernel(fb.OpType.Deconvolution, fb.OpType.DeconvolutionDepthwise, formats=("NC4HW4",))
class DeconvolutionExecution(CLExecution):
    """Gather-form transposed convolution, one output pixel x 4 output channels per work item."""

    algorithm = "deconv"

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        conv = op.main
        if conv is None or conv.common is None or len(inputs) != 1 or len(outputs) != 1:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        if not (x.fmt == y.fmt == NC4HW4 and len(x.shape) == len(y.shape) == 4 and x.shape[0] == y.shape[0]):
            return False
        return conv_weight_count_ok(op, x.shape, y.shape)

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        n, ic, h, w = x.desc.shape
        oc, oh, ow = y.desc.shape[1:]
        # the planned output size fixes SAME / hasOutputShape begin pads (MNN's convolutionTransposePad)
        params = conv2d_params(self.op.main, int(self.op.type), x.desc.shape, output_hw=(oh, ow))
        stored, bias_oc = conv_weights(self.op.main, params)
        kernel, stride, dilation, group = params.kernel, params.stride, params.dilation, params.group
        top, left = params.pads[0], params.pads[1]
        icg, ocg = ic // group, oc // group
        weight = stored.reshape(group, icg, ocg, *kernel).transpose(0, 2, 1, 3, 4).reshape(oc, icg, *kernel)
        bias = np.zeros(_c4(oc) * 4, dtype=np.float32)
        bias[:oc] = bias_oc
        act = 2 if params.relu6 else (1 if params.relu else 0)
        args = [self.buf(x), self.constant(pack_dense(weight, ic, group)), self.constant(bias), self.buf(y),
                int4(n, _c4(ic), h, w), int4(_c4(oc), oh, ow), int4(*kernel, *stride), int4(*dilation, top, left),
                np.int32(act)]
        self.launch("conv", "deconv2d", args, (ow, oh, _c4(oc) * n))
