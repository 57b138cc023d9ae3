// Shared helpers, prepended to every program by the runtime (OpenCL C 1.2).
// A tensor is described by int4 (format, N, C, area): format 0 = plain row-major (NCHW / NHWC / linear),
// format 1 = MNN's OpenCL buffer NC4HW4, [C/4][N][area][4]. Indices are logical (row-major over the shape).

inline int phys_index(int l, int4 d) {
    if (d.x == 0) {
        return l;
    }
    int r = l % d.w;
    int t = l / d.w;
    int ch = t % d.z;
    int b = t / d.z;
    return (((ch >> 2) * d.y + b) * d.w + r) * 4 + (ch & 3);
}

// 1 if physical element e of a tensor is a real element (not a zero-padded NC4HW4 channel lane).
inline int phys_valid(int e, int4 d) {
    if (d.x == 0) {
        return 1;
    }
    int cb = (e >> 2) / (d.y * d.w);
    return (cb * 4 + (e & 3)) < d.z;
}

// Fused activation: 0 none, 1 ReLU, 2 ReLU6.
inline float activate(float v, int act) {
    if (act == 1) {
        return fmax(v, 0.0f);
    }
    if (act == 2) {
        return clamp(v, 0.0f, 6.0f);
    }
    return v;
}

inline float4 activate4(float4 v, int act) {
    if (act == 1) {
        return fmax(v, (float4)(0.0f));
    }
    if (act == 2) {
        return clamp(v, (float4)(0.0f), (float4)(6.0f));
    }
    return v;
}
