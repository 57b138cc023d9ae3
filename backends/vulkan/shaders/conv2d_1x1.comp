#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// 1x1 stride-1 unpadded convolution on NC4HW4 tensors (a GEMM over channels). One invocation computes 4
// neighbouring texels of one output plane. Same weight packing as conv2d.comp with KH = KW = 1.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TVEC4 x[]; };
layout(std430, binding = 1) readonly buffer Weight { vec4 w[]; };
layout(std430, binding = 2) readonly buffer Bias { vec4 bias[]; };
layout(std430, binding = 3) writeonly buffer Out { TVEC4 y[]; };
layout(push_constant) uniform Params {
    int area;     // H * W
    int ic;       // real input channels
    int ic4;
    int oc4;
    int total;    // work items: N * OC4 * ceil(area / 4)
    float act_min;
    float act_max;
} p;
#include "common.glsl"

void main() {
    int area4 = (p.area + 3) / 4;
    for (int i = int(gl_GlobalInvocationID.x); i < p.total; i += grid_stride()) {
        int s = (i % area4) * 4;
        int t = i / area4;
        int oc4 = t % p.oc4;
        int n = t / p.oc4;
        int n1 = min(s + 1, p.area - 1) - s;  // clamp reads of the tail to the last texel
        int n2 = min(s + 2, p.area - 1) - s;
        int n3 = min(s + 3, p.area - 1) - s;
        vec4 acc0 = bias[oc4];
        vec4 acc1 = acc0;
        vec4 acc2 = acc0;
        vec4 acc3 = acc0;
        int xi = n * p.ic4 * p.area + s;
        int k = oc4 * p.ic4 * 4;
        for (int c4 = 0; c4 < p.ic4; ++c4) {
            bvec4 valid = lessThan(ivec4(c4 * 4) + ivec4(0, 1, 2, 3), ivec4(p.ic));
            mat4 m = mat4(w[k], w[k + 1], w[k + 2], w[k + 3]);
            acc0 += m * mix(vec4(0.0), vec4(x[xi]), valid);
            acc1 += m * mix(vec4(0.0), vec4(x[xi + n1]), valid);
            acc2 += m * mix(vec4(0.0), vec4(x[xi + n2]), valid);
            acc3 += m * mix(vec4(0.0), vec4(x[xi + n3]), valid);
            xi += p.area;
            k += 4;
        }
        int o = (n * p.oc4 + oc4) * p.area + s;
        y[o] = TVEC4(clamp(acc0, vec4(p.act_min), vec4(p.act_max)));
        if (s + 1 < p.area) y[o + 1] = TVEC4(clamp(acc1, vec4(p.act_min), vec4(p.act_max)));
        if (s + 2 < p.area) y[o + 2] = TVEC4(clamp(acc2, vec4(p.act_min), vec4(p.act_max)));
        if (s + 3 < p.area) y[o + 3] = TVEC4(clamp(acc3, vec4(p.act_min), vec4(p.act_max)));
    }
}
