"""The Vulkan tests run clean under the Khronos validation layer (when `vulkan-validationlayers` is installed).

The layer prints its messages from C, so the child pytest runs with `-s` and its whole output is searched. A
deliberately wrong program is checked first, to prove that errors would be seen.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
LAYER = "VK_LAYER_KHRONOS_validation"
MANIFEST_DIRS = [Path("/usr/share/vulkan/explicit_layer.d"), Path("/etc/vulkan/explicit_layer.d"),
                 *(Path(p) for p in os.environ.get("VK_LAYER_PATH", "").split(os.pathsep) if p)]
HAVE_LAYER = any((d / "VkLayer_khronos_validation.json").exists() for d in MANIFEST_DIRS)
pytestmark = pytest.mark.skipif(not HAVE_LAYER, reason="vulkan-validationlayers not installed: validation run skipped")

LEAK = """
import os
from mnnpy.backends.vulkan.memory import DeviceBuffer
from mnnpy.backends.vulkan.runtime import COUNTERS, VulkanDevice
device = VulkanDevice()
buffer = DeviceBuffer(device, 64, COUNTERS)
device.close()  # the buffer is still alive: the layer must report it
os._exit(0)  # never touch the destroyed device again
"""


def _env() -> dict[str, str]:
    return {**os.environ, "VK_INSTANCE_LAYERS": LAYER}


def test_layer_reports_errors(vk_runtime: Any) -> None:
    res = subprocess.run([sys.executable, "-c", LEAK], capture_output=True, text=True, env=_env(), timeout=120,
                         check=False)
    assert "Validation Error" in res.stdout + res.stderr, "the validation layer did not load"


def test_vulkan_tests_are_clean_under_validation(vk_runtime: Any) -> None:
    files = [str(p) for p in sorted(HERE.glob("test_*.py")) if p.name not in ("test_validation.py",
                                                                               "test_compile_shaders.py")]
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *files],
                         capture_output=True, text=True, env=_env(), timeout=300, check=False, cwd=HERE.parents[2])
    out = res.stdout + res.stderr
    errors = [line for line in out.splitlines() if "Validation Error" in line or "VUID-" in line]
    assert res.returncode == 0, out[-3000:]
    assert not errors, "\n".join(errors[:10])
