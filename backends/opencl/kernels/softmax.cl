// Softmax along one axis: logical index (o * axis + k) * inside + i; one work item per (i, o).
__kernel void softmax(__global const float* x, __global float* y, int4 xdesc, int4 ydesc, int outside, int axis,
                      int inside) {
    int i = get_global_id(0);
    int o = get_global_id(1);
    if (i >= inside || o >= outside) {
        return;
    }
    int base = o * axis * inside + i;
    float m = -INFINITY;
    for (int k = 0; k < axis; ++k) {
        m = fmax(m, x[phys_index(base + k * inside, xdesc)]);
    }
    float s = 0.0f;
    for (int k = 0; k < axis; ++k) {
        s += exp(x[phys_index(base + k * inside, xdesc)] - m);
    }
    float r = 1.0f / s;
    for (int k = 0; k < axis; ++k) {
        int l = base + k * inside;
        y[phys_index(l, ydesc)] = exp(x[phys_index(l, xdesc)] - m) * r;
    }
}
