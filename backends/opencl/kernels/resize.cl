// Separable 2-D resize on NC4HW4 buffers with host-made tables: output (oh, ow) reads rows hidx[oh * th + i] with
// weights hw[...] and columns widx[ow * tw + j] with weights ww[...] (1 tap nearest, 2 bilinear, 4 cubic).
// shape = (N, H, W, C/4), oshape = (OH, OW, th, tw).
__kernel void resize2d(__global const float* x, __global float* y, __global const int* hidx,
                       __global const float* hw, __global const int* widx, __global const float* ww, int4 shape,
                       int4 oshape) {
    int ow = get_global_id(0);
    int oh = get_global_id(1);
    int bn = get_global_id(2);
    if (ow >= oshape.y || oh >= oshape.x || bn >= shape.x * shape.w) {
        return;
    }
    __global const float* base = x + (size_t)bn * shape.y * shape.z * 4;
    float4 acc = (float4)(0.0f);
    for (int i = 0; i < oshape.z; ++i) {
        int iy = hidx[oh * oshape.z + i];
        float wy = hw[oh * oshape.z + i];
        for (int j = 0; j < oshape.w; ++j) {
            acc += (wy * ww[ow * oshape.w + j]) * vload4(iy * shape.z + widx[ow * oshape.w + j], base);
        }
    }
    vstore4(acc, (bn * oshape.x + oh) * oshape.y + ow, y);
}
