"""LLVM IR text of the compiled NC4HW4 store (part of ``llvm_ir.kernels_ir``'s module, bound by
``ir_binds.bind_store_nc4``)."""

from __future__ import annotations


def store_nc4_ir() -> list[str]:
    """``store_nc4(Y, ldy, Y2, O, oplane, R, rplane, pixels, blocks, images, yimg, oimg, rimg, lo, hi, rlo, rhi)``:
    NHWC rows ``Y`` (pixel p's channel block c at ``Y + p * ldy + 4c``) into NC4HW4 planes ``O`` (``O + c * oplane +
    4p``), per image: plus ``Y2`` (the same layout as Y) where not null, clamped to [lo, hi], then plus the NC4HW4
    ``R`` (a residual) where not null and clamped to [rlo, rhi]; one pass (numpy: a copy, an add, a clip each).
    The clamps are compare-and-select: NaN passes."""
    v4 = "<4 x float>"
    splat = "<4 x i32> zeroinitializer"

    def clamp(x: str, lo: str, hi: str, tag: str) -> list[str]:
        return [f"  %lt{tag} = fcmp olt {v4} {x}, {lo}", f"  %c{tag} = select <4 x i1> %lt{tag}, {v4} {lo}, {v4} {x}",
                f"  %gt{tag} = fcmp ogt {v4} %c{tag}, {hi}",
                f"  %d{tag} = select <4 x i1> %gt{tag}, {v4} {hi}, {v4} %c{tag}"]

    lines = ["define void @store_nc4(ptr noalias %Y, i64 %ldy, ptr noalias %Y2, ptr noalias %O, i64 %oplane,"
             " ptr noalias %R, i64 %rplane, i64 %pixels, i64 %blocks, i64 %images, i64 %yimg, i64 %oimg, i64 %rimg,"
             " float %lo, float %hi, float %rlo, float %rhi) {",
             "entry:",
             "  %hasy2 = icmp ne ptr %Y2, null",
             "  %hasr = icmp ne ptr %R, null"]
    for name in ("lo", "hi", "rlo", "rhi"):
        lines += [f"  %{name}1 = insertelement {v4} poison, float %{name}, i32 0",
                  f"  %{name}s = shufflevector {v4} %{name}1, {v4} poison, {splat}"]
    lines += ["  br label %il",
              "il:",
              "  %i = phi i64 [0, %entry], [%in, %ce]",
              "  %yio = mul i64 %i, %yimg", "  %yi = getelementptr float, ptr %Y, i64 %yio",
              "  %y2i = getelementptr float, ptr %Y2, i64 %yio",
              "  %oio = mul i64 %i, %oimg", "  %oi = getelementptr float, ptr %O, i64 %oio",
              "  %rio = mul i64 %i, %rimg", "  %ri = getelementptr float, ptr %R, i64 %rio",
              "  br label %cl",
              "cl:",
              "  %c = phi i64 [0, %il], [%cn, %pe]",
              "  %yco = mul i64 %c, 4", "  %yc = getelementptr float, ptr %yi, i64 %yco",
              "  %y2c = getelementptr float, ptr %y2i, i64 %yco",
              "  %oco = mul i64 %c, %oplane", "  %oc = getelementptr float, ptr %oi, i64 %oco",
              "  %rco = mul i64 %c, %rplane", "  %rc = getelementptr float, ptr %ri, i64 %rco",
              "  br label %pl",
              "pl:",
              "  %p = phi i64 [0, %cl], [%pn, %st]",
              "  %yo = mul i64 %p, %ldy", "  %yp = getelementptr float, ptr %yc, i64 %yo",
              f"  %v0 = load {v4}, ptr %yp, align 4",
              "  br i1 %hasy2, label %a2, label %m2",
              "a2:",
              "  %y2p = getelementptr float, ptr %y2c, i64 %yo",
              f"  %w = load {v4}, ptr %y2p, align 4",
              f"  %v1 = fadd {v4} %v0, %w",
              "  br label %m2",
              "m2:",
              f"  %v = phi {v4} [%v0, %pl], [%v1, %a2]",
              *clamp("%v", "%los", "%his", "1"),
              "  %po = mul i64 %p, 4",
              "  br i1 %hasr, label %ar, label %st",
              "ar:",
              "  %rp = getelementptr float, ptr %rc, i64 %po",
              f"  %r = load {v4}, ptr %rp, align 4",
              f"  %s = fadd {v4} %d1, %r",
              *clamp("%s", "%rlos", "%rhis", "2"),
              "  br label %st",
              "st:",
              f"  %out = phi {v4} [%d1, %m2], [%d2, %ar]",
              "  %op = getelementptr float, ptr %oc, i64 %po",
              f"  store {v4} %out, ptr %op, align 4",
              "  %pn = add i64 %p, 1", "  %pm = icmp ult i64 %pn, %pixels",
              "  br i1 %pm, label %pl, label %pe",
              "pe:",
              "  %cn = add i64 %c, 1", "  %cm = icmp ult i64 %cn, %blocks",
              "  br i1 %cm, label %cl, label %ce",
              "ce:",
              "  %in = add i64 %i, 1", "  %im = icmp ult i64 %in, %images",
              "  br i1 %im, label %il, label %done",
              "done:",
              "  ret void",
              "}"]
    return lines
