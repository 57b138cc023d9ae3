#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// Per-channel y = x * scale[c] + bias[c] on an NC4HW4 tensor, one invocation per texel (4 channels).
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TVEC4 x[]; };
layout(std430, binding = 1) readonly buffer Scale { vec4 scale[]; };
layout(std430, binding = 2) readonly buffer Bias { vec4 bias[]; };
layout(std430, binding = 3) writeonly buffer Out { TVEC4 y[]; };
layout(push_constant) uniform Params {
    int total;  // N * C4 * area
    int area;
    int c4;
} p;
#include "common.glsl"

void main() {
    for (int i = int(gl_GlobalInvocationID.x); i < p.total; i += grid_stride()) {
        int c = (i / p.area) % p.c4;
        y[i] = TVEC4(vec4(x[i]) * scale[c] + bias[c]);
    }
}
