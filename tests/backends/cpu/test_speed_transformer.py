"""Transformer speed paths on the CPU (issue 5: BERT-4L, ViT-tiny), each against a float64 reference."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.backends.cpu.compute import attention as blocked
from mnnpy.backends.cpu.compute import jit
from mnnpy.schema import mnn_generated as fb
from support import references

from mnnpy.core.session import Session

sys.path.insert(0, str(Path(__file__).parents[2] / "core"))
from netbuild import NetBuilder


@pytest.mark.parametrize(("q_shape", "kv_shape", "blocks", "want_q"), [
    ((1, 197, 3, 64), (1, 197, 3, 64), (None, 512), 197),  # ViT-tiny: one block of every query row
    ((1, 128, 4, 64), (1, 128, 4, 64), (None, 512), 128),  # BERT-4L
    ((1, 512, 8, 64), (1, 512, 8, 64), (None, 512), blocked.BLOCK_Q),  # scores 8 MB: query blocks
    ((1, 600, 2, 8), (1, 600, 2, 8), (None, 512), blocked.BLOCK_Q),  # keys over several blocks: online softmax
    ((1, 197, 3, 64), (1, 197, 3, 64), (64, 512), 64),  # a configured block size is kept
])
def test_attention_plan_picks_one_query_block_by_shape(q_shape: tuple, kv_shape: tuple, blocks: tuple,
                                                       want_q: int) -> None:
    assert blocked.plan(q_shape, kv_shape, kv_shape, *blocks).block_q == want_q


@pytest.mark.parametrize(("shape", "kv", "mask_shape", "causal"), [
    ((1, 197, 3, 64), (1, 197, 3, 64), None, False),  # ViT-tiny's attention (zero mask skipped)
    ((1, 128, 4, 64), (1, 128, 4, 64), (1, 1, 1, 128), False),  # BERT padding-mask form
    ((2, 9, 4, 8), (2, 11, 2, 8), (2, 4, 9, 11), False),  # grouped heads, full mask
    ((1, 10, 2, 8), (1, 12, 2, 8), None, True),  # causal, right-aligned
    ((1, 12, 2, 8), (1, 10, 2, 8), None, True),  # causal with Sq > Skv: the first rows see no key
])
def test_one_block_attention_matches_float64(shape: tuple, kv: tuple, mask_shape: tuple | None,
                                             causal: bool) -> None:
    rng = np.random.default_rng(3)
    q = (rng.standard_normal(shape) * 2).astype(np.float32)
    k, v = (rng.standard_normal(kv).astype(np.float32) for _ in range(2))
    mask = None if mask_shape is None else (rng.standard_normal(mask_shape) * 3).astype(np.float32)
    if mask is not None:
        mask[..., :2] = -np.inf  # hidden keys
    plan = blocked.plan(q.shape, k.shape, v.shape)
    assert plan.block_q == shape[1] and plan.block_kv == kv[1]  # the one-block path
    out = np.full((shape[0], shape[1], shape[2] * kv[3]), np.nan, np.float32)
    blocked.run(q, k, v, out, plan, blocked.Scratch(plan), mask, causal, 1.0 / np.sqrt(shape[3]))
    with np.errstate(invalid="ignore"):  # the reference's fully hidden rows: NaN
        want = references.attention(q, k, v, mask, causal)
    if causal and shape[1] > kv[1]:  # rows without a visible key: MNN's kernel gives 0, the reference NaN
        hidden = shape[1] - kv[1]
        assert not np.any(out[:, :hidden])
        out, want = out[:, hidden:], want[:, hidden:]
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-6)


def test_one_block_attention_fully_hidden_query_is_zero_and_scratch_reuse_is_clean() -> None:
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((1, 6, 2, 4)).astype(np.float32) for _ in range(3))
    mask = np.zeros((1, 1, 6, 6), np.float32)
    mask[:, :, 2] = -np.inf  # query 2 sees nothing
    plan = blocked.plan(q.shape, k.shape, v.shape)
    scratch = blocked.Scratch(plan, np.full(plan.scratch_bytes, 0xFF, np.uint8))  # NaN-filled arena chunk
    out = np.empty((1, 6, 8), np.float32)
    for _ in range(2):
        blocked.run(q, k, v, out, plan, scratch, mask, False, 0.5)
    assert not np.any(out[:, 2])
    keep = [0, 1, 3, 4, 5]
    with np.errstate(invalid="ignore"):
        want = references.attention(q, k, v, mask, False)
    np.testing.assert_allclose(out[:, keep], want[:, keep], rtol=1e-5, atol=1e-6)


def _norm64(x: np.ndarray, gamma: np.ndarray | None, beta: np.ndarray | None, rms: bool, eps: float) -> np.ndarray:
    v = x.astype(np.float64)
    if not rms:
        v = v - v.mean(-1, keepdims=True)
    v = v / np.sqrt((v * v).mean(-1, keepdims=True) + eps)
    return v * (1 if gamma is None else gamma) + (0 if beta is None else beta)


@pytest.mark.parametrize(("shape", "rms", "affine"), [((1, 197, 192), False, True), ((2, 5, 12), True, True),
                                                      ((3, 7), False, False)])
def test_layernorm_rows_match_float64_and_share_scratch(shape: tuple, rms: bool, affine: bool,
                                                        cpu_impl: str) -> None:
    """Two LayerNorms of one shape (numpy: shared [M, n] scratch, prepared 1/n column; jit: one compiled loop) on
    values with a large common offset (the mean must come off before the squares)."""
    rng = np.random.default_rng(5)
    n = shape[-1]
    params = []
    nb = NetBuilder()
    nb.input("x", shape)
    nb.unary("x", "nx", 1)  # NEG: a computed input
    for k, src in enumerate(("x", "nx")):
        p = fb.LayerNormT()
        p.axis, p.epsilon, p.useRmsnorm = [-1], 1e-5, rms
        gamma = (rng.standard_normal(n) + 1).astype(np.float32) if affine else None
        beta = rng.standard_normal(n).astype(np.float32) if affine else None
        p.gamma, p.beta = gamma, beta
        params.append((gamma, beta))
        nb.op(fb.OpType.LayerNorm, [src], [f"y{k}"], fb.OpParameter.LayerNorm, p)
    nb.outputs("y0", "y1")
    session = Session(nb.net)
    algorithms = [c.get("algorithm") for c in session.info()["commands"] if c["type"] == "LayerNorm"]
    suffix = "-jit" if cpu_impl == "jit" else ""
    assert algorithms == [("rmsnorm" if rms else "layernorm") + suffix] * 2
    for seed in (0, 1):
        x = (np.random.default_rng(seed).standard_normal(shape) * 3 + 50).astype(np.float32)
        session.write(session.input_index("x"), x)
        session.run()
        for k, v in enumerate((x, -x)):
            got = session.read(session.output_index(f"y{k}"))
            np.testing.assert_allclose(got, _norm64(v, *params[k], rms, 1e-5), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize(("ic", "oc", "act"), [(192, 768, None), (64, 20, "relu"), (16, 12, "relu6")])
def test_flat_gemm1x1_bound_calls_follow_their_arrays(ic: int, oc: int, act: str | None) -> None:
    """A MatMul as a 1x1 convolution over [M, K, 1, 1]: the one-lane path binds its numpy calls to the arrays of
    the first run; other arrays (two buffers alternating, a strided output) still get their own results."""
    from mnnpy.backends.cpu.compute.conv import make_conv2d_kernel
    from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4, packed_shape, unpack_nc4hw4
    from support.models import make_conv

    conv = make_conv(ic, oc, (1, 1), relu=act == "relu", relu6=act == "relu6")
    m = 37
    kernel = make_conv2d_kernel(conv, 12, (m, ic, 1, 1), force="gemm1x1")
    assert kernel.flat is not None
    w = np.asarray(conv.weight, np.float64).reshape(oc, ic)
    bias = np.asarray(conv.bias, np.float64)
    assert np.any(bias)
    pairs = []
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal((m, ic, 1, 1)).astype(np.float32)
        pairs.append((x, pack_nc4hw4(x), np.full(packed_shape(kernel.out_shape), np.nan, np.float32)))
    wide = np.full((*packed_shape(kernel.out_shape)[:-1], 8), np.nan, np.float32)
    for x, xp, out in [*pairs, *pairs, (pairs[0][0], pairs[0][1], wide[..., 2:6])]:
        kernel.run(xp, out)
        want = x.reshape(m, ic).astype(np.float64) @ w.T + bias
        want = np.maximum(want, 0) if act == "relu" else np.clip(want, 0, 6) if act == "relu6" else want
        np.testing.assert_allclose(unpack_nc4hw4(np.ascontiguousarray(out), oc).reshape(m, oc), want, rtol=1e-4,
                                   atol=1e-4)


@pytest.mark.parametrize("x_shape", [(37, 20, 1, 1), (1, 20, 5, 6)])  # flat, and folded bias behind layout copies
def test_gemm1x1_keeps_one_copy_of_its_weights(x_shape: tuple) -> None:
    from mnnpy.backends.cpu.compute.conv import make_conv2d_kernel
    from support.models import make_conv

    kernel = make_conv2d_kernel(make_conv(20, 24, (1, 1)), 12, x_shape, force="gemm1x1")
    assert np.shares_memory(kernel.weight, kernel.w_gemm) and kernel.weight.flags.c_contiguous
    assert kernel.w_gemm.shape[0] == 20 + (1 if kernel.folded else 0) and kernel.folded == (x_shape[2] > 1)  # bias row


def test_gelu_erf_sigmoid_form_matches_float64(cpu_impl: str) -> None:
    """GELU (erf) as x sigmoid(2 x R(x²)): absolute error within the fit's 6e-7 plus float32 rounding, the right
    limits at +-40 and +-3e38 (no inf / inf in R, exp's overflow giving -0), and for negative x an error within
    the fit's plus float32's resolution near 1 (6e-8) times |x|, the bound onnxruntime's and torch's
    0.5 x (1 + erf(x / sqrt 2)) meet. Both implementations: 13 numpy passes, and one compiled loop."""
    import math

    from mnnpy.backends.cpu.ops._common import gelu_erf as numpy_gelu

    def gelu_erf(x: np.ndarray, out: np.ndarray, *scratch: np.ndarray) -> None:
        numpy_gelu(x, out, *scratch) if cpu_impl == "numpy" else jit.gelu_erf(x, out)

    x = np.concatenate([np.linspace(-9, 9, 6001), [0.0, -0.0, 1e-30, -1e-30, 40.0, -40.0, 3e38, -3e38, 1e10, -1e10]])
    x = x.astype(np.float32)
    v = x.astype(np.float64)
    want = 0.5 * v * (1.0 + np.vectorize(math.erf)(v / math.sqrt(2.0)))
    out = np.full_like(x, np.nan)
    scratch = [np.full_like(x, np.nan) for _ in range(2)]
    with np.errstate(over="raise", invalid="raise"):  # the kernel handles x²'s and exp's overflows (the limits)
        gelu_erf(x, out, *scratch)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, want, rtol=2e-6, atol=2e-6)
    assert np.abs(out - want).max() < 8e-7
    assert out[-6] == 40.0 and out[-5] == 0.0 and out[-4] == np.float32(3e38) and out[-3] == 0.0
    assert out[-2] == np.float32(1e10) and out[-1] == 0.0
    neg = x < 0
    assert np.all(np.abs(out[neg] - want[neg]) <= 6e-7 + 6e-8 * np.abs(v[neg]))
    assert np.all(out[neg] <= 0.0) and np.all(out[~neg] >= 0.0)


def test_compiled_exp_matches_float64() -> None:
    """``jit.exp``: relative error < 1.5e-7 over float32's range, inf above log(FLT_MAX), 0 far below, NaN kept;
    in place too (its own loop); non-contiguous arrays go to numpy's exp."""
    if jit.kernels() is None:
        pytest.skip("numba (the `jit` extra) is not installed: the compiled exp cannot run here")
    x = np.concatenate([np.linspace(-86.0, 88.7, 400001), [np.nan, np.inf, -np.inf, 88.8, -90.0, -1e30, 0.0]])
    x = x.astype(np.float32)
    out = jit.exp(x, np.full_like(x, 7.0))
    want = np.exp(x.astype(np.float64))
    body = slice(0, -7)
    assert np.max(np.abs(out[body] / want[body] - 1.0)) < 1.5e-7
    assert np.isnan(out[-7]) and out[-6] == np.inf and out[-5] == 0.0 and out[-4] == np.inf
    assert out[-3] == 0.0 and out[-2] == 0.0 and out[-1] == 1.0
    inplace = x.copy()
    assert jit.exp(inplace, inplace) is inplace
    np.testing.assert_array_equal(inplace, out)
    strided = np.linspace(-5, 5, 64, dtype=np.float32).reshape(8, 8)[:, ::2]
    np.testing.assert_allclose(jit.exp(strided, np.empty_like(strided)), np.exp(strided), rtol=0)


_EXP_BASES = {"exp2": (np.exp2, blocked.LOG2_E), "exp": (np.exp, 1.0), "jit": (jit.exp, 1.0)}


def _base(name: str) -> tuple:
    if name == "jit" and jit.kernels() is None:
        pytest.skip("numba (the `jit` extra) is not installed: the compiled exp cannot run here")
    return _EXP_BASES[name]


def test_fast_exp_picks_a_base_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The attention's exponential is the compiled one where JIT kernels are on, else numpy's exp2 (log2 units)
    or exp (natural), timed once per process."""
    monkeypatch.delenv("MNNPY_JIT", raising=False)
    if jit.kernels() is not None:
        assert blocked.fast_exp() == _EXP_BASES["jit"]
    monkeypatch.setenv("MNNPY_JIT", "0")
    choice = blocked.fast_exp()
    assert choice in (_EXP_BASES["exp2"], _EXP_BASES["exp"])
    assert blocked.fast_exp() is choice
    fn, units = choice
    x = np.linspace(-30.0, 0.0, 301, dtype=np.float32)
    # exp2 takes x in log2 units: rounding x * log2(e) to float32 (half an ulp of up to 43.3) moves the result by up
    # to 30 * 2**-24 relative (1.8e-6), on top of the exp's own error; which base a process picks is timed, so an
    # AVX-512 host took exp2 where the AVX2 host had taken exp
    rtol = 1e-6 + (30 * 2.0**-24 if choice == _EXP_BASES["exp2"] else 0.0)
    np.testing.assert_allclose(fn(x * np.float32(units)), np.exp(x.astype(np.float64)), rtol=rtol, atol=1e-30)


@pytest.mark.parametrize(("shape", "kv", "block_q", "spread"), [
    ((1, 128, 4, 64), (1, 128, 4, 64), None, 2.0),  # BERT-4L's unmasked attention: centred keys
    ((2, 9, 4, 8), (1, 11, 2, 8), None, 2.0),  # grouped heads, one key batch for two query batches
    ((1, 40, 2, 16), (1, 40, 2, 16), 16, 2.0),  # several query blocks over one key block (keys centred once)
    ((1, 33, 2, 16), (1, 33, 2, 16), None, 80.0),  # score spread over 44 natural units: redone with the exact max
])
@pytest.mark.parametrize("base", ["exp2", "exp", "jit"])
def test_unmasked_one_block_attention_shifts_by_the_mean(monkeypatch: pytest.MonkeyPatch, shape: tuple, kv: tuple,
                                                         block_q: int | None, spread: float, base: str) -> None:
    """Without a mask the one-block softmax shifts the scores by their mean over the keys (centred keys, so no max
    and no subtraction) and falls back to the exact max when a column sum shows a spread too large for float32;
    with scores in log2 units for exp2 or natural ones for exp (``fast_exp`` picks the faster per machine)."""
    monkeypatch.setattr(blocked, "fast_exp", lambda: _base(base))
    rng = np.random.default_rng(7)
    q = (rng.standard_normal(shape) * spread).astype(np.float32)
    k, v = (rng.standard_normal(kv).astype(np.float32) * (spread if i == 0 else 1) for i in range(2))
    plan = blocked.plan(q.shape, k.shape, v.shape, block_q)
    assert plan.one_block and plan.block_q == (block_q or shape[1])
    calls: list[str] = []

    def spying(name: str) -> Any:
        real = getattr(blocked, name)

        def spy(*args: object, **kwargs: object) -> Any:
            calls.append(name)
            return real(*args, **kwargs)

        return spy

    for name in ("_shifted_block", "_single_block"):
        monkeypatch.setattr(blocked, name, spying(name))
    scratch = blocked.Scratch(plan, np.full(plan.scratch_bytes, 0xFF, np.uint8))  # NaN-filled arena chunk
    out = np.full((shape[0], shape[1], shape[2] * kv[3]), np.nan, np.float32)
    for _ in range(2):  # a reused scratch
        blocked.run(q, k, v, out, plan, scratch, None, False, 1.0 / np.sqrt(shape[3]))
    want = references.attention(q, k, v, None, False)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-6 * max(1.0, float(np.abs(want).max())))
    blocks = shape[0] * -(-shape[1] // plan.block_q)
    assert calls.count("_shifted_block") == 2 * blocks
    assert calls.count("_single_block") == (2 * blocks if spread > 10 else 0)  # redone with the exact max


def test_unmasked_one_block_attention_propagates_nan() -> None:
    """A NaN key (the shifted sums are NaN) goes through the exact path and gives NaN, as the reference does."""
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal((1, 6, 2, 4)).astype(np.float32) for _ in range(3))
    k[0, 3, 1, 2] = np.nan
    plan = blocked.plan(q.shape, k.shape, v.shape)
    out = np.zeros((1, 6, 8), np.float32)
    blocked.run(q, k, v, out, plan, blocked.Scratch(plan), None, False, 0.5)
    assert np.all(np.isnan(out[..., 4:])) and np.all(np.isfinite(out[..., :4]))


@pytest.mark.parametrize(("shape", "kv", "spread"), [
    ((1, 128, 4, 64), (1, 128, 4, 64), 2.0),  # BERT-4L
    ((2, 9, 2, 8), (1, 11, 2, 8), 2.0),  # two query batches over one key batch
    ((1, 33, 2, 16), (1, 33, 2, 16), 80.0),  # a row sum over the limit: the bound calls say False
])
@pytest.mark.parametrize("base", ["exp2", "exp", "jit"])
def test_bound_shifted_attention_matches_float64(monkeypatch: pytest.MonkeyPatch, shape: tuple, kv: tuple,
                                                 spread: float, base: str, cpu_impl: str) -> None:
    """`bind_shifted`: the unmasked one-block path as calls bound to fixed arrays (made once, run twice on fresh
    values written into the same arrays) equals the float64 reference, or reports the fallback; in either base,
    with the keys centred by numpy calls or by the compiled kernel (``cpu_impl``)."""
    monkeypatch.setattr(blocked, "fast_exp", lambda: _base(base))
    rng = np.random.default_rng(9)
    q = np.empty(shape, np.float32)
    k, v = np.empty(kv, np.float32), np.empty(kv, np.float32)
    plan = blocked.plan(q.shape, k.shape, v.shape)
    scratch = blocked.Scratch(plan, np.full(plan.scratch_bytes, 0xFF, np.uint8))  # NaN-filled arena chunk
    out = np.full((shape[0], shape[1], shape[2] * kv[3]), np.nan, np.float32)
    calls = blocked.bind_shifted(q, k, v, out, plan, scratch, 1.0 / np.sqrt(shape[3]))
    assert calls is not None
    for _ in range(2):
        q[...] = rng.standard_normal(shape) * spread
        k[...] = rng.standard_normal(kv) * spread
        v[...] = rng.standard_normal(kv)
        ok = all(call() is not False for call in calls)
        assert ok == (spread < 10)
        if ok:
            want = references.attention(q, k, v, None, False)
            np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-6 * max(1.0, float(np.abs(want).max())))
    grouped = blocked.plan((1, 8, 4, 8), (1, 8, 2, 8), (1, 8, 2, 8))
    assert blocked.bind_shifted(np.zeros((1, 8, 4, 8), np.float32), *(np.zeros((1, 8, 2, 8), np.float32),) * 2,
                                np.zeros((1, 8, 32), np.float32), grouped, blocked.Scratch(grouped), 0.5) is None


@pytest.mark.parametrize("spread", [2.0, 80.0])
def test_attention_op_bound_calls_follow_their_inputs(tmp_path: Path, spread: float) -> None:
    """The Attention op (zero mask: the bound centred path) over several runs with fresh inputs, and with a score
    spread that takes the exact-max fallback, vs float64."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_attention import _attention_model

    import mnnpy

    interp = mnnpy.Interpreter(str(_attention_model(tmp_path / "a.mnn", 24, heads=2, head_dim=8)))
    session = interp.createSession({"numThread": 1})
    rng = np.random.default_rng(10)
    for _ in range(3):
        q, k, v = (rng.standard_normal((1, 24, 2, 8)).astype(np.float32) * (spread if i < 2 else 1)
                   for i in range(3))
        for name, value in zip("qkv", (q, k, v), strict=True):
            interp.getSessionInput(session, name).copyFrom(value)
        interp.runSession(session)
        got = np.array(interp.getSessionOutput(session).getNumpyData()).reshape(1, 24, 16)
        want = references.attention(q, k, v, None, False)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6 * max(1.0, float(np.abs(want).max())))
    execution = next(c.execution for c in session.commands if c.info.get("algorithm", "").startswith("attention"))
    assert execution._bound is not None and execution._bound[4] is not None
