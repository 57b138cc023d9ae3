"""Find token moves: chains of data-movement ops that only reorder the token rows of a tensor (its channel vectors,
the last axis, move whole). Swin's window partition (`Reshape -> Permute(0,1,3,2,4,5) -> Reshape`), its window
reverse and the cyclic shift `torch.roll` (Slices + Concat per axis) in front of them are such chains.

The mapping of a chain is computed, not pattern-matched: the chain is run by the numpy evaluator on a tensor of
element numbers, and the result read back as `sink[i, :] == source[index[i], :]` over [tokens, channels] views.
token-reorder (token_reorder.py) uses the moves found here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node
from .numpy_eval import evaluate

OT = fb.OpType
MOVE_OPS = frozenset({OT.Reshape, OT.Permute, OT.StridedSlice, OT.Concat, OT.Squeeze, OT.Unsqueeze, OT.GatherV2})


@dataclass
class TokenMove:
    """`sink` (shape `shape`) viewed as [L, C] equals `source` viewed as [L, C] with rows taken at `index`."""

    source: str
    sink: str
    index: np.ndarray
    shape: list[int]
    channels: int
    nodes: list[Node]

    @property
    def tokens(self) -> int:
        return int(self.index.size)


def _const_inputs(graph: Graph, node: Node) -> bool:
    """Every input but the first is a constant (shapes, slice bounds, gather indices)."""
    return all(name in graph.constants for name in node.inputs[1:])


def _is_move(graph: Graph, node: Node | None) -> bool:
    if node is None or node.op_type not in MOVE_OPS or len(node.outputs) != 1:
        return False
    if node.op_type == OT.Concat:
        return all(name not in graph.constants for name in node.inputs)
    return len(node.inputs) >= 1 and _const_inputs(graph, node) and \
        (node.op_type != OT.Reshape or len(node.inputs) == 2)


def _down(graph: Graph, seed: Node, general: bool) -> list[Node]:
    """The seed and the move ops after it that read only chain tensors (`general`), or only its single-reader
    Reshapes."""
    consumers = graph.consumers()
    chain = [seed]
    grown = True
    while grown:
        grown = False
        outputs = {n.outputs[0] for n in chain}
        for name in list(outputs):
            for reader in consumers.get(name, []):
                if any(reader is n for n in chain) or not _is_move(graph, reader) or name in graph.outputs:
                    continue
                data = reader.inputs if reader.op_type == OT.Concat else reader.inputs[:1]
                if (general and all(i in outputs for i in data)) or \
                        (not general and reader.op_type == OT.Reshape and len(consumers[name]) == 1):
                    chain.append(reader)
                    grown = True
    return chain


def _grow(graph: Graph, seed: Node, general: bool) -> tuple[list[Node], str] | None:
    """The move ops around `seed` whose results are read only inside the chain: (nodes, the one source tensor)."""
    consumers, producers = graph.consumers(), graph.producers()
    chain = _down(graph, seed, general)
    members = {id(n) for n in chain}
    grown = True
    while grown:
        grown = False
        for node in list(chain):
            for name in node.inputs[:None if node.op_type == OT.Concat else 1]:
                producer = producers.get(name)
                if producer is None or id(producer) in members or not _is_move(graph, producer) or \
                        name in graph.outputs or any(id(r) not in members for r in consumers.get(name, [])):
                    continue
                chain.append(producer)
                members.add(id(producer))
                grown = True
    outputs = {n.outputs[0] for n in chain}
    sources = {name for n in chain for name in (n.inputs if n.op_type == OT.Concat else n.inputs[:1])
               if name not in outputs}
    if len(sources) != 1:
        return None
    return chain, sources.pop()


def _reshape_dims(graph: Graph, node: Node) -> list[int]:
    return [int(d) for d in np.asarray(graph.constants[node.inputs[1]]).ravel()]


def _mapping(graph: Graph, chain: list[Node], source: str, sink: str) -> TokenMove | None:
    """Run the chain on element numbers; a TokenMove if it only reorders whole channel rows. A -1 in the first
    Reshape (torch's `view(-1, ...)`) is resolved with the size of a fully known Reshape of the chain."""
    first = [n for n in chain if source in n.inputs]
    if len(first) != 1 or first[0].op_type != OT.Reshape:
        return None
    shape = _reshape_dims(graph, first[0])
    if len(shape) < 2 or 0 in shape or any(d < -1 for d in shape) or shape.count(-1) > 1:
        return None
    if -1 not in shape:
        return _run(graph, chain, source, sink, shape)
    known = {int(np.prod(dims)) for n in chain if n.op_type == OT.Reshape
             for dims in [_reshape_dims(graph, n)] if all(d > 0 for d in dims)}
    rest = -int(np.prod(shape))
    for total in sorted(known):
        if total % rest == 0:
            move = _run(graph, chain, source, sink, [total // rest if d == -1 else d for d in shape])
            if move is not None:
                return move
    return None


def _run(graph: Graph, chain: list[Node], source: str, sink: str, shape: list[int]) -> TokenMove | None:
    values = {source: np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)}
    pending = list(chain)
    while pending:
        ready = [n for n in pending if all(i in values or i in graph.constants for i in n.inputs)]
        if not ready:
            return None
        for node in ready:
            try:
                result = evaluate(node, [values[i] if i in values else graph.constants[i] for i in node.inputs])
            except (ValueError, IndexError):  # the chain does not fit this size
                return None
            if result is None:
                return None
            values[node.outputs[0]] = result[0]
            pending.remove(node)
    out, channels = values[sink], shape[-1]
    if out.ndim < 2 or out.shape[-1] != channels or out.size != values[source].size:
        return None
    rows = out.reshape(-1, channels)
    if np.any(rows != rows[:, :1] + np.arange(channels)) or np.any(rows[:, 0] % channels):
        return None
    index = rows[:, 0] // channels
    if np.array_equal(np.sort(index), np.arange(index.size)):
        return TokenMove(source, sink, index.astype(np.int32), [int(s) for s in out.shape], channels, chain)
    return None


def find(graph: Graph) -> list[TokenMove]:
    """The token moves seeded at each Permute (a chain is reported once)."""
    moves: list[TokenMove] = []
    taken: set[int] = set()
    for node in list(graph.nodes):
        if node.op_type != OT.Permute or id(node) in taken or not _is_move(graph, node):
            continue
        move = None
        for general in (True, False):
            grown = _grow(graph, node, general)
            sink = _sink(graph, grown[0]) if grown is not None else None
            move = _mapping(graph, grown[0], grown[1], sink) if grown is not None and sink else None
            if move is not None:
                break
        if move is not None and not any(id(n) in taken for n in move.nodes):
            taken.update(id(n) for n in move.nodes)
            moves.append(move)
    return moves


def _sink(graph: Graph, chain: list[Node]) -> str | None:
    """The one chain output read outside the chain (every other output is read only inside it)."""
    members = {id(n) for n in chain}
    consumers = graph.consumers()
    outs = [n.outputs[0] for n in chain if n.outputs[0] in graph.outputs or
            any(id(r) not in members for r in consumers.get(n.outputs[0], []))]
    inside = {name for n in chain for name in n.inputs}
    if len(outs) != 1 or outs[0] in inside:
        return None
    return outs[0]
