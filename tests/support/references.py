"""Float64 numpy references shared by the CPU, OpenCL and Vulkan kernel tests (obviously correct, not fast)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None,
              causal: bool | None = None) -> np.ndarray:
    """MNN's Attention: q [b, sq, h, d], k / v [b, skv, kv_heads, d] (grouped heads repeated), an additive `mask`
    broadcast against [b, h, sq, skv]; `causal` (default: no mask given) adds the lower-right-aligned causal mask.
    Returns [b, sq, h * d]."""
    b, sq, h, d = q.shape
    rep = h // k.shape[2]
    qh = q.transpose(0, 2, 1, 3).astype(np.float64)
    kh = np.repeat(k.transpose(0, 2, 1, 3), rep, axis=1).astype(np.float64)
    vh = np.repeat(v.transpose(0, 2, 1, 3), rep, axis=1).astype(np.float64)
    s = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(d)
    if mask is not None:
        s = s + mask
    if mask is None if causal is None else causal:
        skv = k.shape[1]
        s = s + np.triu(np.full((sq, skv), -np.inf), 1 + skv - sq)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ vh).transpose(0, 2, 1, 3).reshape(b, sq, -1)


def group_norm(x: np.ndarray, groups: int, gamma: Sequence[float], beta: Sequence[float], eps: float = 1e-5,
               swish: bool = False) -> np.ndarray:
    """GroupNorm over NCHW `x` (per batch and group), per-channel affine, then x * sigmoid(x) when `swish`."""
    g = x.astype(np.float64).reshape(x.shape[0], groups, -1)
    out = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)
    out = out * np.reshape(gamma, (1, -1, 1, 1)) + np.reshape(beta, (1, -1, 1, 1))
    return out / (1.0 + np.exp(-out)) if swish else out


def conv2d(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, stride: tuple[int, int],
           pads: tuple[int, int, int, int], dilation: tuple[int, int], group: int) -> np.ndarray:
    """Direct convolution plus bias: `weight` (oc, ic/group, kh, kw), pads (top, left, bottom, right); loops over
    kernel taps only."""
    n, ic, h, w = x.shape
    oc, icg, kh, kw = weight.shape
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = stride, dilation, pads
    xp = np.zeros((n, ic, h + pt + pb, w + pl + pr))
    xp[:, :, pt:pt + h, pl:pl + w] = x
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (w + pl + pr - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, oc, oh, ow)) + np.asarray(bias, np.float64).reshape(1, -1, 1, 1)
    ocg = oc // group
    for g in range(group):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * icg:(g + 1) * icg, i * dh:i * dh + (oh - 1) * sh + 1:sh,
                           j * dw:j * dw + (ow - 1) * sw + 1:sw]
                taps = np.asarray(weight[g * ocg:(g + 1) * ocg, :, i, j], np.float64)
                out[:, g * ocg:(g + 1) * ocg] += np.einsum("nchw,oc->nohw", patch, taps)
    return out


def deconv2d_full(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, stride: tuple[int, int],
                  dilation: tuple[int, int], group: int, extra: tuple[int, int] = (0, 0)) -> np.ndarray:
    """Transposed convolution plus bias before any crop: every input pixel scattered through the kernel; `weight`
    (ic, oc/group, kh, kw); output [(h-1)*s + (k-1)*d + 1 + extra] per spatial axis. Callers crop the pads."""
    n, ic, h, w = x.shape
    _, ocg, kh, kw = weight.shape
    (sh, sw), (dh, dw) = stride, dilation
    icg, oc = ic // group, ocg * group
    full = np.zeros((n, oc, (h - 1) * sh + (kh - 1) * dh + 1 + extra[0], (w - 1) * sw + (kw - 1) * dw + 1 + extra[1]))
    for g in range(group):
        xs = x[:, g * icg:(g + 1) * icg].astype(np.float64)
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum("nchw,co->nohw", xs, np.asarray(weight[g * icg:(g + 1) * icg, :, i, j], np.float64))
                full[:, g * ocg:(g + 1) * ocg, i * dh:i * dh + (h - 1) * sh + 1:sh,
                     j * dw:j * dw + (w - 1) * sw + 1:sw] += contrib
    return full + np.asarray(bias, np.float64).reshape(1, -1, 1, 1)
