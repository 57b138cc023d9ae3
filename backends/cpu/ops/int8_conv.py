"""ConvInt8 / DepthwiseConvInt8 (int8 in, int8 out; params in ``symmetricQuan``), with their shape functions.

``symmetricQuan`` (QuantizedFloatParam) holds int8 ``weight`` [oc, ic/group, kh, kw], int32 ``bias`` (in units of
``s_in * s_w``), per-channel ``scale`` = ``s_in * s_w / s_out``, ``zeroPoint`` (input), ``outputZeroPoint`` and the
output clamp (a fused ReLU is a clamp at the output zero point); the output is ``round(float32(acc + bias) * scale)``.
mnnpy's lowering of MNN's quantised convolutions (``mnnpy.quant.lower``) writes MNN's x86 dense form instead:
``scale`` = weight scales, ``tensorScale`` = ``[s_in / s_out]`` and a float ``Convolution2D.bias`` in output codes
(``(b - 128 * s_in * sum(w)) / s_out``), see ``Int8ConvParams``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.backends.cpu.compute.blas import blas_threads
from mnnpy.backends.cpu.int8.conv import Int8Conv, Int8ConvParams, conv_macs
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import cpu_kernel, shape_fn
from mnnpy.core.shape.conv import _pads, conv

OT = fb.OpType
INT8 = np.dtype(np.int8)


@shape_fn(OT.ConvInt8, OT.DepthwiseConvInt8)
def conv_int8_shape(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """Same geometry as the float convolution; int8 output in plain NCHW."""
    out = conv(op, [descs[0].with_(dtype=np.float32)], values)[0]
    return [TensorDesc(out.shape, INT8, NCHW)]


def conv_params(op: Any, in_channels: int) -> Int8ConvParams:
    """Int8ConvParams from a ConvInt8/DepthwiseConvInt8 op.

    Raises:
        ModelError: for a missing or inconsistent ``symmetricQuan``.
    """
    main = op.main
    c = main.common if main is not None else None
    q = main.symmetricQuan if main is not None else None
    if c is None or q is None or q.weight is None:
        raise ModelError(f"op {op.name!r}: int8 convolution without symmetricQuan weights")
    depthwise = op.type == OT.DepthwiseConvInt8
    oc = int(c.outputCount)
    icg = 1 if depthwise else in_channels // max(int(c.group), 1)
    weight = np.asarray(q.weight).astype(np.int8)
    if weight.size != oc * icg * c.kernelY * c.kernelX:
        raise ModelError(f"op {op.name!r}: {weight.size} int8 weights do not fit [{oc}, {icg}, {c.kernelY}, "
                         f"{c.kernelX}]")
    bias = np.asarray(q.bias if q.bias is not None else np.zeros(oc), np.int64)
    scale = np.asarray(q.scale if q.scale is not None else [], np.float64)
    if bias.size != oc or scale.size not in (1, oc):
        raise ModelError(f"op {op.name!r}: int8 bias/scale sizes {bias.size}/{scale.size} do not match {oc} channels")
    if c.padMode != 0:
        raise ModelError(f"op {op.name!r}: int8 convolution supports explicit padding only")
    out_bias, post_scale = None, None
    if main.bias is not None and len(main.bias) == oc:  # mnnpy's lowering: float bias in output codes
        out_bias = np.asarray(main.bias, np.float32)
        tensor_scale = np.asarray(q.tensorScale if q.tensorScale is not None else [1.0], np.float32).ravel()
        if tensor_scale.size != 1:
            raise ModelError(f"op {op.name!r}: int8 convolution tensorScale must hold one value (s_in / s_out)")
        post_scale = float(tensor_scale[0])
    return Int8ConvParams(weight.reshape(oc, icg, c.kernelY, c.kernelX), bias, scale,
                          (c.strideY, c.strideX), (c.dilateY, c.dilateX), _pads(c),
                          1 if depthwise else int(c.group), int(q.zeroPoint), 0, int(q.outputZeroPoint),
                          int(q.clampMin), int(q.clampMax), depthwise, out_bias, post_scale)


@cpu_kernel(OT.ConvInt8, OT.DepthwiseConvInt8, formats=(NCHW,))
class ConvInt8(CPUExecution):
    """Plans the indirection table / depthwise path in on_resize; on_execute runs int8 -> int8."""

    def on_resize(self) -> None:
        shape = self.x.desc.shape
        if len(shape) == 3:  # [N, C, H] (converted Conv1D / MatMul as 1x1 conv): W = 1, as the float op
            shape = (*shape, 1)
        if len(shape) != 4 or self.x.desc.dtype != INT8:
            raise ModelError(f"op {self.op.name!r}: int8 convolution needs a 3-D or 4-D int8 input, got {shape} "
                             f"{self.x.desc.dtype}")
        key = (id(self.op.main), "int8", shape)
        cached = self.backend.kernel_cache.get(key)
        if cached is not None and cached[0] is self.op.main:
            self.kernel = cached[1]
        else:
            self.kernel = Int8Conv(conv_params(self.op, shape[1]), shape)
            self.backend.kernel_cache[key] = (self.op.main, self.kernel)
        if self.kernel.out_shape[:len(self.y.desc.shape)] != self.y.desc.shape:
            raise ModelError(f"op {self.op.name!r}: int8 kernel output {self.kernel.out_shape} != {self.y.desc.shape}")
        self.shape4 = shape

    def on_execute(self) -> None:
        with blas_threads(int(self.backend.config.get("numThread", 1) or 1)):  # the tap GEMMs use numThread
            self.kernel.run(self.x.array.reshape(self.shape4), self.y.array.reshape(self.kernel.out_shape))

    def info(self) -> dict[str, Any]:
        k = self.kernel
        algorithm = "int8-dw3x3" if k.dw3x3 else "int8-1x1" if k.pointwise else "int8-indirect"
        return {"algorithm": algorithm, "macs": conv_macs(k.p, k.out_shape), "gemm": np.dtype(k.carrier).name,
                "accumulator": np.dtype(k.acc_dtype).name}
