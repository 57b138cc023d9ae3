"""MatMul, Gemm and Einsum (matmul forms, ellipses, implicit outputs) -> MatMul (+ Permute / Reshape /
BinaryOp); const-B MatMul becomes a conv in a pass."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op
from .reduce import reduction


def matmul_op(ctx: Context, a: str, b: str, output: str | None = None, transpose_a: bool = False,
              transpose_b: bool = False, name: str | None = None) -> str:
    """MatMul(a, b) with transpose flags."""
    param = fb.MatMulT()
    param.transposeA = transpose_a
    param.transposeB = transpose_b
    return ctx.out(OP.MatMul, [a, b], None if output is None else [output], PARAM.MatMul, param,
                   name=name or ("MatMul" if output is None else None))


@onnx_op("MatMul")
def matmul(ctx: Context, node: OnnxNode) -> None:
    """MatMul -> MatMul; 1-D operands are unsqueezed and the extra axis squeezed away again."""
    a, b = node.inputs[0], node.inputs[1]
    rank_a, rank_b = ctx.rank(a), ctx.rank(b)
    squeeze_axes: list[int] = []
    if rank_a == 1:
        a = ctx.squeeze(a, [0], unsqueeze=True)
        squeeze_axes.append(-2)
    if rank_b == 1:
        b = ctx.squeeze(b, [1], unsqueeze=True)
        squeeze_axes.append(-1)
    if not squeeze_axes:
        matmul_op(ctx, a, b, node.outputs[0], name=node.name)
        return
    y = matmul_op(ctx, a, b)
    out_rank = max(rank_a or 0, rank_b or 0, 2)
    ctx.squeeze(y, sorted(axis + out_rank for axis in squeeze_axes), node.outputs[0])


@onnx_op("Gemm")
def gemm(ctx: Context, node: OnnxNode, *, alpha: float = 1.0, beta: float = 1.0, transA: int = 0,  # noqa: N803
         transB: int = 0) -> None:  # noqa: N803
    """Gemm -> MatMul(transposeA, transposeB), then alpha MUL and beta * C ADD."""
    a, b, c = node.inputs[0], node.inputs[1], node.input(2)
    b_value = ctx.value(b)
    if b_value is not None and alpha != 1.0:
        b = ctx.const(b_value.astype(np.float32) * np.float32(alpha), b)
        alpha = 1.0
    last = alpha == 1.0 and not c
    y = matmul_op(ctx, a, b, node.outputs[0] if last else None, bool(transA), bool(transB), node.name)
    if alpha != 1.0:
        y = ctx.binary(BIN.MUL, y, ctx.const(np.float32(alpha)), None if c else node.outputs[0])
    if c:
        c_value = ctx.value(c)
        if beta != 1.0:
            c = ctx.const(c_value * np.float32(beta), c) if c_value is not None else \
                ctx.binary(BIN.MUL, c, ctx.const(np.float32(beta)))
        ctx.binary(BIN.ADD, y, c, node.outputs[0])


_SPARE = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"  # letters for the dims an ellipsis stands for (equations use lower case)


def _parse_einsum(ctx: Context, node: OnnxNode, equation: str) -> tuple[list[str], str]:
    """(operand terms, output term) with an ellipsis spelled out as upper-case letters (right-aligned, as numpy
    broadcasts) and an implicit output made explicit (the letters used once, in alphabetical order, after the
    ellipsis dims)."""
    eq = equation.replace(" ", "")
    implicit = "->" not in eq
    lhs, out = (eq, "") if implicit else eq.split("->")
    terms = lhs.split(",")
    spare = ""
    if "..." in lhs:
        dims = [ctx.need_rank(node, node.inputs[k]) - (len(t) - 3) if "..." in t else 0 for k, t in enumerate(terms)]
        spare = _SPARE[:max(dims)]
        terms = [t.replace("...", spare[len(spare) - d:]) for t, d in zip(terms, dims, strict=True)]
        out = out.replace("...", spare)
    if implicit:
        letters = "".join(terms)
        out = spare + "".join(sorted(ch for ch in set(letters) if ch.islower() and letters.count(ch) == 1))
    if "." in "".join(terms) + out or len(set(out)) != len(out):
        raise UseFunctionBody(f"{node.label()}: Einsum '{equation}' (a broken ellipsis or a repeated output letter) "
                              f"is not supported")
    return terms, out


def _diagonal(ctx: Context, node: OnnxNode, x: str, term: str) -> tuple[str, str]:
    """An operand whose term repeats a letter ('ii', 'bii'), reduced to its diagonal(s): the two axes moved last,
    merged (Reshape) and read every n + 1 (StridedSlice), so exact; the letter then appears once, last."""
    from .shape import _strided_slice

    shape = ctx.shape(x)
    while len(set(term)) != len(term):
        ch = next(c for c in term if term.count(c) > 1)
        first = term.index(ch)
        second = term.index(ch, first + 1)
        n = None if shape is None else shape[first]
        if n is None or shape is None or shape[second] != n:
            raise UseFunctionBody(f"{node.label()}: an Einsum diagonal needs a static size of '{ch}'")
        rest = [i for i in range(len(term)) if i not in (first, second)]
        order = [*rest, first, second]
        moved = x if order == list(range(len(term))) else ctx.permute(x, order)
        merged = ctx.reshape(moved, [0] * len(rest) + [int(n) * int(n)])
        x = _strided_slice(ctx, [merged, ctx.const(np.int32([0])), ctx.const(np.int32([int(n) * int(n)])),
                                 ctx.const(np.int32([len(rest)])), ctx.const(np.int32([int(n) + 1]))])
        term = "".join(term[i] for i in rest) + ch
        shape = [shape[i] for i in rest] + [n]
    return x, term


def _einsum_by_reshape(ctx: Context, node: OnnxNode, equation: str, ta: str, tb: str, out: str) -> None:
    """A two-operand Einsum with several (or no) contracted or free letters: letters only one operand has and the
    output lacks are summed first; then each operand is permuted to batch + free + contracted order, reshaped to
    three dims (static shapes), multiplied, and reshaped and permuted to the output."""
    shapes = [ctx.shape(node.inputs[0]), ctx.shape(node.inputs[1])]
    if any(s is None or None in s for s in shapes):
        raise UseFunctionBody(f"{node.label()}: Einsum '{equation}' needs static input shapes")
    size = {ch: int(d) for term, shape in zip((ta, tb), shapes, strict=True) for ch, d in zip(term, shape, strict=True)}
    for term, shape in zip((ta, tb), shapes, strict=True):
        if any(size[ch] != int(d) for ch, d in zip(term, shape, strict=True)):
            raise UseFunctionBody(f"{node.label()}: Einsum '{equation}' broadcasts a dim (not supported)")
    operands = []
    for x, term, other in ((node.inputs[0], ta, tb), (node.inputs[1], tb, ta)):
        alone = [i for i, ch in enumerate(term) if ch not in other and ch not in out]
        if alone:
            x = reduction(ctx, x, fb.ReductionType.SUM, alone, False)
            term = "".join(ch for i, ch in enumerate(term) if i not in alone)
        operands.append((x, term))
    (a, ta), (b, tb) = operands
    batch = [ch for ch in out if ch in ta and ch in tb]
    contract = [ch for ch in ta if ch in tb and ch not in out]
    free_a = [ch for ch in ta if ch not in tb]
    free_b = [ch for ch in tb if ch not in ta]

    def prod(letters: list[str]) -> int:
        return int(np.prod([size[ch] for ch in letters], dtype=np.int64))

    dims = [size[ch] for ch in batch]
    a = ctx.reshape(_permute_to(ctx, a, ta, "".join(batch + free_a + contract)), [*dims, prod(free_a), prod(contract)])
    b = ctx.reshape(_permute_to(ctx, b, tb, "".join(batch + contract + free_b)), [*dims, prod(contract), prod(free_b)])
    produced = "".join(batch + free_a + free_b)
    y = ctx.reshape(matmul_op(ctx, a, b), [size[ch] for ch in produced],
                    node.outputs[0] if produced == out else None)
    if produced != out:
        ctx.permute(y, [produced.index(ch) for ch in out], node.outputs[0])


def _permute_to(ctx: Context, x: str, have: str, want: str) -> str:
    if have == want:
        return x
    return ctx.permute(x, [have.index(ch) for ch in want])


@onnx_op("Einsum", since=12)
def einsum(ctx: Context, node: OnnxNode, *, equation: str = "") -> None:
    """Einsum: one-input transposes/sums and two-input batched matmul forms (one contracted index)."""
    terms, out = _parse_einsum(ctx, node, equation)
    if any(len(set(t)) != len(t) for t in terms) and len(terms) != 1:
        raise UseFunctionBody(f"{node.label()}: Einsum '{equation}': diagonals are supported with one operand only")
    if len(terms) == 1:
        x, term = _diagonal(ctx, node, node.inputs[0], terms[0])
        summed = [i for i, ch in enumerate(term) if ch not in out]
        if summed:
            x = reduction(ctx, x, fb.ReductionType.SUM, summed, False)
            term = "".join(ch for ch in term if ch in out)
        if term == out:
            ctx.alias(x, node.outputs[0])
        else:
            ctx.permute(x, [term.index(ch) for ch in out], node.outputs[0])
        return
    if len(terms) != 2:
        raise UseFunctionBody(f"{node.label()}: Einsum with {len(terms)} operands is not supported")
    ta, tb = terms
    batch = [ch for ch in out if ch in ta and ch in tb]
    contract = [ch for ch in ta if ch in tb and ch not in out]
    free_a = [ch for ch in ta if ch not in tb]
    free_b = [ch for ch in tb if ch not in ta]
    if len(contract) != 1 or len(free_a) > 1 or len(free_b) > 1 or len(set(ta)) != len(ta) or \
            any(ch not in out for ch in free_a + free_b):
        _einsum_by_reshape(ctx, node, equation, ta, tb, out)
        return
    k = contract[0]
    a, b = node.inputs[0], node.inputs[1]
    bstr = "".join(batch)
    fa = "".join(free_a)
    fb_ = "".join(free_b)
    # A as batch + [m] + [k] (or batch + [k] with transposeA handled by permute); B as batch + [k] + [n].
    a = _permute_to(ctx, a, ta, bstr + fa + k)
    b = _permute_to(ctx, b, tb, bstr + k + fb_)
    if not fa:
        a = ctx.squeeze(a, [len(bstr)], unsqueeze=True)
    if not fb_:
        b = ctx.squeeze(b, [len(bstr) + 1], unsqueeze=True)
    produced = bstr + (fa or "_") + (fb_ or "^")
    squeeze = [i for i, ch in enumerate(produced) if ch in "_^"]
    result_term = "".join(ch for ch in produced if ch not in "_^")
    direct = not squeeze and result_term == out
    y = matmul_op(ctx, a, b, node.outputs[0] if direct else None, name=node.name if direct else None)
    if direct:
        return
    if squeeze:
        y = ctx.squeeze(y, squeeze, node.outputs[0] if result_term == out else None)
    if result_term != out:
        ctx.permute(y, [result_term.index(ch) for ch in out], node.outputs[0])
