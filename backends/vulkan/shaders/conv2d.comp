#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// variants: fp16a
// General 2-D convolution on NC4HW4 tensors. One invocation computes 4 neighbouring output texels along x for
// 2 output channel blocks (n, oc4 and oc4 + 1, oh, ow..ow+3): every input load feeds 8 mat4 products.
// Weights are packed as [OC/4][IC/4][KH][KW][4] vec4s: entry k of a block holds the 4 output channels' weights
// for input channel 4*ic4 + k (OC/4 is padded to an even count). Bias is [OC/4] vec4 (padded the same way);
// the result is clamped to [act_min, act_max] (ReLU/ReLU6). `_fp16a`: products in float16, sums in fp32.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TVEC4 x[]; };
layout(std430, binding = 1) readonly buffer Weight { vec4 w[]; };
layout(std430, binding = 2) readonly buffer Bias { vec4 bias[]; };
layout(std430, binding = 3) writeonly buffer Out { TVEC4 y[]; };
layout(push_constant) uniform Params {
    ivec4 in_size;   // W, H, IC (real channels), IC4
    ivec4 out_size;  // W, H, OC4 (real blocks), work items (N * ceil(OC4 / 2) * OH * ceil(OW / 4))
    ivec4 kernel;    // KW, KH, stride x, stride y
    ivec4 pad_dil;   // pad x, pad y, dilation x, dilation y
    float act_min;
    float act_max;
} p;
#include "common.glsl"

AVEC4 tap(int row, int ix, bvec4 valid) {
    if (ix < 0 || ix >= p.in_size.x) {
        return AVEC4(0.0);
    }
    return mix(AVEC4(0.0), AVEC4(x[row + ix]), valid);
}

void store(int index, vec4 v) {
    y[index] = TVEC4(clamp(v, vec4(p.act_min), vec4(p.act_max)));
}

void main() {
    int ow4_n = (p.out_size.x + 3) / 4;
    int oh_n = p.out_size.y;
    int oc4_n = p.out_size.z;
    int oc8_n = (oc4_n + 1) / 2;
    int ic4_n = p.in_size.w;
    int kk = p.kernel.x * p.kernel.y;
    int sx = p.kernel.z;
    int block = ic4_n * kk * 4;  // vec4s of weights per output channel block
    for (int i = int(gl_GlobalInvocationID.x); i < p.out_size.w; i += grid_stride()) {
        int ow = (i % ow4_n) * 4;
        int t = i / ow4_n;
        int oh = t % oh_n;
        t /= oh_n;
        int oc4 = (t % oc8_n) * 2;
        int n = t / oc8_n;
        int ix0 = ow * sx - p.pad_dil.x;
        int iy0 = oh * p.kernel.w - p.pad_dil.y;
        vec4 a0 = bias[oc4];
        vec4 a1 = a0;
        vec4 a2 = a0;
        vec4 a3 = a0;
        vec4 b0 = bias[oc4 + 1];
        vec4 b1 = b0;
        vec4 b2 = b0;
        vec4 b3 = b0;
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
                    AMAT4 m = AMAT4(w[k], w[k + 1], w[k + 2], w[k + 3]);
                    AMAT4 m2 = AMAT4(w[k + block], w[k + block + 1], w[k + block + 2], w[k + block + 3]);
                    AVEC4 v0 = tap(row, ix, valid);
                    AVEC4 v1 = tap(row, ix + sx, valid);
                    AVEC4 v2 = tap(row, ix + 2 * sx, valid);
                    AVEC4 v3 = tap(row, ix + 3 * sx, valid);
                    a0 += ACC4(m * v0);
                    a1 += ACC4(m * v1);
                    a2 += ACC4(m * v2);
                    a3 += ACC4(m * v3);
                    b0 += ACC4(m2 * v0);
                    b1 += ACC4(m2 * v1);
                    b2 += ACC4(m2 * v2);
                    b3 += ACC4(m2 * v3);
                }
            }
        }
        int out_w = p.out_size.x;
        int ra = ((n * oc4_n + oc4) * oh_n + oh) * out_w + ow;
        store(ra, a0);
        if (ow + 1 < out_w) store(ra + 1, a1);
        if (ow + 2 < out_w) store(ra + 2, a2);
        if (ow + 3 < out_w) store(ra + 3, a3);
        if (oc4 + 1 < oc4_n) {
            int rb = ra + oh_n * out_w;
            store(rb, b0);
            if (ow + 1 < out_w) store(rb + 1, b1);
            if (ow + 2 < out_w) store(rb + 2, b2);
            if (ow + 3 < out_w) store(rb + 3, b3);
        }
    }
}
