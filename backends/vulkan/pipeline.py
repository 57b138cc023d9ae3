"""Shader modules, descriptor-set layouts and compute pipelines, cached per device (MNN: `VulkanPipelineFactory`).

A pipeline is keyed by (shader name, binding count, push-constant bytes, local size, extra constants). All
bindings are storage buffers; the 1-D local size is specialization constant 0 (`layout(local_size_x_id = 0) in;`),
as in MNN, so the same SPIR-V serves every work-group size. Extra int specialization constants take ids 1, 2, ...
(e.g. the op code of the unary and binary shaders, so the driver compiles only that op's branch).
"""

from __future__ import annotations

import functools
import struct
import sys
from dataclasses import dataclass
from importlib import resources
from typing import Any

import vulkan as vk


@dataclass
class Pipeline:
    """A compute pipeline with its layouts (owned by the PipelineCache)."""

    name: str
    handle: Any
    layout: Any
    set_layout: Any
    bindings: int
    push_bytes: int
    local_size: int


@functools.cache
def has_shader(name: str) -> bool:
    """Whether the package ships `shaders/<name>.spv` (e.g. an optional `_fp16a` variant)."""
    return resources.files("mnnpy.backends.vulkan").joinpath("shaders", f"{name}.spv").is_file()


def load_spirv(name: str) -> bytes:
    """The committed SPIR-V of shader `name` (package data `shaders/<name>.spv`)."""
    return resources.files("mnnpy.backends.vulkan").joinpath("shaders", f"{name}.spv").read_bytes()


class PipelineCache:
    """Creates pipelines once per key; counts creations in `counters['pipelines_created']`."""

    def __init__(self, device: Any, counters: dict[str, int]) -> None:
        self.device = device
        self.counters = counters
        self.cache = vk.vkCreatePipelineCache(device, vk.VkPipelineCacheCreateInfo(), None)
        self._modules: dict[str, Any] = {}
        self._set_layouts: dict[int, Any] = {}
        self._pipelines: dict[tuple[str, int, int, int, tuple[int, ...]], Pipeline] = {}

    def _module(self, name: str) -> Any:
        if name not in self._modules:
            code = load_spirv(name)
            info = vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code)
            self._modules[name] = vk.vkCreateShaderModule(self.device, info, None)
        return self._modules[name]

    def set_layout(self, bindings: int) -> Any:
        """Descriptor-set layout with `bindings` storage buffers at bindings 0..n-1 (compute stage)."""
        if bindings not in self._set_layouts:
            entries = [vk.VkDescriptorSetLayoutBinding(binding=i, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                       descriptorCount=1, stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)
                       for i in range(bindings)]
            info = vk.VkDescriptorSetLayoutCreateInfo(bindingCount=bindings, pBindings=entries)
            self._set_layouts[bindings] = vk.vkCreateDescriptorSetLayout(self.device, info, None)
            del entries
        return self._set_layouts[bindings]

    def get(self, name: str, bindings: int, push_bytes: int, local_size: int, spec: tuple[int, ...] = ()) -> Pipeline:
        """The pipeline for a shader, binding count, push-constant size, 1-D local size and extra specialization
        constants (ids 1, 2, ...), created on a miss."""
        key = (name, bindings, push_bytes, local_size, tuple(spec))
        found = self._pipelines.get(key)
        if found is not None:
            return found
        set_layout = self.set_layout(bindings)
        set_layouts = [set_layout]
        push_range = vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=push_bytes)
        push_ranges = [push_range]
        layout_info = vk.VkPipelineLayoutCreateInfo(setLayoutCount=1, pSetLayouts=set_layouts,
                                                    pushConstantRangeCount=1 if push_bytes else 0,
                                                    pPushConstantRanges=push_ranges if push_bytes else None)
        layout = vk.vkCreatePipelineLayout(self.device, layout_info, None)
        values = (local_size, *spec)
        spec_bytes = bytearray(struct.pack(f"<I{len(spec)}i", *values))
        spec_data = vk.ffi.from_buffer(spec_bytes)
        spec_entries = [vk.VkSpecializationMapEntry(constantID=i, offset=4 * i, size=4) for i in range(len(values))]
        spec_info = vk.VkSpecializationInfo(mapEntryCount=len(values), pMapEntries=spec_entries,
                                            dataSize=len(spec_bytes), pData=spec_data)
        stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=self._module(name),
                                                   pName="main", pSpecializationInfo=spec_info)
        info = vk.VkComputePipelineCreateInfo(stage=stage, layout=layout)
        handle = vk.vkCreateComputePipelines(self.device, self.cache, 1, [info], None)[0]
        del spec_data, spec_bytes, spec_entries, spec_info, stage, info, push_range, push_ranges, set_layouts
        pipe = Pipeline(name, handle, layout, set_layout, bindings, push_bytes, local_size)
        self._pipelines[key] = pipe
        self.counters["pipelines_created"] += 1
        return pipe

    def close(self) -> None:
        """Destroy all pipelines, layouts and modules."""
        for pipe in self._pipelines.values():
            vk.vkDestroyPipeline(self.device, pipe.handle, None)
            vk.vkDestroyPipelineLayout(self.device, pipe.layout, None)
        for layout in self._set_layouts.values():
            vk.vkDestroyDescriptorSetLayout(self.device, layout, None)
        for module in self._modules.values():
            vk.vkDestroyShaderModule(self.device, module, None)
        vk.vkDestroyPipelineCache(self.device, self.cache, None)
        self._pipelines, self._set_layouts, self._modules = {}, {}, {}


class DescriptorAllocator:
    """Descriptor sets from a growing list of pools; sets are freed one by one with the command buffer using them
    (pools are created with FREE_DESCRIPTOR_SET_BIT), so recordings kept across resizes keep their sets."""

    SETS_PER_POOL = 256

    def __init__(self, device: Any, counters: dict[str, int]) -> None:
        self.device = device
        self.counters = counters
        self._pools: list[Any] = []
        self._live: list[int] = []  # sets allocated and not freed, per pool

    def _pool(self) -> int:
        for i, live in enumerate(self._live):
            if live < self.SETS_PER_POOL:
                return i
        size = vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       descriptorCount=self.SETS_PER_POOL * 8)
        sizes = [size]
        info = vk.VkDescriptorPoolCreateInfo(flags=vk.VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT,
                                             maxSets=self.SETS_PER_POOL, poolSizeCount=1, pPoolSizes=sizes)
        self._pools.append(vk.vkCreateDescriptorPool(self.device, info, None))
        self._live.append(0)
        del sizes, size
        return len(self._pools) - 1

    def allocate(self, pipe: Pipeline, buffers: list[tuple[Any, int, int]]) -> tuple[int, Any]:
        """(pool number, descriptor set) for `pipe` with binding i = (VkBuffer, byte offset, byte range) buffers[i]."""
        if len(buffers) > 8:
            raise ValueError("at most 8 bindings per dispatch")
        index = self._pool()
        layouts = [pipe.set_layout]
        info = vk.VkDescriptorSetAllocateInfo(descriptorPool=self._pools[index], descriptorSetCount=1,
                                              pSetLayouts=layouts)
        dset = vk.vkAllocateDescriptorSets(self.device, info)[0]
        self._live[index] += 1
        infos = [vk.VkDescriptorBufferInfo(buffer=b, offset=off, range=size) for b, off, size in buffers]
        writes = [vk.VkWriteDescriptorSet(dstSet=dset, dstBinding=i, descriptorCount=1,
                                          descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                          pBufferInfo=[infos[i]]) for i in range(len(infos))]
        vk.vkUpdateDescriptorSets(self.device, len(writes), writes, 0, None)
        del writes, infos, layouts
        self.counters["descriptor_sets"] += 1
        return index, dset

    def free(self, index: int, dset: Any) -> None:
        """Give a set back to its pool (no command buffer using it may still be pending)."""
        if index >= len(self._pools):  # pools already destroyed (finalizers of a collected cycle run in any order)
            return
        vk.vkFreeDescriptorSets(self.device, self._pools[index], 1, [dset])
        self._live[index] -= 1

    def close(self) -> None:
        """Destroy the pools (their sets must no longer be in use)."""
        for pool in self._pools:
            vk.vkDestroyDescriptorPool(self.device, pool, None)
        self._pools, self._live = [], []

    def __del__(self) -> None:
        if not sys.is_finalizing():
            self.close()
