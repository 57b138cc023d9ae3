"""Convolution, ConvolutionDepthwise, Deconvolution(Depthwise): glue to the strategy-chosen kernels in compute/."""

from __future__ import annotations

import copy
from typing import Any

from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core import session
from mnnpy.core.registry import cpu_kernel

OT = fb.OpType


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


@cpu_kernel(OT.Convolution, OT.ConvolutionDepthwise, OT.Deconvolution, OT.DeconvolutionDepthwise,
            formats=("NC4HW4",))
class Convolution(CPUExecution):
    """Plans and prepares the convolution in on_resize (weights packed/transformed once per input shape).

    The config key `convAlgorithm` forces an algorithm for tests: a string ("im2col", "winograd:4", "strassen",
    ...) applies to every convolution it can run, a dict {op name: algorithm} to the named ones (strictly).
    """

    def on_resize(self) -> None:
        from mnnpy.backends.cpu.compute.conv import make_conv2d_kernel

        main = self.op.main
        if main is not None and main.common.hasOutputShape and self.op.type in (OT.Deconvolution,
                                                                                OT.DeconvolutionDepthwise):
            main = _with_output_pads(main, self.x.desc.shape, self.y.desc.shape)
        if main is None or (main.weight is None and main.quanParameter is None and len(self.inputs) > 1
                            and not main.common.hasOutputShape):
            raise ModelError(f"op {self.op.name!r}: convolution with weights as runtime inputs is not supported")
        force = self.backend.config.get("convAlgorithm")
        strict = isinstance(force, dict)  # {op name: algorithm} must apply; a plain string applies where it can
        if strict:
            force = force.get(self.op.name)
        threads = int(self.backend.config.get("numThread", 1) or 1)
        shape = self.x.desc.shape
        if len(shape) == 3:  # [N, C, H] runs as [N, C, H, 1]
            shape = (*shape, 1)
        self.x_view = self.x.array.reshape(*self.x.array.shape[:3], 1, 4) if len(self.x.desc.shape) == 3 \
            else self.x.array
        self.y_view = self.y.array.reshape(*self.y.array.shape[:3], 1, 4) if len(self.y.desc.shape) == 3 \
            else self.y.array
        key = (id(main), self.op.type, shape, str(force), threads)
        cached = self.backend.kernel_cache.get(key)
        if cached is not None and cached[0] is main:
            self.kernel = cached[1]
            self.algorithm = self.kernel.plan.algorithm
            return
        try:
            try:
                self.kernel = make_conv2d_kernel(main, self.op.type, shape, threads=threads, force=force)
            except ValueError:
                if strict or force is None:
                    raise
                self.kernel = make_conv2d_kernel(main, self.op.type, shape, threads=threads)
        except (ValueError, NotImplementedError) as exc:
            raise ModelError(f"op {self.op.name!r}: {exc}") from exc
        session.COUNTERS["weight_transforms"] += 1
        self.backend.kernel_cache[key] = (main, self.kernel)
        if tuple(self.kernel.out_shape)[: len(self.y.desc.shape)] != self.y.desc.shape:
            raise ModelError(f"op {self.op.name!r}: kernel output {self.kernel.out_shape} != {self.y.desc.shape}")
        self.algorithm = self.kernel.plan.algorithm

    def on_execute(self) -> None:
        self.kernel.run(self.x_view, self.y_view)

    def info(self) -> dict[str, Any]:
        plan = self.kernel.plan
        return {"algorithm": plan.algorithm, "unit": getattr(plan, "unit", None),
                "costs": dict(getattr(plan, "costs", {}) or {}), "reason": getattr(plan, "reason", "")}
