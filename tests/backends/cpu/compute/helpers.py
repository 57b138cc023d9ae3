"""Test helpers: build Convolution2DT ops and a direct (obviously correct) float64 numpy convolution."""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.compute.conv import make_conv2d_kernel
from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4, packed_shape, unpack_nc4hw4
from mnnpy.schema import mnn_generated as fb
from support import references


def reference_conv(x: np.ndarray, conv: fb.Convolution2DT, params: object) -> np.ndarray:
    """Direct convolution (float64) with resolved pads (support.references.conv2d) and the fused activation."""
    (kh, kw), g, ic, oc = params.kernel, params.group, params.in_channels, params.out_channels
    w = np.asarray(conv.weight, np.float64).reshape(oc, ic // g, kh, kw)
    out = references.conv2d(x, w, np.zeros(oc), params.stride, params.pads, params.dilation, g)
    return _finish(out, conv, params)


def reference_deconv(x: np.ndarray, conv: fb.Convolution2DT, params: object) -> np.ndarray:
    """Direct transposed convolution (float64; support.references.deconv2d_full), cropped by the pads."""
    (kh, kw), g, ic, oc = params.kernel, params.group, params.in_channels, params.out_channels
    w = np.asarray(conv.weight, np.float64).reshape(ic, oc // g, kh, kw)
    full = references.deconv2d_full(x, w, np.zeros(oc), params.stride, params.dilation, g, params.out_pads)
    pt, pl, pb, pr = params.pads
    oh, ow = full.shape[2] - pt - pb, full.shape[3] - pl - pr
    return _finish(full[:, :, pt: pt + oh, pl: pl + ow], conv, params)


def _finish(out: np.ndarray, conv: fb.Convolution2DT, params: object) -> np.ndarray:
    out = out + np.asarray(conv.bias, np.float64).reshape(1, -1, 1, 1)
    if params.relu6:
        out = np.clip(out, 0, 6)
    elif params.relu:
        out = np.maximum(out, 0)
    return out


def run_kernel(conv: fb.Convolution2DT, op_type: int, x: np.ndarray, force: str | None = None,
               threads: int = 1) -> tuple[np.ndarray, object]:
    """Make a kernel, run it on NC4HW4 input into a garbage-filled NC4HW4 output; return (NCHW result, kernel)."""
    kernel = make_conv2d_kernel(conv, op_type, x.shape, threads=threads, force=force)
    out = np.full(packed_shape(kernel.out_shape), np.nan, dtype=np.float32)
    kernel.run(pack_nc4hw4(x), out)
    oc = kernel.out_shape[1]
    if oc % 4:
        assert not out[:, -1, ..., oc % 4 :].any(), "padded output channels must be zero"
    return unpack_nc4hw4(out, oc), kernel


def assert_close(actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-4) -> None:
    """Relative error against the reference's scale (max-norm), as the acceptance criterion states it."""
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    scale = max(float(np.abs(expected).max()), 1.0)
    err = float(np.abs(actual.astype(np.float64) - expected).max())
    assert err <= rtol * scale, f"max abs error {err:.3g} > {rtol} * {scale:.3g}"
