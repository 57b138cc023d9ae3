"""Shared pieces of the CPU convolution kernels: resolved parameters, output shapes, work counters, epilogue."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mnnpy.core.strategy import ConvPlan

PACK = 4
OP_CONVOLUTION, OP_CONVOLUTION_DEPTHWISE, OP_DECONVOLUTION, OP_DECONVOLUTION_DEPTHWISE = 12, 13, 17, 18
PAD_CAFFE, PAD_VALID, PAD_SAME = 0, 1, 2

# Work counters: the session asserts that a second run transforms no weights.
COUNTERS: dict[str, int] = {"weight_transforms": 0, "kernels_made": 0, "runs": 0}


def ceil4(value: int) -> int:
    """Round a channel count up to the NC4HW4 pack."""
    return (value + PACK - 1) // PACK * PACK


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


class Conv2DKernel:
    """Base class: a convolution prepared for one input shape. Subclasses implement ``run``.

    Attributes:
        params: resolved parameters.
        plan: the strategy's ``ConvPlan``.
        in_shape: NCHW input shape.
        out_shape: NCHW output shape.
    """

    def __init__(self, params: Conv2DParams, plan: ConvPlan, in_shape: tuple[int, ...], bias: np.ndarray) -> None:
        self.params, self.plan = params, plan
        self.in_shape = tuple(int(v) for v in in_shape)
        self.out_shape = conv2d_output_shape(params, self.in_shape)
        self.bias_row = np.zeros(ceil4(params.out_channels), dtype=np.float32)
        self.bias_row[: params.out_channels] = bias
        COUNTERS["kernels_made"] += 1

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """Convolve NC4HW4 ``x`` into the preallocated NC4HW4 ``out`` (bias and activation fused)."""
        raise NotImplementedError

    def _activate(self, y: np.ndarray) -> None:
        if self.params.relu6:
            np.clip(y, 0.0, 6.0, out=y)
        elif self.params.relu:
            np.maximum(y, 0.0, out=y)

    def _store_nhwc(self, y: np.ndarray, out: np.ndarray) -> None:
        """Add bias, activate and copy an ``[N, OH, OW, OCp]`` result (any strides) into NC4HW4 ``out``."""
        y += self.bias_row
        self._activate(y)
        n, oh, ow, ocp = y.shape
        copy_pixels(out, y.reshape(n, oh, ow, ocp // PACK, PACK), (0, 3, 1, 2))


def nhwc_view(buffer: np.ndarray, rows: slice, cols: slice) -> np.ndarray:
    """``[N, h, w, C4, 4]`` view of a region of an ``[N, H, W, Cp]`` buffer, to receive a transposed NC4HW4 input."""
    region = buffer[:, rows, cols, :]
    n, h, w, cp = region.shape
    return region.reshape(n, h, w, cp // PACK, PACK)


def from_nc4hw4(x: np.ndarray) -> np.ndarray:
    """``[N, H, W, C4, 4]`` transposed view of an NC4HW4 array (no copy)."""
    return x.transpose(0, 2, 3, 1, 4)


_LANE = np.dtype("V16")  # one NC4HW4 pixel: 4 float32 lanes moved as a single 16-byte element


def _lanes(a: np.ndarray) -> np.ndarray | None:
    if a.dtype != np.float32 or a.shape[-1] != PACK or a.strides[-1] != a.itemsize:
        return None
    return a.view(_LANE)[..., 0]


def copy_pixels(dst: np.ndarray, src: np.ndarray, axes: tuple[int, ...]) -> None:
    """``dst[...] = src.transpose(*axes, last)`` for ``[..., 4]`` float32 arrays, moving 16-byte pixels.

    Transposing NC4HW4 <-> NHWC with the 4 lanes as one element is 5-10x faster in numpy than with an inner loop
    of 4 floats. Falls back to a plain strided copy when the lanes are not contiguous.
    """
    dst_l, src_l = _lanes(dst), _lanes(src)
    if dst_l is None or src_l is None:
        np.copyto(dst, src.transpose(*axes, src.ndim - 1))
    else:
        np.copyto(dst_l, src_l.transpose(*axes))


def scatter_groups(y_groups: np.ndarray, y_flat: np.ndarray, channels: int) -> None:
    """Copy a ``[G, M, ocg]`` grouped GEMM result into the first ``channels`` columns of ``[M, OCp]``."""
    g, m, ocg = y_groups.shape
    np.copyto(y_flat[:, :channels].reshape(m, g, ocg), y_groups.transpose(1, 0, 2))


def gather_groups(x_flat: np.ndarray, channels: int, group: int) -> np.ndarray:
    """``[G, M, icg]`` strided view of the first ``channels`` columns of an ``[M, Cp]`` matrix."""
    m = x_flat.shape[0]
    return x_flat[:, :channels].reshape(m, group, channels // group).transpose(1, 0, 2)


def output_tiles(n: int, rows: int, row_bytes: int, limit: int) -> list[tuple[int, int, int, int]]:
    """Split ``n`` images of ``rows`` rows into ``(n0, n1, r0, r1)`` tiles of at most ~``limit`` scratch bytes.

    Whole images (several per tile) when one fits, else bands of rows of one image (at least one row).
    """
    per_tile = max(1, limit // max(row_bytes, 1))
    if per_tile >= rows:
        images = max(1, per_tile // rows)
        return [(i, min(i + images, n), 0, rows) for i in range(0, n, images)]
    return [(i, i + 1, r, min(r + per_tile, rows)) for i in range(n) for r in range(0, rows, per_tile)]
