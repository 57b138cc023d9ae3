// 2-D pooling on NC4HW4 buffers ([C/4][N][H][W][4]); one work item per output pixel and channel block.
// shape = (N, H, W, C/4), oshape = (OH, OW, 0, 0), ks = (kh, kw, sh, sw), pads = (top, left, bottom, right).
// type 0 = max, 1 = average; count 1 = include padding (Caffe), 2 = exclude padding.
__kernel void pool(__global const float* x, __global float* y, int4 shape, int4 oshape, int4 ks, int4 pads,
                   int type, int count) {
    int ow = get_global_id(0);
    int oh = get_global_id(1);
    int bn = get_global_id(2);
    int n = shape.x;
    int h = shape.y;
    int w = shape.z;
    if (ow >= oshape.y || oh >= oshape.x || bn >= shape.w * n) {
        return;
    }
    int hs = oh * ks.z - pads.x;
    int ws = ow * ks.w - pads.y;
    int he = min(hs + ks.x, h + pads.z);
    int we = min(ws + ks.y, w + pads.w);
    int area = (he - hs) * (we - ws);
    int h0 = max(hs, 0);
    int w0 = max(ws, 0);
    he = min(he, h);
    we = min(we, w);
    __global const float* base = x + (size_t)bn * h * w * 4;
    float4 acc = type == 0 ? (float4)(-INFINITY) : (float4)(0.0f);
    for (int iy = h0; iy < he; ++iy) {
        for (int ix = w0; ix < we; ++ix) {
            float4 v = vload4(iy * w + ix, base);
            acc = type == 0 ? fmax(acc, v) : acc + v;
        }
    }
    if (type == 1) {
        int valid = (he - h0) * (we - w0);
        acc = acc / (float)(count == 2 ? max(valid, 1) : max(area, 1));
    }
    vstore4(acc, (bn * oshape.x + oh) * oshape.y + ow, y);
}
