"""OpenCL runtime: device choice, context, profiling queue, program cache, local-size tuning, cache file.

MNN: `OpenCLRuntime` (program map keyed by (program, options), `makeCache`/`setCache`, tuned local sizes keyed
by kernel and global size). The cache file is JSON: program binaries (base64) and tuned local sizes, each keyed
by the device, so one file can serve several devices.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from importlib import resources
from typing import Any

from mnnpy.core.backend import Backend, BackendUnavailable, Runtime

try:  # pyopencl is optional: without it the runtime reports itself unavailable, never raises on import
    import pyopencl as cl
except ImportError:  # pragma: no cover - exercised where pyopencl is absent
    cl = None

_PROBE_SOURCE = "__kernel void probe(__global float* a) { a[get_global_id(0)] += 1.0f; }"
_CACHE_VERSION = 1


def _kernel_source(name: str) -> str:
    """The text of `kernels/<name>.cl` with the shared `common.cl` prepended."""
    folder = resources.files("mnnpy.backends.opencl").joinpath("kernels")
    common = folder.joinpath("common.cl").read_text()
    return common + "\n" + folder.joinpath(f"{name}.cl").read_text()


# Run in a child interpreter: builds the probe kernel on one device (by its position in the sorted device list)
# and exits 0 if it compiles. A driver that crashes on a build (seen with the pip PoCL 3.0-rc2 on new CPUs, and with
# any PoCL once TensorFlow's LLVM is loaded) then kills the child, not the caller.
_CHILD_PROBE = """
import sys, pyopencl as cl
devices = [d for p in cl.get_platforms() for d in p.get_devices()]
devices.sort(key=lambda d: 0 if d.type & cl.device_type.GPU else 1)
cl.Program(cl.Context([devices[int(sys.argv[1])]]), sys.argv[2]).build(cache_dir=False)
"""


def _probe_in_child(index: int, device: Any) -> str:
    """"" when device `index` compiles the probe kernel in a child process, else the reason it did not."""
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD_PROBE, str(index), _PROBE_SOURCE], capture_output=True,
                              text=True, timeout=300, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{device.name} ({device.platform.version}): probe did not run: {exc}"
    if proc.returncode == 0:
        return ""
    lines = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
    how = f"crashed (signal {-proc.returncode})" if proc.returncode < 0 else (lines[-1] if lines else "build failed")
    return f"{device.name} ({device.platform.version}): {how}"


def _find_device() -> tuple[Any, str]:
    """The first OpenCL device (GPUs first) that can compile a probe kernel, or None and the reason."""
    if cl is None:
        return None, "opencl: pyopencl is not installed (pip install mnnpy[opencl])"
    try:
        platforms = cl.get_platforms()
    except Exception as exc:
        return None, f"opencl: no platform (install pocl?): {exc}"
    devices = [d for p in platforms for d in p.get_devices()]
    if not devices:
        return None, "opencl: no platform (install pocl?): no device"
    devices.sort(key=lambda d: 0 if d.type & cl.device_type.GPU else 1)
    errors = []
    for index, device in enumerate(devices):
        reason = _probe_in_child(index, device)
        if not reason:
            return device, ""
        errors.append(reason)
    return None, "opencl: no device can compile kernels: " + "; ".join(errors)


class OpenCLRuntime(Runtime):
    """One OpenCL device with its context, profiling queue and caches (MNN: `OpenCLRuntime`).

    Attributes:
        device: the chosen `cl.Device`.
        context: its `cl.Context`.
        queue: an in-order queue with profiling enabled (used by local-size tuning).
        device_key: "platform|device|driver", the key of this device's cache entries.
        counters: `builds` (programs compiled from source), `binary_loads` (programs loaded from the binary
            cache), `tunes` (local sizes measured), `enqueues` (kernel launches).
    """

    name = "opencl"
    _probe: tuple[Any, str] | None = None

    @classmethod
    def _probe_device(cls) -> tuple[Any, str]:
        if cls._probe is None:
            cls._probe = _find_device()
        return cls._probe

    @classmethod
    def is_available(cls) -> bool:
        """Whether an OpenCL device that compiles kernels exists; never raises."""
        try:
            return cls._probe_device()[0] is not None
        except Exception:
            return False

    @classmethod
    def unavailable_reason(cls) -> str:
        """Why `is_available()` is false ("" when it is true)."""
        try:
            return cls._probe_device()[1]
        except Exception as exc:
            return f"opencl: {exc}"

    def __init__(self) -> None:
        device, reason = self._probe_device()
        if device is None:
            raise BackendUnavailable(reason)
        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.device_key = f"{device.platform.version}|{device.name}|{device.driver_version}"
        self.counters: dict[str, int] = {"builds": 0, "binary_loads": 0, "tunes": 0, "enqueues": 0}
        self._programs: dict[tuple[str, str], Any] = {}
        self._binaries: dict[str, bytes] = {}
        self._tuned: dict[str, list[int] | None] = {}
        self.cache_path: str | None = None

    def create_backend(self, config: dict[str, Any] | None = None) -> Backend:
        """A backend for one session (MNN: `OpenCLRuntime::onCreate`)."""
        from mnnpy.backends.opencl.backend import OpenCLBackend

        return OpenCLBackend(self, config)

    def gc(self, level: int = 0) -> None:
        """Drop built programs (binaries and tuning stay, so rebuilding is cheap)."""
        self._programs.clear()

    # *** programs ***

    def _binary_key(self, name: str, options: str, source: str) -> str:
        digest = hashlib.md5(source.encode(), usedforsecurity=False).hexdigest()
        return f"{self.device_key}|{name}|{options}|{digest}"

    def program(self, name: str, options: str = "") -> Any:
        """The built program `kernels/<name>.cl` for build options, cached by (name, options).

        A program binary from the cache file is used when present; otherwise the source is compiled and its
        binary kept for `save_cache`.
        """
        key = (name, options)
        prg = self._programs.get(key)
        if prg is not None:
            return prg
        source = _kernel_source(name)
        bkey = self._binary_key(name, options, source)
        binary = self._binaries.get(bkey)
        if binary is not None:
            try:
                prg = cl.Program(self.context, [self.device], [binary]).build(options=options)
                self.counters["binary_loads"] += 1
            except Exception:
                prg = None
        if prg is None:
            prg = cl.Program(self.context, source).build(options=options, cache_dir=False)
            self.counters["builds"] += 1
            self._binaries[bkey] = prg.get_info(cl.program_info.BINARIES)[0]
        self._programs[key] = prg
        return prg

    def kernel(self, program: str, kernel: str, options: str = "") -> Any:
        """A fresh `cl.Kernel` (each execution owns its kernel objects, so their arguments are set once)."""
        return cl.Kernel(self.program(program, options), kernel)

    # *** local-size tuning ***

    def local_size(self, kernel: Any, gws: tuple[int, ...], key: str, level: str = "fast") -> list[int] | None:
        """The best local size for `kernel` over `gws` (None = let the driver choose), cached by device/key/gws.

        Args:
            kernel: the kernel, with all its arguments set.
            gws: the global size (each entry a multiple of every candidate is not required: kernels bound-check).
            key: a name for the kernel and its shape-independent configuration.
            level: MNN's tuning level: "none", "fast", "normal", "wide" or "heavy".
        """
        tkey = f"{self.device_key}|{key}|{level}|{','.join(str(g) for g in gws)}"
        if tkey in self._tuned:
            return self._tuned[tkey]
        best = None
        if level != "none":
            from mnnpy.backends.opencl import tuning

            limit = min(self.device.max_work_group_size, kernel.get_work_group_info(
                cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device))
            candidates = tuning.candidates(gws, level, limit, self.device.max_work_item_sizes)
            best = tuning.measure(self.queue, kernel, gws, candidates)
            self.counters["tunes"] += 1
        self._tuned[tkey] = None if best is None else list(best)
        return self._tuned[tkey]

    # *** cache file ***

    def save_cache(self, path: str | os.PathLike[str]) -> None:
        """Write program binaries and tuned local sizes to `path` (MNN: `Interpreter.updateCacheFile`)."""
        data = {"version": _CACHE_VERSION,
                "programs": {k: base64.b64encode(v).decode() for k, v in self._binaries.items()},
                "tuning": dict(self._tuned)}
        tmp = f"{os.fspath(path)}.tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)

    def load_cache(self, path: str | os.PathLike[str]) -> bool:
        """Read a cache file written by `save_cache` (MNN: `Interpreter.setCacheFile`); False if absent or bad."""
        self.cache_path = os.fspath(path)
        try:
            with open(path) as f:
                data = json.load(f)
            if data.get("version") != _CACHE_VERSION:
                return False
            binaries = {str(k): base64.b64decode(v) for k, v in data.get("programs", {}).items()}
            tuned = {str(k): (None if v is None else [int(x) for x in v]) for k, v in data.get("tuning", {}).items()}
        except (OSError, ValueError, TypeError, AttributeError):
            return False
        self._binaries.update(binaries)
        self._tuned.update(tuned)
        return True
