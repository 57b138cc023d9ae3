#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// ArgMax / ArgMin over the middle dim of the logical shape (outer, axis, inner): int32 indices, first hit wins.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TFLOAT x[]; };
layout(std430, binding = 1) writeonly buffer Out { int y[]; };
layout(push_constant) uniform Params {
    ivec4 dims;  // outer, axis, inner, is_min
    ivec4 fmt;   // in C, in area, unused, unused
} p;
#include "common.glsl"

void main() {
    int axis = p.dims.y;
    int inner = p.dims.z;
    int pairs = p.dims.x * inner;
    for (int i = int(gl_GlobalInvocationID.x); i < pairs; i += grid_stride()) {
        int o = i / inner;
        int base = o * axis * inner + (i - o * inner);
        float best = float(x[phys_index(base, p.fmt.x, p.fmt.y)]);
        int arg = 0;
        for (int k = 1; k < axis; ++k) {
            float v = float(x[phys_index(base + k * inner, p.fmt.x, p.fmt.y)]);
            if (p.dims.w != 0 ? v < best : v > best) {
                best = v;
                arg = k;
            }
        }
        y[i] = arg;
    }
}
