// Fused attention (MNN's Attention op): query [B, Sq, H, D], key/value [Bk, Skv, Hkv, D|Dv] (plain row-major),
// output [B, Sq, H*Dv]. One work item per (query row, head, batch); a work-group of TQ rows shares each tile of TK
// keys and values in local memory; each row keeps a running max, a running sum and its Dv accumulators (online
// softmax), so no [Sq, Skv] score or probability matrix is ever stored.
// dims = (B, Sq, Skv, H), dims2 = (Hkv, D, Dv, flags: 1 mask, 2 causal), mstride = mask strides (b, h, q, k; 0 where
// the mask broadcasts), kbatch = 1 when key/value have a batch per query batch, else 0.

#ifndef TK
#define TK 16
#endif
#ifndef MAXD
#define MAXD 128
#endif

__kernel void attention(__global const float* q, __global const float* k, __global const float* v,
                        __global const float* mask, __global float* y, int4 dims, int4 dims2, int4 mstride,
                        float scale, int kbatch) {
    __local float kt[TK * MAXD];
    __local float vt[TK * MAXD];
    const int i = get_global_id(0);
    const int h = get_global_id(1);
    const int b = get_global_id(2);
    const int lid = get_local_id(0);
    const int lsize = get_local_size(0);
    const int sq = dims.y, skv = dims.z, heads = dims.w;
    const int hkv = dims2.x, d = dims2.y, dv = dims2.z, flags = dims2.w;
    const int hk = h / (heads / hkv);
    const int bk = kbatch ? b : 0;
    const int active = i < sq;
    float qr[MAXD];
    float acc[MAXD];
    for (int e = 0; e < d; ++e) {
        qr[e] = active ? q[((b * sq + i) * heads + h) * d + e] * scale : 0.0f;
    }
    for (int e = 0; e < dv; ++e) {
        acc[e] = 0.0f;
    }
    float m = -INFINITY;
    float l = 0.0f;
    const int shift = skv - sq;
    for (int t0 = 0; t0 < skv; t0 += TK) {
        for (int e = lid; e < TK * d; e += lsize) {
            int s = t0 + e / d;
            kt[e] = s < skv ? k[((bk * skv + s) * hkv + hk) * d + e % d] : 0.0f;
        }
        for (int e = lid; e < TK * dv; e += lsize) {
            int s = t0 + e / dv;
            vt[e] = s < skv ? v[((bk * skv + s) * hkv + hk) * dv + e % dv] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (active) {
            for (int r = 0; r < TK && t0 + r < skv; ++r) {
                int s = t0 + r;
                if ((flags & 2) && s > i + shift) {
                    break;
                }
                float score = 0.0f;
                for (int e = 0; e < d; ++e) {
                    score += qr[e] * kt[r * d + e];
                }
                if (flags & 1) {
                    score += mask[b * mstride.x + h * mstride.y + i * mstride.z + s * mstride.w];
                }
                if (score == -INFINITY) {
                    continue;
                }
                if (score > m) {
                    float alpha = exp(m - score);
                    l *= alpha;
                    for (int e = 0; e < dv; ++e) {
                        acc[e] *= alpha;
                    }
                    m = score;
                }
                float p = exp(score - m);
                l += p;
                for (int e = 0; e < dv; ++e) {
                    acc[e] += p * vt[r * dv + e];
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (active) {
        float inv = l > 0.0f ? 1.0f / l : 0.0f;
        for (int e = 0; e < dv; ++e) {
            y[((b * sq + i) * heads + h) * dv + e] = acc[e] * inv;
        }
    }
}
