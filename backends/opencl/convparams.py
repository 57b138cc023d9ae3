"""Convolution / pooling geometry for the OpenCL kernels: pads resolved from the planned output shape.

The output shape comes from the core's shape inference, so SAME padding follows from it; CAFFE pads come from
`pads` (top, left, bottom, right), a 2-entry `pads` (y, x) or `padY`/`padX`, as MNN stores them.
"""

from __future__ import annotations

from typing import Any

PAD_CAFFE, PAD_VALID, PAD_SAME = 0, 1, 2


def same_pad(size: int, out: int, k: int, s: int, d: int) -> tuple[int, int]:
    """(before, after) padding of SAME mode for one axis."""
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def resolve_pads(params: Any, pad_mode: int, in_hw: tuple[int, int], out_hw: tuple[int, int],
                 kernel: tuple[int, int], stride: tuple[int, int],
                 dilation: tuple[int, int] = (1, 1)) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) padding of a Convolution2DCommon or Pool table.

    Args:
        params: the table with `pads`, `padX`, `padY`.
        pad_mode: its padMode / padType (CAFFE 0, VALID 1, SAME 2).
        in_hw: input (H, W).
        out_hw: output (H, W).
        kernel: (kh, kw).
        stride: (sh, sw).
        dilation: (dh, dw).
    """
    if pad_mode == PAD_SAME:
        top, bottom = same_pad(in_hw[0], out_hw[0], kernel[0], stride[0], dilation[0])
        left, right = same_pad(in_hw[1], out_hw[1], kernel[1], stride[1], dilation[1])
        return top, left, bottom, right
    if pad_mode == PAD_VALID:
        return 0, 0, 0, 0
    pads = list(params.pads) if getattr(params, "pads", None) is not None else []
    if len(pads) == 4:
        return int(pads[0]), int(pads[1]), int(pads[2]), int(pads[3])
    if len(pads) == 2:
        return int(pads[0]), int(pads[1]), int(pads[0]), int(pads[1])
    return int(params.padY), int(params.padX), int(params.padY), int(params.padX)
