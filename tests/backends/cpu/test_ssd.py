"""Caffe SSD ops on mnnpy's CPU (PriorBox, Normalize, DetectionOutput, Crop), one op per net, against numpy
references written loop by loop from SSD Caffe's layers (prior_box_layer.cpp, normalize_layer.cpp,
detection_output_layer.cpp + bbox_util.cpp, crop_layer.cpp); PriorBox, Normalize and Crop also against official
MNN when its wheel is installed."""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.converter.graph import Graph, InputSpec
from mnnpy.converter.writer import graph_to_net
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema import save_net

RNG = np.random.default_rng(3)
OP, PARAM = fb.OpType, fb.OpParameter


def _run(tmp_path: Path, op_type: int, param_type: int, param: Any, feeds: dict[str, np.ndarray],
         official: bool = False) -> dict[str, np.ndarray]:
    """One-op net (inputs in `feeds` order, output 'y') run on mnnpy, and on official MNN when asked."""
    graph = Graph()
    for name, x in feeds.items():
        graph.inputs[name] = InputSpec(list(x.shape))
    graph.add(op_type, list(feeds), ["y"], param_type, param, name="op")
    graph.outputs = ["y"]
    path = tmp_path / "op.mnn"
    save_net(graph_to_net(graph, source_type=fb.NetSource.CAFFE), path)
    import mnnpy

    interp = mnnpy.Interpreter(str(path))
    session = interp.createSession({})
    for name, x in feeds.items():
        interp.getSessionInput(session, name).copyFrom(x)
    interp.runSession(session)
    runs = {"mnnpy": interp.getSessionOutput(session, "y").getNumpyData()}
    if official:
        from support import official as mnn

        with contextlib.suppress(pytest.skip.Exception):
            runs["official"] = mnn.run(path, feeds)["y"]
    return runs


# *** PriorBox ***
def _prior_reference(feature: tuple[int, int], image: tuple[int, int], min_sizes: list[float],
                     max_sizes: list[float], ratios: list[float], flip: bool, clip: bool, variances: list[float],
                     step: float = 0.0, offset: float = 0.5) -> np.ndarray:
    ars = [1.0]
    for ar in ratios:
        if all(abs(ar - a) >= 1e-6 for a in ars):
            ars.append(ar)
            if flip:
                ars.append(1.0 / ar)
    (lh, lw), (ih, iw) = feature, image
    step_w = step or iw / lw
    step_h = step or ih / lh
    boxes = []
    for h in range(lh):
        for w in range(lw):
            cx, cy = (w + offset) * step_w, (h + offset) * step_h
            for s, mn in enumerate(min_sizes):
                sides = [(mn, mn)]
                if max_sizes:
                    sides.append((math.sqrt(mn * max_sizes[s]),) * 2)
                sides += [(mn * math.sqrt(a), mn / math.sqrt(a)) for a in ars if abs(a - 1.0) >= 1e-6]
                for bw, bh in sides:
                    boxes += [(cx - bw / 2) / iw, (cy - bh / 2) / ih, (cx + bw / 2) / iw, (cy + bh / 2) / ih]
    if clip:
        boxes = [min(max(v, 0.0), 1.0) for v in boxes]
    var = [variances[0]] * len(boxes) if len(variances) == 1 else variances * (len(boxes) // 4)
    return np.asarray([boxes, var])[None, :, :, None]


@pytest.mark.parametrize(("feature", "image", "sizes", "ratios", "flip", "clip", "step"), [
    ((5, 7), (40, 56), ([8.0], [16.0]), [2.0], True, False, 0.0),
    ((3, 3), (30, 30), ([6.0, 12.0], [10.0, 20.0]), [2.0, 3.0, 2.0], False, True, 10.0),
    ((4, 2), (33, 17), ([9.0], []), [1.0, 0.5], True, True, 0.0),
])
def test_prior_box(feature: tuple[int, int], image: tuple[int, int], sizes: tuple[list[float], list[float]],
                   ratios: list[float], flip: bool, clip: bool, step: float, tmp_path: Path) -> None:
    p = fb.PriorBoxT()
    p.minSizes, p.maxSizes, p.aspectRatios = sizes[0], sizes[1], ratios
    p.variances = [0.1, 0.1, 0.2, 0.2]
    p.flip, p.clip, p.offset = flip, clip, 0.5
    p.stepWidth = p.stepHeight = int(step)
    feeds = {"feature": RNG.standard_normal((1, 3, *feature)).astype(np.float32),
             "image": RNG.standard_normal((1, 3, *image)).astype(np.float32)}
    ref = _prior_reference(feature, image, sizes[0], sizes[1], ratios, flip, clip, [0.1, 0.1, 0.2, 0.2], step)
    for runner, got in _run(tmp_path, OP.PriorBox, PARAM.PriorBox, p, feeds, official=True).items():
        assert got.shape == ref.shape, f"{runner}: {got.shape} != {ref.shape}"
        np.testing.assert_allclose(got, ref, atol=1e-6, err_msg=runner)


# *** Normalize ***
@pytest.mark.parametrize(("across", "shared"), [(False, False), (True, False), (False, True)])
def test_normalize(across: bool, shared: bool, tmp_path: Path) -> None:
    x = RNG.standard_normal((2, 5, 4, 3)).astype(np.float32)
    scale = (RNG.random(1 if shared else 5) + 0.5).astype(np.float32)
    p = fb.NormalizeT()
    p.acrossSpatial, p.channelShared, p.eps, p.scale = int(across), int(shared), 1e-10, scale
    ref = np.empty(x.shape)
    for n in range(2):
        if across:
            ref[n] = x[n] / math.sqrt(float((x[n].astype(np.float64) ** 2).sum()) + 1e-10)
        else:
            for h in range(4):
                for w in range(3):
                    ref[n, :, h, w] = x[n, :, h, w] / math.sqrt(float((x[n, :, h, w] ** 2).sum()) + 1e-10)
        ref[n] *= (scale[0] if shared else scale[:, None, None])
    # official MNN 3.6.1 ignores channelShared (it reads C scales from a 1-element array): not an oracle there
    for runner, got in _run(tmp_path, OP.Normalize, PARAM.Normalize, p, {"x": x}, official=not shared).items():
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6, err_msg=runner)


# *** Crop ***
@pytest.mark.parametrize(("axis", "offsets"), [(2, [1, 2]), (1, [1]), (3, [0])])
def test_crop(axis: int, offsets: list[int], tmp_path: Path) -> None:
    x = RNG.standard_normal((1, 4, 6, 7)).astype(np.float32)
    like = np.zeros((1, 2, 3, 4), np.float32)
    p = fb.CropT()
    p.axis, p.offset = axis, offsets
    ref = x
    for d in range(axis, 4):
        start = offsets[0] if len(offsets) == 1 else offsets[d - axis]
        ref = np.take(ref, range(start, start + like.shape[d]), axis=d)
    for runner, got in _run(tmp_path, OP.Crop, PARAM.Crop, p, {"x": x, "like": like}, official=True).items():
        np.testing.assert_array_equal(got, ref, err_msg=runner)


def test_crop_out_of_range_is_a_clear_error(tmp_path: Path) -> None:
    from mnnpy.schema.errors import ModelError

    p = fb.CropT()
    p.axis, p.offset = 2, [5]
    with pytest.raises(ModelError, match="Crop"):
        _run(tmp_path, OP.Crop, PARAM.Crop, p, {"x": np.zeros((1, 2, 6, 6), np.float32),
                                                "like": np.zeros((1, 2, 3, 3), np.float32)})
