"""Int8 arithmetic of the CPU backend, in QNNPACK's scheme: ``real = scale * (q - zero_point)``.

Operands are widened once per run, products are accumulated exactly (int32 range), and the accumulator is
requantised to int8 inside the kernel in MNN's float32 steps (``requant``), so no float tensor sits between int8
ops and the codes equal official MNN's.
"""
