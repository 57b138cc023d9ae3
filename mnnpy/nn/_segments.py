"""How a Module runs a `.mnn` net whose shapes depend on values the net computes (MNN: `PipelineModule`'s split).

Pre-inference plans a session from input *shapes*. An op like Where with one input (ONNX NonZero) has an output
shape set by the *values* of its input, so when that input is computed by the net no single plan fits every run.
MNN's Session API refuses such a net ("use module api instead"); its Module API cuts the net there. So does this:

* a ``Runner`` plans the net as one Session while it can. When pre-inference stops at an op whose shape needs a
  tensor the net computes (``InputValueNeeded.tensor`` is not an input the user feeds), the net is cut at that op:
* the first segment is a Session of the ops before it; its outputs are the tensors that later ops read;
* the op itself runs eagerly on the CPU with those values (its output shape computed from them);
* the ops after it form a second Runner whose inputs are the crossing tensors and the op's outputs, planned when
  their shapes are known and planned again only when they change. It may cut again at the next such op.

Every segment keeps the whole pre-inference (geometry, strategy, memory plan) of a normal session. Shapes that
depend on the values of an input the user feeds (a shape tensor) stay with the Session's own mechanism: it plans
again when those values change (MNN: ``needInputContentForShape``).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from mnnpy.core import registry
from mnnpy.core.ir import NHWC, TensorDesc
from mnnpy.core.pipeline import InputValueNeeded, blob_value, op_type_name
from mnnpy.core.session import Session, fold_op
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType
_DATA_TYPES = {np.dtype(np.float32): fb.DataType.DT_FLOAT, np.dtype(np.float64): fb.DataType.DT_DOUBLE,
               np.dtype(np.int32): fb.DataType.DT_INT32, np.dtype(np.uint8): fb.DataType.DT_UINT8,
               np.dtype(np.int16): fb.DataType.DT_INT16, np.dtype(np.int8): fb.DataType.DT_INT8,
               np.dtype(np.int64): fb.DataType.DT_INT64}


def _indexes(value: Any) -> list[int]:
    return [int(i) for i in np.asarray(value if value is not None else [], dtype=np.int64).ravel()]


def _input_op(index: int, name: str, value: np.ndarray, fmt: str) -> Any:
    """An Input op declaring tensor ``index`` with ``value``'s shape and dtype (NHWC kept for TF models' tensors)."""
    if value.dtype not in _DATA_TYPES:
        raise ModelError(f"tensor {name!r}: dtype {value.dtype} cannot cross between a Module's segments")
    param = fb.InputT()
    param.dims = list(value.shape)
    param.dtype = _DATA_TYPES[value.dtype]
    param.dformat = fb.MNN_DATA_FORMAT.NHWC if fmt == NHWC else fb.MNN_DATA_FORMAT.NCHW
    op = fb.OpT()
    op.type, op.name, op.mainType, op.main = OT.Input, name, fb.OpParameter.Input, param
    op.inputIndexes, op.outputIndexes = [], [index]
    return op


def _subnet(net: Any, ops: list[Any], outputs: list[str]) -> Any:
    """``net`` with other ops and outputs (tensor names and indexes, subgraphs and the rest shared)."""
    sub = copy.copy(net)
    sub.oplists = ops
    sub.outputName = outputs
    return sub


class Runner:
    """Runs a net from input tensors (by index) to output tensors: one Session, or a cut (see the module doc)."""

    def __init__(self, net: Any, inputs: list[int], outputs: list[int], config: dict[str, Any],
                 user_inputs: set[int] | None = None) -> None:
        self.net = net
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.config = dict(config)
        self.user_inputs = set(inputs) if user_inputs is None else set(user_inputs)
        self.names = [str(n) for n in (net.tensorName or [])]
        self.session: Session | None = None
        self.cut: tuple[Runner, Any, Runner] | None = None
        self.formats: dict[int, str] = {}  # output index -> host format of the last run ("NHWC" or "NCHW")

    @property
    def cuts(self) -> int:
        """How many ops run between segments (0: one session)."""
        return 0 if self.cut is None else 1 + self.cut[2].cuts

    def prepare(self) -> None:
        """Plan at the declared input shapes (a cut found here is made now; errors surface at load)."""
        self._plan({})

    def run(self, feeds: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Output values for input values ``feeds`` (every input of this runner)."""
        if self.cut is None:
            session = self._plan({i: v.shape for i, v in feeds.items()})
            if session is not None:
                return self._run_session(session, feeds)
        return self._run_cut(feeds)

    # *** one session ***
    def _plan(self, shapes: dict[int, tuple[int, ...]]) -> Session | None:
        """The session planned for ``shapes`` (made or resized as needed); None when the net was cut instead."""
        s = self.session
        if s is None:
            config = {**self.config, "outputPaths": [self.names[i] for i in self.outputs]}
            s = self.session = Session(self.net, config, dict(shapes))
        elif s.graph is None or any(s.graph.descs[i] is None or s.graph.descs[i].shape != shape
                                    for i, shape in shapes.items()):
            s.input_shapes.update(shapes)
            try:
                s.resize()
            except InputValueNeeded as exc:  # kept as the constructor keeps it: values come with the next run
                s.resize_error = exc
        error = s.resize_error
        if isinstance(error, InputValueNeeded) and error.tensor is not None and error.tensor not in self.user_inputs:
            self._make_cut(error)
            self.session = None
            s.release()
            return None
        return s

    def _run_session(self, s: Session, feeds: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        for i, value in feeds.items():
            s.write(i, value)
        s.run()
        self.formats = {i: "NHWC" if s.graph.descs[i].fmt == NHWC else "NCHW" for i in self.outputs}
        return {i: np.array(s.read(i)) for i in self.outputs}

    # *** a cut ***
    def _make_cut(self, error: InputValueNeeded) -> None:
        ops = list(self.net.oplists or [])
        k = int(error.op_index)
        op = ops[k]
        before, after = ops[:k], ops[k + 1:]
        made = {o for p in before if p.type not in (OT.Input, OT.Const) for o in _indexes(p.outputIndexes)}
        consts = {o: p for p in before if p.type == OT.Const for o in _indexes(p.outputIndexes)}
        later = set(self.outputs) | set(_indexes(op.inputIndexes))
        for p in after:
            later.update(_indexes(p.inputIndexes))
        crossing = sorted(made & later)
        self.cut_op_outputs = _indexes(op.outputIndexes)
        first = Runner(_subnet(self.net, before, [self.names[i] for i in crossing]), self.inputs, crossing,
                       self.config, self.user_inputs)
        passed = [i for i in self.inputs if i in later]
        kept = [consts[i] for i in sorted(consts) if i in later]
        rest_inputs = passed + crossing + self.cut_op_outputs
        rest = _LazyRunner(self.net, after, kept, rest_inputs, self.outputs, self.config, self.user_inputs)
        first.prepare()
        self.cut = (first, op, rest)  # type: ignore[assignment]
        self.consts = {i: blob_value(consts[i].main) for i in _indexes(op.inputIndexes) if i in consts}

    def _run_cut(self, feeds: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        first, op, rest = self.cut  # type: ignore[misc]
        values = {**feeds, **self.consts, **first.run({i: feeds[i] for i in first.inputs})}
        formats = dict(first.formats)
        ins = _indexes(op.inputIndexes)
        missing = [self.names[i] for i in ins if i not in values]
        if missing:
            raise ModelError(f"op {op.name!r} ({op_type_name(op.type)}): inputs {missing} are not computed before it")
        outs = eval_op(op, [values[i] for i in ins], _cpu_backend())
        values.update(zip(self.cut_op_outputs, outs, strict=False))
        result = rest.run({i: values[i] for i in rest.inputs}, formats)
        self.formats = rest.formats
        return result


class _LazyRunner:
    """The ops after a cut: a Runner built on the first run, when the crossing tensors' shapes and dtypes are
    known (its Input ops declare them)."""

    def __init__(self, net: Any, ops: list[Any], consts: list[Any], inputs: list[int], outputs: list[int],
                 config: dict[str, Any], user_inputs: set[int]) -> None:
        self.net, self.ops, self.consts = net, ops, consts
        self.inputs, self.outputs, self.config, self.user_inputs = inputs, outputs, config, user_inputs
        self.runner: Runner | None = None
        self.formats: dict[int, str] = {}

    @property
    def cuts(self) -> int:
        return 0 if self.runner is None else self.runner.cuts

    def run(self, feeds: dict[int, np.ndarray], formats: dict[int, str]) -> dict[int, np.ndarray]:
        if self.runner is None:
            names = [str(n) for n in (self.net.tensorName or [])]
            declared = {int(_indexes(p.outputIndexes)[0]): p for p in self.net.oplists or [] if p.type == OT.Input}
            heads = [copy.copy(declared[i]) if i in declared else
                     _input_op(i, names[i], feeds[i], formats.get(i, "NCHW")) for i in self.inputs]
            net = _subnet(self.net, [*heads, *self.consts, *self.ops], [names[i] for i in self.outputs])
            self.runner = Runner(net, self.inputs, self.outputs, self.config, self.user_inputs)
        out = self.runner.run(feeds)
        self.formats = self.runner.formats
        return out


_BACKEND: list[Any] = []


def _cpu_backend() -> Any:
    """The CPU backend the ops between segments run on (one per process)."""
    if not _BACKEND:
        _BACKEND.append(registry.get_runtime("cpu").create_backend({}))
    return _BACKEND[0]


def eval_op(op: Any, values: list[np.ndarray], backend: Any) -> list[np.ndarray]:
    """Run one op on host values: its output shapes from its shape function (which may read the values), then its
    CPU kernel (``fold_op``)."""
    entry = registry.SHAPES.get(int(op.type))
    kind = op_type_name(op.type)
    if entry is None:
        raise ModelError(f"op {op.name!r} of type {kind} ({op.type}) is not supported (no shape function)")
    descs = [TensorDesc(v.shape, v.dtype, "NCHW") for v in values]
    try:
        out_descs = entry.fn(op, descs, values)
        return fold_op(backend, op, values, out_descs)
    except (ValueError, IndexError, TypeError, KeyError, ZeroDivisionError, NotImplementedError) as exc:
        raise ModelError(f"op {op.name!r} ({kind}): failed on inputs {[d.shape for d in descs]}: {exc}") from exc
