#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// GatherV2 with runtime int32 indices: out[o][j][r] = data[o][idx[j]][r] over the logical shape
// (outer, dim, inner) of the data; negative indices wrap once, out-of-range ones are clamped.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Data { TFLOAT data[]; };
layout(std430, binding = 1) readonly buffer Index { int idx[]; };
layout(std430, binding = 2) writeonly buffer Out { TFLOAT o[]; };
layout(push_constant) uniform Params {
    ivec4 dims;  // dim, inner, index count, total
    ivec4 fmt;   // data C, data area, out C, out area
} p;
#include "common.glsl"

void main() {
    int dim = p.dims.x;
    int inner = p.dims.y;
    int count = p.dims.z;
    for (int i = int(gl_GlobalInvocationID.x); i < p.dims.w; i += grid_stride()) {
        int r = i % inner;
        int t = i / inner;
        int j = t % count;
        int outer = t / count;
        int k = idx[j];
        k = clamp(k < 0 ? k + dim : k, 0, dim - 1);
        o[phys_index(i, p.fmt.z, p.fmt.w)] = data[phys_index((outer * dim + k) * inner + r, p.fmt.x, p.fmt.y)];
    }
}
