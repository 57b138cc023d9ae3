"""One way to run a .mnn file through the Interpreter/Session API and get its outputs by name as numpy arrays.

`lib` is `mnnpy` or the official `MNN` module: both expose the same Session API, so one function serves mnnpy and the
official reference (see `support.official.run`). Inputs go in by name through host tensors of dimension type `dim`
("caffe" = NCHW, "tensorflow" = NHWC) or, with `dim=None`, as plain arrays in each tensor's own dimension type
(`Tensor.copyFrom(ndarray)` / `getNumpyData`, mnnpy only). Integer arrays go in as int32 (MNN's int64 mapping).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

Feeds = dict[str, np.ndarray]
DIMS = {"caffe": "Tensor_DimensionType_Caffe", "tensorflow": "Tensor_DimensionType_Tensorflow"}


def _mnnpy() -> Any:
    import mnnpy

    return mnnpy


def _host(lib: Any, shape: Sequence[int], data: np.ndarray | None, int_type: bool, dim: int) -> Any:
    kind, dtype = (lib.Halide_Type_Int, np.int32) if int_type else (lib.Halide_Type_Float, np.float32)
    values = np.zeros(shape, dtype) if data is None else np.ascontiguousarray(data, dtype)
    return lib.Tensor(tuple(shape), kind, values, dim)


def _write(lib: Any, tensor: Any, x: np.ndarray, dim: str | None) -> None:
    if dim is None:
        tensor.copyFrom(x)
        return
    tensor.copyFrom(_host(lib, x.shape, x, x.dtype.kind in "iub", getattr(lib, DIMS[dim])))


def _read(lib: Any, tensor: Any, dim: str | None) -> np.ndarray:
    if dim is None:
        return np.array(tensor.getNumpyData())
    shape = tuple(tensor.getShape())
    host = _host(lib, shape, None, tensor.getDataType() == lib.Halide_Type_Int, getattr(lib, DIMS[dim]))
    tensor.copyToHostTensor(host)
    return np.array(host.getData(), np.int32 if tensor.getDataType() == lib.Halide_Type_Int else np.float32
                    ).reshape(shape)


def run_many(path: str | Path, runs: Iterable[Feeds], outputs: Sequence[str] | None = None, *, lib: Any = None,
             dim: str | None = "caffe", config: dict | None = None, hints: Iterable[tuple[int, int]] = (),
             resize: bool = False, expect_dim: bool = False) -> list[Feeds]:
    """Run `path` once per feed dict in ONE session (resized when an input's shape changes; always with `resize`).

    Returns, per run, {output name: array} for `outputs` (all session outputs when None). `hints`: (HintMode, value)
    pairs set on the Interpreter before its session is created. `expect_dim`: assert every input is declared with
    dimension type `dim` (as TF models must declare NHWC)."""
    lib = lib or _mnnpy()
    interp = lib.Interpreter(str(path))
    for mode, value in hints:
        interp.setSessionHint(mode, value)
    session = interp.createSession(dict(config or {}))
    results = []
    for feeds in runs:
        resized = False
        for name, x in feeds.items():
            tensor = interp.getSessionInput(session, name)
            if expect_dim:
                assert tensor.getDimensionType() == getattr(lib, DIMS[dim]), f"input {name} must be declared {dim}"
            if resize or tuple(tensor.getShape()) != tuple(x.shape):
                interp.resizeTensor(tensor, tuple(x.shape))  # MNN wants a tuple
                resized = True
        if resized:
            interp.resizeSession(session)
        for name, x in feeds.items():
            _write(lib, interp.getSessionInput(session, name), x, dim)
        interp.runSession(session)
        tensors = interp.getSessionOutputAll(session) if outputs is None else \
            {name: interp.getSessionOutput(session, name) for name in outputs}
        results.append({name: _read(lib, tensor, dim) for name, tensor in tensors.items()})
    return results


def run(path: str | Path, feeds: Feeds, outputs: Sequence[str] | None = None, **kwargs: Any) -> Feeds:
    """`run_many` for one feed dict: {output name: array}."""
    return run_many(path, [feeds], outputs, **kwargs)[0]


def run_list(path: str | Path, feeds: Feeds, outputs: Sequence[str], **kwargs: Any) -> list[np.ndarray]:
    """`run` with the outputs as a list in the order of `outputs`."""
    got = run(path, feeds, outputs, **kwargs)
    return [got[name] for name in outputs]


def run_module(lib: Any, path: str | Path, runs: Iterable[Feeds], outputs: Sequence[str],
               fmt: str = "NCHW") -> list[Feeds]:
    """Run `path` through `lib`'s expr/Module API (mnnpy or official MNN) once per feed dict: Vars in `fmt` ("NCHW" or
    "NHWC") in, outputs converted to `fmt` (float32); integer inputs go in as int32."""
    F = lib.expr  # noqa: N806 - MNN's own alias
    runs = list(runs)
    inputs = list(runs[0])
    module = lib.nn.load_module_from_file(str(path), inputs, list(outputs))
    layout = getattr(F, fmt)
    results = []
    for feeds in runs:
        args = []
        for name in inputs:
            x = feeds[name]
            if x.dtype.kind in "iu":
                args.append(F.const(np.ascontiguousarray(x, np.int32), list(x.shape), layout, F.int))
            else:
                args.append(F.const(np.ascontiguousarray(x, np.float32), list(x.shape), layout, F.float))
        values = module.forward(args)
        values = values if isinstance(values, list | tuple) else [values]
        results.append({name: np.array(F.convert(v, layout).read(), np.float32)
                        for name, v in zip(outputs, values, strict=True)})
    return results


def run_once(interp: Any, session: Any, x: np.ndarray) -> np.ndarray:
    """Feed `x` to the session's one input (`fromNumpy`: the tensor's own dimension type), run, and return a copy of
    its one output (`getNumpyData`)."""
    interp.getSessionInput(session).fromNumpy(x)
    interp.runSession(session)
    return np.array(interp.getSessionOutput(session).getNumpyData())


def require_backend(name: str) -> None:
    """Skip the calling test, saying so, when mnnpy's ``name`` backend has no device here (OpenCL without an ICD,
    Vulkan without a driver); CI installs PoCL and lavapipe, so there it runs."""
    import pytest

    from mnnpy.core import registry
    from mnnpy.core.backend import BackendUnavailable

    try:
        registry.get_runtime(name.lower())
    except BackendUnavailable as exc:
        pytest.skip(f"{name} device absent: {exc}")
