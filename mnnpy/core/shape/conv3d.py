"""Shape of Convolution3D (MNN: `ShapeConvolution3D`): [N, C, D, H, W] -> [N, outputCount, D', H', W']."""

from __future__ import annotations

from typing import Any

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.core.shape._util import ints
from mnnpy.core.shape.conv import conv_out_size
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError


@shape_fn(fb.OpType.Convolution3D)
def conv3d(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    c = op.main.common
    x = descs[0]
    kernels, strides, dilates, pads = ints(c.kernels), ints(c.strides), ints(c.dilates), ints(c.pads)
    if len(x.shape) != 5 or len(kernels) != 3:
        raise ModelError(f"op {op.name!r}: Convolution3D needs a 5-D input and 3 kernel sizes, got input {x.shape} "
                         f"and kernels {kernels}")
    if x.shape[1] != c.inputCount:
        raise ModelError(f"op {op.name!r}: Convolution3D takes {c.inputCount} channels, the input has {x.shape[1]}")
    dims = [conv_out_size(size, k, s, d, p, p, c.padMode)
            for size, k, s, d, p in zip(x.shape[2:], kernels, strides or [1] * 3, dilates or [1] * 3,
                                        pads or [0] * 3, strict=True)]
    return [TensorDesc((x.shape[0], c.outputCount, *dims), x.dtype, NCHW)]
