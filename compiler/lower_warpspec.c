/* lower_warpspec.c: a producer warp for a pipelined loop's TMA copies (sm_90a).
 *
 * Why. In the plain pipelined loop (lower_pipeline.c) every thread of the block waits for a
 * stage's copies, meets the others at a block barrier (which also says the stage about to be
 * overwritten is no longer read), issues the wgmma, and thread 0 issues the next stage's copies.
 * Any delay on that path -- a late warp at the barrier, the copies' address arithmetic -- could
 * keep the tensor pipe waiting: at 4096^3 it was active 77% of the time in the f16 product
 * against 94-96% in cuBLAS's (H200, docs/performance.md). Here one extra warp only copies, and the
 * consumers only multiply; they meet through two rings of mbarriers instead of the block barrier:
 * - full[s] (lower_tma.c's stage barriers): the producer announces the stage's bytes and issues
 *   its TMA copies; the phase completes when the bytes land. Consumers wait for it.
 * - empty[s] (here): each consumer warp's lane 0 arrives once its wgmma reading stage s are done;
 *   the phase completes with the last warp. The producer waits for it before refilling s.
 * Stage s is filled for the r-th time (r = 0, 1, ...) in iteration s + r B (B stages): the
 * producer waits for empty[s]'s phase r - 1, parity (r & 1) ^ 1, which for r = 0 is the phase
 * "before" a new barrier's first and passes at once (PTX ISA, mbarrier.try_wait.parity). The
 * consumers wait for full[s]'s phase r, parity r & 1 (PipeLoop.phase).
 *
 * When. The loop's body is one `acc += a @ b` on the wgmma path (lower_pipeline.c, one_product),
 * whose group then stays in flight into the next iteration without a spare stage (the empty
 * barriers keep the stage it reads from being refilled), or on the swapped tf32 path (its group
 * waited for at the top of the next iteration, before the fragment loads reuse its registers:
 * lower_pipeline.c, publish_stage), every operand comes by TMA, and
 * everything the kernel does before the loop is scalar arithmetic and register initialisation:
 * the producer warp runs that code too (it needs the loop's bounds and the tiles' coordinates),
 * and a load or store spread over the threads would send its 32 extra threads outside the tile.
 * An fp8 product's partial sums (lower_wgmma.c, wgmma_promotes) count twice the accumulator's
 * registers; a kernel whose registers do not fit beside the extra warp (9 warps: 168 a thread,
 * regalloc.c's reg_budget) is compiled again without it (compile.c). With -fwarp-specialize:
 * measured neither faster nor slower than the plain loop on the 16-bit examples
 * (docs/performance.md, "A producer warp"); it is the ground a cluster's multicast copies need
 * (a copy into both blocks waits for both blocks' consumers: their empty barriers). By default
 * (unless -fno-warp-specialize) for the swapped tf32 product with a warpgroup (below): 0.94-0.98
 * of cuBLAS against 0.83-0.88 on matmul_tf32. In a kernel split over K (lower_split.c) the
 * producer's threads do not return but leave through a tail after the kernel's return
 * (ws_tail_emit) that meets the slices' cluster barriers, which wait for every thread.
 *
 * The block. The user's threads(T) stay the consumers, with every layout as before; the producer
 * is warp T / 32 (threads T .. T + 31), launched as part of the block (KernelMeta.threads, and
 * .maxntid, are T + 32). Where the consumers need more registers than 9 warps leave them (the
 * swapped tf32 product of 256 threads: its wgmma serialized by ptxas at 168), the producer is a
 * warpgroup instead (T + 128 threads, 168 a thread at entry for 256 consumers: .maxnreg says so,
 * Func.reg_limit), whose warps give all but PRODUCER_REGS back (setmaxnreg.dec) for the
 * consumers to take (setmaxnreg.inc, waiting until the pool has them). Its thread T issues; the
 * others leave at once. After the split the
 * producer never reaches a block barrier again, so the consumers' barriers count T threads
 * (Func.bar_threads). The producer exits after its last copies; the consumers wait for every
 * copy it issued (the full barriers), so when they leave the loop no copy is pending and the
 * loop's memory may be reused as before.
 *
 * A register tensor again: the empty barriers are `empty_base + stage * 8`, like the full ones
 * and the stage buffers (const_reg_elim). */
#include "lower.h"

/* Does e compute the same thing in every thread without touching another's data: scalars,
 * elementwise arithmetic of registers, a scalar read of a global tensor. */
static bool thread_local_expr(Expr *e)
{
    if (!e)
        return true;
    switch (e->kind) {
    case E_INT: case E_FLOAT: case E_BOOL: case E_BLOCK:
        return true;
    case E_NAME:
        return e->sym && !e->sym->is_shared;
    case E_UNARY: case E_CAST:
        return thread_local_expr(e->a);
    case E_BINARY:
        return e->op != OP_MATMUL && thread_local_expr(e->a) && thread_local_expr(e->b);
    case E_CALL:
        /* scalar functions only: a tile's reductions and scans go through shared memory */
        if (e->shape.rank)
            return false;
        for (int i = 0; i < e->nargs; i++)
            if (e->args[i]->shape.rank || !thread_local_expr(e->args[i]))
                return false;
        return true;
    case E_INDEX:
        if (e->shape.rank || !e->sym || e->sym->kind != SYM_TENSOR)
            return false;
        for (int i = 0; i < e->nidx; i++)
            if (!thread_local_expr(e->idx[i].start))
                return false;
        return true;
    default:
        return false;
    }
}

/* The loop is a statement of the kernel's body, and what comes before it is thread-local. */
static bool prologue_ok(Lower *c, Stmt *loop)
{
    Stmt *body = c->k->body;
    for (int i = 0; body && i < body->nbody; i++) {
        Stmt *st = body->body[i];
        if (st == loop)
            return true;
        bool ok = (st->kind == S_LET && thread_local_expr(st->init)) ||
                  (st->kind == S_VAR && !st->is_shared && thread_local_expr(st->init)) || st->kind == S_ASSUME;
        if (!ok)
            return false;
    }
    return false;
}

/* The registers a consumer thread may take from a producer warpgroup's: the launch's count at
 * entry for T + 128 threads, less the producer's PRODUCER_REGS, shared by the T consumers (in
 * allocation units of 8; setmaxnreg's most is 256). */
enum { PRODUCER_REGS = 40 };
static int consumer_regs(int T)
{
    int r = (reg_budget(T + 128) * (T + 128) - PRODUCER_REGS * 128) / T & ~7;
    return r > 256 ? 256 : r;
}

bool ws_choose(Lower *c, PipeLoop *pl)
{
    int T = c->threads;
    pl->producer = 0;
    if (!c->opt || c->opt->no_warp_spec)
        return false;
    if (!c->target->tma || c->ws_done || pl->S < 2 || T % 32 || T + 32 > 1024 ||
        !prologue_ok(c, pl->loop))
        return false;
    for (int i = 0; i < pl->nops; i++) {
        const PipeOperand *p = &pl->ops[i];
        if (p->tmap < 0 || p->held || p->xpose || p->var || !p->plan ||
            (p->plan->row->path != MM_WGMMA && p->plan->row->path != MM_WGMMA_TF32))
            return false;
    }
    /* the accumulator (and an fp8 product's partial sums beside it), and what the loop and its
       addresses need (the swapped tf32 product's fragments and their roundings besides), in the
       registers a thread of T + 32 may have: a guess; a kernel that does not fit after all is
       compiled again without the producer (compile.c). Where they do not fit, a producer
       warpgroup hands the consumers its registers: the swapped tf32 product of 256 threads
       under 168 registers had its wgmma serialized by ptxas (C7512), at 0.86 of cuBLAS, and
       at 232 ran at 0.98-1.00 (H200, docs/performance.md). */
    const MatmulPlan *mp = pl->ops[0].plan;
    int need = layout_slots(&mp->acc) * (wgmma_promotes(mp->type) ? 2 : 1) +
               (mp->row->path == MM_WGMMA_TF32 ? 48 : 24);
    if (need <= reg_budget(T + 32)) {
        pl->producer = 32;
        return c->opt->warp_spec;
    }
    if (T % 128 || T + 128 > 1024 || need > consumer_regs(T) || consumer_regs(T) <= reg_budget(T + 32))
        return false;
    /* the default for the swapped tf32 product, whose consumers the warpgroup's registers free
       from ptxas serializing their wgmma; elsewhere only when asked */
    if (!c->opt->warp_spec && mp->row->path != MM_WGMMA_TF32)
        return false;
    pl->producer = 128;
    pl->consumer_regs = consumer_regs(T);
    return true;
}

/* e is the loop variable plus or minus values the loop does not change, or one of those: two
 * blocks whose window starts there agree in every iteration once they agree in the first. */
static bool moves_with_loop(Expr *e, Sym *k)
{
    if (!pipe_uses_sym(e, k))
        return true;
    if (e->kind == E_NAME)
        return e->sym == k;
    if (e->kind == E_BINARY && e->op == '+')
        return (!pipe_uses_sym(e->a, k) && moves_with_loop(e->b, k)) ||
               (!pipe_uses_sym(e->b, k) && moves_with_loop(e->a, k));
    if (e->kind == E_BINARY && e->op == '-')
        return !pipe_uses_sym(e->b, k) && moves_with_loop(e->a, k);
    return false;
}

/* Which windows a cluster's two blocks may find they share: every copied one whose starts move
 * with the loop (moves_with_loop). */
static int cluster_candidates(Lower *c, PipeLoop *pl)
{
    int n = 0;
    for (int i = 0; i < pl->nops; i++) {
        PipeOperand *p = &pl->ops[i];
        if (p->held || p->tmap < 0)
            continue;
        /* each block issues every other box: with one box, one block would issue nothing, and
           the other's consumers could then run a stage ahead and arrive twice on its barriers
           within one phase */
        bool ok = tma_boxes(p) >= 2;
        for (int d = 0; d < p->window->nidx; d++)
            ok &= moves_with_loop(p->window->idx[d].start, pl->loop->sym);
        p->mc = ok && c->opt->cluster;
        n += p->mc;
    }
    return n;
}

void ws_setup(Lower *c, PipeLoop *pl)
{
    Func *f = c->f;
    pl->cluster = cluster_candidates(c, pl) > 0;
    f->cur_what = "stage free barrier";
    /* one arrival a consumer warp, and in a cluster one more from a warp of the block it shares
       stages with (itself when it shares none) */
    pl->empty = tma_barrier_ring(c, pl, "empty", c->threads / 32 * (pl->cluster ? 2 : 1));
    /* the other block's word that it has all this block sent it (ws_finish; element 0) */
    if (pl->cluster)
        pl->done = tma_barrier_ring(c, pl, "cluster_done", 1);
    f->cur_what = "consumer warp's lane 0";
    int lane = ir_bin(f, OP_BAND, PT_B32, R(c->tid), IMM(31));
    pl->lane0 = ir_setp(f, CMP_EQ, PT_U32, R(lane), IMM(0));
    /* the block as launched: the consumers and the producer warp (or warpgroup) */
    f->threads = c->meta->threads = c->threads + pl->producer;
    if (pl->producer == 128)
        f->reg_limit = pl->consumer_regs;
    c->ws_done = true;
    f->cur_what = "temporary";
}

/* Predicate `acc` and: word w of the values the other block wrote at shared address `base`
 * equals this block's own (register mine). */
static int and_same_as_peer(Func *f, int acc, int base, int w, int mine)
{
    int v = new_reg(f, RC_R);
    Ins *in = emit_ins(f, OP_LD, PT_B32);
    in->space = SP_SHARED;
    in->dst[0] = v;
    in->ndst = 1;
    in->src[0] = R(base);
    in->nsrc = 1;
    in->off = 4 * w;
    int eq = ir_setp(f, CMP_EQ, PT_S32, R(v), R(mine));
    return ir_bin(f, OP_BAND, PT_PRED, R(acc), R(eq));
}

/* The two blocks of a cluster (launched so where the grid allows: KernelMeta.cluster) compare
 * the first iteration's window starts of each candidate operand and the loop's bounds: thread 0
 * of each writes its own into the other's shared memory, a cluster barrier (which also publishes
 * both blocks' barrier initialisation) separates the writes from the reads, and each thread
 * compares. Equal, and the loop moves them alike (moves_with_loop): the blocks read the same
 * window in every iteration, and each issues half its boxes into both. Both blocks reach the
 * same answer, so they agree on the protocol; launched alone (%cluster_nctarank 1), a block
 * shares nothing. */
static void ws_exchange(Lower *c, PipeLoop *pl, int lo)
{
    Func *f = c->f;
    enum { MAXW = 16 };
    int own[MAXW], nw = 0;
    f->cur_what = "a window start the blocks compare";
    pipe_set_loop_value(c, pl->loop, lo);
    for (int i = 0; i < pl->nops; i++) {
        PipeOperand *p = &pl->ops[i];
        for (int d = 0; p->mc && d < p->window->nidx && nw + 2 < MAXW; d++)
            own[nw++] = opnd_reg(c, lower_expr(c, p->window->idx[d].start, NULL).v[0], PT_S32);
    }
    own[nw++] = lo;
    own[nw++] = pl->hi;
    int off = smem_alloc_aligned(c, 4 * nw, 128);
    f->smem_bufs.v[f->smem_bufs.n - 1].name = "the window starts the cluster's blocks compare";
    f->cur_what = "cluster rank";
    int rank = ir_movsym(f, PT_U32, "%cluster_ctarank");
    int nranks = ir_movsym(f, PT_U32, "%cluster_nctarank");
    int two = ir_setp(f, CMP_EQ, PT_U32, R(nranks), IMM(2));
    int other = ir_bin(f, OP_BXOR, PT_B32, R(rank), IMM(1));
    int peer = ir_tern(f, OP_SELP, PT_U32, R(other), R(rank), R(two));
    int base = smem_base_reg(c, off);
    int there = ir_bin(f, OP_MAPA, PT_U32, R(base), R(peer));
    /* the other block may not have started: its shared memory is written only after both
       arrived once (which also publishes both blocks' barrier initialisation) */
    emit_ins(f, OP_CLUSTERSYNC, PT_B32);
    for (int w = 0; w < nw; w++) {
        int at = w ? ir_bin(f, OP_ADD, PT_U32, R(there), IMM(4 * w)) : there;
        Ins *in = emit_ins(f, OP_STCLUSTER, PT_U32);
        in->src[0] = R(at);
        in->src[1] = R(own[w]);
        in->nsrc = 2;
        in->guard = pl->leader;
    }
    emit_ins(f, OP_CLUSTERSYNC, PT_B32);
    c->ws_cluster = true;
    /* the other block's values, now in this one's shared memory */
    int same_loop = two;
    int w = nw - 2;
    for (int q = 0; q < 2; q++)
        same_loop = and_same_as_peer(f, same_loop, base, w + q, own[w + q]);
    int any = ir_setp(f, CMP_NE, PT_U32, R(rank), R(rank));    /* false */
    int first = ir_setp(f, CMP_EQ, PT_U32, R(rank), IMM(0));
    int second = ir_setp(f, CMP_NE, PT_U32, R(rank), IMM(0));
    w = 0;
    for (int i = 0; i < pl->nops; i++) {
        PipeOperand *p = &pl->ops[i];
        if (!p->mc)
            continue;
        int shared = same_loop;
        for (int d = 0; d < p->window->nidx && w < nw - 2; d++, w++)
            shared = and_same_as_peer(f, shared, base, w, own[w]);
        f->cur_what = "operand shared in the cluster";
        p->mc_solo = ir_un(f, OP_BNOT, PT_PRED, R(shared));
        p->mc_mine[0] = ir_bin(f, OP_BAND, PT_PRED, R(shared), R(first));
        p->mc_mine[1] = ir_bin(f, OP_BAND, PT_PRED, R(shared), R(second));
        any = ir_bin(f, OP_BOR, PT_PRED, R(any), R(shared));
    }
    /* a consumer warp's second arrival: on the block it shares stages with */
    f->cur_what = "the block a consumer warp also releases stages in";
    pl->partner = ir_tern(f, OP_SELP, PT_U32, R(other), R(rank), R(any));
    pl->shares = any;
    f->cur_what = "temporary";
}

/* The producer's threads are done: they return, or in a kernel split over K go to the tail
 * (ws_tail_emit) that meets the slices' cluster barriers with them. */
static void ws_leave(Lower *c)
{
    Func *f = c->f;
    if (!c->split_loop) {
        emit_ins(f, OP_RET, PT_B32);
        return;
    }
    if (!c->ws_tail_on) {
        c->ws_tail_on = true;
        c->ws_tail = new_label(f);
    }
    ir_bra(f, c->ws_tail, -1, false);
}

void ws_producer(Lower *c, PipeLoop *pl, int lo, int64_t step)
{
    Func *f = c->f;
    int T = c->threads, B = pl->nbuf;
    int consumers = new_label(f), out = new_label(f), head = new_label(f);
    if (pl->cluster)
        ws_exchange(c, pl, lo);
    f->cur_what = "producer warp";
    /* warp-uniform (T is a multiple of 32) */
    int producer = ir_setp(f, CMP_GE, PT_U32, R(c->tid), IMM(T));
    ir_bra(f, consumers, producer, true);
    /* a producer warpgroup gives back all but what its loop needs, every warp of it at once */
    if (pl->producer == 128)
        emit_ins(f, OP_REGDEC, PT_B32)->count = PRODUCER_REGS;
    int issuer = ir_setp(f, CMP_EQ, PT_U32, R(c->tid), IMM(T));
    ir_bra(f, out, issuer, true);
    f->code.v[f->code.n - 1].divergent = true;
    int it = ir_mov(f, PT_S32, R(lo));
    f->regs.v[it].what = "producer's iteration";
    int stage = ir_mov(f, PT_U32, IMM(0));
    f->regs.v[stage].what = "producer's stage";
    int phase = ir_mov(f, PT_U32, IMM(0));
    f->regs.v[phase].what = "producer's phase";
    ir_label(f, head);
    int end = ir_setp(f, CMP_GE, PT_S32, R(it), R(pl->hi));
    ir_bra(f, out, end, false);
    /* the stage's readers done (at once the first time round) */
    int parity = ir_bin(f, OP_BXOR, PT_B32, R(phase), IMM(1));
    tma_wait(c, pipe_array_get(f, pl->empty, R(stage)), parity);
    int leader = pl->leader;
    pl->leader = issuer;
    pipe_issue_copies(c, pl, it, R(stage));
    pl->leader = leader;
    pipe_advance(f, stage, phase, B);
    ir_bin_to(f, OP_ADD, PT_S32, it, R(it), IMM(step));
    ir_bra(f, head, -1, false);
    ir_label(f, out);
    ws_leave(c);
    ir_label(f, consumers);
    if (pl->producer == 128)        /* ... which the consumers take (waiting until it has) */
        emit_ins(f, OP_REGINC, PT_B32)->count = (uint16_t)pl->consumer_regs;
    f->bar_threads = T;
    f->cur_what = "temporary";
}

void ws_tail_emit(Lower *c)
{
    Func *f = c->f;
    if (!c->ws_tail_on)
        return;
    /* the slices' sum's cluster barriers (lower_split.c), each met once by every consumer
       thread of a split launch */
    int n = c->split_syncs;
    f->cur_what = "producer warp";
    ir_label(f, c->ws_tail);
    if (n) {
        int skip = new_label(f);
        int split = ir_setp(f, CMP_GT, PT_U32, R(split_slices(c)), IMM(1));
        ir_bra(f, skip, split, true);
        for (int i = 0; i < n; i++)
            emit_ins(f, OP_CLUSTERSYNC, PT_B32);
        ir_label(f, skip);
    }
    emit_ins(f, OP_RET, PT_B32);
}

void ws_other_version(Lower *c, int consumers)
{
    Func *f = c->f;
    const char *saved = f->cur_what;
    f->cur_what = "producer warp";
    int extra = ir_setp(f, CMP_GE, PT_U32, R(c->tid), IMM(consumers));     /* whole warps */
    int stay = new_label(f);
    ir_bra(f, stay, extra, true);
    if (f->reg_limit)
        emit_ins(f, OP_REGDEC, PT_B32)->count = PRODUCER_REGS;
    ws_leave(c);
    ir_label(f, stay);
    if (f->reg_limit)
        emit_ins(f, OP_REGINC, PT_B32)->count = (uint16_t)f->reg_limit;
    f->cur_what = saved;
}

void ws_release(Lower *c, const PipeLoop *pl)
{
    Func *f = c->f;
    int B = pl->nbuf;
    /* the body waited for all but its own group: the previous iteration's stage is read. It is
       handed back only where the producer fills it again (iteration iter + (B - 1) steps is in
       the loop): in a cluster, no arrival reaches the other block after its last wait for one,
       when its loop may be over and the barrier's memory reused. */
    int64_t step = pl->loop->step ? pl->loop->step->ival : 1;
    int later = ir_setp(f, CMP_NE, PT_S32, R(pl->iter), pl->lo);
    int refill = ir_bin(f, OP_ADD, PT_S32, R(pl->iter), IMM((B - 1) * step));
    int again = ir_setp(f, CMP_LT, PT_S32, R(refill), R(pl->hi));
    int wrap = ir_setp(f, CMP_EQ, PT_U32, R(pl->stage), IMM(0));
    int back = ir_bin(f, OP_SUB, PT_U32, R(pl->stage), IMM(1));
    int prev = ir_tern(f, OP_SELP, PT_U32, IMM(B - 1), R(back), R(wrap));
    int go = ir_bin(f, OP_BAND, PT_PRED, R(later), R(pl->lane0));
    go = ir_bin(f, OP_BAND, PT_PRED, R(go), R(again));
    int bar = pipe_array_get(f, pl->empty, R(prev));
    Ins *in = emit_ins(f, OP_MBARRIVE, PT_B64);
    in->src[0] = R(bar);
    in->nsrc = 1;
    in->guard = go;
    if (pl->cluster) {
        int there = ir_bin(f, OP_MAPA, PT_U32, R(bar), R(pl->partner));
        in = emit_ins(f, OP_MBARRIVEC, PT_B64);
        in->src[0] = R(there);
        in->nsrc = 1;
        in->guard = go;
    }
}

/* After the loop, in a cluster whose blocks share copies: a block must not leave, nor reuse the
 * loop's shared memory, while copies it issued may still be landing in the other block, or the
 * other's arrivals may still reach its barriers. Each block's thread 0, past its last stage's
 * wait (every copy into this block has landed), says so on the other's `done` barrier; then
 * every consumer waits for the other's word. The other's arrivals on the empty barriers all
 * came before this block's last stages were filled (ws_release). (A cluster barrier at the
 * kernel's end would do, but raised an illegal instruction on an H200 there.) */
void ws_finish(Lower *c, const PipeLoop *pl)
{
    Func *f = c->f;
    if (!pl->cluster)
        return;
    f->cur_what = "cluster's done barrier";
    int bar = pipe_array_get(f, pl->done, IMM(0));
    int there = ir_bin(f, OP_MAPA, PT_U32, R(bar), R(pl->partner));
    int go = ir_bin(f, OP_BAND, PT_PRED, R(pl->shares), R(pl->leader));
    Ins *in = emit_ins(f, OP_MBARRIVEC, PT_B64);
    in->src[0] = R(there);
    in->nsrc = 1;
    in->guard = go;
    int skip = new_label(f);
    ir_bra(f, skip, pl->shares, true);
    tma_wait(c, bar, ir_mov(f, PT_U32, IMM(0)));
    ir_label(f, skip);
    f->cur_what = "temporary";
}
