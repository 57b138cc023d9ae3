"""Pooling -> Pooling (Caffe's ceil-mode output size; AVE counts the explicit padding, as Caffe does)."""

from __future__ import annotations

from mnnpy.schema import mnn_generated as fb

from ....graph import ConvertError
from ..context import OP, PARAM, Context, Layer
from ..registry import caffe_layer


def _hw(single: int, h: int, w: int, has_hw: bool) -> tuple[int, int]:
    return (int(h), int(w)) if has_hw else (int(single), int(single))


@caffe_layer("Pooling")
def pooling(ctx: Context, layer: Layer) -> None:
    """Pooling MAX/AVE (global or windowed)."""
    p = layer.proto.pooling_param
    if p.pool not in (p.MAX, p.AVE):
        raise ConvertError(f"{layer.label()}: stochastic pooling is not supported")
    param = fb.PoolT()
    param.type = fb.PoolType.MAXPOOL if p.pool == p.MAX else fb.PoolType.AVEPOOL
    param.isGlobal = bool(p.global_pooling)
    param.kernelY, param.kernelX = _hw(p.kernel_size, p.kernel_h, p.kernel_w, p.HasField("kernel_h"))
    param.strideY, param.strideX = _hw(p.stride, p.stride_h, p.stride_w, p.HasField("stride_h"))
    param.padY, param.padX = _hw(p.pad, p.pad_h, p.pad_w, p.HasField("pad_h") or p.HasField("pad_w"))
    param.pads = [param.padY, param.padX, param.padY, param.padX]
    param.padType = fb.PoolPadType.CAFFE
    param.ceilModel = True
    if param.type == fb.PoolType.AVEPOOL:
        param.countType = fb.AvgPoolCountType.INCLUDE_PADDING
    ctx.emit(OP.Pooling, [ctx.x(layer)], [ctx.top(layer)], PARAM.Pool, param, name=layer.name)
