"""While (ONNX Loop form, as MNN's converter writes LSTM/GRU/Loop): a nested body Session run per iteration."""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core.registry import cpu_kernel
from mnnpy.core.subgraph import while_session


@cpu_kernel(fb.OpType.While)
class While(CPUExecution):
    """Inputs (trip count M, cond, carried...); outputs (final carried..., stacked scan outputs...)."""

    def on_resize(self) -> None:
        values = [np.asarray(r.array) if r.const else None for r in self.inputs]
        self.body = while_session(self.op, [r.desc for r in self.inputs], self.backend.config, values)
        g = self.body.graph
        self.body_in = [g.inputs[k] for k in range(len(g.inputs))]
        self.body_out = list(g.outputs)
        self.carried = len(self.inputs) - 2
        self.algorithm = f"while({len(self.body.commands)} commands)"

    def on_execute(self) -> None:
        trips = int(np.asarray(self.inputs[0].array).ravel()[0])
        cond = int(np.asarray(self.inputs[1].array).ravel()[0])
        carried = [np.array(r.array) for r in self.inputs[2:]]
        scans: list[list[np.ndarray]] = []
        s = self.body
        skip = s.net.const_inputs
        for it in range(trips):
            if not cond:
                break
            values = [np.array(it, np.int32), np.array(cond, np.int32), *carried]
            for idx, v in zip(self.body_inputs(), values, strict=True):
                if idx not in skip:
                    s.write(idx, np.asarray(v))
            s.run()
            outs = [s.read(i) for i in self.body_out]
            cond = int(np.asarray(outs[0]).ravel()[0])
            carried = outs[1: 1 + self.carried]
            scans.append(outs[1 + self.carried:])
        for ref, v in zip(self.outputs[: self.carried], carried, strict=True):
            np.copyto(ref.array, np.asarray(v).reshape(ref.desc.shape), casting="unsafe")
        for k, ref in enumerate(self.outputs[self.carried:]):
            np.copyto(ref.array, np.stack([sc[k] for sc in scans]).reshape(ref.desc.shape), casting="unsafe")

    def body_inputs(self) -> list[int]:
        """Body input tensor indices in the subgraph's declared order (i, cond, carried...)."""
        return list(self.body.net.body_inputs)


@cpu_kernel(fb.OpType.If)
class If(CPUExecution):
    """Runs the then/else branch Session chosen by the condition (both prepared in on_resize)."""

    def on_resize(self) -> None:
        from mnnpy.core.subgraph import if_branch_session

        values = [np.asarray(r.array) if r.const else None for r in self.inputs]
        descs = [r.desc for r in self.inputs]
        self.branches: list = []
        self.errors: list = []
        for b in (0, 1):
            try:
                self.branches.append(if_branch_session(self.op, b, descs, values, self.backend.config))
                self.errors.append(None)
            except ModelError as exc:  # fails only if taken at run time
                self.branches.append(None)
                self.errors.append(exc)
        self.algorithm = "if"

    def on_execute(self) -> None:
        cond = bool(np.asarray(self.inputs[0].array).ravel()[0])
        branch = self.branches[0 if cond else 1]
        if branch is None:
            raise ModelError(f"op {self.op.name!r}: the {'then' if cond else 'else'} branch cannot run for these "
                             f"shapes: {self.errors[0 if cond else 1]}")
        body, feeds = branch
        for k, idxs in feeds.items():
            for idx in idxs:
                if idx not in body.net.const_inputs:
                    body.write(idx, np.asarray(self.inputs[k].array))
        body.run()
        for ref, i in zip(self.outputs, body.graph.outputs, strict=True):
            np.copyto(ref.array, body.read(i).reshape(ref.desc.shape), casting="unsafe")
