"""Shapes of convolution, deconvolution, pooling and resize (NC4HW4 ops)."""

from __future__ import annotations

import math
from typing import Any

from mnnpy.core.ir import NC4HW4, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.core.shape._util import ints
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType


def _pads(common: Any) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from MNN's pads list or padY/padX."""
    pads = ints(common.pads)
    if len(pads) == 4:
        return pads[0], pads[1], pads[2], pads[3]
    return common.padY, common.padX, common.padY, common.padX


def conv_out_size(size: int, k: int, s: int, d: int, pad_b: int, pad_e: int, mode: int) -> int:
    """One spatial output size of a convolution/pooling window (PadMode CAFFE=0, VALID=1, SAME=2)."""
    ek = d * (k - 1) + 1
    if mode == 2:
        return math.ceil(size / s)
    if mode == 1:
        return math.ceil((size - ek + 1) / s)
    return (size + pad_b + pad_e - ek) // s + 1


@shape_fn(OT.Convolution, OT.ConvolutionDepthwise)
def conv(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    c = op.main.common
    x = descs[0]
    if len(x.shape) == 3:  # MNN reads a 3-D tensor as [N, C, H] with W = 1 (converted Conv1D) and keeps rank 3
        full = conv(op, [x.with_(shape=(*x.shape, 1))], values)[0]
        if full.shape[3] != 1:
            raise ModelError(f"op {op.name!r}: 3-D input {x.shape} needs a kernel of width 1")
        return [full.with_(shape=full.shape[:3])]
    if len(x.shape) != 4:
        raise ModelError(f"op {op.name!r}: convolution input must be 3-D or 4-D, got {x.shape}")
    if x.shape[1] != c.inputCount and c.inputCount > 0 and op.type == OT.Convolution:
        raise ModelError(f"op {op.name!r}: input has {x.shape[1]} channels, the weights expect {c.inputCount}")
    top, left, bottom, right = _pads(c)
    oh = conv_out_size(x.shape[2], c.kernelY, c.strideY, c.dilateY, top, bottom, c.padMode)
    ow = conv_out_size(x.shape[3], c.kernelX, c.strideX, c.dilateX, left, right, c.padMode)
    if oh <= 0 or ow <= 0:
        raise ModelError(f"op {op.name!r}: input {x.shape} is smaller than the kernel")
    return [TensorDesc((x.shape[0], c.outputCount, oh, ow), x.dtype, NC4HW4)]


@shape_fn(OT.Deconvolution, OT.DeconvolutionDepthwise)
def deconv(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    c = op.main.common
    x = descs[0]
    if c.hasOutputShape and len(values) > 1 and values[-1] is not None:
        out = ints(values[-1])  # [N, H, W, C] (MNN keeps TF's order) or [H, W]
        oh, ow = (out[1], out[2]) if len(out) == 4 else (out[-2], out[-1])
        return [TensorDesc((x.shape[0], c.outputCount, oh, ow), x.dtype, NC4HW4)]
    top, left, bottom, right = _pads(c)
    outpads = ints(c.outPads) or [0, 0]
    dims = []
    for size, k, s, d, pb, pe, op_ in ((x.shape[2], c.kernelY, c.strideY, c.dilateY, top, bottom, outpads[0]),
                                       (x.shape[3], c.kernelX, c.strideX, c.dilateX, left, right, outpads[-1])):
        if c.padMode == 2:
            dims.append(size * s)
        elif c.padMode == 1:
            dims.append((size - 1) * s + d * (k - 1) + 1)
        else:
            dims.append((size - 1) * s + d * (k - 1) + 1 - pb - pe + op_)
    return [TensorDesc((x.shape[0], c.outputCount, dims[0], dims[1]), x.dtype, NC4HW4)]


def pool3d_geometry(op: Any, spatial: tuple[int, ...]) -> list[tuple[int, int, int, int]]:
    """(kernel, stride, pad, output size) per spatial axis of a windowed Pooling3D (``Pool3D``: kernels, strides
    and symmetric pads per axis; CAFFE pads floor the output, SAME gives ceil(size / stride) and VALID no pads)."""
    p = op.main
    kernels, strides, pads = ints(p.kernels), ints(p.strides) or [1] * len(spatial), ints(p.pads) or [0] * len(spatial)
    if not (len(kernels) == len(strides) == len(pads) == len(spatial)):
        raise ModelError(f"op {op.name!r} (Pooling3D): kernels {kernels}, strides {strides} and pads {pads} do not "
                         f"fit the {len(spatial)} spatial axes of its input")
    out = []
    for size, k, s, pad in zip(spatial, kernels, strides, pads, strict=True):
        if k < 1 or s < 1 or pad < 0:
            raise ModelError(f"op {op.name!r} (Pooling3D): kernel {k}, stride {s}, pad {pad} are not valid")
        if p.padType == 2:
            total = max((-(-size // s) - 1) * s + k - size, 0)
            out.append((k, s, total // 2, -(-size // s)))
        else:
            pad = 0 if p.padType == 1 else pad
            dim = (size + 2 * pad - k) // s + 1
            if dim < 1:
                raise ModelError(f"op {op.name!r} (Pooling3D): window {k} does not fit size {size} with pad {pad}")
            out.append((k, s, pad, dim))
    return out


@shape_fn(OT.Pooling, OT.Pooling3D)
def pool(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    p = op.main
    x = descs[0]
    if p is None or p.isGlobal:
        return [TensorDesc((x.shape[0], x.shape[1]) + (1,) * (len(x.shape) - 2), x.dtype, NC4HW4)]
    if op.type == OT.Pooling3D:
        dims = tuple(g[3] for g in pool3d_geometry(op, tuple(x.shape[2:])))
        return [TensorDesc((x.shape[0], x.shape[1], *dims), x.dtype, NC4HW4)]
    pads = ints(p.pads)
    top, left, bottom, right = pads if len(pads) == 4 else (p.padY, p.padX, p.padY, p.padX)
    dims = []
    for size, k, s, pb, pe in ((x.shape[2], p.kernelY, p.strideY, top, bottom),
                               (x.shape[3], p.kernelX, p.strideX, left, right)):
        if p.padType == 2:
            dims.append(math.ceil(size / s))
        elif p.padType == 1:
            dims.append(math.ceil((size - k + 1) / s))
        elif p.ceilModel:
            out = math.ceil((size + pb + pe - k) / s) + 1
            if (out - 1) * s >= size + pb:  # the last window would start in the end padding: dropped
                out -= 1
            dims.append(out)
        else:
            dims.append((size + pb + pe - k) // s + 1)
    return [TensorDesc((x.shape[0], x.shape[1], dims[0], dims[1]), x.dtype, NC4HW4)]


@shape_fn(OT.Interp, needs_values=(1,))
def interp(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    p = op.main
    x = descs[0]
    oh, ow = p.outputHeight, p.outputWidth
    if len(values) > 1 and values[1] is not None:
        v = values[1].ravel()
        if v.dtype.kind == "f":  # scales for every dim (ONNX) or (h, w)
            sh, sw = float(v[-2]), float(v[-1])
            oh, ow = math.floor(x.shape[2] * sh), math.floor(x.shape[3] * sw)
        else:
            oh, ow = int(v[-2]), int(v[-1])
    elif oh <= 0 or ow <= 0:
        oh, ow = int(x.shape[2] * p.heightScale), int(x.shape[3] * p.widthScale)
    return [TensorDesc((x.shape[0], x.shape[1], oh, ow), x.dtype, NC4HW4)]
