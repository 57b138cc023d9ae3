// Batched matrix product on plain buffers: C[b, m, n] = sum_k A[b, m, k] * B[b, k, n] (+ bias[n]).
// sa = (batch stride, m stride, k stride), sb = (batch stride, k stride, n stride); a stride of 0 broadcasts.
// mnk = (M, N, K, has_bias). One work item computes 4 consecutive columns of one row.
__kernel void matmul(__global const float* a, __global const float* b, __global const float* bias,
                     __global float* c, int4 mnk, int4 sa, int4 sb) {
    int n4 = get_global_id(0) * 4;
    int m = get_global_id(1);
    int bt = get_global_id(2);
    if (n4 >= mnk.y || m >= mnk.x) {
        return;
    }
    __global const float* ap = a + bt * sa.x + m * sa.y;
    __global const float* bp = b + bt * sb.x + n4 * sb.z;
    float4 acc = (float4)(0.0f);
    int left = mnk.y - n4;
    if (left >= 4 && sb.z == 1) {
        for (int k = 0; k < mnk.z; ++k) {
            acc += ap[k * sa.z] * vload4(0, bp + k * sb.y);
        }
    } else {
        for (int k = 0; k < mnk.z; ++k) {
            float av = ap[k * sa.z];
            __global const float* bk = bp + k * sb.y;
            acc.x += av * bk[0];
            acc.y += left > 1 ? av * bk[sb.z] : 0.0f;
            acc.z += left > 2 ? av * bk[2 * sb.z] : 0.0f;
            acc.w += left > 3 ? av * bk[3 * sb.z] : 0.0f;
        }
    }
    if (mnk.w) {
        acc.x += bias[n4];
        acc.y += left > 1 ? bias[n4 + 1] : 0.0f;
        acc.z += left > 2 ? bias[n4 + 2] : 0.0f;
        acc.w += left > 3 ? bias[n4 + 3] : 0.0f;
    }
    __global float* cp = c + ((size_t)bt * mnk.x + m) * mnk.y + n4;
    if (left >= 4) {
        vstore4(acc, 0, cp);
    } else {
        cp[0] = acc.x;
        if (left > 1) {
            cp[1] = acc.y;
        }
        if (left > 2) {
            cp[2] = acc.z;
        }
    }
}
