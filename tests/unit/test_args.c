/* test_args.c: what a launch decides without a GPU: argument checks, assume() facts with their
 * messages, grid computation and limits, the packed parameter block, status names and the
 * per-thread error message. */
#include <pthread.h>

#include "tilert_internal.h"
#include "unit.h"

static const char matmul_meta[] =
    "//@tilec 1\n"
    "//@kernel matmul threads 256 smem 65536 regs 128\n"
    "//@arg A ptr f32 16\n"
    "//@arg B ptr f32 16\n"
    "//@arg C ptr f32 4\n"
    "//@arg M size i32 4\n"
    "//@arg K size i32 4\n"
    "//@arg N size i32 4\n"
    "//@grid a3 128 cdiv\n"
    "//@grid a5 128 cdiv\n"
    "//@assume a4 32 % 0 == | K % 32 == 0\n"
    "//@assume a5 8192 <= | N <= 8192\n"
    "//@end\n"
    "//@tilec 1\n"
    "//@kernel scalars threads 32 smem 0 regs 8\n"
    "//@arg p ptr i64 8\n"
    "//@arg f scalar f32 4\n"
    "//@arg h scalar f16 2\n"
    "//@arg g scalar bf16 2\n"
    "//@arg l scalar i64 8\n"
    "//@arg u scalar u32 4\n"
    "//@arg b scalar bool 1\n"
    "//@arg i scalar i32 4\n"
    "//@grid a7\n"
    "//@grid a4 a7 /\n"
    "//@grid a5\n"
    "//@end\n";

static rt_meta meta;

static void mm_args(tilert_arg *a, int M, int K, int N)
{
    a[0] = tilert_ptr(0x10000);
    a[1] = tilert_ptr(0x20000);
    a[2] = tilert_ptr(0x30004);
    a[3] = tilert_i32(M);
    a[4] = tilert_i32(K);
    a[5] = tilert_i32(N);
}

static void expect(const char *name, tilert_status got, tilert_status want, const char *words)
{
    unit_check(got == want && (!words || strstr(tilert_last_error(), words)), name,
               "status %s (wanted %s), message \"%s\"%s%s", tilert_status_name(got),
               tilert_status_name(want), got ? tilert_last_error() : "",
               words ? " wanted to contain: " : "", words ? words : "");
}

static void check_args(void)
{
    const rt_kernel_meta *k = &meta.k[0];
    tilert_arg a[8];
    mm_args(a, 129, 64, 100);
    expect("args ok", rt_check_args(k, a, 6), TILERT_OK, NULL);
    expect("args too few", rt_check_args(k, a, 5), TILERT_ERR_BAD_ARGS,
           "kernel matmul takes 6 arguments, got 5");
    expect("args NULL array", rt_check_args(k, NULL, 6), TILERT_ERR_BAD_ARGS, "NULL");
    a[1] = tilert_i32(5);
    expect("args i32 for a pointer", rt_check_args(k, a, 6), TILERT_ERR_BAD_ARGS,
           "argument 1 (B): expected TILERT_ARG_PTR, got TILERT_ARG_I32");
    mm_args(a, 129, 64, 100);
    a[0] = tilert_ptr(0);
    expect("args null pointer", rt_check_args(k, a, 6), TILERT_ERR_BAD_ARGS, "(A): null pointer");
    a[0] = tilert_ptr(0x10008);
    expect("args misaligned pointer", rt_check_args(k, a, 6), TILERT_ERR_BAD_ARGS,
           "pointer 0x10008 is not 16-byte aligned");
    mm_args(a, 129, 64, 100);
    a[4] = tilert_f32(64);
    expect("args f32 for a size", rt_check_args(k, a, 6), TILERT_ERR_BAD_ARGS,
           "expected TILERT_ARG_I32, got TILERT_ARG_F32");
    a[4] = tilert_i32(-1);
    expect("args negative size", rt_check_args(k, a, 6), TILERT_ERR_BAD_ARGS,
           "(K): negative size -1");
    a[4].kind = (tilert_arg_kind)77;
    expect("args garbage kind", rt_check_args(k, a, 6), TILERT_ERR_BAD_ARGS, "(bad kind)");

    /* scalars need their exact kind */
    k = &meta.k[1];
    tilert_arg s[8] = {tilert_ptr(0x1000), tilert_f32(1.5f)};
    s[2].kind = TILERT_ARG_F16BITS, s[2].v.bits16 = 0x3c00;
    s[3].kind = TILERT_ARG_BF16BITS, s[3].v.bits16 = 0x3f80;
    s[4].kind = TILERT_ARG_I64, s[4].v.i64 = INT64_C(1) << 40;
    s[5].kind = TILERT_ARG_U32, s[5].v.u32 = 0xdeadbeefu;
    s[6].kind = TILERT_ARG_BOOL, s[6].v.b = 7;
    s[7] = tilert_i32(-5);    /* a scalar, not a size: negative is fine */
    expect("args every scalar kind", rt_check_args(k, s, 8), TILERT_OK, NULL);
    tilert_arg save = s[2];
    s[2].kind = TILERT_ARG_BF16BITS;
    expect("args bf16 for f16", rt_check_args(k, s, 8), TILERT_ERR_BAD_ARGS,
           "(h): expected TILERT_ARG_F16BITS, got TILERT_ARG_BF16BITS");
    s[2] = save;
    s[5] = tilert_i32(1);
    expect("args i32 for u32", rt_check_args(k, s, 8), TILERT_ERR_BAD_ARGS,
           "expected TILERT_ARG_U32");
}

static void check_assumes(void)
{
    const rt_kernel_meta *k = &meta.k[0];
    tilert_arg a[6];
    mm_args(a, 64, 1024, 100);
    expect("assume true", rt_check_assumes(k, a, 6), TILERT_OK, NULL);
    mm_args(a, 64, 1000, 100);
    expect("assume false names the fact and the size", rt_check_assumes(k, a, 6),
           TILERT_ERR_ASSUME, "assume(K % 32 == 0) is false for these arguments (K = 1000)");
    mm_args(a, 64, 32, 8193);
    expect("assume second fact", rt_check_assumes(k, a, 6), TILERT_ERR_ASSUME,
           "assume(N <= 8192) is false for these arguments (N = 8193)");
    mm_args(a, 64, 0, 0);
    expect("assume with zero sizes", rt_check_assumes(k, a, 6), TILERT_OK, NULL);
}

static void grid_of(const char *name, const rt_kernel_meta *k, const tilert_arg *a, int n,
                    unsigned x, unsigned y, unsigned z, bool empty)
{
    unsigned g[3] = {9, 9, 9};
    bool e = !empty;
    tilert_status s = rt_compute_grid(k, a, n, g, &e);
    unit_check(s == TILERT_OK && g[0] == x && g[1] == y && g[2] == z && e == empty, name,
               "status %s (%s), grid %u %u %u empty %d", tilert_status_name(s),
               s ? tilert_last_error() : "", g[0], g[1], g[2], (int)e);
}

static void check_grid(void)
{
    const rt_kernel_meta *k = &meta.k[0];
    tilert_arg a[8];
    mm_args(a, 129, 64, 100);
    grid_of("grid 129x100", k, a, 6, 2, 1, 1, false);
    mm_args(a, 1, 4, 1);
    grid_of("grid 1x1", k, a, 6, 1, 1, 1, false);
    mm_args(a, 128, 4, 257);
    grid_of("grid 128x257", k, a, 6, 1, 3, 1, false);
    mm_args(a, 0, 4, 257);
    grid_of("grid M = 0 is empty", k, a, 6, 0, 3, 1, true);
    mm_args(a, 1, 4, 65535 * 128 + 1);
    unsigned g[3];
    bool e;
    expect("grid y over 65535", rt_compute_grid(k, a, 6, g, &e), TILERT_ERR_BAD_ARGS,
           "grid dimension y is 65536 blocks (allowed 0..65535)");
    mm_args(a, 1, 4, 65535 * 128);
    grid_of("grid y = 65535", k, a, 6, 1, 65535, 1, false);
    mm_args(a, INT32_MAX, 4, 1);
    grid_of("grid x from INT32_MAX", k, a, 6, 16777216, 1, 1, false);

    /* kernel 1: grid (i, l / i, u) */
    k = &meta.k[1];
    tilert_arg s[8] = {tilert_ptr(0x1000), tilert_f32(1.5f)};
    s[2].kind = TILERT_ARG_F16BITS, s[2].v.bits16 = 0;
    s[3].kind = TILERT_ARG_BF16BITS, s[3].v.bits16 = 0;
    s[4].kind = TILERT_ARG_I64, s[4].v.i64 = 6;
    s[5].kind = TILERT_ARG_U32, s[5].v.u32 = 4;
    s[6].kind = TILERT_ARG_BOOL, s[6].v.b = 1;
    s[7] = tilert_i32(3);
    grid_of("grid 3 dims from scalars", k, s, 8, 3, 2, 4, false);
    s[7] = tilert_i32(-3);
    expect("grid negative", rt_compute_grid(k, s, 8, g, &e), TILERT_ERR_BAD_ARGS,
           "grid dimension x is -3 blocks");
    s[7] = tilert_i32(0);
    expect("grid division by zero", rt_compute_grid(k, s, 8, g, &e), TILERT_ERR_BAD_ARGS,
           "kernel scalars: grid dimension y: division by zero (6 / 0) (l = 6, i = 0)");
    s[7] = tilert_i32(1);
    s[4].v.i64 = INT64_C(1) << 31;
    expect("grid x over 2^31-1", rt_compute_grid(k, s, 8, g, &e), TILERT_ERR_BAD_ARGS,
           "grid dimension y is 2147483648");
    s[4].v.i64 = 1;
    s[5].v.u32 = 70000;
    expect("grid z over 65535", rt_compute_grid(k, s, 8, g, &e), TILERT_ERR_BAD_ARGS,
           "grid dimension z is 70000");
    s[5].v.u32 = 0;
    grid_of("grid z = 0 is empty", k, s, 8, 1, 1, 0, true);
    expect("grid wrong count", rt_compute_grid(k, s, 7, g, &e), TILERT_ERR_BAD_ARGS,
           "takes 8 arguments");
}

static void check_plan(void)
{
    const rt_kernel_meta *k = &meta.k[1];
    tilert_arg s[8] = {tilert_ptr(0x123456789a0ull), tilert_f32(1.5f)};
    s[2].kind = TILERT_ARG_F16BITS, s[2].v.bits16 = 0x3c00;
    s[3].kind = TILERT_ARG_BF16BITS, s[3].v.bits16 = 0x3f80;
    s[4].kind = TILERT_ARG_I64, s[4].v.i64 = (INT64_C(0x1234) << 30);  /* grid y: l / i */
    s[5].kind = TILERT_ARG_U32, s[5].v.u32 = 3;
    s[6].kind = TILERT_ARG_BOOL, s[6].v.b = 7;
    s[7] = tilert_i32(1 << 30);
    rt_launch_plan p;
    memset(&p, 0xab, sizeof p);
    tilert_status st = rt_plan_launch(k, s, 8, &p);
    if (!unit_check(st == TILERT_OK, "plan scalars", "%s", tilert_last_error()))
        return;
    CUdeviceptr ptr;
    float f;
    uint16_t h, g;
    int64_t l;
    uint32_t u, b;
    int32_t i;
    memcpy(&ptr, p.params[0], 8);
    memcpy(&f, p.params[1], 4);
    memcpy(&h, p.params[2], 2);
    memcpy(&g, p.params[3], 2);
    memcpy(&l, p.params[4], 8);
    memcpy(&u, p.params[5], 4);
    memcpy(&b, p.params[6], 4);
    memcpy(&i, p.params[7], 4);
    unit_check(ptr == 0x123456789a0ull && f == 1.5f && h == 0x3c00 && g == 0x3f80 &&
                   l == (INT64_C(0x1234) << 30) && u == 3 && b == 1 && i == 1 << 30,
               "plan packs every ABI type", "ptr %llx f %g h %x g %x l %lld u %x b %u i %d",
               (unsigned long long)ptr, f, h, g, (long long)l, u, b, i);
    bool aligned = true;
    for (int j = 0; j < 8; j++)
        aligned &= (uintptr_t)p.params[j] % 8 == 0 && (j == 0 || p.params[j] != p.params[j - 1]);
    unit_check(aligned, "plan slots distinct and 8-byte aligned", "");
    unit_check(p.grid[0] == 1u << 30 && p.grid[1] == 0x1234 && p.grid[2] == 3 && !p.empty,
               "plan grid", "grid %u %u %u", p.grid[0], p.grid[1], p.grid[2]);

    tilert_arg a[6];
    mm_args(a, 100, 1000, 100);
    expect("plan refuses a false assume", rt_plan_launch(&meta.k[0], a, 6, &p), TILERT_ERR_ASSUME,
           "K = 1000");
    mm_args(a, 0, 1024, 100);
    st = rt_plan_launch(&meta.k[0], a, 6, &p);
    unit_check(st == TILERT_OK && p.empty, "plan empty grid", "status %s",
               tilert_status_name(st));
}

static void *other_thread(void *arg)
{
    (void)arg;
    rt_error(TILERT_ERR_JIT, "message of the other thread");
    return NULL;
}

static void check_errors(void)
{
    bool names = true;
    for (int s = TILERT_OK; s <= TILERT_ERR_ARCH; s++)
        names &= strncmp(tilert_status_name((tilert_status)s), "TILERT_", 7) == 0 &&
                 strcmp(tilert_status_name((tilert_status)s), "TILERT_ERR_UNKNOWN") != 0;
    unit_check(names && !strcmp(tilert_status_name(TILERT_ERR_ASSUME), "TILERT_ERR_ASSUME") &&
                   !strcmp(tilert_status_name((tilert_status)99), "TILERT_ERR_UNKNOWN"),
               "status names", "");
    rt_error(TILERT_ERR_BAD_ARGS, "message of the main thread");
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);
    unit_check(!strcmp(tilert_last_error(), "message of the main thread"),
               "error message is per thread", "got \"%s\"", tilert_last_error());
    /* The API refuses NULLs instead of crashing, without touching the driver. */
    tilert_module *m;
    tilert_kernel *k;
    tilert_kernel_info info;
    unsigned g[3];
    expect("NULL context", tilert_load_ptx(NULL, "x", &m), TILERT_ERR_BAD_ARGS, "NULL");
    expect("NULL kernel launch", tilert_launch(NULL, 0, NULL, 0), TILERT_ERR_BAD_ARGS, "NULL");
    expect("NULL module", tilert_get_kernel(NULL, "k", &k), TILERT_ERR_BAD_ARGS, "NULL");
    expect("NULL info", tilert_kernel_get_info(NULL, &info), TILERT_ERR_BAD_ARGS, "NULL");
    expect("NULL grid", tilert_kernel_grid(NULL, NULL, 0, g), TILERT_ERR_BAD_ARGS, "NULL");
    tilert_context *attached = (tilert_context *)&m;   /* must come back NULL */
    expect("attach NULL context", tilert_attach(NULL, &attached), TILERT_ERR_BAD_ARGS, "NULL");
    unit_check(attached == NULL, "attach NULL context: no handle", "");
    expect("attach NULL out", tilert_attach((CUcontext)&m, NULL), TILERT_ERR_BAD_ARGS, "NULL");
    tilert_unload(NULL);
    tilert_release(NULL);
    unit_check(tilert_device_arch(NULL) == 0 && tilert_cu_context(NULL) == NULL,
               "NULL context queries", "");
    /* Without a driver (the stub) init says so; with a GPU it works. Either way no crash. */
    tilert_context *ctx = NULL;
    tilert_status s = tilert_init(0, &ctx);
    unit_check((s == TILERT_OK && ctx && tilert_device_arch(ctx) >= 50) ||
                   (s == TILERT_ERR_NO_DEVICE && !ctx && strstr(tilert_last_error(), "CUDA_ERROR")),
               "init: a device or TILERT_ERR_NO_DEVICE", "status %s: %s", tilert_status_name(s),
               tilert_last_error());
    if (s == TILERT_OK) {
        expect("init: no such device", tilert_init(4096, &ctx), TILERT_ERR_NO_DEVICE,
               "no CUDA device 4096");
        tilert_context *c2;
        tilert_init(0, &c2);
        tilert_release(c2);
    }
}

int main(void)
{
    tilert_status s = rt_meta_parse(matmul_meta, &meta);
    if (!unit_check(s == TILERT_OK, "test metadata parses", "%s", tilert_last_error()))
        return unit_exit();
    check_args();
    check_assumes();
    check_grid();
    check_plan();
    check_errors();
    rt_meta_free(&meta);
    return unit_exit();
}
