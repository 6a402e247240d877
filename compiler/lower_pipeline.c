/* lower_pipeline.c: `for ... pipeline(S)`: S-stage software pipelining of the loop's
 * global -> shared traffic.
 *
 * The matmul operands of the body that are tensor windows move with cp.async into S stage buffers
 * allocated contiguously; the loads for iteration j + S - 1 are issued while iteration j computes.
 * Completion is tracked with cp.async groups, one per iteration, not mbarriers: every thread waits
 * for its own copies (cp.async.wait_group S-2) and one block barrier then makes all copies
 * visible and, in the same step, tells every thread that the stage about to be overwritten is no
 * longer read. One barrier per iteration, and no barrier array to keep. It sits at the top of the
 * body, or before the last k step of a body that is one tensor-core matmul (pipe_take_barrier).
 *
 * The stage buffers' addresses are a register tensor indexed by the run-time stage counter;
 * const_reg_elim turns each read into base + stage * stride. */
#include <stdlib.h>
#include <string.h>
#include "lower.h"

/* Symbols declared anywhere inside s. */
static void declared_in(Stmt *s, Sym **out, int *n, int cap)
{
    if (!s)
        return;
    if ((s->kind == S_LET || s->kind == S_VAR || s->kind == S_FOR) && s->sym && *n < cap)
        out[(*n)++] = s->sym;
    if (s->kind == S_BLOCK)
        for (int i = 0; i < s->nbody; i++)
            declared_in(s->body[i], out, n, cap);
    if (s->kind == S_FOR || s->kind == S_IF) {
        declared_in(s->then, out, n, cap);
        declared_in(s->els, out, n, cap);
    }
}

/* Does e use only the loop variable and values that do not change inside the loop? */
static bool invariant_but_loop_var(Expr *e, Sym **inner, int ninner)
{
    if (!e)
        return true;
    if (e->kind == E_NAME) {
        for (int i = 0; i < ninner; i++)
            if (inner[i] == e->sym)
                return false;
        /* a var assigned in the loop would need its future value: vars are never invariant */
        return e->sym->kind != SYM_VAR;
    }
    if (e->kind == E_INDEX || e->kind == E_CALL)
        return false;
    return invariant_but_loop_var(e->a, inner, ninner) && invariant_but_loop_var(e->b, inner, ninner);
}

static bool pipelinable_window(Expr *x, Sym **inner, int ninner)
{
    if (x->kind != E_INDEX || x->shape.rank != 2)
        return false;
    for (int i = 0; i < x->nidx; i++)
        if (!invariant_but_loop_var(x->idx[i].start, inner, ninner))
            return false;
    return true;
}

static void set_loop_value(Lower *c, Stmt *loop, int reg)
{
    SymInfo *si = loop->sym->lower;
    si->val = tile_splat(c, TY_I32, layout_scalar(c->threads), R(reg));
}

/* Element idx of register tensor array, in a new register. */
static int array_get(Func *f, int array, Opnd idx)
{
    int r = new_reg(f, RC_R);
    Ins *in = emit_ins(f, OP_ARRGET, PT_U32);
    in->dst[0] = r;
    in->ndst = 1;
    in->src[0] = idx;
    in->nsrc = 1;
    in->array = array;
    return r;
}

/* Issues the copies of every pipelined operand for the iteration whose loop value is in v, into
 * the stage whose index is in stage (a register) or the constant stage_imm. */
static void issue_copies(Lower *c, Stmt *loop, PipeOperand *ops, int nops, int v, int hi, Opnd stage)
{
    Func *f = c->f;
    int valid = ir_setp(f, CMP_LT, PT_S32, R(v), R(hi));
    set_loop_value(c, loop, v);
    for (int i = 0; i < nops; i++) {
        Opnd idx = stage.kind == O_REG ? stage : R(ir_mov(f, PT_U32, stage));   /* before the read */
        int base = array_get(f, ops[i].array, idx);
        if (ops[i].tmap >= 0)
            tma_issue(c, &ops[i], base, array_get(f, ops[i].bars, idx), valid);
        else
            copy_window_async(c, ops[i].operand, base, ops[i].pitch, ops[i].swz, valid);
    }
    emit_ins(f, OP_CPCOMMIT, PT_B32);
}

int pipe_buffer(Lower *c, Expr *operand, Sym *var)
{
    for (int i = 0; i < c->npipe; i++) {
        PipeOperand *p = &c->pipe[i];
        if ((operand && p->operand == operand && !p->var) || (var && p->var == var))
            return array_get(c->f, p->array, R(c->pipe_stage));
    }
    return -1;
}

static void cp_wait(Func *f, int n) { emit_ins(f, OP_CPWAIT, PT_B32)->inflight = n; }

/* Moving the barrier. At the top of the body the barrier makes the first fragment loads of every
 * iteration wait for it, and the first mma for them. A body that is one tensor-core matmul takes
 * the barrier instead (lower_mma.c) and puts it before its last k step: the last step's fragments
 * are in registers by then, so every thread is done reading the stage, and the next stage's first
 * fragments load behind it while the last step's mma run. The next iteration starts with mma.
 * Waiting there for iteration j + 1's copies counts the same groups as waiting at the top of
 * iteration j + 1: this iteration's copies were committed before it. */
bool pipe_take_barrier(Lower *c)
{
    bool pending = c->pipe_bar_pending;
    c->pipe_bar_pending = false;
    return pending;
}

static bool slab(int swz) { return swz == SWZ_SLAB || swz == SWZ_SLAB_WG; }

/* The A of a swapped tf32 wgmma: an f32 window in a slab, read by the tensor cores as tf32. */
static bool tf32_slab(const PipeOperand *p) { return p->swz == SWZ_SLAB && p->type == TY_F32 && !p->var; }

/* The stage's copies done (n groups may stay in flight, and the TMA copies' phase complete)
 * and published to the block: the tensor cores' reads of wgmma go through the async proxy, which
 * sees the cp.async copies' writes (and stores) only after a proxy fence. An f32 tile the swapped
 * tf32 wgmma reads from shared memory (lower_mma_swap.c) that cp.async brought is rounded in
 * place first, each piece by the thread that copied it: the tensor cores would truncate it. (TMA
 * rounds on the copy: lower_tma.c.) */
static void publish_stage(Lower *c, int n)
{
    cp_wait(c->f, n);
    for (int i = 0; i < c->npipe; i++) {
        PipeOperand *p = &c->pipe[i];
        if (p->tmap >= 0)
            tma_wait(c, array_get(c->f, p->bars, R(c->pipe_stage)), c->pipe_phase);
        else if (tf32_slab(p))
            round_window_tf32(c, p->operand, pipe_buffer(c, p->operand, NULL), p->pitch, p->swz);
    }
    if (c->pipe_async_proxy)
        emit_ins(c->f, OP_FENCEPROXY, PT_B32);
    if (c->pipe_inflight && c->pipe_inflight->n) {
        /* the previous iteration's wgmma done before the barrier lets its stage be overwritten */
        emit_ins(c->f, OP_WGWAIT, PT_B32)->inflight = 0;
        wg_hold(c->f, c->pipe_inflight->regs, c->pipe_inflight->n);
    }
    ir_bar(c->f);
}

void pipe_barrier(Lower *c)
{
    if (c->pipe_S >= 2)
        publish_stage(c, c->pipe_S - 2);
    else
        ir_bar(c->f);
}

int pipe_first_iteration(Lower *c)
{
    int p = ir_setp(c->f, CMP_EQ, PT_S32, R(c->pipe_iter), c->pipe_lo);
    c->f->regs.v[p].first_iter = true;
    return p;
}

int pipe_next_stage_delta(Lower *c, int stage_bytes)
{
    Func *f = c->f;
    int last = ir_setp(f, CMP_EQ, PT_U32, R(c->pipe_stage), IMM(c->pipe_S - 1));
    return ir_tern(f, OP_SELP, PT_S32, IMM(-(int64_t)(c->pipe_S - 1) * stage_bytes), IMM(stage_bytes), R(last));
}

/* The next stage's copies of a loop iteration, waiting for a place in the body. */
typedef struct {
    Stmt *loop;
    PipeOperand *ops;
    int nops, ahead, hi;
    Opnd stage;
} PendingCopies;

void pipe_issue_pending(Lower *c)
{
    PendingCopies *p = c->pipe_pending;
    if (!p)
        return;
    c->pipe_pending = NULL;
    Tile saved = ((SymInfo *)p->loop->sym->lower)->val;
    issue_copies(c, p->loop, p->ops, p->nops, p->ahead, p->hi, p->stage);
    ((SymInfo *)p->loop->sym->lower)->val = saved;
}

/* cp.async moves 4, 8 or 16 bytes. A 16-bit window whose rows are not known to start 4-byte
 * aligned (an odd row length, say) would need 2-byte pieces: it is left out of the pipeline, and
 * its consumer loads it in each iteration. */
static bool async_copyable(Lower *c, PipeOperand *p, int S)
{
    int piece = async_piece_bytes(c, p->operand, p->pitch);
    if (piece >= 4)
        return true;
    warning_at(p->operand->loc, "pipeline(%d): '%s' cannot move by cp.async, its rows not known to start "
               "4-byte aligned; it is loaded in each iteration instead (assume its row length a multiple of %d)",
               S, p->operand->sym->name, 4 / type_size(p->type));
    return false;
}



/* A matmul operand's stage buffer: swizzled tiles are unpadded; wgmma's slabs start 1024-byte
 * aligned (the swizzle is of address bits), so their stages are whole multiples of 1024 bytes. */
static void set_stage_layout(Lower *c, PipeOperand *p, int swz, bool mma)
{
    int rows = (int)p->operand->shape.dim[0], cols = (int)p->operand->shape.dim[1], align = slab(swz) ? 1024 : 128;
    p->swz = swz;
    p->pitch = swz ? cols : matmul_pitch(c, p->type, cols, mma);
    p->bytes = (rows * p->pitch * type_size(p->type) + align - 1) & ~(align - 1);
}

bool lower_pipelined_loop(Lower *c, Stmt *s)
{
    Func *f = c->f;
    int S = s->pipeline;
    Sym *inner[256];
    int ninner = 0;
    declared_in(s->then, inner, &ninner, 256);
    /* the loop variable's facts (its step) for the alignment questions below */
    if (!s->sym->lower)
        s->sym->lower = arena_alloc(c->a, sizeof(SymInfo));
    ((SymInfo *)s->sym->lower)->loop = s;
    /* the body's matmul operands that are windows of the loop variable */
    PipeOperand ops[16];
    int nops = 0;
    bool defer = false;    /* a tensor-core matmul will issue the next stage's copies */
    Stmt *body = s->then;
    for (int i = 0; i < body->nbody && nops < 15; i++) {
        Stmt *st = body->body[i];
        /* shared = window: the copy itself moves into the pipeline */
        if (st->kind == S_ASSIGN && st->op == '=' && st->lhs->kind == E_NAME && st->lhs->sym->is_shared &&
            st->rhs->type == st->lhs->sym->type && pipelinable_window(st->rhs, inner, ninner) &&
            st->rhs->shape.dim[0] == st->lhs->sym->shape.dim[0] && st->rhs->shape.dim[1] == st->lhs->sym->shape.dim[1]) {
            SymInfo *vi = st->lhs->sym->lower;
            PipeOperand *p = &ops[nops++];
            p->operand = st->rhs;
            p->var = st->lhs->sym;
            p->type = st->rhs->type;
            p->pitch = vi->smem_ld;
            p->swz = SWZ_NONE;       /* the var's own layout: its other readers use it */
            p->tmap = p->bars = p->map_addr = -1;
            p->bytes = ((int)st->rhs->shape.dim[0] * p->pitch * type_size(p->type) + 127) & ~127;
            if (!async_copyable(c, p, S))
                nops--;
            continue;
        }
        Expr *mm = st->kind == S_ASSIGN || st->kind == S_LET || st->kind == S_VAR ? (st->kind == S_ASSIGN ? st->rhs : st->init) : NULL;
        if (!mm || mm->kind != E_BINARY || mm->op != OP_MATMUL)
            continue;
        int M = (int)mm->shape.dim[0], N = (int)mm->shape.dim[1], K = (int)mm->a->shape.dim[1];
        bool mma = matmul_uses_mma(c, mm->a, mm->b, M, N, K);
        defer |= mma;
        Expr *side[2] = { mm->a, mm->b };
        PipeOperand cand[2];
        bool have[2] = { false, false };
        for (int j = 0; j < 2; j++) {
            bool tf32;
            Expr *x = matmul_operand(side[j], &tf32);
            if (!pipelinable_window(x, inner, ninner))
                continue;
            PipeOperand *p = &cand[j];
            p->operand = x;
            p->var = NULL;
            p->type = x->type;
            p->tmap = p->bars = p->map_addr = -1;
            set_stage_layout(c, p, mma ? mma_swizzle_kind(c, x->type, j, M, N, K) : SWZ_NONE, mma);
            have[j] = async_copyable(c, p, S);
        }
        /* 16-bit wgmma reads both operands in its layouts or neither: alone, one takes
           mma.sync's (tf32's swapped wgmma reads only A from shared memory: lower_mma_swap.c) */
        for (int j = 0; j < 2; j++)
            if (have[j] && !have[1 - j] && slab(cand[j].swz) && cand[j].type != TY_F32) {
                set_stage_layout(c, &cand[j], mma_swizzle_kind_alone(c, cand[j].type, j, M, N, K), mma);
                have[j] = async_copyable(c, &cand[j], S);
            }
        for (int j = 0; j < 2; j++)
            if (have[j])
                ops[nops++] = cand[j];
    }
    if (!nops) {
        warning_at(s->loc, "pipeline(%d): the loop moves no tensor window into shared memory or a matmul; nothing to pipeline", S);
        return false;
    }
    f->cur_line = s->loc.line;
    /* the tf32 slabs TMA can bring (lower_tma.c) */
    bool tma = tma_choose(c, ops, nops);
    /* stage buffers, contiguous, and their addresses as register tensors */
    bool async_proxy = false;
    for (int i = 0; i < nops; i++) {
        async_proxy |= slab(ops[i].swz) && ops[i].tmap < 0;
        int off = smem_alloc_aligned(c, S * ops[i].bytes, slab(ops[i].swz) ? 1024 : 128);
        const char *nm = ops[i].var ? ops[i].var->name : ops[i].operand->sym->name;
        SmemBuf *sb = &f->smem_bufs.v[f->smem_bufs.n - 1];
        sb->name = arena_printf(c->a, "the stage buffers of '%s'", nm);
        sb->stage_bytes = ops[i].bytes;
        RegArray arr = { arena_printf(c->a, "%s_stages", nm), S, RC_R, s->loc.line, false, false };
        vec_push(&f->arrays, arr);
        ops[i].array = f->arrays.n - 1;
        f->cur_what = "stage buffer address";
        for (int st = 0; st < S; st++) {
            int r = smem_base_reg(c, off + st * ops[i].bytes);
            Ins *in = emit_ins(f, OP_ARRSET, PT_U32);
            in->src[0] = R(r);
            in->nsrc = 1;
            in->off = st;
            in->array = ops[i].array;
        }
    }
    int leader_saved = c->pipe_leader, phase = tma ? tma_setup(c, ops, nops, S) : -1;
    f->cur_what = "temporary";
    Tile lo = lower_expr(c, s->lo, NULL), hi = lower_expr(c, s->hi, NULL);
    int64_t step = s->step ? s->step->ival : 1;
    int hreg = opnd_reg(c, hi.v[0], PT_S32);
    int i = ir_mov(f, PT_S32, lo.v[0]);
    f->regs.v[i].what = s->name;
    /* a body of one tensor-core matmul places the barrier itself (pipe_take_barrier) */
    bool bar_to_mma = S >= 2 && defer && body->nbody == 1;
    /* ... and a swapped tf32 wgmma (A in a tf32 slab) keeps its group in flight into the next
       iteration, whose barrier waits for it (lower_mma_swap.c, "In flight") */
    bool inflight = false;
    for (int k = 0; k < nops; k++)
        inflight |= bar_to_mma && tf32_slab(&ops[k]);
    /* prologue: iterations 0 .. S-2 */
    for (int st = 0; st + 1 < S; st++) {
        int v = st ? ir_bin(f, OP_ADD, PT_S32, R(i), IMM(st * step)) : ir_mov(f, PT_S32, R(i));
        issue_copies(c, s, ops, nops, v, hreg, IMM(st));
    }
    int stage = ir_mov(f, PT_U32, IMM(0));
    f->regs.v[stage].what = "stage";
    f->regs.v[stage].stage_S = S;
    int head = new_label(f), exit = new_label(f);
    ir_label(f, head);
    int p = ir_setp(f, CMP_GE, PT_S32, R(i), R(hreg));
    ir_bra(f, exit, p, false);
    bool proxy_saved = c->pipe_async_proxy;
    c->pipe_async_proxy = async_proxy;
    /* the body's view of the pipeline, which the barrier's tf32 rounding (publish_stage) reads
       too: the current stage of this iteration's windows */
    PipeOperand *saved = c->pipe;
    int nsaved = c->npipe, ssaved = c->pipe_stage, Ssaved = c->pipe_S, isaved = c->pipe_iter;
    Opnd losaved = c->pipe_lo;
    int phsaved = c->pipe_phase;
    WgInflight *wsaved = c->pipe_inflight;
    WgInflight held = { 0 };
    c->pipe = ops;
    c->npipe = nops;
    c->pipe_stage = stage;
    c->pipe_S = S;
    c->pipe_iter = i;
    c->pipe_lo = lo.v[0];
    c->pipe_phase = phase;
    c->pipe_inflight = inflight ? &held : NULL;
    set_loop_value(c, s, i);
    if (!bar_to_mma && S >= 2)
        publish_stage(c, S - 2);
    else if (!bar_to_mma)
        ir_bar(f);
    /* iteration j + S - 1 goes into stage (stage + S - 1) mod S */
    int ahead = ir_bin(f, OP_ADD, PT_S32, R(i), IMM((S - 1) * step));
    int w = stage;
    if (S > 1) {
        int w1 = ir_bin(f, OP_ADD, PT_U32, R(stage), IMM(S - 1));
        int wrap = ir_setp(f, CMP_GE, PT_U32, R(w1), IMM(S));
        int w2 = ir_bin(f, OP_SUB, PT_U32, R(w1), IMM(S));
        w = ir_tern(f, OP_SELP, PT_U32, R(w2), R(w1), R(wrap));
    }
    /* With S >= 2 the stage written (read by the previous iteration, which every thread has
       finished at the barrier) is not the one this body reads, so the copies may wait until the
       body has its first operands in registers: ptxas keeps cp.async and shared loads in program
       order, and copies issued first would hold back the body's first mma. */
    PendingCopies pending = { s, ops, nops, ahead, hreg, R(w) };
    void *psaved = c->pipe_pending;
    c->pipe_pending = NULL;
    if (S == 1 || !defer) {
        issue_copies(c, s, ops, nops, ahead, hreg, R(w));
        if (S == 1)
            publish_stage(c, 0);
    } else {
        c->pipe_pending = &pending;
    }
    set_loop_value(c, s, i);
    c->pipe_bar_pending = bar_to_mma;
    for (int b = 0; b < body->nbody; b++)
        lower_stmt(c, body->body[b]);
    if (c->pipe_bar_pending && !c->too_big)   /* (a body cut short by a limit never takes it) */
        die("pipeline: the loop's barrier was left to a matmul that did not place it");
    c->pipe = saved;
    c->npipe = nsaved;
    c->pipe_stage = ssaved;
    c->pipe_S = Ssaved;
    c->pipe_iter = isaved;
    c->pipe_lo = losaved;
    c->pipe_phase = phsaved;
    c->pipe_inflight = wsaved;
    pipe_issue_pending(c);
    c->pipe_async_proxy = proxy_saved;
    c->pipe_pending = psaved;
    f->cur_line = s->loc.line;
    /* next stage, wrapping */
    int n1 = ir_bin(f, OP_ADD, PT_U32, R(stage), IMM(1));
    int wr = ir_setp(f, CMP_GE, PT_U32, R(n1), IMM(S));
    Ins *in = emit_ins(f, OP_SELP, PT_U32);
    in->dst[0] = stage;
    in->ndst = 1;
    in->src[0] = IMM(0);
    in->src[1] = R(n1);
    in->src[2] = R(wr);
    in->nsrc = 3;
    if (phase >= 0) {
        /* a wrap starts the stages' next phase */
        int flip = ir_tern(f, OP_SELP, PT_U32, IMM(1), IMM(0), R(wr));
        ir_bin_to(f, OP_BXOR, PT_B32, phase, R(phase), R(flip));
    }
    ir_bin_to(f, OP_ADD, PT_S32, i, R(i), IMM(step));
    ir_bra(f, head, -1, false);
    ir_label(f, exit);
    if (inflight) {
        /* the last iterations' wgmma, before anything reads the accumulators */
        emit_ins(f, OP_WGWAIT, PT_B32)->inflight = 0;
        wg_hold(f, held.regs, held.n);
    }
    /* copies issued for iterations past the end were predicated off; drain anyway so shared
       memory is quiet for whatever follows */
    cp_wait(f, 0);
    ir_bar(f);
    c->pipe_leader = leader_saved;
    c->scratch_read = false;
    return true;
}
