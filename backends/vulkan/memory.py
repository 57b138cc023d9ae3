"""Device buffers: one VkBuffer + VkDeviceMemory each, persistently mapped (MNN: `VulkanBuffer`, `VulkanMemoryPool`).

Memory is HOST_VISIBLE | HOST_COHERENT (lavapipe has only that kind; discrete GPUs would want DEVICE_LOCAL plus a
staging copy — not done yet). Tensor arrays are zero-copy numpy views of the mapping. Lifetime rule of the binding:
a numpy view of mapped memory must be gone before the memory is unmapped or freed, or the process segfaults. Here
every view holds a reference to its DeviceBuffer (through its ctypes base object), so the memory is freed only when
the last view and the buffer itself are gone.
"""

from __future__ import annotations

import ctypes
import math
import sys
from typing import Any

import numpy as np
import vulkan as vk

USAGE = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
         | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
HOST_FLAGS = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT


class DeviceBuffer:
    """A mapped storage buffer of `size` bytes.

    Attributes:
        size: bytes (at least 16).
        handle: the VkBuffer.
        uid: a small integer identity used by the hazard tracker.
    """

    _next_uid = 0
    live = 0  # buffers not yet released (leak checks)

    def __init__(self, vdev: Any, size: int, counters: dict[str, int]) -> None:
        self.size = max(16, (int(size) + 15) // 16 * 16)
        self._device = vdev.device
        info = vk.VkBufferCreateInfo(size=self.size, usage=USAGE, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
        self.handle = vk.vkCreateBuffer(self._device, info, None)
        req = vk.vkGetBufferMemoryRequirements(self._device, self.handle)
        req_size, req_bits = int(req.size), int(req.memoryTypeBits)
        alloc = vk.VkMemoryAllocateInfo(allocationSize=req_size,
                                        memoryTypeIndex=vdev.memory_type(req_bits, HOST_FLAGS))
        self.memory = vk.vkAllocateMemory(self._device, alloc, None)
        vk.vkBindBufferMemory(self._device, self.handle, self.memory, 0)
        mapped = vk.vkMapMemory(self._device, self.memory, 0, self.size, 0)
        self._address = int(vk.ffi.cast("uintptr_t", vk.ffi.from_buffer(mapped)))
        del mapped
        DeviceBuffer._next_uid += 1
        self.uid = DeviceBuffer._next_uid
        DeviceBuffer.live += 1
        counters["allocations"] += 1

    def array(self, offset: int, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
        """A zero-copy numpy view of `shape` elements at byte `offset`; the view keeps this buffer alive."""
        dt = np.dtype(dtype)
        nbytes = math.prod(shape) * dt.itemsize
        if offset < 0 or offset + nbytes > self.size:
            raise ValueError(f"view [{offset}, {offset + nbytes}) outside buffer of {self.size} bytes")
        raw = (ctypes.c_char * max(nbytes, 1)).from_address(self._address + offset)
        raw.mnnpy_owner = self  # numpy keeps `raw` alive, `raw` keeps the mapping alive
        return np.frombuffer(raw, dtype=np.uint8, count=nbytes).view(dt).reshape(shape)

    def release(self) -> None:
        """Unmap and free now (only when no numpy view is alive; normally left to garbage collection)."""
        if self.handle is None or sys.is_finalizing():
            return
        vk.vkUnmapMemory(self._device, self.memory)
        vk.vkDestroyBuffer(self._device, self.handle, None)
        vk.vkFreeMemory(self._device, self.memory, None)
        self.handle = None
        DeviceBuffer.live -= 1

    def __del__(self) -> None:
        self.release()

