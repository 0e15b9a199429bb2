/* common.cl: what the other kernel files share; it comes first when the
 * files are joined into one program. A kernel that meets bad input (a label
 * out of range, an integer division by zero) records a fault for the host. */

enum { FAULT_NONE, FAULT_LABEL, FAULT_INT_DIVIDE }; /* as in cl/opencl_device.h */

/* Keeps the first fault since the host last looked: code, op slot, a, b. */
void record_fault(__global int *fault, int code, int slot, int a, int b)
{
    if (atomic_cmpxchg(&fault[0], FAULT_NONE, code) != FAULT_NONE)
        return;
    fault[1] = slot;
    fault[2] = a;
    fault[3] = b;
}
