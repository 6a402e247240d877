/* lower_mma.c: tensor-core matmul with mma.sync (sm_80 and later).
 *
 * f16 and bf16 operands use mma.sync.m16n8k16, tf32 operands (f32 under tf32()) m16n8k8; both
 * accumulate in f32. 8-bit operands use m16n8k32, fp8 accumulating in f32 and i8/u8 in s32.
 * Operands are row-major matrices in shared memory (A [M][K], B [K][N]), or transposed.
 *
 * 8-bit operands: a fragment register holds four k-consecutive elements where a 16-bit one holds
 * two, so in bytes the A fragments and the K-major B fragments (B^T, [N][K]) of m16n8k32 are
 * those of m16n8k16: the same ldmatrix reads them, a k step being 32 bytes either way. An 8-bit
 * operand whose k runs down its rows (A^T, row-major B) has no transposing ldmatrix: each
 * register is four byte loads (quad_b8), the slow path of those layouts.
 *
 * Accumulator layout (layout_mma), one member of the Layout family: a WM x WN grid of warps, each
 * owning an (M / WM) x (N / WN) warp tile spread in whole m16 and n8 tiles, the grid chosen so the
 * warp tile is as square as the block allows (fewest fragment loads per mma). Lane l = 4g + q
 * (g = l >> 2, q = l & 3), warp w = WN wm + wn. The thread coordinates are t0 = 8 wm + g and
 * t1 = 4 wn + q: the layout's inner thread grid is the lane (Tlo = 8 x 4), the outer one the warp
 * grid. T0 = 8 WM, V0 = 1, O0 = M / T0: two consecutive o0 make one m16 tile, so m16 tile j of a
 * warp is rows r_lo = 2j T0 + 8 wm + g (fragment rows 0-7, c0 c1) and r_hi = (2j+1) T0 + 8 wm + g
 * (rows 8-15, c2 c3); ldmatrix takes one row address per lane, so these need not be contiguous.
 * The wgmma accumulator (wgmma: one warp column) has its rows in warpgroup order instead (lower.h,
 * wg_rows): r_lo = 2j T0 + 16 wm + g and r_hi = r_lo + 8, which the loads here follow too
 * (Frags.hi, wrows), so a product in that layout may fall back to mma.sync.
 * Columns come in groups of G n8 tiles (G = 1, or 4 for tf32 whose B is read 4 tiles at a time,
 * see below): T1 = 4 WN, V1 = 2G, O1 = N / (8 G WN), and group o1 of warp wn spans the 8G columns
 * from base = (o1 WN + wn) 8G. Inside a group, n8 tile j (j < G) holds columns base + G c + j
 * (c < 8), so lane q's accumulators c0/c1 of tile j are columns base + 2Gq + G i + j, i.e. slot
 * v = G i + j of the thread's V1 = 2G consecutive columns (G = 1: columns 2q, 2q+1 of the tile).
 *
 * Fragments per k step (16 for f16/bf16, 8 for tf32):
 *  - A: ldmatrix.x4 per m16 tile. Lane l gives the address of row (l & 8 ? r_hi : r_lo)(l & 7)
 *    at k + 16 bytes * (l >> 4): matrices 0..3 are rows 0-7/8-15 x the low/high 16 bytes of the
 *    k step, i.e. a0..a3. For tf32 the same load reads 32-bit elements as b16 pairs: lane l gets
 *    bytes 4q..4q+3 of its row, element q (and q + 4 in the high half), which is the tf32 A
 *    fragment; each is then rounded to tf32 (round_tf32_operand).
 *  - B (f16/bf16): ldmatrix.x4.trans per pair of n-tiles. Lane l gives the address of row k +
 *    (l & 7) + 8 * ((l >> 3) & 1) at the first column of the warp's tile n (l < 16) or n + 1;
 *    transposed, lane l receives B[k + 2q, +1][col + g] (b0) and B[k + 8 + 2q, +1][col + g] (b1).
 *  - B (tf32): no 32-bit transposing ldmatrix, so lane l reads row k + q (b0) and k + q + 4 (b1)
 *    at columns base + G g .. + G - 1 with one ld.shared.v{G}.b32: b0 and b1 of all G tiles of
 *    the group in two loads.
 * Within a k tile the fragments of step s + 1 are loaded before the mma of step s, so the loads'
 * latency hides behind the tensor work. Across k tiles too: when a pipelined loop's body is this
 * matmul alone, the loop's barrier comes before the last k step (lower_pipeline.c, "Moving the
 * barrier"), the next stage's step-0 fragments load behind it into the registers step 0 reads,
 * and the next iteration begins with mma; its first iteration loads them in a block of its own.
 * tests/unit/test_mma_map.c runs these maps against the PTX fragment tables.
 *
 * Bank conflicts: ldmatrix reads 8 rows of 16 bytes per matrix; a row pitch that is an odd
 * multiple of 16 bytes puts them in 8 distinct 16-byte bank groups (mma_pitch). The tf32 B loads
 * read rows k + q (q < 4) at 8G consecutive words in phases of 32 words: a pitch of 8 (mod 32)
 * words spreads the four rows over the 32 banks. mma_pitch cannot tell A from B, so f32 matrices
 * of 64 or more columns (B's N side in practice; A's K side is a short BK) get the B pitch. */
#include <stdlib.h>
#include <string.h>
#include "lower.h"

enum { MMA_M = 16, MMA_N = 8 };

static int log2_exact(int x)
{
    int n = 0;
    while ((1 << n) < x)
        n++;
    return n;
}

static int k_step(ElemType t) { return t == TY_F32 ? 8 : type_size(t) == 1 ? 32 : 16; }

/* n8 tiles per column group: tf32 reads B four tiles at a time where the warp tile is wide enough. */
static int group_tiles(ElemType t, int warp_cols) { return t == TY_F32 && warp_cols % (4 * MMA_N) == 0 ? 4 : 1; }

/* The warp grid of an M x N accumulator: the squarest warp tile made of whole m16 and n8 tiles
 * (ties: more rows per warp, which share the B fragments). False if none fits. */
static bool warp_grid(int M, int N, int threads, int *wm, int *wn)
{
    if (threads <= 0 || threads % 32)
        return false;
    int warps = threads / 32;
    int best = -1;
    for (int m = 1; m <= warps; m *= 2) {
        int n = warps / m;
        if (M % (MMA_M * m) || N % (MMA_N * n))
            continue;
        int rows = M / m, cols = N / n;
        int score = rows > cols ? rows / cols : cols / rows;
        if (rows < cols)
            score++;        /* prefer the taller tile at equal aspect */
        if (best < 0 || score < best) {
            best = score;
            *wm = m;
            *wn = n;
        }
    }
    return best >= 0;
}

bool mma_supported(Lower *c, ElemType t, bool tf32, int M, int N, int K)
{
    if (!c->target || !c->target->mma_sync)
        return false;
    if (!(t == TY_F16 || t == TY_BF16 || (t == TY_F32 && tf32) || t == TY_I8 || t == TY_U8 ||
          ((t == TY_F8E4M3 || t == TY_F8E5M2) && c->target->sm >= 89)))
        return false;
    int wm, wn;
    return warp_grid(M, N, c->threads, &wm, &wn) && K % k_step(t) == 0;
}

Layout layout_mma(Shape s, int threads, ElemType t, bool wgmma, bool narrow_b)
{
    Layout L;
    L.rank = 2;
    L.S[0] = s.rank == 2 ? (int)s.dim[0] : 1;
    L.S[1] = s.rank >= 1 ? (int)s.dim[s.rank - 1] : 1;
    int wm, wn;
    if (s.rank != 2 || !warp_grid(L.S[0], L.S[1], threads, &wm, &wn))
        return layout_matmul(s, threads);   /* mma_supported refused these */
    L.lo_t0_low = false;
    L.wg_rows = wgmma;
    if (wgmma) {
        /* wgmma's: one warp column, each warp 16 consecutive rows of every 16 W, in warpgroup
           order (lower.h, wg_rows) */
        wm = threads / 32;
        wn = 1;
    }
    int G = wgmma || narrow_b ? 1 : group_tiles(t, L.S[1] / wn);
    L.bcast[0] = L.bcast[1] = false;
    L.T[0] = 8 * wm;
    L.V[0] = 1;
    L.O[0] = L.S[0] / L.T[0];
    L.T[1] = 4 * wn;
    L.V[1] = 2 * G;
    L.O[1] = L.S[1] / (MMA_N * G * wn);
    L.reps = 1;
    L.Tlo[0] = wn > 1 ? 8 : L.T[0];    /* one warp column: plain t0 * T1 + t1 */
    L.Tlo[1] = 4;
    return L;
}

/* What ldmatrix reads arrives in SWZ_LDMATRIX: A of every type, B of 16-bit types. tf32 B read
 * four n8 tiles per ld.shared.v4 (a quarter warp: rows k .. k + 3, two adjacent 16-byte chunks)
 * arrives in SWZ_QUAD; tf32 B read one n8 tile at a time keeps mma_pitch's padding. */
int mma_sync_swizzle(Lower *c, ElemType t, int side, int M, int N, int K)
{
    int es = type_size(t), wm, wn;
    if (side == 0 || es == 2) {
        int cols = side == 0 ? K : N;
        return swz_applies(SWZ_LDMATRIX, cols * es) ? SWZ_LDMATRIX : SWZ_NONE;
    }
    if (!warp_grid(M, N, c->threads, &wm, &wn) || group_tiles(t, N / wn) != 4)
        return SWZ_NONE;
    return swz_applies(SWZ_QUAD, N * es) ? SWZ_QUAD : SWZ_NONE;
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

/* wn, the warp's column in a grid of WN warp columns (w = WN wm + wn, w = tid >> 5) */
static int warp_column(Lower *c, int WN)
{
    return WN > 1 ? tid_bits(c, 5, WN - 1) : ir_mov(c->f, PT_U32, IMM(0));
}

static void ldmatrix(Lower *c, int *dst, int n, bool trans, int addr, int64_t off)
{
    Func *f = c->f;
    Ins *in = emit_ins(f, OP_LDMATRIX, PT_B16);
    for (int i = 0; i < n; i++)
        in->dst[i] = dst[i] = new_reg(f, RC_R);
    in->ndst = n;
    in->vec = (uint8_t)n;
    in->trans = trans;
    in->src[0] = R(addr);
    in->nsrc = 1;
    in->off = off;
}

/* n consecutive elements of type t (16 or 32 bits) from shared memory: one vector load when
 * aligned, else n loads */
static void ld_shared(Lower *c, PType t, int *dst, int n, bool vec, int addr, int64_t off)
{
    Func *f = c->f;
    int per = vec ? n : 1, es = t == PT_B16 ? 2 : 4;
    for (int w = 0; w < n; w += per) {
        Ins *in = emit_ins(f, OP_LD, t);
        in->space = SP_SHARED;
        in->vec = (uint8_t)per;
        for (int i = 0; i < per; i++)
            in->dst[i] = dst[w + i] = new_reg(f, ptype_class(t));
        in->ndst = per;
        in->src[0] = R(addr);
        in->nsrc = 1;
        in->off = off + (int64_t)es * w;
        ir_naive_addr(f);        /* lowering writes addresses in full; addr_split folds them */
    }
}

int smem_ld_b32(Lower *c, int addr, int64_t off)
{
    int d;
    ld_shared(c, PT_B32, &d, 1, false, addr, off);
    return d;
}

/* The tensor cores' name of an operand type as it sits in shared memory (f32: tf32). */
PType mma_operand_ptype(ElemType t)
{
    switch (t) {
    case TY_F32: return PT_B32;
    case TY_BF16: return PT_BF16;
    case TY_I8: return PT_S8;
    case TY_U8: return PT_U8;
    case TY_F8E4M3: return PT_E4M3;
    case TY_F8E5M2: return PT_E5M2;
    default: return PT_F16;
    }
}

/* The two f16x2 registers of a fragment register of four fp8 values (k 4q .. 4q + 3): its low
 * and high halves converted exactly (cvt.rn.f16x2.e4m3x2, sm_89 on). */
static void fp8_halves(Lower *c, PType t, int r, int *lo, int *hi)
{
    Func *f = c->f;
    Ins *u = emit_ins(f, OP_UNPACK2, PT_B16);
    int h[2] = { new_reg(f, RC_H), new_reg(f, RC_H) };
    u->dst[0] = h[0], u->dst[1] = h[1];
    u->ndst = 2;
    u->src[0] = R(r);
    u->nsrc = 1;
    for (int i = 0; i < 2; i++) {
        Ins *w = emit_ins(f, OP_F8WIDEN, PT_B32);
        w->text = t == PT_E4M3 ? "e4m3" : "e5m2";
        w->dst[0] = new_reg(f, RC_R);
        w->ndst = 1;
        w->src[0] = R(h[i]);
        w->nsrc = 1;
        *(i ? hi : lo) = w->dst[0];
    }
}

/* An fp8 m16n8k32 where mma.sync has no fp8 (Target.mma_fp8: Hopper) as two f16 m16n8k16 over
 * the same k. Each fragment register holds k 4q .. 4q + 3 (a0, a1, b0; a2, a3, b1 16 further);
 * f16 fragments hold k 2q, 2q + 1 (a0, a1, b0) and 8 + 2q, 9 + 2q (a2, a3, b1). A product does
 * not care which k is which as long as A and B agree, so the first k16 takes the low halves of
 * a0, a1, b0 as its k 2q, 2q + 1 and their high halves as its 8 + 2q, 9 + 2q, the second a2, a3,
 * b1 alike. fp8 values are f16 values, and f16 products are exact: the same sums as Ada's. The
 * conversions of a fragment used by several products repeat; ptxas keeps one. */
static void mma_fp8_as_f16(Lower *c, PType ta, PType tb, Tile *acc, const int *cs, const int *a, const int *b)
{
    for (int s = 0; s < 2; s++) {
        int al[2], ah[2], bl, bh;
        for (int i = 0; i < 2; i++)
            fp8_halves(c, ta, a[2 * s + i], &al[i], &ah[i]);
        fp8_halves(c, tb, b[s], &bl, &bh);
        int fa[4] = { al[0], al[1], ah[0], ah[1] }, fb[2] = { bl, bh };
        mma_sync(c, PT_F16, PT_F16, acc, cs, fa, fb);
    }
}

void mma_sync(Lower *c, PType ta, PType tb, Tile *acc, const int *cs, const int *a, const int *b)
{
    if ((ta == PT_E4M3 || ta == PT_E5M2) && !c->target->mma_fp8) {
        mma_fp8_as_f16(c, ta, tb, acc, cs, a, b);
        return;
    }
    Ins *in = emit_ins(c->f, OP_MMA, acc->type == TY_I32 ? PT_S32 : PT_F32);
    in->ty2 = (uint8_t)ta;
    in->ty3 = (uint8_t)tb;
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

/* cvt of f32 v to tf32 bits into dst with the rounding (Ins.rnd of CVT) given. */
static void cvt_tf32(Lower *c, int dst, CvtRound rounding, int v)
{
    Ins *cv = emit_ins(c->f, OP_CVT, PT_B32);
    cv->ty2 = PT_F32;
    cv->rnd = (uint8_t)rounding;
    cv->dst[0] = dst;
    cv->ndst = 1;
    cv->src[0] = R(v);
    cv->nsrc = 1;
}

/* tf32 rounding: f32 operand bits v rounded to tf32 for the tensor cores, which read the top 19
 * bits of a .tf32 operand and drop the low 13 (truncating, were the bits not rounded first).
 *
 * wgmma (sm_90a) rounds to nearest, ties to even, as cuBLAS does and as the TMA copies of its
 * shared-memory operand do on their own (lower_tma.c): its register operands, and the operand
 * tiles rounded in place when TMA cannot bring them, go through cvt.rn.tf32.f32, which keeps
 * infinities and NaNs.
 *
 * mma.sync rounds to nearest, ties away from zero, with one integer add: half a tf32 unit (bit
 * 12) added to the bits turns the truncation into the rounding. A carry out of the mantissa steps
 * the exponent as rounding should (the largest finite values round to infinity); infinities stay.
 * mma.sync rounds every fragment register it loads, at every k step, and the loop is issue-bound:
 * on an H200 (matmul_tf32, sm_80 PTX) cvt.rna or cvt.rn measured 0.39 of cuBLAS against the
 * add's 0.51, and the add guarded by a finiteness test (which would keep every NaN a NaN) 0.39
 * too. So NaNs are what the add makes of them: a NaN whose top 11 mantissa bits are all set
 * (CUDA's canonical 0x7fffffff among them) carries into the sign bit and reads as a zero, and one
 * whose payload lies only in the low 13 bits reads as an infinity; others stay NaNs
 * (docs/language.md). */
void round_tf32_even_to(Lower *c, int dst, int v) { cvt_tf32(c, dst, RND_TF32_RN, v); }

int round_tf32_even(Lower *c, int v)
{
    int d = new_reg(c->f, RC_R);
    round_tf32_even_to(c, d, v);
    return d;
}

void round_tf32_operand_to(Lower *c, int dst, int v)
{
    Func *f = c->f;
    if (f->regs.v[v].rc != RC_R)     /* an f32 register: the integer add wants its bits */
        v = ir_mov(f, PT_B32, R(v));
    ir_bin_to(f, OP_ADD, PT_S32, dst, R(v), IMM(0x1000));
}

int round_tf32_operand(Lower *c, int v)
{
    int d = new_reg(c->f, RC_R);
    round_tf32_operand_to(c, d, v);
    return d;
}

/* A tf32 value for IEEE arithmetic (tf32() outside the tensor cores): cvt.rna.tf32.f32, the
 * rounding mma.sync's add computes, with infinities and NaNs kept; off the tensor cores' hot loop
 * its cost does not matter. */
int round_tf32_value(Lower *c, int v)
{
    int d = new_reg(c->f, RC_R);
    cvt_tf32(c, d, RND_TF32_RNA, v);
    return d;
}

/* A 32-bit fragment register from two 16-bit elements (low, high) when no ldmatrix can read them. */
static int pair_b16(Lower *c, int addr, int64_t off_lo, int64_t off_hi)
{
    Func *f = c->f;
    int h[2];
    int64_t offs[2] = { off_lo, off_hi };
    for (int e = 0; e < 2; e++) {
        int d;
        ld_shared(c, PT_B16, &d, 1, false, addr, offs[e]);
        h[e] = ir_cvt(f, PT_U32, PT_U16, R(d));
    }
    int hi = ir_bin(f, OP_SHL, PT_B32, R(h[1]), IMM(16));
    return ir_bin(f, OP_BOR, PT_B32, R(h[0]), R(hi));
}

/* A 32-bit fragment register of four 8-bit elements (lowest first) `stride` bytes apart, where
 * they do not lie in one word: no ldmatrix transposes bytes, so an 8-bit operand stored with
 * its k dimension across rows (A^T, row-major B) is read a byte at a time. */
static int quad_b8(Lower *c, int addr, int64_t off, int64_t stride)
{
    int w = -1;
    for (int e = 0; e < 4; e++) {
        int d;
        ld_shared(c, PT_U8, &d, 1, false, addr, off + e * stride);
        w = e ? ir_bfi(c->f, R(d), w, 8 * e, 8) : d;
    }
    return w;
}

/* Where the fragments of one k step come from and go. */
struct Frags {
    bool tf, ldm_a, ldm_b, vec_b;
    bool even;                  /* tf32 rounded to nearest, ties to even (wgmma's), not away */
    bool trans_a, trans_b;      /* stored transposed (SmemMatrix.trans): A as [K][M], B as [N][K] */
    bool swz_a, swz_b;          /* swizzled tiles (swizzle.c): lane addresses step by swz_step */
    int es, G, T0, WN, mtiles, groups;
    /* rows from a warp's r_lo to its r_hi (T0; 8 in warpgroup order, wg_rows), and between
       warps of a column (8; 16 in warpgroup order) */
    int hi, wrows;
    int alane, blane;
    int ax[8], bx[8];           /* swizzled: lane addresses xor'ed per chunk delta (mod 8) */
    int64_t apitch, bpitch;
};

/* The A fragments of k step k: 4 per m16 tile. */
static void load_a(Lower *c, Frags *F, int k, int *a)
{
    for (int j = 0; j < F->mtiles; j++) {
        int64_t base = 2 * j * F->T0 * F->apitch + (int64_t)k * F->es;
        if (F->trans_a && F->es == 1) {
            /* 8-bit A^T ([K][M]): a_i at k + 4q .. + 3 (+16 for i >= 2), m r_lo (r_hi for odd i),
               a byte each */
            for (int i = 0; i < 4; i++)
                a[4 * j + i] = quad_b8(c, F->alane, (int64_t)(k + 16 * (i >> 1)) * F->apitch +
                                                        2 * j * F->T0 + (i & 1) * F->hi, F->apitch);
        } else if (F->trans_a && F->tf) {
            /* tf32 A^T ([K][M]): a_i at k + q (+4 for i >= 2), m r_lo (r_hi for odd i), one
               32-bit word each (no transposing ldmatrix for 32 bits) */
            for (int i = 0; i < 4; i++)
                a[4 * j + i] = smem_ld_b32(c, F->alane, (int64_t)(k + 4 * (i >> 1)) * F->apitch +
                                                            ((i & 1) * F->hi + 2 * j * F->T0) * 4);
        } else if (F->trans_a) {
            /* A^T: rows k (a multiple of 8: no swizzle change), the tile's m columns 2 j T0 on,
               whole chunks above the lane's own (< 2 WM) */
            int64_t cols = 2 * j * F->T0 * F->es, imm = cols;
            int addr = F->swz_a ? swz_step(c, F->alane, cols / 16, F->ax, &imm) : F->alane;
            ldmatrix(c, &a[4 * j], 4, true, addr, (int64_t)k * F->apitch + imm);
        } else if (F->swz_a) {
            /* tiles 2 T0 rows apart (a multiple of 8): a constant; k steps: whole chunks */
            int64_t imm;
            int addr = swz_step(c, F->alane, (int64_t)k * F->es / 16, F->ax, &imm);
            ldmatrix(c, &a[4 * j], 4, false, addr, 2 * j * F->T0 * F->apitch + imm);
        } else if (F->ldm_a)
            ldmatrix(c, &a[4 * j], 4, false, F->alane, base);
        else   /* a_i: rows r_hi for odd i, 16 bytes further along k for i >= 2 */
            for (int i = 0; i < 4; i++)
                a[4 * j + i] = smem_ld_b32(c, F->alane, base + (i & 1) * F->hi * F->apitch + (i >> 1) * 16);
        if (F->tf)
            for (int i = 0; i < 4; i++)
                a[4 * j + i] = F->even ? round_tf32_even(c, a[4 * j + i]) : round_tf32_operand(c, a[4 * j + i]);
    }
}

/* The first row of warp wm = w / WN (wrows rows a warp: 8 wm, or 16 wm in warpgroup order) as
 * a field of the thread id, w = t / 32: for 8, the bits of wm under 5 + lwn shifted down to 3 */
static int warp_first_row(Lower *c, const Frags *F, int WM, int lwn)
{
    if (WM == 1)
        return ir_mov(c->f, PT_U32, IMM(0));
    int sh = log2_exact(F->wrows);
    return tid_bits(c, 5 + lwn - sh, (WM - 1) << sh);
}

/* Each lane's address of its first A fragment (F->alane), by the way load_a reads A; wrow is the
 * warp's first row (warp_first_row), r_lo = wrow + g and r_hi = r_lo + hi. */
static void a_lane(Lower *c, Frags *F, SmemMatrix a, int wrow)
{
    Func *f = c->f;
    if (F->trans_a && F->es == 1) {
        /* 8-bit A^T: row k = 4q, column m = r_lo */
        int col = ir_bin(f, OP_ADD, PT_U32, R(wrow), R(tid_bits(c, 2, 7)));
        int off = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 0, 3)), IMM(4 * F->apitch), R(col));
        F->alane = ir_bin(f, OP_ADD, PT_U32, R(a.base), R(off));
    } else if (F->trans_a && F->tf) {
        /* tf32 A^T: row k = q, column m = r_lo */
        int colb = ir_bin(f, OP_SHL, PT_B32, R(ir_bin(f, OP_ADD, PT_U32, R(wrow), R(tid_bits(c, 2, 7)))), IMM(2));
        int off = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 0, 3)), IMM(F->apitch), R(colb));
        F->alane = ir_bin(f, OP_ADD, PT_U32, R(a.base), R(off));
    } else if (F->trans_a) {
        /* A^T ([K][M], ldmatrix.trans): lane l gives row k = (l & 7) + 8 ((l >> 4) & 1) at
           column m = wrow + ((l >> 3) & 1) hi: matrices 0-3 are a0-a3 (rows r_lo / r_hi x the
           low / high 8 k) */
        int krow = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 4, 1)), IMM(8), R(tid_bits(c, 0, 7)));
        int mcol = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 3, 1)), IMM(F->hi), R(wrow));
        int colb = ir_bin(f, OP_SHL, PT_B32, R(mcol), IMM(log2_exact(F->es)));
        int off = F->swz_a ? swz_offset_ir(c, SWZ_LDMATRIX, krow, colb, true, (int)F->apitch, a.cols)
                          : ir_tern(f, OP_MAD, PT_U32, R(krow), IMM(F->apitch), R(colb));
        F->alane = ir_bin(f, OP_ADD, PT_U32, R(a.base), R(off));
    } else if (F->ldm_a) {
        /* A: row (l & 8 ? hi : 0) + wrow + (l & 7), 16 bytes further for l >= 16 */
        int row = ir_bin(f, OP_ADD, PT_U32, R(wrow), R(tid_bits(c, 0, 7)));
        row = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 3, 1)), IMM(F->hi), R(row));
        if (F->swz_a) {
            int col = ir_bin(f, OP_SHL, PT_B32, R(tid_bits(c, 4, 1)), IMM(4));
            F->alane = ir_bin(f, OP_ADD, PT_U32, R(a.base), R(swz_offset_ir(c, SWZ_LDMATRIX, row, col, true, (int)F->apitch, a.rows)));
        } else {
            int aoff = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 4, 1)), IMM(16), R(a.base));
            F->alane = ir_tern(f, OP_MAD, PT_U32, R(row), IMM(F->apitch), R(aoff));
        }
    } else {
        /* A by ld.shared.b32: row wrow + g, byte 4q (elements 2q, 2q+1, or tf32 element q) */
        int row = ir_bin(f, OP_ADD, PT_U32, R(wrow), R(tid_bits(c, 2, 7)));
        int aoff = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 0, 3)), IMM(4), R(a.base));
        F->alane = ir_tern(f, OP_MAD, PT_U32, R(row), IMM(F->apitch), R(aoff));
    }
}

/* A's side of the fragment loads alone, for wgmma's register-A form (lower.h). */
Frags *mma_a_frags(Lower *c, const Layout *L, SmemMatrix a)
{
    Frags *F = arena_alloc(c->a, sizeof *F);
    memset(F, 0, sizeof *F);
    F->tf = a.type == TY_F32;
    F->es = type_size(a.type);
    F->T0 = L->T[0];
    F->hi = layout_wg(L) ? 8 : F->T0;
    F->wrows = layout_wg(L) ? 16 : 8;
    F->WN = 1;
    F->mtiles = L->O[0] / 2;
    F->apitch = (int64_t)a.pitch * F->es;
    F->ldm_a = F->apitch % 16 == 0;
    F->swz_a = a.swz != SWZ_NONE;
    F->trans_a = a.trans;
    F->even = true;    /* tf32 on wgmma rounds as its other paths do (docs/language.md) */
    for (int i = 0; i < 8; i++)
        F->ax[i] = F->bx[i] = -1;
    if ((!F->tf && a.trans && !F->ldm_a) || (F->tf && a.trans && a.swz) || F->apitch % 4 ||
        (F->swz_a && (a.swz != SWZ_LDMATRIX || !F->ldm_a || a.pitch != (a.trans ? a.rows : a.cols))) ||
        L->V[0] != 1 || L->O[0] % 2 || F->T0 % 8 || L->T[1] != 4 || F->T0 * 4 != c->threads)
        die("mma_a_frags: A or the accumulator not as the fragment loads read them");
    Func *f = c->f;
    const char *saved = f->cur_what;
    f->cur_what = "mma fragment address";
    int WM = F->T0 / 8;
    a_lane(c, F, a, warp_first_row(c, F, WM, 0));
    f->cur_what = saved;
    return F;
}

void mma_a_load(Lower *c, Frags *F, int k, int *a)
{
    const char *saved = c->f->cur_what;
    c->f->cur_what = "mma fragment";
    load_a(c, F, k, a);
    c->f->cur_what = saved;
}

/* Column groups are loaded in units: two for ldmatrix.x4.trans (one per pair of n8 tiles), else one. */
static int unit_groups(const Frags *F) { return F->ldm_b ? 2 : 1; }

/* The B fragments of k step k for the unit of column groups starting at o1: 2 per n8 tile, tile j
 * of group o1 at b[2 (o1 G + j) + i]. */
static void load_b_unit(Lower *c, Frags *F, int k, int o1, int *b)
{
    int G = F->G;
    int *bg = &b[2 * o1 * G];
    int64_t col = o1 * (int64_t)F->WN * MMA_N * G * F->es;   /* the warp's group o1 */
    if (!F->trans_b && F->es == 1) {
        /* 8-bit B ([K][N]): b_i at k + 16 i + 4q .. + 3, column g of the group's tile, a byte
           each */
        for (int i = 0; i < 2; i++)
            bg[i] = quad_b8(c, F->blane, (int64_t)(k + 16 * i) * F->bpitch + col, F->bpitch);
    } else if (F->trans_b && F->tf) {
        /* tf32 B^T ([N][K]): tile j of the group is row base + G g + j, b_i at k + q (+4) */
        for (int j = 0; j < G; j++)
            for (int i = 0; i < 2; i++)
                bg[2 * j + i] = round_tf32_operand(c, smem_ld_b32(c, F->blane,
                    (o1 * (int64_t)F->WN * MMA_N * G + j) * F->bpitch + (int64_t)(k + 4 * i) * 4));
    } else if (F->trans_b) {
        /* B^T: the pair's rows o1 WN n8 tiles on (a multiple of 8 rows: no swizzle change), k
           whole chunks on, above the lane's own (the k half) */
        int n = F->groups - o1 >= 2 ? 4 : 2;
        int64_t kb = (int64_t)k * F->es, imm = kb;
        int addr = F->swz_b ? swz_step(c, F->blane, kb / 16, F->bx, &imm) : F->blane;
        ldmatrix(c, bg, n, false, addr, o1 * (int64_t)F->WN * MMA_N * F->bpitch + imm);
    } else if (F->tf) {
        for (int i = 0; i < 2; i++) {
            int w[4];
            ld_shared(c, PT_B32, w, G, F->vec_b, F->blane, (k + 4 * i) * F->bpitch + col);
            for (int j = 0; j < G; j++)
                bg[2 * j + i] = round_tf32_operand(c, w[j]);
        }
    } else if (F->ldm_b) {
        /* groups o1 and o1 + 1 (lanes 16-31 address the second), or o1 alone at the end */
        int n = F->groups - o1 >= 2 ? 4 : 2;
        if (F->swz_b) {
            /* rows k (a multiple of 16): a constant; the pair's columns o1 WN n8 tiles (16-byte
               units) on, above the lane's own unit bits (< 2 WN) since o1 is even */
            int64_t imm;
            int addr = swz_step(c, F->blane, (int64_t)o1 * F->WN, F->bx, &imm);
            ldmatrix(c, bg, n, true, addr, k * F->bpitch + imm);
        } else {
            ldmatrix(c, bg, n, true, F->blane, k * F->bpitch + col);
        }
    } else {
        for (int i = 0; i < 2; i++)
            bg[i] = pair_b16(c, F->blane, (k + 8 * i) * F->bpitch + col, (k + 8 * i + 1) * F->bpitch + col);
    }
}

/* ldmatrix needs every row address 16-byte aligned. Matrices staged here or by a pipeline have
 * mma_pitch rows; a shared var may not (its pitch is the var's): then each fragment register is
 * loaded by plain ld.shared, 32 bits where the pair is contiguous, 16 + 16 bits where not. */
void lower_mma(Lower *c, Tile *acc, SmemMatrix a, SmemMatrix b)
{
    Func *f = c->f;
    Layout *L = &acc->L;
    Frags F;
    /* The loop's barrier, when a pipelined loop left it here: before the last k step (rotated),
       where the next stage's step-0 fragments can load behind the last mma, or else first. Step
       0 must be done with its fragments before they are reloaded: two k steps at least. */
    bool rotate = false;
    if (pipe_take_barrier(c)) {
        rotate = a.stage_bytes && b.stage_bytes && a.cols / k_step(a.type) >= 2;
        if (!rotate)
            pipe_barrier(c);
    }
    F.tf = a.type == TY_F32;
    F.even = false;
    PType ta = mma_operand_ptype(a.type), tb = mma_operand_ptype(b.type);
    F.es = type_size(a.type);
    int K = a.cols, ks = k_step(a.type);
    F.T0 = L->T[0];
    F.hi = layout_wg(L) ? 8 : F.T0;
    F.wrows = layout_wg(L) ? 16 : 8;
    F.WN = L->T[1] / 4;
    int WM = F.T0 / 8;
    F.G = L->V[1] / 2;
    F.mtiles = L->O[0] / 2;
    F.groups = L->O[1];
    F.apitch = (int64_t)a.pitch * F.es;
    F.bpitch = (int64_t)b.pitch * F.es;
    F.ldm_a = F.apitch % 16 == 0;
    F.ldm_b = !F.tf && F.bpitch % 16 == 0 && !(F.es == 1 && !b.trans);
    F.vec_b = F.tf && F.bpitch % 16 == 0;
    F.swz_a = a.swz != SWZ_NONE;
    F.swz_b = b.swz != SWZ_NONE;
    F.trans_a = a.trans;
    F.trans_b = b.trans;
    for (int i = 0; i < 8; i++)
        F.ax[i] = F.bx[i] = -1;
    if ((F.es == 2 && a.trans && !F.ldm_a) || (!F.tf && b.trans && !F.ldm_b))
        die("lower_mma: a transposed operand ldmatrix cannot read");
    if (F.tf && ((a.trans && a.swz) || (b.trans && b.swz)))
        die("lower_mma: a transposed tf32 operand in a swizzled layout");
    if ((F.swz_a && (a.swz != SWZ_LDMATRIX || !F.ldm_a || a.pitch != (a.trans ? a.rows : a.cols))) ||
        (F.swz_b && b.pitch != (b.trans ? b.rows : b.cols)) ||
        (F.swz_b && !F.tf && (b.swz != SWZ_LDMATRIX || !F.ldm_b || F.G != 1)) ||
        (F.swz_b && F.tf && (b.swz != SWZ_QUAD || !F.vec_b || F.G != 4)))
        die("lower_mma: a swizzled operand the fragment loads cannot read");
    if (L->V[0] != 1 || L->O[0] % 2 || F.T0 % 8 || L->T[1] % 4 || WM * F.WN * 32 != c->threads ||
        (F.G != 1 && !(F.tf && F.G == 4)) || (F.WN > 1 && (L->Tlo[0] != 8 || L->Tlo[1] != 4)))
        die("lower_mma: accumulator is not in the mma layout");
    if (F.apitch % 4 || F.bpitch % 2)
        die("lower_mma: operand rows not 4-byte aligned");
    f->cur_what = "mma fragment address";
    /* the warp's grid position (wm = w / WN, wn = w % WN) as bit fields of the thread id:
       its first row and the byte offset of its first column */
    int lwn = log2_exact(F.WN), colb = log2_exact(MMA_N * F.G * F.es);
    int wrow = warp_first_row(c, &F, WM, lwn);
    int bcol = b.base;
    if (F.WN > 1) {
        int wcol = colb <= 5 ? tid_bits(c, 5 - colb, (F.WN - 1) << colb)
                             : ir_bin(f, OP_SHL, PT_B32, R(tid_bits(c, 0, (F.WN - 1) << 5)), IMM(colb - 5));
        bcol = ir_bin(f, OP_ADD, PT_U32, R(wcol), R(b.base));
    }
    a_lane(c, &F, a, wrow);
    if (F.trans_b && F.tf) {
        /* tf32 B^T: row n = 8 G wn + G g, k byte 4 q */
        int nrow = ir_tern(f, OP_MAD, PT_U32, R(warp_column(c, F.WN)), IMM(MMA_N * F.G),
                           R(ir_bin(f, OP_MUL, PT_U32, R(tid_bits(c, 2, 7)), IMM(F.G))));
        int off = ir_tern(f, OP_MAD, PT_U32, R(nrow), IMM(F.bpitch),
                          R(ir_bin(f, OP_SHL, PT_B32, R(tid_bits(c, 0, 3)), IMM(2))));
        F.blane = ir_bin(f, OP_ADD, PT_U32, R(b.base), R(off));
    } else if (F.trans_b) {
        /* B^T ([N][K], ldmatrix): lane l gives row n = 8 wn + (l & 7) + ((l >> 4) & 1) 8 WN (the
           warp's n8 tile, or its next one) at k byte ((l >> 3) & 1) 16: matrices 0-3 are b0, b1
           of the tile and of the next */
        int wn8 = ir_bin(f, OP_SHL, PT_B32, R(warp_column(c, F.WN)), IMM(3));
        int nrow = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 4, 1)), IMM(8 * F.WN),
                           R(ir_bin(f, OP_ADD, PT_U32, R(wn8), R(tid_bits(c, 0, 7)))));
        int kb = ir_bin(f, OP_SHL, PT_B32, R(tid_bits(c, 3, 1)), IMM(4));
        int off = F.swz_b ? swz_offset_ir(c, SWZ_LDMATRIX, nrow, kb, true, (int)F.bpitch, b.cols)
                          : ir_tern(f, OP_MAD, PT_U32, R(nrow), IMM(F.bpitch), R(kb));
        F.blane = ir_bin(f, OP_ADD, PT_U32, R(b.base), R(off));
    } else if (F.swz_b && F.tf) {
        /* tf32 B: row q, unit g of the warp's first group of 4 n8 tiles (128 bytes at wn 128) */
        int col = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 2, 7)), IMM(16),
                          R(ir_bin(f, OP_SHL, PT_B32, R(warp_column(c, F.WN)), IMM(7))));
        F.blane = ir_bin(f, OP_ADD, PT_U32, R(b.base), R(swz_offset_ir(c, SWZ_QUAD, tid_bits(c, 0, 3), col, true, (int)F.bpitch, b.rows)));
    } else if (F.swz_b) {
        /* B: row l & 15, unit (l >= 16 ? WN : 0) + wn: the warp's n-tile, or its next one */
        int unit = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 4, 1)), IMM(F.WN),
                           R(warp_column(c, F.WN)));
        int col = ir_bin(f, OP_SHL, PT_B32, R(unit), IMM(4));
        F.blane = ir_bin(f, OP_ADD, PT_U32, R(b.base), R(swz_offset_ir(c, SWZ_LDMATRIX, tid_bits(c, 0, 15), col, true, (int)F.bpitch, b.rows)));
    } else if (F.ldm_b) {
        /* B: row (l & 7) + 8 ((l >> 3) & 1) = l & 15; the warp's next n-tile for l >= 16 */
        int boff = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 4, 1)), IMM(F.WN * MMA_N * F.es), R(bcol));
        F.blane = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 0, 15)), IMM(F.bpitch), R(boff));
    } else if (F.es == 1) {
        /* 8-bit B: row 4q, column g */
        int boff = ir_bin(f, OP_ADD, PT_U32, R(tid_bits(c, 2, 7)), R(bcol));
        F.blane = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 0, 3)), IMM(4 * F.bpitch), R(boff));
    } else {
        /* B: row q (tf32) or 2q (16-bit pairs), column G g */
        int boff = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 2, 7)), IMM(F.G * F.es), R(bcol));
        F.blane = ir_tern(f, OP_MAD, PT_U32, R(tid_bits(c, 0, 3)), IMM(F.tf ? F.bpitch : 2 * F.bpitch), R(boff));
    }
    f->cur_what = "mma fragment";
    int ntiles = F.groups * F.G;
    int *afrag[2], *bfrag[2];
    for (int i = 0; i < 2; i++) {
        afrag[i] = malloc(sizeof(int) * (size_t)(4 * F.mtiles));
        bfrag[i] = malloc(sizeof(int) * (size_t)(2 * ntiles));
    }
    /* Step s + 1's fragments are loaded while step s's mma run: its A fragments first, then
     * each unit of B fragments once step s's mma no longer read that unit's registers, so the
     * loads' latency hides behind the tensor work and only one step's B fragments are live. The
     * pipelined loop's pending copies for a later stage go out after the first loads: ptxas
     * keeps them in program order with the shared loads, so copies first would hold the first
     * mma back. */
    int ug = unit_groups(&F);
    int na = 4 * F.mtiles, nb = 2 * ntiles;
    int *carried = malloc(sizeof(int) * (size_t)(na + nb)), *next0 = malloc(sizeof(int) * (size_t)(na + nb));
    int skip = -1;
    if (rotate) {
        /* step 0's fragments come from the previous iteration but in the first */
        skip = new_label(f);
        ir_bra(f, skip, pipe_first_iteration(c), true);
        pipe_barrier(c);
    }
    load_a(c, &F, 0, afrag[0]);
    for (int o1 = 0; o1 < F.groups; o1 += ug)
        load_b_unit(c, &F, 0, o1, bfrag[0]);
    if (rotate) {
        ir_label(f, skip);
        /* the lane addresses xor'ed inside the first iteration's block exist only there */
        for (int i = 0; i < 8; i++)
            F.ax[i] = F.bx[i] = -1;
    }
    memcpy(carried, afrag[0], sizeof(int) * (size_t)na);
    memcpy(carried + na, bfrag[0], sizeof(int) * (size_t)nb);
    Frags N = F;            /* rotated: the next stage, whose step 0 the last step loads */
    int wrapped_from = -1;  /* the first instruction of those loads */
    for (int k = 0, cur = 0; k < K; k += ks, cur ^= 1) {
        bool next = k + ks < K, wrap = rotate && !next;
        /* rotated, the carried registers live through the whole loop: the even steps reuse them */
        int reuse_from = rotate && next && cur == 1 ? f->code.n : -1;
        if (next)
            load_a(c, &F, k + ks, afrag[cur ^ 1]);
        if (wrap) {
            pipe_barrier(c);
            wrapped_from = f->code.n;
            N.alane = ir_bin(f, OP_ADD, PT_U32, R(F.alane), R(pipe_next_stage_delta(c, a.stage_bytes)));
            N.blane = ir_bin(f, OP_ADD, PT_U32, R(F.blane), R(pipe_next_stage_delta(c, b.stage_bytes)));
            for (int i = 0; i < 8; i++)
                N.ax[i] = N.bx[i] = -1;
            load_a(c, &N, 0, next0);
        }
        if (k == 0)
            pipe_issue_pending(c);
        for (int o1 = 0; o1 < F.groups; o1 += ug) {
            /* A pair of n8 tiles (16-bit B) goes m16 tile by m16 tile, forwards then backwards,
               so every mma shares its A or its B fragment with the one before, which operand
               reuse need not read from the register file again: 1-2% faster than each n8 tile
               down all m16 tiles (f16, bf16 on an H200). tf32's four-tile units keep that order,
               which measured 2% faster for them. */
            int ufirst = o1 * F.G, ulast = (o1 + ug < F.groups ? o1 + ug : F.groups) * F.G - 1;
            int un = ulast - ufirst + 1;
            bool serpentine = un == 2;
            for (int t = 0; t < F.mtiles * un; t++) {
                int j = serpentine ? t / un : t % F.mtiles, u = serpentine ? t % un : t / F.mtiles;
                int n = serpentine && j % 2 ? ulast - u : ufirst + u, g = n / F.G, jj = n % F.G;
                int cs[4] = { slot_of(L, 2 * j, g, jj), slot_of(L, 2 * j, g, F.G + jj),
                              slot_of(L, 2 * j + 1, g, jj), slot_of(L, 2 * j + 1, g, F.G + jj) };
                mma_sync(c, ta, tb, acc, cs, &afrag[cur][4 * j], &bfrag[cur][2 * n]);
            }
            if (next)
                load_b_unit(c, &F, k + ks, o1, bfrag[cur ^ 1]);
            if (wrap)
                load_b_unit(c, &N, 0, o1, next0 + na);
        }
        if (reuse_from >= 0) {
            memcpy(next0, afrag[0], sizeof(int) * (size_t)na);
            memcpy(next0 + na, bfrag[0], sizeof(int) * (size_t)nb);
            rename_regs(f, reuse_from, next0, carried, na + nb);
            memcpy(afrag[0], carried, sizeof(int) * (size_t)na);
            memcpy(bfrag[0], carried + na, sizeof(int) * (size_t)nb);
        }
    }
    /* the next stage's step 0 lands in the registers this iteration's step 0 read */
    if (wrapped_from >= 0)
        rename_regs(f, wrapped_from, next0, carried, na + nb);
    free(carried);
    free(next0);
    for (int i = 0; i < 2; i++) {
        free(bfrag[i]);
        free(afrag[i]);
    }
    pipe_issue_pending(c);
}
