// Winograd F(2x2, 3x3) for 3x3 stride-1 convolutions on NC4HW4 buffers ([C/4][N][H][W][4]).
// V[pos][IC4][tiles] = B^T d B per 4x4 input tile; M[pos][OC4][tiles] = sum_c V * U (U = G g G^T, packed on the
// host as float4 output channels at [pos][OC4][IC4][4 input lanes]); output tile = A^T M A + bias, activation.

// in = (N, IC4, H, W), t = (TH, TW, pad top, pad left); one work item per tile and input channel block.
__kernel void wino_in(__global const float* x, __global float4* v, int4 in, int4 t) {
    int tx = get_global_id(0);
    int ty = get_global_id(1);
    int cn = get_global_id(2);
    int n = in.x;
    if (tx >= t.y || ty >= t.x || cn >= in.y * n) {
        return;
    }
    int c = cn / n;
    int b = cn % n;
    int y0 = ty * 2 - t.z;
    int x0 = tx * 2 - t.w;
    __global const float* plane = x + (size_t)(c * n + b) * in.z * in.w * 4;
    float4 d[4][4];
    for (int i = 0; i < 4; ++i) {
        int iy = y0 + i;
        for (int j = 0; j < 4; ++j) {
            int ix = x0 + j;
            d[i][j] = (iy >= 0 && iy < in.z && ix >= 0 && ix < in.w) ? vload4(iy * in.w + ix, plane) : (float4)(0.0f);
        }
    }
    int tiles = n * t.x * t.y;
    int tile = (b * t.x + ty) * t.y + tx;
    for (int j = 0; j < 4; ++j) {
        float4 r0 = d[0][j] - d[2][j];
        float4 r1 = d[1][j] + d[2][j];
        float4 r2 = d[2][j] - d[1][j];
        float4 r3 = d[1][j] - d[3][j];
        d[0][j] = r0;
        d[1][j] = r1;
        d[2][j] = r2;
        d[3][j] = r3;
    }
    for (int i = 0; i < 4; ++i) {
        float4 e[4];
        e[0] = d[i][0] - d[i][2];
        e[1] = d[i][1] + d[i][2];
        e[2] = d[i][2] - d[i][1];
        e[3] = d[i][1] - d[i][3];
        for (int j = 0; j < 4; ++j) {
            v[((size_t)(i * 4 + j) * in.y + c) * tiles + tile] = e[j];
        }
    }
}

// dims = (tiles, IC4, OC4, 0); work item (4 tiles, output channel block, position).
__kernel void wino_gemm(__global const float4* v, __global const float4* u, __global float4* m, int4 dims) {
    int t4 = get_global_id(0) * 4;
    int oc = get_global_id(1);
    int pos = get_global_id(2);
    int tiles = dims.x;
    if (t4 >= tiles || oc >= dims.z || pos >= 16) {
        return;
    }
    int left = tiles - t4;
    float4 acc0 = (float4)(0.0f);
    float4 acc1 = (float4)(0.0f);
    float4 acc2 = (float4)(0.0f);
    float4 acc3 = (float4)(0.0f);
    __global const float4* up = u + ((size_t)(pos * dims.z + oc) * dims.y) * 4;
    for (int c = 0; c < dims.y; ++c) {
        float4 u0 = up[c * 4];
        float4 u1 = up[c * 4 + 1];
        float4 u2 = up[c * 4 + 2];
        float4 u3 = up[c * 4 + 3];
        __global const float4* vp = v + (size_t)(pos * dims.y + c) * tiles + t4;
        float4 v0 = vp[0];
        float4 v1 = left > 1 ? vp[1] : (float4)(0.0f);
        float4 v2 = left > 2 ? vp[2] : (float4)(0.0f);
        float4 v3 = left > 3 ? vp[3] : (float4)(0.0f);
        acc0 += v0.x * u0 + v0.y * u1 + v0.z * u2 + v0.w * u3;
        acc1 += v1.x * u0 + v1.y * u1 + v1.z * u2 + v1.w * u3;
        acc2 += v2.x * u0 + v2.y * u1 + v2.z * u2 + v2.w * u3;
        acc3 += v3.x * u0 + v3.y * u1 + v3.z * u2 + v3.w * u3;
    }
    __global float4* mp = m + (size_t)(pos * dims.z + oc) * tiles + t4;
    mp[0] = acc0;
    if (left > 1) {
        mp[1] = acc1;
    }
    if (left > 2) {
        mp[2] = acc2;
    }
    if (left > 3) {
        mp[3] = acc3;
    }
}

// out = (N, OC4, OH, OW), t = (TH, TW, 0, act); one work item per tile and output channel block.
__kernel void wino_out(__global const float4* m, __global const float4* bias, __global float* y, int4 out, int4 t) {
    int tx = get_global_id(0);
    int ty = get_global_id(1);
    int cn = get_global_id(2);
    int n = out.x;
    if (tx >= t.y || ty >= t.x || cn >= out.y * n) {
        return;
    }
    int c = cn / n;
    int b = cn % n;
    int tiles = n * t.x * t.y;
    int tile = (b * t.x + ty) * t.y + tx;
    float4 s[2][4];
    for (int j = 0; j < 4; ++j) {
        float4 m0 = m[((size_t)(0 * 4 + j) * out.y + c) * tiles + tile];
        float4 m1 = m[((size_t)(1 * 4 + j) * out.y + c) * tiles + tile];
        float4 m2 = m[((size_t)(2 * 4 + j) * out.y + c) * tiles + tile];
        float4 m3 = m[((size_t)(3 * 4 + j) * out.y + c) * tiles + tile];
        s[0][j] = m0 + m1 + m2;
        s[1][j] = m1 - m2 - m3;
    }
    float4 bv = bias[c];
    __global float* plane = y + (size_t)(c * n + b) * out.z * out.w * 4;
    for (int i = 0; i < 2; ++i) {
        int oy = ty * 2 + i;
        if (oy >= out.z) {
            continue;
        }
        float4 y0 = activate4(s[i][0] + s[i][1] + s[i][2] + bv, t.w);
        float4 y1 = activate4(s[i][1] - s[i][2] - s[i][3] + bv, t.w);
        int ox = tx * 2;
        vstore4(y0, oy * out.w + ox, plane);
        if (ox + 1 < out.w) {
            vstore4(y1, oy * out.w + ox + 1, plane);
        }
    }
}
