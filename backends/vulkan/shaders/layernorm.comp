#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// variants: fp16a
// LayerNorm / RMSNorm over the innermost `inner` elements of each row of a row-major tensor:
// y = (x - mean) / sqrt(var + eps) * gamma + beta (rms: no mean subtraction). One invocation per row.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TFLOAT x[]; };
layout(std430, binding = 1) readonly buffer Gamma { float gamma[]; };
layout(std430, binding = 2) readonly buffer Beta { float beta[]; };
layout(std430, binding = 3) writeonly buffer Out { TFLOAT y[]; };
layout(push_constant) uniform Params {
    int rows;
    int inner;
    int rms;
    float eps;
} p;
#include "common.glsl"

void main() {
    for (int r = int(gl_GlobalInvocationID.x); r < p.rows; r += grid_stride()) {
        int base = r * p.inner;
        float mean = 0.0;
        if (p.rms == 0) {
            for (int k = 0; k < p.inner; ++k) {
                mean += float(x[base + k]);
            }
            mean /= float(p.inner);
        }
        float var = 0.0;
        for (int k = 0; k < p.inner; ++k) {
            float d = float(x[base + k]) - mean;
            var += d * d;
        }
        AFLOAT inv = AFLOAT(inversesqrt(var / float(p.inner) + p.eps));
        AFLOAT mean_a = AFLOAT(mean);
        for (int k = 0; k < p.inner; ++k) {
            y[base + k] = TFLOAT((AFLOAT(x[base + k]) - mean_a) * inv * AFLOAT(gamma[k]) + AFLOAT(beta[k]));
        }
    }
}
