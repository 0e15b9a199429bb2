/* scalar_rules.h: the element-wise rules every backend computes (Cast to
 * int32, the activations and their gradients), each written once, float in,
 * float out. C includes it (src/host/), nvcc includes it (the cuda/ kernels),
 * and the OpenCL backend embeds it ahead of the cl/ kernels in the program it
 * builds (cl/opencl_device.c), so it travels inside the library. */
#ifndef FLOWLAB_SCALAR_RULES_H
#define FLOWLAB_SCALAR_RULES_H

/* FL_RULE: how each dialect declares a small function it may inline. */
#if defined(__OPENCL_VERSION__)
/* OpenCL C: plain functions of the one program (as common.cl's). Its int is
 * 32 bits, and its exp and tanh take and return float: the functions C and
 * CUDA call expf and tanhf. */
#define FL_RULE
typedef int int32_t;
#define INT32_MAX INT_MAX
#define INT32_MIN INT_MIN
#define expf exp
#define tanhf tanh
#elif defined(__CUDACC__)
#include <math.h>
#include <stdint.h>
#define FL_RULE __host__ __device__ static inline
#else
#include <math.h>
#include <stdint.h>
#define FL_RULE static inline
#endif

/* Cast float32 -> int32 truncates toward zero, as TensorFlow's does. C's
 * conversion is undefined out of range, so it is spelled out rather than
 * left to the hardware: NaN becomes 0, the rest saturate. */
FL_RULE int32_t fl_rule_float_to_int32(float f)
{
    if (isnan(f))
        return 0;
    if (f >= 2147483648.0f)
        return INT32_MAX;
    if (f < -2147483648.0f)
        return INT32_MIN;
    return (int32_t)f;
}

/* Relu: NaN and -0 give +0. */
FL_RULE float fl_rule_relu(float x) { return x > 0.0f ? x : 0.0f; }

/* ReluGrad(dy, x): dy where x > 0. */
FL_RULE float fl_rule_relu_grad(float dy, float x) { return x > 0.0f ? dy : 0.0f; }

FL_RULE float fl_rule_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* SigmoidGrad(dy, y), from the output y = sigmoid(x): dy y (1 - y). */
FL_RULE float fl_rule_sigmoid_grad(float dy, float y) { return dy * y * (1.0f - y); }

FL_RULE float fl_rule_tanh(float x) { return tanhf(x); }

/* TanhGrad(dy, y), from the output y = tanh(x): dy (1 - y^2). */
FL_RULE float fl_rule_tanh_grad(float dy, float y) { return dy * (1.0f - y * y); }

/* DivGradB: d(a / b)/db times dy, -dy a / b^2. */
FL_RULE float fl_rule_div_grad_b(float dy, float a, float b) { return -dy * a / (b * b); }

#endif
