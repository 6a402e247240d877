/* tilert_internal.h: libtilert's internal header, a section per source file.
 *
 * Everything the CPU can do on its own (metadata parsing, RPN evaluation, argument validation,
 * assume checking, grid computation, parameter packing) is a plain function here so the unit
 * tests can call it without a GPU. Not installed.
 */
#ifndef TILERT_INTERNAL_H
#define TILERT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "tilert.h"

/* ---------------------------------------------------------------- error.c */

/* Sets this thread's message (printf-style) and returns s, so failures read
 *   return rt_error(TILERT_ERR_BAD_ARGS, "...", ...);                        */
tilert_status rt_error(tilert_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* For a failed driver call: "what: CUDA_ERROR_NAME (description)"; returns TILERT_ERR_CUDA. */
tilert_status rt_cuda_error(const char *what, CUresult r);
/* The same text with another status (no device at init, no binary for this GPU). */
tilert_status rt_cuda_error_as(tilert_status s, const char *what, CUresult r);

/* ---------------------------------------------------------------- meta.c: the //@tilec block */

typedef enum { RT_ARG_PTR, RT_ARG_SIZE, RT_ARG_SCALAR } rt_arg_class;

/* Element/scalar types as spelled in the metadata ("f32", "i32", ...). */
typedef enum { RT_BOOL, RT_I32, RT_U32, RT_I64, RT_F16, RT_BF16, RT_F32, RT_TYPE_COUNT } rt_type;

enum { RT_MAX_GRID = 3, RT_MAX_NAME = 256, RT_MAX_ARGS = 64, RT_MAX_RPN = 64 };

/* A parsed RPN expression: tokens as a small program. */
typedef enum {
    RPN_INT, RPN_ARG,
    RPN_ADD, RPN_SUB, RPN_MUL, RPN_DIV, RPN_MOD, RPN_CDIV, RPN_MIN, RPN_MAX,
    RPN_EQ, RPN_NE, RPN_LT, RPN_LE, RPN_GT, RPN_GE, RPN_AND, RPN_OR,
    RPN_NOT, RPN_NEG
} rpn_op;
typedef struct { rpn_op op; int64_t v; } rpn_tok;     /* v: RPN_INT value, RPN_ARG index */
typedef struct { rpn_tok tok[RT_MAX_RPN]; int n; } rpn_expr;

typedef struct {
    char name[RT_MAX_NAME];
    rt_arg_class cls;
    rt_type type;
    int align;             /* pointers: required byte alignment */
} rt_arg_meta;

typedef struct {
    char name[RT_MAX_NAME];
    int threads, smem_bytes, regs;
    rt_arg_meta *args; int nargs;
    rpn_expr grid[RT_MAX_GRID]; int ngrid;
    rpn_expr *assume; char **assume_text; int nassumes;
} rt_kernel_meta;

typedef struct {
    rt_kernel_meta *k; int nk;
} rt_meta;

/* Parses every //@ line of text (PTX or a metadata string). Other lines are ignored. On failure
 * returns TILERT_ERR_BAD_META with the offending line in the message and leaves *out empty.
 * Text without any //@kernel group is an error too: a module without metadata cannot launch. */
tilert_status rt_meta_parse(const char *text, rt_meta *out);
void rt_meta_free(rt_meta *m);
/* Parses one RPN expression ("a0 127 + 128 /"); nargs bounds the aN tokens. */
tilert_status rt_rpn_parse(const char *text, int nargs, rpn_expr *out);
const char *rt_type_name(rt_type t);

/* ---------------------------------------------------------------- rpn.c */

/* Evaluates e with the argument values vals[] (sizes and integer scalars; others 0). Division or
 * remainder by zero, int64 overflow and stack underflow/leftovers are errors
 * (TILERT_ERR_BAD_ARGS for arithmetic on these arguments, TILERT_ERR_BAD_META for a malformed
 * expression), with a message naming the problem. */
tilert_status rt_rpn_eval(const rpn_expr *e, const int64_t *vals, int nvals, int64_t *out);

/* ---------------------------------------------------------------- args.c: launch preparation */

/* Everything about one launch that does not need a GPU. */
typedef struct {
    unsigned grid[3];
    bool empty;            /* a grid dimension is 0: launch nothing */
    /* Parameter storage laid out per the ABI, and one pointer per argument into it. */
    _Alignas(8) unsigned char store[RT_MAX_ARGS * 8];
    void *params[RT_MAX_ARGS];
} rt_launch_plan;

/* Checks count, kinds, pointers (non-null, aligned) and sizes (>= 0). */
tilert_status rt_check_args(const rt_kernel_meta *k, const tilert_arg *args, int nargs);
/* Integer values of the arguments for RPN evaluation (pointers and floats give 0). */
void rt_arg_values(const rt_kernel_meta *k, const tilert_arg *args, int nargs, int64_t *vals);
/* Evaluates every assume fact; the first false one -> TILERT_ERR_ASSUME naming its text and the
 * values of the arguments it reads. Call after rt_check_args. */
tilert_status rt_check_assumes(const rt_kernel_meta *k, const tilert_arg *args, int nargs);
/* Grid from the grid expressions; missing dimensions are 1. */
tilert_status rt_compute_grid(const rt_kernel_meta *k, const tilert_arg *args, int nargs,
                              unsigned grid[3], bool *empty);
/* All of the above, then the packed parameters. */
tilert_status rt_plan_launch(const rt_kernel_meta *k, const tilert_arg *args, int nargs,
                             rt_launch_plan *plan);

/* ---------------------------------------------------------------- context.c / module.c */

struct tilert_context {
    CUdevice dev;
    CUcontext ctx;         /* the retained primary context */
    int arch;              /* 10 * major + minor */
};

struct tilert_kernel {
    tilert_module *mod;
    const rt_kernel_meta *meta;
    CUfunction fn;
    bool smem_attr_set;    /* guarded by mod->lock */
};

struct tilert_module {
    tilert_context *ctx;
    CUmodule cu;
    rt_meta meta;
    tilert_kernel *kernels;       /* one per metadata kernel, resolved at load */
    pthread_mutex_t lock;         /* the lazy per-kernel attribute setting */
};

/* cuInit exactly once per process; returns its status (the same status every time). */
tilert_status rt_driver_init(void);
/* Makes ctx current on this thread; rt_pop restores the caller's context. */
tilert_status rt_push(tilert_context *ctx);
void rt_pop(void);

#endif
