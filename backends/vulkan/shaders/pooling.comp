#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// Max / average pooling on NC4HW4 tensors, one invocation per output texel.
// Average: divides by the window clipped to the padded input (include_pad = 1) or to the input (include_pad = 0).
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TVEC4 x[]; };
layout(std430, binding = 1) writeonly buffer Out { TVEC4 y[]; };
layout(push_constant) uniform Params {
    ivec4 in_size;   // W, H, planes (N * C4), unused
    ivec4 out_size;  // W, H, total texels, mode (0 max, 1 average)
    ivec4 kernel;    // KW, KH, stride x, stride y
    ivec4 pad;       // pad x, pad y, include_pad, unused
} p;
#include "common.glsl"

void main() {
    for (int i = int(gl_GlobalInvocationID.x); i < p.out_size.z; i += grid_stride()) {
        int ow = i % p.out_size.x;
        int t = i / p.out_size.x;
        int oh = t % p.out_size.y;
        int plane = t / p.out_size.y;
        int x0 = ow * p.kernel.z - p.pad.x;
        int y0 = oh * p.kernel.w - p.pad.y;
        int x1 = min(x0 + p.kernel.x, p.in_size.x + p.pad.x);
        int y1 = min(y0 + p.kernel.y, p.in_size.y + p.pad.y);
        int padded_count = (x1 - x0) * (y1 - y0);
        x0 = max(x0, 0);
        y0 = max(y0, 0);
        x1 = min(x1, p.in_size.x);
        y1 = min(y1, p.in_size.y);
        vec4 acc = p.out_size.w == 0 ? vec4(-3.402823e38) : vec4(0.0);
        for (int iy = y0; iy < y1; ++iy) {
            for (int ix = x0; ix < x1; ++ix) {
                vec4 v = vec4(x[(plane * p.in_size.y + iy) * p.in_size.x + ix]);
                acc = p.out_size.w == 0 ? max(acc, v) : acc + v;
            }
        }
        if (p.out_size.w != 0) {
            int count = p.pad.z != 0 ? padded_count : (x1 - x0) * (y1 - y0);
            acc /= float(max(count, 1));
        }
        y[i] = TVEC4(acc);
    }
}
