#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// Depthwise 2-D convolution on NC4HW4 tensors: weights [C/4][KH][KW] vec4, bias [C/4] vec4.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TVEC4 x[]; };
layout(std430, binding = 1) readonly buffer Weight { vec4 w[]; };
layout(std430, binding = 2) readonly buffer Bias { vec4 bias[]; };
layout(std430, binding = 3) writeonly buffer Out { TVEC4 y[]; };
layout(push_constant) uniform Params {
    ivec4 in_size;   // W, H, C (real channels), C4
    ivec4 out_size;  // W, H, unused, total texels
    ivec4 kernel;    // KW, KH, stride x, stride y
    ivec4 pad_dil;   // pad x, pad y, dilation x, dilation y
    float act_min;
    float act_max;
} p;
#include "common.glsl"

void main() {
    int ow_n = p.out_size.x;
    int oh_n = p.out_size.y;
    int c4_n = p.in_size.w;
    for (int i = int(gl_GlobalInvocationID.x); i < p.out_size.w; i += grid_stride()) {
        int ow = i % ow_n;
        int t = i / ow_n;
        int oh = t % oh_n;
        t /= oh_n;
        int c4 = t % c4_n;
        int n = t / c4_n;
        int plane = (n * c4_n + c4) * p.in_size.y;
        int ix0 = ow * p.kernel.z - p.pad_dil.x;
        int iy0 = oh * p.kernel.w - p.pad_dil.y;
        bvec4 valid = lessThan(ivec4(c4 * 4) + ivec4(0, 1, 2, 3), ivec4(p.in_size.z));
        vec4 acc = bias[c4];
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
                vec4 v = mix(vec4(0.0), vec4(x[(plane + iy) * p.in_size.x + ix]), valid);
                acc += w[(c4 * p.kernel.y + ky) * p.kernel.x + kx] * v;
            }
        }
        y[i] = TVEC4(clamp(acc, vec4(p.act_min), vec4(p.act_max)));
    }
}
