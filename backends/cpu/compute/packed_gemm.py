"""GEMM with pre-packed weights: a register-tiled micro-kernel written here as LLVM IR, compiled at first use.

Why: numpy's ``matmul`` is OpenBLAS, which packs B (our weights) again on every call and, with ``beta = 0``, zeroes C
in a pass of its own before accumulating into it. Convolution weights are constants, so MNN packs them once (at
resize) and its kernels write C once. Written in numpy or numba, a GEMM loop reaches 5-20 GFLOP/s (numba does not
keep the accumulators in registers; PERF.md); written as LLVM IR with explicit vectors, LLVM keeps them there.
Measured on a Zen 4 core (1 thread, GFLOP/s, OpenBLAS -> this kernel): MobileNetV2's 12544 x 17 x 96 expand 82 ->
93, 3136 x 145 x 24 project 76 -> 85, 49 x 321 x 1280 91 -> 113; ResNet-18's layer-4 im2col 49 x 4608 x 512 80 ->
112 and its stem 12544 x 147 x 64 87 -> 106 (the FMA peak is ~115).

The kernel: ``C[M, N] = clamp(A[M, K] @ B[K, N] + bias, lo, hi)`` for ``batch`` such products at fixed strides (a
Winograd convolution's alpha² positions in one call). B is packed once into panels ``[P, K, NR]`` of NR = two
vectors of columns (32 floats with AVX-512, 16 with AVX2), zero-padded past N. A register tile is MR rows of A
(8 on AVX-512's 32 vector registers, 6 on AVX2's 16) by one panel: MR x 2 accumulators start at the bias, each k
adds one broadcast A value times two B vectors, and the tile is clamped and stored once (masked in the last panel;
the rows past the last whole tile run as one more tile that stores only its real rows, or, fewer than MR / 2 of
them, as one-row tiles). Within a block of rows (~1 MB of C), the panels are the outer
loop, so a panel (K x NR floats) stays in L1/L2 while the block's row tiles stream past it. ``lo``/``hi`` clamp by
compare-and-select, so NaN passes through as in numpy.

The same compiled module (``llvm_ir.kernels_ir``) holds two more kernels, bound here: float32 max pooling over
NC4HW4 planes (``bind_max_pool``) and a MobileNet chain's 3 x 3 depthwise over its column phases
(``bind_depthwise3x3``).

Availability: x86-64 with FMA and AVX2 (AVX-512 used where present), llvmlite importable (numba's compiler, the
``jit`` extra) and ``MNNPY_JIT`` not off. Otherwise ``available()`` is False and every caller keeps numpy's GEMM;
the tests run both (``cpu_impl``). Compiling takes ~50 ms, once per process, at the first session that packs weights
(pre-inference, never inside a run); the code is then shared by forked worker lanes. The call goes through ctypes,
which releases the GIL, so thread lanes run their GEMMs concurrently.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from mnnpy.core.memory import populated_zeros

from .jit import switched_off
from .llvm_ir import kernels_ir
from .llvm_winograd import UNITS as WINOGRAD_UNITS

_STATE: dict[str, Any] = {}
_LOCK = threading.Lock()
# depthwise3x3(X, pstride, rstride, W, B, O, orow, OW, Cp, sh, dh, r0, r1, p1, c1, p2, c2, lo, hi, images, ximg, oimg)
_DW_ARGS = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
            *[ctypes.c_int64] * 11, ctypes.c_float, ctypes.c_float, *[ctypes.c_int64] * 3]
# store_nc4(Y, ldy, Y2, O, oplane, R, rplane, pixels, blocks, images, yimg, oimg, rimg, lo, hi, rlo, rhi)
_STORE_ARGS = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
               *[ctypes.c_int64] * 7, *[ctypes.c_float] * 4]
# wino_in_U_K(XP, rs, cp, V, ps, rows, tw) and wino_out_U_K(M, mps, mts, Y, yps, yts, tiles, ch, B, lo, hi)
_WINO_ARGS = ([ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, *[ctypes.c_int64] * 3],
              [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, *[ctypes.c_int64] * 4,
               ctypes.c_void_p, ctypes.c_float, ctypes.c_float],
              [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_float, ctypes.c_float,
               ctypes.c_void_p, *[ctypes.c_int64] * 3, ctypes.c_void_p, *[ctypes.c_int64] * 3, ctypes.c_float,
               ctypes.c_float, *[ctypes.c_int64] * 5])
_WINO_SIDES = ("in", "out", "store")
# packed_gemm(A, lda, B, panel, C, ldc, M, K, N, bias, lo, hi, batch, a_step, b_step, c_step, mc, nseg, seglen,
# segstride): see ``llvm_ir.gemm_ir``
_ARGS = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
         ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_float, ctypes.c_float,
         ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
         ctypes.c_int64, ctypes.c_int64]


def available() -> bool:
    """Whether the packed GEMM may be used (see the module docstring); compiles it on the first True."""
    return not switched_off() and _kernel() is not None


def describe() -> str:
    """One line for reports: "llvm <version>, <vector bits>-bit" or why the packed GEMM is not used."""
    if switched_off():
        return "off (MNNPY_JIT=0)"
    if _kernel() is None:
        return f"numpy matmul ({_STATE.get('why', 'unavailable')})"
    return f"packed GEMM ({32 * _STATE['vw']}-bit vectors, {_STATE['origin']})"


def _kernel() -> Any:
    with _LOCK:
        if "fn" not in _STATE:
            try:
                _STATE["fn"] = _compile()
            except Exception as exc:  # any failure means: numpy's GEMM
                _STATE["fn"] = None
                _STATE["why"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return _STATE["fn"]


def _compile() -> Any:
    """The kernel's ctypes function: from the on-disk cache, else compiled (and cached where it can be)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        raise RuntimeError(f"no packed GEMM for {platform.machine()}")
    cpu = _cpu_flags()
    if cpu is not None:
        model, flags = cpu
        if "fma" not in flags or "avx2" not in flags:
            raise RuntimeError("the CPU has no FMA / AVX2")
        vw, mr = (16, 8) if "avx512f" in flags else (8, 6)
        ir = kernels_ir(vw, mr)
        key = hashlib.sha256("\n".join([ir, model, " ".join(sorted(flags))]).encode()).hexdigest()[:24]
        cache = _cache_dir()
        path = None if cache is None else cache / f"packed_gemm-{key}.so"
        if path is not None and path.exists():
            with contextlib.suppress(OSError):
                fn = _loaded(ctypes.CDLL(str(path)), vw, mr, f"cached {path.name}")
                os.utime(path)  # in use: the newest, kept by _prune
                return fn
        fn = _jit(ir, vw, mr, path)
        if fn is not None:
            return fn
    return _jit(None, 0, 0, None)


def _loaded(lib: ctypes.CDLL, vw: int, mr: int, origin: str) -> Any:
    pool = lib.max_pool4
    pool.restype, pool.argtypes = None, [ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_int64] * 13
    dw = lib.depthwise3x3
    dw.restype, dw.argtypes = None, _DW_ARGS
    store = lib.store_nc4
    store.restype, store.argtypes = None, _STORE_ARGS
    wino = {}
    for u, k in WINOGRAD_UNITS:
        fns = tuple(getattr(lib, f"wino_{side}_{u}_{k}") for side in _WINO_SIDES)
        for f, argtypes in zip(fns, _WINO_ARGS, strict=True):
            f.restype, f.argtypes = None, argtypes
        wino[u, k] = fns
    _STATE.update(lib=lib, vw=vw, mr=mr, nr=2 * vw, origin=origin, pool=pool, dw=dw, store=store, wino=wino)
    fn = lib.packed_gemm
    fn.restype = None
    fn.argtypes = _ARGS
    return fn


def _jit(ir: str | None, vw: int, mr: int, path: Path | None) -> Any:
    """Compile with llvmlite; with ``path``, also link a shared object there (an object file and the system's C
    compiler driver or linker) so that later processes load it without importing llvmlite (~100 ms less per
    process); without a linker, or ``ir`` None (no /proc/cpuinfo), the code stays in this process."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    features = llvm.get_host_cpu_features().flatten()
    if ir is None:
        have = set(features.split(","))
        if "+fma" not in have or "+avx2" not in have:
            raise RuntimeError("the CPU has no FMA / AVX2")
        vw, mr = (16, 8) if "+avx512f" in have else (8, 6)
        ir = kernels_ir(vw, mr)
    module = llvm.parse_assembly(ir)
    module.verify()
    machine = llvm.Target.from_default_triple().create_target_machine(cpu=llvm.get_host_cpu_name(),
                                                                      features=features, opt=3, reloc="pic")
    passes = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=3))
    passes.getModulePassManager().run(module, passes)
    _STATE["llvm"] = llvm.llvm_version_info
    if path is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            _link(machine.emit_object(module), path)
            _prune(path.parent)
            return _loaded(ctypes.CDLL(str(path)), vw, mr, f"compiled to {path.name}")
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    pool = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, *[ctypes.c_int64] * 13)(
        engine.get_function_address("max_pool4"))
    dw = ctypes.CFUNCTYPE(None, *_DW_ARGS)(engine.get_function_address("depthwise3x3"))
    store = ctypes.CFUNCTYPE(None, *_STORE_ARGS)(engine.get_function_address("store_nc4"))
    wino = {(u, k): tuple(ctypes.CFUNCTYPE(None, *args)(engine.get_function_address(f"wino_{side}_{u}_{k}"))
                          for side, args in zip(_WINO_SIDES, _WINO_ARGS, strict=True)) for u, k in WINOGRAD_UNITS}
    _STATE.update(engine=engine, vw=vw, mr=mr, nr=2 * vw, origin="compiled in memory", pool=pool, dw=dw,
                  store=store, wino=wino)
    return ctypes.CFUNCTYPE(None, *_ARGS)(engine.get_function_address("packed_gemm"))


def _link(obj: bytes, path: Path) -> None:
    """A shared object at ``path`` from the object code ``obj`` (written beside it, renamed in place: concurrent
    processes never see half a file)."""
    linker = shutil.which("cc") or shutil.which("gcc") or shutil.which("ld")
    if linker is None:
        raise OSError("no linker")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        src, out = Path(tmp) / "k.o", Path(tmp) / "k.so"
        src.write_bytes(obj)
        subprocess.run([linker, "-shared", "-nostdlib", "-o", str(out), str(src)], check=True, capture_output=True,
                       timeout=60)
        os.replace(out, path)


KEEP_BUILDS = 4  # shared objects kept in the cache directory (other versions' kernels; each ~15-20 KB)


def _prune(cache: Path) -> None:
    """Delete all but the KEEP_BUILDS most recently used ``packed_gemm-*.so`` in ``cache`` (every change to the
    kernels' IR builds a new one; a load marks its file used). Only files of that name pattern, ours."""
    with contextlib.suppress(OSError):
        builds = sorted(cache.glob("packed_gemm-*.so"), key=lambda f: f.stat().st_mtime, reverse=True)
        for old in builds[KEEP_BUILDS:]:
            old.unlink(missing_ok=True)


def _cpu_flags() -> tuple[str, set[str]] | None:
    """(model name, flags) of the first CPU in /proc/cpuinfo, or None (not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in text.split("\n\n", 1)[0].splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    if "flags" not in fields:
        return None
    return fields.get("model name", "") + " " + fields.get("cpu family", ""), set(fields["flags"].split())


def _cache_dir() -> Path | None:
    """Where compiled kernels are kept: ``MNNPY_CACHE_DIR``, else ``$XDG_CACHE_HOME/mnnpy``, else
    ``~/.cache/mnnpy``; None where it cannot be written."""
    root = os.environ.get("MNNPY_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "mnnpy")
    path = Path(root)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


# C is computed in blocks of rows of about this many bytes, all panels of a block before the next block: the block's
# rows stay in L2 while each panel stores its columns of them. Cold caches (40 MB written between runs), Zen 4, ms,
# unblocked -> 1 MB: ResNet-18's stem 12544 x 147 x 64 3.28 -> 2.87; MobileNetV2's shapes and layer 4 within 2%;
# hot, no change.
ROW_BLOCK_BYTES = 1 << 20


def _row_block(row_bytes: int, n: int) -> int:
    """Rows per block (``mc``): as many as keep about ``ROW_BLOCK_BYTES`` of C, a multiple of the tile rows."""
    mr = _STATE["mr"]
    rows = max(1, ROW_BLOCK_BYTES // max(row_bytes, 4 * n, 1))
    return max(mr, rows // mr * mr)


def _foreign_call(fn: Any, args: tuple, keep: tuple) -> Callable[[], None]:
    """``fn(*args)`` as a closure that also holds ``keep`` (the arrays whose addresses ``args`` carries: alive as
    long as the call is)."""
    def run() -> None:
        if keep:
            fn(*args)
    return run


def _nothing() -> None:
    """A bound product with nothing to compute (no rows)."""


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def bind_max_pool(x: np.ndarray, y: np.ndarray, window: tuple[int, int, int, int], pads: tuple[int, int]
                  ) -> Callable[[], None]:
    """Max pooling of float32 NC4HW4 ``x`` [N, C4, H, W, 4] into ``y`` [N, C4', OH, OW, 4] (the same planes: C4'
    = C4, or a slice of both's channel blocks), ``window`` = (kh, kw, sh, sw), ``pads`` = (top, left), as one
    foreign call checked once here (the compiled ``max_pool4``; only where ``available()``)."""
    kh, kw, sh, sw = window
    top, left = pads
    n, c4, h, w, _ = x.shape
    oh, ow = y.shape[2:4]
    ok = x.dtype == y.dtype == np.float32 and x.ndim == y.ndim == 5 and y.shape[:2] == (n, c4) \
        and x.shape[4] == y.shape[4] == 4 and min(h, w, oh, ow, kh, kw, sh, sw) >= 1 and min(top, left) >= 0 \
        and all(a.strides[2:] == (a.shape[3] * 16, 16, 4) for a in (x, y)) \
        and all(a.strides[1] == a.shape[2] * a.shape[3] * 16 for a in (x, y)) and y.flags.writeable
    if not ok or (n > 1 and any(a.strides[0] != c4 * a.strides[1] for a in (x, y))):
        raise ValueError(f"max pool: cannot run {x.shape} -> {y.shape} (strides {x.strides} / {y.strides})")
    args = (_address(x), _address(y), n * c4, h, w, oh, ow, kh, kw, sh, sw, top, left, x.strides[1] // 4,
            y.strides[1] // 4)
    return _foreign_call(_STATE["pool"], args, (x, y))


def bind_depthwise3x3(phases: np.ndarray, weights: np.ndarray, bias: np.ndarray, out: np.ndarray,
                      geometry: tuple[int, int, int], rows: tuple[int, int], clamp: tuple[float, float]
                      ) -> Callable[[], None] | None:
    """A chain's 3 x 3 depthwise over its column phases ``phases`` [S, N, Hp, Wq, Cp] (S the stride-x phases) with
    ``weights`` [9, Cp], ``bias`` [Cp], into NHWC ``out`` [N, OH, OW, Cp], ``geometry`` = (sh, dh, dw), output
    rows ``rows``, as one foreign call (``depthwise3x3`` in ``llvm_ir``) checked once here; None where it does not
    apply (Cp not a multiple of the vector width, layouts not contiguous)."""
    vw = _STATE["vw"]
    s_, n, hp, wq, cp = phases.shape
    _, oh, ow, ocp = out.shape
    sh, dh, dw = geometry
    r0, r1 = rows
    p1, p2 = dw % s_, (2 * dw) % s_
    c1, c2 = (dw // s_) * cp, ((2 * dw) // s_) * cp
    arrays = (phases, weights, bias, out)
    if cp % vw or ocp != cp or any(a.dtype != np.float32 or not a.flags.c_contiguous for a in arrays) \
            or weights.shape != (9, cp) or bias.shape != (cp,) or out.shape[0] != n or not 0 <= r0 <= r1 <= oh \
            or (r1 - 1) * sh + 2 * dh >= hp or (ow - 1) * cp + max(c1, c2) + cp > wq * cp or r0 == r1:
        return None
    args = (_address(phases), n * hp * wq * cp, wq * cp, _address(weights), _address(bias), _address(out), ow * cp,
            ow, cp, sh, dh, r0, r1, p1, c1, p2, c2, clamp[0], clamp[1], n, hp * wq * cp, oh * ow * cp)
    return _foreign_call(_STATE["dw"], args, arrays)


def vector_width() -> int:
    """Floats per vector of the compiled kernels (16 with AVX-512, 8 with AVX2); ``available()`` first."""
    return int(_STATE["vw"])


def panel_width() -> int:
    """NR: the columns per panel (``PackedWeights.panels`` is [T, N / NR, K, NR]). Only where ``available()``."""
    return int(_STATE["nr"])


class PackedWeights:
    """``w`` [K, N] (or a batch [T, K, N]) packed once into the kernel's panels, with a bias [N] (zeros if None).

    ``matmul(a, out)`` then computes ``out = clamp(a @ w + bias, lo, hi)`` for float32 ``a`` [M, K] / ``out`` [M, N]
    (batched: [T, M, K] / [T, M, N]) with unit column strides and any row strides; ``rows`` < K runs over the first
    rows of ``w`` only. Only made where ``available()``."""

    def __init__(self, w: np.ndarray | None, bias: np.ndarray | None = None,
                 shape: tuple[int, int, int] | None = None) -> None:
        """``w`` None: panels for weights of ``shape`` (T, K, N), zero, for the caller to fill (``panel_columns``
        says where each column goes; a batch unless T is None)."""
        nr = _STATE["nr"]
        batched = w.ndim == 3 if w is not None else shape[0] is not None  # type: ignore[index]
        t, k, n = (w if batched else w[None]).shape if w is not None else (shape[0] or 1, *shape[1:])  # type: ignore
        p, whole = -(-n // nr), n // nr
        packed = populated_zeros((t, p, k, nr), np.float32)  # pages faulted in at once (memory.py)
        if w is not None:
            wb = w if batched else w[None]
            by_column = packed.transpose(0, 2, 1, 3)  # [T, K, P, NR]: column j * NR + i of w at [.., j, i]
            by_column[:, :, :whole] = wb[:, :, : whole * nr].reshape(t, k, whole, nr)
            if whole < p:
                by_column[:, :, whole, : n - whole * nr] = wb[:, :, whole * nr:]
        self.panels = packed
        self.bias = np.zeros(p * nr, dtype=np.float32)
        self.zeros = self.bias if bias is None else np.zeros(p * nr, dtype=np.float32)
        if bias is not None:
            self.bias[:n] = bias[:n]
        self.shape = (k, n)
        self.batch = t if batched else None
        self.fn = _kernel()

    def columns(self, c0: int, c1: int) -> PackedWeights:
        """Output columns [c0, c1) (c0 a multiple of the panel width) as weights sharing these panels and bias (a
        lane's band of output channels without a copy of its weights)."""
        nr = self.panels.shape[3]
        if c0 % nr or not 0 <= c0 < c1 <= self.shape[1]:
            raise ValueError(f"packed GEMM: columns {c0}..{c1} of {self.shape}")
        band = object.__new__(PackedWeights)
        band.panels = self.panels[:, c0 // nr: -(-c1 // nr)]
        band.bias, band.zeros = (b[c0: c0 + band.panels.shape[1] * nr] for b in (self.bias, self.zeros))
        band.shape, band.batch, band.fn = (self.shape[0], c1 - c0), self.batch, self.fn
        return band

    def matmul(self, a: np.ndarray, out: np.ndarray, lo: float = -np.inf, hi: float = np.inf,
               rows: int | None = None, first: int = 0, bias: bool = True, start: int = 0) -> None:
        """``out = clamp(a @ w[first:first + rows] + bias, lo, hi)`` (see the class docstring; ``bias`` False: no
        bias; batched, ``a`` / ``out`` hold products ``start ..`` of the batch); raises ValueError on arrays the
        kernel cannot read or write as they are."""
        args = self._args(a, out, lo, hi, rows, first, bias, start)
        if args is not None:
            self.fn(*args)

    def bind(self, a: np.ndarray, out: np.ndarray, lo: float = -np.inf, hi: float = np.inf, rows: int | None = None,
             first: int = 0, bias: bool = True, start: int = 0) -> Callable[[], None]:
        """``matmul`` for these arrays, checked and addressed once: the run is one foreign call (~1.7 us against
        ~8.6 us for ``matmul``, whose checks and address look-ups are per call). The closure keeps the arrays."""
        args = self._args(a, out, lo, hi, rows, first, bias, start)
        return _foreign_call(self.fn, args, (a, out, self)) if args is not None else _nothing

    def bind_implicit(self, base: np.ndarray, offset: int, rows: tuple[int, int, int], runs: tuple[int, int, int],
                      out: np.ndarray, lo: float = -np.inf, hi: float = np.inf) -> Callable[[], None]:
        """A bound product whose A is read in place from ``base`` (an implicit im2col: no column matrix). Product t
        (of ``out``'s first axis), row i, k = s * seglen + j reads ``base.flat[offset + t * a_step + i * lda + s *
        segstride + j]`` for ``rows`` = (a_step, lda, M) and ``runs`` = (nseg, seglen, segstride); its K = nseg x
        seglen first rows of the weights, the bias, the clamp, into ``out`` [T, M, N]. Every address is checked to
        lie inside ``base`` here, once."""
        (a_step, lda, m), (nseg, seglen, segstride) = rows, runs
        k, n = self.shape
        t = out.shape[0]
        last = offset + (t - 1) * a_step + (m - 1) * lda + (nseg - 1) * segstride + seglen - 1
        if base.dtype != np.float32 or not base.flags.c_contiguous or out.dtype != np.float32 or out.ndim != 3 \
                or out.shape[1:] != (m, n) or out.strides[2] != 4 or any(s % 4 for s in out.strides[:2]) \
                or min(offset, a_step, lda, segstride, nseg - 1, seglen - 1, t - 1, m - 1) < 0 \
                or last >= base.size or nseg * seglen > k or not out.flags.writeable:
            raise ValueError(f"packed GEMM: cannot read {t} x {m} rows of {nseg} x {seglen} from {base.shape}")
        args = (_address(base) + 4 * offset, lda, _address(self.panels), self.panels.shape[2] * self.panels.shape[3],
                _address(out), out.strides[1] // 4, m, nseg * seglen, n, _address(self.bias), lo, hi, t, a_step,
                0, out.strides[0] // 4, _row_block(out.strides[1], n), nseg, seglen, segstride)
        return _foreign_call(self.fn, args, (base, out, self))

    def _args(self, a: np.ndarray, out: np.ndarray, lo: float, hi: float, rows: int | None, first: int, bias: bool,
              start: int) -> tuple | None:
        """The kernel's arguments for this product (None: nothing to compute), after the checks."""
        k, n = self.shape
        rows = k - first if rows is None else rows
        if a.dtype != np.float32 or out.dtype != np.float32 or a.shape[-1] != rows or out.shape[-1] != n \
                or a.shape[:-1] != out.shape[:-1] or a.strides[-1] != 4 or out.strides[-1] != 4 \
                or not out.flags.writeable or not 0 <= first <= first + rows <= k or rows < 1:
            raise ValueError(f"packed GEMM: cannot run {a.shape} {a.dtype} @ {self.shape} -> {out.shape} {out.dtype}")
        panel = self.panels.shape[2] * self.panels.shape[3]
        b = _address(self.panels) + 4 * (first * self.panels.shape[3] + start * (self.panels.strides[0] // 4))
        add = _address(self.bias if bias else self.zeros)
        if self.batch is None:
            if a.ndim != 2 or a.strides[0] % 4 or out.strides[0] % 4 or a.shape[0] == 0:
                if a.ndim != 2 or a.shape[0]:
                    raise ValueError(f"packed GEMM: unsupported strides {a.strides} / {out.strides}")
                return None
            return (_address(a), a.strides[0] // 4, b, panel, _address(out), out.strides[0] // 4, a.shape[0], rows,
                    n, add, lo, hi, 1, 0, 0, 0, _row_block(out.strides[0], n), 1, rows, 0)
        if a.ndim != 3 or not 0 <= start <= start + a.shape[0] <= self.batch \
                or any(s % 4 for s in (*a.strides[:2], *out.strides[:2])):
            raise ValueError(f"packed GEMM: batch {a.shape} / {out.shape} against {self.batch} weights")
        if not (a.shape[0] and a.shape[1]):
            return None
        return (_address(a), a.strides[1] // 4, b, panel, _address(out), out.strides[1] // 4, a.shape[1], rows,
                n, add, lo, hi, a.shape[0], a.strides[0] // 4, self.panels.strides[0] // 4, out.strides[0] // 4,
                _row_block(out.strides[1], n), 1, rows, 0)
