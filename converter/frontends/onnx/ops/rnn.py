"""LSTM, GRU and RNN, unrolled over a static sequence length into MatMul / BinaryOp / UnaryOp steps.

Any of ONNX's recurrent activations (with their alpha / beta), clip, LSTM peepholes and input_forget, both layouts,
and sequence_lens: a step past a sequence's length keeps that sequence's state (a Select per step) and outputs
zeros, so Y_h / Y_c hold the last valid step, and a reverse pass starts at each sequence's own end, as in
onnxruntime. W, R, B, P may be constants or run-time tensors. Only the sequence length must be static: when shape
inference lost X's shape it is derived from the ops that made X (`dims.static_dim`: an Unsqueeze of one step gives
1); the batch may be dynamic.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, OnnxNode
from ..dims import static_dim
from ..functions import UseFunctionBody
from ..registry import onnx_op
from .matmul import matmul_op


def _pick(ctx: Context, name: str, d: int, axis: int = 0) -> str:
    """name[d] along `axis` (constant-folded in numpy when possible)."""
    value = ctx.value(name)
    if value is not None:
        return ctx.const(np.ascontiguousarray(np.take(value, d, axis=axis)), name)
    return ctx.out(OP.GatherV2, [name, ctx.const(np.int32(d)), ctx.const(np.int32(axis))], name="GatherV2")


def _split(ctx: Context, x: str, parts: int, axis: int) -> list[str]:
    param = fb.SliceT()
    param.axis = axis
    param.sourceType = fb.NetSource.TORCH
    outs = [ctx.graph.unique_name(f"{x}_part") for _ in range(parts)]
    ctx.emit(OP.Slice, [x], outs, PARAM.Slice, param)
    return outs


def _concat(ctx: Context, parts: list[str], axis: int, output: str | None = None) -> str:
    if len(parts) == 1 and output is None:
        return parts[0]
    param = fb.AxisT()
    param.axis = axis
    return ctx.out(OP.Concat, parts, None if output is None else [output], PARAM.Axis, param,
                   name=None if output is not None else "Concat")


class _Rnn:
    """Shared checks and per-direction plumbing for the three recurrent ops."""

    def __init__(self, ctx: Context, node: OnnxNode, gates: int, hidden_size: int | None, direction: str,
                 layout: int, acts: tuple[list[str] | None, list[float] | None, list[float] | None, list[str]],
                 clip: float | None) -> None:
        self.ctx, self.node, self.gates = ctx, node, gates
        self.clip = clip
        self.layout = layout  # 0: [seq, batch, ..] and [dirs, batch, H]; 1: [batch, seq, ..] and [batch, dirs, H]
        w_shape = ctx.shape(node.inputs[1])
        self.hidden = hidden_size or (None if w_shape is None or w_shape[1] is None else w_shape[1] // gates)
        if self.hidden is None:
            raise UseFunctionBody(f"{node.label()}: hidden_size is unknown")
        time_axis = layout
        seq = static_dim(ctx, node.inputs[0], time_axis, 3)
        if seq is None:
            raise UseFunctionBody(f"{node.label()}: needs a static sequence length (input dim {time_axis})")
        self.seq, self.batch = seq, static_dim(ctx, node.inputs[0], 1 - time_axis, 3)
        self.dirs = 2 if direction == "bidirectional" else 1
        self.reverse = direction == "reverse"
        self.steps = _split(ctx, node.inputs[0], self.seq, time_axis) if self.seq > 1 else [node.inputs[0]]
        self.steps = [ctx.squeeze(s, [time_axis]) for s in self.steps]
        self.funcs = _activations(ctx, node, self.dirs, *acts)
        self.lengths = None
        if node.input(4):  # [batch, 1] int32, compared with each step's index
            lengths = ctx.cast(node.input(4), fb.DataType.DT_INT32)
            self.lengths = ctx.reshape(lengths, [-1, 1])

    def act(self, d: int, k: int, x: str) -> str:
        """Activation k of direction d on x, its input clipped to [-clip, clip] when clip is set."""
        if self.clip is not None:
            bound = float(self.clip)
            x = self.ctx.binary(BIN.MINIMUM, self.ctx.binary(BIN.MAXIMUM, x, self.ctx.const(np.float32(-bound))),
                                self.ctx.const(np.float32(bound)))
        return self.funcs[d][k](x)

    def keep(self, t: int, new: str, old: str) -> str:
        """With sequence_lens: ``new`` where step t is inside the sequence, ``old`` (the held state) past it."""
        if self.lengths is None:
            return new
        inside = self.ctx.binary(BIN.LESS, self.ctx.const(np.int32(t)), self.lengths)
        return self.ctx.out(OP.Select, [inside, new, old], name="Select")

    def output(self, t: int, h: str) -> str:
        """The step's Y: h, or zeros past the sequence's length."""
        if self.lengths is None:
            return h
        return self.keep(t, h, self.ctx.const(np.float32(0)))

    def initial(self, index: int, d: int) -> str:
        name = self.node.input(index)
        if name:
            return _pick(self.ctx, name, d, self.layout)
        if self.batch is not None:
            return self.ctx.const(np.zeros((self.batch, self.hidden), np.float32), "zeros")
        ctx = self.ctx  # dynamic batch: Fill([batch, H], 0) with the batch read from X's shape at run time
        axis = ctx.const(np.array([1 - self.layout], np.int32))
        batch = ctx.out(OP.GatherV2, [ctx.shape_of(self.node.inputs[0]), axis, ctx.const(np.int32(0))],
                        name="GatherV2")
        shape = _concat(ctx, [batch, ctx.const(np.array([self.hidden], np.int32))], 0)
        return ctx.out(OP.Fill, [shape, ctx.const(np.zeros(1, np.float32), "zero")], name="zeros")

    def bias(self, d: int) -> tuple[str | None, str | None]:
        """(Wb, Rb) for direction d, each [gates * hidden], or None when B is absent."""
        name = self.node.input(3)
        if not name:
            return None, None
        size = self.gates * self.hidden
        value = self.ctx.value(name)
        if value is not None:
            row = value[d].astype(np.float32)
            return self.ctx.const(row[:size]), self.ctx.const(row[size:])
        both = _split(self.ctx, _pick(self.ctx, name, d), 2, 0)
        return both[0], both[1]

    def order(self, d: int) -> list[int]:
        backward = self.reverse or d == 1
        return list(range(self.seq))[::-1] if backward else list(range(self.seq))

    def finish(self, ys: list[list[str]], states: list[list[str]]) -> None:
        """ys[d][t] are [batch, H] outputs in time order; states[k][d] the final states (Y_h, Y_c)."""
        ctx, outs = self.ctx, self.node.outputs
        time_axis, dir_axis = (0, 1) if self.layout == 0 else (1, 2)  # Y: [seq, dirs, batch, H] / [batch, seq, dirs, H]
        if outs and outs[0]:
            per_dir = [_concat(ctx, [ctx.squeeze(h, [time_axis], unsqueeze=True) for h in y], time_axis) for y in ys]
            per_dir = [ctx.squeeze(p, [dir_axis], unsqueeze=True) for p in per_dir]
            if len(per_dir) > 1:
                _concat(ctx, per_dir, dir_axis, outs[0])
            else:
                ctx.alias(per_dir[0], outs[0])
        state_axis = self.layout  # Y_h / Y_c: [dirs, batch, H] / [batch, dirs, H]
        for k, finals in enumerate(states, start=1):
            if len(outs) > k and outs[k]:
                parts = [ctx.squeeze(h, [state_axis], unsqueeze=True) for h in finals]
                if len(parts) > 1:
                    _concat(ctx, parts, state_axis, outs[k])
                else:
                    ctx.alias(parts[0], outs[k])


def _gate_inputs(ctx: Context, rnn: _Rnn, d: int) -> tuple[list[str], str]:
    """Per-step X_t W^T and the recurrence weight R for direction d."""
    w, r = _pick(ctx, rnn.node.inputs[1], d), _pick(ctx, rnn.node.inputs[2], d)
    return [matmul_op(ctx, x, w, transpose_b=True) for x in rnn.steps], r


# ONNX's recurrent activations: lower-case name -> (takes alpha, takes beta, default alpha, default beta); the
# defaults are those of the ONNX ops of the same name
_ACTIVATIONS = {"sigmoid": (False, False, 0, 0), "tanh": (False, False, 0, 0), "relu": (False, False, 0, 0),
                "softsign": (False, False, 0, 0), "softplus": (False, False, 0, 0), "affine": (True, True, 1.0, 0.0),
                "leakyrelu": (True, False, 0.01, 0), "thresholdedrelu": (True, False, 1.0, 0),
                "scaledtanh": (True, True, 1.0, 1.0), "hardsigmoid": (True, True, 0.2, 0.5),
                "elu": (True, False, 1.0, 0)}


def _activations(ctx: Context, node: OnnxNode, dirs: int, names: list[str] | None, alphas: list[float] | None,
                 betas: list[float] | None, default: list[str]) -> list[list[Callable[[str], str]]]:
    """Per direction, the op's activations (f, g[, h]) as emitters; alpha / beta are consumed in order by the
    activations that take them, their ONNX defaults when the list runs out."""
    names = list(names or default * dirs)
    if len(names) == len(default):
        names = names * dirs
    if len(names) != len(default) * dirs:
        raise UseFunctionBody(f"{node.label()}: {len(names)} activations for {dirs} direction(s)")
    alpha_left, beta_left = list(alphas or []), list(betas or [])
    funcs = []
    for name in names:
        key = name.lower()
        if key not in _ACTIVATIONS:
            raise UseFunctionBody(f"{node.label()}: activation {name!r} is not supported")
        takes_alpha, takes_beta, alpha, beta = _ACTIVATIONS[key]
        if takes_alpha and alpha_left:
            alpha = alpha_left.pop(0)
        if takes_beta and beta_left:
            beta = beta_left.pop(0)
        funcs.append(lambda x, key=key, a=float(alpha), b=float(beta): _activate(ctx, key, a, b, x))
    return [funcs[d * len(default):(d + 1) * len(default)] for d in range(dirs)]


def _activate(ctx: Context, key: str, alpha: float, beta: float, x: str) -> str:
    """One recurrent activation of x (ONNX's definitions)."""
    def const(v: float) -> str:
        return ctx.const(np.float32(v))

    def mul(a: str, v: float) -> str:
        return ctx.binary(BIN.MUL, a, const(v))

    if key == "sigmoid":
        return ctx.unary(UN.SIGMOID, x)
    if key == "tanh":
        return ctx.unary(UN.TANH, x)
    if key == "relu":
        return ctx.binary(BIN.MAXIMUM, x, const(0))
    if key == "softsign":
        return ctx.binary(BIN.REALDIV, x, ctx.binary(BIN.ADD, ctx.unary(UN.ABS, x), const(1)))
    if key == "softplus":
        return ctx.unary(UN.BNLL, x)
    if key == "affine":
        return ctx.binary(BIN.ADD, mul(x, alpha), const(beta))
    if key == "scaledtanh":
        return mul(ctx.unary(UN.TANH, mul(x, beta)), alpha)
    if key == "hardsigmoid":
        return ctx.binary(BIN.MINIMUM, ctx.binary(BIN.MAXIMUM, ctx.binary(BIN.ADD, mul(x, alpha), const(beta)),
                                                  const(0)), const(1))
    if key == "leakyrelu":
        below = mul(x, alpha)
    elif key == "elu":
        below = mul(ctx.unary(UN.EXPM1, x), alpha)
    else:  # thresholdedrelu: x where x > alpha (ONNX's op; the RNN doc's ">=" differs only at x == alpha)
        return ctx.out(OP.Select, [ctx.binary(BIN.GREATER, x, const(alpha)), x, const(0)], name="Select")
    return ctx.out(OP.Select, [ctx.binary(BIN.GREATER_EQUAL, x, const(0)), x, below], name="Select")


def _peepholes(ctx: Context, rnn: _Rnn, d: int) -> list[str] | None:
    """Direction d's peephole weights (p_i, p_o, p_f), each [H], or None without P."""
    name = rnn.node.input(7)
    if not name:
        return None
    value = ctx.value(name)
    if value is not None:
        row = value[d].astype(np.float32)
        return [ctx.const(part) for part in np.split(row, 3)]
    return _split(ctx, _pick(ctx, name, d), 3, 0)


@onnx_op("LSTM")
def lstm(ctx: Context, node: OnnxNode, *, activation_alpha: list[float] | None = None,
         activation_beta: list[float] | None = None, activations: list[str] | None = None, clip: float | None = None,
         direction: str = "forward", hidden_size: int | None = None, input_forget: int = 0, layout: int = 0) -> None:
    """LSTM (gates i, o, f, c; activations f, g, h): C = f*C + i*g(.), H = o*h(C), unrolled; peepholes add P * C
    to the i and f gates (the previous C) and the o gate (the new C); input_forget couples f = 1 - i."""
    rnn = _Rnn(ctx, node, 4, hidden_size, direction, layout,
               (activations, activation_alpha, activation_beta, ["Sigmoid", "Tanh", "Tanh"]), clip)
    one = ctx.const(np.float32(1))
    ys, hs, cs = [], [], []
    for d in range(rnn.dirs):
        xw, r = _gate_inputs(ctx, rnn, d)
        wb, rb = rnn.bias(d)
        bias = ctx.binary(BIN.ADD, wb, rb) if wb else None
        peep = _peepholes(ctx, rnn, d)
        h, c = rnn.initial(5, d), rnn.initial(6, d)
        y = [""] * rnn.seq
        for t in rnn.order(d):
            gates = ctx.binary(BIN.ADD, xw[t], matmul_op(ctx, h, r, transpose_b=True))
            if bias:
                gates = ctx.binary(BIN.ADD, gates, bias)
            i, o, f, g = _split(ctx, gates, 4, 1)
            if peep:
                i = ctx.binary(BIN.ADD, i, ctx.binary(BIN.MUL, peep[0], c))
                f = ctx.binary(BIN.ADD, f, ctx.binary(BIN.MUL, peep[2], c))
            i = rnn.act(d, 0, i)
            f = ctx.binary(BIN.SUB, one, i) if input_forget else rnn.act(d, 0, f)
            c_new = ctx.binary(BIN.ADD, ctx.binary(BIN.MUL, f, c), ctx.binary(BIN.MUL, i, rnn.act(d, 1, g)))
            if peep:
                o = ctx.binary(BIN.ADD, o, ctx.binary(BIN.MUL, peep[1], c_new))
            h_new = ctx.binary(BIN.MUL, rnn.act(d, 0, o), rnn.funcs[d][2](c_new))
            y[t] = rnn.output(t, h_new)
            h, c = rnn.keep(t, h_new, h), rnn.keep(t, c_new, c)
        ys.append(y)
        hs.append(h)
        cs.append(c)
    rnn.finish(ys, [hs, cs])


@onnx_op("GRU")
def gru(ctx: Context, node: OnnxNode, *, activation_alpha: list[float] | None = None,
        activation_beta: list[float] | None = None, activations: list[str] | None = None, clip: float | None = None,
        direction: str = "forward", hidden_size: int | None = None, layout: int = 0,
        linear_before_reset: int = 0) -> None:
    """GRU (gates z, r, h; activations f, g): H = (1 - z) * h~ + z * H, unrolled; both linear_before_reset forms."""
    rnn = _Rnn(ctx, node, 3, hidden_size, direction, layout,
               (activations, activation_alpha, activation_beta, ["Sigmoid", "Tanh"]), clip)
    one = ctx.const(np.float32(1))
    ys, hs = [], []
    for d in range(rnn.dirs):
        xw, r_weight = _gate_inputs(ctx, rnn, d)
        wb, rb = rnn.bias(d)
        h = rnn.initial(5, d)
        y = [""] * rnn.seq
        wb_parts = _split(ctx, wb, 3, 0) if wb else None
        rb_parts = _split(ctx, rb, 3, 0) if rb else None
        r_parts = _split(ctx, r_weight, 3, 0)
        for t in rnn.order(d):
            x_z, x_r, x_h = _split(ctx, xw[t], 3, 1)
            h_z = matmul_op(ctx, h, r_parts[0], transpose_b=True)
            h_r = matmul_op(ctx, h, r_parts[1], transpose_b=True)
            z = ctx.binary(BIN.ADD, x_z, h_z)
            r = ctx.binary(BIN.ADD, x_r, h_r)
            if wb_parts and rb_parts:
                z = ctx.binary(BIN.ADD, z, ctx.binary(BIN.ADD, wb_parts[0], rb_parts[0]))
                r = ctx.binary(BIN.ADD, r, ctx.binary(BIN.ADD, wb_parts[1], rb_parts[1]))
                x_h = ctx.binary(BIN.ADD, x_h, wb_parts[2])
            z, r = rnn.act(d, 0, z), rnn.act(d, 0, r)
            if linear_before_reset:
                rec = matmul_op(ctx, h, r_parts[2], transpose_b=True)
                if rb_parts:
                    rec = ctx.binary(BIN.ADD, rec, rb_parts[2])
                cand = ctx.binary(BIN.ADD, x_h, ctx.binary(BIN.MUL, r, rec))
            else:
                rec = matmul_op(ctx, ctx.binary(BIN.MUL, r, h), r_parts[2], transpose_b=True)
                if rb_parts:
                    rec = ctx.binary(BIN.ADD, rec, rb_parts[2])
                cand = ctx.binary(BIN.ADD, x_h, rec)
            cand = rnn.act(d, 1, cand)
            h_new = ctx.binary(BIN.ADD, ctx.binary(BIN.MUL, ctx.binary(BIN.SUB, one, z), cand),
                               ctx.binary(BIN.MUL, z, h))
            y[t] = rnn.output(t, h_new)
            h = rnn.keep(t, h_new, h)
        ys.append(y)
        hs.append(h)
    rnn.finish(ys, [hs])


@onnx_op("RNN")
def rnn_op(ctx: Context, node: OnnxNode, *, activation_alpha: list[float] | None = None,
           activation_beta: list[float] | None = None, activations: list[str] | None = None,
           clip: float | None = None, direction: str = "forward", hidden_size: int | None = None,
           layout: int = 0) -> None:
    """Simple RNN: H = f(X W^T + H R^T + Wb + Rb) (f = Tanh unless given), unrolled."""
    rnn = _Rnn(ctx, node, 1, hidden_size, direction, layout,
               (activations, activation_alpha, activation_beta, ["Tanh"]), clip)
    ys, hs = [], []
    for d in range(rnn.dirs):
        xw, r = _gate_inputs(ctx, rnn, d)
        wb, rb = rnn.bias(d)
        bias = ctx.binary(BIN.ADD, wb, rb) if wb else None
        h = rnn.initial(5, d)
        y = [""] * rnn.seq
        for t in rnn.order(d):
            pre = ctx.binary(BIN.ADD, xw[t], matmul_op(ctx, h, r, transpose_b=True))
            if bias:
                pre = ctx.binary(BIN.ADD, pre, bias)
            h_new = rnn.act(d, 0, pre)
            y[t] = rnn.output(t, h_new)
            h = rnn.keep(t, h_new, h)
        ys.append(y)
        hs.append(h)
    rnn.finish(ys, [hs])
