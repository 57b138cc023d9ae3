"""Shape inference, one small module per op family; functions register with `@shape_fn` (MNN: source/shape)."""
