// Elementwise unary ops over a buffer's physical elements; zero-padded NC4HW4 lanes stay zero.
// op: MNN UnaryOpOperation numbers, plus 100 = leaky ReLU (slope a), 101 = clamp to [a, b] (ReLU6),
// 102 = ELU (alpha a), 103 = Selu (alpha a, scale b).

// erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): one exp and a polynomial, so it vectorises on CPU
// devices where the library erf does not.
inline float fast_erf(float x) {
    float ax = fabs(x);
    float t = 1.0f / (1.0f + 0.3275911f * ax);
    float p = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    return copysign(1.0f - p * exp(-ax * ax), x);
}

inline float unary_op(float x, int op, float a, float b) {
    switch (op) {
        case 0: return fabs(x);
        case 1: return -x;
        case 2: return floor(x);
        case 3: return ceil(x);
        case 4: return x * x;
        case 5: return sqrt(x);
        case 6: return rsqrt(x);
        case 7: return exp(x);
        case 8: return log(x);
        case 9: return sin(x);
        case 10: return cos(x);
        case 11: return tan(x);
        case 12: return asin(x);
        case 13: return acos(x);
        case 14: return atan(x);
        case 15: return 1.0f / x;
        case 16: return log1p(x);
        case 17: return x > 0.0f ? x + log1p(exp(-x)) : log1p(exp(x));
        case 18: return acosh(x);
        case 19: return sinh(x);
        case 20: return asinh(x);
        case 21: return atanh(x);
        case 22: return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
        case 23: return rint(x);
        case 24: return cosh(x);
        case 25: return fast_erf(x);
        case 26: return erfc(x);
        case 28: return expm1(x);
        case 29: return 1.0f / (1.0f + exp(-x));
        case 30: return tanh(x);
        case 31: return x * clamp(x + 3.0f, 0.0f, 6.0f) / 6.0f;
        case 32: return 0.5f * x * (1.0f + tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
        case 33: return 0.5f * x * (1.0f + fast_erf(x * 0.7071067812f));
        case 34: return x / (1.0f + exp(-x));
        case 100: return x >= 0.0f ? x : x * a;
        case 101: return clamp(x, a, b);
        case 102: return x > 0.0f ? x : a * expm1(x);
        case 103: return b * (x > 0.0f ? x : a * expm1(x));
        default: return x;
    }
}

// Built with -DUNARY_OP=<code> the op is a compile-time constant: the switch folds away and PoCL can vectorise
// across work items; without it the `op` argument selects at run time.
__kernel void unary(__global const float* x, __global float* y, int4 desc, int op, float a, float b, int count) {
    int e = get_global_id(0);
    if (e >= count) {
        return;
    }
#ifdef UNARY_OP
    op = UNARY_OP;
#endif
    y[e] = phys_valid(e, desc) ? unary_op(x[e], op, a, b) : 0.0f;
}
