// 2-D convolution on NC4HW4 buffers ([C/4][N][H][W][4]) with fused bias and activation.
// in = (N, IC4, H, W), out = (OC4, OH, OW, 0), ks = (kh, kw, sh, sw), dp = (dh, dw, pad top, pad left).
// Weights: float4 (4 output channels) at [OC4][IC4][kh][kw][4 input lanes]. One work item computes 4 output
// pixels along W for one output channel block.
__kernel void conv2d(__global const float* x, __global const float4* wt, __global const float4* bias,
                     __global float* y, int4 in, int4 out, int4 ks, int4 dp, int act) {
    int owb = get_global_id(0) * 4;
    int oh = get_global_id(1);
    int ocn = get_global_id(2);
    int n = in.x;
    int ic4 = in.y;
    int h = in.z;
    int w = in.w;
    if (owb >= out.z || oh >= out.y || ocn >= out.x * n) {
        return;
    }
    int oc = ocn / n;
    int b = ocn % n;
    float4 bv = bias[oc];
    float4 acc0 = bv;
    float4 acc1 = bv;
    float4 acc2 = bv;
    float4 acc3 = bv;
    int iy0 = oh * ks.z - dp.z;
    int ix0 = owb * ks.w - dp.w;
    int ixs = ks.w;
    for (int c = 0; c < ic4; ++c) {
        __global const float* plane = x + ((size_t)(c * n + b) * h) * w * 4;
        __global const float4* wc = wt + ((size_t)(oc * ic4 + c) * ks.x * ks.y) * 4;
        for (int ky = 0; ky < ks.x; ++ky) {
            int iy = iy0 + ky * dp.x;
            if (iy < 0 || iy >= h) {
                continue;
            }
            __global const float* row = plane + iy * w * 4;
            for (int kx = 0; kx < ks.y; ++kx) {
                __global const float4* wk = wc + (ky * ks.y + kx) * 4;
                float4 w0 = wk[0];
                float4 w1 = wk[1];
                float4 w2 = wk[2];
                float4 w3 = wk[3];
                int ix = ix0 + kx * dp.y;
                float4 v0 = (ix >= 0 && ix < w) ? vload4(ix, row) : (float4)(0.0f);
                float4 v1 = (ix + ixs >= 0 && ix + ixs < w) ? vload4(ix + ixs, row) : (float4)(0.0f);
                float4 v2 = (ix + 2 * ixs >= 0 && ix + 2 * ixs < w) ? vload4(ix + 2 * ixs, row) : (float4)(0.0f);
                float4 v3 = (ix + 3 * ixs >= 0 && ix + 3 * ixs < w) ? vload4(ix + 3 * ixs, row) : (float4)(0.0f);
                acc0 += v0.x * w0 + v0.y * w1 + v0.z * w2 + v0.w * w3;
                acc1 += v1.x * w0 + v1.y * w1 + v1.z * w2 + v1.w * w3;
                acc2 += v2.x * w0 + v2.y * w1 + v2.z * w2 + v2.w * w3;
                acc3 += v3.x * w0 + v3.y * w1 + v3.z * w2 + v3.w * w3;
            }
        }
    }
    __global float* dst = y + ((size_t)(oc * n + b) * out.y + oh) * out.z * 4;
    vstore4(activate4(acc0, act), owb, dst);
    if (owb + 1 < out.z) {
        vstore4(activate4(acc1, act), owb + 1, dst);
    }
    if (owb + 2 < out.z) {
        vstore4(activate4(acc2, act), owb + 2, dst);
    }
    if (owb + 3 < out.z) {
        vstore4(activate4(acc3, act), owb + 3, dst);
    }
}

// Depthwise convolution (channel multiplier 1): weights float4 at [C4][kh][kw]; one output pixel per work item.
__kernel void dwconv2d(__global const float* x, __global const float4* wt, __global const float4* bias,
                       __global float* y, int4 in, int4 out, int4 ks, int4 dp, int act) {
    int ow = get_global_id(0);
    int oh = get_global_id(1);
    int cn = get_global_id(2);
    int n = in.x;
    int h = in.z;
    int w = in.w;
    if (ow >= out.z || oh >= out.y || cn >= out.x * n) {
        return;
    }
    int c = cn / n;
    float4 acc = bias[c];
    __global const float* plane = x + (size_t)cn * h * w * 4;
    __global const float4* wc = wt + (size_t)c * ks.x * ks.y;
    int iy0 = oh * ks.z - dp.z;
    int ix0 = ow * ks.w - dp.w;
    for (int ky = 0; ky < ks.x; ++ky) {
        int iy = iy0 + ky * dp.x;
        if (iy < 0 || iy >= h) {
            continue;
        }
        for (int kx = 0; kx < ks.y; ++kx) {
            int ix = ix0 + kx * dp.y;
            if (ix >= 0 && ix < w) {
                acc += vload4(iy * w + ix, plane) * wc[ky * ks.y + kx];
            }
        }
    }
    vstore4(activate4(acc, act), (cn * out.y + oh) * out.z + ow, y);
}

// Transposed convolution (gather form): output pixel (oh, ow) sums input pixels iy with iy * sh + ky * dh ==
// oh + pad top (and the same along W). Same shapes and weight layout as conv2d; one output pixel per work item.
__kernel void deconv2d(__global const float* x, __global const float4* wt, __global const float4* bias,
                       __global float* y, int4 in, int4 out, int4 ks, int4 dp, int act) {
    int ow = get_global_id(0);
    int oh = get_global_id(1);
    int ocn = get_global_id(2);
    int n = in.x;
    int ic4 = in.y;
    int h = in.z;
    int w = in.w;
    if (ow >= out.z || oh >= out.y || ocn >= out.x * n) {
        return;
    }
    int oc = ocn / n;
    int b = ocn % n;
    float4 acc = bias[oc];
    for (int c = 0; c < ic4; ++c) {
        __global const float* plane = x + ((size_t)(c * n + b) * h) * w * 4;
        __global const float4* wc = wt + ((size_t)(oc * ic4 + c) * ks.x * ks.y) * 4;
        for (int ky = 0; ky < ks.x; ++ky) {
            int ty = oh + dp.z - ky * dp.x;
            if (ty < 0 || ty % ks.z != 0 || ty / ks.z >= h) {
                continue;
            }
            int iy = ty / ks.z;
            for (int kx = 0; kx < ks.y; ++kx) {
                int tx = ow + dp.w - kx * dp.y;
                if (tx < 0 || tx % ks.w != 0 || tx / ks.w >= w) {
                    continue;
                }
                float4 v = vload4(iy * w + tx / ks.w, plane);
                __global const float4* wk = wc + (ky * ks.y + kx) * 4;
                acc += v.x * wk[0] + v.y * wk[1] + v.z * wk[2] + v.w * wk[3];
            }
        }
    }
    vstore4(activate4(acc, act), (ocn * out.y + oh) * out.z + ow, y);
}

// 1x1, stride 1, no padding: the N*H*W pixels of a channel block are contiguous, so work item (p4, oc) computes 4
// consecutive flat pixels x 4 output channels. in = (pixels, IC4, 0, 0), out = (pixels, OC4, 0, 0).
__kernel void conv1x1(__global const float* x, __global const float4* wt, __global const float4* bias,
                      __global float* y, int4 in, int4 out, int act) {
    int p = get_global_id(0) * 4;
    int oc = get_global_id(1);
    int np = in.x;
    if (p >= np || oc >= out.y) {
        return;
    }
    int left = np - p;
    float4 bv = bias[oc];
    float4 acc0 = bv;
    float4 acc1 = bv;
    float4 acc2 = bv;
    float4 acc3 = bv;
    __global const float4* wc = wt + (size_t)oc * in.y * 4;
    for (int c = 0; c < in.y; ++c) {
        __global const float* src = x + ((size_t)c * np + p) * 4;
        float4 w0 = wc[c * 4];
        float4 w1 = wc[c * 4 + 1];
        float4 w2 = wc[c * 4 + 2];
        float4 w3 = wc[c * 4 + 3];
        float4 v0 = vload4(0, src);
        float4 v1 = left > 1 ? vload4(1, src) : (float4)(0.0f);
        float4 v2 = left > 2 ? vload4(2, src) : (float4)(0.0f);
        float4 v3 = left > 3 ? vload4(3, src) : (float4)(0.0f);
        acc0 += v0.x * w0 + v0.y * w1 + v0.z * w2 + v0.w * w3;
        acc1 += v1.x * w0 + v1.y * w1 + v1.z * w2 + v1.w * w3;
        acc2 += v2.x * w0 + v2.y * w1 + v2.z * w2 + v2.w * w3;
        acc3 += v3.x * w0 + v3.y * w1 + v3.z * w2 + v3.w * w3;
    }
    __global float* dst = y + ((size_t)oc * np + p) * 4;
    vstore4(activate4(acc0, act), 0, dst);
    if (left > 1) {
        vstore4(activate4(acc1, act), 1, dst);
    }
    if (left > 2) {
        vstore4(activate4(acc2, act), 2, dst);
    }
    if (left > 3) {
        vstore4(activate4(acc3, act), 3, dst);
    }
}
