// Per-channel ops over a buffer's physical elements (zero NC4HW4 lanes stay zero).
// mode 0: y = x * s[c] + b[c] (Scale), mode 1: y = x > 0 ? x : x * s[c] (PReLU).
__kernel void channelwise(__global const float* x, __global float* y, __global const float* s,
                          __global const float* b, int4 desc, int mode, int count) {
    int e = get_global_id(0);
    if (e >= count) {
        return;
    }
    int c;
    if (desc.x == 0) {
        c = (e / desc.w) % desc.z;
    } else {
        c = ((e >> 2) / (desc.y * desc.w)) * 4 + (e & 3);
        if (c >= desc.z) {
            y[e] = 0.0f;
            return;
        }
    }
    float v = x[e];
    y[e] = mode == 0 ? v * s[c] + b[c] : (v > 0.0f ? v : v * s[c]);
}
