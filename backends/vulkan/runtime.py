"""Vulkan Runtime: instance, physical device, logical device, compute queue and per-device caches.

MNN: `VulkanRuntime` + `component/VulkanDevice`. One `VulkanDevice` is shared by every backend (session) the
runtime creates. Binding pitfalls handled here (reference/toolchain-notes.md §2): nested create-info structs are
kept in named locals until the call returns, nested returned struct fields are copied to Python ints at once, and
the API version is built with `VK_MAKE_VERSION` (the binding has no `VK_API_VERSION_1_1`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import vulkan as vk
from mnnpy.backends.vulkan.pipeline import PipelineCache

from mnnpy.core import registry
from mnnpy.core.backend import Backend, BackendUnavailable, Runtime

# Work counters: a second run with the same shapes must not move pipelines_created or records.
COUNTERS: dict[str, int] = {"pipelines_created": 0, "records": 0, "submits": 0, "allocations": 0,
                            "descriptor_sets": 0, "uploads": 0, "executions_recorded": 0}
NO_DEVICE = "vulkan: no device (install mesa-vulkan-drivers?)"
FLOAT16_EXTENSION = "VK_KHR_shader_float16_int8"


def _device_extensions(physical: Any) -> set[str]:
    return {str(e.extensionName) for e in vk.vkEnumerateDeviceExtensionProperties(physical, None)}


@dataclass(frozen=True)
class DeviceLimits:
    """Device limits and features, copied to Python values when the device is opened."""

    name: str
    device_type: int
    api_version: tuple[int, int, int]
    max_group_count: tuple[int, int, int]
    max_group_size: tuple[int, int, int]
    max_invocations: int
    max_push_constants: int
    min_storage_alignment: int
    max_storage_range: int
    shader_float16: bool
    storage_buffer_16bit: bool

    @property
    def fp16(self) -> bool:
        """Whether the device reports fp16 storage + arithmetic (shaderFloat16 and storageBuffer16BitAccess)."""
        return self.shader_float16 and self.storage_buffer_16bit


def _query_limits(physical: Any) -> DeviceLimits:
    props = vk.vkGetPhysicalDeviceProperties(physical)
    lim = props.limits
    ver = int(props.apiVersion)
    f16 = vk.ffi.new("VkPhysicalDeviceShaderFloat16Int8Features*")
    f16.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES
    s16 = vk.ffi.new("VkPhysicalDevice16BitStorageFeatures*")
    s16.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES
    s16.pNext = f16
    feats = vk.ffi.new("VkPhysicalDeviceFeatures2*")
    feats.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
    feats.pNext = s16
    vk.vkGetPhysicalDeviceFeatures2(physical, feats)
    result = DeviceLimits(
        name=str(props.deviceName), device_type=int(props.deviceType),
        api_version=(ver >> 22, (ver >> 12) & 0x3FF, ver & 0xFFF),
        max_group_count=tuple(int(lim.maxComputeWorkGroupCount[i]) for i in range(3)),
        max_group_size=tuple(int(lim.maxComputeWorkGroupSize[i]) for i in range(3)),
        max_invocations=int(lim.maxComputeWorkGroupInvocations),
        max_push_constants=int(lim.maxPushConstantsSize),
        min_storage_alignment=int(lim.minStorageBufferOffsetAlignment),
        max_storage_range=int(lim.maxStorageBufferRange),
        shader_float16=bool(f16.shaderFloat16), storage_buffer_16bit=bool(s16.storageBuffer16BitAccess))
    del lim, props
    return result


def _pick_physical(instance: Any) -> tuple[Any, int]:
    """The first device with a compute queue, preferring discrete, integrated and virtual GPUs over CPUs."""
    rank = {vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: 0, vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: 1,
            vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: 2, vk.VK_PHYSICAL_DEVICE_TYPE_CPU: 3}
    choices = []
    for order, dev in enumerate(vk.vkEnumeratePhysicalDevices(instance)):
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(dev)
        queue = next((i for i, q in enumerate(families) if int(q.queueFlags) & vk.VK_QUEUE_COMPUTE_BIT), None)
        if queue is not None:
            kind = int(vk.vkGetPhysicalDeviceProperties(dev).deviceType)
            choices.append((rank.get(kind, 4), order, dev, queue))
    if not choices:
        raise BackendUnavailable(NO_DEVICE)
    choices.sort(key=lambda c: (c[0], c[1]))
    return choices[0][2], choices[0][3]


class VulkanDevice:
    """Instance, chosen physical device, logical device, one compute queue, command pool and pipeline cache."""

    def __init__(self) -> None:
        app = vk.VkApplicationInfo(pApplicationName="mnnpy", pEngineName="mnnpy",
                                   apiVersion=vk.VK_MAKE_VERSION(1, 1, 0))
        layers = [x for x in os.environ.get("MNNPY_VK_LAYERS", "").split(":") if x]
        info = vk.VkInstanceCreateInfo(pApplicationInfo=app, ppEnabledLayerNames=layers or None)
        self.instance = vk.vkCreateInstance(info, None)
        self.physical, self.queue_family = _pick_physical(self.instance)
        self.limits = _query_limits(self.physical)
        mem = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        self.memory_types = [(int(mem.memoryTypes[i].propertyFlags), int(mem.memoryTypes[i].heapIndex))
                             for i in range(int(mem.memoryTypeCount))]
        del mem
        priorities = [1.0]
        queue_info = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.queue_family, queueCount=1,
                                                pQueuePriorities=priorities)
        queue_infos = [queue_info]
        # precision='low': 16-bit storage (core 1.1) and, where the device has them, float16 arithmetic
        # (VK_KHR_shader_float16_int8, core in 1.2; this instance asks for 1.1, so the extension is enabled)
        storage16 = vk.ffi.new("VkPhysicalDevice16BitStorageFeatures*")
        storage16.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES
        storage16.storageBuffer16BitAccess = int(self.limits.storage_buffer_16bit)
        float16 = vk.ffi.new("VkPhysicalDeviceShaderFloat16Int8Features*")
        float16.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES
        self.fp16_math = self.limits.fp16 and FLOAT16_EXTENSION in _device_extensions(self.physical)
        float16.shaderFloat16 = int(self.fp16_math)
        extensions = [FLOAT16_EXTENSION] if self.fp16_math else []
        storage16.pNext = float16 if self.fp16_math else vk.ffi.NULL
        dev_info = vk.VkDeviceCreateInfo(queueCreateInfoCount=1, pQueueCreateInfos=queue_infos,
                                         enabledExtensionCount=len(extensions),
                                         ppEnabledExtensionNames=extensions or None,
                                         pNext=storage16 if self.limits.storage_buffer_16bit else None)
        self.device = vk.vkCreateDevice(self.physical, dev_info, None)
        self.fp16_storage = self.limits.storage_buffer_16bit
        self.fp16_math = self.fp16_math and self.fp16_storage
        del queue_info, queue_infos, priorities, dev_info, storage16, float16, extensions
        self.queue = vk.vkGetDeviceQueue(self.device, self.queue_family, 0)
        pool_info = vk.VkCommandPoolCreateInfo(queueFamilyIndex=self.queue_family,
                                               flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT)
        self.command_pool = vk.vkCreateCommandPool(self.device, pool_info, None)
        self.fence = vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(), None)
        self.pipelines = PipelineCache(self.device, COUNTERS)

    def memory_type(self, type_bits: int, flags: int) -> int:
        """Index of the first memory type allowed by `type_bits` that has all `flags`.

        Raises:
            BackendUnavailable: when no memory type fits.
        """
        for i, (props, _heap) in enumerate(self.memory_types):
            if type_bits & (1 << i) and props & flags == flags:
                return i
        raise BackendUnavailable(f"vulkan: no memory type with flags {flags:#x} in bits {type_bits:#x}")

    def group_size(self) -> int:
        """1-D work-group size: 256 (lavapipe likes few wide groups), capped by the device limits."""
        return max(1, min(256, self.limits.max_invocations, self.limits.max_group_size[0]))

    def group_count(self, items: int, local: int) -> int:
        """Work groups for `items` invocations with a grid-stride loop: never above maxComputeWorkGroupCount[0]."""
        return max(1, min(-(-items // local), self.limits.max_group_count[0], 65535))

    def submit(self, command_buffer: Any) -> None:
        """Submit one recorded command buffer and wait for it (one queue submit + fence wait)."""
        buffers = [command_buffer]
        info = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=buffers)
        vk.vkQueueSubmit(self.queue, 1, [info], self.fence)
        vk.vkWaitForFences(self.device, 1, [self.fence], vk.VK_TRUE, 0xFFFFFFFFFFFFFFFF)
        vk.vkResetFences(self.device, 1, [self.fence])
        COUNTERS["submits"] += 1

    def close(self) -> None:
        """Destroy everything (all buffers made on this device must be released first)."""
        if self.device is None:
            return
        vk.vkDeviceWaitIdle(self.device)
        self.pipelines.close()
        vk.vkDestroyFence(self.device, self.fence, None)
        vk.vkDestroyCommandPool(self.device, self.command_pool, None)
        vk.vkDestroyDevice(self.device, None)
        vk.vkDestroyInstance(self.instance, None)
        self.device = None


class VulkanRuntime(Runtime):
    """Per-device runtime (MNN: `VulkanRuntime`): owns the device and pipeline cache, creates backends."""

    name = "vulkan"
    _available: bool | None = None
    _reason: str = ""
    _shared: VulkanDevice | None = None

    def __init__(self) -> None:
        if VulkanRuntime._shared is None:
            try:
                VulkanRuntime._shared = VulkanDevice()
            except (vk.VkError, OSError) as exc:
                raise BackendUnavailable(f"{NO_DEVICE}: {type(exc).__name__} {exc}".rstrip()) from exc
        self.device = VulkanRuntime._shared

    @classmethod
    def is_available(cls) -> bool:
        """Whether a Vulkan device with a compute queue can be opened here (never raises)."""
        if cls._available is None:
            try:
                if cls._shared is None:
                    cls._shared = VulkanDevice()
                cls._available = True
            except Exception as exc:
                cls._available, cls._reason = False, f"{NO_DEVICE}: {type(exc).__name__} {exc}".rstrip()
        return bool(cls._available)

    @classmethod
    def unavailable_reason(cls) -> str:
        """Why `is_available()` is False ('' when it is True)."""
        cls.is_available()
        return cls._reason

    def create_backend(self, config: dict[str, Any] | None = None) -> Backend:
        """A VulkanBackend for one session (MNN: `VulkanRuntime::onCreate`)."""
        from mnnpy.backends.vulkan.backend import VulkanBackend

        registry.import_all("mnnpy.backends.vulkan.ops")
        return VulkanBackend(self, config)

    def gc(self, level: int = 0) -> None:
        """Nothing to collect yet: pipelines are cheap to keep and shared by sessions."""
