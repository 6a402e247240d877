/* error.c: status names and the per-thread error message.
 *
 * The library never prints: each failure leaves its text in a thread-local buffer that
 * tilert_last_error() returns, so concurrent callers never see each other's messages. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tilert_internal.h"

enum { MSG_MAX = 8192 };   /* room for a JIT error log */

static _Thread_local char message[MSG_MAX];

const char *tilert_status_name(tilert_status s)
{
    switch (s) {
    case TILERT_OK: return "TILERT_OK";
    case TILERT_ERR_CUDA: return "TILERT_ERR_CUDA";
    case TILERT_ERR_JIT: return "TILERT_ERR_JIT";
    case TILERT_ERR_NOT_FOUND: return "TILERT_ERR_NOT_FOUND";
    case TILERT_ERR_BAD_META: return "TILERT_ERR_BAD_META";
    case TILERT_ERR_BAD_ARGS: return "TILERT_ERR_BAD_ARGS";
    case TILERT_ERR_ASSUME: return "TILERT_ERR_ASSUME";
    case TILERT_ERR_NO_MEMORY: return "TILERT_ERR_NO_MEMORY";
    case TILERT_ERR_NO_DEVICE: return "TILERT_ERR_NO_DEVICE";
    case TILERT_ERR_ARCH: return "TILERT_ERR_ARCH";
    }
    return "TILERT_ERR_UNKNOWN";
}

const char *tilert_last_error(void)
{
    return message;
}

tilert_status rt_error(tilert_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return s;
}

tilert_status rt_cuda_error_as(tilert_status s, const char *what, CUresult r)
{
    const char *name = NULL, *desc = NULL;
    /* Both lookups fail for codes this driver does not know, and always on the toolkit's stub
     * library: then name the codes that mean "no usable driver" ourselves. */
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) {
        switch (r) {
        case CUDA_ERROR_STUB_LIBRARY: name = "CUDA_ERROR_STUB_LIBRARY"; break;
        case CUDA_ERROR_NO_DEVICE: name = "CUDA_ERROR_NO_DEVICE"; break;
        default: name = NULL; break;
        }
    }
    if (cuGetErrorString(r, &desc) != CUDA_SUCCESS || !desc)
        desc = r == CUDA_ERROR_STUB_LIBRARY ? "the CUDA driver stub library, not a real driver"
                                            : "no description";
    if (!name)
        return rt_error(s, "%s: CUresult %d (%s)", what, (int)r, desc);
    return rt_error(s, "%s: %s (%s)", what, name, desc);
}

tilert_status rt_cuda_error(const char *what, CUresult r)
{
    return rt_cuda_error_as(TILERT_ERR_CUDA, what, r);
}
