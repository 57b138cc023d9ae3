"""Runtime and backend behaviour: counters across runs, the cache file, tuning levels, copies, memory plan."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.backends.opencl import tuning
from mnnpy.backends.opencl.runtime import OpenCLRuntime
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import BackendUnavailable, StorageType, TensorRef
from mnnpy.core.ir import NC4HW4, NCHW, NHWC, TensorDesc, packed_dims

from .helpers import Harness, assert_close, make_op, rand


def small_net(backend: object) -> tuple[Harness, list, list, list]:
    """conv 3x3 -> relu -> pool, planned and resized (three executions sharing the arena)."""
    h = Harness(backend)
    conv = fb.Convolution2DT()
    conv.common = fb.Convolution2DCommonT()
    conv.common.kernelX = conv.common.kernelY = 3
    conv.common.strideX = conv.common.strideY = 1
    conv.common.pads = [1, 1, 1, 1]
    conv.common.outputCount, conv.common.inputCount = 5, 3
    conv.weight = rand((5 * 3 * 9,), seed=1).tolist()
    conv.bias = rand((5,), seed=2).tolist()
    pool = fb.PoolT()
    pool.isGlobal, pool.type = True, 1
    x, a, b, y = (h.tensor(s, NC4HW4) for s in [(1, 3, 6, 6), (1, 5, 6, 6), (1, 5, 6, 6), (1, 5, 1, 1)])
    executions = [h.create(fb.OpType.Convolution, make_op(fb.OpType.Convolution, conv), [x], [a]),
                  h.create(fb.OpType.ReLU, make_op(fb.OpType.ReLU, fb.ReluT()), [a], [b]),
                  h.create(fb.OpType.Pooling, make_op(fb.OpType.Pooling, pool), [b], [y])]
    assert all(e is not None for e in executions)
    h.resize(executions, [x], [a, b, y])
    return h, executions, [x], [y]


def test_second_run_builds_and_tunes_nothing(runtime: OpenCLRuntime) -> None:
    backend = runtime.create_backend({"tuning": "fast"})
    h, executions, (x,), (y,) = small_net(backend)
    backend.upload(x.array, rand((1, 3, 6, 6)))
    h.execute(executions)
    first = backend.download(y.array)
    before = dict(runtime.counters)
    h.execute(executions)
    after = dict(runtime.counters)
    assert after["builds"] == before["builds"] and after["tunes"] == before["tunes"]
    assert after["binary_loads"] == before["binary_loads"]
    assert after["enqueues"] - before["enqueues"] == 3
    assert_close(backend.download(y.array), first, tol=0)


def test_cache_file_skips_builds_and_tuning(tmp_path: Path) -> None:
    first = OpenCLRuntime()
    h, executions, (x,), (y,) = small_net(first.create_backend({"tuning": "fast"}))
    assert first.counters["builds"] >= 3 and first.counters["tunes"] >= 3
    path = tmp_path / "mnn_cl.cache"
    first.save_cache(path)
    second = OpenCLRuntime()
    assert second.load_cache(path)
    backend = second.create_backend({"tuning": "fast"})
    h, executions, (x,), (y,) = small_net(backend)
    assert second.counters["builds"] == 0 and second.counters["tunes"] == 0
    assert second.counters["binary_loads"] >= 3
    value = rand((1, 3, 6, 6), seed=5)
    backend.upload(x.array, value)
    h.execute(executions)
    assert backend.download(y.array).shape == (1, 5, 1, 1)


def test_bad_cache_file_is_ignored(tmp_path: Path, runtime: OpenCLRuntime) -> None:
    path = tmp_path / "bad.cache"
    path.write_text("{not json")
    assert not runtime.load_cache(path)
    assert not runtime.load_cache(tmp_path / "missing.cache")


@pytest.mark.parametrize("level", ["fast", "normal", "wide", "heavy"])
def test_tuning_candidates_respect_limits(level: str) -> None:
    cands = tuning.candidates((37, 5, 3), level, 256, (4096, 4096, 4096))
    assert cands, level
    assert all(np.prod(c) <= 256 for c in cands)
    assert len(cands) <= tuning.MAX_CANDIDATES[level]
    if level == "fast":
        assert all(c[0] <= 16 and c[1] <= 16 and c[2] <= 8 for c in cands)
    assert tuning.round_up((37, 5, 3), (8, 2, 1)) == (40, 6, 3)
    with pytest.raises(ValueError, match="tuning level"):
        tuning.candidates((4,), "bogus", 16, (16,))


def test_tuning_none_measures_nothing(runtime: OpenCLRuntime) -> None:
    backend = runtime.create_backend({"tuning": "none"})
    before = runtime.counters["tunes"]
    h = Harness(backend)
    x = rand((1, 3, 5, 7), seed=11)
    (y,) = h.run(fb.OpType.ReLU6, make_op(fb.OpType.ReLU6, fb.Relu6T()), [x], ["NC4HW4"], [x.shape])
    assert runtime.counters["tunes"] == before
    assert_close(y, np.clip(x, 0, 6))


def test_unavailable_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OpenCLRuntime, "_probe", (None, "opencl: no platform (install pocl?)"))
    assert not OpenCLRuntime.is_available()
    assert "install pocl" in OpenCLRuntime.unavailable_reason()
    with pytest.raises(BackendUnavailable, match="no platform"):
        OpenCLRuntime()


@pytest.mark.parametrize(("host_fmt", "dev_fmt"), [(NCHW, NC4HW4), (NC4HW4, NC4HW4), (NHWC, NC4HW4), (NCHW, NCHW),
                                                   (NC4HW4, NCHW), (NHWC, NHWC)])
def test_on_copy_round_trip(runtime: OpenCLRuntime, host_fmt: str, dev_fmt: str) -> None:
    backend = runtime.create_backend()
    logical = rand((2, 13, 3, 2), seed=3)
    host_shape = (2, 3, 2, 13) if host_fmt == NHWC else logical.shape
    host_value = logical.transpose(0, 2, 3, 1) if host_fmt == NHWC else logical
    dev_shape = (2, 3, 2, 13) if dev_fmt == NHWC else logical.shape
    host_desc = TensorDesc(host_shape, np.float32, host_fmt)
    if host_fmt == NC4HW4:
        packed = np.zeros(packed_dims(host_shape), np.float32)
        padded = np.zeros((2, 16, 3, 2), np.float32)
        padded[:, :13] = logical
        packed[...] = padded.reshape(2, 4, 4, 3, 2).transpose(0, 1, 3, 4, 2)
        host_array = packed
    else:
        host_array = host_value.copy()
    src = TensorRef(0, host_desc, array=host_array)
    dev = TensorRef(1, TensorDesc(dev_shape, np.float32, dev_fmt))
    back = TensorRef(2, host_desc, array=np.zeros_like(host_array))
    backend.on_resize_begin()
    backend.on_acquire(dev, StorageType.DYNAMIC)
    backend.on_resize_end()
    backend.on_copy(src, dev)
    backend.on_copy(dev, back)
    np.testing.assert_array_equal(back.array, host_array)
    expected_dev = logical.transpose(0, 2, 3, 1) if dev_fmt == NHWC else logical
    np.testing.assert_array_equal(backend.download(dev.array), expected_dev)


def test_static_tensor_uploads_its_value_and_arena_is_reused(runtime: OpenCLRuntime) -> None:
    backend = runtime.create_backend()
    value = rand((7, 5), seed=8)
    const = TensorRef(0, TensorDesc((7, 5)), array=value, const=True)
    backend.on_resize_begin()
    backend.on_acquire(const, StorageType.STATIC)
    refs = [TensorRef(i, TensorDesc((1, 13, 8, 8), np.float32, NC4HW4)) for i in range(1, 4)]
    backend.on_acquire(refs[0], StorageType.DYNAMIC)
    backend.on_acquire(refs[1], StorageType.DYNAMIC)
    backend.on_release(refs[0], StorageType.DYNAMIC)
    backend.on_acquire(refs[2], StorageType.DYNAMIC)  # reuses refs[0]'s chunk
    backend.on_resize_end()
    np.testing.assert_array_equal(backend.download(const.array), value)
    info = backend.memory_info()
    assert info["arena_bytes"] == 2 * 16 * 64 * 4 and info["tensor_bytes"] == 3 * 16 * 64 * 4


def test_default_tuning_level_follows_device_type(runtime: OpenCLRuntime) -> None:
    backend = runtime.create_backend()
    is_gpu = bool(runtime.device.type & 4)  # CL_DEVICE_TYPE_GPU
    assert backend.tune_level == ("fast" if is_gpu else "none")
    assert runtime.create_backend({"tuning": "wide"}).tune_level == "wide"


_PINNED = """
import os, sys
from mnnpy.backends.opencl.runtime import OpenCLRuntime
runtime = OpenCLRuntime()
import pyopencl as cl
print(os.environ.get("OCL_ICD_VENDORS", ""))
print(len(cl.get_platforms()))
print(runtime.device.platform.version + "|" + runtime.device.name)
"""


def _run_child(env: dict[str, str | None]) -> list[str]:
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _PINNED], capture_output=True, text=True, timeout=600, check=False,
                          env={k: v for k, v in {**os.environ, **env}.items() if v is not None})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.splitlines()


def test_one_vendor_library_is_loaded(runtime: OpenCLRuntime) -> None:
    """Each ICD file is probed in child processes alone; the chosen one is pinned with OCL_ICD_VENDORS before this
    process opens any, so one OpenCL platform (one PoCL, one LLVM) is loaded, not every one installed (CI has
    Debian's PoCL beside the pip one)."""
    from mnnpy.backends.opencl.runtime import _icd_files

    icd, count, device = _run_child({"OCL_ICD_VENDORS": None})
    assert icd in _icd_files() or not _icd_files()
    assert count == "1"
    # the user's own choice of vendor files stands, and the device is found among what it loads
    user_icd, _, user_device = _run_child({"OCL_ICD_VENDORS": icd})
    assert (user_icd, user_device) == (icd, device)
