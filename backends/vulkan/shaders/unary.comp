#version 450
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
// variants: fp16a
// Elementwise unary op over the physical buffer (same layout in and out). Op codes (specialization constant 1):
// MNN's UnaryOpOperation,
// plus 100 = leaky ReLU (param0 = slope), 101 = clamp (ReLU6: param0 = min, param1 = max) and
// 102 = ELU / Selu (param0 = alpha, param1 = scale).
// For NC4HW4 the padded channels are written as zero so that later reductions over vec4 stay finite.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { TFLOAT x_in[]; };
layout(std430, binding = 1) writeonly buffer Out { TFLOAT y_out[]; };
layout(constant_id = 1) const int OP = 0;  // specialization constant: only this op's branch is compiled
layout(push_constant) uniform Params {
    int total;    // physical element count
    int c;        // channels when NC4HW4, else 0
    int area;
    float param0;
    float param1;
} p;
#include "common.glsl"

float erf_approx(float x) {
    // Abramowitz-Stegun 7.1.26 refined: max error ~1.2e-7 after the polynomial below.
    float t = 1.0 / (1.0 + 0.5 * abs(x));
    float y = 1.0 - t * exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
        + t * (-0.82215223 + t * 0.17087277)))))))));
    return x >= 0.0 ? y : -y;
}

float apply(int op, float x) {
    if (op == 0) return abs(x);
    if (op == 1) return -x;
    if (op == 2) return floor(x);
    if (op == 3) return ceil(x);
    if (op == 4) return x * x;
    if (op == 5) return sqrt(x);
    if (op == 6) return inversesqrt(x);
    if (op == 7) return exp(x);
    if (op == 8) return log(x);
    if (op == 9) return sin(x);
    if (op == 10) return cos(x);
    if (op == 11) return tan(x);
    if (op == 12) return atan(x, sqrt(max(1.0 - x * x, 0.0)));  // asin/acos via atan: lavapipe's are ~4e-4 off
    if (op == 13) return atan(sqrt(max(1.0 - x * x, 0.0)), x);
    if (op == 14) return atan(x);
    if (op == 15) return 1.0 / x;
    if (op == 16) return log(1.0 + x);
    if (op == 17) return x > 0.0 ? x + log(1.0 + exp(-x)) : log(1.0 + exp(x));
    if (op == 18) return acosh(x);
    if (op == 19) return sinh(x);
    if (op == 20) return asinh(x);
    if (op == 21) return atanh(x);
    if (op == 22) return sign(x);
    if (op == 23) return roundEven(x);
    if (op == 24) return cosh(x);
    if (op == 25) return erf_approx(x);
    if (op == 26) return 1.0 - erf_approx(x);
    if (op == 28) return exp(x) - 1.0;
    if (op == 29) return 1.0 / (1.0 + exp(-x));
    if (op == 30) return tanh(clamp(x, -15.0, 15.0));
    if (op == 31) return x * clamp(x + 3.0, 0.0, 6.0) / 6.0;
    if (op == 32) return 0.5 * x * (1.0 + tanh(clamp(0.7978845608 * (x + 0.044715 * x * x * x), -15.0, 15.0)));
    if (op == 33) return 0.5 * x * (1.0 + erf_approx(x * 0.7071067812));
    if (op == 34) return x / (1.0 + exp(-x));
    if (op == 100) return x > 0.0 ? x : x * p.param0;
    if (op == 101) return clamp(x, p.param0, p.param1);
    if (op == 102) return p.param1 * (x > 0.0 ? x : p.param0 * (exp(min(x, 0.0)) - 1.0));
    return x;
}

AFLOAT apply_a(int op, AFLOAT x) {  // activations in the arithmetic type (float16 in `_fp16a`); the rest in fp32
    if (op == 0) return abs(x);
    if (op == 1) return -x;
    if (op == 4) return x * x;
    if (op == 29) return H(1.0) / (H(1.0) + exp(-x));
    if (op == 30) return tanh(clamp(x, H(-15.0), H(15.0)));
    if (op == 31) return x * clamp(x + H(3.0), H(0.0), H(6.0)) / H(6.0);
    if (op == 32) return H(0.5) * x * (H(1.0) + tanh(clamp(H(0.7978845608) * (x + H(0.044715) * x * x * x),
                                                          H(-15.0), H(15.0))));
    if (op == 34) return x / (H(1.0) + exp(-x));
    if (op == 100) return x > H(0.0) ? x : x * H(p.param0);
    if (op == 101) return clamp(x, H(p.param0), H(p.param1));
    return AFLOAT(apply(op, float(x)));
}

void main() {
    for (int i = int(gl_GlobalInvocationID.x); i < p.total; i += grid_stride()) {
        float v = float(apply_a(OP, AFLOAT(x_in[i])));
        if (p.c > 0) {
            int ch = ((i >> 2) / p.area) % ((p.c + 3) / 4) * 4 + (i & 3);
            if (ch >= p.c) {
                v = 0.0;
            }
        }
        y_out[i] = TFLOAT(v);
    }
}
