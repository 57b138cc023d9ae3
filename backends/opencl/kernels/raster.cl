// Element type: float by default, int with the build option -DT=int (int32 tensors: shapes, indices, masks).
#ifndef T
#define T float
#endif

// Region copy: dst[dv.x + z*dv.y + y*dv.z + x*dv.w] = src[sv.x + z*sv.y + y*sv.z + x*sv.w] in logical index
// space; sdesc/ddesc map logical indices to the buffers' physical layouts. Global size (size.z, size.y, size.x).
__kernel void raster(__global const T* src, __global T* dst, int4 sdesc, int4 ddesc, int4 sv, int4 dv,
                     int4 size) {
    int x = get_global_id(0);
    int y = get_global_id(1);
    int z = get_global_id(2);
    if (x >= size.z || y >= size.y || z >= size.x) {
        return;
    }
    int s = sv.x + z * sv.y + y * sv.z + x * sv.w;
    int d = dv.x + z * dv.y + y * dv.z + x * dv.w;
    dst[phys_index(d, ddesc)] = src[phys_index(s, sdesc)];
}

// Fast path: plain to plain with unit x strides, four elements per work item.
__kernel void raster_plain(__global const T* src, __global T* dst, int4 sv, int4 dv, int4 size) {
    int x = get_global_id(0) * 4;
    int y = get_global_id(1);
    int z = get_global_id(2);
    if (x >= size.z || y >= size.y || z >= size.x) {
        return;
    }
    int s = sv.x + z * sv.y + y * sv.z + x;
    int d = dv.x + z * dv.y + y * dv.z + x;
    if (x + 4 <= size.z) {
        vstore4(vload4(0, src + s), 0, dst + d);
    } else {
        for (int i = 0; i < size.z - x; ++i) {
            dst[d + i] = src[s + i];
        }
    }
}

// Index gather: dst[didx[i]] = src[sidx[i]] (logical indices), for mappings no 3-D region expresses.
__kernel void gather(__global const T* src, __global T* dst, int4 sdesc, int4 ddesc,
                     __global const int* sidx, __global const int* didx, int count) {
    int i = get_global_id(0);
    if (i >= count) {
        return;
    }
    dst[phys_index(didx[i], ddesc)] = src[phys_index(sidx[i], sdesc)];
}

// Whole-tensor layout conversions (an identity region between plain NCHW and NC4HW4 of one shape):
// work item (r, cb * N + n) moves 4 channels of one position r in [0, area).
__kernel void pack_nc4hw4(__global const T* src, __global T* dst, int n, int c, int area) {
    int r = get_global_id(0);
    int bn = get_global_id(1);
    if (r >= area || bn >= ((c + 3) >> 2) * n) {
        return;
    }
    int cb = bn / n;
    int b = bn % n;
    int c0 = cb * 4;
    __global const T* s = src + ((size_t)b * c + c0) * area + r;
    T v0 = s[0];
    T v1 = c0 + 1 < c ? s[area] : (T)0;
    T v2 = c0 + 2 < c ? s[2 * area] : (T)0;
    T v3 = c0 + 3 < c ? s[3 * area] : (T)0;
    __global T* d = dst + ((size_t)bn * area + r) * 4;
    d[0] = v0;
    d[1] = v1;
    d[2] = v2;
    d[3] = v3;
}

__kernel void unpack_nc4hw4(__global const T* src, __global T* dst, int n, int c, int area) {
    int r = get_global_id(0);
    int bn = get_global_id(1);
    if (r >= area || bn >= ((c + 3) >> 2) * n) {
        return;
    }
    int cb = bn / n;
    int b = bn % n;
    int c0 = cb * 4;
    __global const T* s = src + ((size_t)bn * area + r) * 4;
    __global T* d = dst + ((size_t)b * c + c0) * area + r;
    d[0] = s[0];
    if (c0 + 1 < c) {
        d[area] = s[1];
    }
    if (c0 + 2 < c) {
        d[2 * area] = s[2];
    }
    if (c0 + 3 < c) {
        d[3 * area] = s[3];
    }
}
