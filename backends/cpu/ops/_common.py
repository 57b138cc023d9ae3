"""Helpers shared by CPU kernels."""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.layout import pack_into

from mnnpy.core.backend import Execution, TensorRef
from mnnpy.core.ir import NC4HW4, packed_dims

CF = ("NC4HW4", "NCHW")  # kernels that work on packed or plain arrays alike
ANY = ("NC4HW4", "NCHW", "NHWC")


class CPUExecution(Execution):
    """Base for CPU kernels: `x`/`y` name the first input/output."""

    @property
    def x(self) -> TensorRef:
        return self.inputs[0]

    @property
    def y(self) -> TensorRef:
        return self.outputs[0]


def same_layout(*refs: TensorRef) -> bool:
    """All tensors have the same logical shape and format (elementwise work may use the physical arrays)."""
    first = refs[0].desc
    return all(r.desc.shape == first.shape and r.desc.fmt == first.fmt for r in refs[1:])


def physical_operand(value: np.ndarray, out_shape: tuple[int, ...], fmt: str) -> np.ndarray:
    """A constant laid out to broadcast against the output's physical array (made once, kept small).

    Plain layouts use numpy broadcasting as is. For NC4HW4, a constant with the output's channel count is packed in
    its own (rank-padded) shape, one with a single channel gets a trailing lane axis of 1 (the caller zeroes the
    channel tail afterwards), anything else is broadcast to the full output first.
    """
    v = np.asarray(value)
    v = v.reshape((1,) * (len(out_shape) - v.ndim) + v.shape)
    if fmt != NC4HW4:
        return np.ascontiguousarray(v)
    if v.ndim >= 2 and v.shape[1] == out_shape[1]:
        packed = np.empty(packed_dims(v.shape), dtype=v.dtype)
        pack_into(np.ascontiguousarray(v), packed)
        return packed
    if v.ndim >= 2 and v.shape[1] == 1:
        return np.ascontiguousarray(v[:, 0:1]).reshape((*v.shape, 1))
    packed = np.empty(packed_dims(out_shape), dtype=v.dtype)
    pack_into(np.ascontiguousarray(np.broadcast_to(v, out_shape)), packed)
    return packed


def channel_vector(values: np.ndarray, ref: TensorRef) -> np.ndarray:
    """A per-channel vector shaped to broadcast against the tensor's physical array."""
    rank = len(ref.desc.physical_shape)
    v = np.asarray(values, dtype=np.float32).ravel()
    if ref.desc.fmt == NC4HW4:
        c4 = ref.desc.physical_shape[1]
        pad = np.zeros(c4 * 4, dtype=np.float32)
        pad[: v.size] = v
        return pad.reshape((1, c4) + (1,) * (rank - 3) + (4,))
    return v.reshape((1, v.size) + (1,) * (rank - 2))


def erf(x: np.ndarray) -> np.ndarray:
    """Error function (Abramowitz-Stegun 7.1.26, |error| < 1.5e-7; numpy has no erf)."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (s * (1.0 - poly * np.exp(-a * a))).astype(x.dtype, copy=False)


_ERF_P = 0.3275911
_ERF_COEFFS = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_LOG2_E = 1.4426950408889634
# GELU's erf terms, rescaled: t' = K t with K^5 = -0.5 c5, so that -0.5 P(t) = t'(e1 + t'(e2 + t'(e3 + t'(e4 + t'))))
# (a monic Horner: one pass fewer) and t' = K / (1 + p |x| / sqrt 2) = K r / (r + |x|) with r = sqrt 2 / p (one
# add and one divide, no scaling pass)
_GELU_K = -((0.5 * _ERF_COEFFS[4]) ** 0.2)
_GELU_R = 1.4142135623730951 / _ERF_P
_GELU_E = tuple(-0.5 * c / _GELU_K ** (i + 1) for i, c in enumerate(_ERF_COEFFS[:4]))


def gelu_erf(x: np.ndarray, out: np.ndarray, a: np.ndarray, t: np.ndarray, b: np.ndarray | None = None) -> None:
    """``out = 0.5 x (1 + erf(x / sqrt 2))`` with ``erf``'s formula, 18 numpy passes and no temporaries.

    With z = |x| / sqrt 2 and q = 0.5 P(t) exp(-z²) (so erf(z) = 1 - 2q): GELU = relu(x) - |x| q for either sign
    (no cancellation for negative x). ``a``, ``t`` and ``b`` are scratch arrays shaped like ``x`` (``b`` keeps |x|;
    None computes it twice). exp(-z²) is taken as exp2(-x² log2(e) / 2): numpy's float32 exp2 is ~1.7x faster than
    its exp here (128 x 1024: 39 vs 66 us) and the constant folds into the scaling pass. Each numpy pass runs at
    L2 speed; row blocks that stay in L1/L2 only add call overhead (measured: 64-row blocks equal, smaller slower).
    """
    f32 = np.float32
    absx = t if b is None else b
    np.abs(x, out=absx)
    np.add(absx, f32(_GELU_R), out=t)
    np.divide(f32(_GELU_K * _GELU_R), t, out=t)  # t' = K t (np.reciprocal takes a slow float32 loop here)
    np.square(x, out=a)
    a *= f32(-0.5 * _LOG2_E)
    np.exp2(a, out=a)
    np.add(t, f32(_GELU_E[3]), out=out)  # -q = -0.5 P(t) exp(-z²): monic Horner in t'
    for e in _GELU_E[2::-1]:
        out *= t
        out += f32(e)
    out *= t
    out *= a
    if b is None:
        np.abs(x, out=a)
        b = a
    out *= b
    np.clip(x, f32(0.0), f32(np.inf), out=a)  # relu: faster than maximum with a scalar
    out += a
