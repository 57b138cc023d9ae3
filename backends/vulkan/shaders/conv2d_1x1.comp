#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// variants: fp16a
// 1x1 stride-1 unpadded convolution on NC4HW4 tensors (a GEMM over channels). Pixels are numbered over batch and
// plane together (p = n * area + s), and one invocation computes 4 consecutive pixels of one output channel block,
// so small planes (area 1: fully connected layers, token batches) still fill every lane.
// Same weight packing as conv2d.comp with KH = KW = 1.
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
    int total;    // work items: OC4 * ceil(N * area / 4)
    int pixels;   // N * area
    float act_min;
    float act_max;
} p;
#include "common.glsl"

int in_base(int px) {
    int n = px / p.area;
    return n * p.ic4 * p.area + (px - n * p.area);
}

int out_base(int px, int oc4) {
    int n = px / p.area;
    return (n * p.oc4 + oc4) * p.area + (px - n * p.area);
}

void main() {
    int groups4 = (p.pixels + 3) / 4;
    for (int i = int(gl_GlobalInvocationID.x); i < p.total; i += grid_stride()) {
        int px = (i % groups4) * 4;
        int oc4 = i / groups4;
        int last = p.pixels - 1;
        int b0 = in_base(px);
        int b1 = in_base(min(px + 1, last));
        int b2 = in_base(min(px + 2, last));
        int b3 = in_base(min(px + 3, last));
        vec4 acc0 = bias[oc4];
        vec4 acc1 = acc0;
        vec4 acc2 = acc0;
        vec4 acc3 = acc0;
        int k = oc4 * p.ic4 * 4;
        int step = 0;
        for (int c4 = 0; c4 < p.ic4; ++c4) {
            bvec4 valid = lessThan(ivec4(c4 * 4) + ivec4(0, 1, 2, 3), ivec4(p.ic));
            AMAT4 m = AMAT4(w[k], w[k + 1], w[k + 2], w[k + 3]);
            acc0 += ACC4(m * mix(AVEC4(0.0), AVEC4(x[b0 + step]), valid));
            acc1 += ACC4(m * mix(AVEC4(0.0), AVEC4(x[b1 + step]), valid));
            acc2 += ACC4(m * mix(AVEC4(0.0), AVEC4(x[b2 + step]), valid));
            acc3 += ACC4(m * mix(AVEC4(0.0), AVEC4(x[b3 + step]), valid));
            step += p.area;
            k += 4;
        }
        vec4 lo = vec4(p.act_min);
        vec4 hi = vec4(p.act_max);
        y[out_base(px, oc4)] = TVEC4(clamp(acc0, lo, hi));
        if (px + 1 <= last) y[out_base(px + 1, oc4)] = TVEC4(clamp(acc1, lo, hi));
        if (px + 2 <= last) y[out_base(px + 2, oc4)] = TVEC4(clamp(acc2, lo, hi));
        if (px + 3 <= last) y[out_base(px + 3, oc4)] = TVEC4(clamp(acc3, lo, hi));
    }
}
