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


# GELU as 0.5 x (1 + tanh(x R(x²))) = x sigmoid(2 x R(x²)): R = P / Q, a (3, 2) rational fitted to
# artanh(erf(x / sqrt 2)) / x on [0, 6] by `tools/fit_gelu.py` (minimax in GELU's own error). Evaluated as
# R = p3 s + alpha + beta / (s + c1 + c0 / (s + d)) (P / Q divided out, the remainder as a continued fraction): one
# pass fewer than P and Q by Horner and a divide, and no inf / inf for huge |x| (s = inf gives R = inf, sigmoid = 0
# or 1, the right limits).
_GELU_P = (252.40775199443976, 30.50674734610846, 1.655846012540085, 0.01725468800053065)
_GELU_Q = (316.34500428929306, 23.832504088354934)  # Q = s² + q1 s + q0


def _gelu_fraction() -> tuple[float, float, float, float, float, float]:
    p0, p1, p2, p3 = _GELU_P
    q0, q1 = _GELU_Q
    alpha = p2 - p3 * q1  # P = (p3 s + alpha) Q + beta s + gamma
    beta = p1 - p3 * q0 - alpha * q1
    gamma = p0 - alpha * q0
    d = gamma / beta  # (beta s + gamma) / Q = beta / (s + c1 + c0 / (s + d))
    c1 = q1 - d
    return p3, alpha, beta, c1, q0 - d * c1, d


_GELU_CF = _gelu_fraction()


def gelu_erf(x: np.ndarray, out: np.ndarray, a: np.ndarray, t: np.ndarray) -> None:
    """``out = 0.5 x (1 + erf(x / sqrt 2))`` in 13 numpy passes, no temporaries (|error| < 6e-7 against float64).

    ``0.5 (1 + tanh(y)) = sigmoid(2 y)``, so with y = x R(x²) (the rational above) the result is
    ``x / (1 + exp(-2 x R(x²)))``, the -2 folded into R's coefficients. Against the tanh form it saves two passes
    and takes numpy's float32 exp instead of its tanh: on an AVX2 host (no AVX-512, where numpy's float32 tanh and
    exp are ~2.8 and ~2.3 ns/element) 197 x 768 took 0.97 -> 0.72 ms; on AVX-512 hosts the two forms cost about the
    same. For negative x nothing cancels (1 + tanh did), so the error there is the fit's absolute 6e-7. exp
    overflows to inf for x below about -7.5: x / inf gives the right -0. ``a`` and ``t`` are scratch arrays shaped
    like ``x``.
    """
    f32 = np.float32
    p3, alpha, beta, c1, c0, d = _GELU_CF
    s, w = a, t
    with np.errstate(over="ignore"):
        np.square(x, out=s)  # inf for |x| > 1.8e19: R = inf, exp gives 0 or inf, the right limits
        np.add(s, f32(d), out=w)
        np.divide(f32(c0), w, out=w)
        w += s
        w += f32(c1)
        np.divide(f32(-2.0 * beta), w, out=w)  # -2 (beta s + gamma) / Q
        np.multiply(s, f32(-2.0 * p3), out=out)
        out += f32(-2.0 * alpha)
        out += w  # -2 R(s) = -2 P / Q
        out *= x
        np.exp(out, out=out)
        out += f32(1.0)
        np.divide(x, out, out=out)
