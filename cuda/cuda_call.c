/* cuda_call.c: the CUDA backend's error checkers: a CUDA runtime, cuBLAS or
 * cuDNN result (or a kernel launch's) turned into 0, or -1 after
 * fl_set_error in the library's own words. Every other file here calls
 * these; they call nothing back (cl/opencl_call.c is OpenCL's). */
#include "cuda_device.h"

int fl_cuda_check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    fl_set_error_code(FL_INTERNAL, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return -1;
}

int fl_cublas_check(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return 0;
    fl_set_error_code(FL_INTERNAL, "%s: %s", what, cublasGetStatusString(s));
    return -1;
}

int fl_cudnn_check(cudnnStatus_t s, const char *what)
{
    if (s == CUDNN_STATUS_SUCCESS)
        return 0;
    fl_set_error_code(FL_INTERNAL, "%s: %s", what, cudnnGetErrorString(s));
    return -1;
}

int fl_cuda_launched(cudaError_t e) { return fl_cuda_check(e, "launching a CUDA kernel"); }
