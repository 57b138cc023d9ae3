// Condition element type: int by default, float with -DCT=float.
#ifndef CT
#define CT int
#endif

// Select / Where with broadcasting: y = c != 0 ? a : b over logical output elements.
// meta = dims[rank], then c, a and b strides[rank] each (0 = broadcast).
__kernel void select_bcast(__global const CT* c, __global const float* a, __global const float* b,
                           __global float* y, int4 cdesc, int4 adesc, int4 bdesc, int4 ydesc, int rank,
                           __global const int* meta, int count) {
    int l = get_global_id(0);
    if (l >= count) {
        return;
    }
    int rem = l;
    int lc = 0;
    int la = 0;
    int lb = 0;
    for (int i = rank - 1; i >= 0; --i) {
        int k = rem % meta[i];
        rem /= meta[i];
        lc += k * meta[rank + i];
        la += k * meta[2 * rank + i];
        lb += k * meta[3 * rank + i];
    }
    CT cond = c[phys_index(lc, cdesc)];
    y[phys_index(l, ydesc)] = cond != 0 ? a[phys_index(la, adesc)] : b[phys_index(lb, bdesc)];
}

// Padding through a host-made index table: y = idx < 0 ? value : x[idx] (logical indices).
__kernel void pad_gather(__global const float* x, __global float* y, __global const int* idx, int4 xdesc,
                         int4 ydesc, float value, int count) {
    int l = get_global_id(0);
    if (l >= count) {
        return;
    }
    int s = idx[l];
    y[phys_index(l, ydesc)] = s < 0 ? value : x[phys_index(s, xdesc)];
}
