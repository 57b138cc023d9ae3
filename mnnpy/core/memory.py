"""Memory planning: offsets in one 64-byte-aligned arena per backend, reused by lifetime (MNN: DeferBufferAllocator).

The pipeline acquires a command's outputs, then releases inputs whose reference count (readers left in command
order) reaches zero; a freed chunk is handed to later tensors. Offsets are virtual until `allocate`, which makes
one numpy buffer and returns the aligned base every tensor becomes a view of.
"""

from __future__ import annotations

import contextlib
import math
import mmap
from dataclasses import dataclass, field

import numpy as np

ALIGN = 64
HUGE = 2 << 20  # x86-64 transparent huge page
STATIC_CHUNK = 8 << 20  # weight pool chunk (`StaticPool`)
COUNTERS: dict[str, int] = {"arena_allocations": 0, "arena_bytes": 0}


def align(n: int) -> int:
    """Round up to the arena alignment."""
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class Chunk:
    """A planned allocation: offset and size in bytes."""

    offset: int
    size: int


@dataclass
class ArenaPlanner:
    """Best-fit planner over a virtual address space; the arena grows only when no free chunk fits.

    Attributes:
        peak: the arena size needed (bytes).
        requested: the sum of all acquired sizes (what separate allocations would cost).
    """

    free: list[Chunk] = field(default_factory=list)
    peak: int = 0
    requested: int = 0
    live: int = 0

    def acquire(self, nbytes: int) -> Chunk:
        """Plan `nbytes` (rounded to 64): the smallest free chunk that fits, else grow the end of the arena."""
        size = align(max(nbytes, 1))
        self.requested += size
        self.live += 1
        fits = [c for c in self.free if c.size >= size]
        if fits:
            best = min(fits, key=lambda c: c.size)
            self.free.remove(best)
            if best.size > size:
                self.free.append(Chunk(best.offset + size, best.size - size))
            return Chunk(best.offset, size)
        tail = next((c for c in self.free if c.offset + c.size == self.peak), None)
        if tail is not None:  # extend the free chunk at the end of the arena
            self.free.remove(tail)
            self.peak = tail.offset + size
            return Chunk(tail.offset, size)
        chunk = Chunk(self.peak, size)
        self.peak += size
        return chunk

    def release(self, chunk: Chunk) -> None:
        """Give a chunk back, merging it with free neighbours."""
        self.live -= 1
        start, end = chunk.offset, chunk.offset + chunk.size
        keep = []
        for c in self.free:
            if c.offset + c.size == start:
                start = c.offset
            elif c.offset == end:
                end = c.offset + c.size
            else:
                keep.append(c)
        keep.append(Chunk(start, end - start))
        self.free = keep


def allocate(nbytes: int, shared: bool = False) -> tuple[np.ndarray, int]:
    """One arena buffer of `nbytes` and the offset of its first 64-byte-aligned byte, advised as transparent huge
    pages (`huge_buffer`). Measured with sessions created old, new, new, old (together with the conv kernels' scratch
    from `SCRATCH`), 1 thread, an AVX2 host: the UNet block 0.935-0.949, ResNet-18 0.964-0.981, MobileNetV2
    0.988-1.023, BERT-4L 0.999 (an earlier interleaved A/B of the arena alone: BERT-4L 0.997-0.999).
    ``shared``: memory a forked worker process sees too (`shared_empty`; ordinary pages). Arenas under 1 MB (small
    models, control-flow bodies) stay ordinary memory: a huge page would be mostly unused."""
    if shared:
        buf = shared_empty((nbytes + ALIGN,), np.uint8)
    else:
        buf = huge_buffer(nbytes + ALIGN) if nbytes >= HUGE // 2 else np.empty(nbytes + ALIGN, dtype=np.uint8)
    COUNTERS["arena_allocations"] += 1
    COUNTERS["arena_bytes"] += nbytes
    base = (-buf.ctypes.data) % ALIGN
    return buf, base


def shared_empty(shape: tuple[int, ...], dtype: np.dtype | type = np.float32) -> np.ndarray:
    """An array in anonymous shared memory (mmap MAP_SHARED, zero-filled): processes forked after it was made read
    and write the same bytes (worker-process lanes, backends/cpu/compute/procs.py). Page-aligned."""
    nbytes = max(1, math.prod(shape) * np.dtype(dtype).itemsize)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype=dtype, count=math.prod(shape)).reshape(shape)


POPULATE_MIN_BYTES = 256 << 10


def populated_zeros(shape: tuple[int, ...], dtype: np.dtype | type = np.float32) -> np.ndarray:
    """A zero-filled array whose pages are all faulted in by the one ``mmap`` call that makes it (MAP_POPULATE, in
    its own mapping, returned to the system with its last array), for arrays written in full right away (packed
    weights). First-touch page faults, one per 4 KB page, cost 13-177 ms for 80 MB in a fresh process here (a KVM
    guest: they vary with the host), the populated mapping a steady ~31 ms. Small arrays, and platforms without
    MAP_POPULATE: ``np.zeros``."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    flag = getattr(mmap, "MAP_POPULATE", None)
    if nbytes < POPULATE_MIN_BYTES or flag is None or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.zeros(shape, dtype)
    area = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | flag)
    return np.frombuffer(area, dtype=dtype, count=math.prod(shape)).reshape(shape)


def view(buf: np.ndarray, base: int, chunk: Chunk, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """A typed, shaped view of a planned chunk."""
    n = math.prod(shape) * np.dtype(dtype).itemsize
    return buf[base + chunk.offset: base + chunk.offset + n].view(dtype).reshape(shape)


def alias_view(src: np.ndarray, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """The bytes of a bound tensor array seen as another tensor of the same size (an aliased byte-identical copy)."""
    if not src.flags.c_contiguous:
        raise ValueError(f"cannot alias a non-contiguous array of shape {src.shape}")
    out = src.reshape(-1).view(np.uint8).view(dtype)
    if out.size != math.prod(shape):
        raise ValueError(f"cannot alias {src.shape} {src.dtype} as {shape} {np.dtype(dtype)}: sizes differ")
    return out.reshape(shape)




def huge_buffer(nbytes: int) -> np.ndarray:
    """``nbytes`` of zero-filled anonymous memory starting on a 2 MB boundary, advised as transparent huge pages
    where the platform knows MADV_HUGEPAGE (freed with the last array that refers to it)."""
    if not hasattr(mmap, "MAP_ANONYMOUS"):  # not a POSIX mmap: ordinary memory
        return np.zeros(nbytes, np.uint8)
    size = -(-max(nbytes, 1) // HUGE) * HUGE
    area = mmap.mmap(-1, size + HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    raw = np.frombuffer(area, np.uint8)
    start = -raw.ctypes.data % HUGE
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if advice is not None:
        with contextlib.suppress(OSError):  # a kernel built without transparent huge pages refuses (EINVAL)
            area.madvise(advice, start, size)
    return raw[start: start + nbytes]


class StaticPool:
    """Weights (STATIC storage) carved from 2 MB-aligned anonymous chunks advised as transparent huge pages.

    A kernel's weights are read once per run, after the other engines (or ops) have evicted them from the caches:
    with 4 KB pages every 256 KB weight block also misses the TLB. Huge pages measured 2-6% faster on cold GEMMs
    ([128, 256] @ [256, 1024]: 415 -> 390 us median, 24 weights cycled). Each chunk lives as long as any array
    carved from it (numpy views keep it alive); the pool keeps only the chunk it is filling. Where the platform has
    no MADV_HUGEPAGE the chunks are ordinary anonymous memory (still zero-filled, still 64-byte aligned)."""

    def __init__(self, chunk: int = STATIC_CHUNK) -> None:
        self.chunk_bytes = chunk
        self.buffer: np.ndarray | None = None
        self.used = 0

    def _new_chunk(self, need: int) -> None:
        self.buffer, self.used = huge_buffer(max(self.chunk_bytes, need)), 0

    def zeros(self, shape: tuple[int, ...], dtype: np.dtype | type = np.float32) -> np.ndarray:
        """A zero-filled C-contiguous array of fresh pool memory (never handed out twice)."""
        dt = np.dtype(dtype)
        nbytes = math.prod(shape) * dt.itemsize
        if self.buffer is None or self.used + nbytes > self.buffer.size:
            self._new_chunk(nbytes)
        assert self.buffer is not None
        out = self.buffer[self.used: self.used + nbytes].view(dt).reshape(shape)
        self.used = align(self.used + nbytes)
        return out


STATIC = StaticPool()
SCRATCH = StaticPool()  # kernels' scratch in huge pages: the conv pool when not shared, the pooling op's buffers


def static_zeros(shape: tuple[int, ...], dtype: np.dtype | type = np.float32) -> np.ndarray:
    """Zero-filled weight memory from the process's huge-page pool (`StaticPool`)."""
    return STATIC.zeros(shape, dtype)
