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
