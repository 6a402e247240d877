/* workloads_util.c: what is measured (a helper: the Makefile links every bench file whose name
 * ends in util.c into the bench programs). The table below is the whole list of benchmark rows;
 * each row names an example kernel and a Kind, and the Kind knows the kernel's arguments, its
 * reference, its work (flops or bytes) and how to check its result. Adding a row for a new
 * example of an existing kind is one line; a new kind is one Kind struct and its functions.
 *
 * References:
 *   GEMM          cuBLAS (SGEMM for f32 with the default math mode, i.e. no TF32; GemmEx with
 *                 f32 accumulation for tf32/f16/bf16), row-major via swapped operands.
 *   memory-bound  one cuMemcpyDtoDAsync that moves the same number of DRAM bytes as the kernel's
 *                 minimum traffic (a copy of half those bytes: it reads and writes each). No C-
 *                 callable library offers a reduction or softmax, so a copy is the bandwidth bound;
 *                 torch and Triton figures come from peers.py.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"

#define GEMM(name, s, in_, out_) { .kernel = name, .kind = K_GEMM, .m = s, .n = s, .k = s, .in = in_, .out = out_ }
/* M x N x K, for the shapes of a language model's layers (a batch of M tokens) */
#define GEMM3(name, m_, n_, k_, in_, out_) { .kernel = name, .kind = K_GEMM, .m = m_, .n = n_, .k = k_, .in = in_, .out = out_ }
/* a product with transposed operands, from file (its PTX under the examples' directory) */
#define GEMMT(name, file_, s, in_, out_, ta_, tb_, bias_) \
    { .kernel = name, .kind = K_GEMM, .m = s, .n = s, .k = s, .in = in_, .out = out_, .file = file_, \
      .ta = ta_, .tb = tb_, .bias = bias_ }

const Workload workloads[] = {
    GEMM("matmul_f32", 1024, DT_F32, DT_F32),
    GEMM("matmul_f32", 4096, DT_F32, DT_F32),
    GEMM("matmul_f32", 8192, DT_F32, DT_F32),
    GEMM("matmul_tf32", 4096, DT_TF32, DT_F32),
    GEMM("matmul_tf32", 8192, DT_TF32, DT_F32),
    GEMM("matmul_f16", 2048, DT_F16, DT_F16),
    GEMM("matmul_f16", 4096, DT_F16, DT_F16),
    GEMM("matmul_f16", 8192, DT_F16, DT_F16),
    /* a layer of N = K = 8192 (and an MLP's N = 28672) at 16 to 4096 tokens */
    GEMM3("matmul_f16", 16, 8192, 8192, DT_F16, DT_F16),
    GEMM3("matmul_f16", 128, 8192, 8192, DT_F16, DT_F16),
    GEMM3("matmul_f16", 512, 8192, 8192, DT_F16, DT_F16),
    GEMM3("matmul_f16", 4096, 8192, 8192, DT_F16, DT_F16),
    GEMM3("matmul_f16", 4096, 28672, 8192, DT_F16, DT_F16),
    /* the few-token rows again with K split over 2 blocks added into f32 C (examples/matmul_splitk) */
    { .kernel = "matmul_splitk", .kind = K_GEMM, .m = 16, .n = 8192, .k = 8192, .in = DT_F16, .out = DT_F32, .zero_c = true },
    { .kernel = "matmul_splitk", .kind = K_GEMM, .m = 128, .n = 8192, .k = 8192, .in = DT_F16, .out = DT_F32, .zero_c = true },
    GEMM("matmul_bf16", 2048, DT_BF16, DT_BF16),
    GEMM("matmul_bf16", 4096, DT_BF16, DT_BF16),
    GEMM("matmul_bf16", 8192, DT_BF16, DT_BF16),
    /* Y = X W^T + bias, W stored [N, K] (examples/linear.tile) */
    GEMMT("linear", NULL, 4096, DT_F16, DT_F16, false, true, true),
    GEMMT("linear", NULL, 8192, DT_F16, DT_F16, false, true, true),
    GEMMT("linear_bf16", "linear", 4096, DT_BF16, DT_BF16, false, true, true),
    GEMMT("linear_bf16", "linear", 8192, DT_BF16, DT_BF16, false, true, true),
    /* the four layouts at one tile shape (tests/gpu/kernels/layouts.tile), f32 out */
    GEMMT("mm_f16_nn", "layouts/layouts", 4096, DT_F16, DT_F32, false, false, false),
    GEMMT("mm_f16_nt", "layouts/layouts", 4096, DT_F16, DT_F32, false, true, false),
    GEMMT("mm_f16_tn", "layouts/layouts", 4096, DT_F16, DT_F32, true, false, false),
    GEMMT("mm_f16_tt", "layouts/layouts", 4096, DT_F16, DT_F32, true, true, false),
    GEMMT("mm_tf32_nn", "layouts/layouts", 4096, DT_TF32, DT_F32, false, false, false),
    GEMMT("mm_tf32_nt", "layouts/layouts", 4096, DT_TF32, DT_F32, false, true, false),
    GEMMT("mm_tf32_tn", "layouts/layouts", 4096, DT_TF32, DT_F32, true, false, false),
    GEMMT("mm_tf32_tt", "layouts/layouts", 4096, DT_TF32, DT_F32, true, true, false),
    GEMMT("mm_f16_nn", "layouts/layouts", 8192, DT_F16, DT_F32, false, false, false),
    GEMMT("mm_f16_nt", "layouts/layouts", 8192, DT_F16, DT_F32, false, true, false),
    GEMMT("mm_f16_tn", "layouts/layouts", 8192, DT_F16, DT_F32, true, false, false),
    GEMMT("mm_f16_tt", "layouts/layouts", 8192, DT_F16, DT_F32, true, true, false),
    GEMMT("mm_tf32_nn", "layouts/layouts", 8192, DT_TF32, DT_F32, false, false, false),
    GEMMT("mm_tf32_nt", "layouts/layouts", 8192, DT_TF32, DT_F32, false, true, false),
    GEMMT("mm_tf32_tn", "layouts/layouts", 8192, DT_TF32, DT_F32, true, false, false),
    GEMMT("mm_tf32_tt", "layouts/layouts", 8192, DT_TF32, DT_F32, true, true, false),
    GEMMT("mm_bf16_nn", "layouts/layouts", 4096, DT_BF16, DT_F32, false, false, false),
    GEMMT("mm_bf16_nt", "layouts/layouts", 4096, DT_BF16, DT_F32, false, true, false),
    GEMMT("mm_bf16_tn", "layouts/layouts", 4096, DT_BF16, DT_F32, true, false, false),
    GEMMT("mm_bf16_tt", "layouts/layouts", 4096, DT_BF16, DT_F32, true, true, false),
    GEMMT("mm_bf16_nn", "layouts/layouts", 8192, DT_BF16, DT_F32, false, false, false),
    GEMMT("mm_bf16_nt", "layouts/layouts", 8192, DT_BF16, DT_F32, false, true, false),
    GEMMT("mm_bf16_tn", "layouts/layouts", 8192, DT_BF16, DT_F32, true, false, false),
    GEMMT("mm_bf16_tt", "layouts/layouts", 8192, DT_BF16, DT_F32, true, true, false),
    GEMMT("mm_f32_nn", "layouts/layouts", 4096, DT_F32, DT_F32, false, false, false),
    GEMMT("mm_f32_nt", "layouts/layouts", 4096, DT_F32, DT_F32, false, true, false),
    GEMMT("mm_f32_tn", "layouts/layouts", 4096, DT_F32, DT_F32, true, false, false),
    GEMMT("mm_f32_tt", "layouts/layouts", 4096, DT_F32, DT_F32, true, true, false),
    GEMMT("mm_f32_nn", "layouts/layouts", 8192, DT_F32, DT_F32, false, false, false),
    GEMMT("mm_f32_nt", "layouts/layouts", 8192, DT_F32, DT_F32, false, true, false),
    GEMMT("mm_f32_tn", "layouts/layouts", 8192, DT_F32, DT_F32, true, false, false),
    GEMMT("mm_f32_tt", "layouts/layouts", 8192, DT_F32, DT_F32, true, true, false),
    /* A @ B^T in a loop without pipeline(): B^T staged through registers each step */
    GEMMT("mm_f16_nt_plain", "layouts/layouts", 4096, DT_F16, DT_F32, false, true, false),
    GEMMT("mm_tf32_nt_plain", "layouts/layouts", 4096, DT_TF32, DT_F32, false, true, false),
    { .kernel = "vecadd", .kind = K_AXPY, .n = (int64_t)1 << 28, .in = DT_F32, .out = DT_F32 },
    { .kernel = "sum", .kind = K_SUM, .n = (int64_t)1 << 28, .in = DT_F32, .out = DT_F32 },
    { .kernel = "rowsum", .kind = K_ROWSUM, .m = 8192, .n = 8192, .in = DT_F32, .out = DT_F32 },
    { .kernel = "softmax", .kind = K_SOFTMAX, .m = 8192, .n = 8192, .in = DT_F32, .out = DT_F32 },
    { .kernel = "layernorm", .kind = K_LAYERNORM, .m = 8192, .n = 8192, .in = DT_F32, .out = DT_F32 },
    /* the same at 1 GiB of input: a launch's fixed costs (filling the GPU, the last wave) weigh
       less than at 256 MiB, where a copy and a kernel differ in them */
    { .kernel = "rowsum", .kind = K_ROWSUM, .m = 32768, .n = 8192, .in = DT_F32, .out = DT_F32 },
    { .kernel = "softmax", .kind = K_SOFTMAX, .m = 32768, .n = 8192, .in = DT_F32, .out = DT_F32 },
    { .kernel = "layernorm", .kind = K_LAYERNORM, .m = 32768, .n = 8192, .in = DT_F32, .out = DT_F32 },
    /* column sums (examples/colsum.tile), and layernorm that also writes each row's mean and rstd */
    { .kernel = "colsum", .kind = K_COLSUM, .m = 8192, .n = 8192, .in = DT_F32, .out = DT_F32 },
    { .kernel = "colsum", .kind = K_COLSUM, .m = 32768, .n = 8192, .in = DT_F32, .out = DT_F32 },
    { .kernel = "layernorm_stats", .kind = K_LAYERNORM, .m = 8192, .n = 8192, .in = DT_F32,
      .out = DT_F32, .stats = true },
    { .kernel = "layernorm_stats", .kind = K_LAYERNORM, .m = 32768, .n = 8192, .in = DT_F32,
      .out = DT_F32, .stats = true },
    /* RMSNorm in f32 and in f16 (examples/rmsnorm.tile) */
    { .kernel = "rmsnorm", .kind = K_RMSNORM, .m = 8192, .n = 8192, .in = DT_F32, .out = DT_F32 },
    { .kernel = "rmsnorm", .kind = K_RMSNORM, .m = 32768, .n = 8192, .in = DT_F32, .out = DT_F32 },
    { .kernel = "rmsnorm_f16", .kind = K_RMSNORM, .m = 32768, .n = 8192, .in = DT_F16, .out = DT_F16,
      .file = "rmsnorm" },
    /* y = W x with W [m, n] in f16 / bf16, batch 1 (examples/gemv.tile) */
    { .kernel = "gemv", .kind = K_GEMV, .m = 8192, .n = 8192, .in = DT_F16, .out = DT_F32 },
    { .kernel = "gemv", .kind = K_GEMV, .m = 28672, .n = 8192, .in = DT_F16, .out = DT_F32 },
    { .kernel = "gemv_bf16", .kind = K_GEMV, .m = 8192, .n = 8192, .in = DT_BF16, .out = DT_F32,
      .file = "gemv" },
    /* Y = X W^T at a batch of 1 to 8 vectors (examples/gemv.tile, gemv_batch): .k is the batch */
    { .kernel = "gemv_batch", .kind = K_GEMV, .m = 8192, .n = 8192, .k = 1, .in = DT_F16, .out = DT_F32,
      .file = "gemv" },
    { .kernel = "gemv_batch", .kind = K_GEMV, .m = 8192, .n = 8192, .k = 2, .in = DT_F16, .out = DT_F32,
      .file = "gemv" },
    { .kernel = "gemv_batch", .kind = K_GEMV, .m = 8192, .n = 8192, .k = 4, .in = DT_F16, .out = DT_F32,
      .file = "gemv" },
    { .kernel = "gemv_batch", .kind = K_GEMV, .m = 8192, .n = 8192, .k = 8, .in = DT_F16, .out = DT_F32,
      .file = "gemv" },
    { .kernel = "gemv_batch_bf16", .kind = K_GEMV, .m = 8192, .n = 8192, .k = 8, .in = DT_BF16,
      .out = DT_F32, .file = "gemv" },
    /* the register-pressure kernel (examples/lse_bwd.tile) against the same computation in CUDA
       C++ built by nvcc (bench/lse_bwd_ref.cu): B = 512 images of 16 x 16, 128 output channels,
       1152 product channels (128 image channels x 9 taps when patches) */
    { .kernel = "lse_bwd", .kind = K_LSE_BWD, .m = 512, .n = 256, .k = 128, .file = "lse_bwd" },
    { .kernel = "lse_bwd_conv", .kind = K_LSE_BWD, .m = 512, .n = 256, .k = 128, .file = "lse_bwd",
      .patches = true },
};
const int nworkloads = (int)(sizeof workloads / sizeof workloads[0]);

static const float AXPY_ALPHA = 0.75f;
static const float LN_EPS = 1e-5f;

/* ---------------------------------------------------------------- helpers */

bool cu_ok(CUresult r, const char *what)
{
    const char *name = NULL;
    if (r == CUDA_SUCCESS)
        return true;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS)
        name = "unknown CUDA error";
    fprintf(stderr, "bench: %s: %s\n", what, name);
    return false;
}

static size_t dt_size(DType t) { return t == DT_F16 || t == DT_BF16 ? 2 : 4; }

static uint16_t f32_to_f16(float f)
{
    uint32_t x; memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, man = x & 0x7fffff;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {                       /* subnormal or zero: shift the implicit bit in */
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000;
        int shift = 14 - e;
        uint32_t half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = sign | ((uint32_t)e << 10) | (man >> 13), rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
        h++;                            /* a carry into the exponent is still correct */
    return (uint16_t)h;
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, x;
    if (exp == 0) {
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    x = exp == 31 ? sign | 0x7f800000 | (man << 13) : sign | ((exp - 15 + 127) << 23) | (man << 13);
    float f; memcpy(&f, &x, 4);
    return f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x; memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16; float f; memcpy(&f, &x, 4);
    return f;
}

static float to_f32(const void *p, size_t i, DType t)
{
    if (t == DT_F16) return f16_to_f32(((const uint16_t *)p)[i]);
    if (t == DT_BF16) return bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

bool dalloc(CUdeviceptr *d, size_t bytes)
{
    return cu_ok(cuMemAlloc(d, bytes), "cuMemAlloc");
}

/* Fills n elements of type t on the device with uniform values in [lo, hi), never exactly 0 for a
 * symmetric range. When keep is given, the values (after rounding to t) stay there as f32. */
bool fill_random(CUdeviceptr d, size_t n, DType t, uint64_t seed, float lo, float hi,
                 float **keep)
{
    size_t es = dt_size(t);
    void *raw = malloc(n * es);
    float *kept = keep ? malloc(n * sizeof(float)) : NULL;
    uint64_t s = seed * 0x9e3779b97f4a7c15u + 0x632be59bd9b4e019u;
    if (!raw || (keep && !kept)) {
        fprintf(stderr, "bench: out of host memory\n");
        free(raw); free(kept);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        s ^= s >> 12; s ^= s << 25; s ^= s >> 27;                  /* xorshift64* */
        uint32_t u = (uint32_t)((s * 0x2545f4914f6cdd1du) >> 40); /* 24 bits */
        float v = lo + (hi - lo) * (((float)u + 0.5f) / 16777216.0f);
        if (t == DT_F16) ((uint16_t *)raw)[i] = f32_to_f16(v);
        else if (t == DT_BF16) ((uint16_t *)raw)[i] = f32_to_bf16(v);
        else ((float *)raw)[i] = v;
        if (kept) kept[i] = to_f32(raw, i, t);
    }
    bool ok = cu_ok(cuMemcpyHtoD(d, raw, n * es), "cuMemcpyHtoD");
    free(raw);
    if (keep) *keep = kept;
    return ok;
}

/* Downloads n elements of type t as f32 (malloc'd; NULL on failure). */
float *download(CUdeviceptr d, size_t n, DType t)
{
    size_t es = dt_size(t);
    void *raw = malloc(n * es);
    float *out = malloc(n * sizeof(float));
    if (!raw || !out || !cu_ok(cuMemcpyDtoH(raw, d, n * es), "cuMemcpyDtoH")) {
        free(raw); free(out);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = to_f32(raw, i, t);
    free(raw);
    return out;
}

void run_free(Run *r)
{
    for (int s = 0; s < MAX_SETS; s++) {
        for (int b = 0; b < MAX_BUFS; b++)
            if (r->buf[s][b]) cuMemFree(r->buf[s][b]);
        for (int b = 0; b < 2; b++)
            if (r->ref[s][b]) cuMemFree(r->ref[s][b]);
    }
    for (int b = 0; b < MAX_BUFS; b++)
        free(r->host[b]);
    memset(r->buf, 0, sizeof r->buf);
    memset(r->ref, 0, sizeof r->ref);
    memset(r->host, 0, sizeof r->host);
}

static void fmt_bytes(char *out, size_t len, double bytes)
{
    if (bytes >= 1 << 30) snprintf(out, len, "%.3g GiB", bytes / (1 << 30));
    else snprintf(out, len, "%.3g MiB", bytes / (1 << 20));
}

/* ---------------------------------------------------------------- memory-bound: copy reference */

/* GEMV: the vectors multiplied at once (1 for gemv, .k for gemv_batch). */
static int64_t batch(const Workload *w) { return w->k > 0 ? w->k : 1; }

/* Traffic of the memory-bound kinds: the bytes the kernel must read plus those it must write. */
static double traffic(const Workload *w)
{
    double mn = (double)w->m * (double)w->n;
    switch (w->kind) {
    case K_AXPY: return 3.0 * 4 * (double)w->n;
    case K_SUM: return 4.0 * (double)w->n;
    case K_ROWSUM: return 4.0 * mn + 4.0 * (double)w->m;
    case K_SOFTMAX: return 8.0 * mn;
    case K_COLSUM: return 4.0 * mn + 4.0 * (double)w->n;
    case K_LAYERNORM: return 8.0 * mn + 8.0 * (double)w->n + (w->stats ? 8.0 * (double)w->m : 0);
    case K_RMSNORM: return (double)dt_size(w->in) * (2.0 * mn + (double)w->n);
    case K_GEMV: return (double)dt_size(w->in) * (mn + (double)batch(w) * (double)w->n)
                        + 4.0 * (double)batch(w) * (double)w->m;
    case K_GEMM:
    case K_LSE_BWD: break;   /* compute-bound: flops */
    }
    return 0;
}

/* The copy moves traffic/2 bytes (read) + traffic/2 bytes (write). Its source is filled from the
 * kernel's random input so that no all-zero page is ever read. */
static bool copy_setup(Run *r, CUdeviceptr random_src, size_t src_bytes)
{
    r->ref_bytes = ((size_t)(traffic(r->w) / 2) + 15) & ~(size_t)15;
    for (int s = 0; s < r->nsets; s++) {
        if (!dalloc(&r->ref[s][0], r->ref_bytes) || !dalloc(&r->ref[s][1], r->ref_bytes))
            return false;
        for (size_t off = 0; off < r->ref_bytes; off += src_bytes) {
            size_t n = r->ref_bytes - off < src_bytes ? r->ref_bytes - off : src_bytes;
            if (!cu_ok(cuMemcpyDtoD(r->ref[s][0] + off, random_src, n), "cuMemcpyDtoD"))
                return false;
        }
    }
    return true;
}

static bool copy_ref(Run *r, int s)
{
    return cu_ok(cuMemcpyDtoDAsync(r->ref[s][1], r->ref[s][0], r->ref_bytes, r->stream),
                 "cuMemcpyDtoDAsync");
}

static void copy_describe(const Workload *w, char *size, size_t len, char *ref, size_t rlen)
{
    char b[32];
    static const char *names[] = { "f32", "tf32", "f16", "bf16" };
    if (w->kind == K_AXPY || w->kind == K_SUM)
        snprintf(size, len, "2^%d f32", (int)round(log2((double)w->n)));
    else if (w->kind == K_GEMV && w->k > 0)   /* batch x rows x columns, as GEMM's M x N x K */
        snprintf(size, len, "%lldx%lldx%lld %s", (long long)w->k, (long long)w->m, (long long)w->n,
                 names[w->in]);
    else
        snprintf(size, len, "%lldx%lld %s", (long long)w->m, (long long)w->n, names[w->in]);
    fmt_bytes(b, sizeof b, traffic(w) / 2);
    snprintf(ref, rlen, "DtoD copy %s", b);
}

static double copy_work(const Workload *w) { return traffic(w); }
static bool no_before(Run *r, int s) { (void)r; (void)s; return true; }

/* ---------------------------------------------------------------- GEMM */

static size_t gemm_set_bytes(const Workload *w)
{
    return (size_t)(w->m * w->k + w->k * w->n + (w->bias ? w->n : 0)) * dt_size(w->in)
         + 2 * (size_t)(w->m * w->n) * dt_size(w->out);
}

static bool gemm_setup(Run *r)
{
    const Workload *w = r->w;
    for (int s = 0; s < r->nsets; s++) {
        CUdeviceptr *b = r->buf[s];
        if (!dalloc(&b[G_A], (size_t)(w->m * w->k) * dt_size(w->in))
            || !dalloc(&b[G_B], (size_t)(w->k * w->n) * dt_size(w->in))
            || !dalloc(&b[G_C], (size_t)(w->m * w->n) * dt_size(w->out))
            || !dalloc(&r->ref[s][0], (size_t)(w->m * w->n) * dt_size(w->out))
            || !fill_random(b[G_A], (size_t)(w->m * w->k), w->in, 100 + 2 * s, -1, 1, NULL)
            || !fill_random(b[G_B], (size_t)(w->k * w->n), w->in, 101 + 2 * s, -1, 1, NULL))
            return false;
        if (w->bias && (!dalloc(&b[G_BIAS], (size_t)w->n * dt_size(w->in))
                        || !cu_ok(cuMemsetD8(b[G_BIAS], 0, (size_t)w->n * dt_size(w->in)), "bias")))
            return false;
    }
    return true;
}

static int gemm_args(Run *r, int s, tilert_arg *a)
{
    const Workload *w = r->w;   /* (A, B[, bias], C): sizes M, K, N, or K, M, N with A^T as [K, M] */
    int n = 0;
    a[n++] = tilert_ptr(r->buf[s][G_A]);
    a[n++] = tilert_ptr(r->buf[s][G_B]);
    if (w->bias)
        a[n++] = tilert_ptr(r->buf[s][G_BIAS]);
    a[n++] = tilert_ptr(r->buf[s][G_C]);
    bool kmn = w->ta && w->tb;   /* mm_*_tt declares A: [K, M] */
    a[n++] = tilert_i32((int32_t)(kmn ? w->k : w->m));
    a[n++] = tilert_i32((int32_t)(kmn ? w->m : w->k));
    a[n++] = tilert_i32((int32_t)w->n);
    return n;
}

static cudaDataType cuda_type(DType t)
{
    return t == DT_F16 ? CUDA_R_16F : t == DT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* Row-major C = A B is column-major C^T = B^T A^T: pass B first, with the dimensions swapped. A
 * B stored [N, K] is, column-major, the K x N matrix whose transpose is wanted (op T, ld K); an A
 * stored column-major likewise (op T, ld M). */
static bool gemm_ref(Run *r, int s)
{
    const Workload *w = r->w;
    const float one = 1, zero = 0;
    int m = (int)w->m, n = (int)w->n, k = (int)w->k;
    CUdeviceptr a = r->buf[s][G_A], b = r->buf[s][G_B], c = r->ref[s][0];
    cublasStatus_t st;
    cublasOperation_t ob = w->tb ? CUBLAS_OP_T : CUBLAS_OP_N, oa = w->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    int ldb = w->tb ? k : n, lda = w->ta ? m : k;
    if (w->in == DT_F32 && w->out == DT_F32)
        st = cublasSgemm(r->blas, ob, oa, n, m, k, &one, (const float *)b, ldb,
                         (const float *)a, lda, &zero, (float *)c, n);
    else
        st = cublasGemmEx(r->blas, ob, oa, n, m, k, &one,
                          (const void *)b, cuda_type(w->in), ldb, (const void *)a, cuda_type(w->in), lda,
                          &zero, (void *)c, cuda_type(w->out), n,
                          w->in == DT_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "bench: cuBLAS GEMM failed: %s\n", cublasGetStatusString(st));
        return false;
    }
    return true;
}

/* Compared with cuBLAS on the same inputs: max |diff| <= tol * (1 + max |ref|). */
static bool gemm_check(Run *r, char *msg, size_t len)
{
    const Workload *w = r->w;
    size_t n = (size_t)(w->m * w->n);
    double tol = w->in == DT_F32 ? 1e-5 : w->in == DT_BF16 ? 2e-2 : 5e-3, err = 0, big = 0;
    if (!gemm_ref(r, 0) || !cu_ok(cuStreamSynchronize(r->stream), "GEMM reference"))
        return false;
    float *got = download(r->buf[0][G_C], n, w->out), *want = download(r->ref[0][0], n, w->out);
    bool ok = got && want;
    for (size_t i = 0; ok && i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= err)) err = isnan(d) ? INFINITY : d;
        if (fabs(want[i]) > big) big = fabs(want[i]);
    }
    ok = ok && err <= tol * (1 + big);
    snprintf(msg, len, "max |tilec - cuBLAS| = %.3g (limit %.3g)", err, tol * (1 + big));
    free(got); free(want);
    return ok;
}

static void gemm_describe(const Workload *w, char *size, size_t len, char *ref, size_t rlen)
{
    static const char *names[] = { "f32", "tf32", "f16", "bf16" };
    snprintf(size, len, "%lldx%lldx%lld", (long long)w->m, (long long)w->n, (long long)w->k);
    const char *ops = w->ta ? (w->tb ? " T,T" : " T,N") : w->tb ? " N,T" : "";
    const char *out = (w->in == DT_F16 || w->in == DT_BF16) && w->out == DT_F32 ? " f32 out" : "";
    if (w->in == DT_F32 && w->out == DT_F32)
        snprintf(ref, rlen, "cuBLAS SGEMM%s", ops);
    else
        snprintf(ref, rlen, "cuBLAS GemmEx %s%s%s", names[w->in], ops, out);
}

static double gemm_work(const Workload *w) { return 2.0 * (double)w->m * (double)w->n * (double)w->k; }

/* ---------------------------------------------------------------- vecadd: Z = alpha X + Y */

static size_t axpy_set_bytes(const Workload *w) { return 3 * 4 * (size_t)w->n; }

static bool axpy_setup(Run *r)
{
    size_t n = (size_t)r->w->n;
    for (int s = 0; s < r->nsets; s++) {
        CUdeviceptr *b = r->buf[s];
        if (!dalloc(&b[0], 4 * n) || !dalloc(&b[1], 4 * n) || !dalloc(&b[2], 4 * n)
            || !fill_random(b[0], n, DT_F32, 200 + 2 * s, -1, 1, s ? NULL : &r->host[0])
            || !fill_random(b[1], n, DT_F32, 201 + 2 * s, -1, 1, s ? NULL : &r->host[1]))
            return false;
    }
    return copy_setup(r, r->buf[0][0], 4 * n);
}

static int axpy_args(Run *r, int s, tilert_arg *a)
{
    a[0] = tilert_ptr(r->buf[s][0]);
    a[1] = tilert_ptr(r->buf[s][1]);
    a[2] = tilert_ptr(r->buf[s][2]);
    a[3] = tilert_f32(AXPY_ALPHA);
    a[4] = tilert_i32((int32_t)r->w->n);
    return 5;
}

static bool axpy_check(Run *r, char *msg, size_t len)
{
    size_t n = (size_t)r->w->n;
    float *z = download(r->buf[0][2], n, DT_F32);
    double err = 0;
    if (!z) return false;
    for (size_t i = 0; i < n; i++) {
        double want = (double)AXPY_ALPHA * r->host[0][i] + r->host[1][i];
        double d = fabs(z[i] - want);
        if (!(d <= err)) err = isnan(d) ? INFINITY : d;
    }
    free(z);
    snprintf(msg, len, "max abs error %.3g", err);
    return err <= 1e-6;
}

/* ---------------------------------------------------------------- sum: out[0] += sum(X) */

static size_t sum_set_bytes(const Workload *w) { return 4 * (size_t)w->n; }

static bool sum_setup(Run *r)
{
    size_t n = (size_t)r->w->n;
    for (int s = 0; s < r->nsets; s++)
        if (!dalloc(&r->buf[s][0], 4 * n) || !dalloc(&r->buf[s][1], 16)
            || !fill_random(r->buf[s][0], n, DT_F32, 300 + s, -1, 1, s ? NULL : &r->host[0]))
            return false;
    return copy_setup(r, r->buf[0][0], 4 * n);
}

static int sum_args(Run *r, int s, tilert_arg *a)
{
    a[0] = tilert_ptr(r->buf[s][0]);
    a[1] = tilert_ptr(r->buf[s][1]);
    a[2] = tilert_i32((int32_t)r->w->n);
    return 3;
}

/* The kernel accumulates into out[0]: clear it (untimed) before every launch. */
static bool sum_before(Run *r, int s)
{
    return cu_ok(cuMemsetD32Async(r->buf[s][1], 0, 1, r->stream), "cuMemsetD32Async");
}

static bool sum_check(Run *r, char *msg, size_t len)
{
    size_t n = (size_t)r->w->n;
    double want = 0, mag = 0;
    float got;
    if (!cu_ok(cuMemcpyDtoH(&got, r->buf[0][1], 4), "cuMemcpyDtoH"))
        return false;
    for (size_t i = 0; i < n; i++) {
        want += r->host[0][i];
        mag += fabs(r->host[0][i]);
    }
    double err = fabs(got - want), lim = 5e-8 * mag + 1e-3;   /* a lost block is ~100 */
    snprintf(msg, len, "sum %.7g vs %.7g (error %.3g, limit %.3g)", got, want, err, lim);
    return err <= lim;
}

/* ---------------------------------------------------------------- row-wise kinds */

static size_t rows_set_bytes(const Workload *w)
{
    return (size_t)(traffic(w) + 0.5);
}

/* X, then (rowsum) Y[R] | (colsum) Y[N] | (softmax) Y[R, N] | (layernorm) W[N], B[N], Y[R, N]
 * (layernorm_stats: and Mean[R], Rstd[R]) | (rmsnorm) W[N], Y[R, N] | (gemv) x[N], y[R] (gemv_batch:
 * X[B, N], Y[B, R]). */
static bool rows_setup(Run *r)
{
    const Workload *w = r->w;
    size_t mn = (size_t)(w->m * w->n), n = (size_t)w->n;
    for (int s = 0; s < r->nsets; s++) {
        CUdeviceptr *b = r->buf[s];
        float **keep = s ? NULL : &r->host[0];
        size_t es = dt_size(w->in);
        if (!dalloc(&b[0], es * mn) || !fill_random(b[0], mn, w->in, 400 + 4 * s, -1, 1, keep))
            return false;
        switch (w->kind) {
        case K_RMSNORM:   /* W near 1 */
            if (!dalloc(&b[1], es * n) || !dalloc(&b[2], es * mn)
                || !fill_random(b[1], n, w->in, 401 + 4 * s, 0.5f, 1.5f, s ? NULL : &r->host[1]))
                return false;
            break;
        case K_GEMV: {    /* W [m, n], x [batch, n], y [batch, m] */
            size_t nb = (size_t)batch(w);
            if (!dalloc(&b[1], es * n * nb) || !dalloc(&b[2], 4 * (size_t)w->m * nb)
                || !fill_random(b[1], n * nb, w->in, 401 + 4 * s, -1, 1, s ? NULL : &r->host[1]))
                return false;
            break;
        }
        case K_ROWSUM:
            if (!dalloc(&b[1], 4 * (size_t)w->m)) return false;
            break;
        case K_COLSUM:
            if (!dalloc(&b[1], 4 * n)) return false;
            break;
        case K_SOFTMAX:
            if (!dalloc(&b[1], 4 * mn)) return false;
            break;
        default:   /* layernorm: W near 1, B small */
            if (!dalloc(&b[1], 4 * n) || !dalloc(&b[2], 4 * n) || !dalloc(&b[3], 4 * mn)
                || !fill_random(b[1], n, DT_F32, 401 + 4 * s, 0.5f, 1.5f, s ? NULL : &r->host[1])
                || !fill_random(b[2], n, DT_F32, 402 + 4 * s, -0.5f, 0.5f, s ? NULL : &r->host[2]))
                return false;
            if (w->stats && (!dalloc(&b[4], 4 * (size_t)w->m) || !dalloc(&b[5], 4 * (size_t)w->m)))
                return false;
        }
    }
    return copy_setup(r, r->buf[0][0], dt_size(w->in) * mn);
}

static int rows_args(Run *r, int s, tilert_arg *a)
{
    const Workload *w = r->w;
    int i = 0;
    a[i++] = tilert_ptr(r->buf[s][0]);
    a[i++] = tilert_ptr(r->buf[s][1]);
    if (w->kind == K_RMSNORM || w->kind == K_GEMV)
        a[i++] = tilert_ptr(r->buf[s][2]);
    if (w->kind == K_RMSNORM)
        a[i++] = tilert_f32(LN_EPS);
    if (w->kind == K_LAYERNORM) {
        a[i++] = tilert_ptr(r->buf[s][2]);
        a[i++] = tilert_ptr(r->buf[s][3]);
        if (w->stats) {
            a[i++] = tilert_ptr(r->buf[s][4]);
            a[i++] = tilert_ptr(r->buf[s][5]);
        }
        a[i++] = tilert_f32(LN_EPS);
    }
    a[i++] = tilert_i32((int32_t)w->m);
    a[i++] = tilert_i32((int32_t)w->n);
    if (w->kind == K_GEMV && w->k > 0)
        a[i++] = tilert_i32((int32_t)w->k);
    return i;
}

/* colsum adds into Y: clear it (untimed, as sum's out) before every launch. */
static bool colsum_before(Run *r, int s)
{
    return cu_ok(cuMemsetD32Async(r->buf[s][1], 0, (size_t)r->w->n, r->stream), "cuMemsetD32Async");
}

/* Host reference in double, row by row; error is |got - want| <= atol + rtol |want|. */
static bool rows_check(Run *r, char *msg, size_t len)
{
    const Workload *w = r->w;
    size_t R = (size_t)w->m, N = (size_t)w->n;
    CUdeviceptr yd = w->kind == K_LAYERNORM ? r->buf[0][3] : w->kind == K_RMSNORM || w->kind == K_GEMV ? r->buf[0][2] : r->buf[0][1];
    size_t nb = w->kind == K_GEMV ? (size_t)batch(w) : 1;
    size_t ny = w->kind == K_ROWSUM ? R : w->kind == K_GEMV ? R * nb : R * N;
    float *y = download(yd, ny, w->kind == K_RMSNORM ? w->in : DT_F32);
    bool stats = w->kind == K_LAYERNORM && w->stats;
    float *gmean = stats ? download(r->buf[0][4], R, DT_F32) : NULL;
    float *grstd = stats ? download(r->buf[0][5], R, DT_F32) : NULL;
    double worst = 0, err_at_worst = 0;   /* worst = error / limit */
    if (!y || (stats && (!gmean || !grstd))) {
        free(y); free(gmean); free(grstd);
        return false;
    }
    for (size_t i = 0; i < R; i++) {
        const float *x = r->host[0] + i * N;
        double a = 0, b = 0;
        if (w->kind == K_GEMV) {
            /* gemv_batch adds on the tensor cores, which truncate to 24 bits about every 16
               products (docs/language.md, "Accuracy"): a wider limit than gemv's FFMA sums */
            double rel = w->k > 0 ? 1e-5 : 1e-6;
            for (size_t v = 0; v < nb; v++) {
                const float *xv = r->host[1] + v * N;
                a = b = 0;
                for (size_t j = 0; j < N; j++) { a += (double)x[j] * xv[j]; b += fabs((double)x[j] * xv[j]); }
                double e = fabs(y[v * R + i] - a), lim = rel * b + 1e-5;
                if (!(e / lim <= worst)) { worst = isnan(e) ? INFINITY : e / lim; err_at_worst = e; }
            }
            continue;
        }
        if (w->kind == K_RMSNORM) {
            for (size_t j = 0; j < N; j++) a += (double)x[j] * x[j];
            double rstd = 1 / sqrt(a / (double)N + LN_EPS);
            /* f16 output: its rounding (2^-11 relative) on top of the f32 arithmetic */
            double rel = w->in == DT_F32 ? 1e-4 : 2e-3;
            for (size_t j = 0; j < N; j++) {
                double want = x[j] * rstd * r->host[1][j], e = fabs(y[i * N + j] - want), lim = 1e-4 + rel * fabs(want);
                if (!(e / lim <= worst)) { worst = isnan(e) ? INFINITY : e / lim; err_at_worst = e; }
            }
            continue;
        }
        if (w->kind == K_ROWSUM) {
            for (size_t j = 0; j < N; j++) { a += x[j]; b += fabs(x[j]); }
            double e = fabs(y[i] - a), lim = 1e-6 * b + 1e-5;
            if (!(e / lim <= worst)) { worst = isnan(e) ? INFINITY : e / lim; err_at_worst = e; }
            continue;
        }
        if (w->kind == K_SOFTMAX) {
            double mx = -INFINITY;
            for (size_t j = 0; j < N; j++) mx = x[j] > mx ? x[j] : mx;
            for (size_t j = 0; j < N; j++) a += exp(x[j] - mx);
            for (size_t j = 0; j < N; j++) {
                double want = exp(x[j] - mx) / a, e = fabs(y[i * N + j] - want);
                double lim = 1e-9 + 1e-4 * want;
                if (!(e / lim <= worst)) { worst = isnan(e) ? INFINITY : e / lim; err_at_worst = e; }
            }
            continue;
        }
        for (size_t j = 0; j < N; j++) a += x[j];
        a /= (double)N;
        for (size_t j = 0; j < N; j++) b += (x[j] - a) * (x[j] - a);
        double rs = 1 / sqrt(b / (double)N + LN_EPS);
        for (size_t j = 0; j < N; j++) {
            double want = (x[j] - a) * rs * r->host[1][j] + r->host[2][j];
            double e = fabs(y[i * N + j] - want), lim = 1e-4 + 1e-4 * fabs(want);
            if (!(e / lim <= worst)) { worst = isnan(e) ? INFINITY : e / lim; err_at_worst = e; }
        }
        if (stats) {   /* the row's mean (about 0 here) and rstd (about 1.7) */
            double e = fabs(gmean[i] - a), lim = 1e-6 + 1e-5 * fabs(a);
            if (!(e / lim <= worst)) { worst = isnan(e) ? INFINITY : e / lim; err_at_worst = e; }
            e = fabs(grstd[i] - rs), lim = 1e-5 * rs;
            if (!(e / lim <= worst)) { worst = isnan(e) ? INFINITY : e / lim; err_at_worst = e; }
        }
    }
    free(y); free(gmean); free(grstd);
    snprintf(msg, len, "worst error %.3g (%.2f of its limit)", err_at_worst, worst);
    return worst <= 1;
}

/* Column sums in double; |got - want| <= 1e-6 sum |x| + 1e-5, as rowsum's. */
static bool colsum_check(Run *r, char *msg, size_t len)
{
    const Workload *w = r->w;
    size_t R = (size_t)w->m, N = (size_t)w->n;
    float *y = download(r->buf[0][1], N, DT_F32);
    double *a = calloc(N, sizeof *a), *b = calloc(N, sizeof *b), worst = 0, err_at_worst = 0;
    bool ok = y && a && b;
    for (size_t i = 0; ok && i < R; i++) {
        const float *x = r->host[0] + i * N;
        for (size_t j = 0; j < N; j++) { a[j] += x[j]; b[j] += fabs(x[j]); }
    }
    for (size_t j = 0; ok && j < N; j++) {
        double e = fabs(y[j] - a[j]), lim = 1e-6 * b[j] + 1e-5;
        if (!(e / lim <= worst)) { worst = isnan(e) ? INFINITY : e / lim; err_at_worst = e; }
    }
    free(y); free(a); free(b);
    if (!ok) return false;
    snprintf(msg, len, "worst error %.3g (%.2f of its limit)", err_at_worst, worst);
    return worst <= 1;
}

/* ---------------------------------------------------------------- the kinds */

static const Kind kinds[] = {
    [K_GEMM] = { "gemm", gemm_set_bytes, gemm_setup, gemm_args, no_before, gemm_ref, gemm_check,
                 gemm_describe, gemm_work, true },
    [K_AXPY] = { "axpy", axpy_set_bytes, axpy_setup, axpy_args, no_before, copy_ref, axpy_check,
                 copy_describe, copy_work, false },
    [K_SUM] = { "sum", sum_set_bytes, sum_setup, sum_args, sum_before, copy_ref, sum_check,
                copy_describe, copy_work, false },
    [K_ROWSUM] = { "rowsum", rows_set_bytes, rows_setup, rows_args, no_before, copy_ref, rows_check,
                   copy_describe, copy_work, false },
    [K_SOFTMAX] = { "softmax", rows_set_bytes, rows_setup, rows_args, no_before, copy_ref,
                    rows_check, copy_describe, copy_work, false },
    [K_LAYERNORM] = { "layernorm", rows_set_bytes, rows_setup, rows_args, no_before, copy_ref,
                      rows_check, copy_describe, copy_work, false },
    [K_RMSNORM] = { "rmsnorm", rows_set_bytes, rows_setup, rows_args, no_before, copy_ref,
                    rows_check, copy_describe, copy_work, false },
    [K_GEMV] = { "gemv", rows_set_bytes, rows_setup, rows_args, no_before, copy_ref, rows_check,
                 copy_describe, copy_work, false },
    [K_COLSUM] = { "colsum", rows_set_bytes, rows_setup, rows_args, colsum_before, copy_ref,
                   colsum_check, copy_describe, copy_work, false },
    [K_LSE_BWD] = { "lse_bwd", lse_set_bytes, lse_setup, lse_args, lse_before, lse_ref, lse_check,
                    lse_describe, lse_work, true },
};

const Kind *kind_of(const Workload *w) { return &kinds[w->kind]; }
