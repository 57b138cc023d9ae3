#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// One Raster region: dst[dst.offset + z*ds0 + y*ds1 + x*ds2] = src[src.offset + z*ss0 + y*ss1 + x*ss2],
// offsets and strides in the logical index space of both tensors (either may be NC4HW4).
// One invocation copies a run of up to CHUNK elements of one (z, y) row, so the index divisions (slow on CPU
// drivers) happen once per run, not per element, for plain layouts.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Src { TFLOAT src[]; };
layout(std430, binding = 1) buffer Dst { TFLOAT dst[]; };
layout(push_constant) uniform Params {
    ivec4 src_view;  // offset, stride0, stride1, stride2
    ivec4 dst_view;
    ivec4 size;      // size0, size1, size2, work items (size0 * size1 * ceil(size2 / CHUNK))
    ivec4 fmt;       // src C, src area, dst C, dst area
} p;
#include "common.glsl"

const int CHUNK = 16;

void main() {
    int runs = (p.size.z + CHUNK - 1) / CHUNK;
    for (int i = int(gl_GlobalInvocationID.x); i < p.size.w; i += grid_stride()) {
        int row = i / runs;
        int x0 = (i - row * runs) * CHUNK;
        int z = row / p.size.y;
        int y = row - z * p.size.y;
        int s = p.src_view.x + z * p.src_view.y + y * p.src_view.z + x0 * p.src_view.w;
        int d = p.dst_view.x + z * p.dst_view.y + y * p.dst_view.z + x0 * p.dst_view.w;
        int x1 = min(x0 + CHUNK, p.size.z);
        for (int x = x0; x < x1; ++x) {
            dst[phys_index(d, p.fmt.z, p.fmt.w)] = src[phys_index(s, p.fmt.x, p.fmt.y)];
            s += p.src_view.w;
            d += p.dst_view.w;
        }
    }
}
