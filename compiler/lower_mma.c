/* lower_mma.c: tensor-core matmul with mma.sync (sm_80 and later).
 *
 * f16 and bf16 operands use mma.sync.m16n8k16, tf32 operands (f32 under tf32()) m16n8k8; both
 * accumulate in f32. Operands are row-major matrices in shared memory (A [M][K], B [K][N]).
 *
 * Accumulator layout (layout_mma), one member of the Layout family: warps are stacked along M.
 * Lane l = 4g + q (g = l >> 2, q = l & 3); thread t = 4 * t0 + q with t0 = 8 * warp + g.
 * T1 = 4, V1 = 2, O1 = N / 8: the columns of n-tile o1 that lane q holds are 8 o1 + 2q, 2q + 1
 * (the mma C fragment's c0/c1 and c2/c3 columns). T0 = threads / 4, V0 = 1, O0 = M / T0: thread
 * row o0 is o0 * T0 + 8 * warp + g. Two consecutive o0 make one m16 tile: tile j of a warp is
 * rows r_lo = 2j T0 + 8 warp + g (fragment rows 0-7, c0 c1) and r_hi = (2j+1) T0 + 8 warp + g
 * (fragment rows 8-15, c2 c3). The tile's rows are not contiguous in memory; ldmatrix takes one
 * row address per lane, so that costs nothing.
 *
 * Fragments per k step (16 for f16/bf16, 8 for tf32):
 *  - A: ldmatrix.x4 per m16 tile. Lane l gives the address of row (l & 8 ? r_hi : r_lo)(l & 7)
 *    at k + 16 bytes * (l >> 4): matrices 0..3 are rows 0-7/8-15 x the low/high 16 bytes of the
 *    k step, i.e. a0..a3. For tf32 the same load reads 32-bit elements as b16 pairs: lane l gets
 *    bytes 4q..4q+3 of its row, element q (and q + 4 in the high half), which is the tf32 A
 *    fragment; each is then rounded with cvt.rna.tf32.f32.
 *  - B (f16/bf16): ldmatrix.x4.trans per pair of n-tiles. Lane l gives the address of row k +
 *    (l & 7) + 8 * ((l >> 3) & 1) at column 8 * (n + (l >> 4)); transposed, lane l receives
 *    B[k + 2q, +1][8n + g] (b0) and B[k + 8 + 2q, +1][8n + g] (b1).
 *  - B (tf32): no 32-bit transposing ldmatrix, so two ld.shared.b32 per n-tile: b0 = B[k + q][8n
 *    + g], b1 = B[k + q + 4][8n + g].
 * tests/unit/test_mma_map.c runs these maps against the PTX fragment tables.
 *
 * Bank conflicts: ldmatrix reads 8 rows of 16 bytes per matrix; a row pitch that is an odd
 * multiple of 16 bytes puts them in 8 distinct 16-byte bank groups (mma_pitch). The tf32 B loads
 * read rows k + q (q < 4) at 8 consecutive words: a pitch of 8 (mod 32) words spreads the four
 * rows over the 32 banks. mma_pitch cannot tell A from B, so f32 matrices of 64 or more columns
 * (B's N side in practice; A's K side is a short BK) get the B pitch. */
#include <stdlib.h>
#include "tilec.h"

enum { MMA_M = 16, MMA_N = 8 };

static int arch_number(Lower *c)
{
    const char *a = c && c->opt ? c->opt->arch : NULL;
    if (!a || a[0] != 's' || a[1] != 'm' || a[2] != '_')
        return 0;
    return atoi(a + 3);
}

static int k_step(ElemType t) { return t == TY_F32 ? 8 : 16; }

bool mma_supported(Lower *c, ElemType t, bool tf32, int M, int N, int K)
{
    if (arch_number(c) < 80)
        return false;
    if (!(t == TY_F16 || t == TY_BF16 || (t == TY_F32 && tf32)))
        return false;
    int threads = c->threads;
    if (threads <= 0 || threads % 32)
        return false;
    int T0 = threads / 4;
    /* every warp owns whole m16 tiles: M a multiple of 2 T0 */
    return M % (2 * T0) == 0 && N % MMA_N == 0 && K % k_step(t) == 0;
}

Layout layout_mma(Shape s, int threads)
{
    Layout L;
    L.rank = 2;
    L.S[0] = s.rank == 2 ? (int)s.dim[0] : 1;
    L.S[1] = s.rank >= 1 ? (int)s.dim[s.rank - 1] : 1;
    int T0 = threads / 4;
    if (s.rank != 2 || threads % 32 || L.S[0] % (2 * T0) || L.S[1] % MMA_N)
        return layout_matmul(s, threads);   /* mma_supported refused these */
    L.bcast[0] = L.bcast[1] = false;
    L.T[0] = T0;
    L.V[0] = 1;
    L.O[0] = L.S[0] / T0;
    L.T[1] = 4;
    L.V[1] = 2;
    L.O[1] = L.S[1] / MMA_N;
    L.reps = 1;
    return L;
}

int mma_pitch(ElemType t, int cols)
{
    int es = type_size(t);
    if (es == 4 && cols >= 64 && cols % 32 == 0)
        return cols + 8;                        /* tf32 B: 8 (mod 32) words */
    int bytes = (cols * es + 15) & ~15;         /* 16-byte rows for cp.async and ldmatrix */
    if ((bytes / 16) % 2 == 0)
        bytes += 16;                            /* odd multiple of 16 bytes */
    return bytes / es;
}

static int slot_of(const Layout *L, int o0, int o1, int i1) { return (o0 * L->O[1] + o1) * L->V[1] + i1; }

/* (tid >> sh) & mask */
static int tid_bits(Lower *c, int sh, int mask)
{
    int r = sh ? ir_bin(c->f, OP_SHR, PT_U32, R(c->tid), IMM(sh)) : c->tid;
    return ir_bin(c->f, OP_BAND, PT_B32, R(r), IMM(mask));
}

static void ldmatrix(Lower *c, int *dst, int n, bool trans, int addr, int64_t off)
{
    Func *f = c->f;
    Ins *in = emit_ins(f, OP_LDMATRIX, PT_B16);
    for (int i = 0; i < n; i++)
        in->dst[i] = dst[i] = new_reg(f, RC_R);
    in->ndst = n;
    in->vec = (uint8_t)n;
    in->cmp = trans;
    in->space = SP_SHARED;
    in->src[0] = R(addr);
    in->nsrc = 1;
    in->off = off;
}

static int ld_b32(Lower *c, int addr, int64_t off)
{
    Func *f = c->f;
    int d = new_reg(f, RC_R);
    Ins *in = emit_ins(f, OP_LD, PT_B32);
    in->space = SP_SHARED;
    in->vec = 1;
    in->dst[0] = d;
    in->ndst = 1;
    in->src[0] = R(addr);
    in->nsrc = 1;
    in->off = off;
    ir_naive_addr(f);            /* lowering writes addresses in full; addr_split folds them */
    return d;
}

static void mma(Lower *c, PType ab, Tile *acc, const int *cs, const int *a, const int *b)
{
    Ins *in = emit_ins(c->f, OP_MMA, PT_F32);
    in->ty2 = (uint8_t)ab;
    for (int i = 0; i < 4; i++) {
        if (acc->v[cs[i]].kind != O_REG)
            die("lower_mma: accumulator slot %d is not a register", cs[i]);
        in->dst[i] = acc->v[cs[i]].reg;
        in->src[i] = R(a[i]);
        in->src[6 + i] = acc->v[cs[i]];
    }
    in->src[4] = R(b[0]);
    in->src[5] = R(b[1]);
    in->ndst = 4;
    in->nsrc = 10;
}

/* A 32-bit fragment register from two 16-bit elements (low, high) when no ldmatrix can read them. */
static int pair_b16(Lower *c, int addr, int64_t off_lo, int64_t off_hi)
{
    Func *f = c->f;
    int h[2];
    int64_t offs[2] = { off_lo, off_hi };
    for (int e = 0; e < 2; e++) {
        int d = new_reg(f, ptype_class(PT_B16));
        Ins *in = emit_ins(f, OP_LD, PT_B16);
        in->space = SP_SHARED;
        in->vec = 1;
        in->dst[0] = d;
        in->ndst = 1;
        in->src[0] = R(addr);
        in->nsrc = 1;
        in->off = offs[e];
        ir_naive_addr(f);
        h[e] = ir_cvt(f, PT_U32, PT_U16, R(d));
    }
    int hi = ir_bin(f, OP_SHL, PT_B32, R(h[1]), IMM(16));
    return ir_bin(f, OP_BOR, PT_B32, R(h[0]), R(hi));
}

/* The B fragments of n-tile n (and n + 1 when ldmatrix.x4 takes a pair) at k step k into
 * frag[0..1] (frag[2..3]). */
static void load_b(Lower *c, int *frag, bool tf, bool ldm_b, int blane, int64_t bpitch, int es, int k, int n, int ntiles)
{
    int pair = ldm_b && ntiles - n >= 2 ? 2 : 1;
    int64_t col = (int64_t)n * MMA_N * es;
    if (tf) {
        for (int i = 0; i < 2; i++)
            frag[i] = ir_round_tf32(c->f, ld_b32(c, blane, (k + 4 * i) * bpitch + col));
    } else if (ldm_b) {
        ldmatrix(c, frag, 2 * pair, true, blane, k * bpitch + col);
    } else {
        for (int i = 0; i < 2; i++)
            frag[i] = pair_b16(c, blane, (k + 8 * i) * bpitch + col, (k + 8 * i + 1) * bpitch + col);
    }
}

/* ldmatrix needs every row address 16-byte aligned. Matrices staged here or by a pipeline have
 * mma_pitch rows; a shared var may not (its pitch is the var's): then each fragment register is
 * loaded by plain ld.shared, 32 bits where the pair is contiguous, 16 + 16 bits where not. */
void lower_mma(Lower *c, Tile *acc, SmemMatrix a, SmemMatrix b)
{
    Func *f = c->f;
    Layout *L = &acc->L;
    bool tf = a.type == TY_F32;
    PType ab = tf ? PT_B32 : a.type == TY_BF16 ? PT_BF16 : PT_F16;
    int es = type_size(a.type);
    int K = a.cols, ks = k_step(a.type);
    int T0 = L->T[0], mtiles = L->O[0] / 2, ntiles = L->O[1];
    int64_t apitch = (int64_t)a.pitch * es, bpitch = (int64_t)b.pitch * es;
    bool ldm_a = apitch % 16 == 0, ldm_b = !tf && bpitch % 16 == 0;
    if (L->T[1] != 4 || L->V[1] != 2 || L->V[0] != 1 || L->O[0] % 2 || T0 * 4 != c->threads)
        die("lower_mma: accumulator is not in the mma layout");
    if (apitch % 4 || bpitch % 2)
        die("lower_mma: operand rows not 4-byte aligned");
    f->cur_what = "mma fragment address";
    int warp8 = ir_bin(f, OP_BAND, PT_B32, R(ir_bin(f, OP_SHR, PT_U32, R(c->tid), IMM(2))), IMM(~7));
    int alane;
    if (ldm_a) {
        /* A: row (l & 8 ? T0 : 0) + 8 warp + (l & 7), 16 bytes further for l >= 16 */
        int row = ir_bin(f, OP_ADD, PT_U32, R(warp8), R(tid_bits(c, 0, 7)));
        row = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 3, 1)), IMM(T0), R(row));
        int aoff = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 4, 1)), IMM(16), R(a.base));
        alane = ir_tern(f, OP_MAD, PT_U32, R(row), IMM(apitch), R(aoff));
    } else {
        /* A by ld.shared.b32: row 8 warp + g, byte 4q (elements 2q, 2q+1, or tf32 element q) */
        int row = ir_bin(f, OP_ADD, PT_U32, R(warp8), R(tid_bits(c, 2, 7)));
        int aoff = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 0, 3)), IMM(4), R(a.base));
        alane = ir_tern(f, OP_MAD, PT_U32, R(row), IMM(apitch), R(aoff));
    }
    int blane;
    if (ldm_b) {
        /* B: row (l & 7) + 8 ((l >> 3) & 1) = l & 15, next n-tile (16 bytes) for l >= 16 */
        int boff = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 4, 1)), IMM(16), R(b.base));
        blane = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 0, 15)), IMM(bpitch), R(boff));
    } else {
        /* B: row q (tf32) or 2q (16-bit pairs), column g */
        int boff = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 2, 7)), IMM(es), R(b.base));
        blane = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 0, 3)), IMM(tf ? bpitch : 2 * bpitch), R(boff));
    }
    f->cur_what = "mma fragment";
    int *afrag = malloc(sizeof(int) * (size_t)(4 * mtiles));
    int *bfrag = malloc(sizeof(int) * (size_t)(2 * ntiles + 2));
    /* Where the pipelined loop's pending copies go (see the first k step below): after all of
     * the first step's B fragments when the block is large enough (8+ warps) that occupancy is one
     * block per SM whatever the registers, which the hoisted fragments raise by about 30; after
     * the first B load otherwise, where the register cap keeps several blocks per SM. */
    int pf = c->threads >= 256 ? 2 : 1;
    for (int k = 0; k < K; k += ks) {
        for (int j = 0; j < mtiles; j++) {
            int64_t base = 2 * j * T0 * apitch + (int64_t)k * es;
            if (ldm_a)
                ldmatrix(c, &afrag[4 * j], 4, false, alane, base);
            else   /* a_i: rows +T0 for odd i, 16 bytes further along k for i >= 2 */
                for (int i = 0; i < 4; i++)
                    afrag[4 * j + i] = ld_b32(c, alane, base + (i & 1) * T0 * apitch + (i >> 1) * 16);
            if (tf)
                for (int i = 0; i < 4; i++)
                    afrag[4 * j + i] = ir_round_tf32(c->f, afrag[4 * j + i]);
        }
        int nstep = ldm_b ? 2 : 1;
        /* The first k step loads all its B fragments before the pipelined loop's copies for a
           later stage (which ptxas keeps behind these shared loads) go out: their address
           arithmetic then overlaps this step's mma. */
        bool hoist = k == 0 && pf == 2 && c->pipe_pending;
        if (hoist) {
            for (int n = 0; n < ntiles; n += nstep)
                load_b(c, &bfrag[2 * n], tf, ldm_b, blane, bpitch, es, k, n, ntiles);
            pipe_issue_pending(c);
        }
        for (int n = 0; n < ntiles; n += nstep) {
            int pair = ldm_b && ntiles - n >= 2 ? 2 : 1;
            if (!hoist) {
                load_b(c, &bfrag[2 * n], tf, ldm_b, blane, bpitch, es, k, n, ntiles);
                if (k == 0 && n == 0 && pf == 1)
                    pipe_issue_pending(c);
            }
            for (int p = 0; p < pair; p++)
                for (int j = 0; j < mtiles; j++) {
                    int cs[4] = { slot_of(L, 2 * j, n + p, 0), slot_of(L, 2 * j, n + p, 1),
                                  slot_of(L, 2 * j + 1, n + p, 0), slot_of(L, 2 * j + 1, n + p, 1) };
                    mma(c, ab, acc, cs, &afrag[4 * j], &bfrag[2 * (n + p)]);
                }
        }
    }
    free(bfrag);
    free(afrag);
    pipe_issue_pending(c);
}
