// Storage and arithmetic types (included first, before any declaration).
// Default: fp32 tensors, fp32 math. With -DFP16 tensors are stored as 16-bit floats (GL_EXT_shader_16bit_storage:
// loads/stores convert); with -DFP16 -DFP16_MATH (the `_fp16a` variants of shaders written with the A* types)
// the A* types are 16-bit too (GL_EXT_shader_explicit_arithmetic_types_float16, device feature shaderFloat16),
// while ACC4 accumulators of long sums stay fp32. Weights (W*) stay fp32 in storage and convert on load.
// H(x) writes a literal or fp32 value in the arithmetic type (GLSL never narrows float to float16_t implicitly, and a
// plain float literal would promote the whole expression to fp32).
#ifdef FP16
#extension GL_EXT_shader_16bit_storage : require
#define TFLOAT float16_t
#define TVEC4 f16vec4
#else
#define TFLOAT float
#define TVEC4 vec4
#endif
#ifdef FP16_MATH
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define AFLOAT float16_t
#define AVEC4 f16vec4
#define AMAT4 f16mat4
#else
#define AFLOAT float
#define AVEC4 vec4
#define AMAT4 mat4
#endif
#define H(x) AFLOAT(x)
#define ACC4 vec4
#define WVEC4 vec4
