"""Blocked attention with a partially fused ("online") softmax: the [Sq, Skv] probability matrix is never written.

For each block of query rows and each block of key rows, the scores of the block are computed into a fixed-size
scratch, and each row keeps only its running max and running sum (FlashAttention's recurrence):

    m' = max(m, rowmax(s));  l' = l * exp(m - m') + rowsum(exp(s - m'));  acc' = acc * exp(m - m') + exp(s - m') @ V

so the scratch is O(H * block_q * block_kv), independent of the sequence length: only the inputs and the output
[B, Sq, H*Dv] grow (linearly). When every key fits one block, a plain softmax runs on transposed scores instead, and
for short sequences (scores up to ``ONE_PASS_BYTES``) all query rows form one block (BERT-4L, ViT-tiny).

Without a mask, that one-block softmax shifts each query's scores by their mean over the keys instead of their max
(softmax is shift-invariant): q·(k - mean k) is the shifted score, so the shift rides in the scores GEMM on centred
keys (one pass over K, which also takes the scale) and the max reduction and the subtraction over the scores go
away. The mean is below the max, so the largest term is at least 1 (no underflow); the row sums show the rest: a sum
>= 2^64 (a score spread over 44 natural units: overflow possible) or NaN redoes the block with the exact max.
Unmasked one-block scores are in the units of whichever of numpy's exp2 and exp is faster on this machine
(``fast_exp``, timed once per process): with AVX-512 numpy's float32 exp2 is ~1.6x faster than its exp (scores in
log2 units: the keys scaled by log2(e) too); with AVX2 only, its exp2 is ~1.65x slower (4.8 vs 2.9 ns/element).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from . import jit

BLOCK_Q = 128
BLOCK_KV = 512
ONE_PASS_BYTES = 1 << 20  # all query rows in one block when the [H, Skv, Sq] scores fit in this (L2-sized)
LOG2_E = 1.4426950408889634
SUM_LIMIT = 2.0 ** 64  # mean-shifted row sums at or above this are redone with the exact max


def fast_exp() -> tuple[Callable[..., np.ndarray], float]:
    """(the exp to use on scores, and the factor that puts natural-log scores in its units): the compiled one where
    JIT kernels are on (``jit.exp``: ~3.5x numpy's float32 exp on an AVX2 host), else ``numpy_fast_exp``."""
    if jit.enabled():
        return jit.exp, 1.0
    return numpy_fast_exp()


@functools.cache
def numpy_fast_exp() -> tuple[np.ufunc, float]:
    """(numpy's exp2 or exp, whichever is faster here, and the factor that puts natural-log scores in its units).

    Timed once per process on 16K float32 scores (best of 5 each, ~1 ms): numpy's own SIMD loops differ by host
    (exp2 ~1.6x faster than exp with AVX-512, ~1.65x slower with AVX2 only). Both overflow at the same score."""
    x = np.linspace(-20.0, 0.0, 1 << 14, dtype=np.float32)
    out = np.empty_like(x)
    best = {}
    for fn in (np.exp2, np.exp) * 5:
        t0 = time.perf_counter()
        fn(x, out=out)
        best[fn] = min(best.get(fn, np.inf), time.perf_counter() - t0)
    return (np.exp2, LOG2_E) if best[np.exp2] < best[np.exp] else (np.exp, 1.0)


@dataclass
class AttentionPlan:
    """Sizes and block sizes of one attention problem; `scratch_bytes` is what `Scratch` allocates."""

    batch: int
    seq_q: int
    seq_kv: int
    heads: int
    kv_heads: int
    head_dim: int
    value_dim: int
    block_q: int
    block_kv: int

    @property
    def one_block(self) -> bool:
        """Every key in one block: a plain softmax (see ``_single_block``)."""
        return self.seq_kv <= self.block_kv

    @property
    def scratch_bytes(self) -> int:
        """Bytes of the scratch: a scaled query block, a score block, accumulators (bounded by the block sizes), and
        with one key block the centred keys and their mean."""
        h, bq, bk = self.heads, self.block_q, self.block_kv
        keys = (self.seq_kv + 1) * self.kv_heads * self.head_dim if self.one_block else 0
        return 4 * (h * bq * (self.head_dim + bk + 2 * self.value_dim + 4) + keys)


def plan(q_shape: tuple[int, ...], k_shape: tuple[int, ...], v_shape: tuple[int, ...], block_q: int | None = None,
         block_kv: int = BLOCK_KV) -> AttentionPlan:
    """Block sizes for query [B, Sq, H, D], key [B', Skv, Hkv, D], value [B', Skv, Hkv, Dv].

    ``block_q`` None picks by shape: every query row in one block when all keys fit one key block and the scores
    [H, Skv, Sq] fit ``ONE_PASS_BYTES`` (BERT-4L's 4 x 128², ViT-tiny's 3 x 197²: one block instead of 128 + 69
    rows, ~10% of the op), else ``BLOCK_Q`` rows."""
    b, sq, h, d = q_shape
    _, skv, hkv, dv = v_shape
    if block_q is None:
        block_q = sq if skv <= block_kv and 4 * h * sq * skv <= ONE_PASS_BYTES else BLOCK_Q
    return AttentionPlan(b, sq, skv, h, hkv, d, dv, max(1, min(block_q, sq)), max(1, min(block_kv, skv)))


class Scratch:
    """Work arrays for one plan: views into `buffer` (e.g. a planned arena chunk of `plan.scratch_bytes`), or new
    arrays when no buffer is given; `run` allocates only numpy temporaries of block size."""

    query: np.ndarray
    scores: np.ndarray
    acc: np.ndarray
    part: np.ndarray
    row_max: np.ndarray
    row_sum: np.ndarray
    new_max: np.ndarray
    alpha: np.ndarray
    keys: np.ndarray
    key_mean: np.ndarray

    def __init__(self, p: AttentionPlan, buffer: np.ndarray | None = None) -> None:
        h, bq, bk = p.heads, p.block_q, p.block_kv
        kv = p.seq_kv if p.one_block else 0
        shapes = {"query": (h, bq, p.head_dim), "scores": (h, bq, bk), "acc": (h, bq, p.value_dim),
                  "part": (h, bq, p.value_dim), "row_max": (h, bq, 1), "row_sum": (h, bq, 1), "new_max": (h, bq, 1),
                  "alpha": (h, bq, 1), "keys": (kv, p.kv_heads, p.head_dim), "key_mean": (1 if kv else 0,
                                                                                         p.kv_heads * p.head_dim)}
        flat = np.empty(p.scratch_bytes // 4, np.float32) if buffer is None else \
            buffer.reshape(-1).view(np.float32)[: p.scratch_bytes // 4]
        offset = 0
        for name, shape in shapes.items():
            size = math.prod(shape)
            setattr(self, name, flat[offset: offset + size].reshape(shape))
            offset += size
        self.ones = np.ones((1, p.block_kv), np.float32)  # row sums as a GEMV (outside the arena: never rewritten)


def causal_bias(rows: slice, cols: slice, seq_q: int, seq_kv: int) -> np.ndarray:
    """Additive bias of MNN's default (no mask input) causal attention: key j is visible to query i when
    j <= i + (Skv - Sq) (right-aligned, as for a KV cache)."""
    i = np.arange(rows.start, rows.stop)[:, None] + (seq_kv - seq_q)
    j = np.arange(cols.start, cols.stop)[None, :]
    return np.where(j <= i, 0.0, -np.inf).astype(np.float32)


def _block_mask(mask: np.ndarray | None, b: int, rows: slice, cols: slice) -> np.ndarray | None:
    """The mask entries of batch b for a block, shaped to broadcast against [H, bq, bk] (mask is 4-D, broadcast)."""
    if mask is None:
        return None
    m = mask[b if mask.shape[0] > 1 else 0]
    return m[:, rows if m.shape[1] > 1 else slice(None), cols if m.shape[2] > 1 else slice(None)]


def run(q: np.ndarray, k: np.ndarray, v: np.ndarray, out: np.ndarray, p: AttentionPlan, scratch: Scratch,
        mask: np.ndarray | None, causal: bool, scale: float) -> None:
    """out[b, i, h*Dv:(h+1)*Dv] = softmax(scale * q_h k_h^T + mask)[i] @ v_h, block by block.

    Args:
        q, k, v: [B, Sq, H, D], [B', Skv, Hkv, D], [B', Skv, Hkv, Dv] (B' is B or 1; H a multiple of Hkv).
        out: [B, Sq, H * Dv], written in place.
        mask: None or a float mask broadcastable to [B, H, Sq, Skv] (4-D), added to the scaled scores.
        causal: apply MNN's default causal mask (used when the op has no mask input).
    """
    s = scratch
    rep = p.heads // p.kv_heads
    out4 = out.reshape(p.batch, p.seq_q, p.heads, p.value_dim)
    centred = p.one_block and mask is None and not causal  # mean-shifted scores in fast_exp's units (docstring)
    exp, units = fast_exp() if centred else (jit.exp if jit.enabled() else np.exp, 1.0)
    q_scale = np.float32(scale * units)
    for b in range(p.batch):
        kb = b if k.shape[0] > 1 else 0
        keys = k[kb].transpose(1, 2, 0)  # [Hkv, D, Skv] and [Hkv, Skv, Dv]: strided views BLAS reads as they are
        values = _heads(v[kb].transpose(1, 0, 2), rep)
        shifted = _heads(_centre(k[kb], s, q_scale).transpose(1, 2, 0), rep) if centred else None
        if shifted is None:
            keys = _heads(keys, rep)
        for r0 in range(0, p.seq_q, p.block_q):
            r1 = min(r0 + p.block_q, p.seq_q)
            n = r1 - r0
            rows = slice(r0, r1)
            query, acc = s.query[:, :n], s.acc[:, :n]
            if shifted is not None:  # the scale is in the keys: q as it is (a strided view BLAS reads)
                if _shifted_block(q[b, rows].transpose(1, 0, 2), shifted, values, s, n, out4[b, rows], exp):
                    continue
                keys = _heads(k[kb].transpose(1, 2, 0), rep)  # a spread over 2^64: the exact max
            np.multiply(q[b, rows].transpose(1, 0, 2), q_scale, out=query)
            if p.one_block:  # a plain softmax, normalised after the V product
                _single_block(query, keys, values, s, n, _block_mask(mask, b, rows, slice(0, p.seq_kv)),
                              causal_bias(rows, slice(0, p.seq_kv), p.seq_q, p.seq_kv) if causal else None,
                              out4[b, rows], exp=exp)
                continue
            m, lsum, new_m, alpha = s.row_max[:, :n], s.row_sum[:, :n], s.new_max[:, :n], s.alpha[:, :n]
            m.fill(-np.inf)
            lsum.fill(0.0)
            acc.fill(0.0)
            for c0 in range(0, p.seq_kv, p.block_kv):
                c1 = min(c0 + p.block_kv, p.seq_kv)
                cols = slice(c0, c1)
                if causal and c0 > r1 - 1 + (p.seq_kv - p.seq_q):
                    break  # every later key is masked for this row block
                scores = s.scores[:, :n, : c1 - c0]
                np.matmul(query, keys[:, :, cols], out=scores)
                bias = _block_mask(mask, b, rows, cols)
                if bias is not None:
                    scores += bias
                if causal:
                    scores += causal_bias(rows, cols, p.seq_q, p.seq_kv)
                np.maximum(m, scores.max(axis=-1, keepdims=True), out=new_m)
                safe = np.where(np.isfinite(new_m), new_m, np.float32(0.0))
                np.subtract(m, safe, out=alpha)
                np.exp(alpha, out=alpha)
                scores -= safe
                np.exp(scores, out=scores)
                lsum *= alpha
                lsum += scores.sum(axis=-1, keepdims=True)
                acc *= alpha
                np.matmul(scores, values[:, cols], out=s.part[:, :n])
                acc += s.part[:, :n]
                np.copyto(m, new_m)
            np.divide(acc, np.where(lsum > 0, lsum, np.float32(1.0)), out=acc)
            out4[b, rows] = acc.transpose(1, 0, 2)


def _heads(x: np.ndarray, rep: int) -> np.ndarray:
    """Key / value heads repeated for grouped queries (a copy only when rep > 1)."""
    return np.repeat(x, rep, axis=0) if rep > 1 else x


def _centre(keys: np.ndarray, s: Scratch, scale: np.float32) -> np.ndarray:
    """``scale`` (keys [Skv, Hkv, D] minus their mean over the keys), into the scratch (the mean as a GEMV)."""
    skv = keys.shape[0]
    np.matmul(s.ones[:, :skv], keys.reshape(skv, -1), out=s.key_mean)
    s.key_mean *= np.float32(1.0 / skv)
    np.subtract(keys, s.key_mean.reshape(keys.shape[1:]), out=s.keys)
    s.keys *= scale
    return s.keys


def _shifted_block(query: np.ndarray, keys: np.ndarray, values: np.ndarray, s: Scratch, n: int,
                   out: np.ndarray, exp: np.ufunc) -> bool:
    """One key block, no mask, centred keys (the scores come shifted by their mean, in ``exp``'s units): scores
    [H, n, Skv] = q k'^T, ``exp`` in place, row sums as a GEMV, P @ V straight into ``out`` [n, H, Dv] (a strided view
    BLAS writes) and one pass scaling it by 1 / rowsum. With no max to take, the scores keep queries down and keys
    across (the GEMMs ~5% faster than on transposed scores). Returns False, leaving ``out`` alone, when a row sum
    reaches ``SUM_LIMIT`` or is NaN (the caller redoes the block with the exact max)."""
    skv = keys.shape[2]
    scores = s.scores[:, :n, :skv]
    np.matmul(query, keys, out=scores)
    _exp_in_place(scores, exp)
    row_sum = s.row_sum[:, :n]
    np.matmul(scores, s.ones.reshape(-1, 1)[:skv], out=row_sum)
    if not np.max(row_sum) < SUM_LIMIT:
        return False
    np.divide(np.float32(1.0), row_sum, out=row_sum)
    np.matmul(scores, values, out=out.transpose(1, 0, 2))
    out *= row_sum.transpose(1, 0, 2)
    return True


def _single_block(query: np.ndarray, keys: np.ndarray, values: np.ndarray, s: Scratch, n: int,
                  bias: np.ndarray | None, causal: np.ndarray | None, out: np.ndarray, exp: np.ufunc = np.exp) -> None:
    """All keys fit in one block: a plain softmax on transposed scores [H, Skv, n] (keys down, queries across), so
    the max over the keys is an elementwise max of contiguous rows (numpy's per-row reductions along a short last
    axis are ~1.5x slower); the row sums come as a GEMV with ones; P @ V goes straight into ``out`` [n, H, Dv] (a
    strided view BLAS writes), then one pass scales it by 1 / rowsum (it touches [n, H, Dv], not the scores)."""
    h, skv = keys.shape[0], keys.shape[2]
    bq = s.query.shape[1]
    scores = s.scores.reshape(-1)[: h * skv * bq].reshape(h, skv, bq)[:, :, :n]
    np.matmul(keys.transpose(0, 2, 1), query.transpose(0, 2, 1), out=scores)
    if bias is not None:
        scores += bias.transpose(0, 2, 1)
    if causal is not None:
        scores += causal.T
    col_max = s.row_max.reshape(h, 1, bq)[:, :, :n]
    np.max(scores, axis=1, keepdims=True, out=col_max)
    if bias is not None or causal is not None:
        col_max[~np.isfinite(col_max)] = 0.0  # a fully hidden query: exp gives zeros, the sum is set to 1 below
    scores -= col_max
    exp(scores, out=scores)
    col_sum = s.row_sum.reshape(h, 1, bq)[:, :, :n]
    np.matmul(s.ones[:, :skv], scores, out=col_sum)
    if bias is not None or causal is not None:
        col_sum[col_sum == 0] = 1.0
    np.divide(np.float32(1.0), col_sum, out=col_sum)
    np.matmul(scores.transpose(0, 2, 1), values, out=out.transpose(1, 0, 2))
    out *= col_sum.transpose(2, 0, 1)


def _exp_in_place(scores: np.ndarray, exp: np.ufunc) -> None:
    with np.errstate(over="ignore"):  # a spread over 2^128 overflows to inf, caught by the row-sum check
        exp(scores, out=scores)


def _sums_below_limit(row_sum: np.ndarray) -> bool:
    return bool(np.max(row_sum) < SUM_LIMIT)


def bind_shifted(q: np.ndarray, k: np.ndarray, v: np.ndarray, out: np.ndarray, p: AttentionPlan, s: Scratch,
                 scale: float) -> list[Callable[[], object]] | None:
    """``run``'s unmasked one-block path (centred keys, ``_shifted_block``) for these arrays as numpy calls bound
    once (views, constants): ~10 us of per-run glue off each attention (BERT-4L 193 -> 183 us, ViT-tiny 246 -> 234).
    A call returning False is the row-sum check failing: the caller then runs ``run`` (the exact max). None where
    the path does not apply (query blocks, grouped heads) or an array is not contiguous (views would be copies)."""
    if not p.one_block or p.block_q != p.seq_q or p.heads != p.kv_heads or \
            not all(a.flags.c_contiguous for a in (q, k, v, out)):
        return None
    skv, n = p.seq_kv, p.seq_q
    out4 = out.reshape(p.batch, n, p.heads, p.value_dim)
    scores, row_sum = s.scores[:, :n, :skv], s.row_sum[:, :n]
    mean = s.key_mean.reshape(k.shape[2:])
    exp, units = fast_exp()
    calls: list[Callable[[], object]] = []
    # the centred keys by one compiled call (two passes; 17 against 44 us for ViT-tiny's [197, 192], 12 against 58
    # for BERT-4L's [128, 256]) where JIT kernels are on
    compiled = jit.kernels() if jit.enabled() and s.keys.flags.c_contiguous else None
    for b in range(p.batch):
        kb = b if k.shape[0] > 1 else 0
        if compiled is not None:
            calls.append(partial(compiled.centre_keys, jit.readonly(k[kb].reshape(skv, -1)),
                                 np.float32(scale * units), s.keys.reshape(skv, -1)))
        else:
            calls += [partial(np.matmul, s.ones[:, :skv], k[kb].reshape(skv, -1), out=s.key_mean),
                      partial(np.multiply, s.key_mean, np.float32(1.0 / skv), out=s.key_mean),
                      partial(np.subtract, k[kb], mean, out=s.keys),
                      partial(np.multiply, s.keys, np.float32(scale * units), out=s.keys)]
        calls += [partial(np.matmul, q[b].transpose(1, 0, 2), s.keys.transpose(1, 2, 0), out=scores),
                  partial(_exp_in_place, scores, exp),
                  partial(np.matmul, scores, s.ones.reshape(-1, 1)[:skv], out=row_sum),
                  partial(_sums_below_limit, row_sum),
                  partial(np.divide, np.float32(1.0), row_sum, out=row_sum),
                  partial(np.matmul, scores, v[b if v.shape[0] > 1 else 0].transpose(1, 0, 2),
                          out=out4[b].transpose(1, 0, 2)),
                  partial(np.multiply, out4[b], row_sum.transpose(1, 0, 2), out=out4[b])]
    return calls
