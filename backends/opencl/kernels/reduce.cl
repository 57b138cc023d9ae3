// Reduction over a set of axes. meta = [nk, kept dims[nk], kept strides[nk], nr, reduced dims[nr],
// reduced strides[nr]] (input logical strides). op: MNN ReductionType 0 SUM, 1 ASUM, 2 SUMSQ, 3 MEAN, 4 MAX,
// 5 MIN, 6 PROD.
__kernel void reduce(__global const float* x, __global float* y, int4 xdesc, int4 ydesc, __global const int* meta,
                     int op, int count) {
    int l = get_global_id(0);
    if (l >= count) {
        return;
    }
    int nk = meta[0];
    int rem = l;
    int base = 0;
    for (int i = nk - 1; i >= 0; --i) {
        base += (rem % meta[1 + i]) * meta[1 + nk + i];
        rem /= meta[1 + i];
    }
    __global const int* red = meta + 1 + 2 * nk;
    int nr = red[0];
    int total = 1;
    for (int i = 0; i < nr; ++i) {
        total *= red[1 + i];
    }
    float acc = op == 4 ? -INFINITY : (op == 5 ? INFINITY : (op == 6 ? 1.0f : 0.0f));
    for (int r = 0; r < total; ++r) {
        int rr = r;
        int idx = base;
        for (int i = nr - 1; i >= 0; --i) {
            idx += (rr % red[1 + i]) * red[1 + nr + i];
            rr /= red[1 + i];
        }
        float v = x[phys_index(idx, xdesc)];
        if (op == 1) {
            acc += fabs(v);
        } else if (op == 2) {
            acc += v * v;
        } else if (op == 4) {
            acc = fmax(acc, v);
        } else if (op == 5) {
            acc = fmin(acc, v);
        } else if (op == 6) {
            acc *= v;
        } else {
            acc += v;
        }
    }
    y[phys_index(l, ydesc)] = op == 3 ? acc / (float)total : acc;
}

// ArgMax / ArgMin along one axis (first occurrence wins): logical input (o * axis + k) * inside + i,
// output o * inside + i (int32).
__kernel void argmax(__global const float* x, __global int* y, int4 xdesc, int4 ydesc, int outside, int axis,
                     int inside, int is_min) {
    int i = get_global_id(0);
    int o = get_global_id(1);
    if (i >= inside || o >= outside) {
        return;
    }
    int base = o * axis * inside + i;
    float best = x[phys_index(base, xdesc)];
    int arg = 0;
    for (int k = 1; k < axis; ++k) {
        float v = x[phys_index(base + k * inside, xdesc)];
        if (is_min ? v < best : v > best) {
            best = v;
            arg = k;
        }
    }
    y[phys_index(o * inside + i, ydesc)] = arg;
}
