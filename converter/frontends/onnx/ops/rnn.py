"""LSTM, GRU and RNN, unrolled over a static sequence length into MatMul / BinaryOp / UnaryOp steps.

Default activations only (sigmoid/tanh), layout 0, no peepholes, no clip, no sequence_lens. W, R, B may be constants
or run-time tensors. Only the sequence length must be static: when shape inference lost X's shape it is derived from
the ops that made X (`dims.static_dim`: an Unsqueeze of one step gives 1); the batch may be dynamic.
"""

from __future__ import annotations

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
                 layout: int, attrs_ok: bool) -> None:
        self.ctx, self.node, self.gates = ctx, node, gates
        if not attrs_ok or node.input(4):
            raise UseFunctionBody(f"{node.label()}: only default activations, no clip/sequence_lens")
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


def _sigmoid(ctx: Context, x: str) -> str:
    return ctx.unary(UN.SIGMOID, x)


@onnx_op("LSTM")
def lstm(ctx: Context, node: OnnxNode, *, activation_alpha: list[float] | None = None,
         activation_beta: list[float] | None = None, activations: list[str] | None = None, clip: float | None = None,
         direction: str = "forward", hidden_size: int | None = None, input_forget: int = 0, layout: int = 0) -> None:
    """LSTM (gates i, o, f, c): C = f*C + i*tanh(.), H = o*tanh(C), unrolled."""
    plain = activations in (None, ["Sigmoid", "Tanh", "Tanh"] * 2, ["Sigmoid", "Tanh", "Tanh"])
    rnn = _Rnn(ctx, node, 4, hidden_size, direction, layout, plain and clip is None and not input_forget
               and not node.input(7))
    ys, hs, cs = [], [], []
    for d in range(rnn.dirs):
        xw, r = _gate_inputs(ctx, rnn, d)
        wb, rb = rnn.bias(d)
        bias = ctx.binary(BIN.ADD, wb, rb) if wb else None
        h, c = rnn.initial(5, d), rnn.initial(6, d)
        y = [""] * rnn.seq
        for t in rnn.order(d):
            gates = ctx.binary(BIN.ADD, xw[t], matmul_op(ctx, h, r, transpose_b=True))
            if bias:
                gates = ctx.binary(BIN.ADD, gates, bias)
            i, o, f, g = _split(ctx, gates, 4, 1)
            c = ctx.binary(BIN.ADD, ctx.binary(BIN.MUL, _sigmoid(ctx, f), c),
                           ctx.binary(BIN.MUL, _sigmoid(ctx, i), ctx.unary(UN.TANH, g)))
            h = ctx.binary(BIN.MUL, _sigmoid(ctx, o), ctx.unary(UN.TANH, c))
            y[t] = h
        ys.append(y)
        hs.append(h)
        cs.append(c)
    rnn.finish(ys, [hs, cs])


@onnx_op("GRU")
def gru(ctx: Context, node: OnnxNode, *, activation_alpha: list[float] | None = None,
        activation_beta: list[float] | None = None, activations: list[str] | None = None, clip: float | None = None,
        direction: str = "forward", hidden_size: int | None = None, layout: int = 0,
        linear_before_reset: int = 0) -> None:
    """GRU (gates z, r, h): H = (1 - z) * h~ + z * H, unrolled; both linear_before_reset forms."""
    plain = activations in (None, ["Sigmoid", "Tanh"] * 2, ["Sigmoid", "Tanh"])
    rnn = _Rnn(ctx, node, 3, hidden_size, direction, layout, plain and clip is None)
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
            z, r = _sigmoid(ctx, z), _sigmoid(ctx, r)
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
            cand = ctx.unary(UN.TANH, cand)
            h = ctx.binary(BIN.ADD, ctx.binary(BIN.MUL, ctx.binary(BIN.SUB, one, z), cand), ctx.binary(BIN.MUL, z, h))
            y[t] = h
        ys.append(y)
        hs.append(h)
    rnn.finish(ys, [hs])


@onnx_op("RNN")
def rnn_op(ctx: Context, node: OnnxNode, *, activation_alpha: list[float] | None = None,
           activation_beta: list[float] | None = None, activations: list[str] | None = None,
           clip: float | None = None, direction: str = "forward", hidden_size: int | None = None,
           layout: int = 0) -> None:
    """Simple RNN: H = tanh(X W^T + H R^T + Wb + Rb), unrolled."""
    rnn = _Rnn(ctx, node, 1, hidden_size, direction, layout, activations in (None, ["Tanh"], ["Tanh", "Tanh"])
               and clip is None)
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
            h = ctx.unary(UN.TANH, pre)
            y[t] = h
        ys.append(y)
        hs.append(h)
    rnn.finish(ys, [hs])

