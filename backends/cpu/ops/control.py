"""While (ONNX Loop form, as MNN's converter writes LSTM/GRU/Loop): a nested body Session run per iteration."""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core.registry import cpu_kernel
from mnnpy.core.shape.control import body_session, run_while, stack_scans


@cpu_kernel(fb.OpType.While)
class While(CPUExecution):
    """Inputs (trip count M, cond, carried...); outputs (final carried..., stacked scan outputs...)."""

    def on_resize(self) -> None:
        self.values = [np.asarray(r.array) if r.const else None for r in self.inputs]
        descs = [r.desc for r in self.inputs]
        self.body = body_session(self.op, descs, self.backend.config, self.values)
        self.sessions = {tuple(d.shape for d in descs[2:]): self.body}
        self.scan_descs = [self.body.graph.descs[i] for i in self.body.graph.outputs[len(self.inputs) - 1:]]
        self.algorithm = f"while({len(self.body.commands)} commands)"

    def on_execute(self) -> None:
        values = [v if v is not None else np.array(r.array) for v, r in zip(self.values, self.inputs, strict=True)]
        carried, scans, steps = run_while(self.op, [r.desc for r in self.inputs], values, self.backend.config,
                                          self.sessions)
        results = carried + stack_scans(self.op, scans, self.scan_descs)
        for ref, v in zip(self.outputs, results, strict=True):
            if v.size != ref.desc.size:
                raise ModelError(f"op {self.op.name!r}: the loop ran {steps} iterations and gives shape {v.shape} "
                                 f"for {ref.name!r}, planned {ref.desc.shape} (feed the inputs that decide the "
                                 f"iteration count before resizing)")
            np.copyto(ref.array, v.reshape(ref.desc.shape), casting="unsafe")


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
