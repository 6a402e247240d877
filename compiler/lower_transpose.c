/* lower_transpose.c: the transposing copy, which brings an f32 operand stored N-major (a row-major
 * B, [K, N]) into the K-major slab that tf32 wgmma reads.
 *
 * tf32 wgmma reads its shared-memory operand only K-major. In A^T @ B both operands are M- or
 * N-major as stored: A^T reaches wgmma through registers (its register-A form), and B must be
 * turned around on the way. TMA keeps the stored order; cp.async of 4-byte pieces into transposed
 * places breaks the 32-byte sectors it moves and ran at 0.38 of cuBLAS. So the pipelined loop
 * copies B as it lies, in 16-byte pieces, into its stage, and once a thread's copies have landed
 * it reads back its own pieces and rounds them to tf32; after a barrier (every piece read) it
 * writes them transposed into the same stage, now wgmma's K-major slab, before the barrier that
 * publishes the stage: one more trip through shared memory and one more barrier a stage. Slabs
 * of their own beside the staging need no barrier but a third more shared memory, which cost a
 * 128 x 128 tile its second block a multiprocessor (measured: 0.57 of cuBLAS against 0.73).
 *
 * Blocks of 4 x 4. Each thread copies 4 consecutive rows (k) of one 16-byte chunk (4 n), so that
 * what it reads back is 4 chunks of k for 4 rows of the slab: 4 vector loads, 16 roundings, 4
 * vector stores. The threads of a quarter warp hold 8 consecutive row quads at one chunk
 * (xpose_layout: t0 in the low lane bits), so
 *   - the global reads of a warp are 8 rows of 64 contiguous bytes: whole sectors;
 *   - the staging tile is SWZ_BLK4 (swizzle.c), whose key (r / 4) % 8 spreads the 8 row quads
 *     over the 8 16-byte bank groups: the copies' writes and the reads back are conflict-free;
 *   - the slab writes of a quarter warp fill one 128-byte row (8 k chunks of one n): conflict-free
 *     under any swizzle.
 * The slab's rows j = 0 .. 3 of a block differ from the first only in the key's low two bits:
 * row n0 + j (n0 a multiple of 4) sits at (address ^ 16 j) + 128 j, one xor per j, made once. */
#include "lower.h"

bool xpose_layout(Shape s, int threads, Layout *out)
{
    int rows = (int)s.dim[0], cols = (int)s.dim[1];
    if (s.rank != 2 || threads % 64 || rows % 32 || cols % 32)
        return false;
    int t1 = threads / 8;      /* 8 row quads by t1 chunk columns */
    if (cols / 4 % t1)
        return false;
    /* a warp: 8 row quads (the lowest lane bits) by 4 chunks */
    Layout L = { .rank = 2, .S = { rows, cols }, .T = { 8, t1 }, .V = { 4, 4 }, .O = { rows / 32, cols / (4 * t1) },
                 .bcast = { false, false }, .reps = 1, .Tlo = { 8, 4 }, .lo_t0_low = true };
    *out = L;
    return true;
}

/* Marks the instructions from `from` on as touching only what this thread copied or writes
 * (race_check.c, "Own pieces"). */
static void mark_own(Func *f, int from)
{
    for (int i = from; i < f->code.n; i++)
        f->code.v[i].own = f->code.v[i].op == OP_LD || f->code.v[i].op == OP_ST;
}

void xpose_stage_tf32(Lower *c, Shape s, int base)
{
    Func *f = c->f;
    Layout L;
    if (!xpose_layout(s, c->threads, &L))
        die("xpose_stage_tf32: a %dx%d tile has no transposing layout", (int)s.dim[0], (int)s.dim[1]);
    int rows = L.S[0], cols = L.S[1];
    int t0 = thread_coord(c, &L, 0), t1 = thread_coord(c, &L, 1);
    /* the thread's first block: staging row 4 t0, byte column 16 t1; slab row 4 t1, byte column 16 t0 */
    int q0 = ir_bin(f, OP_SHL, PT_B32, R(t0), IMM(2)), b0 = ir_bin(f, OP_SHL, PT_B32, R(t0), IMM(4));
    int q1 = ir_bin(f, OP_SHL, PT_B32, R(t1), IMM(2)), b1 = ir_bin(f, OP_SHL, PT_B32, R(t1), IMM(4));
    int src = ir_bin(f, OP_ADD, PT_U32, R(base), R(swz_offset_ir(c, SWZ_BLK4, q0, b1, true, cols * 4, rows)));
    int dst0 = ir_bin(f, OP_ADD, PT_U32, R(base), R(swz_offset_ir(c, SWZ_SLAB, q1, b0, true, rows * 4, cols)));
    int dst[4] = { dst0, -1, -1, -1 };
    for (int j = 1; j < 4; j++)
        dst[j] = ir_bin(f, OP_BXOR, PT_B32, R(dst0), IMM(16 * j));
    int nblk = L.O[0] * L.O[1];
    int (*w)[4][4] = arena_alloc(c->a, sizeof *w * (size_t)nblk);
    int from = f->code.n;
    for (int b = 0; b < nblk; b++) {
        int o0 = b / L.O[1], o1 = b % L.O[1];
        for (int i = 0; i < 4; i++) {
            int64_t soff;
            if (!swz_delta(SWZ_BLK4, cols * 4, rows, 32 * o0 + i, (int64_t)16 * L.T[1] * o1, &soff))
                die("xpose_stage_tf32: no constant staging offset");
            Ins *in = emit_ins(f, OP_LD, PT_B32);
            in->space = SP_SHARED;
            in->vec = 4;
            for (int k = 0; k < 4; k++)
                in->dst[k] = w[b][i][k] = new_reg(f, RC_R);
            in->ndst = 4;
            in->src[0] = R(src);
            in->nsrc = 1;
            in->off = soff;
            ir_naive_addr(f);      /* (moves the load: in is stale after it) */
        }
    }
    mark_own(f, from);
    for (int b = 0; b < nblk; b++)
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 4; k++)
                w[b][i][k] = round_tf32_even(c, w[b][i][k]);
    /* in place: every thread's pieces read before any is overwritten */
    ir_bar(f);
    from = f->code.n;
    for (int b = 0; b < nblk; b++) {
        int o0 = b / L.O[1], o1 = b % L.O[1];
        for (int j = 0; j < 4; j++) {
            /* slab row 4 (t1 + T1 o1) + j, k chunk t0 + 8 o0 */
            int64_t doff;
            if (!swz_delta(SWZ_SLAB, rows * 4, cols, (int64_t)4 * L.T[1] * o1, (int64_t)128 * o0, &doff))
                die("xpose_stage_tf32: no constant slab offset");
            Ins *in = emit_ins(f, OP_ST, PT_B32);
            in->space = SP_SHARED;
            in->vec = 4;
            in->src[0] = R(dst[j]);
            for (int i = 0; i < 4; i++)
                in->src[1 + i] = R(w[b][i][j]);
            in->nsrc = 5;
            in->off = doff + 128 * j;
            ir_naive_addr(f);
        }
    }
    /* each thread writes its own 16-byte pieces, which nobody reads before the barrier */
    mark_own(f, from);
}
