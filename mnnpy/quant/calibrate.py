"""Activation ranges from running the float model on the CPU backend (``runSessionWithCallBack``).

Methods (``feature_quantize_method``): ``MAX_ABS`` (largest magnitude seen), ``EMA`` (exponential moving average of
per-batch maxima, momentum 0.9), ``KL`` (a 2048-bin histogram of non-zero |x| per tensor, then the clipping threshold
whose 128-level quantisation loses the least information, as TensorRT's and MNN's entropy calibration; the entropy
minimum over-clips heavy-tailed activations, so the threshold never goes below the 99.99th percentile), and, as an
mnnpy extension, ``MSE`` (the threshold with the least expected squared error, rounding plus clipping).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

BINS = 2048
LEVELS = 128
EMA_MOMENTUM = 0.9
KL_FLOOR_PERCENTILE = 0.9999


def kl_threshold(hist: np.ndarray, levels: int = LEVELS, step: int = 1) -> int:
    """Number of histogram bins to keep (the clipping threshold) minimising KL(P || Q).

    Args:
        hist: counts of |x| in equal bins from 0 to the observed maximum.
        levels: quantised levels on one side (128 for int8).
        step: candidate stride (1 tries every bin count from ``levels`` up).
    """
    hist = np.asarray(hist, np.float64)
    n = hist.size
    if n <= levels or hist.sum() == 0:
        return n
    best, best_kl = n, np.inf
    tail = np.cumsum(hist[::-1])[::-1]  # tail[i] = sum(hist[i:])
    for i in range(levels, n + 1, step):
        p = hist[:i].copy()
        if i < n:
            p[-1] += tail[i]
        nonzero = hist[:i] > 0
        edges = (np.arange(levels + 1) * i) // levels
        sums = np.add.reduceat(hist[:i], edges[:-1])
        counts = np.add.reduceat(nonzero.astype(np.float64), edges[:-1])
        per_bin = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
        q = np.repeat(per_bin, np.diff(edges)) * nonzero
        ps, qs = p.sum(), q.sum()
        if qs == 0:
            continue
        mask = p > 0
        pn, qn = p[mask] / ps, q[mask] / qs
        qn = np.where(qn > 0, qn, 1e-4)  # P has mass Q cannot represent (the clipped tail): a fixed penalty
        kl = float(np.sum(pn * np.log(pn / qn)))
        if kl < best_kl:
            best, best_kl = i, kl
    return best


def mse_threshold(hist: np.ndarray, top: float, clamp: int = 127) -> float:
    """Clipping threshold minimising the expected squared error of ``clamp``-level symmetric quantisation."""
    hist = np.asarray(hist, np.float64)
    centers = (np.arange(hist.size) + 0.5) * top / hist.size
    best, best_err = top, np.inf
    for k in range(hist.size // 32, hist.size + 1, 8):
        t = k * top / hist.size
        err = hist[:k].sum() * (t / clamp) ** 2 / 12 + float((hist[k:] * (centers[k:] - t) ** 2).sum())
        if err < best_err:
            best, best_err = t, err
    return best


def percentile_threshold(hist: np.ndarray, top: float, q: float = KL_FLOOR_PERCENTILE) -> float:
    """Upper edge of the histogram bin holding the ``q`` quantile."""
    cdf = np.cumsum(hist) / max(float(np.sum(hist)), 1.0)
    return (int(np.searchsorted(cdf, q)) + 1) * top / len(hist)


class Observer:
    """Per-tensor statistics across calibration runs."""

    def __init__(self, method: str, batch_size: int = 1) -> None:
        self.method = method
        self.batch_size = max(1, batch_size)
        self.absmax: dict[int, float] = {}
        self.ema: dict[int, float] = {}
        self.batch: dict[int, float] = {}  # maxima of the batch being collected (EMA)
        self.hist: dict[int, np.ndarray] = {}
        self.seen = 0

    def first_pass(self, index: int, value: np.ndarray) -> None:
        """Record the range of one tensor value."""
        m = float(np.max(np.abs(value))) if value.size else 0.0
        self.absmax[index] = max(self.absmax.get(index, 0.0), m)
        self.batch[index] = max(self.batch.get(index, 0.0), m)

    def end_sample(self, last: bool = False) -> None:
        """A calibration sample is done; every ``batch_size`` samples the batch maxima update the EMA."""
        self.seen += 1
        if self.seen % self.batch_size and not last:
            return
        for index, m in self.batch.items():
            prev = self.ema.get(index)
            self.ema[index] = m if prev is None else EMA_MOMENTUM * prev + (1 - EMA_MOMENTUM) * m
        self.batch = {}

    def second_pass(self, index: int, value: np.ndarray) -> None:
        """Accumulate the histogram of non-zero |x| over [0, absmax] (KL only)."""
        top = self.absmax.get(index, 0.0)
        if top <= 0:
            return
        mag = np.abs(value[value != 0])  # exact zeros (ReLU) would swamp the first bin and pull the threshold down
        h, _ = np.histogram(mag, bins=BINS, range=(0.0, top))
        self.hist[index] = self.hist.get(index, 0) + h

    def threshold(self, index: int) -> float:
        """Clipping magnitude of a tensor (its scale is threshold / clamp)."""
        top = self.absmax.get(index, 0.0)
        if top <= 0:
            return 0.0
        if self.method == "EMA":
            return self.ema[index]
        hist = self.hist.get(index)
        if self.method == "KL" and hist is not None:
            keep = kl_threshold(hist)
            kl = (keep + 0.5) * top / BINS if keep < BINS else top
            return min(top, max(kl, percentile_threshold(hist, top)))
        if self.method == "MSE" and hist is not None:
            return mse_threshold(hist, top)
        return top


def calibrate(model: str | bytes, samples: list[dict[str, np.ndarray]], targets: dict[str, tuple[list, list]],
              method: str, progress: Callable[[str], None] | None = None, batch_size: int = 1) -> dict[int, float]:
    """Thresholds of the tensors read or written by the ``targets`` ops.

    Args:
        model: the float .mnn (path or bytes).
        samples: inputs by name.
        targets: op name -> (input tensor indexes, output tensor indexes) to observe (None entries are skipped).
        method: KL / EMA / MAX_ABS / MSE.
        progress: optional sink for progress lines.
        batch_size: samples per EMA step (MNN's ``batch_size``).

    Returns:
        tensor index -> threshold (largest magnitude that maps to the clamp value).
    """
    from mnnpy.interpreter import Interpreter

    interp = Interpreter(model)
    session = interp.createSession({"backend": "CPU", "numThread": 1})
    obs = Observer(method, batch_size)
    passes = (obs.first_pass, obs.second_pass) if method in ("KL", "MSE") else (obs.first_pass,)
    for k, record in enumerate(passes):
        def seen(tensors: list, indexes: list, record: Callable[[int, np.ndarray], None] = record) -> None:
            for t, i in zip(tensors, indexes, strict=False):
                if i is not None:
                    record(i, np.asarray(t.getNumpyData(), np.float32))

        def begin(tensors: list, name: Any, seen: Callable = seen) -> bool:
            if name in targets:
                seen(tensors, targets[name][0])
            return True

        def end(tensors: list, name: Any, seen: Callable = seen) -> bool:
            if name in targets:
                seen(tensors, targets[name][1])
            return True

        for s, feeds in enumerate(samples):
            _feed(interp, session, feeds)
            interp.runSessionWithCallBack(session, begin, end)
            if k == 0:
                obs.end_sample(last=s == len(samples) - 1)
            if progress is not None and (s + 1) % max(1, len(samples) // 4) == 0:
                progress(f"calibration pass {k + 1}/{len(passes)}: {s + 1}/{len(samples)} samples")
    return {i: obs.threshold(i) for i in obs.absmax}


def _feed(interp: Any, session: Any, feeds: dict[str, np.ndarray]) -> None:
    from mnnpy.tensor import Tensor, Tensor_DimensionType_Caffe

    for name, value in feeds.items():
        tensor = interp.getSessionInput(session, name)
        if tuple(tensor.getShape()) != value.shape:
            interp.resizeTensor(tensor, list(value.shape))
            interp.resizeSession(session)
            tensor = interp.getSessionInput(session, name)
        tensor.copyFrom(Tensor(list(value.shape), data=np.ascontiguousarray(value, np.float32),
                               dimType=Tensor_DimensionType_Caffe))
