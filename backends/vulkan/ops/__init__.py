"""Vulkan executions, one op per module, registered with `@vulkan_kernel` and discovered with pkgutil."""
