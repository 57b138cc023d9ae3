"""Pre-inference, part 2 (MNN: `Schedule` + `Pipeline::allocMemory`): pick a backend per command (None from
`on_create` -> CPU fallback), insert layout conversions where a kernel's formats differ, plan memory by reference
counts over command order, then `on_resize` every execution.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from mnnpy.core.backend import Backend, Execution, StorageType, TensorRef
from mnnpy.core.geometry._regions import full_copy
from mnnpy.core.ir import NC4HW4, Command, TensorDesc
from mnnpy.core.layout import pack_value
from mnnpy.core.memory import alias_view
from mnnpy.core.pipeline import RASTER, Graph, RasterSpec, UnsupportedOp, op_type_name
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType

ANY = ("NCHW", "NHWC", "NC4HW4")
COPY = int(OT.Copy)


class CopyExecution(Execution):
    """Moves a tensor between backends (host <-> device) through the device backend's `on_copy`."""

    algorithm = "copy"

    def on_execute(self) -> None:
        self.backend.on_copy(self.inputs[0], self.outputs[0])


class Scheduler:
    """Turns an encoded Graph into bound executions on a main backend with a CPU backup."""

    def __init__(self, graph: Graph, main: Backend, backup: Backend) -> None:
        self.g = graph
        self.main = main
        self.backup = backup
        self.refs: dict[int, TensorRef] = {}
        self.owner: dict[int, Backend] = {}
        self.commands: list[Command] = []  # the run list (after `plan`: without the aliased copies)
        self.listed: list[Command] = []  # every scheduled command, aliased copies included (set by `plan`)
        self.fused: dict[int, Callable[[], None]] = {}  # id(command) -> its run in callback-free runs (`_fuse`)
        # id(first command) -> (run of it and the commands after it, their count): `Backend.run_groups`, same runs
        self.groups: dict[int, tuple[Callable[[], bool], int]] = {}
        self._converted: dict[tuple[int, str], int] = {}
        self._copies: dict[tuple[int, str], tuple[int, Command]] = {}

    def ref(self, i: int) -> TensorRef:
        """The TensorRef of tensor `i` (constants carry their physical value)."""
        r = self.refs.get(i)
        if r is None:
            desc = self.g.desc(i)
            value = self.g.values.get(i)
            r = TensorRef(i, desc, self.g.names[i], value, const=value is not None)
            self.refs[i] = r
        return r

    def _convert(self, i: int, fmt: str, before: list[Command]) -> int:
        """Tensor `i` in format `fmt`: a converted constant, or a new tensor written by a Raster command."""
        key = (i, fmt)
        if key in self._converted:
            return self._converted[key]
        desc = self.g.desc(i).with_(fmt=fmt)
        j = self.g.add_tensor(desc, f"{self.g.names[i]}__{fmt}")
        if i in self.g.values:
            self.g.values[j] = self.g.values[i]
            self.refs[j] = TensorRef(j, desc, self.g.names[j], pack_value(self.g.values[i], fmt), const=True)
        else:
            spec = RasterSpec(full_copy(desc.size, 0), [], True)
            cmd = Command(RASTER, f"convert:{self.g.names[i]}->{fmt}", [i], [j], spec)
            self._create(cmd, ANY, before)
            before.append(cmd)
        self._converted[key] = j
        return j

    def _input_format(self, i: int, pos: int, formats: Sequence[str], before: list[Command]) -> int:
        """Input 0 is converted to the kernel's preferred format; other inputs only leave NC4HW4 if unsupported.

        A plain ("NCHW") kernel works in the tensor's own dim order, so NHWC tensors (TF models) pass as they are.
        """
        fmt = self.g.desc(i).fmt
        if fmt in formats or (fmt == "NHWC" and "NCHW" in formats):
            return i
        if pos == 0:
            return self._convert(i, formats[0], before)
        return self._convert(i, "NCHW", before) if fmt == NC4HW4 else i

    def _bring(self, inputs: list[int], backend: Backend) -> tuple[list[int], list[Command]]:
        """Inputs as seen by `backend`: tensors living on another backend get a Copy command (MNN: WrapExecution)."""
        moved, copies = [], []
        for i in inputs:
            owner = self.owner.get(i)
            if owner is None or owner is backend or i in self.g.values:
                moved.append(i)
                continue
            key = (i, backend.name)
            if key not in self._copies:
                j = self.g.add_tensor(self.g.desc(i), f"{self.g.names[i]}__{backend.name}")
                copier = owner if backend.name == "cpu" else backend
                cmd = Command(COPY, f"copy:{self.g.names[i]}->{backend.name}", [i], [j], backend=copier.name)
                cmd.execution = CopyExecution(copier, None, [self.ref(i)], [self.ref(j)])
                copies.append(cmd)
                self._copies[key] = (j, cmd)
                self.owner[j] = backend
            moved.append(self._copies[key][0])
        return moved, copies

    def _create(self, cmd: Command, formats: Sequence[str], before: list[Command] | None = None) -> None:
        outs = []
        for o in cmd.outputs:
            d = self.g.desc(o)
            if d.fmt not in formats and not (d.fmt == "NHWC" and "NCHW" in formats):
                d = d.with_(fmt=formats[0])
                self.g.descs[o] = d
            outs.append(self.ref(o))
        for backend in (self.main, self.backup) if self.main is not self.backup else (self.main,):
            moved, copies = self._bring(cmd.inputs, backend)
            execution = backend.on_create(cmd.op_type, cmd.op, [self.ref(i) for i in moved], outs)
            if execution is not None:
                cmd.inputs = moved
                cmd.execution = execution
                cmd.backend = backend.name
                for o in cmd.outputs:
                    self.owner[o] = backend
                if before is not None:
                    before.extend(c for c in copies if c not in before)
                return
        raise UnsupportedOp(f"op {cmd.name!r} of type {op_type_name(cmd.op_type)} ({cmd.op_type}) has no "
                            f"implementation on backend {self.main.name!r} nor on the CPU")

    def schedule(self) -> list[Command]:
        """Create executions in order, inserting format conversions and cross-backend copies."""
        for i in self.g.inputs:
            if i not in self.g.values:
                self.owner[i] = self.main
        for cmd in self.g.commands:
            before: list[Command] = []
            if cmd.op_type == RASTER:
                formats: Sequence[str] = ANY
            else:
                known = cmd.op_type in _known(self.main)
                formats = (self.main if known else self.backup).supported_formats(cmd.op_type)
                cmd.inputs = [self._input_format(i, k, formats, before) for k, i in enumerate(cmd.inputs)]
            self._create(cmd, formats, before)
            self.commands += [*before, cmd]
        return self.commands

    @staticmethod
    def _scratch(cmd: Command, k: int) -> TensorRef | None:
        """Plan the command's scratch (live only while it runs: released right after its inputs)."""
        execution = cmd.execution
        need = execution.scratch_bytes() if execution is not None else 0
        if not need:
            return None
        ref = TensorRef(-1 - k, TensorDesc((int(need),), np.dtype(np.uint8)), f"{cmd.name}:scratch")
        execution.backend.on_acquire(ref, StorageType.DYNAMIC)
        execution.scratch_ref = ref
        return ref

    def _aliases(self, pinned: set[int]) -> dict[int, int]:
        """Outputs of byte-identical copies (`Execution.alias_input`) -> the tensor whose memory they share.

        Legal when both tensors live on the copying backend with the same dtype and size, neither is a constant, and
        neither (nor the memory's first owner) is a graph input, output or saved tensor: those the user reads or
        writes between runs, so they keep their own bytes. Every tensor has one producer that runs before its
        readers and no kernel writes its inputs, so the shared bytes are written once (by the first owner's
        producer) and only read while any of the tensors lives; their lifetimes are merged below."""
        root: dict[int, int] = {}
        for cmd in self.commands:
            execution = cmd.execution
            pos = execution.alias_input() if execution is not None and len(cmd.outputs) == 1 else None
            if pos is None:
                continue
            src, dst = cmd.inputs[pos], cmd.outputs[0]
            base = root.get(src, src)
            a, b = self.ref(src), self.ref(dst)
            same_place = self.owner.get(src) is execution.backend and self.owner.get(dst) is execution.backend
            if a.const or b.const or {src, dst, base} & pinned or a.desc.dtype != b.desc.dtype or \
                    a.desc.nbytes != b.desc.nbytes or not same_place:
                continue
            root[dst] = base
        return root

    def plan(self, inputs: Sequence[int], keep: set[int]) -> None:
        """Reference-count lifetimes over command order, acquire/release in the backends, bind, on_resize.

        Commands whose output can share its input's bytes (`_aliases`) are dropped from the run list (kept in
        `listed` for `session.info()`); the shared memory lives until the last reader of any of the tensors."""
        backends = [self.main] if self.main is self.backup else [self.main, self.backup]
        for b in backends:
            b.on_resize_begin()
        pinned = set(inputs) | keep
        alias = self._aliases(pinned)
        self.listed = list(self.commands)
        self.commands = [c for c in self.commands if not (len(c.outputs) == 1 and c.outputs[0] in alias)]
        uses: dict[int, int] = {}
        for cmd in self.commands:
            for i in cmd.inputs:
                i = alias.get(i, i)
                uses[i] = uses.get(i, 0) + 1
        for i in inputs:
            if not self.ref(i).const:  # inputs whose values shapes depend on are folded constants
                self.main.on_acquire(self.refs[i], StorageType.DYNAMIC_SEPARATE)
        for k, cmd in enumerate(self.commands):
            for o in cmd.outputs:
                r = self.refs[o]
                if not r.const:
                    kind = StorageType.DYNAMIC_SEPARATE if o in pinned else StorageType.DYNAMIC
                    self.owner[o].on_acquire(r, kind)
            scratch = self._scratch(cmd, k)
            for i in cmd.inputs:
                i = alias.get(i, i)
                uses[i] -= 1
                r = self.refs[i]
                if uses[i] == 0 and not r.const and i not in pinned:
                    self.owner[i].on_release(r, StorageType.DYNAMIC)
            if scratch is not None:
                cmd.execution.backend.on_release(scratch, StorageType.DYNAMIC)
        for b in backends:
            b.on_resize_end()
        for cmd in self.listed:
            base = alias.get(cmd.outputs[0]) if len(cmd.outputs) == 1 else None
            if base is not None:
                ref = self.refs[cmd.outputs[0]]
                ref.array = alias_view(self.refs[base].array, ref.desc.dtype, ref.desc.physical_shape)
                cmd.info = {"backend": cmd.backend, "algorithm": "alias", "alias_of": self.g.names[base]}
        for cmd in self.commands:
            try:
                cmd.execution.on_resize()
            except ModelError:
                raise
            except (ValueError, IndexError, TypeError, KeyError, NotImplementedError, AttributeError) as exc:
                raise ModelError(f"op {cmd.name!r} ({op_type_name(cmd.op_type)}) on {cmd.backend}: "
                                 f"cannot prepare: {exc}") from exc
            cmd.info = {"backend": cmd.backend, **cmd.execution.info()}
        self.fused = self._fuse(pinned, alias)
        self.groups = self.main.run_groups(self.commands, self.fused)
        for b in backends:
            b.on_resize_done()

    def _fuse(self, pinned: set[int], alias: dict[int, int]) -> dict[int, Callable[[], None]]:
        """Callback-free runs for a layout copy feeding one command (`Execution.feeds_one`), then for chains
        producer -> command -> consumer (`Execution.fuse_between`), then for pairs producer -> command
        (`Execution.fuse_after`) among the commands left, keyed by
        ``id(command)``: three consecutive commands (nothing runs between them, so a chain may keep its links in
        scratch shared with other kernels), each link's memory (a tensor and the aliased copies sharing its bytes)
        with one writer and one reader in the run list and neither a constant nor pinned (graph input/output,
        saved), so nothing but the chain sees it."""
        writer: dict[int, Command] = {}
        readers: dict[int, list[Command]] = {}
        for cmd in self.commands:
            for o in cmd.outputs:
                writer[alias.get(o, o)] = cmd
            for i in cmd.inputs:
                readers.setdefault(alias.get(i, i), []).append(cmd)
        writers = Counter(alias.get(o, o) for cmd in self.commands for o in cmd.outputs)

        def pair(producer: Command, cmd: Command) -> bool:
            """Whether ``producer`` -> ``cmd`` may run fused: the link is the producer's one output, written once,
            read by ``cmd`` alone (once), neither pinned nor constant, on one backend."""
            if len(producer.outputs) != 1 or producer.execution is None or cmd.execution is None \
                    or producer.execution.backend is not cmd.execution.backend:
                return False
            link = alias.get(producer.outputs[0], producer.outputs[0])
            after = readers.get(link, [])
            return link not in pinned and not self.ref(link).const and writers[link] == 1 and len(after) == 1 \
                and after[0] is cmd and [alias.get(i, i) for i in cmd.inputs].count(link) == 1

        runs: dict[int, Callable[[], None]] = {}
        # First the layout copies that only feed one command its input (the model input's NCHW -> NC4HW4 pack into a
        # stem, `Execution.feeds_one`): the command then reads the copy's source itself, also as a chain's producer.
        fed: set[int] = set()
        for producer, cmd in itertools.pairwise(self.commands):
            if producer.execution is not None and producer.execution.feeds_one and pair(producer, cmd):
                calls = cmd.execution.fuse_after(producer.execution)
                if calls is not None:
                    runs.update(zip((id(producer), id(cmd)), calls, strict=True))
                    fed.add(id(cmd))
        for k, cmd in enumerate(self.commands):
            if len(cmd.inputs) != 1 or len(cmd.outputs) != 1 or not 0 < k < len(self.commands) - 1:
                continue
            src, dst = alias.get(cmd.inputs[0], cmd.inputs[0]), alias.get(cmd.outputs[0], cmd.outputs[0])
            if {src, dst} & pinned or self.ref(src).const:
                continue
            producer, after = writer.get(src), readers.get(dst, [])
            if producer is None or len(producer.outputs) != 1 or len(readers.get(src, [])) != 1 or len(after) != 1:
                continue
            consumer = after[0]
            chain = (producer, cmd, consumer)
            if self.commands[k - 1] is not producer or self.commands[k + 1] is not consumer:
                continue
            if [alias.get(i, i) for i in consumer.inputs].count(dst) != 1 \
                    or (id(producer) in runs and id(producer) not in fed) or id(cmd) in runs or id(consumer) in runs \
                    or any(c.execution is None or c.execution.backend is not cmd.execution.backend for c in chain):
                continue
            calls = cmd.execution.fuse_between(producer.execution, consumer.execution)
            if calls is not None:
                runs.update(zip((id(c) for c in chain), calls, strict=True))  # (a fed producer's: reads the source)
        for producer, cmd in itertools.pairwise(self.commands):  # pairs (`Execution.fuse_after[_chain]`)
            if id(cmd) in runs or not pair(producer, cmd):
                continue
            # a producer that ends a chain already (ResNet's second Winograd convolution of a block, then its Add)
            chained = id(producer) in runs
            calls = cmd.execution.fuse_after_chain(producer.execution) if chained else \
                cmd.execution.fuse_after(producer.execution)
            if calls is not None:
                runs.update(zip((id(producer), id(cmd)), calls, strict=True))
        return runs


def _known(backend: Backend) -> set[int]:
    from mnnpy.core import registry

    return set(registry.KERNELS.get(backend.name, {}))

