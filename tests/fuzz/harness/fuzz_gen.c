/* fuzz_gen.c: libFuzzer target: the input bytes are choices, read one at a time, that build a
 * valid program (or one a size makes invalid) from the shapes the examples have: elementwise
 * windows, reductions, tensor-core and FFMA matmuls in pipelined loops, shared tiles, nests of
 * constant loops, chains of consts with -D overrides, i64 arithmetic on constants. Mutating
 * text rarely keeps a program valid past the parser; this target spends its inputs on lowering,
 * register allocation and emission, and on the sizes they compute with.
 *
 * Sizes: by default the generator stays where the compiler's answers are ordinary (tiles of up
 * to 2^14 elements, loops of up to 16 trips nested 3 deep, values that fit in 32 bits). With
 * TILEC_FUZZ_EXTREME=1 (fuzz.sh --extreme) it draws window extents, tensor shape constants, -D
 * values, trip counts, loop nesting, numbers of consts, threads(...) and i64 constants up to
 * 2^63 - 1: the class of bugs where sizes overflow int, shared-memory sizes wrap or compile time
 * explodes. TILEC_FUZZ_PRINT=1 prints each program with its options as a `// flags:` line;
 * TILEC_FUZZ_SAVE=FILE writes the same behind a zero byte: an input of fuzz_compile, which
 * compiles it the same way. That is the form a finding is kept in (tests/fuzz/regress/compile/),
 * since what bytes make which program changes whenever this generator does.
 *
 * The first byte picks the architecture and options as in fuzz_compile.c. */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_job.h"
#include "fuzz_util.h"

enum { MAX_DEFS = 16 };

typedef struct {
    const uint8_t *p;
    size_t n;
    bool extreme;
    Buf consts;            /* the program's consts, which come first */
    Buf src;               /* its kernels */
    Buf flags;             /* its -D flags, as a `// flags:` line would have them */
    Define defs[MAX_DEFS];
    int ndefs;
    char def_text[MAX_DEFS][2][32];
    int nconsts;           /* consts C0 .. C{n-1} declared */
    int kernels;
} Gen;

/* The next choice in [0, n): a byte of input (0 once they run out, so every input ends). */
static unsigned pick(Gen *g, unsigned n)
{
    if (!g->n || n <= 1)
        return 0;
    g->n--;
    return *g->p++ % n;
}

static bool coin(Gen *g) { return pick(g, 2); }

static uint64_t pick64(Gen *g)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | pick(g, 256);
    return v;
}

/* A power of two 2^lo .. 2^hi; in extreme mode, sometimes any size up to 2^63 - 1 instead:
 * a power of two past any limit or next to one, the edges of the integer types, raw bits. */
static int64_t size_pow2(Gen *g, int lo, int hi)
{
    if (g->extreme && pick(g, 4) == 0) {
        static const int64_t edges[] = {
            INT32_MAX, (int64_t)INT32_MAX + 1, UINT32_MAX, (int64_t)UINT32_MAX + 1, INT64_MAX,
            INT64_MAX / 2 + 1, (int64_t)1 << 53, ((int64_t)1 << 53) + 1, 0, -1, 3, 65535,
        };
        switch (pick(g, 4)) {
        case 0: return (int64_t)1 << pick(g, 63);
        case 1: return ((int64_t)1 << pick(g, 63)) + (int64_t)pick(g, 3) - 1;
        case 2: return edges[pick(g, sizeof edges / sizeof *edges)];
        default: return (int64_t)(pick64(g) >> 1);
        }
    }
    return (int64_t)1 << (lo + (int)pick(g, (unsigned)(hi - lo + 1)));
}

/* A small count lo .. hi; extreme mode stretches hi to `far`. */
static int64_t count(Gen *g, int64_t lo, int64_t hi, int64_t far)
{
    if (g->extreme && pick(g, 4) == 0)
        return lo + (int64_t)(pick64(g) % ((uint64_t)far - (uint64_t)lo + 1));
    return lo + pick(g, (unsigned)(hi - lo + 1));
}

static void put_to(Buf *b, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    buf_puts(b, line);
}

/* A line of the kernel being generated. */
static void put(Gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_to(&g->src, fmt, ap);
    va_end(ap);
}

/* A const declaration: before every kernel, whichever kernel asked for it. */
static void put_const(Gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_to(&g->consts, fmt, ap);
    va_end(ap);
}

/* A const C<index> of value v; on a choice, -D overrides it with a value of the same kind:
 * another power of two 2^0 .. 2^hi (hi >= 0), or another count lo .. -hi (hi < 0). The limits
 * keep an override as ordinary as the value it replaces, in normal mode. Returns the index. */
static int new_const(Gen *g, int64_t v, int lo, int hi)
{
    int i = g->nconsts++;
    put_const(g, "const C%d = %" PRId64 ";\n", i, v);
    if (g->ndefs < MAX_DEFS && pick(g, 6) == 0) {
        int64_t w = hi >= 0 ? size_pow2(g, lo, hi) : count(g, lo, -hi, INT64_MAX);
        snprintf(g->def_text[g->ndefs][0], sizeof g->def_text[0][0], "C%d", i);
        snprintf(g->def_text[g->ndefs][1], sizeof g->def_text[0][1], "%" PRId64, w);
        g->defs[g->ndefs] = (Define){ g->def_text[g->ndefs][0], g->def_text[g->ndefs][1], false };
        buf_printf(&g->flags, " -D C%d=%" PRId64, i, w);
        g->ndefs++;
    }
    return i;
}

/* A const holding a power of two 2^lo .. 2^hi (extreme mode: any size). */
static int pow2_const(Gen *g, int lo, int hi)
{
    if (hi < lo)
        hi = lo;
    return new_const(g, size_pow2(g, lo, hi), lo, hi);
}

/* A const holding a count lo .. hi (extreme mode: up to far). */
static int count_const(Gen *g, int lo, int hi, int64_t far)
{
    return new_const(g, count(g, lo, hi, far), lo, -hi);
}

/* Consts that only chain: C(i) = C(i-1) op literal; many of them in extreme mode. */
static void const_chain(Gen *g)
{
    int64_t n = count(g, 0, 8, 20000);
    if (!n)
        return;
    int first = count_const(g, 0, 99, INT64_MAX);
    static const char ops[] = "+-*/%";
    for (int64_t i = 1; i < n; i++) {
        int c = g->nconsts++;
        char op = ops[pick(g, 5)];
        int64_t lit = op == '/' || op == '%' ? 1 + pick(g, 9) : pick(g, 3);
        put_const(g, "const C%d = C%d %c %" PRId64 ";\n", c, c == first + 1 ? first : c - 1, op, lit);
    }
}

/* Block sizes: a power of two from 32 to 1024 (extreme mode: any int). *lg is its log2, the
 * budget of tile sizes (5 when it is no power of two). */
static int threads_value(Gen *g, int *lg)
{
    if (g->extreme && pick(g, 8) == 0) {
        *lg = 5;
        return (int)(int32_t)pick64(g);
    }
    *lg = 5 + (int)pick(g, 6);
    return 1 << *lg;
}

/* log2 of a tile dimension: lo .. min(hi, budget), at least lo. */
static int dim_log(Gen *g, int lo, int hi, int budget)
{
    if (budget < hi)
        hi = budget;
    if (hi < lo)
        hi = lo;
    return lo + (int)pick(g, (unsigned)(hi - lo + 1));
}

static void kernel_head(Gen *g, int threads, const char *params, const char *grid)
{
    put(g, "\nkernel k%d(%s)\n    grid(%s)\n    threads(%d)\n{\n", g->kernels++, params, grid, threads);
}

static const char *float_type(Gen *g)
{
    static const char *const t[] = { "f32", "f16", "bf16" };
    return t[pick(g, 3)];
}

/* An elementwise expression over x (a tile of f32) and s (an f32 scalar), depth at most d. */
static void expr(Gen *g, Buf *b, int d)
{
    if (d <= 0 || pick(g, 3) == 0) {
        static const char *const leaves[] = { "x", "s", "1.5", "x", "-inf", "0.0" };
        buf_puts(b, leaves[pick(g, sizeof leaves / sizeof *leaves)]);
        return;
    }
    switch (pick(g, 6)) {
    case 0: {
        static const char *const fn[] = { "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh",
                                          "sigmoid", "abs" };
        buf_printf(b, "%s(", fn[pick(g, 9)]);
        expr(g, b, d - 1);
        buf_puts(b, ")");
        return;
    }
    case 1:
        buf_puts(b, pick(g, 2) ? "max(" : "min(");
        expr(g, b, d - 1);
        buf_puts(b, ", ");
        expr(g, b, d - 1);
        buf_puts(b, ")");
        return;
    case 2:
        buf_puts(b, "where(x > s, ");
        expr(g, b, d - 1);
        buf_puts(b, ", ");
        expr(g, b, d - 1);
        buf_puts(b, ")");
        return;
    default: {
        static const char ops[] = "+-*/";
        buf_puts(b, "(");
        expr(g, b, d - 1);
        buf_printf(b, " %c ", ops[pick(g, 4)]);
        expr(g, b, d - 1);
        buf_puts(b, ")");
        return;
    }
    }
}

static void put_expr(Gen *g, int d)
{
    Buf e = { 0 };
    expr(g, &e, d);
    buf_puts(&g->src, e.s);
    buf_free(&e);
}

/* assume() facts about the size n: a chain of comparisons (past what the launcher evaluates in
 * extreme mode), maybe with a comment inside, of any bytes but its end, which the metadata
 * carries along as the fact's text. */
static void assumes(Gen *g, const char *n)
{
    int64_t terms = count(g, 0, 3, 60);
    if (!terms)
        return;
    static const char *const cmp[] = { ">", ">=", "!=", "<=" };
    put(g, "    assume(%s %s %u", n, cmp[pick(g, 4)], pick(g, 3));
    for (int64_t i = 1; i < terms; i++) {
        if (pick(g, 8) == 0) {
            buf_puts(&g->src, " /* ");
            for (unsigned j = 0, len = pick(g, 64); j < len; j++) {
                char c = (char)pick(g, 256);
                buf_add(&g->src, c == '*' || !c ? "x" : &c, 1);
            }
            buf_puts(&g->src, " */");
        }
        put(g, " %s %s %% %u == 0", coin(g) ? "&&" : "||", n, 1u << pick(g, 5));
    }
    put(g, ");\n");
}

/* Tile sizes are budgeted per thread (normal mode): a tile has at most 2^(lg + 6) elements for
 * a block of 2^lg threads, 64 a thread, the examples' order of magnitude. */

/* Z[i0 +: W] = f(X[i0 +: W], s), W a const. */
static void k_elementwise(Gen *g)
{
    int lg, t = threads_value(g, &lg);
    int w = pow2_const(g, 0, dim_log(g, 0, 16, lg + 6));
    const char *ty = float_type(g);
    char params[128], grid[64];
    snprintf(params, sizeof params, "X: %s[N], Z: %s[N], s: f32", ty, ty);
    snprintf(grid, sizeof grid, "cdiv(N, C%d)", w);
    kernel_head(g, t, params, grid);
    assumes(g, "N");
    put(g, "    let i0 = block.x * C%d;\n", w);
    put(g, "    let x = f32(X[i0 +: C%d]%s);\n", w, coin(g) ? " else -inf" : "");
    bool branch = coin(g);
    if (branch)
        put(g, "    if s > 0.0 {\n");
    put(g, "    Z[i0 +: C%d] = %s(", w, ty);
    put_expr(g, 3);
    put(g, ");\n");
    if (branch) {
        put(g, "    } else {\n        Z[i0 +: C%d] = %s(", w, ty);
        put_expr(g, 2);
        put(g, ");\n    }\n");
    }
    put(g, "}\n");
}

/* A 2-D window, reduced along an axis or whole, broadcast back. */
static void k_reduce(Gen *g)
{
    int lg, t = threads_value(g, &lg);
    int lh = dim_log(g, 0, 8, lg + 5);
    int h = pow2_const(g, 0, lh), w = pow2_const(g, 0, dim_log(g, 0, 12, lg + 5 - lh));
    char grid[64];
    snprintf(grid, sizeof grid, "cdiv(R, C%d), cdiv(N, C%d)", h, w);
    kernel_head(g, t, "X: f32[R, N], Y: f32[R, N], V: f32[R]", grid);
    if (coin(g))
        put(g, "    assume(N <= C%d);\n", w);
    put(g, "    let r0 = block.x * C%d;\n    let c0 = block.y * C%d;\n", h, w);
    put(g, "    let x = X[r0 +: C%d, c0 +: C%d]%s;\n", h, w, coin(g) ? " else -inf" : "");
    static const char *const red[] = { "sum", "max", "min" };
    const char *r = red[pick(g, 3)];
    switch (pick(g, 3)) {
    case 0: put(g, "    Y[r0 +: C%d, c0 +: C%d] = x - %s(x, axis=1);\n", h, w, r); break;
    case 1: put(g, "    Y[r0 +: C%d, c0 +: C%d] = x / %s(x, axis=0);\n", h, w, r); break;
    default: put(g, "    atomic_add(V[r0], %s(x));\n", r); break;
    }
    put(g, "}\n");
}

/* C = A @ B in a k loop, maybe pipelined, maybe a tensor-core type, maybe an epilogue. */
static void k_matmul(Gen *g)
{
    static const char *const types[] = { "f32", "f16", "bf16", "tf32" };
    int lg, t = threads_value(g, &lg);
    const char *ty = types[pick(g, 4)];
    bool tf32 = !strcmp(ty, "tf32");
    const char *st = tf32 ? "f32" : ty;
    /* the accumulator up to 128 a thread (the examples' 128 x 256 on 256 threads), the operand
       tiles up to 64 */
    int lm = dim_log(g, 3, 8, lg + 4), ln = dim_log(g, 3, 8, lg + 7 - lm);
    int lk = dim_log(g, 2, 7, lg + 6 - (lm > ln ? lm : ln));
    int bm = pow2_const(g, 3, lm), bn = pow2_const(g, 3, ln), bk = pow2_const(g, 2, lk);
    int stages = count_const(g, 0, 4, 64);
    bool c_f32 = coin(g);
    char params[160], grid[96];
    snprintf(params, sizeof params, "A: %s[M, K], B: %s[K, N], C: %s[M, N]", st, st, c_f32 ? "f32" : st);
    snprintf(grid, sizeof grid, "cdiv(M, C%d), cdiv(N, C%d)", bm, bn);
    kernel_head(g, t, params, grid);
    static const int aligns[] = { 1, 2, 4, 8, 16 };
    if (coin(g))
        put(g, "    assume(K %% %d == 0);\n", aligns[pick(g, 5)]);
    if (coin(g))
        put(g, "    assume(N %% %d == 0);\n", aligns[pick(g, 5)]);
    assumes(g, "M");
    put(g, "    let m0 = block.x * C%d;\n    let n0 = block.y * C%d;\n", bm, bn);
    put(g, "    var acc: f32[C%d, C%d] = 0;\n", bm, bn);
    put(g, "    for k in 0 .. K step C%d pipeline(C%d) {\n", bk, stages);
    if (tf32)
        put(g, "        acc += tf32(A[m0 +: C%d, k +: C%d]) @ tf32(B[k +: C%d, n0 +: C%d]);\n", bm, bk, bk, bn);
    else
        put(g, "        acc += A[m0 +: C%d, k +: C%d] @ B[k +: C%d, n0 +: C%d];\n", bm, bk, bk, bn);
    put(g, "    }\n");
    const char *out = c_f32 ? "" : st;
    switch (pick(g, 3)) {
    case 0: put(g, "    C[m0 +: C%d, n0 +: C%d] = %s(acc);\n", bm, bn, out); break;
    case 1: put(g, "    C[m0 +: C%d, n0 +: C%d] = %s(max(acc * 0.5, 0.0));\n", bm, bn, out); break;
    default: put(g, "    C[m0 +: C%d, n0 +: C%d] = %s(acc - max(acc, axis=1));\n", bm, bn, out); break;
    }
    put(g, "}\n");
}

/* Nested loops with constant bounds (unrolled when short), summing windows: at most 64
 * iterations in all in normal mode. */
static void k_loops(Gen *g)
{
    int lg, t = threads_value(g, &lg);
    int w = pow2_const(g, 0, dim_log(g, 0, 12, lg + 4));
    int depth = (int)count(g, 1, 3, 24);
    kernel_head(g, t, "X: f32[N], out: f32[1]", "cdiv(N, 4096)");
    put(g, "    var s: f32 = 0;\n");
    Buf idx = { 0 };
    buf_puts(&idx, "0");
    int64_t left = 64;
    for (int d = 0; d < depth; d++) {
        int most = left < 16 ? (int)left : 16;
        int tc = count_const(g, 0, most, INT64_MAX / 2);
        int64_t step = count(g, 1, 3, INT32_MAX);
        int64_t lo = pick(g, 3);
        put(g, "%*sfor i%d in %" PRId64 " .. C%d step %" PRId64 " {\n", 4 + 4 * d, "", d, lo, tc, step);
        buf_printf(&idx, " + i%d", d);
        left /= most > 1 ? most : 1;
    }
    put(g, "%*ss += sum(X[(%s) * C%d +: C%d]);\n", 4 + 4 * depth, "", idx.s, w, w);
    for (int d = depth - 1; d >= 0; d--)
        put(g, "%*s}\n", 4 + 4 * d, "");
    buf_free(&idx);
    put(g, "    atomic_add(out[0], s);\n}\n");
}

/* A shared tile written whole, read back, maybe in a pipelined loop. */
static void k_shared(Gen *g)
{
    int lg, t = threads_value(g, &lg);
    int lh = dim_log(g, 0, 8, lg + 5);
    int h = pow2_const(g, 0, lh), w = pow2_const(g, 0, dim_log(g, 0, 10, lg + 5 - lh));
    const char *ty = float_type(g);
    char params[96];
    snprintf(params, sizeof params, "X: %s[R, N], Y: %s[R, N]", ty, ty);
    kernel_head(g, t, params, "cdiv(R, 64)");
    put(g, "    var t: shared %s[C%d, C%d];\n", ty, h, w);
    if (coin(g)) {
        int st = count_const(g, 0, 4, 1000);
        put(g, "    var acc: f32[C%d, C%d] = 0;\n", h, w);
        put(g, "    for j in 0 .. N step C%d pipeline(C%d) {\n", w, st);
        put(g, "        t = X[block.x * C%d +: C%d, j +: C%d];\n", h, h, w);
        put(g, "        acc += f32(t);\n    }\n");
        put(g, "    Y[block.x * C%d +: C%d, 0 +: C%d] = %s(acc);\n}\n", h, h, w, ty);
    } else {
        put(g, "    t = X[block.x * C%d +: C%d, 0 +: C%d];\n", h, h, w);
        put(g, "    Y[block.x * C%d +: C%d, 0 +: C%d] = %s(f32(t) * 2.0);\n}\n", h, h, w, ty);
    }
}

/* i64 arithmetic on large constants, constant tensor extents and strides. */
static void k_i64(Gen *g)
{
    int lg, t = threads_value(g, &lg);
    int64_t big = g->extreme ? (int64_t)(pick64(g) >> pick(g, 64)) : (int64_t)pick(g, 256) << pick(g, 23);
    int b = new_const(g, big, 0, -INT32_MAX);
    int e0 = pow2_const(g, 0, 20), e1 = pow2_const(g, 0, 12);
    int w = pow2_const(g, 0, dim_log(g, 0, 12, lg + 6));
    char params[160];
    if (coin(g))
        snprintf(params, sizeof params, "X: i64[C%d, C%d], Y: i64[C%d], v: i64", e0, e1, e0);
    else
        snprintf(params, sizeof params, "X: i64[C%d, C%d] strides(C%d, 1), Y: i64[C%d], v: i64", e0,
                 e1, e1, e0);
    kernel_head(g, t, params, "1");
    put(g, "    let big = i64(C%d) * i64(block.x + 1) + v;\n", b);
    switch (pick(g, 3)) {
    case 0: put(g, "    Y[0 +: C%d] = X[0 +: C%d, 0] + big;\n", w, w); break;
    case 1: put(g, "    Y[0 +: C%d] = X[0 +: C%d, C%d - 1] / max(big, i64(1));\n", w, w, e1); break;
    default: put(g, "    Y[0 +: C%d] = i64(i32(big)) + X[0 +: C%d, 0] %% max(v, i64(1));\n", w, w); break;
    }
    put(g, "}\n");
}

static void generate(Gen *g)
{
    const_chain(g);
    int nk = 1 + (int)pick(g, 3);
    for (int i = 0; i < nk; i++)
        switch (pick(g, 6)) {
        case 0: k_elementwise(g); break;
        case 1: k_reduce(g); break;
        case 2: k_matmul(g); break;
        case 3: k_loops(g); break;
        case 4: k_shared(g); break;
        default: k_i64(g); break;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    Gen g;
    memset(&g, 0, sizeof g);
    const char *ex = getenv("TILEC_FUZZ_EXTREME");
    g.extreme = ex && *ex && strcmp(ex, "0");
    unsigned o = data[0];
    g.p = data + 1;
    g.n = size - 1;
    generate(&g);
    if (g.src.len)
        buf_puts(&g.consts, g.src.s);
    CompileJob job;
    memset(&job, 0, sizeof job);
    job.file = "gen.tile";
    job.src = g.consts.s ? g.consts.s : "";
    job.len = g.consts.len;
    job.defs = g.defs;
    job.ndefs = g.ndefs;
    fuzz_options(&job, o, "gen");
    /* the producer warp and its clusters (sm_90a products): drawn after the program, so the
       bytes that made a program still make it */
    unsigned ws = pick(&g, 4);
    job.opt.warp_spec = ws >= 2;
    job.opt.cluster = ws == 3;
    const char *print = getenv("TILEC_FUZZ_PRINT"), *save = getenv("TILEC_FUZZ_SAVE");
    if ((print && *print && strcmp(print, "0")) || (save && *save)) {
        Buf text = { 0 };
        buf_printf(&text, "// flags: --arch=%s%s%s%s%s%s%s%s%s%s\n%s", job.opt.arch,
                   g.flags.s ? g.flags.s : "", job.opt.addr_split ? "" : " -fno-addr-split",
                   job.opt.const_reg_elim ? "" : " -fno-const-reg-elim",
                   job.opt.remat ? "" : " -fno-remat", job.opt.schedule ? "" : " -fno-schedule",
                   job.opt.reg_cap ? "" : " -fno-reg-cap", job.opt.warp_spec ? " -fwarp-specialize" : "",
                   job.opt.cluster ? " -fcluster" : "", job.c_base ? " --emit=c" : "", job.src);
        if (print && *print && strcmp(print, "0"))
            fputs(text.s, stderr);
        FILE *f = save && *save ? fopen(save, "wb") : NULL;
        if (f) {
            fputc(0, f);
            fputs(text.s, f);
            fclose(f);
        }
        buf_free(&text);
    }
    fuzz_compile_job(&job);
    buf_free(&g.consts);
    buf_free(&g.src);
    buf_free(&g.flags);
    return 0;
}
