"""RandomUniform with MNN 3.6.1's CPU streams, so seeded scripts draw the values MNN draws (MNN: CPURandomUniform).

Measured on the official wheel: seeds (0, 0) use `std::default_random_engine` (minstd_rand0) default-seeded, every
other seed pair a `std::mt19937` seeded with 1; each value is one engine draw scaled by `generate_canonical<float>`
to [0, 1), then `low + u * (high - low)`, truncated for integer types. Both streams are reproduced exactly:
mt19937 by numpy's legacy RandomState (same seeding and 32-bit outputs), minstd_rand0 by powers of its multiplier.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.ir import NCHW
from mnnpy.core.registry import cpu_kernel

MINSTD_A, MINSTD_M = 16807, 2**31 - 1
BLOCK = 4096


@cache
def _minstd_powers() -> np.ndarray:
    """A^1 .. A^BLOCK mod M."""
    out = np.empty(BLOCK, np.uint64)
    v = 1
    for k in range(BLOCK):
        v = v * MINSTD_A % MINSTD_M
        out[k] = v
    return out


def minstd_draws(n: int) -> np.ndarray:
    """The first n outputs of a default-seeded minstd_rand0 (x_k = A^k mod M)."""
    powers = _minstd_powers()
    out = np.empty(n, np.uint64)
    x = np.uint64(1)
    for start in range(0, n, BLOCK):
        chunk = (powers[: min(BLOCK, n - start)] * x) % np.uint64(MINSTD_M)
        out[start: start + chunk.size] = chunk
        x = chunk[-1]
    return out


def canonical(n: int, default_engine: bool) -> np.ndarray:
    """n floats in [0, 1) as MNN's generate_canonical<float> over its engine."""
    if default_engine:
        u = (minstd_draws(n) - 1).astype(np.float32) / np.float32(MINSTD_M - 1)
    else:
        u = np.random.RandomState(1).randint(0, 2**32, n, dtype=np.uint32).astype(np.float32) / \
            np.float32(4294967296.0)
    return np.minimum(u, np.nextafter(np.float32(1), np.float32(0)))


@cpu_kernel(fb.OpType.RandomUniform, formats=(NCHW,))
class RandomUniform(CPUExecution):
    """Fill the output from the engine MNN picks for the seeds."""

    def on_execute(self) -> None:
        p = self.op.main
        y = self.y.array
        u = canonical(y.size, p.seed == 0 and p.seed2 == 0)
        low, high = np.float32(p.low), np.float32(p.high)
        y[...] = (low + u * (high - low)).reshape(y.shape).astype(y.dtype)
