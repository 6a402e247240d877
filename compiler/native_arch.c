/* native_arch.c: which architecture `--arch=native` means, asked of the CUDA driver of this machine.
 *
 * tilec does not link the driver (a compiler runs where no GPU is): libcuda.so.1 is opened at run
 * time, and only for this question. Device 0 answers with its compute capability, which becomes
 * the target whose fast paths it has: 9.0 is sm_90a (wgmma, TMA), 8.9 sm_89, 8.6 and 8.7 sm_86,
 * 8.0 sm_80. A GPU newer than the table (10.x, 12.x) gets sm_90, whose PTX the driver compiles for
 * it (sm_90a code runs only on 9.0); one older than sm_80 is not a target tilec has. Without a
 * driver or a GPU the answer is NULL and `why` says what was missing; the caller falls back to
 * the portable default. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "tilec.h"

enum { ATTR_CC_MAJOR = 75, ATTR_CC_MINOR = 76 };   /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_* */

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_attr_fn)(int *, int, int);

/* dlsym's object pointer as a function pointer: copied, which ISO C allows, not cast */
static bool sym(void *lib, const char *name, void *fn, size_t size)
{
    void *p = dlsym(lib, name);
    if (!p)
        return false;
    memcpy(fn, &p, size);
    return true;
}

const char *native_arch(char *why, size_t why_size)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, why_size, "no CUDA driver (libcuda.so.1)");
        return NULL;
    }
    cu_init_fn init;
    cu_count_fn count;
    cu_get_fn get;
    cu_attr_fn attr;
    int n = 0, dev = 0, major = 0, minor = 0;
    const char *arch = NULL;
    if (!sym(lib, "cuInit", &init, sizeof init) || !sym(lib, "cuDeviceGetCount", &count, sizeof count) ||
        !sym(lib, "cuDeviceGet", &get, sizeof get) || !sym(lib, "cuDeviceGetAttribute", &attr, sizeof attr))
        snprintf(why, why_size, "the CUDA driver lacks the device queries");
    else if (init(0) != 0 || count(&n) != 0 || n < 1)
        snprintf(why, why_size, "no CUDA GPU");
    else if (get(&dev, 0) != 0 || attr(&major, ATTR_CC_MAJOR, dev) != 0 || attr(&minor, ATTR_CC_MINOR, dev) != 0)
        snprintf(why, why_size, "the GPU's compute capability could not be read");
    else if (major >= 10)
        arch = "sm_90";
    else if (major == 9)
        arch = "sm_90a";
    else if (major == 8)
        arch = minor >= 9 ? "sm_89" : minor >= 6 ? "sm_86" : "sm_80";
    else
        snprintf(why, why_size, "the GPU is sm_%d%d, older than sm_80", major, minor);
    dlclose(lib);
    return arch;
}
