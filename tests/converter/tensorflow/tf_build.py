"""Build TF GraphDefs in tests with mnnpy's own compiled TF protos (TensorFlow is not needed), convert, run, and a
numpy reference of the TF ops used (NHWC)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.converter.frontends.tensorflow import load_graph_def
from mnnpy.converter.frontends.tensorflow import tf_graph_pb2 as pb
from mnnpy.converter.passes import run_pipeline
from mnnpy.converter.writer import graph_to_net
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema import save_net
from support import official, runners

_TYPE_ATTRS = {"T", "dtype", "DstT", "SrcT", "Tidx", "Tshape", "out_type", "Tpaddings", "Index", "Taxis", "Tindices",
               "Tparams", "U"}
_NP_TO_TF = {np.dtype(np.float32): 1, np.dtype(np.int32): 3, np.dtype(np.int64): 9, np.dtype(np.bool_): 10}


def tensor_proto(value: np.ndarray) -> Any:
    """A TensorProto holding `value` as tensor_content."""
    value = np.asarray(value)
    proto = pb.TensorProto()
    proto.dtype = _NP_TO_TF[value.dtype]
    for d in value.shape:
        proto.tensor_shape.dim.add().size = d
    proto.tensor_content = np.ascontiguousarray(value).tobytes()
    return proto


def _set_attr(attr: Any, key: str, value: Any) -> None:
    if key in _TYPE_ATTRS:
        attr.type = int(value)
    elif isinstance(value, bool):
        attr.b = value
    elif isinstance(value, int):
        attr.i = value
    elif isinstance(value, float):
        attr.f = value
    elif isinstance(value, str):
        attr.s = value.encode()
    elif isinstance(value, np.ndarray):
        attr.tensor.CopyFrom(tensor_proto(value))
    elif isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        attr.list.i.extend(value)
    elif isinstance(value, (list, tuple)):
        attr.list.f.extend(value)
    else:
        raise TypeError(f"attribute {key}: {value!r}")


class GraphBuilder:
    """Appends NodeDefs to a GraphDef; every method returns the new node's name."""

    def __init__(self) -> None:
        self.graph = pb.GraphDef()
        self.count = 0

    def op(self, op: str, inputs: list[str], name: str | None = None, **attrs: Any) -> str:
        """Add a node of type `op` (float T unless given)."""
        self.count += 1
        node = self.graph.node.add()
        node.name = name or f"{op.lower()}_{self.count}"
        node.op = op
        node.input.extend(inputs)
        for key, value in attrs.items():
            _set_attr(node.attr[key], key, value)
        return node.name

    def const(self, value: Any, name: str | None = None, dtype: Any = np.float32) -> str:
        """A Const node."""
        arr = np.asarray(value, dtype)
        return self.op("Const", [], name, dtype=_NP_TO_TF[arr.dtype], value=arr)

    def placeholder(self, name: str, shape: list[int]) -> str:
        """A float Placeholder with a static shape."""
        self.count += 1
        node = self.graph.node.add()
        node.name = name
        node.op = "Placeholder"
        node.attr["dtype"].type = 1
        for d in shape:
            node.attr["shape"].shape.dim.add().size = d
        return name


def convert(builder: GraphBuilder, path: Path, outputs: list[str] | None = None) -> fb.NetT:
    """GraphDef -> .pb file -> our TF frontend -> passes -> .mnn at `path`; returns the Net."""
    pb_path = path.with_suffix(".pb")
    pb_path.write_bytes(builder.graph.SerializeToString())
    graph = load_graph_def(str(pb_path), outputs)
    run_pipeline(graph)
    net = graph_to_net(graph)
    net.sourceType = fb.NetSource.TENSORFLOW  # as MNNConvert writes it (api.convert sets it too)
    save_net(net, path)
    return net


def run_session(lib: Any, path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run a converted TF model through `lib`'s Session API (mnnpy or the official MNN wheel: the same calls), as
    MNN users run TF models: NHWC arrays in and out through Tensorflow-dimension host tensors."""
    return runners.run(path, feeds, lib=lib, dim="tensorflow", expect_dim=True)


def run_mnnpy(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run a .mnn in mnnpy's Interpreter (NHWC host tensors)."""
    import mnnpy

    return run_session(mnnpy, path, feeds)


def run_official(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run a .mnn in the official MNN wheel (skips when it is missing; NHWC host tensors)."""
    return run_session(official.require_mnn(), path, feeds)


def run_module(lib: Any, path: Path, feeds: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
    """Run a converted TF model through `lib`'s expr/Module API (mnnpy or official MNN): NHWC Vars in, outputs
    read in NHWC."""
    return runners.run_module(lib, path, [feeds], outputs, fmt="NHWC")[0]


def check(builder: GraphBuilder, feeds: dict[str, np.ndarray], refs: dict[str, np.ndarray], tmp_path: Path,
          rtol: float = 1e-4) -> fb.NetT:
    """Convert, then compare mnnpy's and official MNN's outputs with the numpy reference (max|d| / max|ref|)."""
    path = tmp_path / "model.mnn"
    net = convert(builder, path, list(refs))
    runs = {"mnnpy": run_mnnpy(path, feeds)}
    with contextlib.suppress(pytest.skip.Exception):
        runs["official"] = run_official(path, feeds)
    for runner, outs in runs.items():
        for name, ref in refs.items():
            got = np.asarray(outs[name], np.float64)
            assert got.shape == ref.shape, f"{runner} {name}: shape {got.shape} != {ref.shape}"
            scale = max(float(np.abs(ref).max()), 1e-6)
            err = float(np.abs(got - ref).max()) / scale
            assert err <= rtol, f"{runner} {name}: max rel diff {err:.3g} > {rtol}"
    return net


# *** numpy reference of TF semantics (NHWC) ***
def pad_same(size: int, k: int, s: int, d: int = 1) -> tuple[int, int]:
    """TF SAME padding (begin, end) of one spatial dim."""
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def conv2d(x: np.ndarray, w: np.ndarray, strides: tuple[int, int] = (1, 1), padding: str = "SAME",
           dilations: tuple[int, int] = (1, 1)) -> np.ndarray:
    """tf.nn.conv2d on NHWC x and HWIO w (float64)."""
    kh, kw, _ic, oc = w.shape
    (sh, sw), (dh, dw) = strides, dilations
    if padding == "SAME":
        ph, pw = pad_same(x.shape[1], kh, sh, dh), pad_same(x.shape[2], kw, sw, dw)
        x = np.pad(x, [(0, 0), ph, pw, (0, 0)])
    n, h, wd, _ = x.shape
    oh = (h - (kh - 1) * dh - 1) // sh + 1
    ow = (wd - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, oh, ow, oc))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i * dh: i * dh + (oh - 1) * sh + 1: sh, j * dw: j * dw + (ow - 1) * sw + 1: sw, :]
            out += patch.astype(np.float64) @ w[i, j].astype(np.float64)
    return out


def depthwise(x: np.ndarray, w: np.ndarray, strides: tuple[int, int] = (1, 1), padding: str = "SAME") -> np.ndarray:
    """tf.nn.depthwise_conv2d (multiplier 1) on NHWC x and [kh, kw, C, 1] w."""
    kh, kw, c, _ = w.shape
    sh, sw = strides
    if padding == "SAME":
        x = np.pad(x, [(0, 0), pad_same(x.shape[1], kh, sh), pad_same(x.shape[2], kw, sw), (0, 0)])
    n, h, wd, _ = x.shape
    oh, ow = (h - kh) // sh + 1, (wd - kw) // sw + 1
    out = np.zeros((n, oh, ow, c))
    for i in range(kh):
        for j in range(kw):
            out += x[:, i: i + (oh - 1) * sh + 1: sh, j: j + (ow - 1) * sw + 1: sw, :] * w[i, j, :, 0]
    return out


def pool(x: np.ndarray, k: int, s: int, padding: str, kind: str) -> np.ndarray:
    """tf.nn.max_pool2d / avg_pool2d (SAME average pooling does not count padded cells)."""
    n, h, w, c = x.shape
    if padding == "SAME":
        ph, pw = pad_same(h, k, s), pad_same(w, k, s)
    else:
        ph = pw = (0, 0)
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x.astype(np.float64), [(0, 0), ph, pw, (0, 0)], constant_values=fill)
    ones = np.pad(np.ones((h, w)), [ph, pw])
    oh, ow = (xp.shape[1] - k) // s + 1, (xp.shape[2] - k) // s + 1
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, i * s: i * s + k, j * s: j * s + k, :]
            if kind == "max":
                out[:, i, j] = win.max(axis=(1, 2))
            else:
                out[:, i, j] = win.sum(axis=(1, 2)) / ones[i * s: i * s + k, j * s: j * s + k].sum()
    return out
