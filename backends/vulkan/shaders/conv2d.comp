#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// General 2-D convolution on NC4HW4 tensors. One invocation computes 4 neighbouring output texels along x
// (n, oc/4, oh, ow..ow+3), so every weight load feeds 4 outputs.
// Weights are packed as [OC/4][IC/4][KH][KW][4] vec4s: entry k of a block holds the 4 output channels' weights
// for input channel 4*ic4 + k. Bias is [OC/4] vec4; the result is clamped to [act_min, act_max] (ReLU/ReLU6).
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TVEC4 x[]; };
layout(std430, binding = 1) readonly buffer Weight { vec4 w[]; };
layout(std430, binding = 2) readonly buffer Bias { vec4 bias[]; };
layout(std430, binding = 3) writeonly buffer Out { TVEC4 y[]; };
layout(push_constant) uniform Params {
    ivec4 in_size;   // W, H, IC (real channels), IC4
    ivec4 out_size;  // W, H, OC4, work items (N * OC4 * OH * ceil(OW / 4))
    ivec4 kernel;    // KW, KH, stride x, stride y
    ivec4 pad_dil;   // pad x, pad y, dilation x, dilation y
    float act_min;
    float act_max;
} p;
#include "common.glsl"

vec4 tap(int row, int ix, bvec4 valid) {
    if (ix < 0 || ix >= p.in_size.x) {
        return vec4(0.0);
    }
    return mix(vec4(0.0), vec4(x[row + ix]), valid);
}

void main() {
    int ow4_n = (p.out_size.x + 3) / 4;
    int oh_n = p.out_size.y;
    int oc4_n = p.out_size.z;
    int ic4_n = p.in_size.w;
    int kk = p.kernel.x * p.kernel.y;
    int sx = p.kernel.z;
    for (int i = int(gl_GlobalInvocationID.x); i < p.out_size.w; i += grid_stride()) {
        int ow = (i % ow4_n) * 4;
        int t = i / ow4_n;
        int oh = t % oh_n;
        t /= oh_n;
        int oc4 = t % oc4_n;
        int n = t / oc4_n;
        int ix0 = ow * sx - p.pad_dil.x;
        int iy0 = oh * p.kernel.w - p.pad_dil.y;
        vec4 acc0 = bias[oc4];
        vec4 acc1 = acc0;
        vec4 acc2 = acc0;
        vec4 acc3 = acc0;
        for (int ic4 = 0; ic4 < ic4_n; ++ic4) {
            bvec4 valid = lessThan(ivec4(ic4 * 4) + ivec4(0, 1, 2, 3), ivec4(p.in_size.z));
            int plane = (n * ic4_n + ic4) * p.in_size.y;
            int wbase = ((oc4 * ic4_n + ic4) * kk) * 4;
            for (int ky = 0; ky < p.kernel.y; ++ky) {
                int iy = iy0 + ky * p.pad_dil.w;
                if (iy < 0 || iy >= p.in_size.y) {
                    continue;
                }
                int row = (plane + iy) * p.in_size.x;
                for (int kx = 0; kx < p.kernel.x; ++kx) {
                    int ix = ix0 + kx * p.pad_dil.z;
                    int k = wbase + (ky * p.kernel.x + kx) * 4;
                    mat4 m = mat4(w[k], w[k + 1], w[k + 2], w[k + 3]);
                    acc0 += m * tap(row, ix, valid);
                    acc1 += m * tap(row, ix + sx, valid);
                    acc2 += m * tap(row, ix + 2 * sx, valid);
                    acc3 += m * tap(row, ix + 3 * sx, valid);
                }
            }
        }
        int out_row = ((n * oc4_n + oc4) * oh_n + oh) * p.out_size.x;
        y[out_row + ow] = TVEC4(clamp(acc0, vec4(p.act_min), vec4(p.act_max)));
        if (ow + 1 < p.out_size.x) y[out_row + ow + 1] = TVEC4(clamp(acc1, vec4(p.act_min), vec4(p.act_max)));
        if (ow + 2 < p.out_size.x) y[out_row + ow + 2] = TVEC4(clamp(acc2, vec4(p.act_min), vec4(p.act_max)));
        if (ow + 3 < p.out_size.x) y[out_row + ow + 3] = TVEC4(clamp(acc3, vec4(p.act_min), vec4(p.act_max)));
    }
}
