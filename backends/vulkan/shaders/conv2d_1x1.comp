#version 450
#extension GL_GOOGLE_include_directive : require
// 1x1 stride-1 unpadded convolution on NC4HW4 tensors (a GEMM over channels): one invocation per output texel.
// Same weight packing as conv2d.comp with KH = KW = 1.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { vec4 x[]; };
layout(std430, binding = 1) readonly buffer Weight { vec4 w[]; };
layout(std430, binding = 2) readonly buffer Bias { vec4 bias[]; };
layout(std430, binding = 3) writeonly buffer Out { vec4 y[]; };
layout(push_constant) uniform Params {
    int area;     // H * W
    int ic;       // real input channels
    int ic4;
    int oc4;
    int total;    // N * OC4 * area
    float act_min;
    float act_max;
} p;
#include "common.glsl"

void main() {
    for (int i = int(gl_GlobalInvocationID.x); i < p.total; i += grid_stride()) {
        int s = i % p.area;
        int t = i / p.area;
        int oc4 = t % p.oc4;
        int n = t / p.oc4;
        vec4 acc = bias[oc4];
        int xi = n * p.ic4 * p.area + s;
        int k = oc4 * p.ic4 * 4;
        for (int c4 = 0; c4 < p.ic4; ++c4) {
            bvec4 valid = lessThan(ivec4(c4 * 4) + ivec4(0, 1, 2, 3), ivec4(p.ic));
            vec4 v = mix(vec4(0.0), x[xi], valid);
            acc += w[k] * v.x + w[k + 1] * v.y + w[k + 2] * v.z + w[k + 3] * v.w;
            xi += p.area;
            k += 4;
        }
        y[i] = clamp(acc, vec4(p.act_min), vec4(p.act_max));
    }
}
