"""Winograd F(2x2, 3x3) for 3x3 stride-1 convolutions (MNN: ConvolutionWinograd / the OpenCL winograd path).

Weights are transformed once in on_resize (`U = G g G^T`, packed per tile position as float4 output channels);
a run is three launches: input transform, 16 batched channel GEMMs, output transform with bias and activation.
The two scratch buffers belong to the execution and are made in on_resize.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def _c4(c: int) -> int:
    return -(-c // 4)


def transform_weights(weight: np.ndarray) -> np.ndarray:
    """`(oc, ic, 3, 3)` -> `U` as `[16 positions][OC4][IC4][4 input lanes][4 output lanes]` float32."""
    oc, ic = weight.shape[:2]
    u = np.einsum("ij,ocjk,lk->ocil", G, weight.astype(np.float64), G)  # (oc, ic, 4, 4)
    full = np.zeros((_c4(oc) * 4, _c4(ic) * 4, 16))
    full[:oc, :ic] = u.reshape(oc, ic, 16)
    blocks = full.reshape(_c4(oc), 4, _c4(ic), 4, 16)
    return np.ascontiguousarray(blocks.transpose(4, 0, 2, 3, 1)).astype(np.float32)


def usable(kernel: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int], group: int) -> bool:
    """Whether a convolution has Winograd F(2,3)'s shape."""
    return kernel == (3, 3) and stride == (1, 1) and dilation == (1, 1) and group == 1


def worth_it(ic: int, oc: int, oh: int, ow: int) -> bool:
    """Cost rule: the transforms pay off once the channel GEMMs dominate (on PoCL: break-even near 64 channels,
    3.6x faster at 128 x 128 channels on 28 x 28)."""
    return ic >= 64 and oc >= 64 and oh * ow >= 16


def encode(execution: Any, x: Any, y: Any, weight: np.ndarray, bias: np.ndarray, pads: tuple[int, ...],
           act: int) -> None:
    """Record the three Winograd launches of `execution` (a CLExecution) for input `x` and output `y`."""
    from .execution import int4

    n, ic, h, w = x.desc.shape
    oc, oh, ow = y.desc.shape[1:]
    th, tw = -(-oh // 2), -(-ow // 2)
    tiles = n * th * tw
    ic4, oc4 = _c4(ic), _c4(oc)
    context = execution.backend.runtime.context
    v = cl.Buffer(context, cl.mem_flags.READ_WRITE, 16 * ic4 * tiles * 16)
    m = cl.Buffer(context, cl.mem_flags.READ_WRITE, 16 * oc4 * tiles * 16)
    execution.statics += [v, m]
    u = execution.constant(transform_weights(weight))
    execution.launch("winograd", "wino_in", [execution.buf(x), v, int4(n, ic4, h, w), int4(th, tw, pads[0], pads[1])],
                     (tw, th, ic4 * n))
    execution.launch("winograd", "wino_gemm", [v, u, m, int4(tiles, ic4, oc4)], (-(-tiles // 4), oc4, 16))
    execution.launch("winograd", "wino_out", [m, execution.constant(bias), execution.buf(y), int4(n, oc4, oh, ow),
                                              int4(th, tw, 0, act)], (tw, th, oc4 * n))
