// Elementwise binary ops (MNN BinaryOpOperation numbers) with a fused activation (0 none, 1 ReLU, 2 ReLU6).
// Built with -DBINARY_OP=<code> the op is a compile-time constant (the switch folds, PoCL vectorises).
#ifdef BINARY_OP
#define OP_OF(op) BINARY_OP
#else
#define OP_OF(op) (op)
#endif

inline float binary_op(float a, float b, int op) {
    switch (op) {
        case 0: return a + b;
        case 1: return a - b;
        case 2: return a * b;
        case 3: case 7: return a / b;
        case 4: case 9: return fmax(a, b);
        case 5: case 8: return fmin(a, b);
        case 6: return pow(a, b);
        case 13: return floor(a / b);
        case 14: return (a - b) * (a - b);
        case 17: return a - floor(a / b) * b;
        case 19: return fmod(a, b);
        case 20: return atan2(a, b);
        default: return 0.0f;
    }
}

// Same shape and layout: over physical elements.
__kernel void binary_same(__global const float* a, __global const float* b, __global float* y, int4 desc, int op,
                          int act, int count) {
    int e = get_global_id(0);
    if (e >= count) {
        return;
    }
    y[e] = phys_valid(e, desc) ? activate(binary_op(a[e], b[e], OP_OF(op)), act) : 0.0f;
}

// Broadcast: over logical output elements; meta = dims[rank], a strides[rank], b strides[rank] (0 = broadcast).
__kernel void binary_bcast(__global const float* a, __global const float* b, __global float* y, int4 adesc,
                           int4 bdesc, int4 ydesc, int op, int act, int rank, __global const int* meta, int count) {
    int l = get_global_id(0);
    if (l >= count) {
        return;
    }
    int rem = l;
    int la = 0;
    int lb = 0;
    for (int i = rank - 1; i >= 0; --i) {
        int c = rem % meta[i];
        rem /= meta[i];
        la += c * meta[rank + i];
        lb += c * meta[2 * rank + i];
    }
    float v = binary_op(a[phys_index(la, adesc)], b[phys_index(lb, bdesc)], OP_OF(op));
    y[phys_index(l, ydesc)] = activate(v, act);
}

// Eltwise SUM with coefficients: y = ca * a + cb * b.
__kernel void axpby(__global const float* a, __global const float* b, __global float* y, int4 desc, float ca,
                    float cb, int count) {
    int e = get_global_id(0);
    if (e >= count) {
        return;
    }
    y[e] = phys_valid(e, desc) ? ca * a[e] + cb * b[e] : 0.0f;
}
