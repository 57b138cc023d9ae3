"""Backends (installed as `mnnpy.backends`): cpu/, opencl/, vulkan/, found through the core registry."""
