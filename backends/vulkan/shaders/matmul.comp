#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// Batched C[b] = op(A[b]) @ op(B[b]) + bias on row-major buffers, one invocation per output element.
// Element (m, k) of op(A) sits at a_batch*b + m*a_strides.x + k*a_strides.y (transposes are just strides);
// a zero batch stride broadcasts an operand. has_bias adds bias[n].
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer A { TFLOAT a[]; };
layout(std430, binding = 1) readonly buffer B { TFLOAT b[]; };
layout(std430, binding = 2) readonly buffer Bias { TFLOAT bias[]; };
layout(std430, binding = 3) writeonly buffer C { TFLOAT c[]; };
layout(push_constant) uniform Params {
    ivec4 mnk;       // M, N, K, total (batch * M * N)
    ivec4 a_stride;  // batch, m, k, has_bias
    ivec4 b_stride;  // batch, k, n, unused
} p;
#include "common.glsl"

void main() {
    int mn = p.mnk.x * p.mnk.y;
    for (int i = int(gl_GlobalInvocationID.x); i < p.mnk.w; i += grid_stride()) {
        int bt = i / mn;
        int r = i - bt * mn;
        int m = r / p.mnk.y;
        int n = r - m * p.mnk.y;
        int ai = bt * p.a_stride.x + m * p.a_stride.y;
        int bi = bt * p.b_stride.x + n * p.b_stride.z;
        float acc = p.a_stride.w != 0 ? float(bias[n]) : 0.0;
        for (int k = 0; k < p.mnk.z; ++k) {
            acc += float(a[ai]) * float(b[bi]);
            ai += p.a_stride.z;
            bi += p.b_stride.y;
        }
        c[i] = TFLOAT(acc);
    }
}
