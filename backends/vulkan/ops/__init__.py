"""Vulkan executions, one op per module, registered with `@vulkan_kernel` and discovered with pkgutil.

Coverage: Raster (regions + index gathers), BinaryOp (broadcast, fused ReLU), Eltwise, UnaryOp, ReLU, ReLU6,
PReLU, ELU, Selu, Sigmoid, TanH, Softmax, Reduction, ArgMax/ArgMin, LayerNorm/RMSNorm, Scale, Pooling (and global
Pooling3D), Interp, Convolution (direct, 1x1, depthwise, grouped), Deconvolution, MatMul/BatchMatMul, GatherV2,
Cast. An op or parameter set not covered makes `on_create` return None (the schedule runs it on the CPU).
"""
