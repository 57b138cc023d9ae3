// Batched matrix product on plain buffers: C[b, m, n] = sum_k A[b, m, k] * B[b, k, n] (+ bias[n]).
// sa = (batch stride, m stride, k stride, batch count), sb = (batch stride, k stride, n stride); a stride of 0
// broadcasts. mnk = (M, N, K, has_bias). One work item computes a 4 x 4 block: rows 4*gid(1).., columns 4*gid(0)..

inline float4 load_b4(__global const float* bk, int left, int snb) {
    if (left >= 4 && snb == 1) {
        return vload4(0, bk);
    }
    return (float4)(bk[0], left > 1 ? bk[snb] : 0.0f, left > 2 ? bk[2 * snb] : 0.0f, left > 3 ? bk[3 * snb] : 0.0f);
}

inline void store_row(__global float* cp, float4 v, int left) {
    if (left >= 4) {
        vstore4(v, 0, cp);
        return;
    }
    cp[0] = v.x;
    if (left > 1) {
        cp[1] = v.y;
    }
    if (left > 2) {
        cp[2] = v.z;
    }
}

__kernel void matmul(__global const float* a, __global const float* b, __global const float* bias,
                     __global float* c, int4 mnk, int4 sa, int4 sb) {
    int n4 = get_global_id(0) * 4;
    int m4 = get_global_id(1) * 4;
    int bt = get_global_id(2);
    if (n4 >= mnk.y || m4 >= mnk.x || bt >= sa.w) {  // a tuned local size rounds the global size up
        return;
    }
    int left = mnk.y - n4;
    int rows = min(mnk.x - m4, 4);
    // rows past M re-read the last valid row (never out of bounds) and are not stored
    __global const float* a0 = a + bt * sa.x + m4 * sa.y;
    __global const float* a1 = a + bt * sa.x + min(m4 + 1, mnk.x - 1) * sa.y;
    __global const float* a2 = a + bt * sa.x + min(m4 + 2, mnk.x - 1) * sa.y;
    __global const float* a3 = a + bt * sa.x + min(m4 + 3, mnk.x - 1) * sa.y;
    __global const float* bp = b + bt * sb.x + n4 * sb.z;
    float4 c0 = (float4)(0.0f);
    float4 c1 = (float4)(0.0f);
    float4 c2 = (float4)(0.0f);
    float4 c3 = (float4)(0.0f);
    for (int k = 0; k < mnk.z; ++k) {
        float4 bv = load_b4(bp + k * sb.y, left, sb.z);
        int ka = k * sa.z;
        c0 += a0[ka] * bv;
        c1 += a1[ka] * bv;
        c2 += a2[ka] * bv;
        c3 += a3[ka] * bv;
    }
    if (mnk.w) {
        float4 bb = load_b4(bias + n4, left, 1);
        c0 += bb;
        c1 += bb;
        c2 += bb;
        c3 += bb;
    }
    __global float* cp = c + ((size_t)bt * mnk.x + m4) * mnk.y + n4;
    store_row(cp, c0, left);
    if (rows > 1) {
        store_row(cp + mnk.y, c1, left);
    }
    if (rows > 2) {
        store_row(cp + 2 * mnk.y, c2, left);
    }
    if (rows > 3) {
        store_row(cp + 3 * mnk.y, c3, left);
    }
}
