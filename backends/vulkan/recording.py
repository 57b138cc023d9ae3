"""Command recording with reuse across resizes (MNN: `VulkanCommandPool` + the pre-recorded session buffer).

Every execution's dispatches are recorded once into a **secondary** command buffer (with the barriers between its
own dispatches), keyed by what was recorded: per dispatch the pipeline, the bound byte ranges (buffer uid, offset,
size), the push constants and the group count. A run submits a **primary** command buffer that executes the
secondaries of a range of executions, with a barrier before a secondary whose ranges conflict (RAW, WAR, WAW) with
those used since the last barrier; primaries are keyed by the keys of their secondaries.

So after a resize, an execution whose shapes and bindings did not change finds its secondary (and descriptor sets)
and records nothing; only changed executions and the primary are recorded; a resize to the same shapes finds the
primary too and records nothing. Descriptor sets are allocated when a secondary is recorded and freed with it.
Counters: `records` (primaries), `executions_recorded` (secondaries), `descriptor_sets`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import vulkan as vk

BARRIER_DST = vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT


@dataclass
class Segment:
    """One execution's recorded dispatches: the secondary command buffer, its descriptor sets, all ranges used."""

    command_buffer: Any
    sets: list[tuple[Any, Any]]
    reads: list[Any] = field(default_factory=list)
    writes: list[Any] = field(default_factory=list)


def dispatch_key(d: Any) -> tuple:
    """What a recorded dispatch depends on (pipelines live as long as the device, so their identity is stable)."""
    return (id(d.pipeline), tuple((b.buffer.uid, b.offset, b.nbytes) for b in (*d.reads, *d.writes)), d.push, d.groups)


def _conflicts(reads: Sequence[Any], writes: Sequence[Any], pending_reads: Sequence[Any],
               pending_writes: Sequence[Any]) -> bool:
    return any(r.overlaps(w) for r in reads for w in pending_writes) or any(
        w.overlaps(o) for w in writes for o in (*pending_writes, *pending_reads))


def barrier(cb: Any, dst_stage: int, dst_access: int) -> None:
    """A global memory barrier after compute-shader writes."""
    mem = vk.VkMemoryBarrier(srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT, dstAccessMask=dst_access)
    barriers = [mem]
    vk.vkCmdPipelineBarrier(cb, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, dst_stage, 0, 1, barriers, 0, None, 0, None)


class Recorder:
    """Secondary command buffers per execution and primaries per range, reused while their keys stay the same."""

    def __init__(self, vdev: Any, descriptors: Any, counters: dict[str, int]) -> None:
        self.vdev = vdev
        self.descriptors = descriptors
        self.counters = counters
        self.segments: dict[tuple, Segment] = {}
        self.primaries: dict[tuple, Any] = {}

    def _allocate(self, level: int) -> Any:
        info = vk.VkCommandBufferAllocateInfo(commandPool=self.vdev.command_pool, level=level, commandBufferCount=1)
        return vk.vkAllocateCommandBuffers(self.vdev.device, info)[0]

    def segment(self, dispatches: Sequence[Any]) -> tuple[tuple, Segment]:
        """The secondary of one execution's dispatches, recorded on a miss."""
        key = tuple(dispatch_key(d) for d in dispatches)
        found = self.segments.get(key)
        if found is not None:
            return key, found
        cb = self._allocate(vk.VK_COMMAND_BUFFER_LEVEL_SECONDARY)
        inherit = vk.VkCommandBufferInheritanceInfo()
        begin = vk.VkCommandBufferBeginInfo(pInheritanceInfo=inherit)
        vk.vkBeginCommandBuffer(cb, begin)
        del begin, inherit
        seg = Segment(cb, [])
        pending_reads: list[Any] = []
        pending_writes: list[Any] = []
        bind = vk.VK_PIPELINE_BIND_POINT_COMPUTE
        for d in dispatches:
            if _conflicts(d.reads, d.writes, pending_reads, pending_writes):
                barrier(cb, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, BARRIER_DST)
                pending_reads, pending_writes = [], []
            pending_reads += d.reads
            pending_writes += d.writes
            pool, dset = self.descriptors.allocate(
                d.pipeline, [(b.buffer.handle, b.offset, b.nbytes) for b in (*d.reads, *d.writes)])
            seg.sets.append((pool, dset))
            vk.vkCmdBindPipeline(cb, bind, d.pipeline.handle)
            vk.vkCmdBindDescriptorSets(cb, bind, d.pipeline.layout, 0, 1, [dset], 0, None)
            if d.push:
                vk.vkCmdPushConstants(cb, d.pipeline.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(d.push),
                                      vk.ffi.from_buffer(d.push))
            vk.vkCmdDispatch(cb, d.groups, 1, 1)
            seg.reads += d.reads
            seg.writes += d.writes
        vk.vkEndCommandBuffer(cb)
        self.segments[key] = seg
        self.counters["executions_recorded"] += 1
        return key, seg

    def primary(self, dispatches: Sequence[Any], bounds: Sequence[tuple[int, int]]) -> Any:
        """The primary running the executions whose dispatch ranges are `bounds`, recorded on a miss."""
        parts = [self.segment(dispatches[s:e]) for s, e in bounds]
        key = tuple(k for k, _ in parts)
        cb = self.primaries.get(key)
        if cb is not None:
            return cb
        cb = self._allocate(vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY)
        vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo())
        pending_reads: list[Any] = []
        pending_writes: list[Any] = []
        for _, seg in parts:
            if _conflicts(seg.reads, seg.writes, pending_reads, pending_writes):
                barrier(cb, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, BARRIER_DST)
                pending_reads, pending_writes = [], []
            pending_reads += seg.reads
            pending_writes += seg.writes
            vk.vkCmdExecuteCommands(cb, 1, [seg.command_buffer])
        barrier(cb, vk.VK_PIPELINE_STAGE_HOST_BIT, vk.VK_ACCESS_HOST_READ_BIT | vk.VK_ACCESS_HOST_WRITE_BIT)
        vk.vkEndCommandBuffer(cb)
        self.primaries[key] = cb
        self.counters["records"] += 1
        return cb

    def keep(self, dispatches: Sequence[Any], bounds: Sequence[tuple[int, int]]) -> None:
        """Free the secondaries not in the current plan (stale shapes or bindings) and the primaries using them."""
        live = {tuple(dispatch_key(d) for d in dispatches[s:e]) for s, e in bounds}
        stale = [k for k in self.segments if k not in live]
        old = [k for k in self.primaries if not all(part in live for part in k)]
        self._free([self.primaries.pop(k) for k in old], [self.segments.pop(k) for k in stale])

    def _free(self, primaries: list[Any], segments: list[Segment]) -> None:
        cbs = primaries + [s.command_buffer for s in segments]
        if cbs:
            vk.vkFreeCommandBuffers(self.vdev.device, self.vdev.command_pool, len(cbs), cbs)
        for seg in segments:
            for pool, dset in seg.sets:
                self.descriptors.free(pool, dset)

    def clear(self) -> None:
        """Free everything recorded (the device must be idle)."""
        primaries, segments = list(self.primaries.values()), list(self.segments.values())
        self.primaries, self.segments = {}, {}
        self._free(primaries, segments)
