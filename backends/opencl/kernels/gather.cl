// Element type: float by default, int with -DT=int.
#ifndef T
#define T float
#endif

// GatherV2 along an axis: output logical index l = (o * nidx + j) * inner + i reads input (o * dim + idx[j]) * inner
// + i; negative indices wrap, out-of-range ones are clamped (never read outside the buffer).
__kernel void gather_axis(__global const T* x, __global const int* idx, __global T* y, int4 xdesc, int4 ydesc,
                          int dim, int nidx, int inner, int count) {
    int l = get_global_id(0);
    if (l >= count) {
        return;
    }
    int i = l % inner;
    int r = l / inner;
    int j = r % nidx;
    int o = r / nidx;
    int k = idx[j];
    k = k < 0 ? k + dim : k;
    k = clamp(k, 0, dim - 1);
    y[phys_index(l, ydesc)] = x[phys_index((o * dim + k) * inner + i, xdesc)];
}

// Cast over physical elements of same-layout tensors (float -> int truncates toward zero, as C and numpy).
__kernel void cast_f2i(__global const float* x, __global int* y, int count) {
    int e = get_global_id(0);
    if (e < count) {
        y[e] = convert_int_rtz(x[e]);
    }
}

__kernel void cast_i2f(__global const int* x, __global float* y, int count) {
    int e = get_global_id(0);
    if (e < count) {
        y[e] = convert_float(x[e]);
    }
}
