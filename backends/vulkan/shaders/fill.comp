#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// Fill a buffer range with a constant (the zero fill before a Raster that does not cover its output).
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) writeonly buffer Dst { TFLOAT dst[]; };
layout(push_constant) uniform Params {
    int count;
    float value;
} p;
#include "common.glsl"

void main() {
    for (int i = int(gl_GlobalInvocationID.x); i < p.count; i += grid_stride()) {
        dst[i] = TFLOAT(p.value);
    }
}
