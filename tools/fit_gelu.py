"""Fit of the GELU (erf form) approximation used by the CPU backend (`backends/cpu/ops/_common.gelu_erf`).

GELU(x) = x Phi(x) = 0.5 x (1 + tanh(y(x))) with y = artanh(erf(x / sqrt 2)), an odd function. y / x is fitted
as a rational function of s = x², P(s) / Q(s) with deg P = 3 and Q monic of degree 2, on [0, 6] (beyond, tanh is
saturated in float32 and only the sign and growth of y matter; P / Q grows like s). The error is weighted by
d GELU / dy = 2 x Phi (1 - Phi), so what is minimised is the error of GELU itself, and the maximum is driven down
by Lawson's iteratively reweighted least squares (linearised as P - (y/x) Q, divided by the last Q).

Run: `python tools/fit_gelu.py` prints the coefficients and the float32 error against math.erf in float64.
"""

from __future__ import annotations

import math

import numpy as np


def fit(deg_p: int = 3, deg_q: int = 2, top: float = 6.0, rounds: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """(p, q) with P(s) = sum p[k] s^k and Q(s) = s^deg_q + sum q[k] s^k, minimax-weighted on (0, top]."""
    x = np.linspace(1e-5, top, 30000)
    upper = np.array([0.5 * math.erfc(v / math.sqrt(2.0)) for v in x])  # 1 - Phi(x), exact in the tail
    phi = 1.0 - upper
    target = 0.5 * (np.log(phi) - np.log(upper)) / x  # y / x
    s, weight = x * x, x * x * 2.0 * phi * upper  # error in y/x -> error in GELU
    basis = np.concatenate([np.stack([s ** k for k in range(deg_p + 1)], 1),
                            -np.stack([target * s ** k for k in range(deg_q)], 1)], 1)
    q_last, lawson, best = np.ones_like(s), np.ones_like(s), None
    for _ in range(rounds):
        w = weight * lawson / q_last
        sol = np.linalg.lstsq(basis * w[:, None], target * s ** deg_q * w, rcond=None)[0]
        p, q = sol[: deg_p + 1], sol[deg_p + 1:]
        big_q = s ** deg_q + sum(q[k] * s ** k for k in range(deg_q))
        err = np.abs((sum(p[k] * s ** k for k in range(deg_p + 1)) / big_q - target) * weight)
        if best is None or err.max() < best[0]:
            best = (err.max(), p.copy(), q.copy())
        q_last = np.abs(big_q)
        lawson = lawson * (err / err.max()) ** 0.3 + 1e-14
        lawson /= lawson.max()
    assert best is not None
    return best[1], best[2]


def main() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    p, q = fit()
    print("P:", [float(v) for v in p])
    print("Q:", [float(v) for v in q] + [1.0])
    from mnnpy.backends.cpu.ops._common import gelu_erf

    xs = np.linspace(-16, 16, 200001).astype(np.float32)
    out, a, b = np.empty_like(xs), np.empty_like(xs), np.empty_like(xs)
    gelu_erf(xs, out, a, b)
    ref = np.array([0.5 * v * math.erfc(-v / math.sqrt(2.0)) for v in xs.astype(np.float64)])
    print(f"shipped coefficients, float32: max |error| {np.abs(out - ref).max():.3g}")


if __name__ == "__main__":
    main()
