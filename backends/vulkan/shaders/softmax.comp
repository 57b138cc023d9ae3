#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// variants: fp16a
// Softmax along one axis of the logical shape (outer, axis, inner); one invocation per (outer, inner) pair.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TFLOAT x[]; };
layout(std430, binding = 1) writeonly buffer Out { TFLOAT y[]; };
layout(push_constant) uniform Params {
    ivec4 dims;  // outer, axis, inner, outer * inner
    ivec4 fmt;   // in C, in area, out C, out area
} p;
#include "common.glsl"

void main() {
    int axis = p.dims.y;
    int inner = p.dims.z;
    for (int i = int(gl_GlobalInvocationID.x); i < p.dims.w; i += grid_stride()) {
        int o = i / inner;
        int base = o * axis * inner + (i - o * inner);
        AFLOAT m = AFLOAT(x[phys_index(base, p.fmt.x, p.fmt.y)]);
        for (int k = 1; k < axis; ++k) {
            m = max(m, AFLOAT(x[phys_index(base + k * inner, p.fmt.x, p.fmt.y)]));
        }
        float s = 0.0;
        for (int k = 0; k < axis; ++k) {
            s += float(exp(AFLOAT(x[phys_index(base + k * inner, p.fmt.x, p.fmt.y)]) - m));
        }
        float inv = 1.0 / s;
        for (int k = 0; k < axis; ++k) {
            int j = base + k * inner;
            y[phys_index(j, p.fmt.z, p.fmt.w)] = TFLOAT(float(exp(AFLOAT(x[phys_index(j, p.fmt.x, p.fmt.y)]) - m)) * inv);
        }
    }
}
