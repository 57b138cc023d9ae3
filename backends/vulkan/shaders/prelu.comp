#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// PReLU on an NC4HW4 tensor: y = x > 0 ? x : slope[c] * x, one invocation per texel (4 channels).
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TVEC4 x[]; };
layout(std430, binding = 1) readonly buffer Slope { vec4 slope[]; };
layout(std430, binding = 2) writeonly buffer Out { TVEC4 y[]; };
layout(push_constant) uniform Params {
    int total;  // N * C4 * area
    int area;
    int c4;
} p;
#include "common.glsl"

void main() {
    for (int i = int(gl_GlobalInvocationID.x); i < p.total; i += grid_stride()) {
        vec4 v = vec4(x[i]);
        y[i] = TVEC4(mix(v * slope[(i / p.area) % p.c4], v, greaterThan(v, vec4(0.0))));
    }
}
