"""Carry a token order through per-token ops instead of moving the data back (Swin's window partition / reverse).

A token move (token_moves.py: window partition, window reverse, cyclic shift + partition) only reorders the rows of
a [tokens, channels] view. Per-token ops (LayerNorm over channels, unary ops, binary ops with per-channel
constants, MatMul with constant weights: the QKV / projection / MLP Linears) commute with such a reordering, so the
reorder is held back, op by op, and applied only where an op mixes tokens (the window attention) or at an output.
At a residual Add of two tensors held in different orders, one side is reordered into the other's order: the side
whose reordering an existing reorder of the same data already does (the other reader of the residual stream, the
LayerNorm in front of the next window attention), so the two merge. Reductions over all tokens (the final
average pool) ignore the order. Reorders left are then hoisted above the per-token ops that only widen the data
(onto the narrowest tensor) and duplicates merged.

So a Swin stage keeps its residual stream in window order: one reorder in, one per block boundary (shifted windows
are another order) and one out (none before a token-mean pool), instead of a partition and a reverse per block.
A reorder is written as GatherV2 with a constant index on the token axis of a [1, L, C] view (official MNN runs
it); the pass is undone when it would not lower the number of data moves (data_moves.py).
Opt-in (`run_pipeline(enable=...)`, `mnnpy convert --transformerFuse`), with the windowed Attention it serves.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node
from . import data_moves, dedupe, remove_dead, token_moves

NAME = "token-reorder"

OT = fb.OpType
ELEMENTWISE = frozenset({OT.UnaryOp, OT.ReLU, OT.ReLU6, OT.Sigmoid, OT.TanH, OT.ELU, OT.Selu})


@dataclass
class Held:
    """A tensor kept in another token order: logical row i is row `index[i]` of `phys` ([1, L, C])."""

    phys: str
    index: np.ndarray
    shape: list[int]
    channels: int


def token_gather(graph: Graph, node: Node) -> bool:
    """A GatherV2 with a constant 1-D index (a reorder or selection of rows): counted as a data move."""
    return node.op_type == OT.GatherV2 and len(node.inputs) == 3 and \
        getattr(graph.constants.get(node.inputs[1]), "ndim", 0) == 1 and node.inputs[2] in graph.constants


def count_moves(graph: Graph) -> int:
    """Ops that move tensor data (data_moves.py: Permute / Transpose / Raster, and Slices, Concats and
    constant-index Gathers of data tensors; not shape arithmetic, Reshape-like views or ConvertTensor)."""
    return data_moves.count(graph)


def _data_input(graph: Graph, node: Node) -> int | None:
    """Position of the only non-constant input."""
    live = [i for i, name in enumerate(node.inputs) if name not in graph.constants]
    return live[0] if len(live) == 1 else None


def per_token(graph: Graph, node: Node, channels: int, rank: int = 3) -> int | None:
    """Output channels if `node` maps each token row of its one non-constant input (rank `rank`, [..., channels])
    on its own and keeps the rank."""
    slot = _data_input(graph, node)
    if slot is None or len(node.outputs) != 1:
        return None
    if node.op_type in ELEMENTWISE:
        return channels
    if node.op_type == OT.LayerNorm:
        param = node.param
        ok = param is not None and list(param.axis if param.axis is not None else []) == [-1] and param.group <= 1
        return channels if ok else None
    if node.op_type == OT.BinaryOp and len(node.inputs) == 2:
        const = graph.constants[node.inputs[1 - slot]]
        ok = const.ndim <= rank and all(d == 1 for d in const.shape[:-1]) and \
            const.shape[-1:] in ((), (1,), (channels,))
        return channels if ok else None
    if node.op_type == OT.MatMul and slot == 0 and node.param is not None and not node.param.transposeA:
        weight = graph.constants[node.inputs[1]]
        if weight.ndim == 2:
            rows, cols = weight.shape[::-1] if node.param.transposeB else weight.shape
            return int(cols) if rows == channels else None
    return None


class _Sweep:
    """One pass over the ops in order, holding reorders back (see the module doc)."""

    def __init__(self, graph: Graph, moves: list[token_moves.TokenMove]) -> None:
        self.graph = graph
        self.moves = {m.sink: m for m in moves}
        self.skip = {id(n) for m in moves for n in m.nodes}
        self.held: dict[str, Held] = {}
        self.shapes: dict[str, list[int]] = {name: list(spec.shape) for name, spec in graph.inputs.items()}
        self.out: list[Node] = []
        self.order = {id(n): i for i, n in enumerate(graph.topological_order())}

    def shape(self, name: str) -> list[int] | None:
        """A statically known shape (graph inputs, constant Reshapes, per-token ops after them)."""
        if name in self.shapes:
            shape = self.shapes[name]
            return shape if all(d > 0 for d in shape) else None
        if name in self.held:
            return self.held[name].shape
        node = next((n for n in reversed(self.out) if name in n.outputs), None)
        if node is None:
            return None
        if node.op_type == OT.Reshape and len(node.inputs) == 2 and node.inputs[1] in self.graph.constants:
            dims = [int(d) for d in np.asarray(self.graph.constants[node.inputs[1]]).ravel()]
            return dims if all(d > 0 for d in dims) else None
        slot = _data_input(self.graph, node)
        if slot is None and node.op_type == OT.BinaryOp:  # two tensors of one shape
            shapes = [self.shape(name) for name in node.inputs]
            return shapes[0] if len(shapes) == 2 and shapes[0] == shapes[1] else None
        source = self.shape(node.inputs[slot]) if slot is not None else None
        if source and node.op_type == OT.Softmax:
            return source
        width = per_token(self.graph, node, source[-1], len(source)) if source else None
        return [*source[:-1], width] if source and width else None

    def emit(self, op_type: int, inputs: list[str], out: str | None = None, param_type: int = 0,
             param: object = None) -> str:
        out = out or self.graph.unique_name(f"{inputs[0]}_{'gather' if op_type == OT.GatherV2 else 'rows'}")
        self.out.append(Node(self.graph.unique_name(out), op_type, inputs, [out], param_type, param))
        return out

    def rows(self, name: str, tokens: int, channels: int) -> str:
        """`name` as [1, L, C] (no op when it already is)."""
        if self.shape(name) == [1, tokens, channels]:
            return name
        param = fb.ReshapeT()
        param.dimType = fb.MNN_DATA_FORMAT.NCHW
        shape = self.graph.add_const(np.array([1, tokens, channels], np.int32), "rows_shape")
        out = self.emit(OT.Reshape, [name, shape], param_type=fb.OpParameter.Reshape, param=param)
        self.shapes[out] = [1, tokens, channels]
        return out

    def gather(self, source: str, index: np.ndarray) -> str:
        if np.array_equal(index, np.arange(index.size)):
            return source
        idx = self.graph.add_const(index.astype(np.int32), "token_order")
        out = self.emit(OT.GatherV2, [source, idx, self.graph.add_const(np.int32(1), "axis")])
        self.shapes[out] = list(self.shapes[source])
        return out

    def materialize(self, name: str) -> None:
        held = self.held.pop(name)
        param = fb.ReshapeT()
        param.dimType = fb.MNN_DATA_FORMAT.NCHW
        shape = self.graph.add_const(np.array(held.shape, np.int32), "shape")
        self.emit(OT.Reshape, [self.gather(held.phys, held.index), shape], name, fb.OpParameter.Reshape, param)

    def hold(self, name: str, phys: str, index: np.ndarray, shape: list[int]) -> None:
        self.held[name] = Held(phys, index, shape, shape[-1])

    def take_move(self, move: token_moves.TokenMove) -> bool:
        """Hold the move back; False (nothing done) unless its source is known to be [..., C] rows of C channels."""
        shape = self.shape(move.source)
        if shape is None or shape[-1] != move.channels or int(np.prod(shape)) != move.tokens * move.channels:
            return False
        source = self.held.get(move.source)
        if source is not None:
            self.hold(move.sink, source.phys, source.index[move.index], move.shape)
        else:
            self.hold(move.sink, self.rows(move.source, move.tokens, move.channels), move.index, move.shape)
        return True

    def step(self, node: Node) -> None:
        if id(node) in self.skip:
            move = self.moves.get(node.outputs[0])
            if move is not None and not self.take_move(move):
                for inner in sorted(move.nodes, key=lambda n: self.order[id(n)]):
                    self.plain(inner)
            return
        if any(name in self.held for name in node.inputs) and (
                self._per_token(node) or self._reshape(node) or self._binary(node) or self._reduce(node)):
            return
        self.plain(node)

    def plain(self, node: Node) -> None:
        """Emit the node as it is, reordering its held inputs first."""
        for name in dict.fromkeys(node.inputs):
            if name in self.held:
                self.materialize(name)
        self.out.append(node)

    def _per_token(self, node: Node) -> bool:
        slot = _data_input(self.graph, node)
        held = self.held.get(node.inputs[slot]) if slot is not None else None
        width = per_token(self.graph, node, held.channels, min(len(held.shape), 3)) if held is not None else None
        if held is None or width is None:
            return False
        phys = self.graph.unique_name(f"{node.outputs[0]}_reordered")
        inputs = list(node.inputs)
        inputs[slot] = held.phys
        self.out.append(Node(self.graph.unique_name(node.name), node.op_type, inputs, [phys], node.param_type,
                             node.param, node.default_format))
        self.shapes[phys] = [1, held.index.size, width]
        self.hold(node.outputs[0], phys, held.index, [*held.shape[:-1], width])
        return True

    def _reshape(self, node: Node) -> bool:
        held = self.held.get(node.inputs[0])
        if held is None or node.op_type != OT.Reshape or len(node.inputs) != 2 or \
                node.inputs[1] not in self.graph.constants:
            return False
        dims = [int(d) for d in np.asarray(self.graph.constants[node.inputs[1]]).ravel()]
        total = held.index.size * held.channels
        if dims.count(-1) == 1 and 0 not in dims:
            dims[dims.index(-1)] = total // -int(np.prod(dims))
        if not dims or dims[-1] != held.channels or int(np.prod(dims)) != total or any(d <= 0 for d in dims):
            return False
        self.hold(node.outputs[0], held.phys, held.index, dims)
        return True

    def _binary(self, node: Node) -> bool:
        if node.op_type != OT.BinaryOp or len(node.inputs) != 2 or any(i in self.graph.constants for i in node.inputs):
            return False
        shapes = [self.shape(name) for name in node.inputs]
        if shapes[0] is None or shapes[0] != shapes[1]:
            return False
        keep = max((i for i, name in enumerate(node.inputs) if name in self.held),
                   key=lambda i: (self._free(node.inputs[1 - i], self.held[node.inputs[i]].index), i))
        kept = self.held[node.inputs[keep]]
        inputs = list(node.inputs)
        inputs[keep] = kept.phys
        inputs[1 - keep] = self._reordered(node.inputs[1 - keep], kept)
        phys = self.graph.unique_name(f"{node.outputs[0]}_reordered")
        self.out.append(Node(self.graph.unique_name(node.name), node.op_type, inputs, [phys], node.param_type,
                             node.param, node.default_format))
        self.shapes[phys] = [1, kept.index.size, kept.channels]
        self.hold(node.outputs[0], phys, kept.index, kept.shape)
        return True

    def _order_of(self, name: str, into: Held) -> tuple[str, np.ndarray]:
        """(source [1, L, C], rows to gather) that put logical `name` into the row order of `into`."""
        inverse = np.argsort(into.index)
        other = self.held.get(name)
        if other is not None:
            return other.phys, other.index[inverse]
        return name, inverse

    def _reordered(self, name: str, into: Held) -> str:
        source, index = self._order_of(name, into)
        if name not in self.held:
            source = self.rows(source, into.index.size, into.channels)
        return self.gather(source, index)

    def _free(self, name: str, index: np.ndarray) -> bool:
        """Whether a reorder with these rows already reads `name`'s data through per-token ops."""
        source, rows = self._order_of(name, Held("", index, [], 0))
        frontier, seen = [source], set()
        while frontier:
            tensor = frontier.pop()
            seen.add(tensor)
            for node in self.out:
                if tensor not in node.inputs:
                    continue
                if token_gather(self.graph, node) and np.array_equal(self.graph.constants[node.inputs[1]], rows):
                    return True
                if (node.op_type == OT.Reshape or _data_input(self.graph, node) is not None) and \
                        node.outputs[0] not in seen:
                    frontier.append(node.outputs[0])
        return False

    def _reduce(self, node: Node) -> bool:
        """A reduction over every token axis: the row order does not matter."""
        held = self.held.get(node.inputs[0])
        if held is None or node.op_type != OT.Reduction or len(node.inputs) != 1 or node.param is None:
            return False
        rank = len(held.shape)
        dims = {int(d) % rank for d in (node.param.dim or [])}
        if rank - 1 in dims or any(size > 1 and axis not in dims for axis, size in enumerate(held.shape[:-1])):
            return False
        param = fb.ReshapeT()
        param.dimType = fb.MNN_DATA_FORMAT.NCHW
        shape = self.graph.add_const(np.array(held.shape, np.int32), "shape")
        view = self.emit(OT.Reshape, [held.phys, shape], param_type=fb.OpParameter.Reshape, param=param)
        self.shapes[view] = list(held.shape)
        self.out.append(Node(node.name, node.op_type, [view], list(node.outputs), node.param_type, node.param,
                             node.default_format))
        return True

    def hoist(self) -> int:
        """Gather(f(x)) -> f(Gather(x)) for per-token f on [1, L, C] that does not narrow the data (f read only by
        the Gather): reorders move onto the narrowest tensor and meet their duplicates."""
        graph, count = self.graph, 0
        for gather in list(graph.nodes):
            if not token_gather(graph, gather) or int(graph.constants[gather.inputs[2]]) != 1:
                continue
            node = graph.producers().get(gather.inputs[0])
            if node is None or len(graph.consumers().get(gather.inputs[0], [])) != 1 or \
                    gather.inputs[0] in graph.outputs:
                continue
            slot = _data_input(graph, node)
            shape = self.shape(node.inputs[slot]) if slot is not None else None
            if shape is None or len(shape) != 3 or shape[0] != 1 or \
                    (per_token(graph, node, shape[-1]) or 0) < shape[-1]:
                continue
            moved = graph.unique_name(f"{node.inputs[slot]}_gather")
            graph.nodes.insert(graph.nodes.index(node), Node(gather.name, OT.GatherV2,
                                                             [node.inputs[slot], *gather.inputs[1:]], [moved]))
            self.shapes[moved] = shape
            node.inputs[slot] = moved
            node.outputs = list(gather.outputs)
            graph.nodes.remove(gather)
            count += 1
        return count


def apply(graph: Graph) -> int:
    """Returns the number of token moves removed (0 when the rewrite would not lower the move count)."""
    moves = token_moves.find(graph)
    if not moves:
        return 0
    backup = copy.deepcopy(graph)
    before = count_moves(graph)
    sweep = _Sweep(graph, moves)
    for node in graph.topological_order():
        sweep.step(node)
    for name in graph.outputs:
        if name in sweep.held:
            sweep.materialize(name)
    graph.nodes = sweep.out
    while sweep.hoist() + dedupe.apply(graph):
        pass
    remove_dead.apply(graph)
    for name, shape in sweep.shapes.items():
        graph.ranks.setdefault(name, len(shape))
    after = count_moves(graph)
    if after >= before:
        graph.__dict__.update(backup.__dict__)
        return 0
    return before - after
