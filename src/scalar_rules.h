/* scalar_rules.h: each element-wise rule (Cast, the activations and their
 * gradients, the optimizers' updates, int32 arithmetic) written once, for C
 * (src/host/), nvcc (cuda/) and OpenCL C (put ahead of cl/'s kernels). */
#ifndef FLOWLAB_SCALAR_RULES_H
#define FLOWLAB_SCALAR_RULES_H

/* FL_RULE: how each dialect declares a small function it may inline. */
#if defined(__OPENCL_VERSION__)
/* OpenCL C: plain functions of the one program (as common.cl's). Its int is
 * 32 bits, and its exp and tanh take and return float: the functions C and
 * CUDA call expf and tanhf. */
#define FL_RULE
typedef int int32_t;
typedef uint uint32_t;
#define INT32_MAX INT_MAX
#define INT32_MIN INT_MIN
#define expf exp
#define fabsf fabs
#define fmaxf fmax
#define log1pf log1p
#define sqrtf sqrt
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

/* Softplus: log(1 + e^x), written so that e^x never overflows: max(x, 0) + log(1 + e^-|x|). */
FL_RULE float fl_rule_softplus(float x) { return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))); }

/* SoftplusGrad(dy, x), from the input x: dy sigmoid(x). */
FL_RULE float fl_rule_softplus_grad(float dy, float x) { return dy / (1.0f + expf(-x)); }

/* DivGradB: d(a / b)/db times dy, -dy a / b^2. */
FL_RULE float fl_rule_div_grad_b(float dy, float a, float b) { return -dy * a / (b * b); }

/* int32 Add, Sub, Mul, Neg (and AddN's sum) wrap around instead of
 * overflowing, which C leaves undefined: computed as uint32, whose
 * arithmetic wraps, and read back as int32. */
FL_RULE int32_t fl_rule_int32_add(int32_t x, int32_t y) { return (int32_t)((uint32_t)x + (uint32_t)y); }
FL_RULE int32_t fl_rule_int32_sub(int32_t x, int32_t y) { return (int32_t)((uint32_t)x - (uint32_t)y); }
FL_RULE int32_t fl_rule_int32_mul(int32_t x, int32_t y) { return (int32_t)((uint32_t)x * (uint32_t)y); }
FL_RULE int32_t fl_rule_int32_neg(int32_t x) { return (int32_t)(0u - (uint32_t)x); }

/* int32 Div truncates toward zero (C's x / y), except where it has no value:
 * by zero, and INT32_MIN / -1. Each kernel reports those as its faults. */
FL_RULE int fl_rule_int32_div_fails(int32_t x, int32_t y) { return y == 0 || (x == INT32_MIN && y == -1); }

/* The optimizers' updates, TensorFlow's ApplyGradientDescent, ApplyMomentum
 * and ApplyAdam. Each expression keeps its shape: where a device contracts
 * a * b + c into one fused multiply-add (OpenCL C and CUDA may), the same
 * expression contracts the same way in every kernel that calls it. */

/* ApplyGradientDescent: var - lr grad. */
FL_RULE float fl_rule_gradient_descent(float var, float lr, float grad) { return var - lr * grad; }

/* ApplyMomentum's accumulator: momentum accum + grad. */
FL_RULE float fl_rule_momentum_accum(float accum, float momentum, float grad) { return momentum * accum + grad; }

/* ApplyMomentum's variable, from the new accum: var - lr accum, or with
 * Nesterov var - lr (grad + momentum accum). */
FL_RULE float fl_rule_momentum_var(float var, float lr, float momentum, float accum, float grad, int nesterov)
{
    return var - (nesterov ? lr * (grad + momentum * accum) : lr * accum);
}

/* ApplyAdam's step size from the beta powers (beta^t): lr sqrt(1 - beta2^t) / (1 - beta1^t). */
FL_RULE float fl_rule_adam_lr(float lr, float beta1_power, float beta2_power)
{
    return lr * sqrtf(1.0f - beta2_power) / (1.0f - beta1_power);
}

/* ApplyAdam's first moment, m = beta1 m + (1 - beta1) grad, and second, v =
 * beta2 v + (1 - beta2) grad^2. */
FL_RULE float fl_rule_adam_m(float m, float beta1, float grad) { return beta1 * m + (1.0f - beta1) * grad; }
FL_RULE float fl_rule_adam_v(float v, float beta2, float grad) { return beta2 * v + (1.0f - beta2) * grad * grad; }

/* ApplyAdam's variable, from the new moments: var - lr_t m / (sqrt(v) + epsilon). */
FL_RULE float fl_rule_adam_var(float var, float lr_t, float m, float v, float epsilon)
{
    return var - lr_t * m / (sqrtf(v) + epsilon);
}

#endif
