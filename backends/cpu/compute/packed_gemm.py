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
the rows past the last whole tile run one-row tiles). Within a block of rows (~1 MB of C), the panels are the outer
loop, so a panel (K x NR floats) stays in L1/L2 while the block's row tiles stream past it. ``lo``/``hi`` clamp by
compare-and-select, so NaN passes through as in numpy.

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

_STATE: dict[str, Any] = {}
_LOCK = threading.Lock()
# packed_gemm(A, lda, B, panel, C, ldc, M, K, N, bias, lo, hi, batch, a_step, b_step, c_step, mc, nseg, seglen,
# segstride): see ``_ir``
_ARGS = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
         ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_float, ctypes.c_float,
         ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
         ctypes.c_int64, ctypes.c_int64]


def _switched_off() -> bool:
    return os.environ.get("MNNPY_JIT", "1").strip().lower() in ("0", "off", "false", "no")


def available() -> bool:
    """Whether the packed GEMM may be used (see the module docstring); compiles it on the first True."""
    return not _switched_off() and _kernel() is not None


def describe() -> str:
    """One line for reports: "llvm <version>, <vector bits>-bit" or why the packed GEMM is not used."""
    if _switched_off():
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
        ir = _ir(vw, mr)
        key = hashlib.sha256("\n".join([ir, model, " ".join(sorted(flags))]).encode()).hexdigest()[:24]
        cache = _cache_dir()
        path = None if cache is None else cache / f"packed_gemm-{key}.so"
        if path is not None and path.exists():
            with contextlib.suppress(OSError):
                return _loaded(ctypes.CDLL(str(path)), vw, mr, f"cached {path.name}")
        fn = _jit(ir, vw, mr, path)
        if fn is not None:
            return fn
    return _jit(None, 0, 0, None)


def _loaded(lib: ctypes.CDLL, vw: int, mr: int, origin: str) -> Any:
    pool = lib.max_pool4
    pool.restype, pool.argtypes = None, [ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_int64] * 13
    _STATE.update(lib=lib, vw=vw, mr=mr, nr=2 * vw, origin=origin, pool=pool)
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
        ir = _ir(vw, mr)
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
            return _loaded(ctypes.CDLL(str(path)), vw, mr, f"compiled to {path.name}")
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    pool = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, *[ctypes.c_int64] * 13)(
        engine.get_function_address("max_pool4"))
    _STATE.update(engine=engine, vw=vw, mr=mr, nr=2 * vw, origin="compiled in memory", pool=pool)
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


def _ir(vw: int, mr: int) -> str:
    """The kernel as LLVM IR text (see the module docstring), for vectors of ``vw`` floats and ``mr``-row tiles.

    ``packed_gemm(A, lda, B, panel, C, ldc, M, K, N, bias, lo, hi, batch, a_step, b_step, c_step, mc, nseg, seglen,
    segstride)``: element strides; B's panel p starts at ``B + p * panel`` (a caller may run over the first K rows
    of a packed matrix with more, or from a row offset); product t of the batch reads ``A + t * a_step`` etc.; rows
    in blocks of ``mc``; a row of A is ``nseg`` runs of ``seglen`` contiguous floats, ``segstride`` apart (K =
    nseg x seglen; a plain GEMM: one run of K)."""
    v, nr = f"<{vw} x float>", 2 * vw
    splat = f"<{vw} x i32> zeroinitializer"
    lines = [f"declare {v} @llvm.fma.v{vw}f32({v}, {v}, {v})",
             f"declare void @llvm.masked.store.v{vw}f32.p0({v}, ptr, i32, <{vw} x i1>)",
             "define void @packed_gemm(ptr noalias %A0, i64 %lda, ptr noalias %B0, i64 %panel, ptr noalias %C0,"
             " i64 %ldc, i64 %M, i64 %K, i64 %N, ptr noalias %bias, float %lo, float %hi, i64 %batch,"
             " i64 %astep, i64 %bstep, i64 %cstep, i64 %mc, i64 %nseg, i64 %seglen, i64 %segstride) {",
             "entry:",
             f"  %np0 = add i64 %N, {nr - 1}",
             f"  %np = udiv i64 %np0, {nr}",
             f"  %lo1 = insertelement {v} poison, float %lo, i32 0",
             f"  %los = shufflevector {v} %lo1, {v} poison, {splat}",
             f"  %hi1 = insertelement {v} poison, float %hi, i32 0",
             f"  %his = shufflevector {v} %hi1, {v} poison, {splat}",
             "  br label %t_loop",
             "t_loop:",
             "  %t = phi i64 [0, %entry], [%t_next, %t_done]",
             "  %ao = mul i64 %t, %astep",
             "  %A = getelementptr float, ptr %A0, i64 %ao",
             "  %bo = mul i64 %t, %bstep",
             "  %B = getelementptr float, ptr %B0, i64 %bo",
             "  %co = mul i64 %t, %cstep",
             "  %C = getelementptr float, ptr %C0, i64 %co",
             "  br label %m_loop",
             "m_loop:",  # blocks of mc rows: a block's C rows stay in cache while every panel stores into them
             "  %i0 = phi i64 [0, %t_loop], [%i0_next, %p_done]",
             "  %i0_end = add i64 %i0, %mc",
             "  %i0_short = icmp ult i64 %i0_end, %M",
             "  %Mb = select i1 %i0_short, i64 %i0_end, i64 %M",
             "  br label %p_loop",
             "p_loop:",
             "  %p = phi i64 [0, %m_loop], [%p_next, %p_end]",
             "  %poff = mul i64 %p, %panel",
             "  %bp = getelementptr float, ptr %B, i64 %poff",
             f"  %col0 = mul i64 %p, {nr}",
             "  %rem = sub i64 %N, %col0"]
    iota = ", ".join(f"i64 {j}" for j in range(vw))
    for h in range(2):  # per half of the panel: the store mask (columns < N) and the bias vector
        lines += [f"  %rh{h} = sub i64 %rem, {h * vw}",
                  f"  %rs{h}a = insertelement <{vw} x i64> poison, i64 %rh{h}, i32 0",
                  f"  %rs{h} = shufflevector <{vw} x i64> %rs{h}a, <{vw} x i64> poison, {splat}",
                  f"  %mask{h} = icmp slt <{vw} x i64> <{iota}>, %rs{h}",
                  f"  %cc{h} = add i64 %col0, {h * vw}",
                  f"  %biasp{h} = getelementptr float, ptr %bias, i64 %cc{h}",
                  f"  %bias{h} = load {v}, ptr %biasp{h}, align 4"]
    lines += ["  br label %i_loop",
              "i_loop:",
              "  %i = phi i64 [%i0, %p_loop], [%inext_m, %store_m], [%inext_1, %store_1]",
              f"  %iend = add i64 %i, {mr}",
              "  %fits = icmp ule i64 %iend, %Mb",
              "  br i1 %fits, label %tile_m, label %row_check",
              "row_check:",
              "  %more = icmp ult i64 %i, %Mb",
              "  br i1 %more, label %tile_1, label %p_end"]
    for tag, rows in (("m", mr), ("1", 1)):
        lines += [f"tile_{tag}:"]
        for r in range(rows):
            lines += [f"  %row_{tag}{r} = add i64 %i, {r}",
                      f"  %aoff_{tag}{r} = mul i64 %row_{tag}{r}, %lda",
                      f"  %ap_{tag}{r} = getelementptr float, ptr %A, i64 %aoff_{tag}{r}"]
        # k in segments (an implicit im2col: A's row is nseg runs of seglen contiguous floats, segstride apart; a
        # plain GEMM is one segment of K): the accumulators live across both loops
        lines += [f"  br label %sl_{tag}", f"sl_{tag}:",
                  f"  %s_{tag} = phi i64 [0, %tile_{tag}], [%sn_{tag}, %se_{tag}]"]
        for r in range(rows):
            for h in range(2):
                lines.append(f"  %sacc_{tag}{r}_{h} = phi {v} [%bias{h}, %tile_{tag}], [%fma_{tag}{r}_{h}, %se_{tag}]")
        lines += [f"  %sbase_{tag} = mul i64 %s_{tag}, %segstride",
                  f"  %kb0_{tag} = mul i64 %s_{tag}, %seglen",
                  f"  br label %kl_{tag}", f"kl_{tag}:",
                  f"  %k_{tag} = phi i64 [0, %sl_{tag}], [%kn_{tag}, %kl_{tag}]"]
        for r in range(rows):
            for h in range(2):
                lines.append(f"  %acc_{tag}{r}_{h} = phi {v} [%sacc_{tag}{r}_{h}, %sl_{tag}],"
                             f" [%fma_{tag}{r}_{h}, %kl_{tag}]")
        lines += [f"  %kg_{tag} = add i64 %kb0_{tag}, %k_{tag}",
                  f"  %bk_{tag} = mul i64 %kg_{tag}, {nr}",
                  f"  %ak_{tag} = add i64 %sbase_{tag}, %k_{tag}"]
        for h in range(2):
            lines += [f"  %bkh_{tag}{h} = add i64 %bk_{tag}, {h * vw}",
                      f"  %bptr_{tag}{h} = getelementptr float, ptr %bp, i64 %bkh_{tag}{h}",
                      f"  %b_{tag}{h} = load {v}, ptr %bptr_{tag}{h}, align 4"]
        for r in range(rows):
            lines += [f"  %apk_{tag}{r} = getelementptr float, ptr %ap_{tag}{r}, i64 %ak_{tag}",
                      f"  %a_{tag}{r} = load float, ptr %apk_{tag}{r}, align 4",
                      f"  %as1_{tag}{r} = insertelement {v} poison, float %a_{tag}{r}, i32 0",
                      f"  %as_{tag}{r} = shufflevector {v} %as1_{tag}{r}, {v} poison, {splat}"]
            lines += [f"  %fma_{tag}{r}_{h} = call {v} @llvm.fma.v{vw}f32({v} %as_{tag}{r}, {v} %b_{tag}{h},"
                      f" {v} %acc_{tag}{r}_{h})" for h in range(2)]
        lines += [f"  %kn_{tag} = add i64 %k_{tag}, 1",
                  f"  %kmore_{tag} = icmp ult i64 %kn_{tag}, %seglen",
                  f"  br i1 %kmore_{tag}, label %kl_{tag}, label %se_{tag}",
                  f"se_{tag}:",
                  f"  %sn_{tag} = add i64 %s_{tag}, 1",
                  f"  %smore_{tag} = icmp ult i64 %sn_{tag}, %nseg",
                  f"  br i1 %smore_{tag}, label %sl_{tag}, label %store_{tag}",
                  f"store_{tag}:"]
        for r in range(rows):
            lines.append(f"  %coff_{tag}{r} = mul i64 %row_{tag}{r}, %ldc")
            for h in range(2):
                x = f"{tag}{r}_{h}"
                lines += [f"  %below_{x} = fcmp olt {v} %fma_{x}, %los",  # compare-and-select: NaN stays NaN
                          f"  %c1_{x} = select <{vw} x i1> %below_{x}, {v} %los, {v} %fma_{x}",
                          f"  %above_{x} = fcmp ogt {v} %c1_{x}, %his",
                          f"  %c2_{x} = select <{vw} x i1> %above_{x}, {v} %his, {v} %c1_{x}",
                          f"  %co_{x} = add i64 %coff_{tag}{r}, %cc{h}",
                          f"  %cp_{x} = getelementptr float, ptr %C, i64 %co_{x}",
                          f"  call void @llvm.masked.store.v{vw}f32.p0({v} %c2_{x}, ptr %cp_{x}, i32 4,"
                          f" <{vw} x i1> %mask{h})"]
        lines += [f"  %inext_{tag} = add i64 %i, {rows}", "  br label %i_loop"]
    lines += ["p_end:",
              "  %p_next = add i64 %p, 1",
              "  %pmore = icmp ult i64 %p_next, %np",
              "  br i1 %pmore, label %p_loop, label %p_done",
              "p_done:",
              "  %i0_next = add i64 %i0, %mc",
              "  %mmore = icmp ult i64 %i0_next, %M",
              "  br i1 %mmore, label %m_loop, label %t_done",
              "t_done:",
              "  %t_next = add i64 %t, 1",
              "  %tmore = icmp ult i64 %t_next, %batch",
              "  br i1 %tmore, label %t_loop, label %exit",
              "exit:",
              "  ret void",
              "}"]
    return "\n".join(lines + _max_pool_ir())


def _max_pool_ir() -> list[str]:
    """``max_pool4(X, Y, planes, H, W, OH, OW, kh, kw, sh, sw, top, left, xplane, yplane)``: max pooling of NC4HW4
    planes (pixels of 4 floats: one vector), every window in one pass over the input. A tap outside the input reads
    pixel (0, 0) and is replaced by -inf (clamped index, select: no branch per tap); a NaN wins and stays, as in
    numpy's maximum."""
    v4 = "<4 x float>"
    ninf = "<float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000>"
    return ["define void @max_pool4(ptr noalias %X, ptr noalias %Y, i64 %planes, i64 %H, i64 %W, i64 %OH, i64 %OW,"
            " i64 %kh, i64 %kw, i64 %sh, i64 %sw, i64 %top, i64 %left, i64 %xplane, i64 %yplane) {",
            "entry:",
            "  br label %pl",
            "pl:",
            "  %p = phi i64 [0, %entry], [%pn, %pe]",
            "  %xo = mul i64 %p, %xplane",
            "  %xb = getelementptr float, ptr %X, i64 %xo",
            "  %yo = mul i64 %p, %yplane",
            "  %yb = getelementptr float, ptr %Y, i64 %yo",
            "  br label %oyl",
            "oyl:",
            "  %oy = phi i64 [0, %pl], [%oyn, %oye]",
            "  %oys = mul i64 %oy, %sh",
            "  %iy0 = sub i64 %oys, %top",
            "  br label %oxl",
            "oxl:",
            "  %ox = phi i64 [0, %oyl], [%oxn, %kye]",
            "  %oxs = mul i64 %ox, %sw",
            "  %ix0 = sub i64 %oxs, %left",
            "  br label %kyl",
            "kyl:",
            "  %ky = phi i64 [0, %oxl], [%kyn, %kxe]",
            f"  %acc0 = phi {v4} [{ninf}, %oxl], [%acc2, %kxe]",
            "  %iy = add i64 %iy0, %ky",
            "  %iyin = icmp ult i64 %iy, %H",
            "  %iyc = select i1 %iyin, i64 %iy, i64 0",
            "  %rowo = mul i64 %iyc, %W",
            "  br label %kxl",
            "kxl:",
            "  %kx = phi i64 [0, %kyl], [%kxn, %kxl]",
            f"  %acc1 = phi {v4} [%acc0, %kyl], [%acc2, %kxl]",
            "  %ix = add i64 %ix0, %kx",
            "  %ixin = icmp ult i64 %ix, %W",
            "  %ixc = select i1 %ixin, i64 %ix, i64 0",
            "  %pix = add i64 %rowo, %ixc",
            "  %po = mul i64 %pix, 4",
            "  %pp = getelementptr float, ptr %xb, i64 %po",
            f"  %val = load {v4}, ptr %pp, align 4",
            "  %in = and i1 %iyin, %ixin",
            f"  %vs = select i1 %in, {v4} %val, {v4} {ninf}",
            f"  %gt = fcmp ugt {v4} %vs, %acc1",  # v > acc, or either NaN
            f"  %accnan = fcmp uno {v4} %acc1, %acc1",
            "  %keep = and <4 x i1> %accnan, <i1 true, i1 true, i1 true, i1 true>",
            "  %notkeep = xor <4 x i1> %keep, <i1 true, i1 true, i1 true, i1 true>",
            "  %take = and <4 x i1> %gt, %notkeep",
            f"  %acc2 = select <4 x i1> %take, {v4} %vs, {v4} %acc1",
            "  %kxn = add i64 %kx, 1",
            "  %kxm = icmp ult i64 %kxn, %kw",
            "  br i1 %kxm, label %kxl, label %kxe",
            "kxe:",
            "  %kyn = add i64 %ky, 1",
            "  %kym = icmp ult i64 %kyn, %kh",
            "  br i1 %kym, label %kyl, label %kye",
            "kye:",
            "  %opix = mul i64 %oy, %OW",
            "  %opix2 = add i64 %opix, %ox",
            "  %oo = mul i64 %opix2, 4",
            "  %op = getelementptr float, ptr %yb, i64 %oo",
            f"  store {v4} %acc2, ptr %op, align 4",
            "  %oxn = add i64 %ox, 1",
            "  %oxm = icmp ult i64 %oxn, %OW",
            "  br i1 %oxm, label %oxl, label %oye",
            "oye:",
            "  %oyn = add i64 %oy, 1",
            "  %oym = icmp ult i64 %oyn, %OH",
            "  br i1 %oym, label %oyl, label %pe",
            "pe:",
            "  %pn = add i64 %p, 1",
            "  %pm = icmp ult i64 %pn, %planes",
            "  br i1 %pm, label %pl, label %done",
            "done:",
            "  ret void",
            "}"]


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
    fn, keep = _STATE["pool"], (x, y)

    def run() -> None:
        if keep:
            fn(*args)
    return run


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
        packed = np.zeros((t, p, k, nr), dtype=np.float32)
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
        fn, keep = self.fn, (a, out, self)

        def run() -> None:
            if args is not None and keep:
                fn(*args)
        return run

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
        fn, keep = self.fn, (base, out, self)

        def run() -> None:
            if keep:
                fn(*args)
        return run

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
        b = _address(self.panels) + 4 * (first * self.panels.shape[3] + start * self.panels[0].size)
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
                n, add, lo, hi, a.shape[0], a.strides[0] // 4, self.panels[0].size, out.strides[0] // 4,
                _row_block(out.strides[1], n), 1, rows, 0)
