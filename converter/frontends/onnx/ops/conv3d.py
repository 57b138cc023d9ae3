"""3-D Conv and MaxPool/AveragePool -> MNN's Convolution3D and Pooling3D ops (NC4HW4, weights in the op).

MNN's Convolution3DCommon and Pool3D hold one pad per spatial axis (symmetric): asymmetric conv pads become a zero
Padding op in front; asymmetric pool pads, ceil mode, dilated pools and grouped 3-D convs are not expressible.
"""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import OP, PARAM, Context, OnnxNode
from ..functions import UseFunctionBody


def _zero_pad(ctx: Context, x: str, pads: list[int]) -> str:
    """x padded with zeros by ONNX-style 3-D pads [d0, h0, w0, d1, h1, w1] (a Padding op)."""
    pairs = np.asarray([0, 0, 0, 0, *[v for b, e in zip(pads[:3], pads[3:], strict=True) for v in (b, e)]], np.int32)
    return ctx.out(OP.Padding, [x, ctx.const(pairs, "pads")], None, PARAM.PadParam, fb.PadParamT(), name="Padding")


def _symmetric(ctx: Context, node: OnnxNode, x: str, pads: list[int] | None, pad_front: bool) -> tuple[str, list[int]]:
    """(input, per-axis pads): unequal begin/end pads go into a zero Padding op when `pad_front`, else refused."""
    pads = list(pads or [0] * 6)
    if pads[:3] == pads[3:]:
        return x, pads[:3]
    if not pad_front:
        raise UseFunctionBody(f"{node.label()}: asymmetric 3-D pooling pads {pads} cannot be expressed in MNN")
    return _zero_pad(ctx, x, pads), [0, 0, 0]


def conv3d(ctx: Context, node: OnnxNode, weight: np.ndarray, bias: np.ndarray | None, auto_pad: str,
           dilations: list[int] | None, group: int, pads: list[int] | None, strides: list[int] | None) -> None:
    """Conv with a 5-D weight -> Convolution3D (group 1; pads per axis, asymmetric ones as a Padding op)."""
    if group != 1:
        raise UseFunctionBody(f"{node.label()}: grouped 3-D convolution is not supported by MNN's Convolution3D")
    if auto_pad not in ("NOTSET", "", "VALID"):
        raise UseFunctionBody(f"{node.label()}: auto_pad={auto_pad} is not supported for 3-D convolution")
    x, sym = _symmetric(ctx, node, node.inputs[0], None if auto_pad == "VALID" else pads, pad_front=True)
    oc, ic = int(weight.shape[0]), int(weight.shape[1])
    common = fb.Convolution3DCommonT()
    common.kernels = [int(k) for k in weight.shape[2:]]
    common.strides = list(strides or [1, 1, 1])
    common.dilates = list(dilations or [1, 1, 1])
    common.pads = sym
    common.padMode = fb.PadMode.CAFFE
    common.inputCount, common.outputCount, common.group = ic, oc, 1
    param = fb.Convolution3DT()
    param.common = common
    param.weight = np.asarray(weight, np.float32).ravel()
    param.bias = np.zeros(oc, np.float32) if bias is None else np.asarray(bias, np.float32).ravel()
    ctx.emit(OP.Convolution3D, [x], node.outputs[:1], PARAM.Convolution3D, param, name=node.name)


def pool3d(ctx: Context, node: OnnxNode, pool_type: int, auto_pad: str, ceil_mode: int, kernel_shape: list[int],
           pads: list[int] | None, strides: list[int] | None, count_include_pad: int) -> None:
    """3-D MaxPool/AveragePool -> Pooling3D (symmetric pads; MNN's 3-D average excludes the padding)."""
    if auto_pad not in ("NOTSET", "", "VALID"):
        raise UseFunctionBody(f"{node.label()}: auto_pad={auto_pad} is not supported for 3-D pooling")
    if ceil_mode:
        raise UseFunctionBody(f"{node.label()}: ceil_mode is not supported for 3-D pooling")
    x, sym = _symmetric(ctx, node, node.inputs[0], None if auto_pad == "VALID" else pads, pad_front=False)
    if pool_type == fb.PoolType.AVEPOOL and count_include_pad and any(sym):  # the padding counts: pad explicitly
        x, sym = _zero_pad(ctx, x, sym + sym), [0, 0, 0]
    param = fb.Pool3DT()
    param.type = pool_type
    param.kernels = list(kernel_shape)
    param.strides = list(strides or [1, 1, 1])
    param.pads = sym
    param.padType = fb.PoolPadType.CAFFE
    param.isGlobal = False
    ctx.emit(OP.Pooling3D, [x], node.outputs[:1], PARAM.Pool3D, param, name=node.name)
