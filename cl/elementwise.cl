/* elementwise.cl: arithmetic one element at a time. Binary ops broadcast by
 * suffix: element i of the larger operand meets element i % size of the
 * smaller. Float Add/Sub/Mul/Div run in elementwise_chunks.cl; here are the
 * integer ones, Neg, AddN's running sum and DivGradB. Their rules (integer
 * ops wrap like the host's) are src/scalar_rules.h's, joined ahead of this file. */

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV };

__kernel void binary_int(int op, __global const int *a, int na, __global const int *b, int nb,
                         __global int *out, int n, __global int *fault, int slot)
{
    int i = get_global_id(0);
    if (i >= n)
        return;
    int x = a[i % na], y = b[i % nb];
    switch (op) {
    case OP_ADD: out[i] = fl_rule_int32_add(x, y); break;
    case OP_SUB: out[i] = fl_rule_int32_sub(x, y); break;
    case OP_MUL: out[i] = fl_rule_int32_mul(x, y); break;
    default:
        if (fl_rule_int32_div_fails(x, y)) {
            record_fault(fault, FAULT_INT_DIVIDE, slot, i, 0);
            out[i] = 0;
        } else {
            out[i] = x / y;
        }
        break;
    }
}

__kernel void neg_float(__global const float *x, __global float *out, int n)
{
    int i = get_global_id(0);
    if (i < n)
        out[i] = -x[i];
}

__kernel void neg_int(__global const int *x, __global int *out, int n)
{
    int i = get_global_id(0);
    if (i < n)
        out[i] = fl_rule_int32_neg(x[i]);
}

/* out += x: AddN adds its inputs one launch at a time, in the host's order. */
__kernel void accumulate_float(__global float *out, __global const float *x, int n)
{
    int i = get_global_id(0);
    if (i < n)
        out[i] += x[i];
}

__kernel void accumulate_int(__global int *out, __global const int *x, int n)
{
    int i = get_global_id(0);
    if (i < n)
        out[i] = fl_rule_int32_add(out[i], x[i]);
}

/* d(a / b)/db times dy: -dy * a / b^2, shaped like dy. */
__kernel void div_grad_b(__global const float *dy, __global const float *a, int na,
                         __global const float *b, int nb, __global float *out, int n)
{
    int i = get_global_id(0);
    if (i < n)
        out[i] = fl_rule_div_grad_b(dy[i], a[i % na], b[i % nb]);
}
