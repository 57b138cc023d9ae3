// GroupNorm (MNN's GroupNorm op): x [N, C, ...] in any layout (phys_index), one work item per (group, batch):
// mean and variance over the group's channels and area, then per-channel gamma/beta and optional swish (flags:
// 1 gamma, 2 beta, 4 swish).

__kernel void groupnorm(__global const float* x, __global float* y, __global const float* gamma,
                        __global const float* beta, int4 xdesc, int4 ydesc, int channels, int groups, int area,
                        float eps, int flags) {
    const int g = get_global_id(0);
    const int n = get_global_id(1);
    if (g >= groups) {
        return;
    }
    const int cg = channels / groups;
    const int base = (n * channels + g * cg) * area;
    const int count = cg * area;
    float mean = 0.0f;
    for (int e = 0; e < count; ++e) {
        mean += x[phys_index(base + e, xdesc)];
    }
    mean /= (float)count;
    float var = 0.0f;
    for (int e = 0; e < count; ++e) {
        float t = x[phys_index(base + e, xdesc)] - mean;
        var += t * t;
    }
    const float inv = rsqrt(var / (float)count + eps);
    for (int e = 0; e < count; ++e) {
        int c = g * cg + e / area;
        float t = (x[phys_index(base + e, xdesc)] - mean) * inv;
        t = (flags & 1) ? t * gamma[c] : t;
        t = (flags & 2) ? t + beta[c] : t;
        t = (flags & 4) ? t / (1.0f + exp(-t)) : t;
        y[phys_index(base + e, ydesc)] = t;
    }
}
