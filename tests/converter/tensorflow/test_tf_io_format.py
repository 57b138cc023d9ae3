"""TF models declare their inputs as MNNConvert does (NHWC dims, dformat NHWC) and leave NHWC-format outputs, so
both runtimes take and give NHWC data through Tensorflow-dimension host tensors and through expr/Module."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.schema import load_net
from mnnpy.schema import mnn_generated as fb

from .tf_build import GraphBuilder, conv2d, convert, run_module, run_session

RNG = np.random.default_rng(5)


def _graph() -> tuple[GraphBuilder, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A 4-D image input through a conv, a rank-3 input through an ExpandDims into a conv, outputs of rank 2-4."""
    g = GraphBuilder()
    x = RNG.standard_normal((1, 6, 5, 3)).astype(np.float32)
    seq = RNG.standard_normal((1, 7, 2)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
    w1 = RNG.standard_normal((1, 3, 2, 4)).astype(np.float32)
    image = g.placeholder("image", [1, 6, 5, 3])
    audio = g.placeholder("audio", [1, 7, 2])
    conv = g.op("Conv2D", [image, g.const(w)], name="conv", strides=[1, 1, 1, 1], padding="SAME", T=1)
    g.op("Sum", [conv, g.const(np.asarray([1], np.int32), dtype=np.int32)], name="sum_h", keep_dims=False, T=1,
         Tidx=3)
    g.op("Mean", [conv, g.const(np.asarray([1, 2], np.int32), dtype=np.int32)], name="gap", keep_dims=False, T=1,
         Tidx=3)
    expanded = g.op("ExpandDims", [audio, g.const(1, dtype=np.int32)], T=1, Tdim=3)
    g.op("Conv2D", [expanded, g.const(w1)], name="audio_conv", strides=[1, 1, 1, 1], padding="SAME", T=1)
    y = conv2d(x, w)
    refs = {"conv": y, "sum_h": y.sum(axis=1), "gap": y.mean(axis=(1, 2)), "audio_conv": conv2d(seq[:, None], w1)}
    return g, {"image": x, "audio": seq}, refs


def _inputs(path: Path) -> dict[str, tuple[list[int], int]]:
    return {op.name.decode() if isinstance(op.name, bytes) else op.name: (list(op.main.dims), op.main.dformat)
            for op in load_net(path).oplists if op.type == fb.OpType.Input}


def test_inputs_declared_like_mnnconvert(tmp_path: Path) -> None:
    from support import official

    g, _, refs = _graph()
    convert(g, tmp_path / "ours.mnn", list(refs))
    official.convert(tmp_path / "ours.pb", tmp_path / "official.mnn", framework="TF")
    ours = _inputs(tmp_path / "ours.mnn")
    assert ours == {"image": ([1, 6, 5, 3], fb.MNN_DATA_FORMAT.NHWC), "audio": ([1, 7, 2], fb.MNN_DATA_FORMAT.NHWC)}
    assert ours == _inputs(tmp_path / "official.mnn")


@pytest.mark.parametrize("api", ["session", "module"])
def test_nhwc_data_in_and_out(api: str, tmp_path: Path) -> None:
    import mnnpy

    g, feeds, refs = _graph()
    path = tmp_path / "model.mnn"
    convert(g, path, list(refs))
    libs = [mnnpy]
    try:
        import MNN
    except ImportError:
        MNN = None  # noqa: N806 - the official wheel is optional
    libs += [MNN] if MNN is not None else []
    for lib in libs:
        outs = run_session(lib, path, feeds) if api == "session" else run_module(lib, path, feeds, list(refs))
        for name, ref in refs.items():
            got = np.asarray(outs[name], np.float64)
            assert got.shape == ref.shape, f"{lib.__name__} {api} {name}: shape {got.shape} != {ref.shape}"
            err = float(np.abs(got - ref).max() / np.abs(ref).max())
            assert err <= 1e-4, f"{lib.__name__} {api} {name}: max rel diff {err:.3g}"


def test_module_converts_nchw_vars_to_the_declared_nhwc(tmp_path: Path) -> None:
    """Like MNN's Module, an NCHW Var given to an NHWC model input is converted first (same results)."""
    import mnnpy

    g, feeds, refs = _graph()
    path = tmp_path / "model.mnn"
    convert(g, path, list(refs))
    libs = [mnnpy]
    try:
        import MNN

        libs.append(MNN)
    except ImportError:
        pass
    for lib in libs:
        F = lib.expr  # noqa: N806 - MNN's own alias
        module = lib.nn.load_module_from_file(str(path), ["image", "audio"], ["conv"])
        image = np.ascontiguousarray(feeds["image"].transpose(0, 3, 1, 2))
        out = module.forward([F.const(image, list(image.shape), F.NCHW, F.float),
                              F.const(feeds["audio"], list(feeds["audio"].shape), F.NHWC, F.float)])
        out = out[0] if isinstance(out, list | tuple) else out
        got = np.array(F.convert(out, F.NHWC).read(), np.float64)
        err = float(np.abs(got - refs["conv"]).max() / np.abs(refs["conv"]).max())
        assert err <= 1e-4, f"{lib.__name__}: max rel diff {err:.3g}"


def _gpu_runtime(backend: str) -> None:
    """Skip, saying why, when the backend's device is absent."""
    import importlib

    runtime = importlib.import_module("mnnpy.backends.opencl.runtime").OpenCLRuntime if backend == "OPENCL" else \
        importlib.import_module("mnnpy.backends.vulkan").RUNTIME
    if not runtime.is_available():
        pytest.skip(f"{backend} device absent: {runtime.unavailable_reason()}")


@pytest.mark.parametrize("backend", ["OPENCL", "VULKAN"])
def test_gpu_backends_take_nhwc_data(backend: str, tmp_path: Path) -> None:
    """The GPU backends run a TF model's NHWC inputs and outputs through the Session API like the CPU."""
    import mnnpy

    _gpu_runtime(backend)
    g, feeds, refs = _graph()
    path = tmp_path / "model.mnn"
    convert(g, path, list(refs))
    interp = mnnpy.Interpreter(str(path))
    session = interp.createSession({"backend": backend})
    for name, x in feeds.items():
        host = mnnpy.Tensor(x.shape, mnnpy.Halide_Type_Float, x, mnnpy.Tensor_DimensionType_Tensorflow)
        interp.getSessionInput(session, name).copyFrom(host)
    interp.runSession(session)
    for name, ref in refs.items():
        tensor = interp.getSessionOutput(session, name)
        host = mnnpy.Tensor(tensor.getShape(), mnnpy.Halide_Type_Float, None, mnnpy.Tensor_DimensionType_Tensorflow)
        tensor.copyToHostTensor(host)
        got = host.getNumpyData().astype(np.float64)
        assert got.shape == ref.shape, f"{backend} {name}: {got.shape}"
        err = float(np.abs(got - ref).max() / np.abs(ref).max())
        assert err <= 1e-4, f"{backend} {name}: max rel diff {err:.3g}"
