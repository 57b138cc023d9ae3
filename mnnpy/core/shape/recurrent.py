"""Shape of MNN's LSTM/RNN op in ONNX form (inputs X, W, R, B[, h0[, c0]]), as the converter leaves it in bodies."""

from __future__ import annotations

from typing import Any

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType


@shape_fn(OT.LSTM, OT.RNN)
def lstm(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    if len(descs) < 4:
        raise ModelError(f"op {op.name!r}: LSTM without weight inputs (Caffe form) is not supported")
    x, w, r = descs[0].shape, descs[1].shape, descs[2].shape
    if len(x) != 3 or len(w) != 3:
        raise ModelError(f"op {op.name!r}: LSTM expects X [seq, batch, input] and W [dirs, gates*H, input]")
    seq, batch = x[0], x[1]
    dirs, hidden = w[0], r[-1]
    dt = descs[0].dtype
    outs = [TensorDesc((seq, dirs, batch, hidden), dt, NCHW), TensorDesc((dirs, batch, hidden), dt, NCHW)]
    if op.type == OT.LSTM:
        outs.append(TensorDesc((dirs, batch, hidden), dt, NCHW))
    return outs[: len(op.outputIndexes)] if op.outputIndexes is not None else outs
