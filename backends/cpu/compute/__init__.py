"""CPU compute kernels (numpy, float32, NC4HW4 in and out).

* ``nc4hw4``: ``pack_nc4hw4`` / ``unpack_nc4hw4``.
* ``conv``: ``make_conv2d_kernel`` (entry point), ``conv2d_params``, ``conv2d_output_shape``, ``COUNTERS``.
* ``gemm`` (BLAS and Strassen GEMM, 1x1 kernel), ``winograd`` (exact F(m, r) matrices, weight transform),
  ``winograd_conv`` (blocked Winograd kernel), ``im2col``, ``depthwise``, ``deconv``, ``quant`` (IDSTQuan weights).
* ``blas``: the BLAS thread pool (threadpoolctl or OpenBLAS by ctypes) and ``run_lanes``, how kernels spread
  independent blocks over ``numThread`` threads.
* The algorithm choice is ``mnnpy.core.strategy.plan_conv2d`` (MNN's cost model, plus measured weight-traffic and
  Strassen terms for numpy).
"""
