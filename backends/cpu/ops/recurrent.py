"""LSTM (ONNX gate order i, o, f, c; bias already Wb + Rb) and simple tanh RNN, one time step per loop turn."""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.registry import cpu_kernel

OT = fb.OpType


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


@cpu_kernel(OT.LSTM, OT.RNN)
class LSTM(CPUExecution):
    """Y [seq, dirs, batch, H], Y_h and Y_c [dirs, batch, H]; direction 1 of a bidirectional op runs reversed."""

    def on_resize(self) -> None:
        self.is_lstm = self.op.type == OT.LSTM
        self.hidden = self.inputs[2].desc.shape[-1]
        self.dirs = self.inputs[1].desc.shape[0]
        self.algorithm = "lstm" if self.is_lstm else "rnn"

    def on_execute(self) -> None:
        x = self.x.array
        w, r = self.inputs[1].array, self.inputs[2].array
        bias = self.inputs[3].array if len(self.inputs) > 3 else np.zeros(w.shape[:2], np.float32)
        seq, batch = x.shape[:2]
        h_all = np.zeros((seq, self.dirs, batch, self.hidden), np.float32)
        hs, cs = [], []
        for d in range(self.dirs):
            h = np.array(self.inputs[4].array[d]) if len(self.inputs) > 4 else np.zeros((batch, self.hidden))
            c = np.array(self.inputs[5].array[d]) if len(self.inputs) > 5 else np.zeros((batch, self.hidden))
            b = np.asarray(bias).reshape(self.dirs, -1)[d]
            steps = range(seq - 1, -1, -1) if d == 1 else range(seq)
            for t in steps:
                gates = x[t] @ w[d].T + h @ r[d].T + b
                if self.is_lstm:
                    i, o, f, g = np.split(gates, 4, axis=-1)
                    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
                    h = _sigmoid(o) * np.tanh(c)
                else:
                    h = np.tanh(gates)
                h_all[t, d] = h
            hs.append(h)
            cs.append(c)
        outs = [h_all, np.stack(hs), np.stack(cs)]
        for ref, value in zip(self.outputs, outs, strict=False):
            np.copyto(ref.array, value.reshape(ref.desc.shape), casting="unsafe")
