"""MNN's fused Attention op on the CPU: blocked attention with an online softmax (see compute/attention.py).

Inputs follow MNN: query [B, Sq, H, D], key and value [B, Skv, Hkv, D]; the output is [B, Sq, H*D]; the scale is
1/sqrt(D). Without a mask input the op is causal (what official MNN computes); a float mask is added to the scores
and may be any shape broadcastable to [B, H, Sq, Skv] (official MNN needs exactly [1, 1, Sq, Skv]); an integer mask
keeps the positions where it is nonzero. A constant all-zero mask is recognised in on_resize and never read.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.backends.cpu.compute import attention as blocked
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core.backend import TensorRef
from mnnpy.core.registry import cpu_kernel


def _as_bias(value: np.ndarray) -> np.ndarray:
    """A mask as an additive float bias (integer masks: 0 hides, nonzero keeps)."""
    if value.dtype.kind == "f":
        return value.astype(np.float32, copy=False)
    return np.where(value != 0, np.float32(0.0), np.float32(-np.inf))


@cpu_kernel(fb.OpType.Attention)
class Attention(CPUExecution):
    """softmax(q k^T / sqrt(D) + mask) v per head, a block of query rows and key rows at a time."""

    scratch_ref: TensorRef | None = None  # an arena chunk the schedule plans for `scratch_bytes()`, when it does

    def _plan(self) -> blocked.AttentionPlan:
        q, k, v = (ref.desc.shape for ref in self.inputs[:3])
        if len(q) != 4 or len(k) != 4 or len(v) != 4:
            raise ModelError(f"op {self.op.name!r}: Attention needs rank-4 query/key/value, got {q}, {k}, {v}")
        config = self.backend.config
        block_q = config.get("attentionBlockQ")  # None: the plan picks by shape
        return blocked.plan(q, k, v, None if block_q is None else int(block_q),
                            int(config.get("attentionBlockKV", blocked.BLOCK_KV)))

    def scratch_bytes(self) -> int:
        """Work memory the memory plan may give this op (live only while it runs)."""
        return self._plan().scratch_bytes

    def on_resize(self) -> None:
        q, k = self.inputs[0].desc.shape, self.inputs[1].desc.shape
        self.plan = self._plan()
        chunk = None if self.scratch_ref is None else self.scratch_ref.array
        if chunk is not None:
            self.work, self.scratch_kind = blocked.Scratch(self.plan, chunk), "arena"
        else:
            self.work, self.scratch_kind = self._shared_scratch()
        self.scale = 1.0 / float(np.sqrt(q[3]))
        self.causal = len(self.inputs) < 4
        self.mask: np.ndarray | None = None
        self.mask_const: np.ndarray | None = None
        self.skip_mask = False
        if not self.causal:
            ref = self.inputs[3]
            shape = ref.desc.shape
            if len(shape) > 4:
                raise ModelError(f"op {self.op.name!r}: Attention mask of rank {len(shape)} (at most 4)")
            self.mask_shape = (1,) * (4 - len(shape)) + tuple(shape)
            try:
                np.broadcast_shapes(self.mask_shape, (q[0], q[2], q[1], k[1]))
            except ValueError as exc:
                raise ModelError(f"op {self.op.name!r}: mask {shape} does not broadcast to "
                                 f"{[q[0], q[2], q[1], k[1]]}") from exc
            if ref.const and ref.array is not None:
                value = np.asarray(ref.array)
                self.skip_mask = value.dtype.kind == "f" and not np.any(value)
                self.mask_const = _as_bias(value).reshape(self.mask_shape)
        self.algorithm = f"attention-blocked-{self.plan.block_q}x{self.plan.block_kv}"
        self._bound: tuple | None = None  # (q, k, v, out, calls) of `blocked.bind_shifted`, made on the first run

    def _shared_scratch(self) -> tuple[blocked.Scratch, str]:
        """Without a planned chunk: one scratch per plan shape and backend (Attention ops run one after another)."""
        p = self.plan
        key = ("attention-scratch", p.heads, p.kv_heads, p.seq_kv, p.head_dim, p.value_dim, p.block_q, p.block_kv)
        cache = getattr(self.backend, "kernel_cache", None)
        if cache is None:
            return blocked.Scratch(p), "own"
        if key in cache:
            return cache[key], "shared"
        cache[key] = blocked.Scratch(p)
        return cache[key], "own"

    def info(self) -> dict[str, Any]:
        """Block sizes, the mask kind and the scratch: in the arena (counted in its size), or outside it (its bytes
        counted by the first op of a shape; later ones share it)."""
        outside = self.plan.scratch_bytes if self.scratch_kind == "own" else 0
        return {"algorithm": self.algorithm, "block_q": self.plan.block_q, "block_kv": self.plan.block_kv,
                "scratch": self.scratch_kind, "scratch_bytes": outside,
                "mask": "causal" if self.causal else "zero (skipped)" if self.skip_mask else "additive"}

    def on_execute(self) -> None:
        q, k, v = (ref.array for ref in self.inputs[:3])
        out = self.y.array
        if not self.causal and self.skip_mask:  # no mask: the centred one-block path, bound to these arrays
            bound = self._bound
            if bound is None or bound[0] is not q or bound[1] is not k or bound[2] is not v or bound[3] is not out:
                bound = self._bound = (q, k, v, out, blocked.bind_shifted(q, k, v, out, self.plan, self.work,
                                                                          self.scale))
            if bound[4] is not None and all(call() is not False for call in bound[4]):
                return  # else: not bound here, or a row sum over the limit (redone below with the exact max)
        mask = None
        if not self.causal and not self.skip_mask:
            mask = self.mask_const if self.mask_const is not None else \
                _as_bias(np.asarray(self.inputs[3].array)).reshape(self.mask_shape)
        blocked.run(q, k, v, out, self.plan, self.work, mask, self.causal, self.scale)
