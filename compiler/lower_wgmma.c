/* lower_wgmma.c: tensor-core matmul with wgmma (sm_90a), f16, bf16 and tf32 operands, f32
 * accumulators.
 *
 * 8-bit operands (fp8 into f32, i8/u8 into s32) are m64nNk32, both K-major: in bytes a k step
 * is 32 bytes as for 16-bit types, so the slabs, descriptors and offsets are theirs.
 *
 * A warpgroup (4 warps, 128 threads) multiplies a 64 x 16 slice of A by a 16 x N slice of B
 * (N <= 256) with one wgmma.mma_async, both read by the tensor cores straight from shared memory
 * through matrix descriptors: no fragment loads, no ldmatrix, no operand registers. The block's
 * warpgroups stack along M: warpgroup u takes rows 64 u .. 64 u + 63 of every 64 * (W / 4), and a
 * taller tile takes several wgmma per k step.
 *
 * Layouts. The operands arrive by the pipelined loop's TMA or cp.async in the SWZ_SLAB layouts
 * (swizzle.c): 128-byte column slabs with the 128-byte swizzle, 1024-byte aligned. A is read
 * K-major (its rows are 128-byte slab rows; the descriptor's stride byte offset is 1024, 8 rows),
 * B N-major (imm-trans-b: 8 k rows of 64 columns per 1024 bytes; stride byte offset 1024, leading
 * byte offset one slab, K * 128 bytes). A k step of 16 moves A's start 32 bytes along its row (a
 * new slab every 4 steps) and B's 16 rows (2048 bytes). A K-major operand whose rows are 64
 * bytes past a multiple of 128 (a 16-bit k step of 32) lies in SWZ_SLAB64's 64-byte slabs instead:
 * the descriptor's swizzle 2 and stride 512 (8 rows of 64 bytes), a new slab every 2 steps (by
 * TMA through a map of the 64-byte swizzle, lower_tma.c). A transposed 16-bit A (stored [K][M])
 * lies in its slabs as an N-major B does and is read M-major (imm-trans-a): warpgroup u's 64 rows
 * are slab u, a k step moves 16 rows (2048 bytes). The accumulator is layout_mma's with one
 * warp column and its rows in warpgroup order (lower.h, wg_rows): warp w holds rows 16 w + g and
 * 16 w + 8 + g of every 16 W, as wgmma gives rank v of warpgroup u rows 64 u + 16 v + g and + 8,
 * so A's slab holds its rows (or columns) as stored: one TMA box a slab, like B's. (Until
 * 2026-11-28 the accumulator kept mma.sync's row order and A's rows were permuted in blocks of 8
 * to match: a TMA box per 8 rows, and 32-byte sectors split for an M-major A.)
 *
 * A from registers. wgmma's A may instead be four registers per thread per k step, each warp's
 * fragment that of mma.sync's m16 A tile (the rows the warp holds): every tf32 A (rounded there,
 * where in a slab it would be rounded in place) is loaded that way,
 * by lower_mma.c's fragment loads (mma_a_frags), a few k steps' just before their wgmma, behind
 * a fence of their own, so that the next steps' loads overlap these steps' tensor work. How many
 * steps a fence: two for a transposed A (tf32 A^T @ B^T 2-3% faster, A^T @ B 1% slower; H100,
 * 2026-11-28; f16 A^T, which came this way before its slab, 0.74 against 0.70), but one for a row-major tf32 A,
 * which ldmatrix reads in one instruction a step (two were 1% slower); all of them before one
 * fence ran at 0.65 against 0.70 (H200). B comes
 * from its slab, K-major for tf32 (tf32 wgmma reads nothing else). The fragment registers stay
 * live until the wait (wg_hold).
 *
 * Order. Each matmul fences the accumulators (wgmma.fence), issues its wgmma, commits them as one
 * group and waits for it before the next iteration's barrier lets the stage be overwritten; in a
 * loop with a spare stage (PipeLoop.wg_keep) it waits only for the previous iteration's group. The
 * barrier that publishes a stage cp.async filled has fence.proxy.async before it: cp.async writes
 * through the generic proxy, the tensor cores read through the async one. */
#include <string.h>
#include "lower.h"

enum { WG_THREADS = 128, WG_M = 64, WG_K = 16, WG_MAX_N = 256, SLAB = 128, SLAB64 = 64 };

/* a_slab: A is read K-major from its slab (not from registers, not M-major); b_trans: B is read
 * K-major (B^T as stored). A slab is 128 bytes of an operand's stored rows: only the operand
 * whose stored rows run along K (A K-major, B^T) needs K to fill them, only an N-major B needs N
 * to; the other dimension is free down to a k step (16) or an n8 tile. So a 64 x 32 score block
 * Q K^T (B^T of 32 rows) and P V with 32 keys (K = 32 down an N-major B) stay on wgmma. */
/* A kernel that prints calls vprintf, and ptxas serializes every wgmma of a function with a call
 * in it (C7510): its products stay on mma.sync. */
static bool wgmma_kernel(Lower *c)
{
    return c && c->target && c->target->wgmma && c->threads > 0 && c->threads % WG_THREADS == 0 &&
           !(c->k && c->k->first_print);
}

/* The rule a 16-bit M x N x K product of `warps` warps misses (0: none): 1 the rows (16 a warp),
 * 2 the columns (a multiple of 8, up to WG_MAX_N), 3 the k steps. wgmma_shape_why says it. */
static int shape16_miss(int warps, int M, int N, int K)
{
    return M % (16 * warps) ? 1 : N % 8 || N > WG_MAX_N ? 2 : K % WG_K ? 3 : 0;
}

bool wgmma_shape(Lower *c, ElemType t, bool tf32, int M, int N, int K, bool a_slab, bool b_trans)
{
    if (!wgmma_kernel(c))
        return false;
    int es = type_size(t), warps = c->threads / 32;
    /* tf32 reads B only K-major, which a row-major B is not: the product is swapped
       (lower_mma_swap.c), N along wgmma's M (64-row blocks per warpgroup), M along its N */
    if (t == TY_F32 && tf32)
        return N % (16 * warps) == 0 && M % 8 == 0 && M <= WG_MAX_N && K * es % SLAB == 0;
    /* 8-bit operands are K-major only: B transposed, its N rows in slabs of K like A's */
    if (es == 1)
        return M % (16 * warps) == 0 && N % 64 == 0 && N <= WG_MAX_N && K % SLAB == 0;
    if ((t != TY_F16 && t != TY_BF16) || shape16_miss(warps, M, N, K))
        return false;
    /* K-major rows: 128-byte slabs, or 64-byte ones (SWZ_SLAB64) where K * 2 is not 128's */
    if (a_slab && K * es % SLAB64)
        return false;
    return b_trans ? K * es % SLAB64 == 0 : N * es % SLAB == 0;
}

const char *wgmma_shape_why(Lower *c, int M, int N, int K)
{
    int warps = c->threads / 32;
    if (c->k && c->k->first_print)
        return "a kernel that prints keeps mma.sync: ptxas serializes wgmma around its calls";
    if (c->threads % WG_THREADS)
        return arena_printf(c->a, "wgmma needs whole warpgroups of 128 threads, the block has %d", c->threads);
    switch (shape16_miss(warps, M, N, K)) {
    case 1: return arena_printf(c->a, "wgmma needs M a multiple of %d (16 rows a warp, %d warps): M = %d", 16 * warps, warps, M);
    case 2: return arena_printf(c->a, "wgmma takes N a multiple of 8 up to %d: N = %d", WG_MAX_N, N);
    case 3: return arena_printf(c->a, "wgmma takes K a multiple of %d: K = %d", WG_K, K);
    }
    return NULL;
}

bool wgmma_shape_tf32_kmajor(Lower *c, int M, int N, int K)
{
    if (!wgmma_kernel(c))
        return false;
    int warps = c->threads / 32;
    return M % (16 * warps) == 0 && N % 8 == 0 && N <= WG_MAX_N && K * 4 % SLAB == 0;
}

static int accumulator_slot(const Layout *L, int o0, int o1, int i1) { return (o0 * L->O[1] + o1) * L->V[1] + i1; }

/* Hopper's tensor cores add fp8 products into the accumulator keeping about 13 of its bits: a
 * small product is cut off against a large running sum, so that one long chain of wgmma loses
 * most of a sum of many positive terms (K = 16384: 0.32 of sum |a b| on an H100, 0.0141 at K =
 * 1024). Each fp8 product, the K of one window (a k step of a pipelined loop: 128 in the
 * examples), is therefore summed in registers of its own, started by a wgmma with scale-d 0, and
 * added to the accumulator by FADD after its wait, as cuBLAS does: the error is then that of
 * one window's chain plus f32 additions (docs/language.md, "Accuracy"). Where the loop keeps a
 * group in flight (PipeLoop.wg_keep), the add waits for the next iteration: after its barrier it
 * waits for the previous chain, adds it and starts its own in the same registers (zeroed before
 * the loop, added once more at its exit), so the chain runs on through the barrier and the
 * stage's wait. 8-bit integers are exact. */
bool wgmma_promotes(ElemType t) { return t == TY_F8E4M3 || t == TY_F8E5M2; }

/* The 64-bit descriptor of a K-major (lbo unused) or N-major tile starting at shared address base:
 * start address and the two byte offsets in 16-byte units (the stride one: 8 rows of the slab),
 * the swizzle in bits 62-63: 1 for 128 bytes, 2 for 64. */
int wgmma_descriptor(Lower *c, int base, int lbo, int width)
{
    Func *f = c->f;
    /* made unsigned: the 64-byte swizzle sets bit 63, which a signed shift may not reach */
    uint64_t bits = ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(8 * width >> 4) << 32) |
                    ((uint64_t)(width == 128 ? 1 : 2) << 62);
    int64_t fixed;
    memcpy(&fixed, &bits, sizeof fixed);
    /* the address field is 14 bits: the address mod 2^18, over 16 (the PTX ISA's
       matrix-descriptor-encode). A shared address can carry more: in a clustered launch the
       block's rank sits above the 18 bits, and unmasked it would spill into the leading byte
       offset (row-major B's second slab, read wrongly in the second block of each cluster). */
    int low = ir_bin(f, OP_BAND, PT_B32, R(base), IMM(0x3FFFF));
    int start = ir_bin(f, OP_SHR, PT_U32, R(low), IMM(4));
    int wide = ir_cvt(f, PT_U64, PT_U32, R(start));
    return ir_bin(f, OP_BOR, PT_B64, R(wide), IMM(fixed));
}

void wgmma_acc_group(Func *f, const Tile *acc, const int slots[4])
{
    Ins *g = emit_ins(f, OP_WGACC, acc->type == TY_I32 ? PT_S32 : PT_F32);
    for (int q = 0; q < 4; q++) {
        if (acc->v[slots[q]].kind != O_REG)
            die("wgmma: accumulator slot %d is not a register", slots[q]);
        g->dst[q] = acc->v[slots[q]].reg;
        g->src[q] = acc->v[slots[q]];
    }
    g->ndst = g->nsrc = 4;
}

/* The A fragments of k step k (16 columns) from av, a 16-bit M x K value in wgmma_value_layout:
 * m16 tile j of the warp is slots o0 = 2 j (rows r_lo) and 2 j + 1 (r_hi), and the k step's two
 * n8 column groups o1 = k / 8 and k / 8 + 1 hold columns 2 q, 2 q + 1 of each: the mma A fragment
 * a0..a3 (r_lo, r_hi by the low and high 8 columns), two elements packed per register. */
static void value_frags(Lower *c, const Tile *av, int k, int tall, int *frag)
{
    const Layout *L = &av->L;
    PType pair = av->type == TY_BF16 ? PT_BF16 : PT_F16;
    for (int j = 0; j < tall; j++)
        for (int i = 0; i < 4; i++) {
            int o0 = 2 * j + (i & 1), o1 = k / 8 + (i >> 1), s = (o0 * L->O[1] + o1) * 2;
            /* the operands first: making one (an immediate) emits code, and may move `in` */
            int hi = opnd_reg(c, av->v[s + 1], PT_F32), lo = opnd_reg(c, av->v[s], PT_F32);
            Ins *in = emit_ins(c->f, OP_PACK2, pair);
            in->dst[0] = frag[4 * j + i];
            in->ndst = 1;
            in->src[0] = R(hi);   /* the upper half: column 2 q + 1 */
            in->src[1] = R(lo);
            in->nsrc = 2;
        }
}

Layout wgmma_value_layout(Lower *c, ElemType t, int M, int K)
{
    return layout_mma((Shape){ 2, { M, K } }, c->threads, t, true, false);
}

static void wgmma_product(Lower *c, Tile *acc, SmemMatrix a, const Tile *av, SmemMatrix b);

void lower_wgmma(Lower *c, Tile *acc, SmemMatrix a, SmemMatrix b)
{
    wgmma_product(c, acc, a, NULL, b);
}

void lower_wgmma_value(Lower *c, Tile *acc, const Tile *av, SmemMatrix b)
{
    Layout want = wgmma_value_layout(c, av->type, av->L.S[0], av->L.S[1]);
    if ((av->type != TY_F16 && av->type != TY_BF16) || !layout_eq(&av->L, &want))
        die("lower_wgmma_value: A not a 16-bit value in wgmma_value_layout");
    SmemMatrix a = { -1, av->L.S[1], av->type, false, av->L.S[0], av->L.S[1], SWZ_NONE, 0, false };
    wgmma_product(c, acc, a, av, b);
}

static void wgmma_product(Lower *c, Tile *acc, SmemMatrix a, const Tile *av, SmemMatrix b)
{
    Func *f = c->f;
    Layout *L = &acc->L;
    int warps = c->threads / 32, es = type_size(a.type);
    int M = L->S[0], N = L->S[1], K = a.cols;
    /* tf32 (f32 operands, rounded in shared memory): m64nNk8, both K-major, so B transposed */
    bool tf = a.type == TY_F32;
    int wk = tf ? 8 : es == 1 ? 2 * WG_K : WG_K;    /* 32 bytes of k a step: k8, k16, k32 */
    /* A not in its slab (transposed: M-major) comes from registers, read as mma.sync reads it */
    bool regs_a = av || !swz_slab_bytes(a.swz);
    /* K-major slab widths (an M-major A^T and an N-major B keep 128) */
    int aw = !regs_a && !a.trans ? swz_slab_bytes(a.swz) : SLAB, bw = b.trans ? swz_slab_bytes(b.swz) : SLAB;
    if ((!regs_a && (a.pitch != (a.trans ? M : K) || (a.trans && es != 2))) || b.pitch != (b.trans ? K : N) || b.rows != K || L->T[0] != 8 * warps ||
        L->T[1] != 4 || L->V[0] != 1 || L->V[1] != 2 || L->O[1] != N / 8 || L->reps != 1 || (tf && (!b.trans || !regs_a)) || (es == 1 && (!b.trans || regs_a)) ||
        !(tf ? wgmma_shape_tf32_kmajor(c, M, N, K) : wgmma_shape(c, a.type, false, M, N, K, !regs_a && !a.trans, b.trans)))
        die("lower_wgmma: operands or accumulator not in wgmma's layouts");
    int tall = M / (16 * warps);     /* wgmma per k step: 64-row blocks of this warpgroup */
    /* fp8 products are summed apart and added to acc after the wait: see wgmma_promotes. In a
       loop that keeps a group in flight the add is the next iteration's, after its wait */
    bool promote = wgmma_promotes(a.type);
    bool deferred = promote && !regs_a && c->pipe && c->pipe->promote && c->pipe->wg_keep &&
                    layout_eq(&c->pipe->part.L, L);
    Tile part = deferred ? c->pipe->part : promote ? tile_new(c, TY_F32, *L) : *acc;
    Frags *af = regs_a && !av ? mma_a_frags(c, L, a) : NULL;
    int nfrag = regs_a ? 4 * tall * (K / wk) : 0;
    /* k steps of A's fragments loaded behind one fence (see A from registers, above); a value's
       are packed from registers already there, one step at a time */
    int steps_a = (es == 2 || a.trans) && !av ? 2 : 1;
    int *frag = arena_alloc(c->a, sizeof(int) * (size_t)(nfrag + 1));
    if (pipe_take_barrier(c))
        pipe_barrier(c);
    const char *saved = f->cur_what;
    f->cur_what = "wgmma descriptor";
    /* warpgroup u's rows start 64 u rows (8 KB) into A; A^T's 64 u columns are its slab u (K
       k rows of 64 columns, K * 128 bytes), read M-major like an N-major B */
    int da = -1;
    int64_t a_blk = a.trans ? (int64_t)K * SLAB : WG_M * aw;    /* bytes a 64-row block */
    if (!regs_a) {
        int u = ir_bin(f, OP_SHR, PT_U32, R(c->tid), IMM(7));
        da = wgmma_descriptor(c, ir_tern(f, OP_MAD, PT_U32, R(u), IMM(a_blk), R(a.base)), a.trans ? K * SLAB : 16, aw);
    }
    /* B^T ([N][K]) is K-major like A: its N rows in slabs of K, 8 rows per 8 slab rows */
    int db = wgmma_descriptor(c, b.base, b.trans ? 16 : K * SLAB, bw);
    f->cur_what = saved;
    if (deferred) {
        /* the previous iteration's chain (zeros before the first) into acc, before this one
           writes the same registers */
        c->pipe->acc = *acc;
        emit_ins(f, OP_WGWAIT, PT_B32)->inflight = 0;
        for (int s = 0; s < layout_slots(L); s++)
            ir_bin_to(f, OP_ADD, PT_F32, acc->v[s].reg, acc->v[s], part.v[s]);
    }
    if (!regs_a)
        emit_ins(f, OP_WGFENCE, PT_B32);
    for (int k = 0; k < K; k += wk) {
        /* A's fragments of this k step, then a fence (registers written before the wgmma that
           reads them): the next step's loads overlap this step's tensor work */
        if (regs_a && (k / wk) % steps_a == 0) {
            for (int ks = k; ks < k + steps_a * wk && ks < K; ks += wk) {
                int n = ks / wk * 4 * tall;
                for (int i = 0; i < 4 * tall; i++)
                    frag[n + i] = new_reg(f, RC_R);
                if (av)
                    value_frags(c, av, ks, tall, &frag[n]);
                else
                    mma_a_load(c, af, ks, &frag[n]);
            }
            emit_ins(f, OP_WGFENCE, PT_B32);
        }
        int64_t kb = (int64_t)k * es;    /* bytes along A's rows */
        for (int j = 0; j < tall; j++) {
            /* instruction j's rows start 16 W j rows (16 W / 64 blocks) in; k steps along A's
               rows (K-major: 32 bytes, a new slab every 4) or down them (M-major: 16 rows) */
            int64_t aoff = a.trans ? (int64_t)j * 16 * warps / WG_M * a_blk + (int64_t)k * SLAB
                                   : (int64_t)j * 16 * warps * aw + kb / aw * M * aw + kb % aw;
            int64_t boff = b.trans ? kb / bw * N * bw + kb % bw : (int64_t)k * SLAB;
            int dbk = boff ? ir_bin(f, OP_ADD, PT_S64, R(db), IMM(boff >> 4)) : db;
            int dak = regs_a ? -1 : aoff ? ir_bin(f, OP_ADD, PT_S64, R(da), IMM(aoff >> 4)) : da;
            Ins *in = emit_ins(f, OP_WGMMA, acc->type == TY_I32 ? PT_S32 : PT_F32);
            in->ty2 = (uint8_t)mma_operand_ptype(a.type);
            in->ty3 = (uint8_t)mma_operand_ptype(b.type);
            if (regs_a) {
                in->a_regs = true;
                for (int i = 0; i < 4; i++)
                    in->src[i] = R(frag[k / wk * 4 * tall + 4 * j + i]);
                in->src[4] = R(dbk);
                in->nsrc = 5;
            } else {
                in->src[0] = R(dak);
                in->src[1] = R(dbk);
                in->nsrc = 2;
            }
            in->n = N;
            in->trans = !b.trans;     /* imm-trans-b: B N-major (never for tf32: K-major only) */
            in->trans_a = !regs_a && a.trans;    /* imm-trans-a: A M-major */
            in->fresh = promote && k == 0;
            for (int i = 0; i < N / 8; i++) {
                int s[4] = { accumulator_slot(L, 2 * j, i, 0), accumulator_slot(L, 2 * j, i, 1),
                             accumulator_slot(L, 2 * j + 1, i, 0), accumulator_slot(L, 2 * j + 1, i, 1) };
                wgmma_acc_group(f, &part, s);
                if (promote && k == 0)
                    f->code.v[f->code.n - 1].nsrc = 0;     /* written, not read */
            }
        }
    }
    emit_ins(f, OP_WGCOMMIT, PT_B32);
    /* the next stage's copies go into the stage every thread finished reading before the barrier */
    pipe_issue_pending(c);
    /* a loop with a stage to spare lets this group run on into the next iteration
       (lower_pipeline.c, keeps_group); the wait then finishes the previous iteration's. A's
       fragment registers would be rewritten by the next iteration's loads: those wait here. */
    if (deferred)
        return;        /* in flight until the next iteration's wait, or the loop's exit */
    int keep = c->pipe && !regs_a && !promote ? c->pipe->wg_keep : 0;
    emit_ins(f, OP_WGWAIT, PT_B32)->inflight = keep;
    for (int s = 0; promote && s < layout_slots(L); s++)
        ir_bin_to(f, OP_ADD, PT_F32, acc->v[s].reg, acc->v[s], part.v[s]);
    /* the tensor cores read A's fragment registers until the wait: none may be reused before */
    if (regs_a)
        wg_hold(f, frag, nfrag);
}
