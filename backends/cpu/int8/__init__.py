"""Int8 arithmetic of the CPU backend, in QNNPACK's scheme: ``real = scale * (q - zero_point)``.

Operands are widened once per run, products are accumulated exactly (int32 range), and the accumulator is
requantised to int8 with a fixed-point multiplier inside the kernel, so no float tensor sits between int8 ops.
"""
