"""LLVM IR text of the Winograd transforms (part of ``llvm_ir.kernels_ir``'s module, bound in ``winograd_conv``).

Per tile and block of ``vw`` channels, in registers, the transform matrices' entries as constants (zeros skipped,
±1 as adds): ``wino_in_U_K`` reads the tile's alpha x alpha pixels straight from the zero-bordered NHWC input and
stores ``V = Bᵀ X B`` into the alpha² position planes the GEMM reads; ``wino_out_U_K`` reads a tile's alpha²
GEMM results and stores ``Y = Aᵀ M A`` plus the bias, clamped (the activation; compare-and-select, NaN passes), into
the u² output planes, which may be M's own memory (all of a tile's loads come before its stores). numpy did each
transform as a gather and two batched matmuls over scratch, and the bias and activation as passes of their own.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

from .winograd import default_interp, winograd_matrices

UNITS = ((2, 3), (4, 3), (6, 3), (2, 5), (4, 5), (2, 7))  # (u, k) with alpha = u + k - 1 in the strategy's set
IN_ARGS = "ptr %XP, i64 %rs, i64 %cp, ptr %V, i64 %ps, i64 %rows, i64 %tw"
OUT_ARGS = "ptr %M, i64 %mps, i64 %mts, ptr %Y, i64 %yps, i64 %yts, i64 %tiles, i64 %ch, ptr %B, float %lo, float %hi"
STORE_ARGS = ("ptr %M, i64 %mps, i64 %mts, ptr %B, float %lo, float %hi, ptr %O, i64 %ors, i64 %ops, i64 %ocs,"
              " ptr %R, i64 %rrs, i64 %rps, i64 %rcs, float %rlo, float %rhi, i64 %trows, i64 %tw, i64 %orows,"
              " i64 %ocols, i64 %ch")


def winograd_ir(vw: int) -> list[str]:
    """Both transforms for every (u, k) of UNITS, for vectors of ``vw`` floats (channel counts a multiple of it);
    the module's GEMM declares ``llvm.fma`` for that width."""
    lines: list[str] = []
    for u, k in UNITS:
        a = u + k - 1
        mat_a, mat_b, _ = winograd_matrices(u, k, default_interp(a))
        lines += _transform_in(vw, u, k, mat_b.T) + _transform_out(vw, u, k, mat_a.T) + _transform_store(vw, u, k,
                                                                                                           mat_a.T)
    return lines


class _Emitter:
    """Straight-line SSA for linear combinations of ``<vw x float>`` values with constant coefficients."""

    def __init__(self, vw: int, lines: list[str]) -> None:
        self.v, self.vw, self.lines, self.n, self.consts = f"<{vw} x float>", vw, lines, 0, {}
        self.entry = len(lines)  # where the constants go: the function's entry block, before anything else

    def name(self) -> str:
        self.n += 1
        return f"%t{self.n}"

    def const(self, c: float) -> str:
        """A splat of ``c`` (exactly a float32), made once at the function's entry (``consts``)."""
        if c not in self.consts:
            bits = struct.unpack("<Q", struct.pack("<d", float(np.float32(c))))[0]
            self.consts[c] = f"%k{len(self.consts)}"
            self.lines.insert(self.entry, f"  {self.consts[c]} = shufflevector {self.v} <float 0x{bits:016X}"
                                          f"{', float poison' * (self.vw - 1)}>, {self.v} poison,"
                                          f" <{self.vw} x i32> zeroinitializer")
            self.entry += 1
        return self.consts[c]

    def combo(self, coeffs: np.ndarray, values: list[str]) -> str:
        acc = None
        for c, x in zip(coeffs.tolist(), values, strict=True):
            if c == 0:
                continue
            if acc is None and c == 1:
                acc = x
                continue
            out = self.name()
            if acc is None:
                op = f"fneg {self.v} {x}" if c == -1 else f"fmul {self.v} {self.const(c)}, {x}"
                self.lines.append(f"  {out} = {op}")
            elif c in (1, -1):
                self.lines.append(f"  {out} = {'fadd' if c == 1 else 'fsub'} {self.v} {acc}, {x}")
            else:
                self.lines.append(f"  {out} = call {self.v} @llvm.fma.v{self.vw}f32({self.v} {self.const(c)},"
                                  f" {self.v} {x}, {self.v} {acc})")
            acc = out
        assert acc is not None
        return acc

    def sandwich(self, mat: np.ndarray, x: list[list[str]]) -> list[list[str]]:
        """``mat · x · matᵀ`` for ``mat`` [p, a] and ``x`` a x a names: p x p names."""
        p, a = mat.shape
        rows = [[self.combo(mat[i], [x[kk][j] for kk in range(a)]) for j in range(a)] for i in range(p)]
        return [[self.combo(mat[j], rows[i]) for j in range(p)] for i in range(p)]


def _loops(head: list[str], outer: str, outer_end: str, inner_step: str, inner_end: str) -> tuple[list[str], ...]:
    """Two nested loops (``outer`` 0..outer_end, then ``c`` 0..inner_end by inner_step) around a body."""
    top = [*head, "  br label %ol", "ol:", f"  %{outer} = phi i64 [0, %entry], [%{outer}n, %ce]", "  br label %cl",
           "cl:", "  %c = phi i64 [0, %ol], [%cn, %cl]"]
    tail = [f"  %cn = add i64 %c, {inner_step}", f"  %cm = icmp ult i64 %cn, {inner_end}",
            "  br i1 %cm, label %cl, label %ce", "ce:", f"  %{outer}n = add i64 %{outer}, 1",
            f"  %om = icmp ult i64 %{outer}n, {outer_end}", "  br i1 %om, label %ol, label %done", "done:",
            "  ret void", "}"]
    return top, tail


def _bias_clamp(v: str, vw: int, q: int, value: str) -> list[str]:
    """``%d{q}`` = ``value`` + the bias vector, clamped to [%los, %his] (compare-and-select: NaN passes)."""
    return [f"  %b{q} = fadd {v} {value}, %bias",
            f"  %l{q} = fcmp olt {v} %b{q}, %los", f"  %c{q} = select <{vw} x i1> %l{q}, {v} %los, {v} %b{q}",
            f"  %h{q} = fcmp ogt {v} %c{q}, %his", f"  %d{q} = select <{vw} x i1> %h{q}, {v} %his, {v} %c{q}"]


def _load_grid(lines: list[str], v: str, base: str, a: int, offsets: Callable[[int, int], list[str]]
               ) -> list[list[str]]:
    """Load a x a vectors, (i, j) at ``base`` plus the sum of the i64 values ``offsets(i, j)``; their names."""
    grid = []
    for i in range(a):
        row = []
        for j in range(a):
            acc, *rest = offsets(i, j)
            for n, other in enumerate(rest):
                lines.append(f"  %ld{i}_{j}_{n} = add i64 {acc}, {other}")
                acc = f"%ld{i}_{j}_{n}"
            lines += [f"  %la{i}_{j} = getelementptr float, ptr {base}, i64 {acc}",
                      f"  %lv{i}_{j} = load {v}, ptr %la{i}_{j}, align 4"]
            row.append(f"%lv{i}_{j}")
        grid.append(row)
    return grid


def _transform_in(vw: int, u: int, k: int, bt: np.ndarray) -> list[str]:
    """``wino_in_U_K(XP, rs, cp, V, ps, rows, tw)``: tiles rows x tw, tile (r, t)'s pixel (i, j) at ``XP + (r u +
    i) rs + (t u + j) cp`` (cp channels, a multiple of vw); V's position q plane at ``V + q ps``, tile r tw + t."""
    a, v = u + k - 1, f"<{vw} x float>"
    lines = [f"define void @wino_in_{u}_{k}({IN_ARGS}) {{", "entry:"]
    emit = _Emitter(vw, lines)
    head = [f"  %rk{i} = mul i64 %rs, {i}" for i in range(a)] + [f"  %cj{j} = mul i64 %cp, {j}" for j in range(a)]
    head += [f"  %pq{q} = mul i64 %ps, {q}" for q in range(a * a)]
    head += ["  %tiles = mul i64 %rows, %tw"]
    top, tail = _loops(head, "g", "%tiles", str(vw), "%cp")
    lines += top
    lines += ["  %r = udiv i64 %g, %tw", "  %t = urem i64 %g, %tw", f"  %ry = mul i64 %r, {u}",
              "  %rb = mul i64 %ry, %rs", f"  %tx = mul i64 %t, {u}", "  %tb = mul i64 %tx, %cp",
              "  %b0 = add i64 %rb, %tb", "  %b1 = add i64 %b0, %c", "  %gv = mul i64 %g, %cp",
              "  %vo = add i64 %gv, %c"]
    z = emit.sandwich(bt, _load_grid(lines, v, "%XP", a, lambda i, j: ["%b1", f"%rk{i}", f"%cj{j}"]))
    for i in range(a):
        for j in range(a):
            q = i * a + j
            lines += [f"  %so{q} = add i64 %vo, %pq{q}", f"  %sp{q} = getelementptr float, ptr %V, i64 %so{q}",
                      f"  store {v} {z[i][j]}, ptr %sp{q}, align 4"]
    return lines + tail


def _transform_out(vw: int, u: int, k: int, at: np.ndarray) -> list[str]:
    """``wino_out_U_K(M, mps, mts, Y, yps, yts, tiles, ch, B, lo, hi)``: per tile t and channel block, the alpha² values
    at ``M + q mps + t mts``, into ``Y + q yps + t yts`` (q < u²) plus ``B`` (ch floats), clamped to [lo, hi]."""
    a, v = u + k - 1, f"<{vw} x float>"
    lines = [f"define void @wino_out_{u}_{k}({OUT_ARGS}) {{", "entry:"]
    emit = _Emitter(vw, lines)
    head = [f"  %mq{q} = mul i64 %mps, {q}" for q in range(a * a)] + [f"  %yq{q} = mul i64 %yps, {q}"
                                                                      for q in range(u * u)]
    for name in ("lo", "hi"):
        head += [f"  %{name}1 = insertelement {v} poison, float %{name}, i32 0",
                 f"  %{name}s = shufflevector {v} %{name}1, {v} poison, <{vw} x i32> zeroinitializer"]
    top, tail = _loops(head, "t", "%tiles", str(vw), "%ch")
    lines += top
    lines += ["  %mt = mul i64 %t, %mts", "  %mo = add i64 %mt, %c", "  %yt = mul i64 %t, %yts",
              "  %yo = add i64 %yt, %c", "  %bp = getelementptr float, ptr %B, i64 %c",
              f"  %bias = load {v}, ptr %bp, align 4"]
    y = emit.sandwich(at, _load_grid(lines, v, "%M", a, lambda i, j: ["%mo", f"%mq{i * a + j}"]))
    for i in range(u):
        for j in range(u):
            q = i * u + j
            lines += [*_bias_clamp(v, vw, q, y[i][j]),
                      f"  %yo{q} = add i64 %yo, %yq{q}", f"  %ya{q} = getelementptr float, ptr %Y, i64 %yo{q}",
                      f"  store {v} %d{q}, ptr %ya{q}, align 4"]
    return lines + tail


def _transform_store(vw: int, u: int, k: int, at: np.ndarray) -> list[str]:
    """``wino_store_U_K``: the output transform (as ``wino_out``) of trows x tw tiles stored straight into the
    output: pixel (row, col), channel c at ``O + row ors + col ops + (c / 4) ocs + c % 4`` (NC4HW4: ops 4, ocs the
    plane; NHWC: ops the pixel, ocs 4), rows < orows and columns < ocols only (the tiles overhanging the edge), plus
    the residual ``R`` (its own strides) where not null, clamped to [rlo, rhi]."""
    a, v, v4 = u + k - 1, f"<{vw} x float>", "<4 x float>"
    lines = [f"define void @wino_store_{u}_{k}({STORE_ARGS}) {{", "entry:"]
    emit = _Emitter(vw, lines)
    head = [f"  %mq{q} = mul i64 %mps, {q}" for q in range(a * a)]
    for name in ("lo", "hi"):
        head += [f"  %{name}1 = insertelement {v} poison, float %{name}, i32 0",
                 f"  %{name}s = shufflevector {v} %{name}1, {v} poison, <{vw} x i32> zeroinitializer"]
    for name in ("rlo", "rhi"):
        head += [f"  %{name}1 = insertelement {v4} poison, float %{name}, i32 0",
                 f"  %{name}s = shufflevector {v4} %{name}1, {v4} poison, <4 x i32> zeroinitializer"]
    head += ["  %hasr = icmp ne ptr %R, null", "  %tiles = mul i64 %trows, %tw"]
    top, tail = _loops(head, "t", "%tiles", str(vw), "%ch")
    lines += top
    lines += ["  %mt = mul i64 %t, %mts", "  %mo = add i64 %mt, %c", "  %bp = getelementptr float, ptr %B, i64 %c",
              f"  %bias = load {v}, ptr %bp, align 4", "  %tr = udiv i64 %t, %tw", "  %tc = urem i64 %t, %tw",
              f"  %trow = mul i64 %tr, {u}", f"  %tcol = mul i64 %tc, {u}", "  %cb = udiv i64 %c, 4",
              "  %oc = mul i64 %cb, %ocs", "  %rc = mul i64 %cb, %rcs"]
    y = emit.sandwich(at, _load_grid(lines, v, "%M", a, lambda i, j: ["%mo", f"%mq{i * a + j}"]))
    for i in range(u):
        lines += [f"  %row{i} = add i64 %trow, {i}", f"  %rin{i} = icmp ult i64 %row{i}, %orows",
                  f"  %orow{i} = mul i64 %row{i}, %ors", f"  %rrow{i} = mul i64 %row{i}, %rrs"]
        for j in range(u):
            q = i * u + j
            lines += [*_bias_clamp(v, vw, q, y[i][j]),
                      f"  %col{q} = add i64 %tcol, {j}", f"  %cin{q} = icmp ult i64 %col{q}, %ocols",
                      f"  %in{q} = and i1 %rin{i}, %cin{q}", f"  br i1 %in{q}, label %st{q}, label %nx{q}", f"st{q}:",
                      f"  %ocol{q} = mul i64 %col{q}, %ops", f"  %op{q} = add i64 %orow{i}, %ocol{q}",
                      f"  %opc{q} = add i64 %op{q}, %oc", f"  %rcol{q} = mul i64 %col{q}, %rps",
                      f"  %rp{q} = add i64 %rrow{i}, %rcol{q}", f"  %rpc{q} = add i64 %rp{q}, %rc"]
            block = f"%st{q}"  # the block the stores continue in
            for g in range(vw // 4):
                x = f"{q}_{g}"
                idx = ", ".join(f"i32 {4 * g + e}" for e in range(4))
                lines += [f"  %s{x} = shufflevector {v} %d{q}, {v} poison, <4 x i32> <{idx}>",
                          f"  %go{x} = mul i64 %ocs, {g}", f"  %oa{x} = add i64 %opc{q}, %go{x}",
                          f"  %optr{x} = getelementptr float, ptr %O, i64 %oa{x}",
                          f"  br i1 %hasr, label %ra{x}, label %rn{x}", f"ra{x}:",
                          f"  %gr{x} = mul i64 %rcs, {g}", f"  %rq{x} = add i64 %rpc{q}, %gr{x}",
                          f"  %rptr{x} = getelementptr float, ptr %R, i64 %rq{x}",
                          f"  %rv{x} = load {v4}, ptr %rptr{x}, align 4", f"  %sr{x} = fadd {v4} %s{x}, %rv{x}",
                          f"  %rl{x} = fcmp olt {v4} %sr{x}, %rlos",
                          f"  %rc1{x} = select <4 x i1> %rl{x}, {v4} %rlos, {v4} %sr{x}",
                          f"  %rh{x} = fcmp ogt {v4} %rc1{x}, %rhis",
                          f"  %rc2{x} = select <4 x i1> %rh{x}, {v4} %rhis, {v4} %rc1{x}", f"  br label %rn{x}",
                          f"rn{x}:", f"  %w{x} = phi {v4} [%s{x}, {block}], [%rc2{x}, %ra{x}]",
                          f"  store {v4} %w{x}, ptr %optr{x}, align 4"]
                block = f"%rn{x}"
            lines += [f"  br label %nx{q}", f"nx{q}:"]
    # the inner loop's body ends in block %nx{last}, not %cl: its phi must name that block as the latch
    lines += tail
    last = f"%nx{u * u - 1}"
    return [line.replace("[%cn, %cl]", f"[%cn, {last}]") for line in lines]
