/* bench.h: the benchmark's shared declarations. bench.c times and prints; workloads_util.c knows
 * what each example kernel computes, how to feed it, what to compare it with and how to check it.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda.h>
#include <cublas_v2.h>
#include "../runtime/tilert.h"

enum { MAX_SETS = 16, MAX_BUFS = 8, MAX_ARGS = 16 };

typedef enum { DT_F32, DT_TF32, DT_F16, DT_BF16 } DType;

/* What a workload is: which kind it is (one of the Kind rows in workloads_util.c) and its sizes. */
typedef enum { K_GEMM, K_AXPY, K_SUM, K_ROWSUM, K_SOFTMAX, K_LAYERNORM, K_LSE_BWD, K_GEMV, K_RMSNORM,
               K_COLSUM } KindId;

typedef struct {
    const char *kernel;    /* the kernel's name; <ptx-dir>/<file or kernel>.ptx holds it */
    KindId kind;
    int64_t m, n, k;       /* GEMM: M, N, K.  vectors: n.  row-wise, GEMV: m rows of n columns;
                              GEMV with k > 0: a batch of k vectors (gemv_batch: X [k, n]) */
    DType in, out;         /* GEMM operand and result types; GEMV, rmsnorm: the input type */
    const char *file;      /* the PTX file's name when it is not the kernel's */
    bool ta, tb;           /* GEMM: A stored column-major ([K, M] in memory), B stored [N, K] */
    bool bias;             /* GEMM: a bias argument after B (all zeros: cuBLAS has none) */
    bool patches;          /* lse_bwd: the convolution variant (m images, n pixels, k outputs) */
    bool stats;            /* layernorm: also writes each row's mean and rstd (layernorm_stats) */
    bool zero_c;           /* GEMM: the kernel adds into C (split K): C zeroed before each launch,
                              the memset timed with it, as a caller pays for it */
} Workload;

/* A GEMM's buffers in Run.buf[set] */
enum { G_A, G_B, G_C, G_BIAS };

/* The live state of one workload: device buffers per input set and host copies of set 0. */
typedef struct {
    const Workload *w;
    int nsets;
    CUstream stream;
    cublasHandle_t blas;
    CUdeviceptr buf[MAX_SETS][MAX_BUFS];   /* the kernel's tensors, in the kind's own order */
    CUdeviceptr ref[MAX_SETS][2];          /* the reference's own buffers (copy src/dst, C) */
    size_t ref_bytes;                      /* copy references: bytes per copy */
    float *host[MAX_BUFS];                 /* set 0 inputs as f32 (converted from f16/bf16) */
} Run;

typedef struct {
    const char *name;                     /* e.g. "gemm" */
    size_t (*set_bytes)(const Workload *w);              /* device bytes of one input set */
    bool (*setup)(Run *r);                               /* allocate and fill every set */
    int (*args)(Run *r, int set, tilert_arg *a);         /* the kernel's arguments; count */
    bool (*before)(Run *r, int set);                     /* untimed, before each launch */
    bool (*reference)(Run *r, int set);                  /* enqueue the reference once */
    bool (*check)(Run *r, char *msg, size_t len);        /* set 0 after one tilec launch */
    void (*describe)(const Workload *w, char *size, size_t len, char *ref, size_t rlen);
    double (*work)(const Workload *w);   /* flops (GEMM) or minimum DRAM bytes moved */
    bool is_flops;
} Kind;

const Kind *kind_of(const Workload *w);
extern const Workload workloads[];
extern const int nworkloads;

/* workloads_util.c helpers shared with bench.c */
bool cu_ok(CUresult r, const char *what);     /* prints the CUDA error name on failure */
void run_free(Run *r);
bool dalloc(CUdeviceptr *d, size_t bytes);
/* n uniform values in [lo, hi) of type t; with keep, a host copy (as f32) */
bool fill_random(CUdeviceptr d, size_t n, DType t, uint64_t seed, float lo, float hi, float **keep);
float *download(CUdeviceptr d, size_t n, DType t);   /* as f32, malloc'd; NULL on failure */

/* lse_bwd_util.c: the K_LSE_BWD kind */
size_t lse_set_bytes(const Workload *w);
bool lse_setup(Run *r);
int lse_args(Run *r, int set, tilert_arg *a);
bool lse_before(Run *r, int set);
bool lse_ref(Run *r, int set);
bool lse_check(Run *r, char *msg, size_t len);
void lse_describe(const Workload *w, char *size, size_t len, char *ref, size_t rlen);
double lse_work(const Workload *w);

#endif
