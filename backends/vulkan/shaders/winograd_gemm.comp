#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// variants: fp16a
// Winograd F(2x2, 3x3), step 2 of 3: 16 independent GEMMs, M[pos] = U[pos] x V[pos] over input channel blocks.
// U (weights, transformed once: G g G^T) is [16][OC4][IC4][4] vec4s: entry k of a block holds the 4 output
// channels' weights for input lane k (one mat4 per block pair). V is [16][IC4][tiles], M is [16][OC4][tiles].
// One invocation computes one output channel block of 4 neighbouring tiles at one position.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Tiles { TVEC4 v[]; };
layout(std430, binding = 1) readonly buffer Weight { WVEC4 w[]; };
layout(std430, binding = 2) writeonly buffer Products { TVEC4 m[]; };
layout(push_constant) uniform Params {
    ivec4 size;  // IC4, OC4, tiles, work items (16 * OC4 * ceil(tiles / 4))
} p;
#include "common.glsl"

void main() {
    int ic4_n = p.size.x;
    int oc4_n = p.size.y;
    int tiles = p.size.z;
    int quads = (tiles + 3) / 4;
    for (int i = int(gl_GlobalInvocationID.x); i < p.size.w; i += grid_stride()) {
        int t0 = (i % quads) * 4;
        int t = i / quads;
        int oc4 = t % oc4_n;
        int pos = t / oc4_n;
        int t1 = min(t0 + 1, tiles - 1);
        int t2 = min(t0 + 2, tiles - 1);
        int t3 = min(t0 + 3, tiles - 1);
        ACC4 a0 = ACC4(0.0);
        ACC4 a1 = a0;
        ACC4 a2 = a0;
        ACC4 a3 = a0;
        int wk = ((pos * oc4_n + oc4) * ic4_n) * 4;
        int vrow = pos * ic4_n * tiles;
        for (int ic4 = 0; ic4 < ic4_n; ++ic4) {
            int k = wk + ic4 * 4;
            AMAT4 u = AMAT4(w[k], w[k + 1], w[k + 2], w[k + 3]);
            int r = vrow + ic4 * tiles;
            a0 += ACC4(u * AVEC4(v[r + t0]));
            a1 += ACC4(u * AVEC4(v[r + t1]));
            a2 += ACC4(u * AVEC4(v[r + t2]));
            a3 += ACC4(u * AVEC4(v[r + t3]));
        }
        int o = (pos * oc4_n + oc4) * tiles;
        m[o + t0] = TVEC4(a0);
        if (t0 + 1 < tiles) m[o + t0 + 1] = TVEC4(a1);
        if (t0 + 2 < tiles) m[o + t0 + 2] = TVEC4(a2);
        if (t0 + 3 < tiles) m[o + t0 + 3] = TVEC4(a3);
    }
}
