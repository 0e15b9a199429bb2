/* cuda_fault.c: the fault records of the CUDA backend. A kernel that finds
 * bad input (a label out of range, an integer division by zero) records it
 * in its op's slot; wait() reports the first one, naming the op. */
#include <stdio.h>

#include "cuda_device.h"

fl_cuda_fault *fl_cuda_fault_slot(fl_cuda_device *d, const fl_node *n)
{
    int slot = d->nfault_ops < FL_CUDA_FAULT_SLOTS ? d->nfault_ops++ : FL_CUDA_FAULT_SLOTS - 1;
    snprintf(d->fault_ops[slot], sizeof d->fault_ops[slot], "%s", n->name);
    return &d->fault[slot];
}

/* The first fault in stream order, as the host kernel would have said it,
 * prefixed by the op's name. The records are cleared for the next step. */
static int report_fault(fl_cuda_device *d, int nslots)
{
    for (int i = 0; i < nslots; i++) {
        const fl_cuda_fault *f = &d->fault_host[i];
        if (f->code == FL_CUDA_FAULT_LABEL)
            fl_set_error_code(FL_INVALID_ARGUMENT, "%s: label %d in row %lld is outside [0, %d)", d->fault_ops[i],
                              f->label, f->index, f->classes);
        else if (f->code == FL_CUDA_FAULT_INT_DIV)
            fl_set_error_code(FL_INVALID_ARGUMENT, "%s: integer division by zero at element %lld", d->fault_ops[i],
                              f->index);
        if (f->code != FL_CUDA_FAULT_NONE)
            break;
    }
    cudaMemsetAsync(d->fault, 0, nslots * sizeof *d->fault, d->stream);
    cudaStreamSynchronize(d->stream);
    return -1;
}

static bool any_fault(const fl_cuda_fault *f, int nslots)
{
    for (int i = 0; i < nslots; i++)
        if (f[i].code != FL_CUDA_FAULT_NONE)
            return true;
    return false;
}

int fl_cuda_fault_report(fl_cuda_device *d, int nslots)
{
    return any_fault(d->fault_host, nslots) ? report_fault(d, nslots) : 0;
}
