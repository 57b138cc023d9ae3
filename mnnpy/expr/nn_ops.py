"""Neural-network ops of `MNN.expr`: convolution, pooling, activations, softmax, resize, scale, normalize."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.expr import math as m
from mnnpy.expr import reduce as r
from mnnpy.expr.enums import Padding_Mode
from mnnpy.expr.var import Var, apply, const_of, to_var
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType
PT = fb.OpParameter


def _pair(v: Sequence[int] | int) -> tuple[int, int]:
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    vals = [int(a) for a in v]
    return (vals[0], vals[1]) if len(vals) > 1 else (vals[0], vals[0])


def _mode(mode: Any) -> Padding_Mode:
    """A padding mode given as the enum, its int value or its name (also MNN's own enum objects)."""
    if isinstance(mode, Padding_Mode):
        return mode
    if isinstance(mode, (int, np.integer)):
        return Padding_Mode(int(mode))
    return Padding_Mode[str(mode).rsplit(".", 1)[-1]]


def _value(v: Any) -> np.ndarray | None:
    """A weight / bias operand as a float32 array (computed Vars are evaluated by the core)."""
    if v is None:
        return None
    return np.asarray(v.read() if isinstance(v, Var) else v, dtype=np.float32)


def _weight(v: Any) -> np.ndarray:
    """A weight operand as a float32 array (computed Vars are evaluated by the core)."""
    return np.asarray(v.read() if isinstance(v, Var) else v, dtype=np.float32)


def _common(kernel: tuple[int, int], stride: Any, padding: Any, dilate: Any, group: int, mode: Padding_Mode,
            ic: int, oc: int) -> Any:
    c = fb.Convolution2DCommonT()
    c.kernelX, c.kernelY = kernel
    c.strideX, c.strideY = _pair(stride)
    c.dilateX, c.dilateY = _pair(dilate)
    c.padX, c.padY = _pair(padding)
    mode = _mode(mode)
    explicit = mode == Padding_Mode.CAFFE  # as MNN: VALID and SAME ignore `padding`
    c.padMode = fb.PadMode.CAFFE if explicit else (fb.PadMode.SAME if mode == Padding_Mode.SAME else
                                                   fb.PadMode.VALID)
    if not explicit:
        c.padX = c.padY = 0
    c.pads = [c.padY, c.padX, c.padY, c.padX] if explicit else None
    c.group = int(group)
    c.inputCount = int(ic)
    c.outputCount = int(oc)
    return c


def conv2d(input: Any, weight: Any, bias: Any, stride: Sequence[int] = (1, 1),
           padding: Sequence[int] = (0, 0), dilate: Sequence[int] = (1, 1), group: int = 1,
           padding_mode: Padding_Mode = Padding_Mode.VALID) -> Var:
    """2-D convolution of NCHW / NC4HW4 input with weight [oc, ic/group, kh, kw] (MNN: `expr.conv2d`).

    Pairs (stride, padding, dilate) are in MNN's (x, y) order; as in MNN, `padding` applies only with CAFFE.
    """
    w = _weight(weight)
    oc, icg, kh, kw = w.shape
    ic = icg * int(group)
    p = fb.Convolution2DT()
    p.common = _common((kw, kh), stride, padding, dilate, group, padding_mode, ic, oc)
    p.weight = w.ravel()
    b = _value(bias)
    p.bias = np.zeros(oc, np.float32) if b is None else b.ravel()
    depthwise = group > 1 and group == ic == oc
    return apply(OT.ConvolutionDepthwise if depthwise else OT.Convolution, [to_var(input)], PT.Convolution2D, p)


def conv2d_transpose(input: Any, weight: Any, bias: Any, stride: Sequence[int] = (1, 1),
                     padding: Sequence[int] = (0, 0), dilate: Sequence[int] = (1, 1), group: int = 1,
                     padding_mode: Padding_Mode = Padding_Mode.VALID) -> Var:
    """Transposed 2-D convolution with weight [ic, oc/group, kh, kw] (MNN: `expr.conv2d_transpose`)."""
    w = _weight(weight)
    ic, ocg, kh, kw = w.shape
    oc = ocg * int(group)
    p = fb.Convolution2DT()
    c = _common((kw, kh), stride, padding, dilate, group, padding_mode, ic, oc)
    if c.padMode == fb.PadMode.CAFFE and c.pads is None:
        c.pads = [0, 0, 0, 0]
    if c.padMode == fb.PadMode.VALID:
        c.padMode, c.pads = fb.PadMode.CAFFE, [0, 0, 0, 0]
    p.common = c
    p.weight = w.ravel()
    b = _value(bias)
    p.bias = np.zeros(oc, np.float32) if b is None else b.ravel()
    depthwise = group > 1 and group == ic == oc
    return apply(OT.DeconvolutionDepthwise if depthwise else OT.Deconvolution, [to_var(input)], PT.Convolution2D, p)


def _pool(x: Any, kind: int, kernel: Sequence[int], stride: Sequence[int], padding_mode: Padding_Mode,
          pads: Sequence[int]) -> Var:
    p = fb.PoolT()
    p.type = kind
    p.kernelX, p.kernelY = _pair(kernel)
    p.strideX, p.strideY = _pair(stride)
    p.padX, p.padY = _pair(pads)
    padding_mode = _mode(padding_mode)
    explicit = padding_mode == Padding_Mode.CAFFE
    p.padType = fb.PoolPadType.CAFFE if explicit else (fb.PoolPadType.SAME if padding_mode == Padding_Mode.SAME
                                                        else fb.PoolPadType.VALID)
    if not explicit:
        p.padX = p.padY = 0
    p.pads = [p.padY, p.padX, p.padY, p.padX] if explicit else None
    p.isGlobal = False
    # as MNN: explicit (CAFFE) padding counts in averages, TF-style SAME padding does not
    p.countType = fb.AvgPoolCountType.EXCLUDE_PADDING if padding_mode == Padding_Mode.SAME else \
        fb.AvgPoolCountType.INCLUDE_PADDING
    return apply(OT.Pooling, [to_var(x)], PT.Pool, p)


def max_pool(x: Any, kernel: Sequence[int], stride: Sequence[int], padding_mode: Padding_Mode = Padding_Mode.VALID,
             pads: Sequence[int] = (0, 0)) -> Var:
    """Max pooling over H, W; pairs in (x, y) order (MNN: `expr.max_pool`)."""
    return _pool(x, fb.PoolType.MAXPOOL, kernel, stride, padding_mode, pads)


def avg_pool(x: Any, kernel: Sequence[int], stride: Sequence[int], padding_mode: Padding_Mode = Padding_Mode.VALID,
             pads: Sequence[int] = (0, 0)) -> Var:
    """Average pooling; CAFFE padding counts, SAME padding does not, as in MNN (MNN: `expr.avg_pool`)."""
    return _pool(x, fb.PoolType.AVEPOOL, kernel, stride, padding_mode, pads)


def softmax(x: Any, axis: int = -1) -> Var:
    """Softmax along an axis (MNN: `expr.softmax`)."""
    p = fb.AxisT()
    p.axis = int(axis)
    return apply(OT.Softmax, [to_var(x)], PT.Axis, p)


def relu(x: Any, slope: float = 0.0) -> Var:
    """max(x, 0) + slope * min(x, 0) (MNN: `expr.relu`)."""
    p = fb.ReluT()
    p.slope = float(slope)
    return apply(OT.ReLU, [to_var(x)], PT.Relu, p)


def relu6(x: Any, min: float = 0.0, max: float = 6.0) -> Var:
    """clip(x, min, max) (MNN: `expr.relu6`)."""
    p = fb.Relu6T()
    p.minValue, p.maxValue = float(min), float(max)
    return apply(OT.ReLU6, [to_var(x)], PT.Relu6, p)


def prelu(x: Any, slopes: Sequence[float]) -> Var:
    """Per-channel leaky ReLU of an NCHW tensor (MNN: `expr.prelu`)."""
    s = np.asarray(slopes, np.float32).ravel()
    p = fb.PReluT()
    p.slopeCount = int(s.size)
    p.slope = s
    return apply(OT.PReLU, [to_var(x)], PT.PRelu, p)


def elu(x: Any, alpha: float = 1.0) -> Var:
    """ELU (MNN: `expr.elu`)."""
    p = fb.ELUT()
    p.alpha = float(alpha)
    return apply(OT.ELU, [to_var(x)], PT.ELU, p)


def selu(x: Any, scale: float, alpha: float) -> Var:
    """SELU (MNN: `expr.selu`)."""
    p = fb.SeluT()
    p.scale, p.alpha = float(scale), float(alpha)
    return apply(OT.Selu, [to_var(x)], PT.Selu, p)


def resize(x: Any, x_scale: float, y_scale: float, nearest: bool = False) -> Var:
    """Scale H by y_scale and W by x_scale, bilinear (asymmetric coordinates) (MNN: `expr.resize`).

    As MNN, source coordinates use the ratio of the sizes (in / out), not the requested scale.
    """
    v = to_var(x)
    _, _, h, w = v.shape
    p = fb.InterpT()
    p.resizeType = 1 if nearest else 2
    p.ctm = fb.CoordinateTransformationMode.Asymmetric
    p.alignCorners = False
    p.halfPixelCenters = False
    p.widthScale, p.heightScale = float(x_scale), float(y_scale)
    sizes = const_of(np.array([int(h * y_scale), int(w * x_scale)], np.int32))
    return apply(OT.Interp, [v, sizes], PT.Interp, p)


def scale(x: Any, channels: int, scale: Sequence[float], bias: Sequence[float]) -> Var:
    """Per-channel x * scale + bias of an NCHW tensor (MNN: `expr.scale`)."""
    p = fb.ScaleT()
    p.channels = int(channels)
    p.scaleData = np.asarray(scale, np.float32).ravel()
    p.biasData = np.asarray(bias, np.float32).ravel()
    return apply(OT.Scale, [to_var(x)], PT.Scale, p)


def normalize(x: Any, acrossSpatial: int, channelShared: int, eps: float,  # noqa: N803 - MNN's names
              scale: Sequence[float]) -> Var:
    """Caffe Normalize: x / sqrt(sum(x^2) + eps) * scale, over C (or C, H, W) (MNN: `expr.normalize`)."""
    v = to_var(x)
    axes = [1, 2, 3] if acrossSpatial else [1]
    norm = m.sqrt(m.add(r.reduce_sum(m.square(v), axes, True), float(eps)))
    s = np.asarray(scale, np.float32).ravel()
    factor = const_of(s.reshape(1, -1, 1, 1) if not channelShared and s.size > 1 else s.reshape(()))
    return m.multiply(m.divide(v, norm), factor)
