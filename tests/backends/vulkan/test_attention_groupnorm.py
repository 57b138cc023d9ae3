"""Vulkan fused Attention (online softmax) and GroupNorm vs numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.ir import TensorDesc

RNG = np.random.default_rng(23)


def _attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    b, sq, h, d = q.shape
    rep = h // k.shape[2]
    qh = q.transpose(0, 2, 1, 3).astype(np.float64)
    kh = np.repeat(k.transpose(0, 2, 1, 3), rep, axis=1).astype(np.float64)
    vh = np.repeat(v.transpose(0, 2, 1, 3), rep, axis=1).astype(np.float64)
    s = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(d)
    skv = k.shape[1]
    s = s + (np.triu(np.full((sq, skv), -np.inf), 1 + skv - sq) if mask is None else mask)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ vh).transpose(0, 2, 1, 3).reshape(b, sq, -1)


@pytest.mark.parametrize(("q_shape", "kv_shape", "mask_shape"), [
    ((1, 13, 3, 8), (1, 13, 3, 8), (1, 1, 13, 13)),
    ((2, 5, 4, 16), (2, 9, 2, 16), (2, 1, 1, 9)),
    ((1, 11, 2, 4), (1, 11, 2, 4), None),
    ((1, 300, 2, 4), (1, 300, 2, 4), None),  # more query rows than one work-group
])
def test_attention(run_op: Any, make_op: Any, q_shape: tuple, kv_shape: tuple, mask_shape: tuple | None) -> None:
    q, k, v = (RNG.standard_normal(s).astype(np.float32) for s in (q_shape, kv_shape, kv_shape))
    inputs = [(q, "NCHW"), (k, "NCHW"), (v, "NCHW")]
    mask = None
    if mask_shape is not None:
        mask = (RNG.standard_normal(mask_shape) * 3).astype(np.float32)
        inputs.append((mask, "NCHW"))
    param = fb.AttentionParamT()
    param.kv_cache = False
    out = TensorDesc((q_shape[0], q_shape[1], q_shape[2] * kv_shape[3]), np.float32, "NCHW")
    (got,) = run_op(fb.OpType.Attention, make_op(fb.OpType.Attention, param), inputs, [out]).run()
    np.testing.assert_allclose(got, _attention_reference(q, k, v, mask), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("channels", "groups", "swish"), [(6, 3, True), (26, 13, False), (4, 1, True)])
def test_group_norm(run_op: Any, make_op: Any, channels: int, groups: int, swish: bool) -> None:
    shape = (2, channels, 3, 5)
    x = (RNG.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    param = fb.GroupNormT()
    param.axis, param.epsilon, param.group, param.bSwish = 1, 1e-5, groups, int(swish)
    param.gamma = RNG.standard_normal(channels).astype(np.float32)
    param.beta = RNG.standard_normal(channels).astype(np.float32)
    g = x.astype(np.float64).reshape(2, groups, -1)
    want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(shape)
    want = want * param.gamma.reshape(1, -1, 1, 1) + param.beta.reshape(1, -1, 1, 1)
    if swish:
        want = want / (1.0 + np.exp(-want))
    (got,) = run_op(fb.OpType.GroupNorm, make_op(fb.OpType.GroupNorm, param), [(x, "NCHW")],
                    [TensorDesc(shape, np.float32, "NCHW")]).run()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
