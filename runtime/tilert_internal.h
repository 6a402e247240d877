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
#include "tilert_limits.h"

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
/* i8 .. f8e5m2 are element types of tensor arguments only (tilec takes no 8-bit scalar) */
typedef enum { RT_BOOL, RT_I32, RT_U32, RT_I64, RT_F16, RT_BF16, RT_F32,
               RT_I8, RT_U8, RT_F8E4M3, RT_F8E5M2, RT_TYPE_COUNT } rt_type;

/* The limits tilec also keeps (tilert_limits.h); names are stored with their NUL. */
enum {
    RT_MAX_GRID = TILERT_MAX_GRID, RT_MAX_NAME = TILERT_MAX_NAME + 1, RT_MAX_ARGS = TILERT_MAX_ARGS,
    RT_MAX_RPN = TILERT_MAX_RPN, RT_MAX_TMAPS = TILERT_MAX_TMAPS
};

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

/* Element types of a TMA tensor map as spelled in //@tmap lines. tf32 reads 4-byte f32 elements
 * and rounds them to tf32 (to nearest, ties to even) on the copy into shared memory; u8 copies
 * bytes of any 8-bit type. */
typedef enum {
    RT_TMAP_F32, RT_TMAP_TF32, RT_TMAP_F16, RT_TMAP_BF16, RT_TMAP_U8, RT_TMAP_TYPE_COUNT
} rt_tmap_type;

/* One //@tmap line: a 2-D row-major view (rows x cols elements, rows pitch elements apart) of
 * the memory a pointer argument points to, copied box_rows x box_cols at a time, and for a
 * tensor of rank 3 to 5 its outer dimensions (extent, stride in elements; innermost first), one
 * element deep in a box. The kernel receives it as a hidden CUtensorMap parameter after its
 * ordinary arguments. */
enum { RT_TMAP_MAX_OUTER = 3 };
typedef struct {
    int arg;               /* index of the pointer argument */
    rt_tmap_type type;
    int swizzle;           /* bytes: 0, 32, 64 or 128 */
    int box_rows, box_cols;
    rpn_expr rows, cols, pitch;
    int nouter;
    rpn_expr outer[RT_TMAP_MAX_OUTER], outer_stride[RT_TMAP_MAX_OUTER];
    /* `if-aligned`: built only where the pointer and the strides are as TMA needs them, and
       otherwise passed as the empty map's stand-in, which the kernel tests for and never uses */
    bool if_aligned;
    /* `rows8`: each 8 rows land in the order 0 4 1 5 2 6 3 7, the rows taken as three dimensions
       (row / 4 % 2, row % 4, row / 8); rows must be a multiple of 8 */
    bool rows8;
} rt_tmap_meta;

typedef struct {
    char name[RT_MAX_NAME];
    int threads, smem_bytes, regs;
    rt_arg_meta *args; int nargs;
    rpn_expr grid[RT_MAX_GRID]; int ngrid;
    rpn_expr *assume; char **assume_text; int nassumes;
    rt_tmap_meta *tmaps; int ntmaps;
    int cluster;           /* //@cluster: blocks a cluster along x where the grid allows; 0: none */
    /* //@split: a product's K loop the launch may split over split_dim (0: none), a block's
       bytes of partial sums, the loop's step and its iterations (compiler/lower_split.c) */
    int split_dim;
    int64_t split_bytes, split_step;
    rpn_expr split_trips;
    bool split_cluster;    /* ... each tile's slices launched as one cluster (`cluster N`, sm_90) */
    int split_cluster_max; /* ... of at most N */
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
const char *rt_tmap_type_name(rt_tmap_type t);
/* Bytes per element: 4 for f32 and tf32, 2 for f16 and bf16. */
int rt_tmap_elem_size(rt_tmap_type t);

/* ---------------------------------------------------------------- rpn.c */

/* Evaluates e with the argument values vals[] (sizes and integer scalars; others 0). Division or
 * remainder by zero, int64 overflow and stack underflow/leftovers are errors
 * (TILERT_ERR_BAD_ARGS for arithmetic on these arguments, TILERT_ERR_BAD_META for a malformed
 * expression), with a message naming the problem. */
tilert_status rt_rpn_eval(const rpn_expr *e, const int64_t *vals, int nvals, int64_t *out);

/* ---------------------------------------------------------------- args.c: launch preparation */

/* What cuTensorMapEncodeTiled needs for one //@tmap line, in its own terms (dimensions
 * innermost first). An empty map (a zero extent) describes a 1 x 1 tensor with base 0 instead:
 * launch.c points it at the context's zero buffer, so the kernel's copies read zeros. */
typedef struct {
    CUdeviceptr base;
    CUtensorMapDataType type;
    CUtensorMapSwizzle swizzle;
    int rank;              /* 2 + the outer dimensions */
    cuuint64_t dim[5];     /* elements: {cols, rows, outer...}; rows8: {cols, 2, 4, rows / 8, outer...} */
    cuuint64_t stride[4];  /* bytes along each dimension but the first */
    cuuint32_t box[5];     /* elements: {box_cols, box_rows, 1...}; rows8: {box_cols, 2, 4, box_rows / 8, 1...} */
    bool empty;            /* rows or cols is 0 */
} rt_tmap_desc;

/* Everything about one launch that does not need a GPU. */
typedef struct {
    unsigned grid[3];
    bool empty;            /* a grid dimension is 0: launch nothing */
    rt_tmap_desc tmap[RT_MAX_TMAPS]; int ntmaps;
    /* The encoded maps, passed by value: CUtensorMap's own declaration aligns them (TMA wants
     * 64 bytes). Filled by launch.c; rt_plan_launch only zeroes them. */
    CUtensorMap tmap_store[RT_MAX_TMAPS];
    /* Parameter storage laid out per the ABI, and one pointer per argument into it, then one per
     * tensor map into tmap_store. */
    _Alignas(8) unsigned char store[RT_MAX_ARGS * 8];
    /* a split kernel's three hidden parameters, last: the partial sums' workspace, the tiles'
       pair words and the slice's length */
    CUdeviceptr split_ws, split_cnt;
    int32_t split_span;
    int64_t split_trips;   /* the loop's iterations at this launch */
    void *params[RT_MAX_ARGS + RT_MAX_TMAPS + 3];
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
/* Evaluates the kernel's //@tmap extents and fills desc[0..k->ntmaps): extents must be in
 * 0..2^31-1; a non-empty map also needs pitch >= cols, a row pitch in bytes that is a multiple of
 * 16 and a 16-byte aligned pointer (TMA's rules). Call after rt_check_args. */
tilert_status rt_plan_tmaps(const rt_kernel_meta *k, const tilert_arg *args, int nargs,
                            rt_tmap_desc *desc);
/* All of the above, then the packed parameters (a split kernel's as for one slice, no workspace). */
tilert_status rt_plan_launch(const rt_kernel_meta *k, const tilert_arg *args, int nargs,
                             rt_launch_plan *plan);

/* Splitting a product's K loop (compiler/lower_split.c). rt_split_count: the slices for a grid of
 * `tiles` blocks where `slots` blocks run at once (multiprocessors x blocks each), the loop
 * `trips` iterations long: enough slices to fill the slots, each at least RT_SPLIT_MIN_TRIPS
 * iterations, at most RT_SPLIT_MAX; 1 where the grid fills the GPU. forced > 0 (TILERT_SPLIT,
 * for tests) is taken as it is, up to RT_SPLIT_MAX. rt_split_bytes: the partial sums' workspace
 * that needs (the pair words are RT_SPLIT_CNT_TILE bytes a tile apart from it, zero before the
 * launch and after). rt_plan_split: the plan made for S slices over workspace ws, words cnt. */
/* RT_SPLIT_CNT_TILE: a tile's pair words, 4 levels x 16 places x (count, flag) (lower_split.c) */
/* RT_SPLIT_CLUSTER_MAX: the most slices of a kernel whose slices run as one cluster (the portable
 * cluster size) */
enum { RT_SPLIT_MIN_TRIPS = 8, RT_SPLIT_MAX = 16, RT_SPLIT_CNT_TILE = 4 * 16 * 8, RT_SPLIT_STREAMS = 8,
       RT_SPLIT_CLUSTER_MAX = 8 };
int rt_split_count(int64_t tiles, int64_t slots, int64_t trips, int forced);
size_t rt_split_bytes(const rt_kernel_meta *k, int64_t tiles, int S);
void rt_plan_split(const rt_kernel_meta *k, rt_launch_plan *plan, int S, CUdeviceptr ws, CUdeviceptr cnt);

/* ---------------------------------------------------------------- context.c / module.c */

struct tilert_context {
    CUdevice dev;
    CUcontext ctx;         /* the retained primary context, or the caller's (tilert_attach) */
    bool retained;         /* a primary context we retained: tilert_release releases it */
    int arch;              /* 10 * major + minor */
    CUdeviceptr zero_buffer;       /* RT_ZERO_BUFFER_BYTES of zeros for empty tensor maps; 0
                                      until the first launch that needs it */
    pthread_mutex_t zero_lock;     /* its lazy allocation */
};

struct tilert_kernel {
    tilert_module *mod;
    const rt_kernel_meta *meta;
    CUfunction fn;
    bool smem_attr_set;    /* guarded by mod->lock */
    /* a split kernel (//@split): blocks that run at once on the device (0: not known yet), and
       a workspace per stream: pair words for `tiles` tiles (zeroed on that stream), then `bytes`
       of partial sums; guarded by mod->lock */
    int split_slots;
    int split_clusters[RT_SPLIT_CLUSTER_MAX + 1];   /* clusters of S blocks at once; -1: none; 0: not known yet */
    struct { CUstream stream; CUdeviceptr ptr; int64_t tiles; size_t bytes; } ws[RT_SPLIT_STREAMS];
    int nws;
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
enum { RT_ZERO_BUFFER_BYTES = 256 };
/* The context's zero buffer, allocated and cleared at the first call. ctx must be current. */
tilert_status rt_zero_buffer(tilert_context *ctx, CUdeviceptr *out);

#endif
