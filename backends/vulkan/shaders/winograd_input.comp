#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// variants: fp16a
// Winograd F(2x2, 3x3), step 1 of 3: input transform V = B^T d B of the 4x4 input patch of every output tile
// (patches overlap by 2; the patch of tile (ty, tx) starts at (2 ty - pad y, 2 tx - pad x), zero outside the image
// and in padded channel lanes). B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
// Out: V as [16 positions][IC4][tiles] vec4s, tiles numbered (n, ty, tx) over the batch.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TVEC4 x[]; };
layout(std430, binding = 1) writeonly buffer Tiles { TVEC4 v[]; };
layout(push_constant) uniform Params {
    ivec4 in_size;  // W, H, IC (real channels), IC4
    ivec4 tiles;    // TW, TH, tiles (N * TH * TW), work items (IC4 * tiles)
    ivec4 pad;      // pad x, pad y, unused, unused
} p;
#include "common.glsl"

void main() {
    int tiles = p.tiles.z;
    for (int i = int(gl_GlobalInvocationID.x); i < p.tiles.w; i += grid_stride()) {
        int tile = i % tiles;
        int ic4 = i / tiles;
        int tx = tile % p.tiles.x;
        int t = tile / p.tiles.x;
        int ty = t % p.tiles.y;
        int n = t / p.tiles.y;
        bvec4 valid = lessThan(ivec4(ic4 * 4) + ivec4(0, 1, 2, 3), ivec4(p.in_size.z));
        int plane = (n * p.in_size.w + ic4) * p.in_size.y;
        int x0 = tx * 2 - p.pad.x;
        int y0 = ty * 2 - p.pad.y;
        AVEC4 d[16];
        for (int r = 0; r < 4; ++r) {
            int iy = y0 + r;
            bool row_ok = iy >= 0 && iy < p.in_size.y;
            for (int c = 0; c < 4; ++c) {
                int ix = x0 + c;
                bool ok = row_ok && ix >= 0 && ix < p.in_size.x;
                d[r * 4 + c] = ok ? AVEC4(mix(vec4(0.0), vec4(x[(plane + iy) * p.in_size.x + ix]), valid)) : AVEC4(0.0);
            }
        }
        AVEC4 e[16];
        for (int c = 0; c < 4; ++c) {  // rows: B^T d
            e[c] = d[c] - d[8 + c];
            e[4 + c] = d[4 + c] + d[8 + c];
            e[8 + c] = d[8 + c] - d[4 + c];
            e[12 + c] = d[4 + c] - d[12 + c];
        }
        int stride = p.in_size.w * tiles;  // vec4s between positions
        int base = ic4 * tiles + tile;
        for (int r = 0; r < 4; ++r) {  // columns: (B^T d) B
            int q = r * 4;
            v[base + q * stride] = TVEC4(e[q] - e[q + 2]);
            v[base + (q + 1) * stride] = TVEC4(e[q + 1] + e[q + 2]);
            v[base + (q + 2) * stride] = TVEC4(e[q + 2] - e[q + 1]);
            v[base + (q + 3) * stride] = TVEC4(e[q + 1] - e[q + 3]);
        }
    }
}
