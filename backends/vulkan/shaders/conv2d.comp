#version 450
#extension GL_GOOGLE_include_directive : require
// General 2-D convolution on NC4HW4 tensors: one invocation per output texel (n, oc/4, oh, ow).
// Weights are packed as [OC/4][IC/4][KH][KW][4] vec4s: entry k of a block holds the 4 output channels' weights
// for input channel 4*ic4 + k. Bias is [OC/4] vec4; the result is clamped to [act_min, act_max] (ReLU/ReLU6).
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { vec4 x[]; };
layout(std430, binding = 1) readonly buffer Weight { vec4 w[]; };
layout(std430, binding = 2) readonly buffer Bias { vec4 bias[]; };
layout(std430, binding = 3) writeonly buffer Out { vec4 y[]; };
layout(push_constant) uniform Params {
    ivec4 in_size;   // W, H, IC (real channels), IC4
    ivec4 out_size;  // W, H, OC4, total texels
    ivec4 kernel;    // KW, KH, stride x, stride y
    ivec4 pad_dil;   // pad x, pad y, dilation x, dilation y
    float act_min;
    float act_max;
} p;
#include "common.glsl"

void main() {
    int ow_n = p.out_size.x;
    int oh_n = p.out_size.y;
    int oc4_n = p.out_size.z;
    int ic4_n = p.in_size.w;
    int kk = p.kernel.x * p.kernel.y;
    for (int i = int(gl_GlobalInvocationID.x); i < p.out_size.w; i += grid_stride()) {
        int ow = i % ow_n;
        int t = i / ow_n;
        int oh = t % oh_n;
        t /= oh_n;
        int oc4 = t % oc4_n;
        int n = t / oc4_n;
        int ix0 = ow * p.kernel.z - p.pad_dil.x;
        int iy0 = oh * p.kernel.w - p.pad_dil.y;
        vec4 acc = bias[oc4];
        for (int ic4 = 0; ic4 < ic4_n; ++ic4) {
            bvec4 valid = lessThan(ivec4(ic4 * 4) + ivec4(0, 1, 2, 3), ivec4(p.in_size.z));
            int plane = (n * ic4_n + ic4) * p.in_size.y;
            int wbase = ((oc4 * ic4_n + ic4) * kk) * 4;
            for (int ky = 0; ky < p.kernel.y; ++ky) {
                int iy = iy0 + ky * p.pad_dil.w;
                if (iy < 0 || iy >= p.in_size.y) {
                    continue;
                }
                for (int kx = 0; kx < p.kernel.x; ++kx) {
                    int ix = ix0 + kx * p.pad_dil.z;
                    if (ix < 0 || ix >= p.in_size.x) {
                        continue;
                    }
                    vec4 v = mix(vec4(0.0), x[(plane + iy) * p.in_size.x + ix], valid);
                    int k = wbase + (ky * p.kernel.x + kx) * 4;
                    acc += w[k] * v.x + w[k + 1] * v.y + w[k + 2] * v.z + w[k + 3] * v.w;
                }
            }
        }
        y[i] = clamp(acc, vec4(p.act_min), vec4(p.act_max));
    }
}
