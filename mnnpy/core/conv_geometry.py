"""Convolution geometry and weights, shared by every backend (the `.mnn` meaning of Convolution2D / Deconvolution).

`conv2d_params` resolves an op's Convolution2DCommon for one input shape (pads of CAFFE/VALID/SAME modes as MNN),
`conv2d_output_shape` gives the output, `conv_weights` returns float32 weight and bias, decoding weight-only
quantised encodings (IDSTQuan) once. Pure functions of the op and the shapes: backends call them in `on_resize`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mnnpy.core.idst import dequantize_idst

OP_CONVOLUTION, OP_CONVOLUTION_DEPTHWISE, OP_DECONVOLUTION, OP_DECONVOLUTION_DEPTHWISE = 12, 13, 17, 18
PAD_CAFFE, PAD_VALID, PAD_SAME = 0, 1, 2


@dataclass(frozen=True)
class Conv2DParams:
    """A convolution's geometry with pads resolved for one input shape.

    Attributes:
        kernel: (kh, kw).
        stride: (sh, sw).
        dilation: (dh, dw).
        pads: (top, left, bottom, right) actually applied.
        group: number of groups.
        in_channels: input channels.
        out_channels: output channels.
        relu: fuse ReLU.
        relu6: fuse ReLU6.
        transposed: Deconvolution (transposed convolution).
        out_pads: (h, w) extra output size of a transposed convolution.
    """

    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pads: tuple[int, int, int, int]
    group: int
    in_channels: int
    out_channels: int
    relu: bool = False
    relu6: bool = False
    transposed: bool = False
    out_pads: tuple[int, int] = (0, 0)


def _same_pads(size: int, k: int, s: int, d: int, transposed: bool) -> tuple[int, int]:
    extent = (k - 1) * d + 1
    if transposed:
        total = max((size - 1) * s + extent - size * s, 0)
    else:
        total = max((-(-size // s) - 1) * s + extent - size, 0)
    return total // 2, total - total // 2


def conv2d_params(conv: Any, op_type: int, in_shape_nchw: tuple[int, ...],
                  output_hw: tuple[int, int] | None = None) -> Conv2DParams:
    """Resolve a ``fb.Convolution2DT`` for one NCHW input shape, as MNN does.

    Args:
        conv: the op's ``Convolution2DT`` (object API).
        op_type: Convolution (12), ConvolutionDepthwise (13), Deconvolution (17) or DeconvolutionDepthwise (18).
        in_shape_nchw: input shape (N, C, H, W).
        output_hw: for a transposed convolution whose output size is given (``hasOutputShape``): the (H, W) to
            produce; the end pads / output padding are derived from it (begin pads as MNN's
            ``convolutionTransposePad``).

    Returns:
        The resolved parameters.

    Raises:
        ValueError: for an unsupported op type or inconsistent channels/groups.
    """
    if op_type not in (OP_CONVOLUTION, OP_CONVOLUTION_DEPTHWISE, OP_DECONVOLUTION, OP_DECONVOLUTION_DEPTHWISE):
        raise ValueError(f"op type {op_type} is not a 2-D convolution")
    if len(in_shape_nchw) != 4:
        raise ValueError(f"2-D convolution needs an NCHW input, got shape {tuple(in_shape_nchw)}")
    c = conv.common
    transposed = op_type in (OP_DECONVOLUTION, OP_DECONVOLUTION_DEPTHWISE)
    ic = int(in_shape_nchw[1])
    oc = int(c.outputCount) or (len(conv.bias) if conv.bias is not None and len(conv.bias) else ic)
    group = ic if op_type in (OP_CONVOLUTION_DEPTHWISE, OP_DECONVOLUTION_DEPTHWISE) else max(int(c.group), 1)
    if ic % group or oc % group:
        raise ValueError(f"channels in={ic} out={oc} are not divisible by group={group}")
    kh, kw = max(int(c.kernelY), 1), max(int(c.kernelX), 1)
    sh, sw = max(int(c.strideY), 1), max(int(c.strideX), 1)
    dh, dw = max(int(c.dilateY), 1), max(int(c.dilateX), 1)
    if c.padMode == PAD_SAME:
        top, bottom = _same_pads(int(in_shape_nchw[2]), kh, sh, dh, transposed)
        left, right = _same_pads(int(in_shape_nchw[3]), kw, sw, dw, transposed)
        pads = (top, left, bottom, right)
    elif c.padMode == PAD_VALID:
        pads = (0, 0, 0, 0)
    elif c.pads is not None and len(c.pads) == 4:
        pads = (int(c.pads[0]), int(c.pads[1]), int(c.pads[2]), int(c.pads[3]))
    elif c.pads is not None and len(c.pads) == 2:
        pads = (int(c.pads[0]), int(c.pads[1]), int(c.pads[0]), int(c.pads[1]))
    else:
        pads = (int(c.padY), int(c.padX), int(c.padY), int(c.padX))
    out_pads = (0, 0)
    if transposed and c.outPads is not None and len(c.outPads) >= 2:
        out_pads = (int(c.outPads[0]), int(c.outPads[1]))
    if transposed and output_hw is not None:
        pads, out_pads = _fit_transposed(in_shape_nchw, (kh, kw), (sh, sw), (dh, dw), pads, output_hw,
                                         c.padMode == PAD_SAME)
    return Conv2DParams((kh, kw), (sh, sw), (dh, dw), pads, group, ic, oc, bool(c.relu), bool(c.relu6),
                        transposed, out_pads)


def _fit_transposed(in_shape: tuple[int, ...], k: tuple[int, int], s: tuple[int, int], d: tuple[int, int],
                    pads: tuple[int, ...], output_hw: tuple[int, int], same: bool) -> tuple[tuple, tuple[int, int]]:
    begin, end, extra = [], [], []
    for axis in range(2):
        full = (int(in_shape[2 + axis]) - 1) * s[axis] + (k[axis] - 1) * d[axis] + 1
        total = full - int(output_hw[axis])
        first = max(total // 2, 0) if same else max(min(pads[axis], full), 0)
        last = total - first
        begin.append(first)
        end.append(max(last, 0))
        extra.append(max(-last, 0))
    return (begin[0], begin[1], end[0], end[1]), (extra[0], extra[1])


def pool2d_pads(pool: Any, in_hw: tuple[int, int], out_hw: tuple[int, int]) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) pads of a windowed ``PoolT`` for one input/output size, as MNN resolves them.

    SAME follows from the planned output size (the shape function gives ceil(size / stride)); CAFFE pads come from
    ``pads`` (top, left, bottom, right), a 2-entry ``pads`` (y, x) or ``padY``/``padX``.
    """
    if pool.padType == PAD_SAME:
        kernel, stride = (max(int(pool.kernelY), 1), max(int(pool.kernelX), 1)), \
            (max(int(pool.strideY), 1), max(int(pool.strideX), 1))
        total = [max((out_hw[i] - 1) * stride[i] + kernel[i] - in_hw[i], 0) for i in range(2)]
        return total[0] // 2, total[1] // 2, total[0] - total[0] // 2, total[1] - total[1] // 2
    if pool.padType == PAD_VALID:
        return 0, 0, 0, 0
    pads = list(pool.pads) if pool.pads is not None else []
    if len(pads) == 4:
        return int(pads[0]), int(pads[1]), int(pads[2]), int(pads[3])
    if len(pads) == 2:
        return int(pads[0]), int(pads[1]), int(pads[0]), int(pads[1])
    return int(pool.padY), int(pool.padX), int(pool.padY), int(pool.padX)


def conv2d_output_shape(params: Conv2DParams, in_shape_nchw: tuple[int, ...]) -> tuple[int, int, int, int]:
    """NCHW output shape of a (possibly transposed) 2-D convolution."""
    n, _, h, w = in_shape_nchw
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr) = params.kernel, params.stride, params.dilation, params.pads
    if params.transposed:
        oh = (h - 1) * sh + (kh - 1) * dh + 1 - pt - pb + params.out_pads[0]
        ow = (w - 1) * sw + (kw - 1) * dw + 1 - pl - pr + params.out_pads[1]
    else:
        oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
        ow = (w + pl + pr - (kw - 1) * dw - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        raise ValueError(f"convolution output would be empty ({oh}x{ow}) for input {tuple(in_shape_nchw)}")
    return (int(n), params.out_channels, int(oh), int(ow))


def conv_weights(conv: Any, params: Conv2DParams) -> tuple[np.ndarray, np.ndarray]:
    """Float32 weight (in the op's stored layout) and bias of a ``Convolution2DT``.

    Weight-only quantised ops (``quanParameter``, no float ``weight``) are dequantised here, once.

    Raises:
        NotImplementedError: for sparse or legacy quantised encodings.
        ValueError: when the weight size does not match the parameters.
    """
    (kh, kw), g = params.kernel, params.group
    ic, oc = params.in_channels, params.out_channels
    shape = (ic, oc // g, kh, kw) if params.transposed else (oc, ic // g, kh, kw)
    weight = np.asarray(conv.weight if conv.weight is not None else [], dtype=np.float32)
    if weight.size == 0 and getattr(conv, "quanParameter", None) is not None:
        # MNN scales the flat buffer in outputCount rows for every conv type (a Deconvolution's stored
        # (ic, oc/g, kh, kw) weights too, as MNNConvert writes them)
        weight = dequantize_idst(conv.quanParameter, oc, int(np.prod(shape)))
    if weight.size != int(np.prod(shape)):
        raise ValueError(f"convolution weight has {weight.size} values, expected {shape}")
    bias = np.zeros(oc, dtype=np.float32)
    if conv.bias is not None and len(conv.bias):
        bias[:] = np.asarray(conv.bias, dtype=np.float32).reshape(oc)
    return weight.reshape(shape), bias
