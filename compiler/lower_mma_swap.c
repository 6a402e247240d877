/* lower_mma_swap.c: tf32 matmul on sm_90a, computed as the swapped product C^T = B^T A^T.
 *
 * wgmma reads a tf32 operand from shared memory only K-major. A row-major A is (its rows run
 * along K); a row-major B is not, and storing it transposed takes 4-byte copies, a quarter of
 * cp.async's width (tried: slower than mma.sync). But wgmma's A operand may instead come from
 * registers, each thread loading its fragment from wherever it likes. So the tensor cores compute
 * D = B^T A^T: B^T (N x K) is wgmma's A, loaded from B's stage and rounded in registers (to
 * nearest, ties to even: round_tf32_even); A^T (K x M) is wgmma's B, read through a descriptor
 * from A's stage in the 128-byte swizzle (SWZ_SLAB), where A's rows are A^T's K-major columns.
 * The tensor cores truncate tf32 operands, so A must arrive rounded: a TMA copy through a
 * TFLOAT32 tensor map rounds it on its way in (lower_tma.c); where the loop cannot use TMA, the
 * threads that copied each stage of A round it in place before the barrier that publishes it
 * (publish_stage, round_window_tf32). D is C transposed.
 *
 * Shapes: N is cut in 64-row blocks per warpgroup (wgmma's M), tall = N / (16 W) of them per
 * warpgroup of a block of W warps; M (<= 256, a multiple of 8) is wgmma's N; K steps by 8.
 *
 * Layout (layout_mma_swapped). wgmma gives lane l = 4 g + q of warp v of warpgroup u the rows
 * 16 v + g and 16 v + 8 + g of its warpgroup's 64-row block and the columns 8 j + 2 q, + 1 of D.
 * D's rows are C's columns, and which column of B is which row of B^T is the fragment loads'
 * choice: row 16 v + 8 h + g of block b is C column (2 b + h) 8 W + 8 w + g (w = 4 u + v, the
 * warp). In C, thread (w, g, q) then holds rows 8 j + 2 q + i (i < 2) and columns o 8 W + 8 w + g:
 * the Layout T0 = 4, V0 = 2, O0 = M / 8, T1 = 8 W, V1 = 1, O1 = N / (8 W), with the lane as a
 * column-major 4 x 8 inner grid (q, the row coordinate, in the lowest bits: lo_t0_low) and the
 * warps as the outer grid along columns. Epilogues and stores work in it as in any layout; a
 * reduction along rows goes through shared memory (its coordinate is not a run of lane bits).
 *
 * Without A in the slab layout (staged in each iteration, a shared var, or a loop that does not
 * pipeline it), the same product runs on mma.sync.m16n8k8, B^T as its A and A^T as its B: its D
 * fragment per warp is wgmma's, so the layout stands either way.
 *
 * Bank conflicts. A warp's B^T loads read rows k + q (q < 4) at 8 consecutive columns: with
 * SWZ_QUAD (rows' 16-byte units xor 2 q), SWZ_SLAB_K8 (TMA's slabs, rows stored so that their
 * keys are 2 q: swizzle.c) or mma_pitch's 8 (mod 32) words of padding, 32 distinct banks. mma.sync's A^T loads read rows 8 j + g at column k + q: mma_pitch's rows of an odd
 * number of 16-byte units put them in distinct banks too. */
#include <stdlib.h>
#include <string.h>
#include "lower.h"

enum { K_STEP = 8, SLAB = 128 };

Layout layout_mma_swapped(int M, int N, int threads)
{
    Layout L;
    int warps = threads / 32;
    L.rank = 2;
    L.S[0] = M;
    L.S[1] = N;
    L.bcast[0] = L.bcast[1] = false;
    L.T[0] = 4;
    L.V[0] = 2;
    L.O[0] = M / 8;
    L.Tlo[0] = 4;
    L.T[1] = 8 * warps;
    L.V[1] = 1;
    L.O[1] = N / (8 * warps);
    L.Tlo[1] = 8;
    L.reps = 1;
    L.lo_t0_low = true;
    L.wg_rows = false;
    return L;
}

/* Where a thread's B^T fragments are: lane[0] = the shared address of B[q][8 w + g], lane[1] of
 * B[q + 4][8 w + g] (SWZ_SLAB_K8's rows 4 further are no constant offset away). */
typedef struct {
    int lane[2];
    int swz;               /* SWZ_QUAD, SWZ_SLAB_K8 or SWZ_NONE (rows `row_bytes` apart) */
    int64_t row_bytes;
    int rows, warps;
    bool even;             /* wgmma's rounding (ties to even), else mma.sync's (lower_mma.c) */
} BtFrags;

/* The fragment of row block j of k step k (wgmma's or mma.sync's A, m16 x k8 per warp) into the
 * registers a[0..3]: a_i = B[k + q + 4 (i >> 1)][column (2 j + (i & 1)) 8 W + 8 w + g], rounded.
 * Rows a multiple of 4 and columns a multiple of 128 bytes further keep SWZ_QUAD's key: constant
 * offsets. */
static void load_bt(Lower *c, const BtFrags *F, int k, int j, const int *a)
{
    for (int i = 0; i < 4; i++) {
        int64_t rd = k + 4 * (i >> 1), cdb = (int64_t)(2 * j + (i & 1)) * 8 * F->warps * 4, off;
        int lane = F->lane[0];
        if (F->swz == SWZ_SLAB_K8)
            lane = F->lane[i >> 1], rd = k;
        if (F->swz == SWZ_NONE)
            off = rd * F->row_bytes + cdb;
        else if (!swz_delta(F->swz, (int)F->row_bytes, F->rows, rd, cdb, &off))
            die("lower_mma_swapped: no constant fragment offset");
        int w = smem_ld_b32(c, lane, off);
        if (F->even)
            round_tf32_even_to(c, a[i], w);
        else
            round_tf32_operand_to(c, a[i], w);
    }
}

static int slot_of(const Layout *L, int o0, int i0, int o1) { return (o0 * L->V[0] + i0) * L->O[1] + o1; }

/* The four accumulators row block j and column block jc (8 rows of C) give one mma or wgmma
 * group, in the D fragment's order: D rows g, g + 8 (C columns of o1 = 2 j, 2 j + 1) by D columns
 * 2 q, 2 q + 1 (C rows i0 = 0, 1). */
static void acc_slots(const Layout *L, int j, int jc, int *cs)
{
    cs[0] = slot_of(L, jc, 0, 2 * j);
    cs[1] = slot_of(L, jc, 1, 2 * j);
    cs[2] = slot_of(L, jc, 0, 2 * j + 1);
    cs[3] = slot_of(L, jc, 1, 2 * j + 1);
}

void wg_hold(Func *f, const int *regs, int n)
{
    for (int i = 0; i < n; i += 10) {
        Ins *h = emit_ins(f, OP_WGHOLD, PT_B32);
        for (int s = 0; s < 10 && i + s < n; s++)
            h->src[h->nsrc++] = R(regs[i + s]);
    }
}

static void swapped_wgmma(Lower *c, Tile *acc, SmemMatrix a, const BtFrags *F, int tall)
{
    Func *f = c->f;
    const Layout *L = &acc->L;
    int M = L->S[0], K = a.cols, per = 4 * tall, nfrag = per * (K / K_STEP);
    WgInflight *inflight = c->pipe ? c->pipe->inflight : NULL;
    /* the fragment registers exist before the barrier, which holds them when in flight (as many
       as the k tile has steps: regalloc, not this, says when that is too many for a thread) */
    int *frag = arena_alloc(c->a, sizeof(int) * (size_t)nfrag);
    for (int i = 0; i < nfrag; i++)
        frag[i] = new_reg(f, RC_R);
    if (inflight) {
        inflight->regs = frag;
        inflight->n = nfrag;
    }
    if (pipe_take_barrier(c))
        pipe_barrier(c);
    const char *saved = f->cur_what;
    f->cur_what = "wgmma descriptor";
    int da = wgmma_descriptor(c, a.base, 16, 128);
    f->cur_what = saved;
    for (int k = 0, n = 0; k < K; k += K_STEP, n += per) {
        for (int j = 0; j < tall; j++)
            load_bt(c, F, k, j, &frag[n + 4 * j]);
        /* the fragment registers written before the wgmma that reads them */
        emit_ins(f, OP_WGFENCE, PT_B32);
        int64_t kb = (int64_t)k * 4, aoff = kb / SLAB * M * SLAB + kb % SLAB;
        int dak = aoff ? ir_bin(f, OP_ADD, PT_S64, R(da), IMM(aoff >> 4)) : da;
        for (int j = 0; j < tall; j++) {
            Ins *in = emit_ins(f, OP_WGMMA, PT_F32);
            in->a_regs = true;
            in->ty2 = in->ty3 = PT_B32;
            for (int i = 0; i < 4; i++)
                in->src[i] = R(frag[n + 4 * j + i]);
            in->src[4] = R(dak);
            in->nsrc = 5;
            in->n = M;
            for (int jc = 0; jc < M / 8; jc++) {
                int cs[4];
                acc_slots(L, j, jc, cs);
                wgmma_acc_group(f, acc, cs);
            }
        }
    }
    emit_ins(f, OP_WGCOMMIT, PT_B32);
    /* the next stage's copies go into the stage every thread finished reading before the barrier */
    pipe_issue_pending(c);
    if (!inflight) {
        /* the tensor cores read the fragment registers until the wait: none may be reused before */
        emit_ins(f, OP_WGWAIT, PT_B32)->inflight = 0;
        wg_hold(f, frag, nfrag);
    }
}

/* mma.sync's B, A^T (k8 x n8, n = C rows 8 jc ..): b_i = A[8 jc + g][k + q + 4 i], rounded. */
static void swapped_mma_sync(Lower *c, Tile *acc, SmemMatrix a, const BtFrags *F, int tall)
{
    Func *f = c->f;
    const Layout *L = &acc->L;
    int M = L->S[0], K = a.cols;
    int64_t apitch = (int64_t)a.pitch * 4;
    f->cur_what = "mma fragment address";
    int g = ir_bin(f, OP_BAND, PT_B32, R(ir_bin(f, OP_SHR, PT_U32, R(c->tid), IMM(2))), IMM(7));
    int q4 = ir_bin(f, OP_SHL, PT_B32, R(ir_bin(f, OP_BAND, PT_B32, R(c->tid), IMM(3))), IMM(2));
    int alane = ir_tern(f, OP_MAD, PT_U32, R(g), IMM(apitch), R(ir_bin(f, OP_ADD, PT_U32, R(a.base), R(q4))));
    f->cur_what = "mma fragment";
    int *bt = malloc(sizeof(int) * (size_t)(4 * tall));
    for (int k = 0; k < K; k += K_STEP) {
        for (int i = 0; i < 4 * tall; i++)
            bt[i] = new_reg(f, RC_R);
        for (int j = 0; j < tall; j++)
            load_bt(c, F, k, j, &bt[4 * j]);
        if (k == 0)
            pipe_issue_pending(c);
        for (int jc = 0; jc < M / 8; jc++) {
            int b[2];
            for (int i = 0; i < 2; i++)
                b[i] = round_tf32_operand(c, smem_ld_b32(c, alane, 8 * jc * apitch + (int64_t)(k + 4 * i) * 4));
            for (int j = 0; j < tall; j++) {
                int cs[4];
                acc_slots(L, j, jc, cs);
                mma_sync(c, PT_B32, PT_B32, acc, cs, &bt[4 * j], b);
            }
        }
    }
    free(bt);
    pipe_issue_pending(c);
}

void lower_mma_swapped(Lower *c, Tile *acc, SmemMatrix a, SmemMatrix b, bool wgmma)
{
    Func *f = c->f;
    const Layout *L = &acc->L;
    int warps = c->threads / 32, N = L->S[1];
    int tall = N / (16 * warps);
    if (a.type != TY_F32 || b.type != TY_F32 || a.cols % K_STEP || b.rows != a.cols || tall < 1 ||
        N % (16 * warps) || L->O[1] != 2 * tall || L->T[0] != 4 || L->V[0] != 2 || L->T[1] != 8 * warps ||
        (a.swz != SWZ_SLAB && a.swz != SWZ_NONE) || (b.swz != SWZ_QUAD && b.swz != SWZ_SLAB_K8 && b.swz != SWZ_NONE) ||
        (b.swz != SWZ_NONE && b.pitch != b.cols) || (a.swz == SWZ_SLAB && a.pitch != a.cols))
        die("lower_mma_swapped: operands or accumulator not in the swapped layouts");
    if (wgmma != (a.swz == SWZ_SLAB))
        die("lower_mma_swapped: the plan's path and A's layout disagree");
    if (!wgmma && pipe_take_barrier(c))
        pipe_barrier(c);     /* (wgmma takes it once its registers exist) */
    const char *saved = f->cur_what;
    f->cur_what = "mma fragment address";
    /* B[q][8 w + g]: row tid & 3, column tid >> 2, i.e. byte column tid & ~3 */
    BtFrags F = { { -1, -1 }, b.swz, (int64_t)b.pitch * 4, b.rows, warps, a.swz == SWZ_SLAB };
    int q = ir_bin(f, OP_BAND, PT_B32, R(c->tid), IMM(3));
    int col = ir_bin(f, OP_BAND, PT_B32, R(c->tid), IMM(~(int64_t)3));
    int off = b.swz != SWZ_NONE ? swz_offset_ir(c, b.swz, q, col, false, b.pitch * 4, b.rows)
                                : ir_tern(f, OP_MAD, PT_U32, R(q), IMM(F.row_bytes), R(col));
    F.lane[0] = ir_bin(f, OP_ADD, PT_U32, R(b.base), R(off));
    if (b.swz == SWZ_SLAB_K8) {
        int q4 = ir_bin(f, OP_ADD, PT_U32, R(q), IMM(4));
        F.lane[1] = ir_bin(f, OP_ADD, PT_U32, R(b.base), R(swz_offset_ir(c, b.swz, q4, col, false, b.pitch * 4, b.rows)));
    }
    f->cur_what = "mma fragment";
    if (wgmma)
        swapped_wgmma(c, acc, a, &F, tall);
    else
        swapped_mma_sync(c, acc, a, &F, tall);
    f->cur_what = saved;
}
