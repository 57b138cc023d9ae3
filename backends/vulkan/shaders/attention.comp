#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// MNN's fused Attention: query [B, Sq, H, D], key/value [Bk, Skv, Hkv, D|Dv] (row-major), out [B, Sq, H*Dv].
// A work-group takes one block of query rows of one (batch, head); its invocations load each tile of TK keys and
// values into shared memory once, and every row keeps a running max, a running sum and its Dv accumulators (online
// softmax): no [Sq, Skv] matrix is stored. flags: 1 = add mask (strides ms; 0 where it broadcasts), 2 = causal.
// Work-groups loop over blocks (uniformly, so the barriers are in uniform control flow).
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
const int TK = 8;
shared float kt[TK * MAXD];
shared float vt[TK * MAXD];

void main() {
    int lid = int(gl_LocalInvocationID.x);
    int size = int(gl_WorkGroupSize.x);
    int qblocks = (p.sq + size - 1) / size;
    int total = p.batch * p.heads * qblocks;
    for (int wg = int(gl_WorkGroupID.x); wg < total; wg += int(gl_NumWorkGroups.x)) {
        int qb = wg % qblocks;
        int h = (wg / qblocks) % p.heads;
        int b = wg / (qblocks * p.heads);
        int i = qb * size + lid;
        bool valid_row = i < p.sq;
        int hk = h / (p.heads / p.kv_heads);
        int bk = p.kbatch != 0 ? b : 0;
        float qr[MAXD];
        float acc[MAXD];
        for (int e = 0; e < p.d; ++e) {
            qr[e] = valid_row ? float(q[((b * p.sq + i) * p.heads + h) * p.d + e]) * p.scale : 0.0;
        }
        for (int e = 0; e < p.dv; ++e) {
            acc[e] = 0.0;
        }
        float m = -1.0 / 0.0;
        float l = 0.0;
        int last = (p.flags & 2) != 0 ? min(p.skv, i + 1 + p.skv - p.sq) : p.skv;
        for (int t0 = 0; t0 < p.skv; t0 += TK) {
            for (int e = lid; e < TK * p.d; e += size) {
                int s = t0 + e / p.d;
                kt[e] = s < p.skv ? float(k[((bk * p.skv + s) * p.kv_heads + hk) * p.d + e % p.d]) : 0.0;
            }
            for (int e = lid; e < TK * p.dv; e += size) {
                int s = t0 + e / p.dv;
                vt[e] = s < p.skv ? float(v[((bk * p.skv + s) * p.kv_heads + hk) * p.dv + e % p.dv]) : 0.0;
            }
            barrier();
            for (int r = 0; valid_row && r < TK && t0 + r < last; ++r) {
                int s = t0 + r;
                float score = 0.0;
                for (int e = 0; e < p.d; ++e) {
                    score += qr[e] * kt[r * p.d + e];
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
                    acc[e] += w * vt[r * p.dv + e];
                }
            }
            barrier();
        }
        if (valid_row) {
            float inv = l > 0.0 ? 1.0 / l : 0.0;
            for (int e = 0; e < p.dv; ++e) {
                y[((b * p.sq + i) * p.heads + h) * p.dv + e] = TFLOAT(acc[e] * inv);
            }
        }
    }
}
