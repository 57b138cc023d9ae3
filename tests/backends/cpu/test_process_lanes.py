"""Worker-process lanes (numThread > 1, ``backends/cpu/compute/procs.py``): a session records its kernels' lane
hand-offs on the first run, forks a worker at the next, and from then on the worker runs lane 1 over shared memory.
Checked against onnxruntime on ResNet-18 (every lane kind it has: Winograd blocks, channel bands and alpha² positions,
im2col tiles and tap ranges, max-pool channel blocks), and at the unit level: the worker really runs its lane in its
own process on shared memory, its errors come back, a killed worker leaves the session on thread lanes, a resize or
a release stops it, and a fork of the user's starts its own."""

from __future__ import annotations

import os
import signal
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.backends.cpu.compute import procs

from mnnpy.core import memory
from mnnpy.interpreter import Interpreter

pytestmark = pytest.mark.skipif(not procs.available(), reason="worker-process lanes need Linux fork (or "
                                                              "MNNPY_CPU_LANES=threads is set)")


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from mnnpy.converter import convert
    from support.models import bench_models

    src = bench_models().resnet18(tmp_path_factory.mktemp("r18") / "resnet18.onnx")
    convert(str(src), str(src.with_suffix(".mnn")))
    return src


def _run(interp: Interpreter, session: Any, x: np.ndarray) -> np.ndarray:
    interp.getSessionInput(session).copyFrom(x)
    interp.runSession(session)
    return np.array(interp.getSessionOutput(session).getNumpyData(), copy=True)


def _reference(src: Path, x: np.ndarray) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime (the reference) is not installed")
    sess = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def test_resnet18_lanes_run_in_a_worker_process(resnet18: Path) -> None:
    interp = Interpreter(str(resnet18.with_suffix(".mnn")))
    session = interp.createSession({"numThread": 2})
    lanes = session.main.lanes
    assert isinstance(lanes, procs.ProcessLanes)
    xs = [np.random.default_rng(k).standard_normal((1, 3, 224, 224)).astype(np.float32) for k in range(2)]
    first = _run(interp, session, xs[0])  # records the hand-offs (thread lanes)
    assert not lanes.workers and lanes.table and lanes.dispatched == 0
    got = [_run(interp, session, x) for x in xs]  # forks, then the worker runs lane 1
    assert len(lanes.workers) == 1 and lanes.workers[0].pid != os.getpid()
    assert lanes.dispatched == 2 * len(lanes.table)  # every recorded hand-off, both runs
    kinds = {t.func.__name__ for tasks in lanes.table  # (a phased hand-off's lane: its phases' tasks too)
             for t in [tasks[0], *(tasks[0].args[3:] if tasks[0].func is procs.phased else ())]}
    assert {"_run_blocks", "_run_direct", "_run_steps", "_run_taps", "_call", "_transform_part", "phased"} <= kinds, \
        kinds
    for x, y in zip(xs, got, strict=True):
        np.testing.assert_allclose(y, _reference(resnet18, x), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(first, got[0])  # the same kernels, split the same way: the same bits
    # the convolutions after the max pool are lane groups (here one of all 19): a hand-off each, found by identity
    groups = [group for group, _ in session.scheduler.groups.values()]
    assert sum(len(g.members) for g in groups) == 19 and all(any(t is g.tasks for t in lanes.table) for g in groups)
    assert len(lanes.table) <= 3 + len(groups)  # besides: the stem, the max pool, the classifier's column bands


def test_resize_and_release_stop_the_worker(resnet18: Path) -> None:
    interp = Interpreter(str(resnet18.with_suffix(".mnn")))
    session = interp.createSession({"numThread": 2})
    lanes = session.main.lanes
    x = np.random.default_rng(3).standard_normal((1, 3, 224, 224)).astype(np.float32)
    for _ in range(2):
        _run(interp, session, x)
    pid = lanes.workers[0].pid
    small = np.random.default_rng(4).standard_normal((1, 3, 160, 160)).astype(np.float32)
    interp.resizeTensor(interp.getSessionInput(session), small.shape)
    interp.resizeSession(session)
    assert not lanes.workers and not lanes.table  # the old kernels' hand-offs are gone with them
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # stopped and reaped
    for _ in range(2):
        got = _run(interp, session, small)
    assert lanes.workers and lanes.dispatched
    one = interp.createSession({"numThread": 1})  # the reference: one thread, resized alike (ONNX input is fixed)
    interp.resizeTensor(interp.getSessionInput(one), small.shape)
    interp.resizeSession(one)
    # the two sessions may plan different algorithms (Winograd's largest unit depends on the thread count), so they
    # agree to float32 rounding, not bit for bit: the tolerance of the reference check above (1e-6 absolute failed
    # by 1.6e-6 on one of 1000 logits on an AVX-512 host)
    np.testing.assert_allclose(got, _run(interp, one, small), rtol=1e-4, atol=1e-5)
    pid = lanes.workers[0].pid
    interp.releaseSession(session)
    assert not lanes.workers
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_threads_only_when_asked(resnet18: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNNPY_CPU_LANES", "threads")
    interp = Interpreter(str(resnet18.with_suffix(".mnn")))
    assert interp.createSession({"numThread": 2}).main.lanes is None
    monkeypatch.delenv("MNNPY_CPU_LANES")
    assert interp.createSession({"numThread": 1}).main.lanes is None  # one lane: nothing to fork


class _Lanes:
    """Lane tasks for the unit tests: each writes its process id into a shared buffer."""

    def __init__(self) -> None:
        self.pids = memory.shared_empty((2,), np.int64)

    def mark(self, lane: int) -> None:
        self.pids[lane] = os.getpid()

    def fail(self, lane: int) -> None:
        raise ValueError(f"lane {lane} failed")


def _forked(lanes: procs.ProcessLanes, *hand_offs: list) -> None:
    """Record ``hand_offs`` (the caller would run them on thread lanes), then fork as a run's start does."""
    for tasks in hand_offs:
        assert not lanes.run(tasks)
    lanes.begin()
    lanes.end()


def test_worker_runs_its_lane_in_its_own_process_on_shared_memory() -> None:
    lanes, work = procs.ProcessLanes(1), _Lanes()
    tasks = [partial(work.mark, 0), partial(work.mark, 1)]
    _forked(lanes, tasks)
    try:
        work.pids[:] = 0
        assert lanes.run(tasks)
        assert work.pids[0] == os.getpid()
        assert work.pids[1] == lanes.workers[0].pid  # the worker's write reached this process
    finally:
        lanes.reset()


def test_worker_errors_come_back_and_a_killed_worker_leaves_thread_lanes() -> None:
    lanes, work = procs.ProcessLanes(1), _Lanes()
    good = [partial(work.mark, 0), partial(work.mark, 1)]
    bad = [partial(work.mark, 0), partial(work.fail, 1)]
    _forked(lanes, good, bad)
    try:
        with pytest.raises(RuntimeError, match=r"ValueError: lane 1 failed"):
            lanes.run(bad)
        assert lanes.run(good)  # the worker goes on after an error
        pid = lanes.workers[0].pid
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with pytest.warns(RuntimeWarning, match="exited"):
            assert not lanes.run(good)  # the caller then runs the hand-off on thread lanes
        assert lanes.failure and not lanes.workers
        lanes.begin()  # no new worker once given up
        lanes.end()
        assert not lanes.workers and not lanes.run(good)
    finally:
        lanes.reset()


def test_a_fork_of_the_users_makes_its_own_worker(resnet18: Path) -> None:
    interp = Interpreter(str(resnet18.with_suffix(".mnn")))
    session = interp.createSession({"numThread": 2})
    x = np.random.default_rng(5).standard_normal((1, 3, 224, 224)).astype(np.float32)
    want = _run(interp, session, x)
    _run(interp, session, x)
    parent_worker = session.main.lanes.workers[0].pid
    result = memory.shared_empty(want.shape, np.float32)
    status = memory.shared_empty((2,), np.int64)
    pid = os.fork()
    if pid == 0:  # the user's child: the parent's worker is not its own
        code = 1
        try:
            lanes = session.main.lanes
            assert not lanes.workers
            _run(interp, session, x)
            result[...] = _run(interp, session, x)
            status[0] = lanes.dispatched
            status[1] = lanes.workers[0].pid if lanes.workers else 0
            code = 0
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert status[0] > 0 and status[1] not in (0, parent_worker)
    np.testing.assert_array_equal(result, want)
    assert _run(interp, session, x) is not None and session.main.lanes.workers[0].pid == parent_worker


def test_task_keys_follow_the_memory_not_the_array_object() -> None:
    """A hand-off's key names arrays by data address, shape and strides (looked up by object, remembered while the
    array lives): a new view over the same bytes matches, other bytes or another shape do not, and an array's
    remembered address goes with it (a later array that reuses its id gets its own)."""
    import gc
    from functools import partial

    base = np.zeros(64, dtype=np.float32)
    key = procs.task_key([partial(np.copyto, base[:32], base[32:])])
    assert procs.task_key([partial(np.copyto, base[:32], base[32:])]) == key  # new views, same memory
    assert procs.task_key([partial(np.copyto, base[:32], base[31:63])]) != key
    assert procs.task_key([partial(np.copyto, base[:32].reshape(4, 8), base[32:])]) != key
    for _ in range(200):  # arrays die and their ids come back: each key still names its own memory
        a = np.ones(8, dtype=np.float32)
        assert procs.task_key([partial(np.copyto, a, a)])[0][1][1] == a.__array_interface__["data"][0]
        del a
    gc.collect()
    assert len(procs._ADDRESSES) < 50  # the dead arrays' entries are gone


class _Phases:
    """Two-phase lane tasks: phase 1 writes a lane's half of a shared buffer, phase 2 reads the other lane's half
    (what the barrier must have made visible) and records it with the reader's process id."""

    def __init__(self) -> None:
        self.data = memory.shared_empty((2,), np.int64)
        self.seen = memory.shared_empty((2, 2), np.int64)
        self.owner = os.getpid()

    def write(self, lane: int, value: int) -> None:
        if lane == 1:  # the worker's lane is the slow one: the caller's lane must wait at the barrier for it
            import time

            time.sleep(0.02)
        self.data[lane] = value

    def read(self, lane: int) -> None:
        self.seen[lane] = (self.data[1 - lane], os.getpid())

    def fail(self, lane: int, value: int) -> None:
        raise ValueError(f"phase 1 of lane {lane} failed")

    def die(self, lane: int, value: int) -> None:
        if lane and os.getpid() != self.owner:  # the worker exits mid hand-off, leaving the caller at the barrier
            os._exit(3)


@pytest.mark.skipif(not procs.phased_handoffs(), reason="phased hand-offs run on x86 only (store order)")
def test_phased_hand_off_meets_at_the_barrier_in_one_hand_off() -> None:
    from mnnpy.backends.cpu.compute import blas

    lanes, work = procs.ProcessLanes(1), _Phases()

    def tasks(value: int, bad: int | None = None) -> list:  # (bad: that lane's first phase raises)
        first = [partial(work.fail if lane == bad else work.write, lane, value + lane) for lane in range(2)]
        return [partial(procs.phased, lanes.barrier, lane, 2, first[lane], partial(work.read, lane))
                for lane in range(2)]

    _forked(lanes, tasks(10), tasks(10, bad=1), tasks(10, bad=0))
    try:
        for _ in range(2):  # (found by identity; each run reads what that run's first phase wrote)
            work.data[:] = work.seen[:] = 0
            done = lanes.dispatched
            assert lanes.barrier.reset(2) and lanes.run(tasks(10))
            assert lanes.dispatched == done + 1
            np.testing.assert_array_equal(work.seen, [[11, os.getpid()], [10, lanes.workers[0].pid]])
        for bad in (1, 0):  # a failed first phase lets the other lane through and comes back as an error
            lanes.barrier.reset(2)
            with pytest.raises((RuntimeError, ValueError), match=f"phase 1 of lane {bad} failed"):
                lanes.run(tasks(10, bad=bad))
        lanes.barrier.reset(2)
        assert lanes.run(tasks(10)) and work.seen[1, 1] == lanes.workers[0].pid  # the worker goes on
        dying = [partial(procs.phased, lanes.barrier, lane, 2, partial(work.die, lane, 0), partial(work.read, lane))
                 for lane in range(2)]
        lanes.reset()
        _forked(lanes, dying)
        lanes.barrier.reset(2)
        with pytest.warns(RuntimeWarning, match="exited"):  # the barrier notices: no hang, thread lanes from now on
            assert not lanes.run(dying)
        assert lanes.failure and not lanes.workers
    finally:
        lanes.reset()
    # through run_phases on thread lanes (no worker processes active): the phases in turn, the same result
    work.data[:] = work.seen[:] = 0
    blas.run_phases([[partial(work.write, lane, 7 + lane) for lane in range(2)],
                     [partial(work.read, lane) for lane in range(2)]], 2, shared=True)
    assert list(work.seen[:, 0]) == [8, 7]


def test_task_ident_finds_the_recorded_objects_only() -> None:
    """The fast key (identities) finds a hand-off only when its very objects come again; new views over the same
    memory fall back to ``task_key`` (and find the same entry there)."""
    lanes = procs.ProcessLanes(1)
    base = np.zeros(64, dtype=np.float32)
    a, b = base[:32], base[32:]
    assert not lanes.run([partial(np.copyto, a, b), partial(np.copyto, b, a)])
    ident = procs.task_ident([partial(np.copyto, a, b), partial(np.copyto, b, a)])
    assert lanes.known[ident] == 0
    assert procs.task_ident([partial(np.copyto, base[:32], b), partial(np.copyto, b, a)]) not in lanes.known
    assert not lanes.run([partial(np.copyto, base[:32], b), partial(np.copyto, b, a)])  # found by key: no new entry
    assert len(lanes.table) == 1
    lanes.reset()
    assert not lanes.known


def test_a_run_after_a_pause_wakes_the_workers_first() -> None:
    """``begin`` after the workers have slept (longer than WORKER_SPIN_S since the last run) sends each a wake-only
    message, which gets no answer: the hand-offs after it still pair each answer with its own hand-off."""
    lanes, work = procs.ProcessLanes(1), _Lanes()
    good = [partial(work.mark, 0), partial(work.mark, 1)]
    bad = [partial(work.mark, 0), partial(work.fail, 1)]
    _forked(lanes, good, bad)
    try:
        for _ in range(3):
            lanes.idle_since = 0.0  # (the last run ended long ago)
            lanes.begin()
            work.pids[:] = 0
            assert lanes.run(good) and work.pids[1] == lanes.workers[0].pid
            with pytest.raises(RuntimeError, match=r"ValueError: lane 1 failed"):
                lanes.run(bad)
            assert lanes.run(good)
            lanes.end()
            assert lanes.idle_since > 0.0
    finally:
        lanes.reset()


class _Member:
    """A lane-group member (``lane_groups.LaneGroup``): two phases over a shared buffer; with ``die``, the worker's
    lane exits in the second."""

    def __init__(self, data: np.ndarray, k: int, die: bool = False) -> None:
        self.data, self.k, self.die = data, k, die

    def lane_phases(self, claim: Any = None) -> list:
        return [[partial(self.write, lane) for lane in range(2)], [partial(self.read, lane) for lane in range(2)]]

    def write(self, lane: int) -> None:
        self.data[self.k, lane] = 10 * self.k + lane + 1

    def read(self, lane: int) -> None:  # the other lane's value of the phase before, and of the member before
        if self.die and lane == 1 and os.getpid() != self.data.owner:
            os._exit(3)
        self.data[self.k, 2 + lane] = self.data[self.k, 1 - lane] + (self.data[self.k - 1, 3] if self.k else 0)


class _Data(np.ndarray):
    owner: int


def test_lane_group_runs_its_members_in_one_hand_off() -> None:
    from mnnpy.backends.cpu.lane_groups import LaneGroup

    data = memory.shared_empty((3, 4), np.int64).view(_Data)
    data.owner = os.getpid()
    lanes = procs.ProcessLanes(1)
    group = LaneGroup([(_Member(data, k), ()) for k in range(3)], 2)
    try:
        lanes.begin()
        assert group()  # recorded: the phases in turn on thread lanes
        lanes.end()
        want = data.copy()
        lanes.begin()  # forks (the table grew)
        data[:] = 0
        done = lanes.dispatched
        assert group() and lanes.dispatched == done + 1  # one hand-off for the three members
        lanes.end()
        np.testing.assert_array_equal(data, want)
        np.testing.assert_array_equal(want, [[1, 2, 2, 1], [11, 12, 13, 12], [21, 22, 34, 33]])  # phases in order
        dying = LaneGroup([(_Member(data, 0), ()), (_Member(data, 1, die=True), ())], 2)
        lanes.begin()
        assert dying()
        lanes.end()
        lanes.begin()
        with pytest.warns(RuntimeWarning, match="exited"), pytest.raises(RuntimeError, match="phased hand-off"):
            dying()  # the members may have overwritten their inputs: the run fails rather than repeat them
        lanes.end()
        lanes.begin()
        assert not group()  # given up: the session runs the commands one by one on thread lanes
        lanes.end()
    finally:
        lanes.reset()


def test_profiling_times_a_groups_commands_one_by_one(resnet18: Path) -> None:
    from mnnpy.bench.profile import profile_session

    interp = Interpreter(str(resnet18.with_suffix(".mnn")))
    session = interp.createSession({"numThread": 2})
    interp.getSessionInput(session).copyFrom(np.ones((1, 3, 224, 224), np.float32))
    groups = dict(session.scheduler.groups)
    assert groups
    ops = profile_session(session, runs=2, warmup=2)
    assert all(op.ms > 0 for op in ops if op.op_type == "Convolution")
    assert session.scheduler.groups == groups  # back on after


@pytest.mark.skipif(not procs.phased_handoffs(), reason="phased hand-offs run on x86 only (store order)")
def test_run_phases_after_a_lost_worker() -> None:
    """A worker lost while a phased hand-off's tasks ran: the run raises (a later phase may have overwritten what an
    earlier one read). A worker lost before it (killed between runs): the phases run again on thread lanes."""
    from mnnpy.backends.cpu.compute import blas

    def phases(work: _Phases, first: str) -> list:
        return [[partial(getattr(work, first), lane, 7 + lane) for lane in range(2)],
                [partial(work.read, lane) for lane in range(2)]]

    for killed_before in (False, True):
        lanes, work = procs.ProcessLanes(1), _Phases()
        first = "write" if killed_before else "die"
        try:
            lanes.begin()
            blas.run_phases(phases(work, first), 2, shared=True)  # recorded: thread lanes
            lanes.end()
            lanes.begin()  # forks
            if killed_before:
                os.kill(lanes.workers[0].pid, signal.SIGKILL)
                os.waitpid(lanes.workers[0].pid, 0)
                work.seen[:] = 0
                with pytest.warns(RuntimeWarning, match="exited"):
                    blas.run_phases(phases(work, first), 2, shared=True)
                assert list(work.seen[:, 0]) == [8, 7]
            else:
                with pytest.warns(RuntimeWarning, match="exited"), pytest.raises(RuntimeError, match="not valid"):
                    blas.run_phases(phases(work, first), 2, shared=True)
            lanes.end()
            assert lanes.failure
        finally:
            lanes.end()
            lanes.reset()
