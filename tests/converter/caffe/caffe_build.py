"""Caffe nets for tests: a prototxt string plus random weights written to a caffemodel with mnnpy's own compiled
caffe.proto; convert, run on mnnpy / official MNN / OpenCV (when installed), and numpy references (NCHW)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import pytest
from mnnpy.converter.frontends.caffe import caffe_net_pb2 as pb
from mnnpy.converter.frontends.caffe import load_net
from mnnpy.converter.passes import run_pipeline
from mnnpy.converter.writer import graph_to_net
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema import save_net
from support import runners


def write_caffemodel(path: Path, weights: dict[str, list[np.ndarray]]) -> Path:
    """A binary caffemodel holding `weights` (layer name -> blobs, stored with their shapes)."""
    net = pb.NetParameter()
    for name, blobs in weights.items():
        layer = net.layer.add()
        layer.name = name
        for arr in blobs:
            blob = layer.blobs.add()
            blob.shape.dim.extend(int(d) for d in np.shape(arr))
            blob.data.extend(np.asarray(arr, np.float32).ravel().tolist())
    path.write_bytes(net.SerializeToString())
    return path


def convert(prototxt: str, weights: dict[str, list[np.ndarray]], tmp_path: Path,
            outputs: list[str] | None = None) -> tuple[fb.NetT, Path, Path, Path]:
    """Write the prototxt and caffemodel, convert with our Caffe frontend, save the .mnn; returns net and paths."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    proto_path = tmp_path / "deploy.prototxt"
    proto_path.write_text(prototxt)
    model_path = write_caffemodel(tmp_path / "weights.caffemodel", weights)
    graph = load_net(proto_path, model_path, outputs)
    run_pipeline(graph)
    net = graph_to_net(graph)
    net.sourceType = fb.NetSource.CAFFE  # as MNNConvert writes it (api.convert sets it too)
    mnn_path = tmp_path / "model.mnn"
    save_net(net, mnn_path)
    return net, mnn_path, proto_path, model_path


def run_mnnpy(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run a .mnn in mnnpy's Interpreter (arrays in each tensor's own dimension type)."""
    return runners.run(path, feeds, dim=None)


def run_opencv(proto_path: Path, model_path: Path, feeds: dict[str, np.ndarray], outputs: list[str]
               ) -> dict[str, np.ndarray]:
    """OpenCV's Caffe importer (cv2.dnn.readNetFromCaffe) as a second reference."""
    cv2 = pytest.importorskip("cv2", reason="opencv-python-headless not installed (optional Caffe oracle)")
    net = cv2.dnn.readNetFromCaffe(str(proto_path), str(model_path))
    for name, x in feeds.items():
        net.setInput(x, name)
    return dict(zip(outputs, net.forward(outputs), strict=True))


def rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    """max|got - ref| / max|ref|."""
    got = np.asarray(got, np.float64)
    return float(np.abs(got.reshape(ref.shape) - ref).max()) / max(float(np.abs(ref).max()), 1e-6)


def check(prototxt: str, weights: dict[str, list[np.ndarray]], feeds: dict[str, np.ndarray],
          refs: dict[str, np.ndarray], tmp_path: Path, rtol: float = 1e-4, opencv: bool = True) -> fb.NetT:
    """Convert and compare mnnpy, official MNN and OpenCV outputs with the numpy references."""
    net, mnn_path, proto_path, model_path = convert(prototxt, weights, tmp_path, list(refs))
    runs: dict[str, dict[str, np.ndarray]] = {"mnnpy": run_mnnpy(mnn_path, feeds)}
    with contextlib.suppress(pytest.skip.Exception):
        from support import official

        runs["official"] = official.run(mnn_path, feeds)
    if opencv:
        with contextlib.suppress(pytest.skip.Exception):
            runs["opencv"] = run_opencv(proto_path, model_path, feeds, list(refs))
    for runner, outs in runs.items():
        for name, ref in refs.items():
            got = np.asarray(outs[name])
            assert got.size == ref.size, f"{runner} {name}: shape {got.shape} != {ref.shape}"
            err = rel_err(got, ref)
            assert err <= rtol, f"{runner} {name}: max rel diff {err:.3g} > {rtol}"
    return net


# *** numpy references (NCHW, Caffe semantics) ***
def conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: int = 1, pad: int = 0, group: int = 1,
         dilation: int = 1) -> np.ndarray:
    """Caffe convolution (weights [oc, ic/group, kh, kw])."""
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    n, _, h, wd = x.shape
    oc, icg, kh, kw = w.shape
    oh = (h - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, oc, oh, ow))
    ocg = oc // group
    for g in range(group):
        xs = x[:, g * icg:(g + 1) * icg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dilation: i * dilation + (oh - 1) * stride + 1: stride,
                           j * dilation: j * dilation + (ow - 1) * stride + 1: stride]
                out[:, g * ocg:(g + 1) * ocg] += np.einsum("nchw,oc->nohw", patch, w[g * ocg:(g + 1) * ocg, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def pool(x: np.ndarray, k: int, s: int, p: int, kind: str) -> np.ndarray:
    """Caffe pooling: ceil-mode output size, AVE divides by the window clipped to the padded input."""
    n, c, h, w = x.shape
    oh = -(-(h + 2 * p - k) // s) + 1
    ow = -(-(w + 2 * p - k) // s) + 1
    if p and (oh - 1) * s >= h + p:
        oh -= 1
    if p and (ow - 1) * s >= w + p:
        ow -= 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            hs, ws = i * s - p, j * s - p
            he, we = min(hs + k, h + p), min(ws + k, w + p)
            size = (he - hs) * (we - ws)
            win = x[:, :, max(hs, 0):min(he, h), max(ws, 0):min(we, w)]
            out[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else win.sum(axis=(2, 3)) / size
    return out
