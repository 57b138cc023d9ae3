"""OpenCL executions, one op per module, registered with `@opencl_kernel` and discovered by pkgutil."""
