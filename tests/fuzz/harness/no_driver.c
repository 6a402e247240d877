/* no_driver.c: the two driver calls the runtime's error.c makes, answering as a driver that
 * knows no error names, so that the fuzz targets link the runtime's metadata code without
 * libcuda (and run on machines without the toolkit). Only the fuzz binaries link it. */
#include "tilert_internal.h"

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **str)
{
    (void)error;
    *str = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **str)
{
    (void)error;
    *str = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}
