"""CPU compute kernels: NC4HW4 packing, GEMM/Strassen, Winograd, im2col, depthwise and deconvolution."""
