"""Fused Attention (online softmax, local-memory key/value tiles) and GroupNorm on OpenCL vs numpy."""

from __future__ import annotations

import pytest
from mnnpy.schema import mnn_generated as fb
from support import references

from .helpers import AWKWARD_CHANNELS, Harness, assert_close, make_op, rand


@pytest.mark.parametrize(("q_shape", "kv_shape", "mask_shape"), [
    ((1, 37, 3, 8), (1, 37, 3, 8), (1, 1, 37, 37)),
    ((2, 5, 4, 16), (2, 21, 2, 16), (2, 1, 1, 21)),
    ((1, 19, 2, 4), (1, 19, 2, 4), None),
    ((3, 17, 2, 8), (3, 17, 2, 8), (2, 17, 17)),
])
def test_attention(backend: object, q_shape: tuple, kv_shape: tuple, mask_shape: tuple | None) -> None:
    q, k, v = rand(q_shape, seed=1), rand(kv_shape, seed=2), rand(kv_shape, seed=3)
    inputs = [q, k, v]
    mask4 = None
    if mask_shape is not None:
        mask = rand(mask_shape, seed=4, low=-3, high=3)
        inputs.append(mask)
        mask4 = mask.reshape((1,) * (4 - mask.ndim) + mask.shape)
    param = fb.AttentionParamT()
    param.kv_cache = False
    out_shape = (q_shape[0], q_shape[1], q_shape[2] * kv_shape[3])
    (y,) = Harness(backend).run(fb.OpType.Attention, make_op(fb.OpType.Attention, param), inputs,
                                ["NCHW"] * len(inputs), [out_shape], out_fmt="NCHW")
    assert_close(y, references.attention(q, k, v, mask4))


@pytest.mark.parametrize("channels", [c * 2 for c in AWKWARD_CHANNELS[:3]])
@pytest.mark.parametrize("fmt", ["NC4HW4", "NCHW"])
def test_group_norm(backend: object, channels: int, fmt: str) -> None:
    groups = 2 if channels % 2 == 0 else 1
    shape = (2, channels, 3, 5)
    x = rand(shape, seed=5)
    p = fb.GroupNormT()
    p.axis, p.epsilon, p.group, p.bSwish = 1, 1e-5, groups, 1
    p.gamma = rand((channels,), seed=6).tolist()
    p.beta = rand((channels,), seed=7).tolist()
    ref = references.group_norm(x, groups, p.gamma, p.beta, swish=True)
    (y,) = Harness(backend).run(fb.OpType.GroupNorm, make_op(fb.OpType.GroupNorm, p), [x], [fmt], [shape],
                                out_fmt=fmt)
    assert_close(y, ref)
