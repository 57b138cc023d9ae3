#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// variants: fp16a
// Winograd F(2x2, 3x3), step 3 of 3: output transform Y = A^T M A (A^T = [1 1 1 0; 0 1 -1 -1]) of every tile,
// plus bias, clamped to [act_min, act_max] (ReLU/ReLU6), stored to the NC4HW4 output (edge tiles store only the
// texels inside it). M is [16][OC4][tiles] vec4s, bias [OC4] vec4s.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Products { TVEC4 m[]; };
layout(std430, binding = 1) readonly buffer Bias { vec4 bias[]; };
layout(std430, binding = 2) writeonly buffer Out { TVEC4 y[]; };
layout(push_constant) uniform Params {
    ivec4 out_size;  // W, H, OC4, work items (OC4 * tiles)
    ivec4 tiles;     // TW, TH, tiles (N * TH * TW), unused
    float act_min;
    float act_max;
} p;
#include "common.glsl"

void store(int index, AVEC4 v, vec4 b) {
    y[index] = TVEC4(clamp(vec4(v) + b, vec4(p.act_min), vec4(p.act_max)));
}

void main() {
    int tiles = p.tiles.z;
    int oc4_n = p.out_size.z;
    int stride = oc4_n * tiles;  // vec4s between positions
    for (int i = int(gl_GlobalInvocationID.x); i < p.out_size.w; i += grid_stride()) {
        int tile = i % tiles;
        int oc4 = i / tiles;
        int tx = tile % p.tiles.x;
        int t = tile / p.tiles.x;
        int ty = t % p.tiles.y;
        int n = t / p.tiles.y;
        int base = oc4 * tiles + tile;
        AVEC4 s[8];
        for (int c = 0; c < 4; ++c) {  // rows: A^T M
            AVEC4 m0 = AVEC4(m[base + c * stride]);
            AVEC4 m1 = AVEC4(m[base + (4 + c) * stride]);
            AVEC4 m2 = AVEC4(m[base + (8 + c) * stride]);
            AVEC4 m3 = AVEC4(m[base + (12 + c) * stride]);
            s[c] = m0 + m1 + m2;
            s[4 + c] = m1 - m2 - m3;
        }
        vec4 b = bias[oc4];
        int ow = p.out_size.x;
        int oh = p.out_size.y;
        int ox = tx * 2;
        int oy = ty * 2;
        int row = ((n * oc4_n + oc4) * oh + oy) * ow + ox;
        for (int r = 0; r < 2; ++r) {  // columns: (A^T M) A
            if (oy + r >= oh) {
                break;
            }
            int q = r * 4;
            store(row + r * ow, s[q] + s[q + 1] + s[q + 2], b);
            if (ox + 1 < ow) {
                store(row + r * ow + 1, s[q + 1] - s[q + 2] - s[q + 3], b);
            }
        }
    }
}
