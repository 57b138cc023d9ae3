#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// variants: fp16a
// Batched C[b] = op(A[b]) @ op(B[b]) + bias on row-major buffers; one invocation computes 4 consecutive columns
// of one output row, so every A element loaded feeds 4 products.
// Element (m, k) of op(A) sits at a_batch*b + m*a_stride.y + k*a_stride.z (transposes are just strides);
// a zero batch stride broadcasts an operand. has_bias adds bias[n].
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer A { TFLOAT a[]; };
layout(std430, binding = 1) readonly buffer B { TFLOAT b[]; };
layout(std430, binding = 2) readonly buffer Bias { TFLOAT bias[]; };
layout(std430, binding = 3) writeonly buffer C { TFLOAT c[]; };
layout(push_constant) uniform Params {
    ivec4 mnk;       // M, N, K, work items (batch * M * ceil(N / 4))
    ivec4 a_stride;  // batch, m, k, has_bias
    ivec4 b_stride;  // batch, k, n, unused
} p;
#include "common.glsl"

void main() {
    int n4 = (p.mnk.y + 3) / 4;
    int last = p.mnk.y - 1;
    for (int i = int(gl_GlobalInvocationID.x); i < p.mnk.w; i += grid_stride()) {
        int row = i / n4;  // batch * M + m
        int n = (i - row * n4) * 4;
        int bt = row / p.mnk.x;
        int m = row - bt * p.mnk.x;
        ivec4 cols = min(ivec4(n) + ivec4(0, 1, 2, 3), ivec4(last));
        int ai = bt * p.a_stride.x + m * p.a_stride.y;
        ivec4 bi = ivec4(bt * p.b_stride.x) + cols * p.b_stride.z;
        vec4 acc = vec4(0.0);
        if (p.a_stride.w != 0) {
            acc = vec4(float(bias[cols.x]), float(bias[cols.y]), float(bias[cols.z]), float(bias[cols.w]));
        }
        for (int k = 0; k < p.mnk.z; ++k) {
            AFLOAT av = AFLOAT(a[ai]);
            acc += ACC4(av * AVEC4(AFLOAT(b[bi.x]), AFLOAT(b[bi.y]), AFLOAT(b[bi.z]), AFLOAT(b[bi.w])));
            ai += p.a_stride.z;
            bi += ivec4(p.b_stride.y);
        }
        int out_index = row * p.mnk.y + n;
        c[out_index] = TFLOAT(acc.x);
        if (n + 1 <= last) c[out_index + 1] = TFLOAT(acc.y);
        if (n + 2 <= last) c[out_index + 2] = TFLOAT(acc.z);
        if (n + 3 <= last) c[out_index + 3] = TFLOAT(acc.w);
    }
}
