"""CPU op kernels, one op (family) per module, registered with `@cpu_kernel`; imported by pkgutil on first use."""
