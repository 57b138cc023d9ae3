#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// Transposed 2-D convolution on NC4HW4 tensors as a gather: output texel (n, oc/4, oy, ox) sums the input pixels
// iy = (oy + pad_y - ky*dil_y) / stride_y (when divisible and in range), same for x. Weight packing as conv2d.comp.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TVEC4 x[]; };
layout(std430, binding = 1) readonly buffer Weight { vec4 w[]; };
layout(std430, binding = 2) readonly buffer Bias { vec4 bias[]; };
layout(std430, binding = 3) writeonly buffer Out { TVEC4 y[]; };
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
        int ox = i % ow_n;
        int t = i / ow_n;
        int oy = t % oh_n;
        t /= oh_n;
        int oc4 = t % oc4_n;
        int n = t / oc4_n;
        vec4 acc = bias[oc4];
        for (int ky = 0; ky < p.kernel.y; ++ky) {
            int ty = oy + p.pad_dil.y - ky * p.pad_dil.w;
            if (ty < 0 || ty % p.kernel.w != 0 || ty / p.kernel.w >= p.in_size.y) {
                continue;
            }
            int iy = ty / p.kernel.w;
            for (int kx = 0; kx < p.kernel.x; ++kx) {
                int tx = ox + p.pad_dil.x - kx * p.pad_dil.z;
                if (tx < 0 || tx % p.kernel.z != 0 || tx / p.kernel.z >= p.in_size.x) {
                    continue;
                }
                int ix = tx / p.kernel.z;
                for (int ic4 = 0; ic4 < ic4_n; ++ic4) {
                    bvec4 valid = lessThan(ivec4(ic4 * 4) + ivec4(0, 1, 2, 3), ivec4(p.in_size.z));
                    vec4 v = mix(vec4(0.0), vec4(x[((n * ic4_n + ic4) * p.in_size.y + iy) * p.in_size.x + ix]), valid);
                    int k = (((oc4 * ic4_n + ic4) * kk) + ky * p.kernel.x + kx) * 4;
                    acc += w[k] * v.x + w[k + 1] * v.y + w[k + 2] * v.z + w[k + 3] * v.w;
                }
            }
        }
        y[i] = TVEC4(clamp(acc, vec4(p.act_min), vec4(p.act_max)));
    }
}
