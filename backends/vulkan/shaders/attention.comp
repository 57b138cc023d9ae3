#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// MNN's fused Attention: query [B, Sq, H, D], key/value [Bk, Skv, Hkv, D|Dv] (row-major), out [B, Sq, H*Dv].
// One invocation per (batch, head, query row) with an online softmax (running max, running sum, Dv accumulators):
// no [Sq, Skv] matrix is stored. flags: 1 = add mask (strides ms; 0 where it broadcasts), 2 = causal (no mask).
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Q { TFLOAT q[]; };
layout(std430, binding = 1) readonly buffer K { TFLOAT k[]; };
layout(std430, binding = 2) readonly buffer V { TFLOAT v[]; };
layout(std430, binding = 3) readonly buffer M { TFLOAT mask[]; };
layout(std430, binding = 4) writeonly buffer Out { TFLOAT y[]; };
layout(push_constant) uniform Params {
    int batch;
    int sq;
    int skv;
    int heads;
    int kv_heads;
    int d;
    int dv;
    int flags;
    ivec4 ms;
    float scale;
    int kbatch;
} p;
#include "common.glsl"

const int MAXD = 128;

void main() {
    int rows = p.batch * p.heads * p.sq;
    for (int r = int(gl_GlobalInvocationID.x); r < rows; r += grid_stride()) {
        int i = r % p.sq;
        int h = (r / p.sq) % p.heads;
        int b = r / (p.sq * p.heads);
        int hk = h / (p.heads / p.kv_heads);
        int bk = p.kbatch != 0 ? b : 0;
        float qr[MAXD];
        float acc[MAXD];
        for (int e = 0; e < p.d; ++e) {
            qr[e] = float(q[((b * p.sq + i) * p.heads + h) * p.d + e]) * p.scale;
        }
        for (int e = 0; e < p.dv; ++e) {
            acc[e] = 0.0;
        }
        float m = -1.0 / 0.0;
        float l = 0.0;
        int last = (p.flags & 2) != 0 ? min(p.skv, i + 1 + p.skv - p.sq) : p.skv;
        for (int s = 0; s < last; ++s) {
            int kbase = ((bk * p.skv + s) * p.kv_heads + hk);
            float score = 0.0;
            for (int e = 0; e < p.d; ++e) {
                score += qr[e] * float(k[kbase * p.d + e]);
            }
            if ((p.flags & 1) != 0) {
                score += float(mask[b * p.ms.x + h * p.ms.y + i * p.ms.z + s * p.ms.w]);
            }
            if (isinf(score) && score < 0.0) {
                continue;
            }
            if (score > m) {
                float alpha = exp(m - score);
                l *= alpha;
                for (int e = 0; e < p.dv; ++e) {
                    acc[e] *= alpha;
                }
                m = score;
            }
            float w = exp(score - m);
            l += w;
            for (int e = 0; e < p.dv; ++e) {
                acc[e] += w * float(v[kbase * p.dv + e]);
            }
        }
        float inv = l > 0.0 ? 1.0 / l : 0.0;
        for (int e = 0; e < p.dv; ++e) {
            y[((b * p.sq + i) * p.heads + h) * p.dv + e] = TFLOAT(acc[e] * inv);
        }
    }
}
