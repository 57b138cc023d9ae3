"""Pre-inference, part 1 (MNN: `Pipeline::encode`): shape inference, resize-time constant folding, geometry and
materialisation of virtual tensors into Raster commands.

The result is a `Graph`: tensor descriptors, constant values, and the list of real commands in run order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mnnpy.core import registry
from mnnpy.core.geometry import raster as ref_raster
from mnnpy.core.geometry.fuse import Gather, fuse
from mnnpy.core.ir import FORMAT_FROM_MNN, NC4HW4, NCHW, Command, Region, TensorDesc
from mnnpy.core.shape._util import ValueNeeded, np_dtype
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType
RASTER = int(OT.Raster)
SHAPE_QUERIES = {int(OT.Shape), int(OT.Rank), int(OT.Size)}
_OP_NAMES = {v: k for k, v in vars(OT).items() if not k.startswith("_")}


class InputValueNeeded(ModelError):  # noqa: N818 - a condition, like MNN's needInputContentForShape
    """A shape depends on the *values* of graph inputs (MNN: `needInputContentForShape`).

    Attributes:
        inputs: the graph inputs whose values flow into the needed tensor.
        tensor: the tensor whose value the shape needs (one of ``inputs``, or an op's output computed from them).
        op_index: the position in ``net.oplists`` of the op whose shape needs it.
    """

    def __init__(self, message: str, inputs: set[int], tensor: int | None = None, op_index: int | None = None
                 ) -> None:
        super().__init__(message)
        self.inputs = inputs
        self.tensor = tensor
        self.op_index = op_index


class UnsupportedOp(ModelError):  # noqa: N818 - the name the design uses
    """An op has no shape function or no kernel on any backend."""


def op_type_name(t: int) -> str:
    """MNN's name of an OpType number."""
    return _OP_NAMES.get(int(t), f"OpType{t}")


@dataclass
class RasterSpec:
    """What a Raster command writes: regions and gathers whose origins are positions in the command's inputs."""

    regions: list[Region]
    gathers: list[Gather]
    full: bool


@dataclass
class Graph:
    """The encoded graph.

    Attributes:
        descs: tensor index -> descriptor (None for tensors no op produces).
        values: tensor index -> logical value, for constants and folded tensors.
        commands: real commands in run order (Raster commands included).
        inputs / outputs: graph input and output tensor indices.
        names: tensor names.
    """

    descs: list[TensorDesc | None]
    values: dict[int, np.ndarray]
    commands: list[Command]
    inputs: list[int]
    outputs: list[int]
    names: list[str]
    folded: int = 0
    virtual: dict[int, list[Region]] = field(default_factory=dict)

    def desc(self, i: int) -> TensorDesc:
        """The descriptor of tensor `i` (ModelError when nothing produces it)."""
        d = self.descs[i]
        if d is None:
            raise ModelError(f"tensor {self.names[i]!r} is read but never produced")
        return d

    def add_tensor(self, desc: TensorDesc, name: str) -> int:
        """Append a generated tensor (format conversion, copies) and return its index."""
        self.descs.append(desc)
        self.names.append(name)
        return len(self.descs) - 1


def blob_value(blob: Any) -> np.ndarray:
    """A Const op's Blob as a numpy array (int64 narrowed to int32, bool as int32)."""
    dims = [] if blob.dims is None else [int(d) for d in np.asarray(blob.dims).ravel()]
    dtype = np_dtype(blob.dataType)
    for attr in ("float32s", "int32s", "int64s", "uint8s", "int8s"):
        data = getattr(blob, attr, None)
        if data is not None and len(data):
            arr = np.asarray(data).astype(dtype)
            if arr.size != int(np.prod(dims)):
                raise ModelError(f"constant has {arr.size} values for dims {dims}")
            return arr.reshape(dims)
    return np.zeros(dims, dtype=dtype)


def _input_desc(op: Any, override: tuple[int, ...] | TensorDesc | None) -> TensorDesc:
    if isinstance(override, TensorDesc):  # control-flow bodies take their parent's shape and dtype
        return override
    p = op.main
    dims = [int(d) for d in np.asarray(p.dims).ravel()] if p is not None and p.dims is not None else []
    shape = tuple(override) if override is not None else tuple(1 if d < 0 else d for d in dims)
    fmt = FORMAT_FROM_MNN.get(p.dformat, NCHW) if p is not None else NC4HW4
    return TensorDesc(shape, np_dtype(p.dtype if p is not None else 1), fmt)


def encode(net: Any, input_shapes: dict[int, tuple[int, ...] | TensorDesc], keep: set[int], eval_const: Any,
           output_names: list[str] | None = None, input_values: dict[int, np.ndarray] | None = None) -> Graph:
    """Shape inference, constant folding and geometry over the whole net.

    Args:
        net: the object-API `fb.NetT`.
        input_shapes: user shapes of input tensors (from `resizeTensor`).
        keep: tensors that must be materialised (outputs, saveTensors).
        eval_const: `fn(op, in_values, out_descs) -> list[np.ndarray]` that runs an op on constants (CPU).
        output_names: outputs chosen by the config (MNN: `ScheduleConfig::path.outputs`), else the net's.
        input_values: values of inputs that shapes depend on; they are folded like constants.

    Raises:
        InputValueNeeded: a shape needs the value of graph inputs not in `input_values`.
    """
    registry.load_core()
    graphs = {str(sg.name): sg for sg in (getattr(net, "subgraphs", None) or [])}
    names = [str(n) for n in (net.tensorName or [])]
    n = len(names)
    g = Graph([None] * n, {}, [], [], [], names)
    pending: list[Command] = []
    producers: dict[int, list[int]] = {}
    given = input_values or {}
    for op_index, op in enumerate(net.oplists or []):
        ins = [int(i) for i in np.asarray(op.inputIndexes if op.inputIndexes is not None else []).ravel()]
        outs = [int(i) for i in np.asarray(op.outputIndexes if op.outputIndexes is not None else []).ravel()]
        name = str(op.name or "")
        if graphs and op.type in (OT.While, OT.If):
            op.subgraphs = graphs  # control-flow ops find their bodies by name
        if op.type == OT.Input:
            desc = _input_desc(op, input_shapes.get(outs[0]))
            if outs[0] in given:
                value = np.asarray(given[outs[0]]).astype(desc.dtype)
                g.values[outs[0]] = value
                desc = TensorDesc(value.shape, desc.dtype, NCHW)
            g.descs[outs[0]] = desc
            g.inputs.append(outs[0])
            continue
        for o in outs:
            producers[o] = ins
        if op.type == OT.Const:
            value = blob_value(op.main)
            g.values[outs[0]] = value
            g.descs[outs[0]] = TensorDesc(value.shape, value.dtype, NCHW)
            continue
        missing = [names[i] for i in ins if g.descs[i] is None]
        if missing:
            raise ModelError(f"op {name!r}: input tensor(s) {missing} are never produced")
        in_descs = [g.desc(i) for i in ins]
        if op.type in SHAPE_QUERIES:
            shape = in_descs[0].shape
            value = np.array(shape if op.type == OT.Shape else len(shape) if op.type == OT.Rank
                             else int(np.prod(shape)), dtype=np.int32)
            g.values[outs[0]] = value
            g.descs[outs[0]] = TensorDesc(value.shape, np.dtype(np.int32), NCHW)
            continue
        entry = registry.SHAPES.get(int(op.type))
        if entry is None:
            raise UnsupportedOp(f"op {name!r} of type {op_type_name(op.type)} ({op.type}) is not supported "
                                f"(no shape function)")
        in_values = [g.values.get(i) for i in ins]
        for pos in entry.needs_values:
            if pos < len(ins) and in_values[pos] is None:
                raise _value_needed(g, producers, op, op_index, [ins[pos]])
        try:
            out_descs = entry.fn(op, in_descs, in_values)
        except ValueNeeded as exc:
            raise _value_needed(g, producers, op, op_index, [ins[exc.position]]) from None
        except InputValueNeeded as exc:  # from a control-flow body planned inside the shape function: its inputs
            # are the body's, so ask for the values of every unknown input of this op instead
            unknown = [i for i, v in zip(ins, in_values, strict=True) if v is None]
            if not unknown:
                raise ModelError(f"op {name!r} ({op_type_name(op.type)}): {exc}") from exc
            raise _value_needed(g, producers, op, op_index, unknown) from exc
        except (ValueError, IndexError, TypeError, ZeroDivisionError, NotImplementedError) as exc:
            raise ModelError(f"op {name!r} ({op_type_name(op.type)}): shape inference failed for inputs "
                             f"{[d.shape for d in in_descs]}: {exc}") from exc
        for i, d in zip(outs, out_descs, strict=False):
            g.descs[i] = d
        if ins and all(v is not None for v in in_values):
            try:
                folded = eval_const(op, in_values, out_descs)
            except (ValueError, IndexError, TypeError, KeyError, ZeroDivisionError) as exc:
                raise ModelError(f"op {name!r} ({op_type_name(op.type)}): constant folding failed: {exc}") from exc
            for i, v in zip(outs, folded, strict=False):
                g.values[i] = v
                g.descs[i] = TensorDesc(v.shape, v.dtype, NCHW)
            g.folded += 1
            continue
        geo = registry.GEOMETRY.get(int(op.type))
        try:
            regions = geo(op, in_descs, out_descs, in_values) if geo is not None else None
        except (ValueError, IndexError, TypeError, KeyError) as exc:
            raise ModelError(f"op {name!r} ({op_type_name(op.type)}): geometry failed: {exc}") from exc
        if regions is not None:
            for i, regs in zip(outs, regions, strict=True):
                g.virtual[i] = [Region(r.src, r.dst, r.size, ins[r.origin]) for r in regs]
            continue
        pending.append(Command(int(op.type), name, ins, outs, op))
    wanted = output_names or [str(o) for o in (net.outputName or [])]
    outputs = [names.index(o) for o in wanted if o in names]
    if not outputs:
        used = {i for c in pending for i in c.inputs} | {r.origin for rs in g.virtual.values() for r in rs}
        outputs = [i for c in pending for i in c.outputs if i not in used]
        outputs += [i for i in g.virtual if i not in used]
    g.outputs = outputs
    g.commands = _materialise(g, _live(g, pending, set(outputs) | keep), set(outputs) | keep)
    return g


def _value_needed(g: Graph, producers: dict[int, list[int]], op: Any, op_index: int,
                  tensors: list[int]) -> ModelError:
    """The error for an op whose shape needs the values of ``tensors``: InputValueNeeded when graph inputs' values
    flow into them (they are given at the next resize; ``tensor`` names the first), else a ModelError."""
    label = f"op {str(op.name or '')!r} ({op_type_name(op.type)})"
    inputs = set(g.inputs)
    sources = set().union(*(_input_sources(t, producers, inputs) for t in tensors))
    if sources:
        return InputValueNeeded(f"{label}: its output shape depends on the values of input(s) "
                                f"{sorted(g.names[i] for i in sources)}", sources, tensors[0], op_index)
    return ModelError(f"{label}: input {g.names[tensors[0]]!r} must be known before running (its value decides the "
                      f"output shape)")


def _input_sources(tensor: int, producers: dict[int, list[int]], inputs: set[int]) -> set[int]:
    """Graph inputs whose values flow into `tensor`."""
    found, stack, seen = set(), [tensor], set()
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        if t in inputs:
            found.add(t)
        stack.extend(producers.get(t, []))
    return found


def _live(g: Graph, pending: list[Command], wanted: set[int]) -> list[Command]:
    """Drop commands no output (or kept tensor) depends on, through virtual tensors too.

    One pass from the last command back: every command reads only tensors made before it (`encode` checks that), so
    by the time a command is reached, everything after it that needs its outputs has been seen. (A fixpoint of
    forward passes took one pass per link of the longest chain: ViT-tiny's ~300 commands, ~10 ms.)"""
    needed: set[int] = set()

    def need(tensors: list[int] | set[int]) -> None:
        stack = list(tensors)
        while stack:
            t = stack.pop()
            if t not in needed:
                needed.add(t)
                stack.extend(r.origin for r in g.virtual.get(t, ()))

    need(wanted)
    live = []
    for cmd in reversed(pending):
        if needed.intersection(cmd.outputs):
            need(cmd.inputs)
            live.append(cmd)
    return live[::-1]


def _materialise(g: Graph, pending: list[Command], keep: set[int]) -> list[Command]:
    """Insert one Raster command per virtual tensor a real command reads (or the user keeps), fusing chains."""
    done: set[int] = set()
    commands: list[Command] = []

    def size_of(i: int) -> int:
        return g.desc(i).size

    def need(i: int) -> None:
        if i not in g.virtual or i in done:
            return
        regions, gathers = fuse(g.virtual[i], g.virtual, size_of, done)
        done.add(i)
        origins = sorted({r.origin for r in regions} | {x.origin for x in gathers})
        for o in origins:
            need(o)
        pos = {o: k for k, o in enumerate(origins)}
        spec = RasterSpec([Region(r.src, r.dst, r.size, pos[r.origin]) for r in regions],
                          [Gather(pos[x.origin], x.src_idx, x.dst_idx) for x in gathers],
                          _covers(regions, gathers, size_of(i)))
        commands.append(Command(RASTER, f"raster:{g.names[i]}", origins, [i], spec))

    for cmd in pending:
        for i in cmd.inputs:
            need(i)
        commands.append(cmd)
    for i in sorted(keep):
        need(i)
    return commands


def _covers(regions: list[Region], gathers: list[Gather], size: int) -> bool:
    if gathers:
        hit = np.zeros(size, dtype=bool)
        for x in gathers:
            hit[x.dst_idx] = True
        for r in regions:
            hit[ref_raster.region_indices(r.dst.offset, r.dst.stride, r.size)] = True
        return bool(hit.all())
    return ref_raster.is_full(regions, size)
