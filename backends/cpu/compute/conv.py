"""CPU convolution entry point: resolve parameters, plan with the strategy, build the chosen kernel.

All weight work (GEMM packing, Winograd ``G g Gᵀ``, group layouts, scratch and index views) happens in
``make_conv2d_kernel``; the returned kernel's ``run`` only does per-input math on NC4HW4 arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from mnnpy.core.conv_geometry import conv_weights
from mnnpy.core.strategy import BLAS_GEMM, PACKED_GEMM, ConvPlan, plan_conv2d

from . import packed_gemm
from .blas import blas_threads
from .common import COUNTERS, Conv2DKernel, Conv2DParams, conv2d_output_shape, conv2d_params
from .deconv import DeconvKernel
from .depthwise import DepthwiseKernel
from .gemm import Gemm1x1Kernel
from .im2col import Im2ColKernel
from .winograd_conv import WinogradKernel

__all__ = ["COUNTERS", "Conv2DKernel", "Conv2DParams", "ConvPlan", "conv2d_output_shape", "conv2d_params",
           "conv_weights", "make_conv2d_kernel"]

_KERNELS: dict[str, Callable[..., Conv2DKernel]] = {
    "gemm1x1": Gemm1x1Kernel, "strassen": Gemm1x1Kernel, "winograd": WinogradKernel, "im2col": Im2ColKernel,
    "depthwise": DepthwiseKernel, "deconv": DeconvKernel,
}


def make_conv2d_kernel(conv: Any, op_type: int, in_shape_nchw: tuple, threads: int = 1, force: str | None = None,
                       output_hw: tuple[int, int] | None = None, memory_limit: int | None = None,
                       scratch: dict | None = None) -> Conv2DKernel:
    """Plan and prepare one 2-D convolution for a fixed NCHW input shape.

    Args:
        conv: the op's ``fb.Convolution2DT``.
        op_type: fb.OpType Convolution (12), ConvolutionDepthwise (13), Deconvolution (17) or
            DeconvolutionDepthwise (18).
        in_shape_nchw: input shape (N, C, H, W).
        threads: thread count given to the cost model.
        force: algorithm override for tests ("im2col", "winograd:2|4|6", "gemm1x1", "strassen[:depth]",
            "depthwise", "deconv").
        output_hw: output (H, W) of a transposed convolution with ``hasOutputShape`` (from its shape input).
        memory_limit: bytes a Winograd kernel may hold (config ``winogradMemoryLimit``; see the strategy).
        scratch: a pool of scratch buffers shared by the Winograd and im2col kernels of one session (they run one
            at a time).

    Returns:
        A kernel with ``out_shape``, ``plan`` and ``run(x_nc4hw4, out_nc4hw4)``.

    Raises:
        ValueError: on inconsistent parameters or an override that cannot run this convolution.
    """
    shape = tuple(int(v) for v in in_shape_nchw)
    params = conv2d_params(conv, op_type, shape, output_hw)
    weight, bias = conv_weights(conv, params)
    plan = plan_conv2d(params, shape, threads=threads, force=force, memory_limit=memory_limit,
                       gemm=PACKED_GEMM if packed_gemm.available() else BLAS_GEMM)
    plan = replace(plan, threads=max(int(threads), 1))
    extra = {"scratch": scratch} if plan.algorithm in ("winograd", "im2col", "gemm1x1", "strassen") else {}
    # Weight preparation at BLAS 1 thread: its small-K GEMMs (Winograd G g Gᵀ) split over an OpenBLAS pool wait on
    # the scheduler when the other core is busy (quantised 4 ms stalls): ResNet-18's transforms 90 -> 12 ms.
    with blas_threads(1):
        return _KERNELS[plan.algorithm](params, plan, shape, weight, bias, **extra)
