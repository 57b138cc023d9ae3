#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// Index copy for Raster gathers: dst[dst_idx[i]] = src[src_idx[i]] in the logical index space of both tensors.
// The index buffer holds (src_idx, dst_idx) pairs.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Src { TFLOAT src[]; };
layout(std430, binding = 1) readonly buffer Index { ivec2 idx[]; };
layout(std430, binding = 2) buffer Dst { TFLOAT dst[]; };
layout(push_constant) uniform Params {
    int count;
    int src_c;     // src C (0 = plain), src area
    int src_area;
    int dst_c;
    int dst_area;
} p;
#include "common.glsl"

void main() {
    for (int i = int(gl_GlobalInvocationID.x); i < p.count; i += grid_stride()) {
        ivec2 k = idx[i];
        dst[phys_index(k.y, p.dst_c, p.dst_area)] = src[phys_index(k.x, p.src_c, p.src_area)];
    }
}
