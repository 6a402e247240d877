/* test_print.c: print(x) as compiled for the GPU, run on a CPU model of the grid, against the
 * interpreter's lines for the same arguments.
 *
 * Each kernel of the cases below is compiled through every pass to allocated IR (compile_kernel),
 * then executed block after block by a small model of the thread-level IR: every thread of a
 * block runs to the next bar.sync before any goes past it, registers are the physical ones the
 * allocator gave (so a value it let another overwrite shows), shared memory is one array, global
 * memory the host buffers, .local memory a buffer per thread. A vprintf call is formatted here
 * as the CUDA runtime formats it on the host: each conversion of the format takes the next 8
 * bytes of the argument buffer (%lld a long long, %.9g a double, %s a pointer to one of the
 * module's strings). The text must equal, byte for byte, what interp_launch prints for the same
 * arguments: the format strings, the conversions of each type, the calls a long row takes, the
 * loops over rows, and the tile read back from the scratch area in every layout the cases make.
 * What it cannot check is the GPU's side of the call (the ABI, the driver's formatting):
 * tests/gpu/print.c does, on a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#include "unit.h"

enum { SMEM = 1 << 18, LOCAL_BYTES = 1024, MAX_STEPS = 50000000 };
static const uint64_t LOCAL_TAG = (uint64_t)1 << 60, STR_TAG = (uint64_t)2 << 60;

static const char *const source =
    "const W = 64;\n"
    "kernel prints(X: f32[N], H: f16[N], I: i32[N], U: u32[N], L: i64[N], B: bool[N], Y: f32[M, N],\n"
    "              s: f32, n: i32) grid(3) threads(64) {\n"
    "    print(s);\n"
    "    print(n % 5);\n"
    "    print(block.x);\n"
    "    print(n > 3);\n"
    "    print(X[0 +: 4]);\n"
    "    print(X[0 +: 256]);\n"
    "    print(X[block.x * W +: W]);\n"
    "    print(H[0 +: 8]);\n"
    "    print(I[0 +: 32]);\n"
    "    print(U[0 +: 16]);\n"
    "    print(L[0 +: 8]);\n"
    "    print(B[0 +: 64]);\n"
    "    print(Y[0 +: 4, 0 +: 64]);\n"
    "    print(Y[0 +: 2, 0 +: 32]);\n"
    "    print(Y[0 +: 1, 0 +: 2]);\n"
    "    print(Y[0 +: 16, block.x +: 1]);\n"
    "    for i in 0 .. n {\n"
    "        print(I[i +: 2]);\n"
    "    }\n"
    "    if n > 100 {\n"
    "        print(s);\n"
    "    }\n"
    "    X[block.x * W +: W] = X[block.x * W +: W];\n"
    "}\n"
    "kernel one(X: f32[N]) grid(2) threads(32) {\n"
    "    let x = X[0 +: 32] ;\n"
    "    print(x);\n"
    "    print(expand_dims(x, 1));\n"
    "    print(X[0 +: 128]);\n"
    "}\n";

enum { N = 256, M = 64 };

/* ---- the model */

typedef struct {
    Func *f;
    const uint64_t *params;    /* raw bits, ABI order */
    int nparams;
    uint8_t *smem;
    Buf *out;                  /* the text vprintf made */
    int block;
    bool failed;
    const char *why;
} Model;

typedef struct {
    uint64_t *reg;
    uint8_t local[LOCAL_BYTES];
    int pc;
    bool done;
} Thread;

static int bits_of(PType t)
{
    switch (t) {
    case PT_PRED: return 1;
    case PT_U8: case PT_S8: return 8;
    case PT_B16: case PT_F16: case PT_BF16: case PT_U16: return 16;
    case PT_B64: case PT_S64: case PT_U64: case PT_F64: return 64;
    default: return 32;
    }
}

static bool is_signed(PType t) { return t == PT_S32 || t == PT_S64 || t == PT_S8; }

static uint64_t mask(uint64_t v, int bits) { return bits >= 64 ? v : v & (((uint64_t)1 << bits) - 1); }

static int64_t sext(uint64_t v, int bits)
{
    if (bits >= 64)
        return (int64_t)v;
    uint64_t m = (uint64_t)1 << (bits - 1);
    v = mask(v, bits);
    return (int64_t)((v ^ m) - m);
}

static float f32_of(uint64_t v) { uint32_t u = (uint32_t)v; float x; memcpy(&x, &u, 4); return x; }
static uint64_t bits_f32(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static double f64_of(uint64_t v) { double x; memcpy(&x, &v, 8); return x; }
static uint64_t bits_f64(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }

static bool fail(Model *m, const char *why)
{
    if (!m->failed)
        m->why = why;
    m->failed = true;
    return false;
}

/* The register slot: the physical register of its class where allocated. */
static int slot(Model *m, int r)
{
    VReg *v = &m->f->regs.v[r];
    return v->phys >= 0 ? (int)v->rc * 4096 + v->phys : RC_COUNT * 4096 + r;
}

static uint64_t rd(Model *m, Thread *t, int r) { return t->reg[slot(m, r)]; }

static void wr(Model *m, Thread *t, int r, uint64_t v)
{
    RegClass rc = m->f->regs.v[r].rc;
    t->reg[slot(m, r)] = rc == RC_D ? v : rc == RC_H ? v & 0xffff : rc == RC_P ? v & 1 : (uint32_t)v;
}

/* The address a symbol names. */
static uint64_t symbol(Model *m, const char *s)
{
    if (!strncmp(s, "tilec_smem", 10))
        return s[10] == '+' ? (uint64_t)atoll(s + 11) : 0;
    if (!strcmp(s, "tilec_print_args"))
        return LOCAL_TAG;
    if (!strncmp(s, "tilec_str", 9))
        return STR_TAG + ((uint64_t)atoi(s + 9) << 32);
    fail(m, s);
    return 0;
}

static uint64_t opnd(Model *m, Thread *t, int tid, Opnd o, PType ty)
{
    switch (o.kind) {
    case O_REG: return rd(m, t, o.reg);
    case O_IMM:
        if (ty == PT_F32)
            return bits_f32((float)o.i);
        if (ty == PT_F64)
            return bits_f64((double)o.i);
        return (uint64_t)o.i;
    case O_FIMM:
        if (ty == PT_F32)
            return bits_f32((float)o.f);
        if (ty == PT_F64)
            return bits_f64(o.f);
        return (uint64_t)(int64_t)o.f;
    case O_SYM:
        if (!strcmp(o.sym, "%tid.x"))
            return (uint64_t)tid;
        if (!strcmp(o.sym, "%ctaid.x"))
            return (uint64_t)m->block;
        if (!strcmp(o.sym, "%ctaid.y") || !strcmp(o.sym, "%ctaid.z"))
            return 0;
        if (!strcmp(o.sym, "%ntid.x"))
            return (uint64_t)m->f->threads;
        return strncmp(o.sym, "tilec_", 6) ? 0 : symbol(m, o.sym);   /* parameters: LDPARAM's */
    default:
        fail(m, "an empty operand");
        return 0;
    }
}

static void *mem(Model *m, Thread *t, int space, uint64_t a, int bytes)
{
    if (space == SP_SHARED)
        return a + (uint64_t)bytes <= SMEM ? m->smem + a : (fail(m, "a shared address out of range"), NULL);
    if (space == SP_LOCAL || (a & ~(uint64_t)0xffffffff) == LOCAL_TAG) {
        a -= LOCAL_TAG;
        return a + (uint64_t)bytes <= LOCAL_BYTES ? t->local + a : (fail(m, "a local address out of range"), NULL);
    }
    return (void *)(uintptr_t)a;     /* global: the host's buffers */
}

static uint64_t load(const void *p, PType t)
{
    switch (bits_of(t)) {
    case 8: { uint8_t v; memcpy(&v, p, 1); return t == PT_S8 ? (uint64_t)(int64_t)(int8_t)v : v; }
    case 16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 64: { uint64_t v; memcpy(&v, p, 8); return v; }
    default: { uint32_t v; memcpy(&v, p, 4); return v; }
    }
}

static void store(void *p, PType t, uint64_t v)
{
    int n = bits_of(t) / 8;
    memcpy(p, &v, (size_t)(n ? n : 1));    /* little-endian: the low bytes */
}

/* A value of type t as a double (floats) or an integer. */
static double as_real(uint64_t v, PType t)
{
    switch (t) {
    case PT_F32: return f32_of(v);
    case PT_F64: return f64_of(v);
    case PT_F16: case PT_B16: return f16_bits_to_f32((uint16_t)v);
    case PT_BF16: return bf16_bits_to_f32((uint16_t)v);
    default: return is_signed(t) ? (double)sext(v, bits_of(t)) : (double)mask(v, bits_of(t));
    }
}

static uint64_t cvt(Model *m, const Ins *in, uint64_t v)
{
    PType to = (PType)in->ty, from = (PType)in->ty2;
    bool fto = to == PT_F32 || to == PT_F64 || to == PT_F16 || to == PT_BF16;
    bool ffrom = from == PT_F32 || from == PT_F64 || from == PT_F16 || from == PT_BF16;
    if (in->rnd)
        return fail(m, "a rounding cvt"), 0;
    if (!fto && !ffrom)
        return is_signed(from) ? mask((uint64_t)sext(v, bits_of(from)), bits_of(to)) : mask(v, bits_of(from));
    double x = ffrom ? as_real(v, from) : is_signed(from) ? (double)sext(v, bits_of(from)) : (double)mask(v, bits_of(from));
    switch (to) {
    case PT_F32: return bits_f32((float)x);
    case PT_F64: return bits_f64(x);
    case PT_F16: return f32_to_f16_bits((float)x);
    case PT_BF16: return f32_to_bf16_bits((float)x);
    default: return mask((uint64_t)(int64_t)trunc(x), bits_of(to));
    }
}

static bool compare(int cmp, uint64_t a, uint64_t b, PType t)
{
    int n = bits_of(t);
    if (t == PT_F32 || t == PT_F64) {
        double x = as_real(a, t), y = as_real(b, t);
        switch (cmp) {
        case CMP_EQ: return x == y; case CMP_NE: return x != y; case CMP_LT: return x < y;
        case CMP_LE: return x <= y; case CMP_GT: return x > y; default: return x >= y;
        }
    }
    if (is_signed(t) && cmp != CMP_LO && cmp != CMP_HS) {
        int64_t x = sext(a, n), y = sext(b, n);
        switch (cmp) {
        case CMP_EQ: return x == y; case CMP_NE: return x != y; case CMP_LT: return x < y;
        case CMP_LE: return x <= y; case CMP_GT: return x > y; default: return x >= y;
        }
    }
    uint64_t x = mask(a, n), y = mask(b, n);
    switch (cmp) {
    case CMP_EQ: return x == y; case CMP_NE: return x != y; case CMP_LT: case CMP_LO: return x < y;
    case CMP_LE: return x <= y; case CMP_GT: return x > y; default: return x >= y;
    }
}

static const char *string_at(Model *m, uint64_t a)
{
    if ((a & ~(((uint64_t)1 << 60) - 1)) != STR_TAG || (a & 0xffffffff))
        return fail(m, "a format that is no string of the module"), NULL;
    int i = (int)((a - STR_TAG) >> 32);
    return i < m->f->strings.n ? m->f->strings.v[i].s : (fail(m, "no such string"), NULL);
}

/* vprintf as the CUDA runtime formats it on the host: each conversion takes the next 8 bytes. */
static void vprintf_model(Model *m, Thread *t, uint64_t fmt_addr, uint64_t args)
{
    const char *fmt = string_at(m, fmt_addr);
    if (!fmt)
        return;
    int used = 0;
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            buf_add(m->out, p, 1);
            continue;
        }
        p++;
        if (*p == '%') {
            buf_add(m->out, "%", 1);
            continue;
        }
        size_t n = strspn(p, ".0123456789l");
        char spec[16];
        snprintf(spec, sizeof spec, "%%%.*s", (int)n + 1, p);
        if (++used > 32) {
            fail(m, "more than 32 arguments to one vprintf");
            return;
        }
        uint8_t *arg = mem(m, t, SP_LOCAL, args + (uint64_t)(used - 1) * 8, 8);
        if (!arg)
            return;
        uint64_t v;
        memcpy(&v, arg, 8);
        char text[64];
        if (p[n] == 'g')
            snprintf(text, sizeof text, spec, f64_of(v));
        else if (p[n] == 'd')
            snprintf(text, sizeof text, "%lld", (long long)v);
        else if (p[n] == 's') {
            const char *s = string_at(m, v);
            snprintf(text, sizeof text, "%s", s ? s : "");
        } else {
            fail(m, "a conversion the model does not know");
            return;
        }
        buf_puts(m->out, text);
        p += n;
    }
}

/* Runs thread t from its pc to the next barrier or its end; false on a fault. */
static bool run_thread(Model *m, Thread *t, int tid, const int *label_at)
{
    Func *f = m->f;
    for (int steps = 0; !t->done && steps < MAX_STEPS; steps++) {
        Ins *in = &f->code.v[t->pc++];
        PType ty = (PType)in->ty;
        if (in->guard >= 0 && (rd(m, t, in->guard) & 1) == in->guard_neg)
            continue;
        uint64_t s[4] = { 0 };
        for (int k = 0; k < in->nsrc && k < 4; k++) {
            PType st = in->op == OP_CVT ? (PType)in->ty2 : in->op == OP_SELP && k == 2 ? PT_PRED : ty;
            s[k] = opnd(m, t, tid, in->src[k], st);
        }
        bool fl = ty == PT_F32;
        int n = bits_of(ty);
        uint64_t d = 0;
        switch (in->op) {
        case OP_LABEL: case OP_COMMENT: continue;
        case OP_RET: t->done = true; return true;
        case OP_BAR: return true;
        case OP_BRA: t->pc = label_at[in->label]; continue;
        case OP_MOV: case OP_CVTA: case OP_CVTAGEN: d = s[0]; break;
        case OP_MOVSYM: d = s[0]; break;
        case OP_LDPARAM: {
            const char *p = strstr(in->src[0].sym, "_param_");
            int i = p ? atoi(p + 7) : -1;
            if (i < 0 || i >= m->nparams)
                return fail(m, "a parameter out of range");
            d = m->params[i];
            break;
        }
        case OP_ADD: d = fl ? bits_f32(f32_of(s[0]) + f32_of(s[1])) : s[0] + s[1]; break;
        case OP_SUB: d = fl ? bits_f32(f32_of(s[0]) - f32_of(s[1])) : s[0] - s[1]; break;
        case OP_MUL: d = fl ? bits_f32(f32_of(s[0]) * f32_of(s[1])) : s[0] * s[1]; break;
        case OP_MAD: d = s[0] * s[1] + s[2]; break;
        case OP_FMA: d = bits_f32(fmaf(f32_of(s[0]), f32_of(s[1]), f32_of(s[2]))); break;
        case OP_NEG: d = fl ? bits_f32(-f32_of(s[0])) : -s[0]; break;
        case OP_MULWIDE:
            d = is_signed(ty) ? (uint64_t)(sext(s[0], 32) * sext(s[1], 32)) : mask(s[0], 32) * mask(s[1], 32);
            break;
        case OP_DIV: case OP_REM: {
            if (fl || !mask(s[1], n))
                return fail(m, "a division the model does not know");
            if (is_signed(ty)) {
                int64_t x = sext(s[0], n), y = sext(s[1], n);
                d = (uint64_t)(in->op == OP_DIV ? x / y : x % y);
            } else {
                d = in->op == OP_DIV ? mask(s[0], n) / mask(s[1], n) : mask(s[0], n) % mask(s[1], n);
            }
            break;
        }
        case OP_MIN: case OP_MAX: {
            bool lt = compare(CMP_LT, s[0], s[1], ty);
            d = (in->op == OP_MIN) == lt ? s[0] : s[1];
            break;
        }
        case OP_SHL: d = s[0] << (s[1] & 63); break;
        case OP_SHR: d = is_signed(ty) ? (uint64_t)(sext(s[0], n) >> (s[1] & 63)) : mask(s[0], n) >> (s[1] & 63); break;
        case OP_BAND: d = s[0] & s[1]; break;
        case OP_BOR: d = s[0] | s[1]; break;
        case OP_BXOR: d = s[0] ^ s[1]; break;
        case OP_BNOT: d = ~s[0]; break;
        case OP_SETP: d = compare(in->cmp, s[0], s[1], ty); break;
        case OP_SELP: d = s[2] & 1 ? s[0] : s[1]; break;
        case OP_CVT: d = cvt(m, in, s[0]); break;
        case OP_UNPACK2:
            wr(m, t, in->dst[0], s[0] & 0xffff);
            wr(m, t, in->dst[1], s[0] >> 16 & 0xffff);
            continue;
        case OP_LD: {
            int es = bits_of(ty) / 8;
            for (int v = 0; v < in->vec; v++) {
                void *p = mem(m, t, in->space, s[0] + (uint64_t)in->off + (uint64_t)(v * es), es);
                if (!p)
                    return false;
                wr(m, t, in->dst[v], load(p, ty));
            }
            continue;
        }
        case OP_ST: {
            int es = bits_of(ty) / 8;
            for (int v = 0; v < in->vec; v++) {
                void *p = mem(m, t, in->space, s[0] + (uint64_t)in->off + (uint64_t)(v * es), es);
                if (!p)
                    return false;
                store(p, ty, opnd(m, t, tid, in->src[1 + v], ty));
            }
            continue;
        }
        case OP_VPRINTF: vprintf_model(m, t, s[0], s[1]); continue;
        default: return fail(m, op_name(in->op));
        }
        if (in->ndst != 1)
            return fail(m, "an operation with other than one result");
        wr(m, t, in->dst[0], in->op == OP_SETP || in->op == OP_MULWIDE ? d : mask(d, n));
    }
    return t->done || fail(m, "a thread that does not end");
}

/* Every block of the grid, each thread to a barrier before any goes past it. */
static bool run_grid(Model *m, int blocks)
{
    Func *f = m->f;
    int *label_at = calloc((size_t)f->nlabels + 1, sizeof(int));
    for (int i = 0; i < f->code.n; i++)
        if (f->code.v[i].op == OP_LABEL)
            label_at[f->code.v[i].label] = i;
    int T = f->threads;
    Thread *th = calloc((size_t)T, sizeof *th);
    size_t nreg = (size_t)(RC_COUNT + 1) * 4096 + (size_t)f->regs.n;
    for (int b = 0; b < blocks && !m->failed; b++) {
        m->block = b;
        memset(m->smem, 0, SMEM);
        for (int i = 0; i < T; i++) {
            free(th[i].reg);
            memset(&th[i], 0, sizeof th[i]);
            th[i].reg = calloc(nreg, sizeof(uint64_t));
        }
        for (bool all_done = false; !all_done && !m->failed;) {
            int at = -1;
            all_done = true;
            for (int i = 0; i < T && !m->failed; i++) {
                if (th[i].done || !run_thread(m, &th[i], i, label_at))
                    continue;
                if (!th[i].done) {
                    if (at >= 0 && th[i].pc != at)
                        fail(m, "threads wait at different barriers");
                    at = th[i].pc;
                    all_done = false;
                }
            }
        }
    }
    for (int i = 0; i < T; i++)
        free(th[i].reg);
    free(th);
    free(label_at);
    return !m->failed;
}

/* ---- the cases */

static float xs[N], ys[M * N];
static uint16_t hs[N];
static int32_t is[N];
static uint32_t us[N];
static int64_t ls[N];
static uint8_t bs[N];

static void fill(void)
{
    for (int i = 0; i < N; i++) {
        xs[i] = (float)((i * 37) % 41 - 20) / 4;      /* quarters: every format exact */
        hs[i] = f32_to_f16_bits((float)((i * 7) % 23 - 11) / 8);
        is[i] = (i * 1103) % 2001 - 1000;
        us[i] = 4000000000u - (uint32_t)i * 12345u;
        ls[i] = (i % 2 ? -1 : 1) * ((int64_t)1 << 40) * i + i;
        bs[i] = (uint8_t)(i % 3 == 0);
    }
    for (int i = 0; i < M * N; i++)
        ys[i] = (float)((i * 13) % 29 - 14) / 2;
}

/* The text interp_launch prints for kernel k of p. */
static bool interp_text(Program *p, Kernel *k, const InterpArg *args, int n, bool all, Buf *out)
{
    FILE *tmp = tmpfile();
    InterpOptions o = { tmp, all };
    bool ok = tmp && interp_launch(p, k, args, n, &o);
    if (tmp) {
        long len = ftell(tmp);
        rewind(tmp);
        char *s = malloc((size_t)len + 1);
        size_t got = s ? fread(s, 1, (size_t)len, tmp) : 0;
        buf_add(out, s ? s : "", got);
        free(s);
        fclose(tmp);
    }
    return ok;
}

/* Where a and b first differ: the line, the column, and a little of each around it. */
static void first_difference(const char *a, const char *b, char *why, size_t size)
{
    int line = 1;
    const char *la = a;
    for (; *a && *a == *b; a++, b++)
        if (*a == '\n') {
            line++;
            la = a + 1;
        }
    long col = a - la, from = col > 30 ? col - 30 : 0;
    const char *ea = a - (col - from), *eb = b - (col - from);
    snprintf(why, size, "line %d, column %ld: GPU model \"...%.*s\", interpreter \"...%.*s\"", line, col + 1,
             (int)strcspn(ea, "\n") < 60 ? (int)strcspn(ea, "\n") : 60, ea,
             (int)strcspn(eb, "\n") < 60 ? (int)strcspn(eb, "\n") : 60, eb);
}

static void run_case(const char *kernel, bool all, const char *arch, bool passes)
{
    char name[128];
    snprintf(name, sizeof name, "%s %s%s%s", kernel, arch, all ? " --print-all-blocks" : "",
             passes ? "" : " -fno-addr-split -fno-remat -fno-schedule");
    Arena *a = arena_new();
    FILE *msgs = tmpfile();
    diag.out = msgs;
    Program *p = compile_front(a, "print_cases.tile", source, strlen(source), NULL, 0);
    Kernel *k = NULL;
    for (int i = 0; p && i < p->nkernels; i++)
        if (!strcmp(p->kernels[i]->name, kernel))
            k = p->kernels[i];
    if (!k) {
        unit_check(false, name, "the cases do not compile");
        goto done;
    }
    Options opt = { .addr_split = passes, .const_reg_elim = true, .remat = passes, .schedule = passes,
                    .reg_cap = true, .arch = arch, .no_ptxas = true, .verify_ir = true,
                    .print_all_blocks = all };
    KernelMeta meta;
    memset(&meta, 0, sizeof meta);
    Func *f = lower_kernel(a, p, k, &opt, &meta);
    bool drop = false;
    if (!f || !compile_kernel(a, f, &opt, &drop)) {
        unit_check(false, name, "the kernel does not compile");
        func_free(f);
        goto done;
    }
    /* the arguments: the interpreter's, and the same as the PTX parameters hold them */
    int nargs = interp_nargs(k);
    InterpArg args[16];
    uint64_t params[16];
    memset(args, 0, sizeof args);
    for (int i = 0; i < nargs; i++) {
        const char *an = interp_arg_name(k, i);
        void *ptr = NULL;
        size_t bytes = 0;
        if (!strcmp(an, "X")) ptr = xs, bytes = sizeof xs;
        else if (!strcmp(an, "H")) ptr = hs, bytes = sizeof hs;
        else if (!strcmp(an, "I")) ptr = is, bytes = sizeof is;
        else if (!strcmp(an, "U")) ptr = us, bytes = sizeof us;
        else if (!strcmp(an, "L")) ptr = ls, bytes = sizeof ls;
        else if (!strcmp(an, "B")) ptr = bs, bytes = sizeof bs;
        else if (!strcmp(an, "Y")) ptr = ys, bytes = sizeof ys;
        args[i].ptr = ptr;
        args[i].bytes = bytes;
        params[i] = (uint64_t)(uintptr_t)ptr;
        if (!strcmp(an, "N")) args[i].i = N, params[i] = N;
        if (!strcmp(an, "M")) args[i].i = M, params[i] = M;
        if (!strcmp(an, "n")) args[i].i = 4, params[i] = 4;
        if (!strcmp(an, "s")) args[i].f = -2.75, params[i] = bits_f32(-2.75f);
    }
    Buf want = { 0 }, got = { 0 };
    uint8_t *smem = calloc(SMEM, 1);
    Model m = { f, params, nargs, smem, &got, 0, false, NULL };
    bool ran = run_grid(&m, !strcmp(kernel, "one") ? 2 : 3);
    /* the interpreter's diag state is the program's */
    diag_reset("print_cases.tile", source, strlen(source));
    bool iok = interp_text(p, k, args, nargs, all, &want);
    if (!ran)
        unit_check(false, name, "the model stopped: %s", m.why ? m.why : "?");
    else if (!iok)
        unit_check(false, name, "the interpreter stopped");
    else if (!got.s || !want.s || strcmp(got.s, want.s)) {
        char why[1024];
        first_difference(got.s ? got.s : "", want.s ? want.s : "", why, sizeof why);
        unit_check(false, name, "%s", why);
    } else
        unit_check(true, name, "");
    free(smem);
    buf_free(&want);
    buf_free(&got);
    func_free(f);
done:
    arena_free(a);
    fclose(msgs);
    diag.out = NULL;
}

int main(void)
{
    fill();
    static const char *const archs[] = { "sm_80", "sm_90a" };
    for (int i = 0; i < 2; i++) {
        run_case("prints", false, archs[i], true);
        run_case("prints", true, archs[i], true);
        run_case("one", false, archs[i], true);
        run_case("one", true, archs[i], true);
    }
    run_case("prints", false, "sm_80", false);
    return unit_exit();
}
