"""Convolution, ConvolutionDepthwise, Deconvolution(Depthwise): glue to the strategy-chosen kernels in compute/."""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from mnnpy.backends.cpu.compute.common import in_turn
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core import session
from mnnpy.core.registry import cpu_kernel

OT = fb.OpType
# A chain split over lanes (``Convolution._lane_chains``) hands off once for three ops, so each lane's share may be
# smaller than a single kernel's (``strategy.LANE_MIN_FLOPS``).
CHAIN_LANE_MIN_FLOPS = 1e7


def _with_output_pads(conv: Any, in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> Any:
    """A copy of a Deconvolution's params whose explicit pads produce the requested output size (ONNX
    output_shape rule: total = s*(in-1) + d*(k-1) + 1 - out, the larger half at the start)."""
    common = copy.copy(conv.common)
    pads, outpads = [], []
    for size, out, k, s, d in ((in_shape[2], out_shape[2], common.kernelY, common.strideY, common.dilateY),
                               (in_shape[3], out_shape[3], common.kernelX, common.strideX, common.dilateX)):
        total = s * (size - 1) + d * (k - 1) + 1 - out
        pads.append((max(total, 0) - max(total, 0) // 2, max(total, 0) // 2))
        outpads.append(max(-total, 0))
    common.padMode, common.hasOutputShape = 0, False
    common.pads = [pads[0][0], pads[1][0], pads[0][1], pads[1][1]]
    common.padY, common.padX = pads[0][0], pads[1][0]
    common.outPads = outpads
    new = copy.copy(conv)
    new.common = common
    return new


def _chain_calls(first: Any, middle: Any, second: Any, x: np.ndarray, out: np.ndarray,
                 stride_x: int) -> list[Callable[[], None]]:
    """The three runs of an NHWC chain (``Convolution.fuse_between``) over NC4HW4 ``x`` into NC4HW4 ``out``: the
    producer (a 1x1 expand writing the depthwise's zero-bordered input itself, or an im2col stem into its NHWC rows),
    the depthwise ``middle`` (made with ``chain``), the project GEMM."""
    from mnnpy.backends.cpu.compute.gemm import Gemm1x1Kernel

    if middle.jit is not None:
        second.compiled_store()  # bias + NC4HW4 store of the project GEMM in one compiled pass
    last = partial(second.run_from_nhwc, middle.acc, out)
    if isinstance(first, Gemm1x1Kernel):  # the expand GEMM writes the depthwise's padded input itself
        # a compiled depthwise applies the expand's ReLU / ReLU6 to each input row as it first reads it: one pass
        # less over the widest tensor (MobileNetV2: 1.1 ms of clamps per run)
        deferred = (first.params.relu or first.params.relu6) and middle.clamp_input(*first.clamp_bounds())
        fill = first.into_padded(x, middle.phases, middle.chain_rows, middle.chain_phases, stride_x,
                                 activate=not deferred)
        return [fill, middle.run_filled, last]
    return [partial(first.run_to_nhwc, x), partial(middle.run_nhwc, first.y), last]


def _nothing() -> None:
    """The run of a command whose work another's run did (a chain's lanes: ``Convolution._lane_chains``; an input
    pack the stem copies from itself: ``Convolution.fuse_after``)."""


@cpu_kernel(OT.Convolution, OT.ConvolutionDepthwise, OT.Deconvolution, OT.DeconvolutionDepthwise,
            formats=("NC4HW4",))
class Convolution(CPUExecution):
    """Plans and prepares the convolution in on_resize (weights packed/transformed once per input shape).

    The config key `convAlgorithm` forces an algorithm for tests: a string ("im2col", "winograd:4", "strassen",
    ...) applies to every convolution it can run, a dict {op name: algorithm} to the named ones (strictly).
    """

    def on_resize(self) -> None:
        self.chain_fed = False
        self.nchw_fed: np.ndarray | None = None  # the input raster's NCHW source its run reads (``fuse_after``)
        self.chain_tail: tuple | None = None  # (kernel, depthwise rows) as a one-lane chain's project (fuse_between)
        main = self.op.main
        if main is None:
            raise ModelError(f"op {self.op.name!r}: convolution without parameters")
        if main.common.hasOutputShape and self.op.type in (OT.Deconvolution, OT.DeconvolutionDepthwise):
            main = _with_output_pads(main, self.x.desc.shape, self.y.desc.shape)
        n_weights = len(self.inputs) - (2 if main.common.hasOutputShape else 1)
        no_weight = (main.weight is None or len(main.weight) == 0) and main.quanParameter is None
        self.weight_refs = self.inputs[1: 1 + n_weights] if no_weight and n_weights > 0 else []
        if no_weight and not self.weight_refs:
            raise ModelError(f"op {self.op.name!r}: convolution has no weights")
        force = self.backend.config.get("convAlgorithm")
        self.strict = isinstance(force, dict)  # {op name: algorithm} must apply; a plain string where it can
        self.force = force.get(self.op.name) if isinstance(force, dict) else force
        self.threads = int(self.backend.config.get("numThread", 1) or 1)
        limit = self.backend.config.get("winogradMemoryLimit")
        self.memory_limit = int(limit) if limit is not None else None
        shape = self.x.desc.shape
        self.shape = (*shape, 1) if len(shape) == 3 else shape  # [N, C, H] runs as [N, C, H, 1]
        self.x_view = self.x.array.reshape(*self.x.array.shape[:3], 1, 4) if len(shape) == 3 else self.x.array
        self.y_view = self.y.array.reshape(*self.y.array.shape[:3], 1, 4) if len(self.y.desc.shape) == 3 \
            else self.y.array
        self.params = main
        self.runtime_weights = bool(self.weight_refs) and not all(r.const for r in self.weight_refs)
        if self.runtime_weights:  # weights are data (MNN: ConvolutionTiledExecutorMultiInput): prepared per run
            self.algorithm = "runtime-weights"
            self.kernel: Any = None
            return
        if self.weight_refs:
            self.params = self._with_weights(main)
        key = (id(main), self.op.type, self.shape, str(self.force), self.threads, self.memory_limit)
        cached = self.backend.kernel_cache.get(key)
        if cached is not None and cached[0] is main:
            self.kernel = cached[1]
        else:
            self.kernel = self._make(self.params)
            self.backend.kernel_cache[key] = (main, self.kernel)
        self.algorithm = self.kernel.plan.algorithm

    def _with_weights(self, main: Any) -> Any:
        """A copy of the params carrying the weight (and bias) inputs' current values."""
        conv = copy.copy(main)
        conv.weight = np.asarray(self.weight_refs[0].array, np.float32).ravel()
        conv.bias = np.asarray(self.weight_refs[1].array, np.float32).ravel() if len(self.weight_refs) > 1 else None
        return conv

    def _make(self, params: Any) -> Any:
        from mnnpy.backends.cpu.compute.conv import make_conv2d_kernel

        # one scratch pool per backend (one per session; its kernels run in turn), kept with its prepared kernels
        scratch = self.backend.scratch_pool("conv-scratch")
        try:
            try:
                kernel = make_conv2d_kernel(params, self.op.type, self.shape, threads=self.threads, force=self.force,
                                            memory_limit=self.memory_limit, scratch=scratch)
            except ValueError:
                if self.strict or self.force is None:
                    raise
                kernel = make_conv2d_kernel(params, self.op.type, self.shape, threads=self.threads,
                                            memory_limit=self.memory_limit, scratch=scratch)
        except (ValueError, NotImplementedError) as exc:
            raise ModelError(f"op {self.op.name!r}: {exc}") from exc
        session.COUNTERS["weight_transforms"] += 1
        if tuple(kernel.out_shape)[: len(self.y.desc.shape)] != self.y.desc.shape:
            raise ModelError(f"op {self.op.name!r}: kernel output {kernel.out_shape} != {self.y.desc.shape}")
        return kernel

    def on_execute(self) -> None:
        if self.runtime_weights:
            self.kernel = self._make(self._with_weights(self.params))
        self.kernel.run(self.x_view, self.y_view)

    def lane_phases(self, claim: Any = None) -> list[list[Callable[[], None]]] | None:
        """``on_execute``'s work as phases of lane tasks worker processes may run, where it is only that
        (``lane_groups``); else None."""
        phases = getattr(self.kernel, "lane_phases", None)
        if self.runtime_weights or phases is None or getattr(self.kernel, "shared", True) is False:
            return None
        return phases(self.x_view, self.y_view, claim=claim)

    def fuse_between(self, producer: Any, consumer: Any) -> list[Callable[[], None]] | None:
        """A depthwise convolution between two 1x1 convolutions (MobileNet's inverted residual: expand ->
        depthwise -> project; the first may also be a one-lane im2col convolution, a stem), all one lane: the three
        run in NHWC. The producer's GEMM rows go straight into the depthwise's zero-bordered input and the depthwise
        writes the project's GEMM operand, so the two expanded tensors never make the NC4HW4 round trip (4 layout
        copies of the widest tensors -> 1 plain copy; MobileNetV2 blocks 25-45% faster). The linking tensors are
        left unwritten: the schedule uses these runs only where no callback can look at them."""
        from mnnpy.backends.cpu.compute.conv import conv2d_params, conv_weights
        from mnnpy.backends.cpu.compute.depthwise import DepthwiseKernel
        from mnnpy.backends.cpu.compute.gemm import Gemm1x1Kernel
        from mnnpy.backends.cpu.compute.im2col import Im2ColKernel

        first, second = (getattr(e, "kernel", None) for e in (producer, consumer))
        lanes = self._chain_lanes(first, second)
        if lanes > 1 and self._linked(producer, consumer):
            calls = self._lane_chains(producer, consumer, lanes)
            if calls is not None:
                return calls
        if self.op.type != OT.ConvolutionDepthwise or not isinstance(self.kernel, DepthwiseKernel) \
                or len(self.kernel.bands) != 1 or self.runtime_weights \
                or not (isinstance(first, Gemm1x1Kernel | Im2ColKernel) and first.chains) \
                or not (isinstance(second, Gemm1x1Kernel) and second.chains):
            return None
        n, c, h, w = self.kernel.in_shape
        if first.y.shape != (n, h, w, 4 * -(-c // 4)) or second.x_nhwc.shape[:3] != (n, *self.kernel.out_shape[2:]) \
                or second.in_shape[1] != c or not self._linked(producer, consumer):
            return None
        pool = self.backend.scratch_pool("conv-scratch")
        shape = self.kernel.in_shape
        params = conv2d_params(self.params, self.op.type, shape)
        middle = DepthwiseKernel(params, self.kernel.plan, shape, *conv_weights(self.params, params), chain=pool)
        consumer.chain_tail = (second, middle.acc)  # (``residual_run``: the project's run as the chain makes it)
        return _chain_calls(first, middle, second, _source(producer), consumer.y_view, params.stride[1])

    def _linked(self, producer: Any, consumer: Any) -> bool:
        """Whether the producer writes this convolution's input and the consumer reads its output (two convolutions
        whose kernels chain)."""
        return bool(np.shares_memory(producer.y_view, self.x.array) and np.shares_memory(consumer.x_view,
                                                                                          self.y.array))

    def _chain_lanes(self, first: Any, second: Any) -> int:
        """Lanes for an expand -> depthwise -> project chain with ``numThread`` > 1 (1: none; see _lane_chains)."""
        from mnnpy.backends.cpu.compute.depthwise import DepthwiseKernel
        from mnnpy.backends.cpu.compute.gemm import Gemm1x1Kernel
        from mnnpy.backends.cpu.compute.im2col import Im2ColKernel

        from mnnpy.core.strategy import lane_count

        if self.threads < 2 or self.op.type != OT.ConvolutionDepthwise or self.runtime_weights \
                or not isinstance(self.kernel, DepthwiseKernel) \
                or not ((isinstance(first, Gemm1x1Kernel) and first.x_groups is None)
                        or (isinstance(first, Im2ColKernel) and first.params.group == 1)) \
                or not (isinstance(second, Gemm1x1Kernel) and second.x_groups is None):
            return 1
        n, e, h, w = self.kernel.in_shape
        _, _, oh, ow = self.kernel.out_shape
        kh, kw = self.kernel.params.kernel
        taps = first.params.kernel[0] * first.params.kernel[1]
        flops = 2.0 * n * (h * w * first.in_shape[1] * e * taps + oh * ow * e * (kh * kw + second.out_shape[1]))
        return min(lane_count(self.threads, flops, CHAIN_LANE_MIN_FLOPS), oh)

    def _lane_chains(self, producer: Any, consumer: Any, lanes: int) -> list[Callable[[], None]] | None:
        """The chain of ``fuse_between`` split by bands of output rows over ``lanes`` lanes, each lane running its
        band's whole chain: the expand GEMM (or im2col stem) of the input rows the band's taps read (a halo of
        (kh - 1) x dh rows computed by both neighbours), the depthwise and the project GEMM, into the band's rows of
        the output. No lane waits for another until the chain ends (one hand-off per chain instead of one per op,
        and no NC4HW4 round trip of the expanded tensors, which the two-lane kernels unchained made). Each lane has
        its own kernels over its sub-shapes (sharing the full kernels' weight arrays) and scratch pool; the lanes may
        be the session's worker processes (what crosses between their tasks is in the arena or the pooled scratch).
        Where the arena gave the output the input's memory (the input dies at the expand), a lane's project would
        overwrite input rows another lane has yet to read: then the lanes meet once more, after the depthwise.
        None where the sub-kernels cannot chain (the caller then tries the one-lane chain)."""
        from dataclasses import replace

        from mnnpy.backends.cpu.compute.blas import run_lanes
        from mnnpy.backends.cpu.compute.conv import conv2d_params, conv_weights
        from mnnpy.backends.cpu.compute.depthwise import DepthwiseKernel
        from mnnpy.backends.cpu.compute.gemm import Gemm1x1Kernel
        from mnnpy.backends.cpu.compute.im2col import Im2ColKernel

        first, second = producer.kernel, consumer.kernel
        n, e, h, w = self.kernel.in_shape
        ow = self.kernel.out_shape[3]
        params = conv2d_params(self.params, self.op.type, self.kernel.in_shape)
        (kh, _), (sh, sw), (dh, _), (pt, pl, _, pr) = params.kernel, params.stride, params.dilation, params.pads
        dw_weights = conv_weights(self.params, params)
        first_weights = conv_weights(producer.params, first.params)  # the same for every band (not the pads)
        second_weights = conv_weights(consumer.params, second.params)
        oh = self.kernel.out_shape[2]
        step = -(-oh // lanes)
        heads, tails = [], []  # per lane: expand + depthwise, project
        for k, r0 in enumerate(range(0, oh, step)):
            r1 = min(r0 + step, oh)
            top, bottom = r0 * sh - pt, (r1 - 1) * sh + (kh - 1) * dh + 1 - pt  # input rows the band reads
            a, b = max(top, 0), min(bottom, h)
            pool = self.backend.scratch_pool("conv-scratch" if k == 0 else f"conv-chain-lane{k}")
            band = replace(params, pads=(a - top, pl, bottom - b, pr))
            middle = DepthwiseKernel(band, self.kernel.plan, (n, e, b - a, w), *dw_weights, chain=pool)
            expand, rows = self._band_producer(first, first_weights, (a, b), pool)
            project = Gemm1x1Kernel(second.params, replace(second.plan, threads=1), (n, e, r1 - r0, ow),
                                    *second_weights, scratch=pool)
            if tuple(middle.out_shape) != (n, e, r1 - r0, ow) or not (expand.chains and project.chains) \
                    or expand.y.shape != (n, b - a, w, 4 * -(-e // 4)):
                return None
            for sub, full in ((expand, first), (project, second)):  # one copy of the weights (and of their packing)
                if isinstance(sub, Gemm1x1Kernel) and sub.w_gemm.shape == full.w_gemm.shape:
                    sub.w_gemm, sub.weight, sub.packed = full.w_gemm, full.weight, full.packed
                elif isinstance(sub, Im2ColKernel) and sub.weight.shape == full.weight.shape \
                        and sub.fold_bias == full.fold_bias:
                    sub.weight, sub.packed = full.weight, full.packed
            produce, run_middle, last = _chain_calls(expand, middle, project, _source(producer)[:, :, rows[0]:rows[1]],
                                                     consumer.y_view[:, :, r0:r1], sw)
            heads.append(partial(in_turn, (produce, run_middle)))
            tails.append(last)
        if np.may_share_memory(_source(producer), consumer.y_view):
            return [partial(run_lanes, heads, lanes, True), partial(run_lanes, tails, lanes, True), _nothing]
        return [partial(run_lanes, [partial(in_turn, pair) for pair in zip(heads, tails, strict=True)], lanes, True),
                _nothing, _nothing]

    @staticmethod
    def _band_producer(first: Any, weights: tuple[np.ndarray, np.ndarray], rows: tuple[int, int],
                       pool: dict) -> tuple[Any, tuple[int, int]]:
        """The chain producer's kernel for its output rows ``rows`` (one lane, the full kernel's parameters) and
        the input rows it reads: the same rows for a 1x1 expand; for an im2col stem, its taps' rows, the pads
        cut where the band's taps stay inside the image."""
        from dataclasses import replace

        from mnnpy.backends.cpu.compute.gemm import Gemm1x1Kernel
        from mnnpy.backends.cpu.compute.im2col import Im2ColKernel

        n, c, h, w = first.in_shape
        a, b = rows
        plan = replace(first.plan, threads=1)
        if isinstance(first, Gemm1x1Kernel):
            return Gemm1x1Kernel(first.params, plan, (n, c, b - a, w), *weights, scratch=pool), rows
        p = first.params
        (k, _), (s, _), (d, _), (pt, pl, _, pr) = p.kernel, p.stride, p.dilation, p.pads
        top, bottom = a * s - pt, (b - 1) * s + (k - 1) * d + 1 - pt
        x0, x1 = max(top, 0), min(bottom, h)
        band = replace(p, pads=(x0 - top, pl, bottom - x1, pr))
        return Im2ColKernel(band, plan, (n, c, x1 - x0, w), *weights, scratch=pool), (x0, x1)

    def fuse_after(self, producer: Any) -> list[Callable[[], None]] | None:
        """Winograd -> Winograd (a UNet's double convolution, ResNet's basic blocks): the producer stores its
        output tiles straight into this convolution's zero-bordered NHWC input instead of an NC4HW4 tensor that this
        one would copy in again (the UNet block's 64ch 256² link: a 16 MB copy gone, and NHWC stores move 256-byte
        pixels instead of 16-byte ones). The link tensor is left unwritten.

        Or the model input's NCHW -> NC4HW4 raster -> a stem whose im2col kernel copies the few channels into its
        own C-channel NHWC buffer anyway: the kernel copies from the NCHW source instead (ResNet-18's [1, 3, 224, 224]
        input: 0.21 ms of pack and copy -> 0.05; at 2 threads the pack was a serial pass before the lanes)."""
        from mnnpy.backends.cpu.compute.im2col import Im2ColKernel
        from mnnpy.backends.cpu.compute.winograd_conv import WinogradKernel
        from mnnpy.backends.cpu.ops.raster import Raster

        if isinstance(producer, Raster) and isinstance(self.kernel, Im2ColKernel) and self.kernel.reads_nchw \
                and not self.runtime_weights and producer.mode == "pack":
            source = producer.x.array.reshape(producer.x.desc.shape)
            if source.dtype == np.float32 and source.shape == tuple(self.kernel.in_shape) \
                    and np.shares_memory(producer.y.array, self.x_view):
                self.nchw_fed = source
                return [_nothing, partial(self.kernel.run, source, self.y_view)]
            return None
        first, second = getattr(producer, "kernel", None), self.kernel
        if not isinstance(first, WinogradKernel) or not isinstance(second, WinogradKernel) or self.runtime_weights \
                or getattr(producer, "runtime_weights", True) or not (first.chains and second.chains) \
                or tuple(first.out_shape) != tuple(second.in_shape) \
                or not np.shares_memory(producer.y_view, self.x_view):
            return None
        interior = second.chain_input(self.backend.scratch_pool("conv-scratch"))
        self.chain_fed = True  # its run reads the interior the producer wrote (``residual_run``)
        return [partial(first.run, producer.x_view, interior), partial(second.run, None, self.y_view)]

    def residual_run(self, residual: np.ndarray, out: np.ndarray, relu: bool) -> Callable[[], None] | None:
        """This convolution's run with the residual Add that consumes its output fused in (``Binary``'s
        ``fuse_after``): the sum (then ReLU with ``relu``) goes to the Add's NC4HW4 ``out``, each tile adding
        ``residual`` to the rows it stored, on its own lane while they are in its cache (ResNet-18: 8 Adds, and
        at 2 threads no Add reading rows the other core wrote). None: the kernel cannot, or ``out`` overlaps this
        convolution's input while its lanes read input rows as they go."""
        from mnnpy.backends.cpu.compute.im2col import Im2ColKernel
        from mnnpy.backends.cpu.compute.winograd_conv import WinogradKernel

        kernel = self.kernel
        if self.chain_tail is not None:  # the project GEMM of a one-lane chain (MobileNetV2's blocks)
            second, rows = self.chain_tail
            if self.runtime_weights or second.packed is None or out.shape != self.y_view.shape \
                    or residual.shape != out.shape or out.ndim != 5:
                return None
            return partial(second.run_from_nhwc, rows, out, residual, relu)
        x = None if self.chain_fed else self.x_view if self.nchw_fed is None else self.nchw_fed
        if self.runtime_weights or not isinstance(kernel, WinogradKernel | Im2ColKernel) \
                or out.shape != self.y_view.shape or residual.shape != out.shape or out.ndim != 5 \
                or (x is not None and not kernel.input_copied_first and np.may_share_memory(out, x)):
            return None
        return partial(kernel.run, x, out, residual, relu)

    def info(self) -> dict[str, Any]:
        if self.kernel is None:
            return {"algorithm": self.algorithm}
        plan = self.kernel.plan
        compiled = getattr(self.kernel, "jit", None) is not None  # a numba loop (compute/jit.py), not numpy passes
        info = {"algorithm": plan.algorithm + ("-jit" if compiled else ""), "unit": getattr(plan, "unit", None),
                "costs": dict(getattr(plan, "costs", {}) or {}), "reason": getattr(plan, "reason", "")}
        if plan.algorithm == "winograd":  # issue 12: the chosen tile's footprint, estimated and as allocated
            info.update(memory_estimate=plan.memory_bytes, memory_bytes=getattr(self.kernel, "memory_bytes", 0))
        return info


def _source(conv: Any) -> np.ndarray:
    """What a convolution's run reads: its NC4HW4 input, or the NCHW array an input pack fused into it copies from
    (``Convolution.fuse_after``)."""
    return conv.x_view if conv.nchw_fed is None else conv.nchw_fed
