"""Tiny object-API nets for core tests (no converter involved)."""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb


class NetBuilder:
    """Append ops to an `fb.NetT` by tensor name."""

    def __init__(self) -> None:
        self.net = fb.NetT()
        self.net.oplists = []
        self.net.tensorName = []

    def tensor(self, name: str) -> int:
        if name not in self.net.tensorName:
            self.net.tensorName.append(name)
        return self.net.tensorName.index(name)

    def op(self, op_type: int, ins: list[str], outs: list[str], main_type: int = 0, main: Any = None,
           name: str | None = None) -> None:
        op = fb.OpT()
        op.type = op_type
        op.name = name or outs[0]
        op.inputIndexes = [self.tensor(n) for n in ins]
        op.outputIndexes = [self.tensor(n) for n in outs]
        op.mainType = main_type
        op.main = main
        self.net.oplists.append(op)

    def input(self, name: str, shape: tuple[int, ...], dtype: int = 1) -> None:
        p = fb.InputT()
        p.dims = list(shape)
        p.dtype = dtype
        p.dformat = 0
        self.op(fb.OpType.Input, [], [name], fb.OpParameter.Input, p)

    def const(self, name: str, value: np.ndarray) -> None:
        b = fb.BlobT()
        value = np.asarray(value)
        b.dims = list(value.shape)
        b.dataFormat = 0
        if value.dtype.kind == "f":
            b.dataType, b.float32s = 1, value.astype(np.float32).ravel()
        else:
            b.dataType, b.int32s = 3, value.astype(np.int32).ravel()
        self.op(fb.OpType.Const, [], [name], fb.OpParameter.Blob, b)

    def permute(self, x: str, y: str, perm: list[int]) -> None:
        p = fb.PermuteT()
        p.dims = perm
        self.op(fb.OpType.Permute, [x], [y], fb.OpParameter.Permute, p)

    def unary(self, x: str, y: str, kind: int) -> None:
        p = fb.UnaryOpT()
        p.opType = kind
        self.op(fb.OpType.UnaryOp, [x], [y], fb.OpParameter.UnaryOp, p)

    def outputs(self, *names: str) -> None:
        self.net.outputName = list(names)
