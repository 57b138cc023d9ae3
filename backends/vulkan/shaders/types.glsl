// Storage types of tensor buffers (included first, before any declaration). With -DFP16 tensors are stored as
// 16-bit floats (GL_EXT_shader_16bit_storage: loads/stores convert, arithmetic stays fp32); weights stay fp32.
#ifdef FP16
#extension GL_EXT_shader_16bit_storage : require
#define TFLOAT float16_t
#define TVEC4 f16vec4
#else
#define TFLOAT float
#define TVEC4 vec4
#endif
