#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// variants: fp16a
// Depthwise 2-D convolution on NC4HW4 tensors: weights [C/4][KH][KW] vec4, bias [C/4] vec4.
// One invocation computes 4 neighbouring output texels along x of one channel block.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TVEC4 x[]; };
layout(std430, binding = 1) readonly buffer Weight { vec4 w[]; };
layout(std430, binding = 2) readonly buffer Bias { vec4 bias[]; };
layout(std430, binding = 3) writeonly buffer Out { TVEC4 y[]; };
layout(push_constant) uniform Params {
    ivec4 in_size;   // W, H, C (real channels), C4
    ivec4 out_size;  // W, H, unused, work items (N * C4 * OH * ceil(OW / 4))
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
    int c4_n = p.in_size.w;
    int sx = p.kernel.z;
    for (int i = int(gl_GlobalInvocationID.x); i < p.out_size.w; i += grid_stride()) {
        int ow = (i % ow4_n) * 4;
        int t = i / ow4_n;
        int oh = t % oh_n;
        t /= oh_n;
        int c4 = t % c4_n;
        int n = t / c4_n;
        int plane = (n * c4_n + c4) * p.in_size.y;
        int ix0 = ow * sx - p.pad_dil.x;
        int iy0 = oh * p.kernel.w - p.pad_dil.y;
        bvec4 valid = lessThan(ivec4(c4 * 4) + ivec4(0, 1, 2, 3), ivec4(p.in_size.z));
        vec4 a0 = bias[c4];
        vec4 a1 = a0;
        vec4 a2 = a0;
        vec4 a3 = a0;
        for (int ky = 0; ky < p.kernel.y; ++ky) {
            int iy = iy0 + ky * p.pad_dil.w;
            if (iy < 0 || iy >= p.in_size.y) {
                continue;
            }
            int row = (plane + iy) * p.in_size.x;
            for (int kx = 0; kx < p.kernel.x; ++kx) {
                int ix = ix0 + kx * p.pad_dil.z;
                AVEC4 wk = AVEC4(w[(c4 * p.kernel.y + ky) * p.kernel.x + kx]);
                a0 += ACC4(wk * tap(row, ix, valid));
                a1 += ACC4(wk * tap(row, ix + sx, valid));
                a2 += ACC4(wk * tap(row, ix + 2 * sx, valid));
                a3 += ACC4(wk * tap(row, ix + 3 * sx, valid));
            }
        }
        int out_w = p.out_size.x;
        int o = ((n * c4_n + c4) * oh_n + oh) * out_w + ow;
        store(o, a0);
        if (ow + 1 < out_w) store(o + 1, a1);
        if (ow + 2 < out_w) store(o + 2, a2);
        if (ow + 3 < out_w) store(o + 3, a3);
    }
}
