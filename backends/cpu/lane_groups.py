"""Lane groups: consecutive convolutions run as one worker-process hand-off (``procs.phased``).

With worker-process lanes (``numThread`` > 1, ``procs``) every convolution was one or two hand-offs: the caller sent
the worker its task, ran lane 0, waited for the answer, then prepared the next command's tasks (ResNet-18: 22
hand-offs a run, ~15-25 us between two of them while the worker waited: its answer, the caller's Python, the next
message). A lane group is a run of consecutive commands whose work is nothing but lane tasks (Winograd and im2col
kernels whose ``lane_phases`` is not None, with the no-op commands fused into them between): their phases are built
once, then each run hands them off together, the lanes meeting at the shared-memory barrier between every two phases.
Each claiming kernel gets its own work counter (``ProcessLanes.claim_slot``); the task list is the same object every
run, so the hand-off is found by identity (``ProcessLanes.lists``).

A group runs only in callback-free runs (``Session.run`` with ``Scheduler.groups``), like the chains; the profiler
turns groups off so that each command is timed alone. A worker that dies during a group's hand-off makes that run
fail (RuntimeError): the members may have overwritten their inputs, so the run cannot be repeated on thread lanes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from .compute import blas, procs


def _idle() -> None:
    """The task of a lane a member leaves unused (fewer lanes than the group)."""


class LaneGroup:
    """One group's members ``(kernel, run arguments)``; calling it runs them all (True), or returns False where
    no worker-process lanes are active (the caller then runs the commands one by one)."""

    def __init__(self, members: list[tuple[Any, tuple]], lanes: int) -> None:
        self.members, self.lanes = members, lanes
        self.built: tuple[int, int] | None = None
        self.phases: list[list[Callable[[], None]]] = []
        self.tasks: list[Callable[[], None]] = []
        self.claims: list[procs.SharedClaim] = []

    def _build(self, lanes: procs.ProcessLanes) -> bool:
        phases, claims = [], []
        for i, (kernel, args) in enumerate(self.members):
            claim = lanes.claim_slot(i + 1)  # (slot 0 stays the kernels' own, outside groups)
            member = kernel.lane_phases(*args, claim=claim)
            if member is None or any(len(p) > self.lanes for p in member):
                return False
            claims.append(claim)
            phases += [[*p, *(partial(_idle) for _ in range(self.lanes - len(p)))] for p in member]
        self.phases, self.claims = phases, claims
        self.tasks = [partial(procs.phased, lanes.barrier, j, self.lanes, *(p[j] for p in phases))
                      for j in range(self.lanes)]
        self.built = (id(lanes), lanes.generation)
        return True

    def __call__(self) -> bool:
        lanes = procs.active()
        if lanes is None or lanes.failure is not None:
            return False
        if self.built != (id(lanes), lanes.generation) and not self._build(lanes):
            return False
        for claim in self.claims:
            claim.reset()
        blas.run_phased(lanes, self.tasks, self.phases)
        return True


def _member(cmd: Any, runs: dict[int, Callable[[], None]], no_ops: Sequence[Callable[[], None]]
            ) -> tuple[Any, tuple] | bool | None:
    """``(owner, args)`` of a command whose run is only lane tasks that worker processes may run, given by
    ``owner.lane_phases(*args, claim=...)`` (an execution's own ``on_execute``, or a fused ``kernel.run(*args)``);
    None for a command with nothing to do (its work fused into another's); False otherwise."""
    call = runs.get(id(cmd))
    if call is None:
        owner, args = cmd.execution, ()
        if "on_execute" in vars(owner):  # (a wrapper set on the instance: the profiler's)
            return False
    elif any(call is f for f in no_ops):
        return None
    elif isinstance(call, partial) and not call.keywords and getattr(call.func, "__name__", "") == "run":
        owner, args = getattr(call.func, "__self__", None), call.args
        if getattr(owner, "shared", True) is False:  # (a kernel whose scratch worker processes do not see)
            return False
    else:
        return False
    phases = getattr(owner, "lane_phases", None)
    return (owner, args) if phases is not None and phases(*args) is not None else False


def lane_groups(commands: Sequence[Any], runs: dict[int, Callable[[], None]], lanes: int
                ) -> dict[int, tuple[LaneGroup, int]]:
    """The lane groups of a session's run list: id(first command) -> (group, commands it covers), for runs of at
    least two members (``_member``) with no other command between them."""
    from .ops.binary import _done
    from .ops.conv import _nothing

    groups: dict[int, tuple[LaneGroup, int]] = {}
    current: list[tuple[Any, Any]] = []

    def close() -> None:
        while current and current[-1][1] is None:  # (trailing no-ops run as before, outside the group)
            current.pop()
        members = [m for _, m in current if m is not None]
        if len(members) >= 2:
            groups[id(current[0][0])] = (LaneGroup(members, lanes), len(current))
        current.clear()

    for cmd in commands:
        member = _member(cmd, runs, (_nothing, _done))
        if member is False:
            close()
        else:
            current.append((cmd, member))
    close()
    return groups
