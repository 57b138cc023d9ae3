#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// Reduction over the middle dim of the logical shape (outer, axis, inner); one invocation per (outer, inner).
// Ops (MNN ReductionType): 0 SUM, 1 ASUM, 2 SUMSQ, 3 MEAN, 4 MAXIMUM, 5 MINIMUM, 6 PROD.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TFLOAT x[]; };
layout(std430, binding = 1) writeonly buffer Out { TFLOAT y[]; };
layout(push_constant) uniform Params {
    ivec4 dims;  // outer, axis, inner, op
    ivec4 fmt;   // in C, in area, out C, out area
} p;
#include "common.glsl"

void main() {
    int axis = p.dims.y;
    int inner = p.dims.z;
    int op = p.dims.w;
    int pairs = p.dims.x * inner;
    for (int i = int(gl_GlobalInvocationID.x); i < pairs; i += grid_stride()) {
        int o = i / inner;
        int base = o * axis * inner + (i - o * inner);
        float acc = op == 4 ? -3.402823e38 : (op == 5 ? 3.402823e38 : (op == 6 ? 1.0 : 0.0));
        for (int k = 0; k < axis; ++k) {
            float v = float(x[phys_index(base + k * inner, p.fmt.x, p.fmt.y)]);
            if (op == 1) v = abs(v);
            if (op == 2) v = v * v;
            if (op == 4) acc = max(acc, v);
            else if (op == 5) acc = min(acc, v);
            else if (op == 6) acc *= v;
            else acc += v;
        }
        if (op == 3) acc /= float(axis);
        y[phys_index(i, p.fmt.z, p.fmt.w)] = TFLOAT(acc);
    }
}
