"""Vulkan runtime: device limits copied to Python ints, availability without raising, lazy import, pipeline cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mnnpy.core.backend import BackendUnavailable


def test_import_mnnpy_does_not_import_vulkan() -> None:
    code = "import sys, mnnpy, mnnpy.backends; assert 'vulkan' not in sys.modules, 'vulkan imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_absent_runtime_stub_is_clear() -> None:
    from mnnpy.backends import vulkan

    stub = vulkan._absent_runtime("vulkan: cannot load the Vulkan binding (test)")
    assert stub.is_available() is False
    assert "cannot load" in stub.unavailable_reason()
    with pytest.raises(BackendUnavailable, match="cannot load"):
        stub()


def test_limits_and_features(vk_runtime: Any) -> None:
    lim = vk_runtime.device.limits
    assert all(isinstance(v, int) and v > 0 for v in (*lim.max_group_count, lim.max_invocations))
    assert isinstance(lim.fp16, bool)
    assert 1 <= vk_runtime.device.group_size() <= lim.max_invocations
    assert vk_runtime.device.group_count(10**9, 256) <= lim.max_group_count[0]


def test_registry_finds_the_runtime(vk_runtime: Any) -> None:
    from mnnpy.core import registry

    assert registry.get_runtime("vulkan").name == "vulkan"


def test_pipeline_cache_reuses(vk_runtime: Any) -> None:
    from mnnpy.backends.vulkan.runtime import COUNTERS

    cache = vk_runtime.device.pipelines
    a = cache.get("fill", 1, 8, 64)
    before = COUNTERS["pipelines_created"]
    assert cache.get("fill", 1, 8, 64) is a
    assert COUNTERS["pipelines_created"] == before
    assert cache.get("fill", 1, 8, 32) is not a  # the local size is a specialization constant: a new pipeline


def test_mapped_views_keep_memory_alive(vk_runtime: Any) -> None:
    from mnnpy.backends.vulkan.memory import DeviceBuffer
    from mnnpy.backends.vulkan.runtime import COUNTERS

    buf = DeviceBuffer(vk_runtime.device, 64, COUNTERS)
    view = buf.array(16, np.float32, (4,))
    del buf  # the view still owns the mapping: no segfault when writing
    view[:] = 3.0
    assert view.sum() == 12.0


NO_ICD = """
import sys
sys.path.insert(0, {tests!r})
import numpy as np
import mnnpy as MNN
from mnnpy.backends import vulkan
from mnnpy.schema.io import net_to_bytes
from support.models import scratch_cnn
assert vulkan.RUNTIME.is_available() is False
print("REASON", vulkan.RUNTIME.unavailable_reason())
net, _ = scratch_cnn()
interp = MNN.Interpreter(net_to_bytes(net))
session = interp.createSession({{"backend": "VULKAN", "backupType": "CPU"}})
interp.runSession(session)
print("MAIN", session.main.name)
"""


def test_no_driver_means_unavailable_and_cpu_backup(tmp_path: Path) -> None:
    tests = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "VK_ICD_FILENAMES": str(tmp_path / "none.json"),
           "VK_DRIVER_FILES": str(tmp_path / "none.json")}
    res = subprocess.run([sys.executable, "-c", NO_ICD.format(tests=tests)], capture_output=True, text=True, env=env,
                         timeout=120, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "REASON vulkan: no device (install mesa-vulkan-drivers?)" in res.stdout
    assert "MAIN cpu" in res.stdout


def test_missing_binding_gives_the_stub() -> None:
    code = ("import sys; sys.modules['vulkan'] = None\n"
            "from mnnpy.backends import vulkan\n"
            "from mnnpy.core import registry\n"
            "from mnnpy.core.backend import BackendUnavailable\n"
            "assert vulkan.RUNTIME.is_available() is False\n"
            "print(vulkan.RUNTIME.unavailable_reason())\n"
            "try:\n    registry.get_runtime('vulkan')\nexcept BackendUnavailable as exc:\n    print('RAISED', exc)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert "cannot load the Vulkan binding" in res.stdout and "RAISED vulkan" in res.stdout


def test_tensors_beyond_the_binding_range_are_refused(vk_runtime: Any, run_op: Any, make_op: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from mnnpy.schema import mnn_generated as fb

    from mnnpy.core.ir import TensorDesc

    small = dataclasses.replace(vk_runtime.device.limits, max_storage_range=256)
    monkeypatch.setattr(vk_runtime.device, "limits", small)
    x = np.zeros((1, 100), np.float32)  # 400 bytes > 256
    runner = run_op(fb.OpType.ReLU, make_op(fb.OpType.ReLU, fb.ReluT()), [(x, "NCHW")],
                    [TensorDesc(x.shape, np.float32, "NCHW")])
    assert runner.execution is None


def test_foreign_input_is_mirrored_and_refreshed(vk_runtime: Any, make_op: Any) -> None:
    from mnnpy.backends.vulkan import layout
    from mnnpy.schema import mnn_generated as fb

    from mnnpy.core.backend import StorageType, TensorRef
    from mnnpy.core.ir import TensorDesc

    backend = vk_runtime.create_backend()
    desc = TensorDesc((1, 13, 2, 3), np.float32, "NC4HW4")
    foreign = TensorRef(0, desc, array=np.zeros(desc.physical_shape, np.float32))  # owned by another backend
    out = TensorRef(1, desc)
    backend.on_resize_begin()
    execution = backend.on_create(fb.OpType.ReLU, make_op(fb.OpType.ReLU, fb.ReluT()), [foreign], [out])
    backend.on_acquire(out, StorageType.DYNAMIC)
    backend.on_resize_end()
    execution.on_resize()
    assert backend.eager and execution.imports
    for scale in (1.0, -2.0):
        x = (np.arange(78, dtype=np.float32).reshape(desc.shape) - 30) * scale
        layout.from_nchw(desc, x, foreign.array)  # the other backend writes its own memory
        backend.on_execute_begin()
        execution.on_execute()
        backend.on_execute_end()
        np.testing.assert_array_equal(layout.to_nchw(desc, out.array), np.maximum(x, 0))
