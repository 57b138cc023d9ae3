#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// variants: fp16a
// Elementwise binary op with numpy broadcasting, in the logical index space (rank <= 4 after dim merging).
// Op codes (specialization constant 1) are MNN's BinaryOpOperation values; zero strides broadcast an input.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer A { TFLOAT a[]; };
layout(std430, binding = 1) readonly buffer B { TFLOAT b[]; };
layout(std430, binding = 2) writeonly buffer Out { TFLOAT o[]; };
layout(constant_id = 1) const int OP = 0;  // specialization constant: only this op's branch is compiled
layout(constant_id = 2) const int RANK = 4;  // dims actually used (the last RANK of `dims`)
layout(push_constant) uniform Params {
    ivec4 dims;       // output dims (innermost last)
    ivec4 a_stride;   // logical element strides of A per output dim
    ivec4 b_stride;
    ivec4 fmt_ab;     // A C, A area, B C, B area
    ivec4 fmt_o;      // out C, out area, total, unused
    float act_min;    // fused clamp of the result
    float act_max;
} p;
#include "common.glsl"

// Floored quotient and remainder of x / y, exact for float inputs like numpy's floor_divide / mod: the quotient
// from an (inexact) division is corrected with the fused remainder.
vec2 floor_divmod(float x, float y) {
    float q = floor(x / y);
    // r = x - q*y without rounding error (drivers may not fuse fma): Veltkamp split + Dekker's two-product,
    // `precise` forbids reassociation and contraction.
    precise float prod = q * y;
    precise float cq = 4097.0 * q;
    precise float qh = cq - (cq - q);
    precise float ql = q - qh;
    precise float cy = 4097.0 * y;
    precise float yh = cy - (cy - y);
    precise float yl = y - yh;
    precise float err = ((qh * yh - prod) + qh * yl + ql * yh) + ql * yl;
    precise float r = (x - prod) - err;
    if (y > 0.0 ? r >= y : r <= y) {
        q += 1.0;
        r -= y;
    } else if (y > 0.0 ? r < 0.0 : r > 0.0) {
        q -= 1.0;
        r += y;
    }
    return vec2(q, r);
}

float apply(int op, float x, float y) {
    if (op == 0) return x + y;
    if (op == 1) return x - y;
    if (op == 2) return x * y;
    if (op == 3 || op == 7) return x / y;
    if (op == 4 || op == 9) return max(x, y);
    if (op == 5 || op == 8) return min(x, y);
    if (op == 6) {  // GLSL pow is undefined for x < 0: integer exponents keep the sign, as numpy does
        float r = pow(abs(x), y);
        if (x < 0.0) {
            r = y == floor(y) ? (mod(y, 2.0) == 1.0 ? -r : r) : (0.0 / 0.0);
        }
        return r;
    }
    if (op == 10) return x > y ? 1.0 : 0.0;
    if (op == 11) return x >= y ? 1.0 : 0.0;
    if (op == 12) return x < y ? 1.0 : 0.0;
    if (op == 13) return floor_divmod(x, y).x;
    if (op == 14) return (x - y) * (x - y);
    if (op == 15) return x == y ? 1.0 : 0.0;
    if (op == 16) return x <= y ? 1.0 : 0.0;
    if (op == 17) return floor_divmod(x, y).y;
    if (op == 20) return atan(x, y);
    if (op == 22) return x != y ? 1.0 : 0.0;
    if (op == 29) return x * y / (1.0 + exp(-y));
    return 0.0;
}

AFLOAT apply_a(int op, AFLOAT x, AFLOAT y) {  // arithmetic ops in the arithmetic type (float16 in `_fp16a`)
    if (op == 0) return x + y;
    if (op == 1) return x - y;
    if (op == 2) return x * y;
    if (op == 3 || op == 7) return x / y;
    if (op == 4 || op == 9) return max(x, y);
    if (op == 5 || op == 8) return min(x, y);
    if (op == 14) return (x - y) * (x - y);
    return AFLOAT(apply(op, float(x), float(y)));  // pow, floored division, atan2, comparisons...: fp32
}

void main() {
    int total = p.fmt_o.z;
    for (int i = int(gl_GlobalInvocationID.x); i < total; i += grid_stride()) {
        int r = i;
        int ia = 0;
        int ib = 0;
        if (RANK == 1) {  // no broadcasting: plain strides, no index divisions (slow on CPU drivers)
            ia = i * p.a_stride.w;
            ib = i * p.b_stride.w;
        } else {
            for (int d = 3; d >= 4 - RANK; --d) {
                int q = r / p.dims[d];
                int k = r - q * p.dims[d];
                ia += k * p.a_stride[d];
                ib += k * p.b_stride[d];
                r = q;
            }
        }
        AFLOAT x = AFLOAT(a[phys_index(ia, p.fmt_ab.x, p.fmt_ab.y)]);
        AFLOAT y = AFLOAT(b[phys_index(ib, p.fmt_ab.z, p.fmt_ab.w)]);
        o[phys_index(i, p.fmt_o.x, p.fmt_o.y)] = TFLOAT(clamp(float(apply_a(OP, x, y)), p.act_min, p.act_max));
    }
}
