#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// Cast between float and int32 over the physical elements (same layout in and out):
// mode 0 float -> int (truncation toward zero, as C), 1 int -> float, 2 int -> bool-as-int (x != 0).
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer InF { TFLOAT xf[]; };
layout(std430, binding = 1) readonly buffer InI { int xi[]; };
layout(std430, binding = 2) writeonly buffer OutF { TFLOAT yf[]; };
layout(std430, binding = 3) writeonly buffer OutI { int yi[]; };
layout(push_constant) uniform Params {
    int total;
    int mode;
} p;
#include "common.glsl"

void main() {
    for (int i = int(gl_GlobalInvocationID.x); i < p.total; i += grid_stride()) {
        if (p.mode == 0) {
            yi[i] = int(float(xf[i]));
        } else if (p.mode == 1) {
            yf[i] = TFLOAT(float(xi[i]));
        } else {
            yi[i] = xi[i] != 0 ? 1 : 0;
        }
    }
}
