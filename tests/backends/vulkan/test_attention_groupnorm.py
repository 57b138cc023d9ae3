"""Vulkan fused Attention (online softmax) and GroupNorm vs numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb
from support import references

from mnnpy.core.ir import TensorDesc

RNG = np.random.default_rng(23)


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
    np.testing.assert_allclose(got, references.attention(q, k, v, mask), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("channels", "groups", "swish"), [(6, 3, True), (26, 13, False), (4, 1, True)])
def test_group_norm(run_op: Any, make_op: Any, channels: int, groups: int, swish: bool) -> None:
    shape = (2, channels, 3, 5)
    x = (RNG.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    param = fb.GroupNormT()
    param.axis, param.epsilon, param.group, param.bSwish = 1, 1e-5, groups, int(swish)
    param.gamma = RNG.standard_normal(channels).astype(np.float32)
    param.beta = RNG.standard_normal(channels).astype(np.float32)
    want = references.group_norm(x, groups, param.gamma, param.beta, swish=swish)
    (got,) = run_op(fb.OpType.GroupNorm, make_op(fb.OpType.GroupNorm, param), [(x, "NCHW")],
                    [TensorDesc(shape, np.float32, "NCHW")]).run()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
