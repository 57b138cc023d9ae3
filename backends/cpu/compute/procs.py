"""Worker-process lanes: a session's ``numThread`` > 1 lanes as forked processes, each with its own GIL.

Why processes: with thread lanes a 2-lane layer half took ~75% of the 1-lane layer, not 50%. The same halves run in
two processes at once take no longer than alone, so the cores were not the limit; the GIL shared by the lanes was
(numpy releases it inside each call, and every re-take after the other lane took it wakes a halted vCPU here).

How (Linux, ``os.fork``): the worker is a fork of the session's process, so it holds the very objects the kernels
prepared in ``on_resize``. What crosses between the processes at run time lives in shared memory: the session's
arena (every non-constant tensor) and the conv kernels' scratch pool (``memory.shared_empty``).

* Record: the first time a kernel hands a list of lane tasks (``functools.partial`` objects) to ``run_lanes`` with
  ``shared=True``, the list is kept in the table under a key made of the bound method, its object and its arguments
  (arrays by address, shape and strides) and runs on thread lanes.
* Fork: at the start of the next run the workers are (re)forked, so each holds the whole table. Later runs send a
  worker the table index and its lane number (8 bytes down a pipe); the worker runs that task on its copy, which
  reads and writes the same shared memory, and answers one byte. The caller runs lane 0 meanwhile.
* ``shared=True`` is a kernel's promise that its lane tasks exchange data only through the arena or the shared
  scratch: a lane may use private buffers only for what it writes and reads itself within the task.
* Dynamic work claiming across processes: ``SharedClaim``, a counter in shared memory under a process-shared lock.
* Phased hand-offs (``phased``, ``blas.run_phases``, ``lane_groups``): a lane's task runs several phases in turn and
  the lanes meet at a shared-memory barrier (``SharedBarrier``) between them, so a multi-phase kernel, or a run of
  consecutive kernels, is one hand-off. A task list the table holds is found again by identity (``lists``), else
  by the identities of its functions and arguments (``task_ident``), else by ``task_key``.
* A run that starts after the workers went to sleep (idle longer than WORKER_SPIN_S) wakes them first with a
  message they do not answer, so their vCPU wakes while the run's first command prepares.

A resize, a release, a fork of the user's own (the child sees ``pid`` change) or a worker that died drop the workers;
the table is rebuilt from the next run. A worker's exception comes back as the text of a RuntimeError; a worker that
exits (killed) is reported as such and the session goes on with thread lanes.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import platform
import select
import signal
import struct
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

_LOCAL = threading.local()  # .lanes: the ProcessLanes of the session running on this thread (None outside a run)
_MSG = struct.Struct("<II")  # table index, lane
# Forks per resize: a kernel that makes new objects every run (weights given at run time) would otherwise grow the
# table and re-fork every run; after this many its hand-offs stay on thread lanes.
MAX_FORKS = 3
WORKER_SPIN_S = 2e-3  # how long an idle worker polls for its next task before it sleeps (`_receive`)
WAIT_SPIN_S = 20e-3  # how long the caller polls for a worker's answer before it sleeps
_WAKE = 0xFFFFFFFF  # a message's table index that only wakes the worker (``ProcessLanes.begin``)


def available() -> bool:
    """Whether this platform can have worker-process lanes (Linux fork; ``MNNPY_CPU_LANES=threads`` turns them off)."""
    return hasattr(os, "fork") and sys.platform.startswith("linux") and \
        os.environ.get("MNNPY_CPU_LANES", "processes") != "threads"


def active() -> ProcessLanes | None:
    """The ProcessLanes of the run in progress on this thread, if any."""
    return getattr(_LOCAL, "lanes", None)


class SharedClaim:
    """A work counter both processes draw from: ``claim()`` returns 0, 1, 2, ... across all lanes of one hand-off."""

    def __init__(self) -> None:
        import multiprocessing

        self._mem = mmap.mmap(-1, mmap.PAGESIZE)  # MAP_SHARED | MAP_ANONYMOUS: the workers see the same page
        self._next = np.frombuffer(self._mem, dtype=np.int64, count=1)
        self._lock = multiprocessing.get_context("fork").Lock()

    def reset(self) -> SharedClaim:
        self._next[0] = 0
        return self

    def __call__(self) -> int:
        with self._lock:
            k = int(self._next[0])
            self._next[0] = k + 1
        return k


class SharedBarrier:
    """Where the lanes of one phased hand-off (``phased``) meet between phases, in shared memory: lane j's count of
    barriers reached on its own cache line, reset by the caller before each hand-off. A lane spins (Python reads of
    the page) until every lane has reached its count: ~1 us against a hand-off's ~15 us between two (the worker's
    answer, the caller's Python, the next message). Safe as plain stores on x86 only (TSO: a lane's stores of a
    phase are seen before its count), so ``phased_handoffs()`` is False elsewhere. A spinning lane checks every ~1 ms
    that the others still exist: the caller that a worker did (RuntimeError), a worker that its parent did (exit)."""

    LINE = 8  # int64s per cache line

    def __init__(self) -> None:
        self._mem = mmap.mmap(-1, mmap.PAGESIZE)
        self._slots = np.frombuffer(self._mem, dtype=np.int64)
        self.owner = os.getpid()
        self.pids: list[int] = []  # the workers (the caller's side checks them)

    def reset(self, lanes: int) -> SharedBarrier:
        self._slots[: lanes * self.LINE] = 0
        return self

    def arrive(self, lane: int, count: int) -> None:
        self._slots[lane * self.LINE] = count

    def wait(self, lane: int, lanes: int, count: int) -> None:
        """Reach barrier ``count`` (1, 2, ...) and return once every one of ``lanes`` lanes has."""
        slots, line = self._slots, self.LINE
        slots[lane * line] = count
        spins = 0
        for j in range(lanes):
            while slots[j * line] < count:
                spins += 1
                if not spins % 256:  # (~40 us: let a lane the scheduler put on this CPU run)
                    os.sched_yield()
                    if not spins % 8192:
                        self._check()

    def _check(self) -> None:
        if os.getpid() != self.owner:
            if os.getppid() != self.owner:
                os._exit(1)
            return
        for pid in self.pids:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG) != (0, 0):
                    raise RuntimeError(f"a CPU lane worker process ({pid}) exited during a phased hand-off")


def phased_handoffs() -> bool:
    """Whether ``phased`` hand-offs may run (x86's store order, see SharedBarrier)."""
    return platform.machine().lower() in ("x86_64", "amd64")


def phased(barrier: SharedBarrier, lane: int, lanes: int, *tasks: Callable[[], None]) -> None:
    """Lane ``lane`` of a phased hand-off of ``lanes``: its task of each phase in turn, meeting the other lanes at
    ``barrier`` between them. A lane whose task raises (or is interrupted) lets the others through every barrier
    left first, so no lane waits for it forever; the error comes back as any lane's does."""
    try:
        for count, task in enumerate(tasks):
            if count:
                barrier.wait(lane, lanes, count)
            task()
    finally:
        barrier.arrive(lane, len(tasks) - 1)


# id(array) -> (weak reference, data address): the address of an array met before without building its
# ``__array_interface__`` dict (~1 us an array, up to 6 per hand-off). An entry goes when its array does (the callback),
# so an id found here with its reference alive is that very array, whose data pointer never changes.
_ADDRESSES: dict[int, tuple[weakref.ref, int]] = {}


def _address(a: np.ndarray) -> int:
    hit = _ADDRESSES.get(id(a))
    if hit is not None and hit[0]() is a:
        return hit[1]
    address = a.__array_interface__["data"][0]
    _ADDRESSES[id(a)] = (weakref.ref(a, partial(_forget_address, id(a))), address)
    return address


def _forget_address(key: int, _ref: weakref.ref) -> None:
    hit = _ADDRESSES.get(key)
    if hit is not None and hit[0] is _ref:
        del _ADDRESSES[key]


def _key_part(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return ("a", _address(value), value.shape, value.strides, value.dtype)
    if value is None or isinstance(value, (int, float, str, bool)):
        return value
    if isinstance(value, partial):  # (a phased hand-off's lane: ``phased`` with its phases' tasks)
        return _task_part(value, _key_part)
    return ("o", id(value))


def _task_part(task: partial, part: Callable[[Any], Any]) -> tuple:
    if task.keywords:
        raise TypeError("keywords")
    func = task.func
    head = (func.__func__, id(func.__self__)) if hasattr(func, "__self__") else (func,)
    return (*head, *map(part, task.args))


def _ident_part(value: Any) -> Any:
    return _task_part(value, _ident_part) if isinstance(value, partial) else id(value)


def _tasks_part(tasks: Sequence[Callable[[], None]], part: Callable[[Any], Any]) -> tuple | None:
    if not all(isinstance(task, partial) for task in tasks):
        return None
    try:
        return tuple(_task_part(task, part) for task in tasks)  # type: ignore[arg-type]
    except TypeError:
        return None


def task_key(tasks: Sequence[Callable[[], None]]) -> tuple | None:
    """A key under which the same hand-off is found again next run: per task its function (and object) and its
    arguments, arrays by address, shape and strides, other objects by identity, partials (a phased lane's tasks)
    by their own key (None: not all partials, or keywords)."""
    return _tasks_part(tasks, _key_part)


def task_ident(tasks: Sequence[Callable[[], None]]) -> tuple | None:
    """``task_key``'s fast form: the identities of the functions, objects and arguments (~1 us against ~3.5).
    ``ProcessLanes`` keeps it for each recorded hand-off, whose tasks the table keeps alive: no other live object
    has those identities, so a run that finds it passes the very objects recorded (so the same ``task_key``)."""
    return _tasks_part(tasks, _ident_part)


class _Worker:
    """One forked worker: its pid and the parent's ends of its two pipes."""

    def __init__(self, pid: int, send: int, receive: int) -> None:
        self.pid, self.send, self.receive = pid, send, receive

    def close(self) -> None:
        for fd in (self.send, self.receive):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(ChildProcessError, OSError):
            if os.waitpid(self.pid, os.WNOHANG) == (0, 0):
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)


def _shutdown(workers: list[_Worker]) -> None:
    for w in workers:
        w.close()
    workers.clear()


_GONE = object()  # ProcessLanes._wait: the worker exited
_ALL: weakref.WeakSet[ProcessLanes] = weakref.WeakSet()


def _forget_workers() -> None:
    """In any forked child (a user's, or a new worker): close the inherited ends of every session's worker pipes,
    so that a worker still sees end-of-file when the process that made it exits, and forget the workers (they are
    the parent's: not stopped here)."""
    for lanes in list(_ALL):
        for w in lanes.workers:
            for fd in (w.send, w.receive):
                with contextlib.suppress(OSError):
                    os.close(fd)
        lanes.workers.clear()
        lanes.forked = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


class ProcessLanes:
    """The worker processes of one CPU backend (``workers`` = numThread - 1) and the table of recorded hand-offs."""

    def __init__(self, workers: int) -> None:
        self.count = workers
        self.table: list[list[Callable[[], None]]] = []
        self.index: dict[tuple, int] = {}
        self.known: dict[tuple, int] = {}  # task_ident of each recorded hand-off -> its table index
        self.lists: dict[int, int] = {}  # id of a recorded task list (the table keeps it) -> its table index
        self.generation = 0  # counts resets: what a caller built from this table's claims is stale after one
        self.forked = 0  # table entries the live workers hold
        self.forks = 0  # since the last reset: new hand-offs stop being recorded after MAX_FORKS
        self.workers: list[_Worker] = []
        self.pid = os.getpid()
        self.claim = SharedClaim()
        self.claims = [self.claim]  # ``claim_slot``
        self.barrier = SharedBarrier()
        self.dispatched = 0  # hand-offs run in workers (tests and the profiler read it)
        self.idle_since = 0.0  # when the last run ended (``begin`` wakes workers that have slept since)
        self.failure: str | None = None  # why the workers were given up (then thread lanes only)
        self.cut_short = False  # the hand-off that gave them up had started its tasks
        self._finalizer = weakref.finalize(self, _shutdown, self.workers)
        _ALL.add(self)

    # *** lifecycle ***
    def reset(self) -> None:
        """Forget the table and stop the workers (a resize: the kernels and their arrays are new)."""
        _shutdown(self.workers)
        self.table.clear()
        self.index.clear()
        self.known.clear()
        self.lists.clear()
        self.forked = self.forks = 0
        self.generation += 1

    def claim_slot(self, i: int) -> SharedClaim:
        """The ``i``-th shared work counter (0: ``claim``): one per claiming kernel of a lane group
        (``lane_groups``), each reset by the group before its hand-off."""
        while len(self.claims) <= i:
            self.claims.append(SharedClaim())
        return self.claims[i]

    def begin(self) -> None:
        """Start of a run on this thread: (re)fork when the table grew since the workers were made."""
        if os.getpid() != self.pid:  # in a fork of the user's (`_forget_workers` ran): start afresh
            self.pid, self.failure = os.getpid(), None
            self.claim, self.barrier = SharedClaim(), SharedBarrier()
            self.claims = [self.claim]
            self.reset()
        if self.failure is None and len(self.table) > self.forked:
            _shutdown(self.workers)
            self._fork()
        elif self.workers and time.perf_counter() - self.idle_since > WORKER_SPIN_S:
            # the workers have gone to sleep since the last run: wake them now, so the ~40-80 us a halted vCPU
            # takes to wake passes while this run's first command prepares, not in its first hand-off
            with contextlib.suppress(OSError):  # (a worker that is gone: the hand-off finds out)
                for w in self.workers:
                    os.write(w.send, _MSG.pack(_WAKE, 0))
        _LOCAL.lanes = self

    def end(self) -> None:
        self.idle_since = time.perf_counter()
        _LOCAL.lanes = None

    def _fork(self) -> None:
        for _ in range(self.count):
            down_r, down_w = os.pipe()
            up_r, up_w = os.pipe()
            with warnings.catch_warnings():  # 3.12+: "use of fork() may lead to deadlocks" (see _serve)
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:  # the worker (`_forget_workers` closed the other workers' pipes)
                for fd in (down_w, up_r):
                    os.close(fd)
                os.set_blocking(down_r, False)
                _serve(self.table, down_r, up_w)
            os.close(down_r)
            os.close(up_w)
            os.set_blocking(up_r, False)
            self.workers.append(_Worker(pid, down_w, up_r))
        self.barrier.pids = [w.pid for w in self.workers]
        self.forked = len(self.table)
        self.forks += 1

    # *** hand-offs ***
    def run(self, tasks: Sequence[Callable[[], None]]) -> bool:
        """Run ``tasks`` (lane 0 here, the others in the workers); False: not recorded yet or no workers, the caller
        runs them on thread lanes (the hand-off is recorded for the next fork)."""
        if len(tasks) - 1 > self.count:
            return False
        k = self.lists.get(id(tasks))  # (a list recorded before: the table keeps it, so no other has its id)
        if k is None or self.table[k] is not tasks:
            ident = task_ident(tasks)
            k = self.known.get(ident) if ident is not None else None
        if k is None:
            key = task_key(tasks)
            if key is None:
                return False
            k = self.index.get(key)
            if k is None:
                if self.failure is None and self.forks < MAX_FORKS:
                    kept = tasks if isinstance(tasks, list) else list(tasks)  # (the caller's list: not changed after)
                    self.index[key] = self.known[ident] = self.lists[id(kept)] = len(self.table)  # type: ignore[index]
                    self.table.append(kept)
                return False
        if k >= self.forked or not self.workers:
            return False
        workers = self.workers[: len(tasks) - 1]
        sent: list[_Worker] = []
        with contextlib.suppress(OSError):  # a worker that is gone: EPIPE
            for lane, w in enumerate(workers, start=1):
                os.write(w.send, _MSG.pack(k, lane))
                sent.append(w)
        error: BaseException | None = None
        if len(sent) == len(workers):
            try:
                tasks[0]()
            except BaseException as exc:
                error = exc
        gone = len(sent) < len(workers)
        for w in sent:
            answer = self._wait(w)
            if answer is _GONE:
                gone = True
            elif answer is not None:
                error = error or answer
        if gone:  # every task runs again on thread lanes: each rewrites all it writes
            self._give_up(f"a CPU lane worker process ({', '.join(str(w.pid) for w in workers)}) exited")
            self.claim.reset()
            self.cut_short = len(sent) == len(workers)  # (the tasks had started: see ``blas.run_phased``)
            return False
        self.dispatched += 1
        if error is not None:
            raise error
        return True

    def _wait(self, w: _Worker) -> BaseException | object | None:
        """The worker's answer: None (done), the error its task raised (as a RuntimeError) or _GONE."""
        while True:  # a signal while waiting: keep waiting, so no worker is left writing into the arena
            try:
                status = _receive(w.receive, 1, WAIT_SPIN_S)
                break
            except (InterruptedError, KeyboardInterrupt):
                continue
        if status == b"\x00":
            return None
        if status == b"\x01":
            try:
                size = _MSG.unpack(_read_exact(w.receive, _MSG.size))[0]
                text = _read_exact(w.receive, size).decode("utf-8", "replace")
            except EOFError:
                return _GONE
            return RuntimeError(f"CPU lane worker (pid {w.pid}): {text}")
        return _GONE

    def _give_up(self, reason: str) -> None:
        """Stop using worker processes for this session (thread lanes from now on), saying why once."""
        self.failure = reason
        _shutdown(self.workers)
        warnings.warn(f"{reason}; this session's lanes run as threads from now on", RuntimeWarning, stacklevel=4)


def _receive(fd: int, size: int, spin: float) -> bytes:
    """Up to ``size`` bytes from the non-blocking pipe ``fd``: polled for ``spin`` seconds, then a blocking wait.

    Polling first: a halted vCPU here takes ~40 us to wake, so a blocking hand-off and its answer cost ~78 us round
    trip against ~3.3 us polled (tools/PERF.md). The worker polls between tasks, which costs only the otherwise idle
    core it runs on, and only for WORKER_SPIN_S after its last task (then it sleeps: a machine with other work
    loses at most that much per run)."""
    deadline = 0.0
    while True:
        try:
            return os.read(fd, size)
        except BlockingIOError:
            now = time.perf_counter()
            if not deadline:
                deadline = now + spin
            elif now > deadline:
                select.select([fd], [], [])


def _read_exact(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = _receive(fd, size - len(data), WAIT_SPIN_S)
        if not chunk:
            raise EOFError("CPU lane worker pipe closed")
        data += chunk
    return data


def _serve(table: list[list[Callable[[], None]]], receive: int, send: int) -> None:
    """The worker's loop: run the task it is told to until the parent closes the pipe, then exit (no atexit
    handlers, no buffers flushed: the parent owns everything). Ctrl-C goes to the parent only. The worker touches
    nothing but numpy and its table, so locks other threads held at the fork (the reason for Python's warning)
    are not taken here; BLAS runs at 1 thread (set before the fork), so OpenBLAS's pool is not used."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _LOCAL.lanes = None
        from .blas import set_blas_threads

        set_blas_threads(1)  # a lane is one core's work (OpenBLAS would start a pool again in the fork)
        while True:
            msg = _receive(receive, _MSG.size, WORKER_SPIN_S)
            if len(msg) < _MSG.size:
                break
            k, j = _MSG.unpack(msg)
            if k == _WAKE:
                continue
            try:
                table[k][j]()
            except BaseException as exc:  # reported to the parent, which raises it
                text = f"{type(exc).__name__}: {exc}".encode()
                os.write(send, b"\x01" + _MSG.pack(len(text), 0) + text)
            else:
                os.write(send, b"\x00")
    except BaseException:  # the worker must never return into the parent's code
        code = 1
    finally:
        os._exit(code)
