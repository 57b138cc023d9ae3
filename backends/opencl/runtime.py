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
from pathlib import Path
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


# Run in a child interpreter, so that a driver that crashes (seen with the pip PoCL 3.0-rc2 on new CPUs, and with any
# PoCL once TensorFlow's LLVM is loaded) kills the child, not the caller. With one argument it prints a line per
# device ("gpu|key" or "other|key", GPUs first); with a device index and a source it builds that source on the
# device and exits 0 if it compiles.
_CHILD_PROBE = """
import sys, pyopencl as cl
devices = [d for p in cl.get_platforms() for d in p.get_devices()]
devices.sort(key=lambda d: 0 if d.type & cl.device_type.GPU else 1)
if len(sys.argv) == 1:
    for d in devices:
        print(("gpu|" if d.type & cl.device_type.GPU else "other|") + d.platform.version + "|" + d.name)
else:
    cl.Program(cl.Context([devices[int(sys.argv[1])]]), sys.argv[2]).build(cache_dir=False)
"""


def _icd_files() -> list[str]:
    """The vendor ICD files the OpenCL loader opens when OCL_ICD_VENDORS is not set, in its order: the system's
    (/etc/OpenCL/vendors) and those shipped inside the pyopencl wheel (its ocl-icd also reads
    ``$PYOPENCL_HOME/.libs``)."""
    if cl is None:
        return []
    folders = [Path("/etc/OpenCL/vendors"), Path(cl.__file__).resolve().parent / ".libs"]
    return [str(f) for folder in folders if folder.is_dir() for f in sorted(folder.glob("*.icd"))]


def _child(args: list[str], icd: str | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OCL_ICD_VENDORS=icd) if icd else None
    return subprocess.run([sys.executable, "-c", _CHILD_PROBE, *args], capture_output=True, text=True, timeout=300,
                          check=False, env=env)


def _why(proc: subprocess.CompletedProcess[str], what: str) -> str:
    """Why a child probe failed: the signal that killed it, or the last error line it printed."""
    lines = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
    return f"crashed (signal {-proc.returncode})" if proc.returncode < 0 else (lines[-1] if lines else f"{what} failed")


def _candidates(icd: str | None) -> tuple[list[tuple[bool, str, int]], str]:
    """(is_gpu, "platform version|device name", index) of each device the loader finds with ICD file `icd` alone
    (None: as configured), listed in a child process; or a reason."""
    try:
        proc = _child([], icd)
    except (OSError, subprocess.SubprocessError) as exc:
        return [], f"{icd or 'opencl'}: listing did not run: {exc}"
    if proc.returncode != 0:
        return [], f"{icd or 'opencl'}: no platform ({_why(proc, 'listing')})"
    rows = [line.split("|", 1) for line in proc.stdout.splitlines() if "|" in line]
    return [(kind == "gpu", key, i) for i, (kind, key) in enumerate(rows)], ""


def _find_device() -> tuple[Any, str]:
    """The first OpenCL device (GPUs first) that can compile a probe kernel, or None and the reason.

    The loader opens every vendor library it finds at this process's first ``clGetPlatformIDs``. With the pip PoCL
    beside Debian's (as in CI), that is two PoCLs with two LLVMs (14 and 15), 124 exported symbols in common and
    two driver thread pools in one process, one of them unused (and on AMD family 26 unable to build a kernel). So
    each ICD file is listed and probed in child processes alone, and the chosen one is pinned with OCL_ICD_VENDORS
    before this process loads any. The user's own OCL_ICD_VENDORS stands; so does a loader that pyopencl already
    started here: the device is then looked up by its platform version and name among what it gives.
    """
    if cl is None:
        return None, "opencl: pyopencl is not installed (pip install mnnpy[opencl])"
    user_choice = "OCL_ICD_VENDORS" in os.environ  # the user's choice of vendor files stands
    icds: list[str | None] = [*([] if user_choice else _icd_files())] or [None]
    errors = []
    found: list[tuple[bool, int, str | None, str, int]] = []
    for order, icd in enumerate(icds):
        rows, reason = _candidates(icd)
        if reason:
            errors.append(reason)
        found += [(not gpu, order, icd, key, index) for gpu, key, index in rows]
    for _, _, icd, key, index in sorted(found, key=lambda c: c[:2]):
        try:
            proc = _child([str(index), _PROBE_SOURCE], icd)
        except (OSError, subprocess.SubprocessError) as exc:
            errors.append(f"{key}: probe did not run: {exc}")
            continue
        if proc.returncode != 0:
            errors.append(f"{key}: {_why(proc, 'build')}")
            continue
        if icd is not None:
            os.environ["OCL_ICD_VENDORS"] = icd  # read by the loader at this process's first clGetPlatformIDs
        try:
            devices = [d for p in cl.get_platforms() for d in p.get_devices()]
        except Exception as exc:
            return None, f"opencl: no platform (install pocl?): {exc}"
        for device in devices:
            if f"{device.platform.version}|{device.name}" == key:
                return device, ""
        errors.append(f"{key}: built in a child process, but not listed here")
    if not found and not errors:
        errors.append("no device")
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
