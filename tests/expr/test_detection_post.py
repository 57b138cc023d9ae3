"""detection_post_process: the lazy DetectionPostProcess op vs official MNN (fast NMS) and a scalar TFLite-style
reference (regular NMS, which MNN 3.6.1's CPU kernel leaves unimplemented).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.schema.errors import ModelError
from support import official

import mnnpy.expr as F  # noqa: N812 - the alias MNN scripts use

RNG = np.random.default_rng(5)
SCALES = [10.0, 10.0, 5.0, 5.0]


def _inputs(n: int, classes: int, background: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    anchors = np.stack([RNG.uniform(0.1, 0.9, n), RNG.uniform(0.1, 0.9, n), RNG.uniform(0.05, 0.35, n),
                        RNG.uniform(0.05, 0.35, n)], 1).astype(np.float32)
    enc = RNG.normal(scale=0.5, size=(1, n, 4)).astype(np.float32)
    cls = RNG.uniform(size=(1, n, classes + int(background))).astype(np.float32)
    return enc, cls, anchors


# official MNN 3.6.1's DetectionPostProcess corrupts memory on some inputs (double free with 3 classes per box):
# it runs in a child process, so a crash there fails one test instead of killing the run
_CHILD = """
import sys, numpy as np, MNN.expr as E
d = np.load(sys.argv[1])
args = [int(v) for v in d["ints"]] + [float(v) for v in d["floats"]] + [False, [float(v) for v in d["scales"]]]
res = E.detection_post_process(E.const(d["enc"], list(d["enc"].shape)), E.const(d["cls"], list(d["cls"].shape)),
                               E.const(d["anchors"], list(d["anchors"].shape)), *args)
np.savez(sys.argv[2], *[np.asarray(r.read()) for r in res])
"""


def _official(tmp: Path, enc: np.ndarray, cls: np.ndarray, anchors: np.ndarray, ints: tuple,
              floats: tuple) -> list[np.ndarray]:
    official.require_mnn()
    np.savez(tmp / "in.npz", enc=enc, cls=cls, anchors=anchors, ints=np.array(ints), floats=np.array(floats),
             scales=np.array(SCALES))
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(tmp / "in.npz"), str(tmp / "out.npz")],
                          capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"official MNN failed (rc {proc.returncode}): {proc.stderr[-1000:]}")
    out = np.load(tmp / "out.npz")
    return [out[f"arr_{k}"] for k in range(4)]


def _run(mod: Any, enc: np.ndarray, cls: np.ndarray, anchors: np.ndarray, *args: Any) -> list[np.ndarray]:
    res = mod.detection_post_process(mod.const(enc, list(enc.shape)), mod.const(cls, list(cls.shape)),
                                     mod.const(anchors, list(anchors.shape)), *args, SCALES)
    return [np.asarray(r.read()) for r in res]


@pytest.mark.parametrize(("n", "classes", "max_det", "per_box", "score", "iou"),
                         [(20, 3, 5, 1, 0.3, 0.5), (40, 4, 10, 1, 0.5, 0.3), (30, 2, 25, 1, 0.9, 0.6),
                          (16, 5, 4, 1, 0.0, 0.45)])
def test_fast_nms_matches_official(tmp_path: Path, n: int, classes: int, max_det: int, per_box: int, score: float,
                                   iou: float) -> None:
    enc, cls, anchors = _inputs(n, classes)
    ours = _run(F, enc, cls, anchors, classes, max_det, per_box, 2, score, iou, False)
    theirs = _official(tmp_path, enc, cls, anchors, (classes, max_det, per_box, 2), (score, iou))
    count = int(ours[3][0])
    assert count == int(theirs[3][0]) and ours[0].shape == (1, max_det * min(per_box, classes), 4)
    for o, t in zip(ours[:3], theirs[:3], strict=True):  # rows past the count are unspecified in MNN
        np.testing.assert_allclose(o[0, :count], t[0, :count], rtol=1e-5, atol=1e-6)
    assert not ours[0][0, count:].any() and not ours[2][0, count:].any()


def _decode(enc: np.ndarray, anchors: np.ndarray) -> list[tuple[float, float, float, float]]:
    out = []
    for (ty, tx, th, tw), (ya, xa, ha, wa) in zip(enc[0].astype(np.float64), anchors.astype(np.float64),
                                                  strict=True):
        yc, xc = ty / SCALES[0] * ha + ya, tx / SCALES[1] * wa + xa
        h, w = np.exp(th / SCALES[2]) * ha, np.exp(tw / SCALES[3]) * wa
        out.append((yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2))
    return out


def _iou(a: tuple, b: tuple) -> float:
    area_a, area_b = (a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])
    ih = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    iw = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    return 0.0 if area_a <= 0 or area_b <= 0 else ih * iw / (area_a + area_b - ih * iw)


def _regular_reference(enc: np.ndarray, cls: np.ndarray, anchors: np.ndarray, classes: int, max_det: int,
                       per_class: int, score: float, iou: float) -> list[tuple[tuple, int, float]]:
    boxes = _decode(enc, anchors)
    scores = cls[0, :, cls.shape[2] - classes:].astype(np.float64)
    found = []
    for c in range(classes):
        found += [(boxes[b], c, scores[b, c]) for b in _greedy(boxes, scores[:, c], score, iou, per_class)]
    found.sort(key=lambda t: -t[2])
    return found[:max_det]


def _greedy(boxes: list, scores: np.ndarray, threshold: float, iou: float, limit: int) -> list[int]:
    order = sorted((b for b in range(len(boxes)) if scores[b] >= threshold), key=lambda b: -scores[b])
    kept: list[int] = []
    for b in order:
        if len(kept) < limit and all(_iou(boxes[b], boxes[k]) <= iou for k in kept):
            kept.append(b)
    return kept


@pytest.mark.parametrize(("n", "classes", "max_det", "per_box"), [(40, 4, 10, 2), (16, 5, 4, 3), (25, 2, 6, 4)])
def test_fast_nms_several_classes_per_box_matches_reference(n: int, classes: int, max_det: int,
                                                             per_box: int) -> None:
    # official MNN crashes on these settings, so the reference is a scalar TFLite-style loop
    enc, cls, anchors = _inputs(n, classes)
    boxes, labels, scores, count = _run(F, enc, cls, anchors, classes, max_det, per_box, 1, 0.2, 0.4, False)
    dec = _decode(enc, anchors)
    sc = cls[0, :, 1:].astype(np.float64)
    rows = [(dec[b], c, sc[b, c]) for b in _greedy(dec, sc.max(axis=1), 0.2, 0.4, max_det)
            for c in np.argsort(-sc[b], kind="stable")[:min(per_box, classes)]]
    assert boxes.shape == (1, max_det * min(per_box, classes), 4) and int(count[0]) == len(rows)
    np.testing.assert_allclose(boxes[0, :len(rows)], np.array([r[0] for r in rows]).reshape(-1, 4), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(labels[0, :len(rows)], [r[1] for r in rows])
    np.testing.assert_allclose(scores[0, :len(rows)], [r[2] for r in rows], rtol=1e-6)


@pytest.mark.parametrize(("n", "classes", "max_det", "per_class", "score", "iou", "background"),
                         [(20, 3, 6, 2, 0.3, 0.5, True), (35, 4, 10, 4, 0.6, 0.4, False),
                          (12, 2, 30, 10, 0.95, 0.5, True)])
def test_regular_nms_matches_reference(n: int, classes: int, max_det: int, per_class: int, score: float,
                                       iou: float, background: bool) -> None:
    enc, cls, anchors = _inputs(n, classes, background)
    boxes, labels, scores, count = _run(F, enc, cls, anchors, classes, max_det, 1, per_class, score, iou, True)
    ref = _regular_reference(enc, cls, anchors, classes, max_det, per_class, score, iou)
    assert boxes.shape == (1, max_det, 4) and int(count[0]) == len(ref)
    np.testing.assert_allclose(boxes[0, :len(ref)], np.array([r[0] for r in ref]).reshape(-1, 4), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(labels[0, :len(ref)], [r[1] for r in ref])
    np.testing.assert_allclose(scores[0, :len(ref)], [r[2] for r in ref], rtol=1e-6)
    assert not scores[0, len(ref):].any()


def test_detection_post_process_bad_input() -> None:
    enc, cls, anchors = _inputs(8, 3)
    with pytest.raises(ValueError, match="centersize_encoding needs 4 scales"):
        F.detection_post_process(enc, cls, anchors, 3, 5, 1, 2, 0.3, 0.5, False, [1.0, 1.0])
    with pytest.raises(ModelError, match=r"class predictions must be \[1, 8, 6\]"):
        F.detection_post_process(enc, cls, anchors, 5, 5, 1, 2, 0.3, 0.5, False, SCALES)[0].read()
    with pytest.raises(ModelError, match=r"anchors must be \[8, 4\]"):
        F.detection_post_process(enc, cls, anchors[:5], 3, 5, 1, 2, 0.3, 0.5, False, SCALES)[0].read()
    with pytest.raises(ModelError, match="must be positive"):
        F.detection_post_process(enc, cls, anchors, 3, 0, 1, 2, 0.3, 0.5, False, SCALES)[0].read()


# the saved-graph round trip in a child process (official MNN may crash): run our file, then build the same graph
# with official MNN's expr, save it and run it
_FILE_CHILD = """
import sys, numpy as np, MNN.expr as E
sys.path.insert(0, sys.argv[1])
from support import official
d = np.load(sys.argv[2])
feeds = {"enc": d["enc"], "cls": d["cls"]}
ours = official.run(sys.argv[3], feeds)
enc, cls = E.placeholder(list(d["enc"].shape), E.NCHW), E.placeholder(list(d["cls"].shape), E.NCHW)
enc.name, cls.name = "enc", "cls"
args = [int(v) for v in d["ints"]] + [float(v) for v in d["floats"]] + [False, [float(v) for v in d["scales"]]]
outs = E.detection_post_process(enc, cls, E.const(d["anchors"], list(d["anchors"].shape)), *args)
outs[0].name = "det"
E.save(list(outs), sys.argv[4])
theirs = official.run(sys.argv[4], feeds)
# outputs by name order: "det:0".."det:3" (mnnpy's file), "det", "det1".."det3" (official's)
np.savez(sys.argv[5], *[ours[k] for k in sorted(ours)], *[theirs[k] for k in sorted(theirs)])
"""


@pytest.mark.parametrize(("n", "classes", "max_det", "score", "iou"), [(24, 3, 4, 0.2, 0.5), (30, 4, 12, 0.6, 0.3)])
def test_saved_graph_carries_mnns_param_table_both_ways(tmp_path: Path, n: int, classes: int, max_det: int,
                                                        score: float, iou: float) -> None:
    """detection_post_process writes MNN's DetectionPostProcessParam table: official MNN runs a graph saved here with
    the same detections as mnnpy, and mnnpy runs a graph saved by official MNN with official's detections."""
    official.require_mnn()
    enc, cls, anchors = _inputs(n, classes)
    e, c = F.placeholder(list(enc.shape)), F.placeholder(list(cls.shape))
    e.name, c.name = "enc", "cls"
    outs = F.detection_post_process(e, c, F.const(anchors, list(anchors.shape)), classes, max_det, 1, 2, score, iou,
                                    False, SCALES)
    outs[0].name = "det"
    F.save(outs, tmp_path / "ours.mnn")
    e.write(enc)
    c.write(cls)
    ours = [np.asarray(v.read()) for v in outs]
    np.savez(tmp_path / "in.npz", enc=enc, cls=cls, anchors=anchors, ints=np.array([classes, max_det, 1, 2]),
             floats=np.array([score, iou]), scales=np.array(SCALES))
    proc = subprocess.run([sys.executable, "-c", _FILE_CHILD, str(Path(official.__file__).parents[1]),
                           str(tmp_path / "in.npz"), str(tmp_path / "ours.mnn"), str(tmp_path / "theirs.mnn"),
                           str(tmp_path / "out.npz")], capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"official MNN failed (rc {proc.returncode}): {proc.stderr[-1000:]}")
    res = np.load(tmp_path / "out.npz")
    from_our_file, from_their_file = [res[f"arr_{k}"] for k in range(4)], [res[f"arr_{k}"] for k in range(4, 8)]
    count = int(ours[3][0])
    assert 0 < count <= max_det and count < n  # the thresholds and the limit did something
    loaded = F.load_as_dict(tmp_path / "theirs.mnn")
    loaded["enc"].write(enc)
    loaded["cls"].write(cls)
    from_their_file_here = [np.asarray(loaded[k].read()) for k in ("det", "det1", "det2", "det3")]
    for got in (from_our_file, from_their_file, from_their_file_here):
        assert int(got[3][0]) == count
        for o, t in zip(ours[:3], got[:3], strict=True):  # rows past the count are unspecified in MNN
            np.testing.assert_allclose(t[0, :count], o[0, :count], rtol=1e-5, atol=1e-6)


def test_param_of_the_wrong_kind_is_a_model_error(tmp_path: Path) -> None:
    from mnnpy.schema import load_net, save_net
    from mnnpy.schema import mnn_generated as fb

    anchors = _inputs(8, 3)[2]
    outs = F.detection_post_process(F.placeholder([1, 8, 4]), F.placeholder([1, 8, 4]), anchors, 3, 5, 1, 2, 0.3,
                                    0.5, False, SCALES)
    outs[0].name = "det"
    F.save(outs, tmp_path / "det.mnn")
    net = load_net(tmp_path / "det.mnn")
    op = next(o for o in net.oplists if o.type == fb.OpType.DetectionPostProcess)
    op.main.centerSizeEncoding = np.array([10.0, 10.0, 5.0], np.float32)
    save_net(net, tmp_path / "bad.mnn")
    with pytest.raises(ModelError, match=r"\(DetectionPostProcess\): centerSizeEncoding must be 4 positive scales"):
        F.load_as_list(tmp_path / "bad.mnn")[0].read()
    op.mainType, op.main = fb.OpParameter.NONE, None
    save_net(net, tmp_path / "bad2.mnn")
    with pytest.raises(ModelError, match="needs a DetectionPostProcessParam parameter"):
        F.load_as_list(tmp_path / "bad2.mnn")[0].read()
