/* dual_run.h: one kernel of a PTX module run both ways, on the GPU through libtilert and in the
 * interpreter on host copies of the same arguments (tests/gpu/interp_vs_gpu.c, print.c). The
 * module carries its source (meta_source.c); the arguments come from "NAME=VALUE ..." for every
 * size and scalar, and each tensor holds every element its extent reaches, filled by the caller's
 * function, the same on both sides. */
#ifndef DUAL_RUN_H
#define DUAL_RUN_H

#include <stdbool.h>

#include "gpu_util.h"
#include "interp.h"

typedef struct {
    char *ptx;
    Buf file, src, names;           /* the module's source block */
    Define defs[META_MAX_DEFINES];
    int ndefs;
    bool all_blocks;                /* compiled with --print-all-blocks */
    Arena *a;
    Program *p;
    Kernel *k;
    tilert_module *mod;
    tilert_kernel *gk;
    int n;                          /* arguments: interp_nargs */
    InterpArg *host;
    tilert_arg *dev;
} DualRun;

/* The value "NAME=VALUE" of values gives name, in *v; false when absent. */
bool value_of(const char *values, const char *name, double *v);

/* Loads the module at path and compiles the source it carries; its kernel `kernel` on the GPU and
 * in the interpreter. False after a FAIL line naming desc. */
bool dual_open(DualRun *r, tilert_context *ctx, const char *path, const char *kernel, const char *desc);

/* The arguments of both sides: sizes and scalars from values, tensors allocated, filled by
 * fill(type, user) one element at a time and uploaded. False after a FAIL line where a value is
 * missing (a failed allocation or copy has printed its own error). */
bool dual_args(DualRun *r, const char *values, Elem (*fill)(ElemType t, void *user), void *user, const char *desc);

void dual_close(DualRun *r);

#endif
