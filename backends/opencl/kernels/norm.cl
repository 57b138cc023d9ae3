// LayerNorm / RMSNorm over the innermost `inner` logical elements of each row; flags: 1 gamma, 2 beta, 4 RMS.
__kernel void layernorm(__global const float* x, __global float* y, __global const float* gamma,
                        __global const float* beta, int4 xdesc, int4 ydesc, int rows, int inner, float eps,
                        int flags) {
    int r = get_global_id(0);
    if (r >= rows) {
        return;
    }
    int base = r * inner;
    float mean = 0.0f;
    if (!(flags & 4)) {
        for (int k = 0; k < inner; ++k) {
            mean += x[phys_index(base + k, xdesc)];
        }
        mean /= (float)inner;
    }
    float var = 0.0f;
    for (int k = 0; k < inner; ++k) {
        float d = x[phys_index(base + k, xdesc)] - mean;
        var += d * d;
    }
    float inv = rsqrt(var / (float)inner + eps);
    for (int k = 0; k < inner; ++k) {
        float v = (x[phys_index(base + k, xdesc)] - mean) * inv;
        v = (flags & 1) ? v * gamma[k] : v;
        v = (flags & 2) ? v + beta[k] : v;
        y[phys_index(base + k, ydesc)] = v;
    }
}
