#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// Separable resampling (Interp: nearest, bilinear, cubic) on NC4HW4 tensors, one invocation per output texel.
// Per-axis tap tables are precomputed at resize time: rows [oh][th] then columns [ow][tw], as source indices
// (clamped) and weights.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TVEC4 x[]; };
layout(std430, binding = 1) readonly buffer Index { int idx[]; };      // oh*th row indices, then ow*tw columns
layout(std430, binding = 2) readonly buffer Weight { float wgt[]; };   // same layout
layout(std430, binding = 3) writeonly buffer Out { TVEC4 y[]; };
layout(push_constant) uniform Params {
    ivec4 in_size;   // W, H, planes (N * C4), total texels
    ivec4 out_size;  // W, H, taps y, taps x
} p;
#include "common.glsl"

void main() {
    int ow_n = p.out_size.x;
    int oh_n = p.out_size.y;
    int th = p.out_size.z;
    int tw = p.out_size.w;
    int col_base = oh_n * th;
    for (int i = int(gl_GlobalInvocationID.x); i < p.in_size.w; i += grid_stride()) {
        int ox = i % ow_n;
        int t = i / ow_n;
        int oy = t % oh_n;
        int plane = t / oh_n;
        vec4 acc = vec4(0.0);
        for (int a = 0; a < th; ++a) {
            int iy = idx[oy * th + a];
            float wy = wgt[oy * th + a];
            vec4 row = vec4(0.0);
            for (int b = 0; b < tw; ++b) {
                int k = col_base + ox * tw + b;
                row += wgt[k] * vec4(x[(plane * p.in_size.y + iy) * p.in_size.x + idx[k]]);
            }
            acc += wy * row;
        }
        y[i] = TVEC4(acc);
    }
}
