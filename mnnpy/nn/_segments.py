"""How a Module runs a `.mnn` net whose shapes depend on values the net computes (MNN: `PipelineModule`'s split).

Pre-inference plans a session from input *shapes*. An op like Where with one input (ONNX NonZero) has an output
shape set by the *values* of its input, so when that input is computed by the net no single plan fits every run.
MNN's Session API refuses such a net ("use module api instead"); its Module API splits the net there. So does this:

* a ``Runner`` plans the net as one Session while it can. When pre-inference stops at an op whose shape needs a
  tensor the net computes (``InputValueNeeded.tensor`` is not an input the user feeds), the net is split, on the
  first run (the values are needed to find every such op):
* the head: a Runner of every op that reads nothing such an op makes. Finding them is shape planning alone
  (``encode``, no kernels), repeated with each op found set aside with everything after it that reads its outputs;
* the ops found run eagerly on the CPU with the head's values (their output shapes computed from them). However
  many there are side by side (ONNX NonMaxSuppression becomes one op per class), they are one layer;
* the tail: the ops after them, a Runner whose inputs are the tensors crossing from the head and the eager ops'
  outputs, planned when their shapes are known and planned again only when they change. It may split again (a
  chain of such ops gives as many layers as its length).

Every segment keeps the whole pre-inference (geometry, strategy, memory plan) of a normal session. Shapes that
depend on the values of an input the user feeds (a shape tensor) stay with the Session's own mechanism: it plans
again when those values change (MNN: ``needInputContentForShape``). The Session API runs a split net that way too:
every op up to the value-shaped ones is folded with the input's values, planned again for each new input.
"""

from __future__ import annotations

import copy
from functools import partial
from typing import Any

import numpy as np

from mnnpy.core import registry
from mnnpy.core.ir import NCHW, NHWC, TensorDesc
from mnnpy.core.pipeline import InputValueNeeded, blob_value, encode, op_type_name
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


def needs_split(session: Session, user_inputs: set[int]) -> bool:
    """Whether the session stopped planning at an op whose shape needs a value the net computes (not one of the
    inputs the user feeds): such a net runs as segments."""
    error = session.resize_error
    return isinstance(error, InputValueNeeded) and error.tensor is not None and error.tensor not in user_inputs


class Runner:
    """Runs a net from input tensors (by index) to output tensors: one Session, or a split (see the module doc)."""

    def __init__(self, net: Any, inputs: list[int], outputs: list[int], config: dict[str, Any],
                 user_inputs: set[int] | None = None) -> None:
        self.net = net
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.config = dict(config)
        self.user_inputs = set(inputs) if user_inputs is None else set(user_inputs)
        self.names = [str(n) for n in (net.tensorName or [])]
        self.session: Session | None = None
        self.split: _Split | None = None
        self.needs_split = False  # planning found an op whose shape needs a value the net computes
        self.formats: dict[int, str] = {}  # output index -> host format of the last run ("NHWC" or "NCHW")

    @property
    def layers(self) -> int:
        """How many layers of value-shaped ops run between segments (0: one session)."""
        return 0 if self.split is None else self.split.layers

    def release(self) -> None:
        """Release every segment's session now (device memory included) rather than when they are collected."""
        if self.session is not None:
            self.session.release()
        if self.split is not None:
            self.split.head.release()
            if self.split.tail is not None and self.split.tail.runner is not None:
                self.split.tail.runner.release()

    def prepare(self) -> None:
        """Plan at the declared input shapes, so that a net that cannot be planned fails at load. A net that needs
        segments is split on its first run, when the values are there."""
        self._plan({})

    def run(self, feeds: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Output values for input values ``feeds`` (every input of this runner)."""
        if self.split is None:
            session = None if self.needs_split else self._plan({i: v.shape for i, v in feeds.items()})
            if session is not None:
                return self._run_session(session, feeds)
            self.split = _Split(self, feeds)
        out = self.split.run(feeds)
        self.formats = self.split.formats
        return out

    # *** one session ***
    def _plan(self, shapes: dict[int, tuple[int, ...]]) -> Session | None:
        """The session planned for ``shapes`` (made or resized as needed); None when the net must be split."""
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
        if needs_split(s, self.user_inputs):
            self.session = None
            self.needs_split = True
            s.release()
            return None
        return s

    def _run_session(self, s: Session, feeds: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        for i, value in feeds.items():
            s.write(i, value)
        s.run()
        self.formats = {i: "NHWC" if s.graph.descs[i].fmt == NHWC else "NCHW" for i in self.outputs}
        return {i: np.array(s.read(i)) for i in self.outputs}


class _Split:
    """A net in three layers: the ops that can be planned from input shapes (one Runner), the ops whose shapes need
    values those compute (each run eagerly), and the ops after them (a Runner planned when their shapes are known,
    which may split again). However many such ops are side by side (one NonMaxSuppression per class), they run in
    one layer: the depth is that of their chain, not their count."""

    def __init__(self, owner: Runner, feeds: dict[int, np.ndarray]) -> None:
        net, names = owner.net, owner.names
        ops = list(net.oplists or [])
        self.formats: dict[int, str] = {}
        frontier, later = _find_frontier(owner, ops, feeds)
        self.frontier = [ops[k] for k in frontier]
        head = [op for k, op in enumerate(ops) if k not in later]
        tail = [op for k, op in enumerate(ops) if k in later and k not in frontier]
        made_by = {o: k for k, op in enumerate(ops) for o in _indexes(op.outputIndexes)}
        tail_uses = set(owner.outputs).union(*(_indexes(op.inputIndexes) for op in tail))
        frontier_uses = set().union(*(_indexes(op.inputIndexes) for op in self.frontier))
        consts = {o for o, k in made_by.items() if ops[k].type == OT.Const}
        head_made = {o for o, k in made_by.items() if k not in later and o not in consts and ops[k].type != OT.Input}
        crossing = sorted(head_made & (tail_uses | frontier_uses))
        self.head = Runner(_subnet(net, head, [names[i] for i in crossing]), owner.inputs, crossing, owner.config,
                           owner.user_inputs)
        self.consts = {i: blob_value(ops[made_by[i]].main) for i in frontier_uses & consts}
        self.frontier_outputs = [o for op in self.frontier for o in _indexes(op.outputIndexes)]
        self.tail_outputs = [i for i in owner.outputs if made_by.get(i) in later and i not in self.frontier_outputs]
        self.outputs = owner.outputs
        self.tail = None
        if self.tail_outputs:
            tail_inputs = [i for i in [*owner.inputs, *crossing, *self.frontier_outputs] if i in tail_uses]
            tail_consts = [ops[made_by[i]] for i in sorted(tail_uses & consts)]
            self.tail = _LazyRunner(net, tail, tail_consts, tail_inputs, self.tail_outputs, owner.config,
                                    owner.user_inputs)

    @property
    def layers(self) -> int:
        return 1 + (self.tail.layers if self.tail is not None else 0)

    def run(self, feeds: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        values = {**feeds, **self.consts, **self.head.run({i: feeds[i] for i in self.head.inputs})}
        formats = {i: "NCHW" for i in values} | self.head.formats
        backend = _cpu_backend()
        for op in self.frontier:
            ins = _indexes(op.inputIndexes)
            outs = eval_op(op, [values[i] for i in ins], backend)
            values.update(zip(_indexes(op.outputIndexes), outs, strict=False))
        if self.tail is not None:
            values.update(self.tail.run({i: values[i] for i in self.tail.inputs}, formats))
            formats.update(self.tail.formats)
        self.formats = {i: formats.get(i, "NCHW") for i in self.outputs}
        return {i: values[i] for i in self.outputs}


def _find_frontier(owner: Runner, ops: list[Any], feeds: dict[int, np.ndarray]) -> tuple[list[int], set[int]]:
    """The ops whose shapes need values computed by the net, found by planning shapes (no kernels) with each one
    found and everything after it that reads its outputs set aside, until the rest plans: (their positions, the
    positions of every op set aside, themselves included)."""
    shapes = {i: v.shape for i, v in feeds.items()}
    values: dict[int, np.ndarray] = {}
    frontier: list[int] = []
    later: set[int] = set()
    fold = partial(fold_op, _cpu_backend())
    while True:
        kept = [k for k in range(len(ops)) if k not in later]
        try:
            encode(_subnet(owner.net, [ops[k] for k in kept], []), shapes, set(), fold, None, values)
            return frontier, later
        except InputValueNeeded as exc:
            if exc.tensor in owner.user_inputs:  # shapes from the values of inputs the user feeds: given here
                if not exc.inputs - values.keys():
                    raise
                values.update({i: feeds[i] for i in exc.inputs if i in feeds})
                continue
            k = kept[int(exc.op_index)]
            frontier.append(k)
            later.add(k)
            unknown = set(_indexes(ops[k].outputIndexes))
            for j in range(k + 1, len(ops)):
                if unknown.intersection(_indexes(ops[j].inputIndexes)):
                    later.add(j)
                    unknown.update(_indexes(ops[j].outputIndexes))


class _LazyRunner:
    """The ops after the value-shaped ones: a Runner built on the first run, when the shapes and dtypes of the
    tensors crossing into it are known (its Input ops declare them)."""

    def __init__(self, net: Any, ops: list[Any], consts: list[Any], inputs: list[int], outputs: list[int],
                 config: dict[str, Any], user_inputs: set[int]) -> None:
        self.net, self.ops, self.consts = net, ops, consts
        self.inputs, self.outputs, self.config, self.user_inputs = inputs, outputs, config, user_inputs
        self.runner: Runner | None = None
        self.formats: dict[int, str] = {}

    @property
    def layers(self) -> int:
        return 0 if self.runner is None else self.runner.layers

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
    registry.load_core()
    entry = registry.SHAPES.get(int(op.type))
    kind = op_type_name(op.type)
    if entry is None:
        raise ModelError(f"op {op.name!r} of type {kind} ({op.type}) is not supported (no shape function)")
    descs = [TensorDesc(v.shape, v.dtype, NCHW) for v in values]
    try:
        out_descs = entry.fn(op, descs, values)
        return fold_op(backend, op, values, out_descs)
    except (ValueError, IndexError, TypeError, KeyError, ZeroDivisionError, NotImplementedError) as exc:
        raise ModelError(f"op {op.name!r} ({kind}): failed on inputs {[d.shape for d in descs]}: {exc}") from exc
