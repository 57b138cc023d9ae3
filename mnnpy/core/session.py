"""A Session: pre-inference once per input shape (`resize`), then bare runs (MNN: `Session`).

`resize` = encode (shape, folding, geometry) -> schedule (backend per command, layout converts) -> memory plan ->
`on_resize`. `run` only calls `on_execute` on every command.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mnnpy.core import registry
from mnnpy.core.backend import Backend, BackendUnavailable, TensorRef
from mnnpy.core.geometry import raster as ref_raster
from mnnpy.core.ir import NCHW, NHWC, TensorDesc
from mnnpy.core.layout import pack_value, unpack_value
from mnnpy.core.pipeline import RASTER, InputValueNeeded, encode, op_type_name
from mnnpy.core.schedule import Scheduler
from mnnpy.core.shape._util import np_dtype
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError


def _unpacked(ref: TensorRef) -> np.ndarray:
    return unpack_value(ref.array, ref.desc.shape)


COUNTERS: dict[str, int] = {"resizes": 0, "runs": 0, "weight_transforms": 0}
BACKEND_NAMES = {0: "cpu", 3: "opencl", 4: "auto", 7: "vulkan", "CPU": "cpu", "OPENCL": "opencl",
                 "VULKAN": "vulkan", "AUTO": "auto"}


def backend_name(value: Any) -> str:
    """Config `backend` value (name or MNNForwardType int) -> backend package name."""
    if isinstance(value, str):
        return BACKEND_NAMES.get(value.upper(), value.lower())
    return BACKEND_NAMES.get(int(value), "cpu") if value is not None else "cpu"


def _make_backend(name: str, config: dict[str, Any]) -> Backend:
    if name == "auto":
        for cand in ("opencl", "vulkan", "cpu"):
            try:
                return registry.get_runtime(cand).create_backend(config)
            except BackendUnavailable:
                continue
    try:
        return registry.get_runtime(name).create_backend(config)
    except BackendUnavailable as exc:
        if name == "cpu" or "backupType" not in config:
            raise BackendUnavailable(f"backend {name!r} requested and no backupType given: {exc}") from exc
        backup = backend_name(config["backupType"])
        warnings.warn(f"backend {name!r} unavailable ({exc}); using backupType {backup!r}", RuntimeWarning,
                      stacklevel=3)
        return registry.get_runtime(backup).create_backend(config)



def _host_desc(desc: TensorDesc) -> TensorDesc:
    """A host copy's descriptor: logical values in the tensor's own dim order (NHWC stays NHWC, as in TF models)."""
    return desc if desc.fmt == NHWC else desc.with_(fmt=NCHW)

def fold_op(backup: Backend, op: Any, in_values: list[np.ndarray], out_descs: list[TensorDesc]) -> list[np.ndarray]:
    """Run one op on constant inputs on the CPU backend ``backup`` (resize-time constant folding)."""
    geo = registry.GEOMETRY.get(int(op.type))
    in_descs = [TensorDesc(v.shape, v.dtype, NCHW) for v in in_values]
    regions = geo(op, in_descs, out_descs, in_values) if geo is not None else None
    if regions is not None:
        return [ref_raster.raster(r, in_values, d.shape, d.dtype) for r, d in zip(regions, out_descs, strict=True)]
    fmts = backup.supported_formats(op.type)
    fmt = NCHW if NCHW in fmts else fmts[0]
    ins = [TensorRef(-1, TensorDesc(v.shape, v.dtype, fmt if k == 0 else NCHW), "",
                     pack_value(v, fmt) if k == 0 else v, True) for k, v in enumerate(in_values)]
    outs = [TensorRef(-1, d.with_(fmt=fmt)) for d in out_descs]
    for r in outs:
        r.array = np.zeros(r.desc.physical_shape, dtype=r.desc.dtype)
    execution = backup.on_create(op.type, op, ins, outs)
    if execution is None:
        raise ModelError(f"op {op.name!r} ({op_type_name(op.type)}): cannot fold constants, no CPU kernel")
    execution.on_resize()
    execution.on_execute()
    return [np.array(_unpacked(r) if r.desc.fmt == "NC4HW4" else r.array) for r in outs]


def infer_shapes(net: Any) -> dict[str, tuple[int, ...]]:
    """Tensor name -> logical shape, from pre-inference's shape computation and constant folding alone (no kernels,
    no memory) at the net's declared input shapes: what the converter's passes ask of a graph written as a net.

    Raises:
        ModelError: pre-inference cannot run (dynamic input dims, shapes that need input values, a bad net).
    """
    from functools import partial

    backup = registry.get_runtime("cpu").create_backend({})
    g = encode(net, {}, set(), partial(fold_op, backup))
    return {g.names[i]: tuple(d.shape) for i, d in enumerate(g.descs[: len(net.tensorName or [])]) if d is not None}


class Session:
    """One runnable instance of a net for a ScheduleConfig (MNN: `Session`)."""

    def __init__(self, net: Any, config: dict[str, Any] | None = None,
                 input_shapes: Mapping[int, tuple[int, ...] | TensorDesc] | None = None) -> None:
        self.net = net
        self.config = dict(config or {})
        self.main = _make_backend(backend_name(self.config.get("backend", "CPU")), self.config)
        self.backup = self.main if self.main.name == "cpu" else registry.get_runtime("cpu").create_backend(self.config)
        self.input_shapes: dict[int, tuple[int, ...] | TensorDesc] = dict(input_shapes or {})
        self.names = [str(n) for n in (net.tensorName or [])]
        self.save = {self.names.index(s) for s in self.config.get("saveTensors", ()) if s in self.names}
        self.output_paths = [str(s) for s in self.config.get("outputPaths", ()) or ()]
        unknown = [s for s in [*self.output_paths, *self.config.get("saveTensors", ())] if s not in self.names]
        if unknown:
            raise ModelError(f"config names unknown tensors {unknown}")
        self.commands: list = []
        self.refs: dict[int, TensorRef] = {}
        self.resize_time = 0.0
        self.resize_error: ModelError | None = None
        self.released = False
        self.graph: Any = None
        self.value_inputs: set[int] = set()  # inputs whose values decide shapes (MNN: needInputContentForShape)
        self.last_inputs: dict[int, np.ndarray] = {}
        self.needs_resize = False
        try:
            self.resize()
        except ModelError as exc:
            dynamic = any(-1 in r.desc.shape for r in self._input_placeholders().values())
            if not dynamic and not isinstance(exc, InputValueNeeded):
                raise
            self.resize_error = exc  # MNN: "Can't run session because not resized"; resizeTensor or input data next

    def _input_placeholders(self) -> dict[int, TensorRef]:
        """Every input as a ref without memory: declared dims (-1 kept) or the ones given by resizeTensor."""
        out = {}
        for op in self.net.oplists or []:
            if op.type != fb.OpType.Input:
                continue
            p = op.main
            dims = tuple(int(d) for d in np.asarray(p.dims).ravel()) if p is not None and p.dims is not None else ()
            idx = int(np.asarray(op.outputIndexes).ravel()[0])
            shape = self.input_shapes.get(idx, dims)
            shape = shape.shape if isinstance(shape, TensorDesc) else tuple(shape)
            dtype = np_dtype(p.dtype) if p is not None else np.dtype(np.float32)
            out[idx] = TensorRef(idx, TensorDesc(shape, dtype, NCHW), self.names[idx])
        return out

    # *** pre-inference ***
    def _eval_const(self, op: Any, in_values: list[np.ndarray], out_descs: list[TensorDesc]) -> list[np.ndarray]:
        """Run one op on constant inputs on the CPU backup backend (resize-time constant folding)."""
        return fold_op(self.backup, op, in_values, out_descs)

    def resize(self) -> None:
        """Redo pre-inference for the current input shapes (MNN: `Session::resize`)."""
        t0 = time.perf_counter()
        while True:
            values = {i: self.last_inputs[i] for i in self.value_inputs if i in self.last_inputs}
            try:
                graph = encode(self.net, self.input_shapes, self.save, self._eval_const, self.output_paths, values)
                break
            except InputValueNeeded as exc:
                fresh = exc.inputs - self.value_inputs
                self.value_inputs |= exc.inputs
                if not fresh or not all(i in self.last_inputs for i in exc.inputs):
                    raise
        sched = Scheduler(graph, self.main, self.backup)
        self.commands = sched.schedule()
        for i in graph.outputs:
            sched.ref(i)
        sched.plan(graph.inputs, set(graph.outputs) | self.save)
        self.commands = sched.commands  # aliased byte-identical copies dropped (see Scheduler.plan)
        self.graph = graph
        self.refs = sched.refs
        self.scheduler = sched
        self.resize_time = time.perf_counter() - t0
        self.resize_error = None
        self.released = False
        COUNTERS["resizes"] += 1

    # *** running ***
    def run(self, before: Callable | None = None, after: Callable | None = None) -> None:
        """Run every command (MNN: `Pipeline::execute`); callbacks get (command, tensors) and may stop the run."""
        if self.released:
            raise ModelError("the session was released")
        if self.value_inputs and (self.needs_resize or self.resize_error is not None):
            self._resize_for_values()
        if self.resize_error is not None:
            raise ModelError(f"session is not resized ({self.resize_error}); call resizeTensor + resizeSession")
        for b in {id(self.main): self.main, id(self.backup): self.backup}.values():
            b.on_execute_begin()
        cmd = None
        fused = self.scheduler.fused if before is None and after is None else None
        try:
            if fused is not None:  # chains (`Scheduler._fuse`) and groups (`Backend.run_groups`) run together: only
                groups, commands, k = self.scheduler.groups, self.commands, 0  # where no callback can see inside
                while k < len(commands):
                    cmd = commands[k]
                    group = groups.get(id(cmd))
                    if group is not None and group[0]():  # (a group's run covers its commands, or returns False)
                        k += group[1]
                        continue
                    run = fused.get(id(cmd))
                    if run is None:
                        cmd.execution.on_execute()
                    else:
                        run()
                    k += 1
            else:
                for cmd in self.commands:
                    if before is not None and before(cmd) is False:
                        continue
                    cmd.execution.on_execute()
                    if after is not None and after(cmd) is False:
                        break
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            where = f"op {cmd.name!r} ({op_type_name(cmd.op_type)})" if cmd is not None else "run"
            raise ModelError(f"{where} failed: {exc}") from exc
        finally:
            for b in {id(self.main): self.main, id(self.backup): self.backup}.values():
                b.on_execute_end()
        COUNTERS["runs"] += 1

    # *** tensors ***
    def input_index(self, name: str | None) -> int:
        """Index of an input tensor by name (None: the first input)."""
        if self.graph is None:
            pending = self._input_placeholders()
            if name is None or (name in self.names and self.names.index(name) in pending):
                return next(iter(pending)) if name is None else self.names.index(name)
        if name is None:
            return self.graph.inputs[0]
        if name not in self.names or self.names.index(name) not in self.graph.inputs:
            raise ModelError(f"no input tensor named {name!r}; inputs are {self.input_names()}")
        return self.names.index(name)

    def output_index(self, name: str | None) -> int:
        """Index of an output (or saved) tensor by name (None: the first output)."""
        if name is None:
            return self.graph.outputs[0]
        idx = self.names.index(name) if name in self.names else -1
        if idx < 0 or (idx not in self.refs and idx not in self.graph.values):
            raise ModelError(f"no output tensor named {name!r}; outputs are {self.output_names()}")
        return idx

    def input_names(self) -> list[str]:
        """Names of the graph inputs."""
        if self.graph is None:
            return [self.names[i] for i in self._input_placeholders()]
        return [self.names[i] for i in self.graph.inputs]

    def output_names(self) -> list[str]:
        """Names of the graph outputs."""
        return [self.names[i] for i in self.graph.outputs]

    def tensor_ref(self, index: int) -> TensorRef:
        """The bound tensor (constants get a ref carrying their value)."""
        if self.graph is None:
            pending = self._input_placeholders()
            if index in pending:
                return pending[index]
            raise ModelError("session is not resized: call resizeTensor + resizeSession")
        return self.scheduler.ref(index)

    def owner_of(self, index: int) -> Backend | None:
        """The backend whose memory holds tensor `index` (None for constants)."""
        return self.scheduler.owner.get(index)

    def read(self, index: int) -> np.ndarray:
        """A host copy of a tensor in logical order (downloads from a device backend if needed)."""
        ref = self.tensor_ref(index)
        if ref.array is None:
            raise ModelError(f"tensor {ref.name!r} has no memory (session released?)")
        owner = self.owner_of(index)
        host = TensorRef(-1, _host_desc(ref.desc), ref.name, np.empty(ref.desc.shape, dtype=ref.desc.dtype))
        if owner is None:
            np.copyto(host.array, ref.array if ref.desc.fmt != "NC4HW4" else _unpacked(ref))
        else:
            owner.on_copy(ref, host)
        if ref.extent is not None:  # an op shrank its output while running (MNN: DetectionOutput's rows)
            return np.ascontiguousarray(host.array[tuple(slice(0, e) for e in ref.extent)])
        return host.array

    def _resize_for_values(self) -> None:
        """Input values that shapes depend on changed: redo pre-inference, then restore the other inputs."""
        self.resize()
        self.needs_resize = False
        for idx, value in self.last_inputs.items():
            if idx not in self.value_inputs and value.size == self.graph.desc(idx).size:
                self.write(idx, value)

    def write(self, index: int, value: np.ndarray) -> None:
        """Store a logical host value into a tensor (uploads to a device backend if needed)."""
        if self.graph is None or index in self.value_inputs:  # kept for the next resize, which reads them
            previous = self.last_inputs.get(index)
            self.last_inputs[index] = np.array(value)
            if previous is None or previous.shape != value.shape or not np.array_equal(previous, value):
                self.needs_resize = True
            return
        if self.value_inputs and index in self.graph.inputs:  # restored after a value-driven resize
            self.last_inputs[index] = np.array(value)
        ref = self.tensor_ref(index)
        if ref.array is None:
            raise ModelError(f"tensor {ref.name!r} has no memory (session released?)")
        host = TensorRef(-1, _host_desc(ref.desc), ref.name,
                         np.ascontiguousarray(value.reshape(ref.desc.shape), dtype=ref.desc.dtype))
        (self.owner_of(index) or self.backup).on_copy(host, ref)

    def release(self) -> None:
        """Drop executions and arenas (MNN: `Interpreter::releaseSession`)."""
        for b in {id(self.main): self.main, id(self.backup): self.backup}.values():
            b.on_clear()
            getattr(b, "kernel_cache", {}).clear()
        for ref in self.refs.values():
            if not ref.const:
                ref.array = None  # views into the arena: drop them so the arena is freed now
        listed = self.scheduler.listed if self.graph is not None else []
        for cmd in [*self.commands, *listed, *(self.graph.commands if self.graph is not None else [])]:
            cmd.execution = None
        self.commands = []
        if self.graph is not None:
            self.scheduler.commands = self.scheduler.listed = []
        self.released = True

    # *** introspection ***
    def info(self) -> dict[str, Any]:
        """What pre-inference decided (mnnpy's own; MNN shows parts of it through `getSessionInfo`).

        Returns:
            `commands`: per command its name, type, backend, algorithm (for convolutions also the unit, the costs
            compared and the reason) and output shapes/formats; `memory`: the arena size against the sum of the
            planned tensor sizes; `folded_ops`: ops computed at resize time; `resize_seconds`.
        """
        if self.graph is None:
            return {"backend": self.main.name, "commands": [], "memory": {}, "folded_ops": 0, "resize_seconds": 0.0}
        cmds = []
        for c in self.scheduler.listed:  # aliased copies too (algorithm "alias"), in schedule order
            outs = [f"{self.graph.desc(o).shape}:{self.graph.desc(o).fmt}" for o in c.outputs]
            cmds.append({"name": c.name, "type": "Raster" if c.op_type == RASTER else op_type_name(c.op_type),
                         **c.info, "outputs": outs})
        mem = {**self.main.memory_info(), "commands": len(self.commands),
               "aliased": len(self.scheduler.listed) - len(self.commands)}
        return {"backend": self.main.name, "commands": cmds, "memory": mem, "folded_ops": self.graph.folded,
                "resize_seconds": self.resize_time}
