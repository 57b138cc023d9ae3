"""Inference-only layer modules (MNN: `nn.linear`, `nn.conv`, `nn.batch_norm`, `nn.dropout`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.expr import math as m
from mnnpy.expr import nn_ops
from mnnpy.expr.enums import Padding_Mode
from mnnpy.expr.var import Var, const_of, to_var
from mnnpy.nn.module import Module


class _Linear(Module):
    has_bias: bool
    weight: Var
    bias: Var

    def __init__(self, weight: Var, bias: Var | None) -> None:
        super().__init__()
        self.weight = weight
        if bias is not None:
            self.bias = bias
        object.__setattr__(self, "has_bias", bias is not None)

    def onForward(self, x: Any) -> Var:
        y = m.matmul(to_var(x), self.weight, False, True)
        return m.add(y, self.bias) if self.has_bias else y


def linear(input_length: int, output_length: int, bias: bool = True) -> Module:
    """y = x W^T + b with weight [out, in] (MNN: `nn.linear`)."""
    rng = np.random.default_rng()
    bound = 1.0 / np.sqrt(input_length)
    w = const_of(rng.uniform(-bound, bound, (output_length, input_length)).astype(np.float32))
    b = const_of(np.zeros(output_length, np.float32)) if bias else None
    return _Linear(w, b)


class _Conv(Module):
    args: tuple[Any, ...]
    weight: Var
    bias: Var

    def __init__(self, weight: Var, bias: Var, stride: Sequence[int], padding: Sequence[int],
                 dilate: Sequence[int], group: int, mode: Any) -> None:
        super().__init__()
        self.weight = weight
        self.bias = bias
        object.__setattr__(self, "args", (stride, padding, dilate, group, mode))

    def onForward(self, x: Any) -> Var:
        stride, padding, dilate, group, mode = self.args
        return nn_ops.conv2d(x, self.weight, self.bias, stride, padding, dilate, group, mode)


def conv(in_channel: int, out_channel: int, kernel_size: Sequence[int], stride: Sequence[int] = (1, 1),
         padding: Sequence[int] = (0, 0), dilation: Sequence[int] = (1, 1), depthwise: bool = False,
         bias: bool = True, padding_mode: Any = None) -> Module:
    """A conv2d module with uniform-initialised weights (MNN: `nn.conv`).

    `padding_mode` None means CAFFE (explicit `padding`) when any padding is given, else VALID.
    """
    kx, ky = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    group = in_channel if depthwise else 1
    rng = np.random.default_rng()
    bound = 1.0 / np.sqrt(in_channel // group * kx * ky)
    w = rng.uniform(-bound, bound, (out_channel, in_channel // group, ky, kx)).astype(np.float32)
    if padding_mode is None:
        padding_mode = Padding_Mode.CAFFE if any(int(p) for p in np.atleast_1d(padding)) else Padding_Mode.VALID
    return _Conv(const_of(w), const_of(np.zeros(out_channel, np.float32)), stride, padding, dilation, group,
                 padding_mode)


class _BatchNorm(Module):
    eps: float
    scale: Var
    bias: Var
    mean: Var
    var: Var

    def __init__(self, channels: int, eps: float) -> None:
        super().__init__()
        self.scale = const_of(np.ones((1, channels, 1, 1), np.float32))
        self.bias = const_of(np.zeros((1, channels, 1, 1), np.float32))
        self.mean = const_of(np.zeros((1, channels, 1, 1), np.float32))
        self.var = const_of(np.ones((1, channels, 1, 1), np.float32))
        object.__setattr__(self, "eps", float(eps))

    def onForward(self, x: Any) -> Var:
        norm = m.divide(m.subtract(to_var(x), self.mean), m.sqrt(m.add(self.var, self.eps)))
        return m.add(m.multiply(norm, self.scale), self.bias)


def batch_norm(channels: int, dims: int = 4, momentum: float = 0.99, epsilon: float = 1e-5) -> Module:
    """Inference batch norm over NCHW channels (MNN: `nn.batch_norm`)."""
    return _BatchNorm(channels, epsilon)


class _Dropout(Module):
    def onForward(self, x: Any) -> Var:
        return to_var(x)


def dropout(drop_prob: float = 0.5) -> Module:
    """Identity at inference (MNN: `nn.dropout`)."""
    return _Dropout()
