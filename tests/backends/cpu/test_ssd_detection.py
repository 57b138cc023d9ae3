"""DetectionOutput on mnnpy's CPU against a numpy reference written loop by loop from SSD Caffe's
detection_output_layer.cpp and bbox_util.cpp (DecodeBBox, ApplyNMSFast with eta 1, JaccardOverlap normalised,
keep_top_k over all classes), for each code type, shared and per-class locations, and the top-k limits."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from .test_ssd import _run

RNG = np.random.default_rng(9)


def _decode(prior: list[float], var: list[float], loc: list[float], code: int, encoded: bool) -> list[float]:
    if encoded:
        var = [1.0] * 4
    x0, y0, x1, y1 = prior
    pw, ph = x1 - x0, y1 - y0
    if code == 1:  # CORNER
        return [x0 + var[0] * loc[0], y0 + var[1] * loc[1], x1 + var[2] * loc[2], y1 + var[3] * loc[3]]
    if code == 3:  # CORNER_SIZE
        return [x0 + var[0] * loc[0] * pw, y0 + var[1] * loc[1] * ph, x1 + var[2] * loc[2] * pw,
                y1 + var[3] * loc[3] * ph]
    cx = var[0] * loc[0] * pw + (x0 + x1) / 2
    cy = var[1] * loc[1] * ph + (y0 + y1) / 2
    w, h = math.exp(var[2] * loc[2]) * pw, math.exp(var[3] * loc[3]) * ph
    return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]


def _size(b: list[float]) -> float:
    return 0.0 if b[2] < b[0] or b[3] < b[1] else (b[2] - b[0]) * (b[3] - b[1])


def _jaccard(a: list[float], b: list[float]) -> float:
    """JaccardOverlap(NormalizedBBox, NormalizedBBox, normalized=true), as Forward_cpu's ApplyNMSFast uses it."""
    w, h = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    return w * h / (_size(a) + _size(b) - w * h)


def _reference(loc: np.ndarray, conf: np.ndarray, prior: np.ndarray, classes: int, share: bool, background: int,
               code: int, encoded: bool, threshold: float, iou: float, top_k: int, keep: int) -> list[list[float]]:
    n = prior.size // 8
    prior = prior.reshape(2, n, 4).astype(np.float64)
    loc = loc.reshape(n, 1 if share else classes, 4).astype(np.float64)
    conf = conf.reshape(n, classes).astype(np.float64)
    boxes = {c: [_decode(list(prior[0, i]), list(prior[1, i]), list(loc[i, 0 if share else c]), code, encoded)
                 for i in range(n)] for c in range(classes)}
    indices: dict[int, list[int]] = {}
    for c in range(classes):
        if c == background:
            continue
        cand = sorted([i for i in range(n) if conf[i, c] > threshold], key=lambda i: -conf[i, c])  # stable
        cand = cand[:top_k] if top_k > -1 else cand
        kept: list[int] = []
        for i in cand:
            if all(_jaccard(boxes[c][i], boxes[c][k]) <= iou for k in kept):
                kept.append(i)
        indices[c] = kept
    if keep > -1 and sum(map(len, indices.values())) > keep:
        pairs = sorted(((conf[i, c], c, i) for c in sorted(indices) for i in indices[c]), key=lambda t: -t[0])
        indices = {}
        for _, c, i in pairs[:keep]:
            indices.setdefault(c, []).append(i)
    return [[c, conf[i, c], *boxes[c][i]] for c in sorted(indices) for i in indices[c]]


def _inputs(n: int, classes: int, share: bool) -> dict[str, np.ndarray]:
    """Priors on a coarse grid (many overlap, so NMS matters), small loc offsets, softmaxed scores."""
    cx, cy = RNG.integers(0, 4, n) / 4 + 0.125, RNG.integers(0, 4, n) / 4 + 0.125
    w, h = RNG.uniform(0.15, 0.4, n), RNG.uniform(0.15, 0.4, n)
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1).ravel()
    prior = np.stack([boxes, np.tile([0.1, 0.1, 0.2, 0.2], n)])[None].astype(np.float32)
    logits = RNG.standard_normal((n, classes)) * 2
    conf = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    loc = RNG.standard_normal((1, n * (1 if share else classes) * 4)) * 0.5
    return {"loc": loc.astype(np.float32), "conf": conf.reshape(1, -1).astype(np.float32), "prior": prior}


CASES = {  # share, background, code, encoded, threshold, iou, top_k, keep
    "center-size": (True, 0, 2, False, 0.05, 0.45, -1, -1),
    "corner-per-class": (False, 0, 1, False, 0.1, 0.3, 20, -1),
    "corner-size-encoded": (True, 1, 3, True, 0.05, 0.5, -1, -1),
    "keep-top-k": (True, 0, 2, False, 0.02, 0.6, 30, 7),
    "no-background": (False, -1, 2, False, 0.2, 0.45, -1, 100),
}


@pytest.mark.parametrize("case", list(CASES))
def test_detection_output(case: str, tmp_path: Path) -> None:
    share, background, code, encoded, threshold, iou, top_k, keep = CASES[case]
    classes = 4
    feeds = _inputs(60, classes, share)
    p = fb.DetectionOutputT()
    p.classCount, p.shareLocation, p.backgroundLable, p.codeType = classes, int(share), background, code
    p.varianceEncodedTarget, p.confidenceThreshold, p.nmsThresholdold = int(encoded), threshold, iou
    p.nmsTopK, p.keepTopK = top_k, keep
    ref = np.asarray(_reference(feeds["loc"], feeds["conf"], feeds["prior"], classes, share, background, code,
                                encoded, threshold, iou, top_k, keep))
    got = _run(tmp_path, fb.OpType.DetectionOutput, fb.OpParameter.DetectionOutput, p, feeds)["mnnpy"]
    rows = keep if keep > 0 else 60 * (classes - (background >= 0))
    assert 0 < len(ref) <= rows
    assert got.shape == (1, 1, len(ref), 6), "the output shrinks to the rows found at run time, as in MNN"
    got = got.reshape(-1, 6)
    if keep > 0:  # the case must exercise the limit it names, or find fewer rows than planned
        everything = _reference(feeds["loc"], feeds["conf"], feeds["prior"], classes, share, background, code,
                                encoded, threshold, iou, top_k, -1)
        assert len(everything) > keep or len(ref) < rows
    np.testing.assert_array_equal(got[:, 0], ref[:, 0])
    np.testing.assert_allclose(got[:, 1:], ref[:, 1:], rtol=1e-5, atol=1e-6)


def test_detection_output_needs_three_inputs(tmp_path: Path) -> None:
    from mnnpy.schema.errors import ModelError

    feeds = _inputs(8, 2, True)
    feeds["extra"] = feeds["conf"].copy()
    p = fb.DetectionOutputT()
    p.classCount, p.shareLocation, p.keepTopK = 2, 1, 10
    with pytest.raises(ModelError, match=r"DetectionOutput.*3 inputs"):
        _run(tmp_path, fb.OpType.DetectionOutput, fb.OpParameter.DetectionOutput, p, feeds)
