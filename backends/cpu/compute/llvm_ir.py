"""The LLVM IR text of the compiled CPU kernels (``packed_gemm``): the GEMM micro-kernel and max pooling.

Generated as text per vector width and tile height, parsed and compiled by llvmlite (``packed_gemm._jit``); the text
is also the on-disk cache's key, so any change here builds a new shared object.
"""

from __future__ import annotations

from .llvm_store import store_nc4_ir
from .llvm_winograd import winograd_ir

# Every tile prefetches the weights' panel rows this many k steps ahead (into L1; past the panel's end that is the
# next panel, which follows in memory). The weight-heavy GEMMs (few rows: deep Winograd layers, a classifier's GEMV)
# stream their weights from DRAM once per run, and one core's hardware prefetching left them at ~10 GB/s: ResNet-18's
# 512ch 7² band GEMM cold 0.74 -> 0.69 ms, MobileNetV2's [1, 1280] x [1280, 1000] GEMV 0.18-0.22 -> 0.15-0.16 ms.
# Whole models, sessions with and without (paired, 60 rounds): in the whole tiles, ResNet-18 0.987 at 2 threads and
# 0.988 at 1, MobileNetV2 0.97-0.99, BERT-4L and the UNet block within noise; then also in the remainder and one-row
# tiles: ResNet-18 0.977, MobileNetV2 0.981. 32 and 128 rows ahead measured the same as 64.
B_PREFETCH_ROWS = 64
B_PREFETCH_LOCALITY = 3


def kernels_ir(vw: int, mr: int) -> str:
    """The whole module: ``packed_gemm`` for vectors of ``vw`` floats and ``mr``-row tiles, ``max_pool4`` and
    ``depthwise3x3`` (vectors of ``vw`` channels)."""
    return "\n".join([gemm_ir(vw, mr), *max_pool_ir(), *depthwise3x3_ir(vw), *store_nc4_ir(), *winograd_ir(vw)])


def depthwise3x3_ir(vw: int) -> list[str]:
    """``depthwise3x3(X, pstride, rstride, W, B, O, orow, OW, Cp, sh, dh, r0, r1, p1, c1, p2, c2, lo, hi, images,
    ximg, oimg)``: a 3 x 3 depthwise convolution over NHWC column phases (a MobileNet chain's padded input: tap
    column kx of output pixel ox is pixel ox of phase [0, p1, p2][kx] from float [0, c1, c2][kx] of the row), output
    rows r0..r1 into NHWC ``O``; per block of ``vw`` channels the nine weight vectors and the bias stay in registers
    while the row's pixels stream past: nine loads and nine FMAs per output vector, clamped to [lo, hi] (NaN passes)
    and stored once. Cp a multiple of ``vw``."""
    v = f"<{vw} x float>"
    splat = f"<{vw} x i32> zeroinitializer"
    lines = ["define void @depthwise3x3(ptr noalias %X, i64 %pstride, i64 %rstride, ptr noalias %W, ptr noalias %B,"
             " ptr noalias %O, i64 %orow, i64 %OW, i64 %Cp, i64 %sh, i64 %dh, i64 %r0, i64 %r1, i64 %p1, i64 %c1,"
             " i64 %p2, i64 %c2, float %lo, float %hi, i64 %images, i64 %ximg, i64 %oimg) {",
             "entry:",
             f"  %lo1 = insertelement {v} poison, float %lo, i32 0",
             f"  %los = shufflevector {v} %lo1, {v} poison, {splat}",
             f"  %hi1 = insertelement {v} poison, float %hi, i32 0",
             f"  %his = shufflevector {v} %hi1, {v} poison, {splat}",
             "  %ph1 = mul i64 %p1, %pstride",
             "  %ph2 = mul i64 %p2, %pstride",
             "  %off1 = add i64 %ph1, %c1",
             "  %off2 = add i64 %ph2, %c2",
             "  br label %bl",
             "bl:",
             "  %b = phi i64 [0, %entry], [%bn, %be]",
             "  %xo = mul i64 %b, %ximg",
             "  %oo = mul i64 %b, %oimg",
             "  br label %il",
             "il:",
             "  %i = phi i64 [%r0, %bl], [%in, %ie]",
             "  %yb = mul i64 %i, %sh",
             "  %orowo = mul i64 %i, %orow",
             "  %orowb = add i64 %orowo, %oo",
             "  br label %cl",
             "cl:",
             "  %c = phi i64 [0, %il], [%cn, %ce]"]
    for t in range(9):
        ky, kx = divmod(t, 3)
        lines += [f"  %wo{t}a = mul i64 %Cp, {t}",
                  f"  %wo{t} = add i64 %wo{t}a, %c",
                  f"  %wp{t} = getelementptr float, ptr %W, i64 %wo{t}",
                  f"  %w{t} = load {v}, ptr %wp{t}, align 4",
                  f"  %ky{t} = mul i64 %dh, {ky}",
                  f"  %y{t} = add i64 %yb, %ky{t}",
                  f"  %yo{t} = mul i64 %y{t}, %rstride",
                  f"  %xb{t}a = add i64 %yo{t}, %xo",
                  f"  %xb{t}b = add i64 %xb{t}a, %c",
                  f"  %xb{t} = add i64 %xb{t}b, {['0', '%off1', '%off2'][kx]}"]
    lines += ["  %bp = getelementptr float, ptr %B, i64 %c",
              f"  %bias = load {v}, ptr %bp, align 4",
              "  %ob = add i64 %orowb, %c",
              "  br label %xl",
              "xl:",
              "  %ox = phi i64 [0, %cl], [%oxn, %xl]",
              "  %px = mul i64 %ox, %Cp"]
    acc = "%bias"
    for t in range(9):
        lines += [f"  %a{t} = add i64 %xb{t}, %px",
                  f"  %ap{t} = getelementptr float, ptr %X, i64 %a{t}",
                  f"  %x{t} = load {v}, ptr %ap{t}, align 4",
                  f"  %s{t} = call {v} @llvm.fma.v{vw}f32({v} %x{t}, {v} %w{t}, {v} {acc})"]
        acc = f"%s{t}"
    lines += [f"  %below = fcmp olt {v} %s8, %los",
              f"  %q1 = select <{vw} x i1> %below, {v} %los, {v} %s8",
              f"  %above = fcmp ogt {v} %q1, %his",
              f"  %q2 = select <{vw} x i1> %above, {v} %his, {v} %q1",
              "  %oa = add i64 %ob, %px",
              "  %op = getelementptr float, ptr %O, i64 %oa",
              f"  store {v} %q2, ptr %op, align 4",
              "  %oxn = add i64 %ox, 1",
              "  %oxm = icmp ult i64 %oxn, %OW",
              "  br i1 %oxm, label %xl, label %ce",
              "ce:",
              f"  %cn = add i64 %c, {vw}",
              "  %cm = icmp ult i64 %cn, %Cp",
              "  br i1 %cm, label %cl, label %ie",
              "ie:",
              "  %in = add i64 %i, 1",
              "  %im = icmp ult i64 %in, %r1",
              "  br i1 %im, label %il, label %be",
              "be:",
              "  %bn = add i64 %b, 1",
              "  %bm = icmp ult i64 %bn, %images",
              "  br i1 %bm, label %bl, label %done",
              "done:",
              "  ret void",
              "}"]
    return lines


def gemm_ir(vw: int, mr: int) -> str:
    """The kernel as LLVM IR text (see the module docstring), for vectors of ``vw`` floats and ``mr``-row tiles.

    ``packed_gemm(A, lda, B, panel, C, ldc, M, K, N, bias, lo, hi, batch, a_step, b_step, c_step, mc, nseg, seglen,
    segstride)``: element strides; B's panel p starts at ``B + p * panel`` (a caller may run over the first K rows
    of a packed matrix with more, or from a row offset); product t of the batch reads ``A + t * a_step`` etc.; rows
    in blocks of ``mc``; a row of A is ``nseg`` runs of ``seglen`` contiguous floats, ``segstride`` apart (K =
    nseg x seglen; a plain GEMM: one run of K)."""
    v, nr = f"<{vw} x float>", 2 * vw
    splat = f"<{vw} x i32> zeroinitializer"
    lines = [f"declare {v} @llvm.fma.v{vw}f32({v}, {v}, {v})",
             "declare void @llvm.prefetch.p0(ptr, i32, i32, i32)",
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
    # a panel with at most vw valid columns (N % 2vw in 1..vw: MobileNetV2's 16-channel project, the 144-channel
    # expand's last panel) runs tiles of one vector per row (suffix "h"): half the FMAs of the full-width tiles
    lines += [f"  %halfw = icmp ule i64 %rem, {vw}", "  br i1 %halfw, label %i_looph, label %i_loop"]
    for sfx, halves in (("", 2), ("h", 1)):
        lines += [f"i_loop{sfx}:",
                  f"  %i{sfx} = phi i64 [%i0, %p_loop], [%inext_m{sfx}, %store_m{sfx}], [%inext_r{sfx}, %store_r{sfx}],"
                  f" [%inext_1{sfx}, %store_1{sfx}]",
                  f"  %iend{sfx} = add i64 %i{sfx}, {mr}",
                  f"  %fits{sfx} = icmp ule i64 %iend{sfx}, %Mb",
                  f"  br i1 %fits{sfx}, label %tile_m{sfx}, label %row_check{sfx}",
                  f"row_check{sfx}:",
                  f"  %more{sfx} = icmp ult i64 %i{sfx}, %Mb",
                  f"  br i1 %more{sfx}, label %rest{sfx}, label %p_end",
                  f"rest{sfx}:",
                  f"  %left_rows{sfx} = sub i64 %Mb, %i{sfx}",
                  f"  %many{sfx} = icmp uge i64 %left_rows{sfx}, {mr // 2}",
                  f"  br i1 %many{sfx}, label %tile_r{sfx}, label %tile_1{sfx}"]
        # the rows past the last whole tile: at least mr / 2 of them, one more mr-row tile whose missing rows repeat the
        # last row and store nothing (row-validity in the store mask); fewer, one-row tiles (each ~1/4 of a whole
        # tile's time: an FMA latency chain of two accumulators)
        for tag, rows, partial in ((f"m{sfx}", mr, False), (f"r{sfx}", mr, True), (f"1{sfx}", 1, False)):
            lines += [f"tile_{tag}:"] + ([f"  %last_{tag} = sub i64 %Mb, 1"] if partial else [])
            for r in range(rows):
                if partial:
                    lines += [f"  %raw_{tag}{r} = add i64 %i{sfx}, {r}",
                              f"  %rv_{tag}{r} = icmp ult i64 %raw_{tag}{r}, %Mb",
                              f"  %row_{tag}{r} = select i1 %rv_{tag}{r}, i64 %raw_{tag}{r}, i64 %last_{tag}"]
                else:
                    lines.append(f"  %row_{tag}{r} = add i64 %i{sfx}, {r}")
                lines += [f"  %aoff_{tag}{r} = mul i64 %row_{tag}{r}, %lda",
                          f"  %ap_{tag}{r} = getelementptr float, ptr %A, i64 %aoff_{tag}{r}"]
            # k in segments (an implicit im2col: A's row is nseg runs of seglen contiguous floats, segstride apart; a
            # plain GEMM is one segment of K): the accumulators live across both loops
            lines += [f"  br label %sl_{tag}", f"sl_{tag}:",
                      f"  %s_{tag} = phi i64 [0, %tile_{tag}], [%sn_{tag}, %se_{tag}]"]
            lines += [f"  %sacc_{tag}{r}_{h} = phi {v} [%bias{h}, %tile_{tag}], [%fma_{tag}{r}_{h}, %se_{tag}]"
                      for r in range(rows) for h in range(halves)]
            lines += [f"  %sbase_{tag} = mul i64 %s_{tag}, %segstride",
                      f"  %kb0_{tag} = mul i64 %s_{tag}, %seglen",
                      f"  br label %kl_{tag}", f"kl_{tag}:",
                      f"  %k_{tag} = phi i64 [0, %sl_{tag}], [%kn_{tag}, %kl_{tag}]"]
            lines += [f"  %acc_{tag}{r}_{h} = phi {v} [%sacc_{tag}{r}_{h}, %sl_{tag}], [%fma_{tag}{r}_{h}, %kl_{tag}]"
                      for r in range(rows) for h in range(halves)]
            lines += [f"  %kg_{tag} = add i64 %kb0_{tag}, %k_{tag}",
                      f"  %bk_{tag} = mul i64 %kg_{tag}, {nr}",
                      f"  %ak_{tag} = add i64 %sbase_{tag}, %k_{tag}"]
            for h in range(halves):
                lines += [f"  %bkh_{tag}{h} = add i64 %bk_{tag}, {h * vw}",
                          f"  %bptr_{tag}{h} = getelementptr float, ptr %bp, i64 %bkh_{tag}{h}",
                          f"  %b_{tag}{h} = load {v}, ptr %bptr_{tag}{h}, align 4"]
                if B_PREFETCH_ROWS:
                    lines += [f"  %pf_{tag}{h} = getelementptr float, ptr %bptr_{tag}{h}, i64 {B_PREFETCH_ROWS * nr}",
                              f"  call void @llvm.prefetch.p0(ptr %pf_{tag}{h}, i32 0, i32 {B_PREFETCH_LOCALITY},"
                              " i32 1)"]
            for r in range(rows):
                lines += [f"  %apk_{tag}{r} = getelementptr float, ptr %ap_{tag}{r}, i64 %ak_{tag}",
                          f"  %a_{tag}{r} = load float, ptr %apk_{tag}{r}, align 4",
                          f"  %as1_{tag}{r} = insertelement {v} poison, float %a_{tag}{r}, i32 0",
                          f"  %as_{tag}{r} = shufflevector {v} %as1_{tag}{r}, {v} poison, {splat}"]
                lines += [f"  %fma_{tag}{r}_{h} = call {v} @llvm.fma.v{vw}f32({v} %as_{tag}{r}, {v} %b_{tag}{h},"
                          f" {v} %acc_{tag}{r}_{h})" for h in range(halves)]
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
                if partial:
                    lines += [f"  %rva_{tag}{r} = insertelement <{vw} x i1> poison, i1 %rv_{tag}{r}, i32 0",
                              f"  %rvs_{tag}{r} = shufflevector <{vw} x i1> %rva_{tag}{r}, <{vw} x i1> poison, {splat}"]
                for h in range(halves):
                    x = f"{tag}{r}_{h}"
                    if partial:
                        lines.append(f"  %mk_{x} = and <{vw} x i1> %mask{h}, %rvs_{tag}{r}")
                    lines += [f"  %below_{x} = fcmp olt {v} %fma_{x}, %los",  # compare-and-select: NaN stays NaN
                              f"  %c1_{x} = select <{vw} x i1> %below_{x}, {v} %los, {v} %fma_{x}",
                              f"  %above_{x} = fcmp ogt {v} %c1_{x}, %his",
                              f"  %c2_{x} = select <{vw} x i1> %above_{x}, {v} %his, {v} %c1_{x}",
                              f"  %co_{x} = add i64 %coff_{tag}{r}, %cc{h}",
                              f"  %cp_{x} = getelementptr float, ptr %C, i64 %co_{x}",
                              f"  call void @llvm.masked.store.v{vw}f32.p0({v} %c2_{x}, ptr %cp_{x}, i32 4,"
                              f" <{vw} x i1> {f'%mk_{x}' if partial else f'%mask{h}'})"]
            lines += [f"  %inext_{tag} = add i64 %i{sfx}, {rows}", f"  br label %i_loop{sfx}"]
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
    return "\n".join(lines)


def max_pool_ir() -> list[str]:
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
            "  %notkeep = xor <4 x i1> %accnan, <i1 true, i1 true, i1 true, i1 true>",  # a NaN acc stays
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
