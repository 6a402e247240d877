/* test_mma_map.c: the tensor-core lowering run on a CPU model of a block.
 *
 * lower_mma's IR is executed for every thread of a block by a small interpreter whose ldmatrix
 * and mma.sync follow the PTX ISA's tables (written out here, independently of lower_mma.c):
 *   ldmatrix .m8n8 .b16: matrix i's row addresses come from lanes 8i..8i+7; lane l receives
 *     row l/4, elements 2(l%4), +1 (with .trans: column l/4, rows 2(l%4), +1);
 *   m16n8k16 (f16, bf16): a_i (i < 8 halves): row g (+8 for i in 2,3,6,7), col 2q + (i&1)
 *     (+8 for i >= 4); b_i (i < 4): row 2q + (i&1) (+8 for i >= 2), col g;
 *   m16n8k8 (tf32): a0..a3: row g (+8 for a1, a3), col q (+4 for a2, a3); b0, b1: row q (+4), col g;
 *   C/D: c_i: row g (+8 for i >= 2), col 2q + (i&1);   g = lane / 4, q = lane % 4.
 * Then every accumulator slot of every thread, placed by layout_mma's description (the Layout
 * family's formulas), must hold the exact product of small-integer matrices, and the layout must
 * cover each element once. Also checked: each ldmatrix phase reads 8 distinct 16-byte bank groups
 * and the tf32 B loads hit 32 distinct banks (with mma_pitch's pitches). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lower.h"
#include "unit.h"

static Kernel kernel = { .name = "k", .loc = { 1, 1 } };

enum { SMEM = 1 << 18 };
static uint8_t smem[SMEM];
static int conflicts;
static bool check_banks;   /* the tf32 B loads: only with mma_pitch's pitches */
static const char *case_arch = "sm_80";   /* sm_90a: f16/bf16 tiles wgmma_shape takes go to wgmma */
static int threads_of_case = 128;

static uint16_t f2h(float x)   /* small integers only: exact */
{
    if (x == 0)
        return 0;
    uint16_t s = x < 0 ? 0x8000 : 0;
    x = fabsf(x);
    int e = 0;
    while (x >= 2) { x /= 2; e++; }
    while (x < 1) { x *= 2; e--; }
    return (uint16_t)(s | (uint16_t)((e + 15) << 10) | (uint16_t)lrintf((x - 1) * 1024));
}

static float h2f(uint16_t h)
{
    if (!(h & 0x7fff))
        return 0;
    float m = 1 + (h & 0x3ff) / 1024.0f;
    float v = ldexpf(m, ((h >> 10) & 0x1f) - 15);
    return h & 0x8000 ? -v : v;
}

static uint16_t f2bf(float x) { uint32_t u; memcpy(&u, &x, 4); return (uint16_t)(u >> 16); }
static float bf2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float x; memcpy(&x, &u, 4); return x; }
static float u2f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t f2u(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }

static float elem16(uint32_t r, int hi, int bf) { uint16_t h = (uint16_t)(hi ? r >> 16 : r); return bf ? bf2f(h) : h2f(h); }

static uint32_t rd32(uint32_t a)
{
    uint32_t v;
    if (a + 4 > SMEM) { printf("FAIL address %u out of range\n", a); exit(1); }
    memcpy(&v, &smem[a], 4);
    return v;
}

typedef struct { int threads; uint64_t **reg; } Block;

static uint64_t val(Block *b, int t, Opnd o)
{
    if (o.kind == O_REG) return b->reg[t][o.reg];
    if (o.kind == O_IMM) return (uint64_t)o.i;
    if (o.kind == O_SYM && !strcmp(o.sym, "%tid.x")) return (uint64_t)t;
    if (o.kind == O_SYM && !strcmp(o.sym, "tilec_scratch")) return 0;   /* the scratch area's base */
    printf("FAIL interpreter: operand kind %d\n", o.kind);
    exit(1);
}

static void run_ldmatrix(Block *b, Ins *in, int w)
{
    uint32_t addr[32], out[32][4];
    for (int l = 0; l < 32; l++)
        addr[l] = (uint32_t)val(b, 32 * w + l, in->src[0]) + (uint32_t)in->off;
    for (int i = 0; i < in->vec; i++) {
        int groups = 0;
        for (int r = 0; r < 8; r++) {
            int g = (int)(addr[8 * i + r] / 16 % 8);
            if (groups & 1 << g) conflicts++;
            groups |= 1 << g;
        }
        for (int l = 0; l < 32; l++) {
            uint16_t h[2];
            for (int e = 0; e < 2; e++) {
                int row = in->trans ? 2 * (l % 4) + e : l / 4, col = in->trans ? l / 4 : 2 * (l % 4) + e;
                memcpy(&h[e], &smem[addr[8 * i + row] + 2 * col], 2);
            }
            out[l][i] = h[0] | (uint32_t)h[1] << 16;
        }
    }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < in->vec; i++)
            b->reg[32 * w + l][in->dst[i]] = out[l][i];
}

static void run_mma(Block *b, Ins *in, int w)
{
    double A[16][16], B[16][8], C[16][8];
    bool tf = in->ty2 == PT_B32, bf = in->ty2 == PT_BF16;
    for (int l = 0; l < 32; l++) {
        int t = 32 * w + l, g = l / 4, q = l % 4;
        for (int i = 0; i < 4; i++) {
            uint32_t r = (uint32_t)val(b, t, in->src[i]);
            if (tf)     /* the tensor core reads a tf32 operand's top 19 bits */
                A[g + 8 * (i & 1)][q + 4 * (i >> 1)] = u2f(r & ~0x1fffu);
            else
                for (int e = 0; e < 2; e++)
                    A[g + 8 * (i & 1)][2 * q + e + 8 * (i >> 1)] = elem16(r, e, bf);
        }
        for (int i = 0; i < 2; i++) {
            uint32_t r = (uint32_t)val(b, t, in->src[4 + i]);
            if (tf)
                B[q + 4 * i][g] = u2f(r & ~0x1fffu);
            else
                for (int e = 0; e < 2; e++)
                    B[2 * q + e + 8 * i][g] = elem16(r, e, bf);
        }
        for (int i = 0; i < 4; i++)
            C[g + 8 * (i >> 1)][2 * q + (i & 1)] = u2f((uint32_t)val(b, t, in->src[6 + i]));
    }
    int K = tf ? 8 : 16;
    for (int l = 0; l < 32; l++) {
        int g = l / 4, q = l % 4;
        for (int i = 0; i < 4; i++) {
            int m = g + 8 * (i >> 1), n = 2 * q + (i & 1);
            double s = C[m][n];
            for (int k = 0; k < K; k++)
                s += A[m][k] * B[k][n];
            b->reg[32 * w + l][in->dst[i]] = f2u((float)s);
        }
    }
}

/* wgmma.mma_async m64nNk16, f16/bf16, A K-major (M-major with imm-trans-a) and B N-major
 * (imm-trans-b; K-major without) from shared memory
 * through descriptors in the 128-byte swizzle, after the PTX ISA's canonical layouts (T = 8
 * 16-bit elements per 16 bytes): A ((8,m),(T,2k)):((8T,SBO),(1,T)), B ((T,8,m),(8,k)):
 * ((1,T,LBO),(8T,SBO)), the swizzle XORing address bits 4-6 with bits 7-9. D: warp v of the
 * warpgroup holds rows 16 v + g (+8 for d_{4i+2}, d_{4i+3}), columns 8 i + 2 q (+1 for odd d). */
static uint32_t swizzle128(uint32_t a) { return a ^ (a >> 7 & 7) << 4; }
static uint32_t swizzle64(uint32_t a) { return a ^ (a >> 7 & 3) << 4; }
/* a descriptor's swizzle (bits 62-63): 1 the 128-byte one, 2 the 64-byte one */
static uint32_t swizzled(int sw, uint32_t a) { return sw == 2 ? swizzle64(a) : swizzle128(a); }

/* D += A B for warpgroup u, D the accumulators of the WGACC instructions after in (four each):
 * warp v holds rows 16 v + g (+8 for d_{4i+2}, d_{4i+3}), columns 8 i + 2 q (+1 for odd d).
 * A is 64 x K, B K x N (K <= 16, N <= 256). */
static void wgmma_accumulate(Block *b, Ins *in, int u, int K, double A[64][16], double B[16][256])
{
    int N = in->n, t0 = 128 * u, regs[128], nr = 0;
    for (Ins *g = in + 1; g->op == OP_WGACC && nr < 128; g++)
        for (int q = 0; q < 4; q++)
            regs[nr++] = g->dst[q];
    if (nr != N / 2) {
        printf("FAIL wgmma: %d accumulators for n%d\n", nr, N);
        exit(1);
    }
    for (int t = t0; t < t0 + 128; t++) {
        int v = (t - t0) / 32, l = t % 32, g = l / 4, q = l % 4;
        for (int r = 0; r < nr; r++) {
            int m = 16 * v + g + 8 * (r >> 1 & 1), n = r / 4 * 8 + 2 * q + (r & 1);
            double sum = u2f((uint32_t)b->reg[t][regs[r]]);
            for (int k = 0; k < K; k++)
                sum += A[m][k] * B[k][n];
            b->reg[t][regs[r]] = f2u((float)sum);
        }
    }
}

/* wgmma m64nNk8 tf32: A (64 x 8) from registers, the mma.sync m16n8k8 A fragment per warp (warp
 * v: rows 16 v + g, + 8 for a1, a3; k q, + 4 for a2, a3); B (8 x N) K-major from shared memory,
 * canonical ((8,n),(T,2k)):((8T,SBO),(1,T)) with T = 4 32-bit elements per 16 bytes: column n at
 * (n % 8) 128 + (n / 8) SBO, k at 4 k bytes. Both read as tf32: the top 19 bits. */
static void run_wgmma_tf32(Block *b, Ins *in, int u, uint64_t db)
{
    int N = in->n, t0 = 128 * u;
    if (db >> 62 != 1 || (db >> 49 & 7)) {
        printf("FAIL wgmma: descriptor not 128-byte swizzle at base offset 0\n");
        exit(1);
    }
    uint32_t start = (uint32_t)(db & 0x3fff) << 4, sbo = (uint32_t)(db >> 32 & 0x3fff) << 4;
    static double A[64][16], B[16][256];
    for (int t = t0; t < t0 + 128; t++) {
        int v = (t - t0) / 32, l = t % 32, g = l / 4, q = l % 4;
        for (int i = 0; i < 4; i++)
            A[16 * v + g + 8 * (i & 1)][q + 4 * (i >> 1)] = u2f((uint32_t)val(b, t, in->src[i]) & ~0x1fffu);
    }
    for (int k = 0; k < 8; k++)
        for (int n = 0; n < N; n++) {
            uint32_t w;
            memcpy(&w, &smem[swizzle128(start + (uint32_t)(n % 8) * 128 + (uint32_t)(n / 8) * sbo + 4u * (uint32_t)k)], 4);
            B[k][n] = u2f(w & ~0x1fffu);
        }
    wgmma_accumulate(b, in, u, 8, A, B);
}

static void run_wgmma(Block *b, Ins *in, int u)
{
    int N = in->n, t0 = 128 * u;
    bool bf = in->ty2 == PT_BF16, tf = in->ty2 == PT_B32, regs = in->a_regs;
    /* tf32 (m64nNk8), both K-major: A from registers and B through src[4], or both descriptors */
    uint64_t da = regs ? 0 : val(b, t0, in->src[0]), db = val(b, t0, in->src[regs ? 4 : 1]);
    for (int t = t0; t < t0 + 128; t++)
        if ((!regs && val(b, t, in->src[0]) != da) || val(b, t, in->src[regs ? 4 : 1]) != db) {
            printf("FAIL wgmma: descriptors differ across the warpgroup\n");
            exit(1);
        }
    if (regs && tf) {
        run_wgmma_tf32(b, in, u, db);
        return;
    }
    uint64_t d[2] = { da, db };
    uint32_t start[2] = { 0, 0 }, lbo[2] = { 0, 0 }, sbo[2] = { 0, 0 };
    int sw[2] = { 1, 1 };     /* K-major rows of 128 bytes (swizzle 1) or 64 (swizzle 2) */
    for (int i = regs ? 1 : 0; i < 2; i++) {
        sw[i] = (int)(d[i] >> 62);
        bool kmajor = i == 0 ? !in->trans_a : !in->trans;
        if ((sw[i] != 1 && !(sw[i] == 2 && kmajor)) || (d[i] >> 49 & 7)) {
            printf("FAIL wgmma: descriptor %d not a 128-byte (or K-major 64-byte) swizzle at base offset 0\n", i);
            exit(1);
        }
        start[i] = (uint32_t)(d[i] & 0x3fff) << 4;
        lbo[i] = (uint32_t)(d[i] >> 16 & 0x3fff) << 4;
        sbo[i] = (uint32_t)(d[i] >> 32 & 0x3fff) << 4;
    }
    bool kmajor_b = !in->trans;     /* B^T: K-major, canonical like A with n for m */
    static double A[64][16], B[16][256];
    if (tf) {      /* tf32 A comes from registers (lower_wgmma.c, lower_mma_swap.c) */
        printf("FAIL wgmma: tf32 A from a descriptor\n");
        exit(1);
    }
    /* 16-bit A from registers: the mma.sync m16n8k16 A fragment per warp (warp v: rows 16 v + g,
       + 8 for a1, a3; k 2 q, 2 q + 1, + 8 for a2, a3) */
    for (int t = t0; regs && t < t0 + 128; t++) {
        int v = (t - t0) / 32, l = t % 32, g = l / 4, q = l % 4;
        for (int i = 0; i < 4; i++)
            for (int e = 0; e < 2; e++)
                A[16 * v + g + 8 * (i & 1)][2 * q + e + 8 * (i >> 1)] = elem16((uint32_t)val(b, t, in->src[i]), e, bf);
    }
    /* A K-major as B^T is read, or M-major (imm-trans-a) as an N-major B is */
    for (int m = 0; m < 64 && !regs; m++)
        for (int k = 0; k < 16; k++) {
            uint16_t h;
            uint32_t at = in->trans_a ? start[0] + 2u * (uint32_t)(m % 64) + (uint32_t)(m / 64) * lbo[0] +
                                            (uint32_t)(k % 8) * 128 + (uint32_t)(k / 8) * sbo[0]
                                      : start[0] + (uint32_t)(m % 8) * (sw[0] == 2 ? 64 : 128) + (uint32_t)(m / 8) * sbo[0] + 2u * (uint32_t)k;
            memcpy(&h, &smem[swizzled(sw[0], at)], 2);
            A[m][k] = bf ? bf2f(h) : h2f(h);
        }
    for (int k = 0; k < 16; k++)
        for (int n = 0; n < N; n++) {
            uint16_t h;
            uint32_t at = kmajor_b ? start[1] + (uint32_t)(n % 8) * (sw[1] == 2 ? 64 : 128) + (uint32_t)(n / 8) * sbo[1] + 2u * (uint32_t)k
                                   : start[1] + 2u * (uint32_t)(n % 64) + (uint32_t)(n / 64) * lbo[1] +
                                     (uint32_t)(k % 8) * 128 + (uint32_t)(k / 8) * sbo[1];
            memcpy(&h, &smem[swizzled(sw[1], at)], 2);
            B[k][n] = bf ? bf2f(h) : h2f(h);
        }
    wgmma_accumulate(b, in, u, 16, A, B);
}

static void run(Func *f, Block *b)
{
    for (int i = 0; i < f->code.n; i++) {
        Ins *in = &f->code.v[i];
        if (in->op == OP_WGMMA) {
            for (int u = 0; u < b->threads / 128; u++)
                run_wgmma(b, in, u);
            continue;
        }
        /* threads run in lock step: every access before a barrier precedes every one after it */
        if (in->op == OP_WGACC || in->op == OP_WGFENCE || in->op == OP_WGCOMMIT || in->op == OP_WGWAIT ||
            in->op == OP_WGHOLD || in->op == OP_FENCEPROXY || in->op == OP_BAR)
            continue;
        if (in->op == OP_LDMATRIX || in->op == OP_MMA) {
            for (int w = 0; w < b->threads / 32; w++)
                (in->op == OP_MMA ? run_mma : run_ldmatrix)(b, in, w);
            continue;
        }
        if (in->op == OP_LD && in->ty == PT_B32 && in->space == SP_SHARED && check_banks) {
            /* a warp's vec-word loads go in phases of 32 / vec lanes, each of which must touch
               32 distinct banks */
            int per = 32 / in->vec;
            for (int w = 0; w < b->threads / 32; w++)
                for (int ph = 0; ph < 32; ph += per) {
                    uint32_t banks = 0;
                    for (int l = ph; l < ph + per; l++)
                        for (int v = 0; v < in->vec; v++) {
                            int bank = (int)(((uint32_t)val(b, 32 * w + l, in->src[0]) + (uint32_t)in->off) / 4 + (uint32_t)v) % 32;
                            if (banks & 1u << bank) conflicts++;
                            banks |= 1u << bank;
                        }
                }
        }
        for (int t = 0; t < b->threads; t++) {
            uint64_t *r = b->reg[t], s0 = in->nsrc > 0 ? val(b, t, in->src[0]) : 0;
            uint64_t s1 = in->nsrc > 1 ? val(b, t, in->src[1]) : 0, s2 = in->nsrc > 2 ? val(b, t, in->src[2]) : 0;
            uint64_t d;
            switch (in->op) {
            case OP_MOV: d = s0; break;
            case OP_ADD: d = s0 + s1; break;
            case OP_MUL: d = s0 * s1; break;
            case OP_MAD: d = s0 * s1 + s2; break;
            case OP_SHR: d = s0 >> s1; break;
            case OP_SHL: d = s0 << s1; break;
            case OP_BAND: d = s0 & s1; break;
            case OP_BOR: d = s0 | s1; break;
            case OP_BXOR: d = s0 ^ s1; break;
            case OP_LD:
                for (int v = 1; v < in->vec; v++)
                    r[in->dst[v]] = rd32((uint32_t)s0 + (uint32_t)in->off + 4u * (uint32_t)v);
                d = rd32((uint32_t)s0 + (uint32_t)in->off);
                if (in->ty == PT_B16)
                    d &= 0xffff;
                break;
            case OP_ST:     /* 32-bit words to shared memory (the transposing copy's) */
                if (in->space != SP_SHARED || in->ty != PT_B32)
                    goto unknown;
                for (int v = 0; v < (in->vec ? in->vec : 1); v++) {
                    uint32_t w = (uint32_t)val(b, t, in->src[1 + v]);
                    memcpy(&smem[(uint32_t)s0 + (uint32_t)in->off + 4u * (uint32_t)v], &w, 4);
                }
                continue;
            case OP_CVT:
                if (in->rnd == RND_TF32_RNA)   /* round to 10 mantissa bits, ties away (finite inputs) */
                    d = (f2u(u2f((uint32_t)s0)) + 0x1000) & ~0x1fffu;
                else if (in->rnd == RND_TF32_RN)   /* ties to even */
                    d = ((uint32_t)s0 + 0xfff + ((uint32_t)s0 >> 13 & 1)) & ~0x1fffu;
                else if (in->ty == PT_U32 && in->ty2 == PT_U16)
                    d = s0 & 0xffff;
                else if (in->ty == PT_U64 && in->ty2 == PT_U32)
                    d = s0;
                else
                    goto unknown;
                break;
            case OP_MOVSYM: d = s0; break;     /* the scratch area (lower_smem.c): 0, in val */
            case OP_COMMENT: continue;
            default:
            unknown:
                printf("FAIL interpreter: no model of %s\n", op_name(in->op));
                exit(1);
            }
            if (in->ndst)    /* 32-bit registers keep 32 bits */
                r[in->dst[0]] = f->regs.v[in->dst[0]].rc == RC_D ? d : (uint32_t)d;
        }
    }
}

/* Byte offset of element (r, col) of an operand tile as the pipeline stores it (transposed:
 * at row col, column r of the buffer). */
static uint32_t elem_at(const SmemMatrix *m, int es, int r, int col)
{
    int rows = m->trans ? m->cols : m->rows;
    if (m->trans) {
        int x = r;
        r = col;
        col = x;
    }
    if (m->swz)
        return (uint32_t)swz_offset(m->swz, m->pitch * es, rows, r, (int64_t)col * es);
    return (uint32_t)((r * m->pitch + col) * es);
}

/* One matmul acc = A @ B of M x N x K on `threads` threads; A at 0, B after it. */
/* pad_a, pad_b: row pitches other than mma_pitch's (0: mma_pitch), as a shared var may have;
 * swz: the operands as a pipelined loop's cp.async stores them (swizzled where mma_swizzles) */
/* ta, tb: A stored [K][M], B [N][K] (a column-major operand the pipeline copies in memory order) */
static void case_mma_layout(ElemType t, int threads, int M, int N, int K, int pad_a, int pad_b, bool swz,
                            bool ta, bool tb)
{
    char name[128];
    snprintf(name, sizeof name, "mma %s %dx%dx%d threads=%d%s%s%s%s", type_name(t), M, N, K, threads,
             pad_a || pad_b ? " unaligned pitch" : swz ? " swizzled" : "", ta ? " A^T" : "", tb ? " B^T" : "",
             strcmp(case_arch, "sm_80") ? " sm_90a" : "");
    Arena *a = arena_new();
    Options opt = { .arch = case_arch };
    threads_of_case = threads;
    Lower c = { .a = a, .opt = &opt, .target = target_of(case_arch), .threads = threads };
    c.f = func_new(&kernel);
    c.f->arena = a;
    c.f->threads = threads;
    Shape s = { 2, { M, N } };
    MatmulPlan plan;
    bool trans[2] = { ta, tb };
    matmul_choose(&c, &plan, t, t == TY_F32, s, K, trans, false);
    if (!unit_check(plan.row->tensor_cores, "matmul plan", "no tensor cores for %s", name))
        return;
    c.tid = ir_mov(c.f, PT_U32, SYM("%tid.x"));
    int es = type_size(t);
    /* operands a pipeline brings, else a shared var's (padded) or the matmul's own staging: the
       path they leave (a fallback, maybe) sets the pitches below */
    MatmulSource src = swz ? MS_CPASYNC : pad_a || pad_b ? MS_SHARED : MS_REGS;
    matmul_set_sources(&plan, src, src);
    SmemMatrix ma = { 0, pad_a ? K + pad_a : matmul_stage_pitch(&plan, 0, t, K), t, t == TY_F32, M, K, SWZ_NONE, 0, false };
    SmemMatrix mb = { 0, pad_b ? N + pad_b : mma_pitch(t, N), t, t == TY_F32, K, N, SWZ_NONE, 0, false };
    ma.trans = ta;
    mb.trans = tb;
    if (ta)
        ma.pitch = matmul_stage_pitch(&plan, 0, t, M);
    if (tb)
        mb.pitch = matmul_stage_pitch(&plan, 1, t, K);
    if (swz && (ma.swz = matmul_swizzle(&c, &plan, 0, t)) != SWZ_NONE)
        ma.pitch = ta ? M : K;
    if (swz && (mb.swz = matmul_swizzle(&c, &plan, 1, t)) != SWZ_NONE)
        mb.pitch = tb ? K : N;

    check_banks = !pad_a && !pad_b;
    int boff = ((ta ? K : M) * ma.pitch * es + 1023) & ~1023;     /* wgmma's slabs: 1024-byte aligned */
    ma.base = ir_mov(c.f, PT_U32, IMM(0));
    mb.base = ir_mov(c.f, PT_U32, IMM(boff));
    Tile acc = { TY_F32, plan.acc, NULL };
    snprintf(name + strlen(name), sizeof name - strlen(name), " (%s)", plan.row->name);
    Layout *L = &acc.L;
    int nslots = layout_slots(L);
    acc.v = calloc((size_t)nslots, sizeof(Opnd));
    for (int i = 0; i < nslots; i++) {
        acc.v[i] = R(new_reg(c.f, RC_F));
        Ins *in = emit_ins(c.f, OP_MOV, PT_F32);
        in->dst[0] = acc.v[i].reg;
        in->ndst = 1;
        in->src[0] = IMM(f2u((float)(i % 3)));   /* a running sum to add to */
        in->nsrc = 1;
    }
    memset(smem, 0xff, sizeof smem);   /* padding poisoned: a read of it shows */
    double *ref = calloc((size_t)(M * N), sizeof(double));
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) {
            float v = (float)((m * 7 + k * 3) % 9 - 4);
            uint32_t at = elem_at(&ma, es, m, k);
            if (t == TY_F32) { uint32_t u = f2u(v); memcpy(&smem[at], &u, 4); }
            else { uint16_t h = t == TY_F16 ? f2h(v) : f2bf(v); memcpy(&smem[at], &h, 2); }
        }
    for (int k = 0; k < K; k++)
        for (int n = 0; n < N; n++) {
            float v = (float)((k * 5 + n * 11) % 7 - 3);
            uint32_t at = (uint32_t)boff + elem_at(&mb, es, k, n);
            if (t == TY_F32) { uint32_t u = f2u(v); memcpy(&smem[at], &u, 4); }
            else { uint16_t h = t == TY_F16 ? f2h(v) : f2bf(v); memcpy(&smem[at], &h, 2); }
        }
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++)
                ref[m * N + n] += ((m * 7 + k * 3) % 9 - 4) * ((k * 5 + n * 11) % 7 - 3);
    if (swz && matmul_side(plan.row->xpose, 1)) {
        /* B placed as the loop's copies leave it (SWZ_BLK4), turned K-major in place by the
           threads (lower_transpose.c), then read by the product as the loop hands it over */
        xpose_stage_tf32(&c, (Shape){ 2, { K, N } }, mb.base);
        mb.swz = SWZ_SLAB;
        mb.pitch = K;
        mb.trans = true;
    }
    plan.row->lower(&c, &acc, &plan, ma, mb);
    int coord[2] = { thread_coord(&c, L, 0), thread_coord(&c, L, 1) };
    Block b = { threads, malloc(sizeof(uint64_t *) * (size_t)threads) };
    for (int i = 0; i < threads; i++)
        b.reg[i] = calloc((size_t)c.f->regs.n, sizeof(uint64_t));
    conflicts = 0;
    run(c.f, &b);
    /* every slot of every thread against the layout's formula */
    int *seen = calloc((size_t)(M * N), sizeof(int));
    int bad = 0, first_t = -1, first_s = -1;
    double got1 = 0, want1 = 0;
    for (int th = 0; th < threads; th++) {
        /* the Layout formula inverted: the inner grid from the low bits, the outer from the rest */
        int lo0 = L->Tlo[0], lo1 = L->Tlo[1], outer1 = L->T[1] / lo1;
        int inner = th % (lo0 * lo1), outer = th / (lo0 * lo1);
        int in0 = L->lo_t0_low ? inner % lo0 : inner / lo1, in1 = L->lo_t0_low ? inner / lo0 : inner % lo1;
        int t1 = outer % outer1 * lo1 + in1, t0 = outer / outer1 % (L->T[0] / lo0) * lo0 + in0;
        if ((int)b.reg[th][coord[0]] != t0 || (int)b.reg[th][coord[1]] != t1) {
            if (!bad++)
                first_t = th, first_s = -1;
            continue;
        }
        for (int o0 = 0; o0 < L->O[0]; o0++)
            for (int i0 = 0; i0 < L->V[0]; i0++)
                for (int o1 = 0; o1 < L->O[1]; o1++)
                    for (int i1 = 0; i1 < L->V[1]; i1++) {
                        int slot = ((o0 * L->V[0] + i0) * L->O[1] + o1) * L->V[1] + i1;
                        int row = layout_row_origin(L, t0) + layout_row(L, o0, i0);
                        int col = (o1 * L->T[1] + t1) * L->V[1] + i1;
                        seen[row * N + col]++;
                        double want = ref[row * N + col] + slot % 3;
                        double got = u2f((uint32_t)b.reg[th][acc.v[slot].reg]);
                        if (got != want && !bad++) {
                            first_t = th, first_s = slot, got1 = got, want1 = want;
                        }
                    }
    }
    unit_check(!bad, name, "%d wrong accumulators; first: thread %d slot %d = %g, want %g", bad, first_t, first_s,
               got1, want1);
    int cover = 0;
    for (int i = 0; i < M * N; i++)
        cover += seen[i] != 1;
    snprintf(name + strlen(name), sizeof name - strlen(name), " coverage");
    unit_check(!cover && L->reps == 1, name, "%d elements not held exactly once", cover);
    name[strlen(name) - 9] = 0;
    snprintf(name + strlen(name), sizeof name - strlen(name), " bank conflicts");
    /* an N of 8 leaves the f32 B loads one n-tile wide: allow those; and the swapped tf32
       product's mma.sync fallback reads a staged A of 64 or more columns (mma_pitch gives it B's
       8 (mod 32) words) two ways conflicting: allow that too */
    bool swapped_wide_a = L->lo_t0_low && ma.swz == SWZ_NONE && K >= 64;
    unit_check(!conflicts || (t == TY_F32 && N < 64) || swapped_wide_a || !check_banks, name,
               "%d conflicting accesses", conflicts);
    for (int i = 0; i < threads; i++)
        free(b.reg[i]);
    free(b.reg);
    free(seen);
    free(ref);
    free(acc.v);
    func_free(c.f);
    arena_free(a);
}

static void case_mma_pitch(ElemType t, int threads, int M, int N, int K, int pad_a, int pad_b)
{
    case_mma_layout(t, threads, M, N, K, pad_a, pad_b, false, false, false);
}

/* Both layouts a tensor-core operand has: padded (staged from registers) and swizzled (cp.async);
 * also transposed, as a pipeline copies column-major ones. */
static void case_mma(ElemType t, int threads, int M, int N, int K)
{
    for (int tr = 0; tr < 4; tr++) {
        case_mma_layout(t, threads, M, N, K, 0, 0, false, tr & 1, tr & 2);
        case_mma_layout(t, threads, M, N, K, 0, 0, true, tr & 1, tr & 2);
    }
}

/* swizzle.c's layouts for every row width: a permutation of the tile; the fragment reads (SWZ_
 * LDMATRIX: 8 rows of one chunk; SWZ_QUAD: 4 rows of two adjacent chunks) and a quarter warp's 8
 * consecutive 16-byte copies each in 8 distinct bank groups; a period further (8 rows, 4 for
 * SWZ_QUAD) a constant; a chunk step above the chunk's own bits an xor (what swz_step relies on). */
static void case_swizzle(void)
{
    for (int kind = SWZ_LDMATRIX; kind <= SWZ_QUAD; kind++)
        for (int rb = 16; rb <= 1024; rb *= 2) {
            if (!swz_applies(kind, rb))
                continue;
            enum { ROWS = 64 };
            int units = ROWS * rb / 16, period = kind == SWZ_QUAD ? 4 : 8;
            int bad_perm = 0, bad_read = 0, bad_copy = 0, bad_row = 0, bad_step = 0;
            char *hit = calloc((size_t)units, 1);
            for (int r = 0; r < ROWS; r++)
                for (int b = 0; b < rb; b += 16) {
                    int64_t o = swz_offset(kind, rb, ROWS, r, b);
                    if (o < 0 || o >= (int64_t)units * 16 || o % 16 || hit[o / 16]++)
                        bad_perm++;
                    if (r + period < ROWS && swz_offset(kind, rb, ROWS, r + period, b) != o + period * rb)
                        bad_row++;
                    /* a step of d units from chunk c with c below d's lowest bit (the fragment loads) */
                    for (int d = 1; b / 16 + d < rb / 16; d++) {
                        int c = b / 16, low = d & -d;
                        if (c % 8 >= low)
                            continue;
                        int64_t want = (o ^ (16 * (d % 8))) + 128 * (d / 8);
                        if (swz_offset(kind, rb, ROWS, r, b + 16 * d) != want)
                            bad_step++;
                    }
                }
            /* the fragment reads: 8 rows x 1 chunk, or 4 rows x 2 adjacent chunks */
            int rows = kind == SWZ_QUAD ? 4 : 8, chunks = 8 / rows;
            for (int r0 = 0; r0 < ROWS; r0 += rows)
                for (int b = 0; b < rb; b += 16 * chunks) {
                    int groups = 0;
                    for (int r = r0; r < r0 + rows; r++)
                        for (int j = 0; j < chunks; j++) {
                            int g = (int)(swz_offset(kind, rb, ROWS, r, b + 16 * j) / 16 % 8);
                            bad_read += (groups >> g) & 1;
                            groups |= 1 << g;
                        }
                }
            for (int u0 = 0; u0 < units; u0 += 8) {
                int groups = 0;
                for (int u = u0; u < u0 + 8; u++) {
                    int g = (int)(swz_offset(kind, rb, ROWS, u / (rb / 16), (int64_t)u % (rb / 16) * 16) / 16 % 8);
                    bad_copy += (groups >> g) & 1;
                    groups |= 1 << g;
                }
            }
            free(hit);
            const char *kn = kind == SWZ_QUAD ? "quad" : "ldmatrix";
            char name[96];
            snprintf(name, sizeof name, "swizzle %s %d-byte rows: a permutation of the tile's units", kn, rb);
            unit_check(!bad_perm, name, "%d bad", bad_perm);
            snprintf(name, sizeof name, "swizzle %s %d-byte rows: fragment reads conflict-free", kn, rb);
            unit_check(!bad_read, name, "%d conflicts", bad_read);
            snprintf(name, sizeof name, "swizzle %s %d-byte rows: cp.async quarter warps conflict-free", kn, rb);
            unit_check(!bad_copy, name, "%d conflicts", bad_copy);
            snprintf(name, sizeof name, "swizzle %s %d-byte rows: %d rows further is a constant", kn, rb, period);
            unit_check(!bad_row, name, "%d bad", bad_row);
            snprintf(name, sizeof name, "swizzle %s %d-byte rows: chunk steps are xors", kn, rb);
            unit_check(!bad_step, name, "%d bad", bad_step);
        }
}

/* The wgmma slabs (128 and 64 bytes wide): a permutation of the tile, the hardware's swizzle of
 * the slab's plain row-major address (the 16-byte chunk bits XOR the address bits 7 and up: three
 * of them for 128 bytes, two for 64), and a row delta of whole swizzle periods or a whole-slab
 * column delta moves a piece by swz_delta's constant. */
static void case_slabs(void)
{
    for (int kind = SWZ_SLAB; kind != -1; kind = kind == SWZ_SLAB ? SWZ_SLAB64 : -1)
    for (int w = kind == SWZ_SLAB ? 128 : 64, rb = w; rb <= 4 * w; rb *= 2)
        for (int warps = 4; warps <= 8; warps *= 2) {
            int rows = 32 * warps, bytes = rows * rb, bad_perm = 0, bad_delta = 0, bad_hw = 0;
            char *hit = calloc((size_t)bytes / 16, 1);
            for (int r = 0; r < rows; r++)
                for (int cb = 0; cb < rb; cb += 16) {
                    int64_t o = swz_offset(kind, rb, rows, r, cb);
                    if (o < 0 || o >= bytes || o % 16 || hit[o / 16]++)
                        bad_perm++;
                    int64_t plain = cb / w * rows * w + r * w + cb % w;
                    bad_hw += o != (plain ^ (((plain >> 7) & (w / 16 - 1)) << 4));
                }
            for (int bound = 8; bound <= rows; bound *= 2)
                for (int r = 0; r < bound; r++)
                    for (int rd = 0; r + rd < rows; rd += bound)
                        for (int cb = 0; cb < w; cb += 16)
                            for (int cdb = 0; cb + cdb < rb; cdb += w) {
                                int64_t delta;
                                if (!swz_delta(kind, rb, rows, rd, cdb, &delta))
                                    continue;
                                if (swz_offset(kind, rb, rows, r + rd, cb + cdb) !=
                                    swz_offset(kind, rb, rows, r, cb) + delta)
                                    bad_delta++;
                            }
            free(hit);
            char name[96];
            snprintf(name, sizeof name, "swizzle slab%d %d-byte rows, %d warps: a permutation", w, rb, warps);
            unit_check(!bad_perm, name, "%d bad", bad_perm);
            snprintf(name, sizeof name, "swizzle slab%d %d-byte rows, %d warps: the hardware's swizzle", w, rb, warps);
            unit_check(!bad_hw, name, "%d bad", bad_hw);
            snprintf(name, sizeof name, "swizzle slab%d %d-byte rows, %d warps: constant deltas", w, rb, warps);
            unit_check(!bad_delta, name, "%d bad", bad_delta);
        }
}

/* SWZ_SLAB_K8 (the swapped tf32 product's B, brought by TMA): the 128-byte slab of row
 * position p = 8 (r / 8) + 2 (r % 4) + r / 4 % 2 as the hardware swizzles it (TMA's rows8 map
 * lands row r there); the fragment loads of lower_mma_swap.c -- a warp reads rows k + q and
 * k + 4 + q (q < 4) at 8 consecutive columns, 2 q + g / 4 16-byte chunks of one slab -- hit 32
 * distinct banks; 8 rows or a slab further is swz_delta's constant, 4 rows none. */
static void case_slab_k8(void)
{
    enum { ROWS = 32, RB = 512 };
    int bad_perm = 0, bad_hw = 0, bad_read = 0, bad_delta = 0;
    char *hit = calloc(ROWS * RB / 16, 1);
    for (int r = 0; r < ROWS; r++)
        for (int cb = 0; cb < RB; cb += 16) {
            int64_t o = swz_offset(SWZ_SLAB_K8, RB, ROWS, r, cb);
            if (o < 0 || o >= ROWS * RB || o % 16 || hit[o / 16]++)
                bad_perm++;
            int64_t pos = (r & ~7) | (r & 3) << 1 | (r >> 2 & 1);
            int64_t plain = cb / 128 * ROWS * 128 + pos * 128 + cb % 128;
            bad_hw += o != (plain ^ (((plain >> 7) & 7) << 4));
            int64_t d;
            if (r + 8 < ROWS && (!swz_delta(SWZ_SLAB_K8, RB, ROWS, 8, 128, &d) ||
                                 (cb + 128 < RB && swz_offset(SWZ_SLAB_K8, RB, ROWS, r + 8, cb + 128) != o + d)))
                bad_delta++;
        }
    int64_t none;
    bad_delta += swz_delta(SWZ_SLAB_K8, RB, ROWS, 4, 0, &none);
    for (int k = 0; k < ROWS; k += 4)
        for (int c0 = 0; c0 < RB / 4; c0 += 8) {
            unsigned banks = 0;
            for (int lane = 0; lane < 32; lane++) {
                int q = lane % 4, g = lane / 4;
                int bank = (int)(swz_offset(SWZ_SLAB_K8, RB, ROWS, k + q, (c0 + g) * 4) / 4 % 32);
                bad_read += (banks >> bank) & 1;
                banks |= 1u << bank;
            }
        }
    free(hit);
    unit_check(!bad_perm, "swizzle slab k8: a permutation", "%d bad", bad_perm);
    unit_check(!bad_hw, "swizzle slab k8: the hardware's swizzle of each row's position", "%d bad", bad_hw);
    unit_check(!bad_read, "swizzle slab k8: the B^T fragment loads conflict-free", "%d conflicts", bad_read);
    unit_check(!bad_delta, "swizzle slab k8: 8 rows and a slab further constant, 4 rows not", "%d bad", bad_delta);
}

/* The row of each slot of layout L for thread t, by the Layout formula (lower.h) inverted. */
static int row_of(const Layout *L, int t, int o0, int i0)
{
    int lo0 = L->Tlo[0], lo1 = L->Tlo[1], outer1 = L->T[1] / lo1;
    int inner = t % (lo0 * lo1), outer = t / (lo0 * lo1);
    int in0 = L->lo_t0_low ? inner % lo0 : inner / lo1;
    int t0 = outer / outer1 % (L->T[0] / lo0) * lo0 + in0;
    return layout_row_origin(L, t0) + layout_row(L, o0, i0);
}

/* Does every slot of tile v (i32) hold its own row plus base, in every thread? */
static int rows_wrong(Block *b, const Tile *v, int base)
{
    int bad = 0;
    for (int t = 0; t < b->threads; t++)
        for (int o0 = 0; o0 < v->L.O[0]; o0++)
            for (int i0 = 0; i0 < v->L.V[0]; i0++)
                for (int s1 = 0; s1 < v->L.O[1] * v->L.V[1]; s1++) {
                    Opnd x = v->v[slot_index(&v->L, o0, i0, s1 / v->L.V[1], s1 % v->L.V[1])];
                    int got = x.kind == O_REG ? (int)(uint32_t)b->reg[t][x.reg] : (int)x.i;
                    bad += got != base + row_of(&v->L, t, o0, i0);
                }
    return bad;
}

/* The wgmma accumulator's rows in warpgroup order (lower.h, wg_rows): warp w holds rows 16 w + g
 * and 16 w + 8 + g of every 16 W. A tile of row indices made in it (tile_row_iota) holds each
 * slot's row; moved to a row-major layout and back through the scratch area (scratch_store_tile,
 * remap_smem) every slot still does; a slice of whole 2 T0-row blocks stays in registers and
 * holds its rows. The formula itself: every row of the tile held exactly once. */
static void case_wg_rows(int threads, int M, int N)
{
    char name[96];
    Arena *a = arena_new();
    Options opt = { .arch = "sm_90a" };
    Lower c = { .a = a, .opt = &opt, .target = target_of("sm_90a"), .threads = threads };
    c.f = func_new(&kernel);
    c.f->arena = a;
    c.tid = ir_mov(c.f, PT_U32, SYM("%tid.x"));
    Layout L = layout_mma((Shape){ 2, { M, N } }, threads, TY_F16, true, false);
    snprintf(name, sizeof name, "wg rows %dx%d threads=%d: the layout is in warpgroup order", M, N, threads);
    if (!unit_check(layout_wg(&L), name, "wg_rows %d, T0 %d, O0 %d", L.wg_rows, L.T[0], L.O[0]))
        return;
    int *held = calloc((size_t)M, sizeof(int)), twice = 0;
    for (int t = 0; t < threads; t++)
        for (int o0 = 0; o0 < L.O[0]; o0++) {
            int r = row_of(&L, t, o0, 0), w = t / 32, g = t % 32 / 4;
            held[r] += t % 4 == 0;
            twice += r % 16 != g + 8 * (o0 % 2) || r / 16 % (threads / 32) != w;
        }
    for (int r = 0; r < M; r++)
        twice += held[r] != 1;
    snprintf(name, sizeof name, "wg rows %dx%d threads=%d: warp w rows 16w + g, + 8", M, N, threads);
    unit_check(!twice, name, "%d rows misplaced or not held once", twice);
    free(held);
    Tile rows = tile_row_iota(&c, &L);
    Layout P = layout_rowmajor((Shape){ 2, { M, N } }, threads, 1);
    Tile plain = to_layout(&c, rows, &P);
    Tile back = to_layout(&c, plain, &L);
    int w[2] = { M / 2, N }, at[2] = { M / 2, 0 };
    int before = c.f->code.n;
    Tile half = tile_slice(&c, rows, at, w, NULL);
    bool regs = c.f->code.n == before;     /* no instruction: the same registers */
    Block b = { threads, malloc(sizeof(uint64_t *) * (size_t)threads) };
    for (int i = 0; i < threads; i++)
        b.reg[i] = calloc((size_t)c.f->regs.n, sizeof(uint64_t));
    run(c.f, &b);
    snprintf(name, sizeof name, "wg rows %dx%d threads=%d: row iota", M, N, threads);
    unit_check(!rows_wrong(&b, &rows, 0), name, "%d slots wrong", rows_wrong(&b, &rows, 0));
    snprintf(name, sizeof name, "wg rows %dx%d threads=%d: to row-major", M, N, threads);
    unit_check(!rows_wrong(&b, &plain, 0), name, "%d slots wrong", rows_wrong(&b, &plain, 0));
    snprintf(name, sizeof name, "wg rows %dx%d threads=%d: and back", M, N, threads);
    unit_check(layout_eq(&back.L, &L) && !rows_wrong(&b, &back, 0), name, "%d slots wrong",
               rows_wrong(&b, &back, 0));
    snprintf(name, sizeof name, "wg rows %dx%d threads=%d: a slice of whole blocks in registers", M, N, threads);
    unit_check(regs && layout_wg(&half.L) && !rows_wrong(&b, &half, M / 2), name,
               "%s, %d slots wrong", regs ? "in registers" : "through shared memory", rows_wrong(&b, &half, M / 2));
    for (int i = 0; i < threads; i++)
        free(b.reg[i]);
    free(b.reg);
    func_free(c.f);
    arena_free(a);
}

/* swz_offset_ir computes what swz_offset does: one thread per 16-byte piece of the tile. */
static void case_slab_ir(int kind, int rb, int warps)
{
    int rows = 32 * warps, chunks = rb / 16, n = rows * chunks, chunk_bits = 0;
    while (1 << chunk_bits < chunks)
        chunk_bits++;
    Arena *a = arena_new();
    Options opt = { .arch = "sm_90a" };
    Lower c = { .a = a, .opt = &opt, .target = target_of("sm_90a"), .threads = 32 * warps };
    c.f = func_new(&kernel);
    c.f->arena = a;
    int tid = ir_mov(c.f, PT_U32, SYM("%tid.x"));
    int row = ir_bin(c.f, OP_SHR, PT_U32, R(tid), IMM(chunk_bits));
    int col = ir_bin(c.f, OP_SHL, PT_B32, R(ir_bin(c.f, OP_BAND, PT_B32, R(tid), IMM(chunks - 1))), IMM(4));
    int off = swz_offset_ir(&c, kind, row, col, true, rb, rows);
    Block b = { n, malloc(sizeof(uint64_t *) * (size_t)n) };
    for (int i = 0; i < n; i++)
        b.reg[i] = calloc((size_t)c.f->regs.n, sizeof(uint64_t));
    run(c.f, &b);
    int bad = 0;
    for (int t = 0; t < n; t++)
        bad += b.reg[t][off] != (uint64_t)swz_offset(kind, rb, rows, t / chunks, t % chunks * 16);
    char name[96];
    snprintf(name, sizeof name, "swizzle %s %d-byte rows, %d warps: the IR places pieces alike",
             kind == SWZ_SLAB ? "slab" : "slab64", rb, warps);
    unit_check(!bad, name, "%d differ", bad);
    for (int i = 0; i < n; i++)
        free(b.reg[i]);
    free(b.reg);
    func_free(c.f);
    arena_free(a);
}

static void case_refusals(void)
{
    Options o80 = { .arch = "sm_80" }, o75 = { .arch = "sm_75" }, o90a = { .arch = "sm_90a" };
    Lower c = { .opt = &o80, .target = target_of("sm_80"), .threads = 128 };
    unit_check(!mma_supported(&c, TY_F32, false, 128, 128, 32), "mma refuses IEEE f32", "accepted");
    unit_check(!mma_supported(&c, TY_F16, false, 8, 128, 32), "mma refuses M < 16", "accepted");
    unit_check(!mma_supported(&c, TY_F16, false, 128, 4, 32), "mma refuses N < 8", "accepted");
    unit_check(mma_supported(&c, TY_F16, false, 32, 128, 32), "mma takes 4 warps over N", "refused");
    unit_check(!mma_supported(&c, TY_F16, false, 128, 128, 8), "mma refuses f16 K % 16", "accepted");
    unit_check(mma_supported(&c, TY_F32, true, 128, 128, 8), "mma takes tf32 K 8", "refused");
    c.opt = &o75;
    c.target = target_of("sm_75");
    unit_check(!mma_supported(&c, TY_F16, false, 128, 128, 32), "mma refuses sm_75", "accepted");
    c.opt = &o90a;
    c.target = target_of("sm_90a");
    unit_check(mma_supported(&c, TY_BF16, false, 128, 128, 32), "mma takes sm_90a", "refused");
    int ok = 1;
    for (int cols = 8; cols <= 256; cols *= 2) {
        int p16 = mma_pitch(TY_F16, cols), p32 = mma_pitch(TY_F32, cols);
        ok &= p16 >= cols && p16 * 2 % 16 == 0 && (p16 * 2 / 16) % 2 == 1;
        ok &= p32 >= cols && p32 * 4 % 16 == 0;
    }
    unit_check(ok, "mma_pitch: rows 16-byte aligned, f16 rows odd multiples of 16 bytes", "no");
}

int main(void)
{
    case_refusals();
    case_swizzle();
    case_slab_k8();
    /* row widths of 16 to 1024 bytes through the swizzled fragment loads */
    case_mma(TY_F16, 128, 128, 128, 64);
    case_mma(TY_F16, 256, 128, 256, 64);
    case_mma(TY_F16, 128, 64, 32, 32);
    case_mma(TY_BF16, 256, 32, 512, 16);
    case_mma(TY_F16, 512, 128, 128, 32);
    case_mma(TY_F32, 128, 128, 128, 32);
    case_mma(TY_F32, 64, 16, 64, 4 * 8);
    case_mma(TY_F16, 128, 128, 128, 32);
    case_mma(TY_BF16, 128, 128, 128, 32);
    case_mma(TY_F32, 128, 128, 128, 16);
    case_mma(TY_F16, 256, 128, 64, 16);
    case_mma(TY_F16, 64, 32, 8, 16);      /* one n-tile: ldmatrix .x2 */
    case_mma(TY_F32, 64, 32, 8, 8);
    case_mma(TY_BF16, 32, 64, 16, 64);
    /* 2-D warp grids: 2 x 4 warps of 64 x 64, 4 x 2 warps, one row of warps */
    case_mma(TY_F16, 256, 128, 256, 32);
    case_mma(TY_BF16, 256, 256, 128, 32);
    case_mma(TY_F16, 128, 16, 128, 16);
    /* tf32 with B read four n-tiles at a time (v4 loads), and with v2-wide warps */
    case_mma(TY_F32, 256, 128, 256, 16);
    case_mma(TY_F32, 128, 64, 64, 8);
    case_mma(TY_F32, 128, 32, 256, 8);
    /* a shared var's pitch (cols + 4): no ldmatrix, plain loads */
    case_mma_pitch(TY_F16, 128, 128, 128, 32, 4, 4);
    case_mma_pitch(TY_BF16, 128, 128, 64, 32, 4, 0);
    case_mma_pitch(TY_F16, 128, 128, 64, 32, 0, 4);
    case_mma_pitch(TY_F32, 128, 128, 128, 16, 1, 1);
    case_mma_pitch(TY_F16, 256, 128, 256, 32, 4, 4);
    case_mma_pitch(TY_F32, 256, 128, 256, 16, 0, 2);
    /* sm_90a: wgmma where a pipeline's slabs arrive (swizzled), else mma.sync in its layout */
    case_slabs();
    for (int warps = 4; warps <= 16; warps *= 2) {
        case_slab_ir(SWZ_SLAB, 128, warps);
        case_slab_ir(SWZ_SLAB, 512, warps);
        case_slab_ir(SWZ_SLAB64, 64, warps);
        case_slab_ir(SWZ_SLAB64, 256, warps);
    }
    case_wg_rows(256, 256, 64);
    case_wg_rows(128, 128, 32);
    case_wg_rows(512, 512, 16);
    case_arch = "sm_90a";
    case_mma(TY_F16, 256, 128, 256, 64);
    case_mma(TY_BF16, 256, 128, 256, 64);
    case_mma(TY_F16, 128, 64, 128, 128);      /* A in two slabs */
    /* the slab needs only the operand rows that run along it: B^T of 32 rows (N = 32) and an
       N-major B of 32 k rows (K = 32, A M-major) on wgmma; A K-major and B^T with K = 32 in the
       64-byte slabs, and K = 96 and 160 (three and five of them); an N-major B of 32 columns on
       mma.sync */
    case_mma(TY_F16, 128, 64, 32, 64);
    case_mma(TY_BF16, 128, 64, 128, 32);
    case_mma(TY_F16, 128, 64, 64, 96);
    case_mma(TY_BF16, 256, 128, 64, 160);
    case_mma(TY_F16, 256, 128, 16, 128);
    case_mma(TY_F16, 128, 64, 8, 64);
    case_mma(TY_BF16, 256, 256, 128, 64);     /* two wgmma per k step */
    case_mma(TY_F16, 128, 128, 64, 64);
    case_mma(TY_F16, 512, 256, 256, 64);      /* four warpgroups */
    /* tf32 swapped (lower_mma_swap.c): wgmma with B^T from registers where A arrives in a slab,
       mma.sync the same way where not; one or two 64-row blocks per warpgroup, A in 1 to 4 slabs */
    case_mma(TY_F32, 256, 256, 128, 32);
    case_mma(TY_F32, 128, 128, 128, 32);
    case_mma(TY_F32, 256, 128, 256, 32);
    case_mma(TY_F32, 128, 64, 64, 128);
    case_mma(TY_F32, 512, 64, 256, 64);       /* four warpgroups */
    case_mma_pitch(TY_F32, 256, 256, 128, 32, 4, 4);    /* a shared var's pitch */
    unit_check(!wgmma_shape(&(Lower){ .opt = &(Options){ .arch = "sm_90" }, .target = target_of("sm_90"), .threads = 256 }, TY_F16, false, 128, 256, 64, true, false),
               "wgmma only on sm_90a", "taken on sm_90");
    return unit_exit();
}
