#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// variants: fp16a
// GroupNorm: x [N, C, area] (plain when c_phys == 0, else NC4HW4), one invocation per (batch, group): mean and
// variance over the group's channels and area, then gamma/beta per channel and optional swish.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TFLOAT x[]; };
layout(std430, binding = 1) readonly buffer Gamma { float gamma[]; };
layout(std430, binding = 2) readonly buffer Beta { float beta[]; };
layout(std430, binding = 3) writeonly buffer Out { TFLOAT y[]; };
layout(push_constant) uniform Params {
    int batch;
    int channels;
    int groups;
    int area;
    int c_phys;
    int swish;
    float eps;
} p;
#include "common.glsl"

void main() {
    int total = p.batch * p.groups;
    int cg = p.channels / p.groups;
    int count = cg * p.area;
    for (int r = int(gl_GlobalInvocationID.x); r < total; r += grid_stride()) {
        int g = r % p.groups;
        int n = r / p.groups;
        int base = (n * p.channels + g * cg) * p.area;
        float mean = 0.0;
        for (int e = 0; e < count; ++e) {
            mean += float(x[phys_index(base + e, p.c_phys, p.area)]);
        }
        mean /= float(count);
        float var = 0.0;
        for (int e = 0; e < count; ++e) {
            float t = float(x[phys_index(base + e, p.c_phys, p.area)]) - mean;
            var += t * t;
        }
        AFLOAT inv = AFLOAT(inversesqrt(var / float(count) + p.eps));
        AFLOAT mean_a = AFLOAT(mean);
        for (int e = 0; e < count; ++e) {
            int c = g * cg + e / p.area;
            int at = phys_index(base + e, p.c_phys, p.area);
            AFLOAT t = (AFLOAT(x[at]) - mean_a) * inv * AFLOAT(gamma[c]) + AFLOAT(beta[c]);
            if (p.swish != 0) {
                t = t / (H(1.0) + exp(-t));
            }
            y[at] = TFLOAT(t);
        }
    }
}
