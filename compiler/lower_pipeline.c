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

/* Does e mention s? */
bool pipe_uses_sym(Expr *e, Sym *s)
{
    if (!e)
        return false;
    if (e->kind == E_NAME)
        return e->sym == s;
    if (e->kind == E_INDEX) {
        for (int i = 0; i < e->nidx; i++)
            if (pipe_uses_sym(e->idx[i].start, s))
                return true;
        return false;
    }
    if (e->kind == E_CALL) {
        for (int i = 0; i < e->nargs; i++)
            if (pipe_uses_sym(e->args[i], s))
                return true;
        return false;
    }
    return pipe_uses_sym(e->a, s) || pipe_uses_sym(e->b, s);
}

/* A window the loop can copy ahead: its starts use the loop variable and values fixed before
 * the loop; a gather's rows, a let of the loop's (matmul_gather_copies), fixed too -- each row is
 * a contiguous piece, copied as a window's rows are. */
static bool pipelinable_window(Expr *x, Sym **inner, int ninner)
{
    int gd = index_gather_dim(x);
    if (x->kind != E_INDEX || x->shape.rank != 2 || (gd >= 0 && !matmul_gather_copies(x)))
        return false;
    for (int i = 0; i < x->nidx; i++)
        if (!invariant_but_loop_var(x->idx[i].start, inner, ninner))
            return false;
    return true;
}

void pipe_set_loop_value(Lower *c, Stmt *loop, int reg)
{
    SymInfo *si = loop->sym->lower;
    si->val = tile_splat(c, TY_I32, layout_scalar(c->threads), R(reg));
}

/* Element idx of register tensor array, in a new register. */
int pipe_array_get(Func *f, int array, Opnd idx)
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

/* Issues the copies of the operands of loop pl that `which` names (NULL: all) for the iteration
 * whose loop value is in v, into the stage whose index is in stage (a register) or a constant. */
static void issue_some(Lower *c, const PipeLoop *pl, int v, Opnd stage, const bool *which)
{
    Func *f = c->f;
    int valid = ir_setp(f, CMP_LT, PT_S32, R(v), R(pl->hi));
    pipe_set_loop_value(c, pl->loop, v);
    for (int i = 0; i < pl->nops; i++) {
        PipeOperand *op = &pl->ops[i];
        if (op->held || (which && !which[i]))
            continue;      /* held: copied once, before the loop */
        Opnd idx = stage.kind == O_REG ? stage : R(ir_mov(f, PT_U32, stage));   /* before the read */
        int base = pipe_array_get(f, op->array, idx);
        if (op->tmap >= 0)
            tma_issue(c, pl, op, base, pipe_array_get(f, op->bars, idx), valid);
        else
            copy_window_async(c, op->window, base, op->pitch, op->swz, valid);
    }
    emit_ins(f, OP_CPCOMMIT, PT_B32);
}

void pipe_issue_copies(Lower *c, const PipeLoop *pl, int v, Opnd stage)
{
    issue_some(c, pl, v, stage, NULL);
}

PipeOperand *pipe_find(Lower *c, Expr *operand, Sym *var)
{
    PipeLoop *pl = c->pipe;
    for (int i = 0; pl && i < pl->nops; i++) {
        PipeOperand *p = &pl->ops[i];
        if ((operand && p->operand == operand && !p->var) || (var && p->var == var))
            return p;
    }
    for (int i = 0; pl && operand && i < pl->nalias; i++)
        if (pl->alias[i].operand == operand) {
            /* the buffers, layout and copies of the operand it shares, read as itself */
            pl->seen_as = pl->ops[pl->alias[i].of];
            pl->seen_as.operand = operand;
            pl->seen_as.trans = pl->alias[i].trans;
            pl->seen_as.plan = pl->alias[i].plan;
            pl->seen_as.side = pl->alias[i].side;
            return &pl->seen_as;
        }
    return NULL;
}

/* The same value wherever it is evaluated in the loop body: the subscripts of a window the loop
 * may copy are invariant but for the loop variable (pipelinable_window), so equal trees are equal
 * values. Calls and anything unlisted compare unequal: no sharing is always correct. */
static bool same_value(const Expr *a, const Expr *b)
{
    if (!a || !b)
        return a == b;
    if (a->kind != b->kind || a->type != b->type)
        return false;
    switch (a->kind) {
    case E_INT: case E_BOOL: case E_BLOCK:
        return a->ival == b->ival;
    case E_FLOAT:
        return a->fval == b->fval;
    case E_NAME:
        return a->sym && a->sym == b->sym;
    case E_UNARY:
        return a->op == b->op && same_value(a->a, b->a);
    case E_BINARY:
        return a->op == b->op && same_value(a->a, b->a) && same_value(a->b, b->b);
    case E_CAST:
        return a->to == b->to && same_value(a->a, b->a);
    case E_INDEX:
        if (a->sym != b->sym || a->nidx != b->nidx || a->fill || b->fill)
            return false;
        for (int i = 0; i < a->nidx; i++)
            if (a->idx[i].width != b->idx[i].width || a->idx[i].gather || b->idx[i].gather ||
                !same_value(a->idx[i].start, b->idx[i].start))
                return false;
        return true;
    default:
        return false;
    }
}

static bool rounds_in_place(const PipeOperand *p);

/* The operand among ops that copies what p would, into the same layout, so that p may read its
 * stages instead of a copy of its own (attention's backward reads K as K^T in Q K^T and as it
 * lies in dS K: one copy, not two). Not a shared var's fill, nor a tile rewritten in its buffer
 * (rounded to tf32 or turned K-major there), nor one the two paths fence differently. -1: none. */
static int same_window(const PipeOperand *ops, int nops, const PipeOperand *p)
{
    for (int k = 0; k < nops; k++) {
        const PipeOperand *o = &ops[k];
        if (o->var || o->type != p->type || o->swz != p->swz || o->pitch != p->pitch || o->bytes != p->bytes ||
            o->held != p->held || o->xpose || p->xpose || rounds_in_place(o) || rounds_in_place(p) ||
            matmul_side(o->plan->row->proxy, o->side) != matmul_side(p->plan->row->proxy, p->side) ||
            !same_value(o->window, p->window))
            continue;
        return k;
    }
    return -1;
}

bool pipe_fills(Lower *c, Sym *var, Expr *window)
{
    bool piped = false;
    for (int i = 0; c->pipe && i < c->pipe->nops; i++)
        piped |= c->pipe->ops[i].var == var && c->pipe->ops[i].operand == window;
    return piped;
}

int pipe_buffer(Lower *c, Expr *operand, Sym *var)
{
    PipeOperand *p = pipe_find(c, operand, var);
    if (p && p->held)
        return ir_mov(c->f, PT_U32, R(p->held_base));
    return p ? pipe_array_get(c->f, p->array, R(c->pipe->stage)) : -1;
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
    bool pending = c->pipe && c->pipe->bar_pending;
    if (c->pipe)
        c->pipe->bar_pending = false;
    return pending;
}

/* wgmma's slabs are swizzled by address bits: they start 1024-byte aligned */
static bool slab(int swz) { return swz_slab_bytes(swz) > 0; }

/* An operand the plan's path reads as tf32 from shared memory, which cp.async brings as f32. */
static bool rounds_in_place(const PipeOperand *p)
{
    return p->plan && matmul_side(p->plan->row->round_tf32, p->side);
}

/* The stage's copies done (n groups may stay in flight, and the TMA copies' phase complete)
 * and published to the block: the tensor cores' reads of wgmma go through the async proxy, which
 * sees the cp.async copies' writes (and stores) only after a proxy fence. An f32 tile the swapped
 * tf32 wgmma reads from shared memory (lower_mma_swap.c) that cp.async brought is rounded in
 * place first, each piece by the thread that copied it: the tensor cores would truncate it. (TMA
 * rounds on the copy: lower_tma.c.) */
static void publish_stage(Lower *c, int n)
{
    PipeLoop *pl = c->pipe;
    if (pl->ws) {
        /* a producer warp's copies (all TMA): each consumer waits for the stage's bytes, and the
           empty barriers, not a block barrier, order the stage's reuse (lower_warpspec.c) */
        for (int i = 0; i < pl->nops; i++)
            tma_wait(c, pipe_array_get(c->f, pl->ops[i].bars, R(pl->stage)), pl->phase);
        /* the swapped tf32 product's last group reads the fragment registers this iteration's
           loads overwrite (lower_mma_swap.c): done first (which also finishes its stage) */
        if (pl->inflight && pl->inflight->n) {
            emit_ins(c->f, OP_WGWAIT, PT_B32)->inflight = 0;
            wg_hold(c->f, pl->inflight->regs, pl->inflight->n);
        }
        return;
    }
    cp_wait(c->f, n);
    for (int i = 0; i < pl->nops; i++) {
        PipeOperand *p = &pl->ops[i];
        if (p->tmap >= 0)
            tma_wait(c, pipe_array_get(c->f, p->bars, R(pl->stage)), pl->phase);
        else if (rounds_in_place(p))
            round_window_tf32(c, p->window, pipe_buffer(c, p->operand, NULL), p->pitch, p->swz);
        else if (p->xpose)
            xpose_stage_tf32(c, p->window->shape, pipe_buffer(c, p->operand, NULL));
    }
    if (pl->async_proxy)
        emit_ins(c->f, OP_FENCEPROXY, PT_B32);
    if (pl->inflight && pl->inflight->n) {
        /* the previous iteration's wgmma done before the barrier lets its stage be overwritten */
        emit_ins(c->f, OP_WGWAIT, PT_B32)->inflight = 0;
        wg_hold(c->f, pl->inflight->regs, pl->inflight->n);
    }
    ir_bar(c->f);
}

void pipe_barrier(Lower *c)
{
    if (c->pipe->S >= 2)
        publish_stage(c, c->pipe->S - 2);
    else
        ir_bar(c->f);
}

void pipe_advance(Func *f, int stage, int phase, int B)
{
    int n1 = ir_bin(f, OP_ADD, PT_U32, R(stage), IMM(1));
    int wr = ir_setp(f, CMP_GE, PT_U32, R(n1), IMM(B));
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
}

int pipe_first_iteration(Lower *c)
{
    int p = ir_setp(c->f, CMP_EQ, PT_S32, R(c->pipe->iter), c->pipe->lo);
    c->f->regs.v[p].first_iter = true;
    return p;
}

int pipe_next_stage_delta(Lower *c, int stage_bytes)
{
    Func *f = c->f;
    int B = c->pipe->nbuf;
    int last = ir_setp(f, CMP_EQ, PT_U32, R(c->pipe->stage), IMM(B - 1));
    return ir_tern(f, OP_SELP, PT_S32, IMM(-(int64_t)(B - 1) * stage_bytes), IMM(stage_bytes), R(last));
}

/* The next stage's copies of loop pl, which waited for a place in the body. */
static void issue_pending(Lower *c, PipeLoop *pl)
{
    if (!pl->copies_pending)
        return;
    pl->copies_pending = false;
    Tile saved = ((SymInfo *)pl->loop->sym->lower)->val;
    c->f->cur_ahead = true;
    pipe_issue_copies(c, pl, pl->ahead, pl->write);
    c->f->cur_ahead = false;
    ((SymInfo *)pl->loop->sym->lower)->val = saved;
}

void pipe_issue_pending(Lower *c)
{
    if (c->pipe)
        issue_pending(c, c->pipe);
}

/* cp.async moves 4, 8 or 16 bytes. A 16-bit window whose rows are not known to start 4-byte
 * aligned (an odd row length, say) would need 2-byte pieces: it is left out of the pipeline, and
 * its consumer loads it in each iteration. */
static bool async_copyable(Lower *c, PipeOperand *p, int S)
{
    int piece = async_piece_bytes(c, p->window, p->pitch);
    if (piece >= 4)
        return true;
    /* the fact that would let it in: the distance between the rows copied (in memory order,
       which for a transposed operand is its columns) a multiple of 16 bytes */
    Expr *w = p->window;
    Sym *t = w->sym;
    int d = -1;
    for (int i = 0; i < w->nidx && d < 0; i++)
        if (w->idx[i].width_expr)
            d = i;
    const char *fact = NULL;
    int n = 16 / type_size(p->type);
    Sym *need[2];
    int nneed = window_row_facts(c, w, n, need);
    if (nneed == 1)
        fact = arena_printf(c->a, "assume(%s %% %d == 0)", need[0]->name, n);
    else if (nneed == 2)
        fact = arena_printf(c->a, "assume(%s %% %d == 0) with assume(%s %% %d == 0)", need[0]->name, n,
                            need[1]->name, n);
    else if (d >= 0 && t->has_default_strides && d == t->rank - 2 && t->dim[t->rank - 1].size)
        fact = arena_printf(c->a, "assume(%s %% %d == 0)", t->dim[t->rank - 1].size->name, n);
    else if (d >= 0 && !t->has_default_strides && t->stride[d].size)
        fact = arena_printf(c->a, "assume(%s %% %d == 0)", t->stride[d].size->name, n);
    /* once per tensor (an unrolled loop lowers the statement once a copy); this warning says it
       for the loads too */
    if (info(c, t)->warned_align)
        return false;
    info(c, t)->warned_align = true;
    /* the rows' distance may be known to be fine while the window's first element is not: a
       start like `n0 + dx` puts every row off the 16-byte grid, which no assume mends */
    int last = -1;
    for (int i = 0; i < w->nidx; i++)
        if (w->idx[i].width_expr)
            last = i;
    if (last >= 0 && known_multiple(c, w->idx[last].start) % 2) {
        warning_at(p->operand->loc, "pipeline(%d): '%s' cannot move by cp.async: its window starts at an "
                   "element not known to be 4-byte aligned (the start of its last dimension is not known "
                   "to be even); it is loaded in each iteration instead (a start that is a multiple of %d "
                   "lets it move in 16-byte pieces)", S, p->operand->sym->name, n);
        return false;
    }
    if (fact && c->versioning)
        warning_at(p->operand->loc, "pipeline(%d): '%s' moves by cp.async only where its rows start 16-byte "
                   "aligned: the loop is compiled twice, and a launch whose sizes do not give that loads "
                   "'%s' in each iteration (%s keeps only the copying version)", S, p->operand->sym->name,
                   p->operand->sym->name, fact);
    else if (fact)
        warning_at(p->operand->loc, "pipeline(%d): '%s' cannot move by cp.async, its rows not known to "
                   "start 4-byte aligned; it is loaded in each iteration instead (%s lets it move in "
                   "16-byte pieces)", S, p->operand->sym->name, fact);
    else
        warning_at(p->operand->loc, "pipeline(%d): '%s' cannot move by cp.async, its rows not known to "
                   "start 4-byte aligned; it is loaded in each iteration instead (its row stride a "
                   "multiple of %d elements lets it move in 16-byte pieces)", S, p->operand->sym->name, n);
    return false;
}



/* A matmul operand's stage buffer: swizzled tiles are unpadded; wgmma's slabs start 1024-byte
 * aligned (the swizzle is of address bits), so their stages are whole multiples of 1024 bytes. */
static void set_stage_layout(Lower *c, PipeOperand *p)
{
    int swz = matmul_swizzle(c, p->plan, p->side, p->type);
    int rows = (int)p->window->shape.dim[0], cols = (int)p->window->shape.dim[1], align = slab(swz) ? 1024 : 128;
    /* turned around in 4-byte pieces: a gathered window's rows are hoisted in the layout of its
       16-byte ones (gather_hoist) */
    if (swz == SWZ_TURN && (type_size(p->type) != 4 || index_gather_dim(p->window) >= 0))
        swz = SWZ_NONE;
    p->swz = swz;
    if (swz == SWZ_TURN) {
        /* cols rows of rows elements, 16 bytes apart more than they need */
        p->pitch = rows + 4;
        p->bytes = (cols * p->pitch * 4 + align - 1) & ~(align - 1);
        p->xpose = false;
        return;
    }
    p->pitch = swz ? cols : matmul_stage_pitch(p->plan, p->side, p->type, cols);
    p->bytes = (rows * p->pitch * type_size(p->type) + align - 1) & ~(align - 1);
    /* a transposing copy turns the tile around in place, into wgmma's slabs: 1024-byte aligned.
       (Slabs of their own beside the staging took a block a multiprocessor away: 0.57 of cuBLAS
       against 0.73 in place, tf32 A^T @ B at 4096^3, 128 x 128 x 32 tiles, H100) */
    p->xpose = matmul_side(p->plan->row->xpose, p->side);
    if (p->xpose)
        p->bytes = (p->bytes + 1023) & ~1023;
}

/* One wgmma group in flight across iterations. A body that is one `acc += a @ b` on the wgmma path
 * (both operands in slabs) may leave its group in flight when the next iteration begins, if the
 * copies that iteration issues go to a stage that group does not read: with S + 1 buffers, the
 * copies of iteration j (for j + S - 1) go to stage (j - 2) mod (S + 1), whose readers, iteration
 * j - 2's wgmma, every thread waited for (wgmma.wait_group 1 in iteration j - 1) before the
 * barrier at the top of iteration j. The tensor cores then run iteration j - 1's group while the
 * threads wait at that barrier and issue iteration j's, instead of idling from the wait to the
 * next issue. Taken when the extra buffer fits beside what the kernel has already allocated and a
 * reserve for the scratch of what follows (the epilogue's reductions or layout changes). */
enum { DEEP_RESERVE = 16 * 1024 };

/* The body is one `acc += a @ b` on the wgmma path, both operands in slabs: its group may stay in
 * flight into the next iteration, given a stage it does not read (keeps_group) or a producer
 * warp's empty barriers (lower_warpspec.c). swapped: or on the swapped tf32 path, which a
 * producer may feed (its group waited for at the top of the next iteration: publish_stage). */
static bool one_product_of(Stmt *body, const PipeOperand *ops, int nops, int S, bool swapped)
{
    if (S < 2 || body->nbody != 1)
        return false;
    Stmt *st = body->body[0];
    if (st->kind != S_ASSIGN || st->op != '+' || st->lhs->kind != E_NAME || st->rhs->kind != E_BINARY ||
        st->rhs->op != OP_MATMUL)
        return false;
    for (int i = 0; i < nops; i++)
        if (ops[i].var || !ops[i].plan ||
            (ops[i].plan->row->path != MM_WGMMA && !(swapped && ops[i].plan->row->path == MM_WGMMA_TF32)))
            return false;
    return true;
}

static bool one_product(Stmt *body, const PipeOperand *ops, int nops, int S)
{
    return one_product_of(body, ops, nops, S, false);
}

static bool keeps_group(Lower *c, Stmt *body, const PipeOperand *ops, int nops, int S)
{
    if (!one_product(body, ops, nops, S))
        return false;
    int64_t bytes = c->smem_top, staged = 0;
    for (int i = 0; i < nops; i++) {
        bytes += (ops[i].held ? 1 : S) * (int64_t)ops[i].bytes + 1024 + 8 * (S + 1);
        staged += ops[i].held ? 0 : ops[i].bytes;
    }
    int reserve = c->scratch_size > DEEP_RESERVE ? c->scratch_size : DEEP_RESERVE;
    /* ... and not at the cost of a block per multiprocessor: a 128 x 128 tile's two blocks of
       three stages each ran 17% faster than one block of four (H100, 4096^3 f16) */
    int64_t per_sm = c->target->smem_sm;
    return bytes + staged + reserve <= c->target->smem_block &&
           per_sm / (bytes + staged + 1024) >= per_sm / (bytes + 1024);
}

/* The loop's product keeps its group in flight into the next iteration; an fp8 product's
 * partial sums then live across iterations, zero for the first iteration's add. */
static void keep_group(Lower *c, PipeLoop *pl)
{
    Func *f = c->f;
    pl->wg_keep = 1;
    const MatmulPlan *mp = pl->ops[0].plan;
    if (!wgmma_promotes(mp->type) || pl->promote)
        return;
    pl->promote = true;
    f->cur_what = "fp8 partial sums";
    pl->part = tile_new(c, TY_F32, mp->acc);
    for (int q = 0; q < layout_slots(&mp->acc); q++) {
        Ins *in = emit_ins(f, OP_MOV, PT_F32);
        in->dst[0] = pl->part.v[q].reg;
        in->ndst = 1;
        in->src[0] = FIMM(0);
        in->nsrc = 1;
    }
}

int pipe_windows(Lower *c, Stmt *s, Expr **out, int *rows_mult, int cap)
{
    Sym *inner[256];
    int ninner = 0, n = 0;
    declared_in(s->then, inner, &ninner, 256);
    Stmt *body = s->then;
    for (int i = 0; i < body->nbody; i++) {
        Stmt *st = body->body[i];
        if (st->kind == S_ASSIGN && st->op == '=' && st->lhs->kind == E_NAME && st->lhs->sym->is_shared &&
            pipelinable_window(st->rhs, inner, ninner)) {
            if (n < cap)
                rows_mult[n] = 1, out[n++] = st->rhs;
            continue;
        }
        Expr *mm = st->kind == S_ASSIGN ? st->rhs : st->kind == S_LET || st->kind == S_VAR ? st->init : NULL;
        if (!mm || mm->kind != E_BINARY || mm->op != OP_MATMUL)
            continue;
        MatmulPlan *plan = matmul_plan(c, mm);
        Expr *side[2] = { mm->a, mm->b };
        for (int j = 0; j < 2; j++) {
            bool tf32;
            Expr *x = matmul_operand(side[j], &tf32);
            if (!pipelinable_window(x, inner, ninner) || (plan->trans[j] && !matmul_reads_trans(plan, j)))
                continue;
            if (n < cap) {
                rows_mult[n] = matmul_swizzle(c, plan, j, x->type) == SWZ_SLAB_K8 ? 8 : 1;
                out[n++] = plan->trans[j] ? x->twin : x;
            }
        }
    }
    return n;
}

/* ---- one stage, refilled as soon as it is read
 *
 * Why. pipeline(1) gives each operand one buffer, which the plain schedule fills at the top of
 * every iteration and waits for at once: its copies overlap nothing of their own block, only
 * other blocks' work. Flash attention at head dim 128 has its reason to want one buffer: with
 * two, K and V take 64 KiB and only two blocks fit on a multiprocessor; with one, three do
 * (registers allow three), and the softmax of one block runs beside the products of two others.
 * Here each operand's copy for iteration j + 1 goes out as soon as the last statement of
 * iteration j that reads it is done -- a barrier after it says every thread's reads are over, a
 * wgmma's included (its wait comes first) -- and the wait for it goes just before the first
 * statement that reads it: attention's K then lands during the softmax and the product with V,
 * and V during the next scores and softmax.
 *
 * When. One stage, no producer warp, every operand a matmul's (a shared var's readers are any
 * statement) that no rounding or transposition rewrites after its copy (those run at the top of
 * the iteration, publish_stage). Waits: TMA copies complete on their own mbarrier, which every
 * thread waits for and which makes the bytes visible to it (race_check.c knows); cp.async
 * copies by cp.async.wait_group, leaving in flight only the groups this iteration has committed
 * so far (a group the previous iteration committed after the awaited one, another operand's, is
 * waited for too: early, never too late), then the barrier that publishes them. */

/* The product a top-level statement of a loop body computes, or NULL. */
static Expr *stmt_product(Stmt *st)
{
    Expr *mm = st->kind == S_ASSIGN ? st->rhs : st->kind == S_LET || st->kind == S_VAR ? st->init : NULL;
    return mm && mm->kind == E_BINARY && mm->op == OP_MATMUL ? mm : NULL;
}

/* Which statements of the body read each operand first and last; false if the loop does not
 * take the refilled schedule. */
static bool refill_readers(Stmt *body, const PipeLoop *pl, int *first, int *last)
{
    for (int i = 0; i < pl->nops; i++) {
        const PipeOperand *p = &pl->ops[i];
        if (p->var || rounds_in_place(p) || p->xpose)
            return false;
        first[i] = last[i] = -1;
    }
    for (int b = 0; b < body->nbody; b++) {
        Expr *mm = stmt_product(body->body[b]);
        for (int j = 0; mm && j < 2; j++) {
            bool tf32;
            Expr *x = matmul_operand(j ? mm->b : mm->a, &tf32);
            int of = -1;
            for (int i = 0; i < pl->nops; i++)
                if (pl->ops[i].operand == x)
                    of = i;
            for (int a = 0; a < pl->nalias; a++)
                if (pl->alias[a].operand == x)
                    of = pl->alias[a].of;
            if (of < 0)
                continue;
            if (first[of] < 0)
                first[of] = b;
            last[of] = b;
        }
    }
    for (int i = 0; i < pl->nops; i++)
        if (!pl->ops[i].held && first[i] < 0)
            return false;
    return true;
}

/* Before statement b: the operands it is the first to read, arrived. */
static void refill_wait(Lower *c, PipeLoop *pl, const int *first, int b)
{
    bool cp = false;
    for (int i = 0; i < pl->nops; i++) {
        PipeOperand *p = &pl->ops[i];
        if (p->held || first[i] != b)
            continue;
        if (p->tmap >= 0)
            tma_wait(c, pipe_array_get(c->f, p->bars, R(pl->stage)), pl->phase);
        else
            cp = true;
    }
    if (!cp)
        return;
    cp_wait(c->f, pl->refills);
    if (pl->async_proxy)
        emit_ins(c->f, OP_FENCEPROXY, PT_B32);
    ir_bar(c->f);
}

/* After statement b: the operands it was the last to read, copied for the next iteration
 * (whose loop value is iter + step) into the buffer just read. A wgmma reading them was waited
 * for where the product was lowered (one stage keeps no group in flight), and no wait moves
 * past the barrier (wgmma_wait.c); race_check.c proves both. */
static void refill_issue(Lower *c, PipeLoop *pl, const int *last, int b, int64_t step)
{
    Func *f = c->f;
    bool which[16] = { false }, any = false;
    for (int i = 0; i < pl->nops; i++)
        if (!pl->ops[i].held && last[i] == b)
            which[i] = any = true;
    if (!any)
        return;
    ir_bar(f);
    Tile saved = ((SymInfo *)pl->loop->sym->lower)->val;
    int next = ir_bin(f, OP_ADD, PT_S32, R(pl->iter), IMM(step));
    issue_some(c, pl, next, R(pl->stage), which);
    ((SymInfo *)pl->loop->sym->lower)->val = saved;
    pl->refills++;
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
    PipeAlias alias[16];
    int nalias = 0;
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
            p->operand = p->window = st->rhs;
            p->trans = false;
            p->var = st->lhs->sym;
            p->type = st->rhs->type;
            p->pitch = vi->smem_ld;
            p->swz = SWZ_NONE;       /* the var's own layout: its other readers use it */
            p->plan = NULL;
            p->side = 0;
            p->tmap = p->bars = p->map_addr = -1;
            p->mc = false;
            p->held = false;
            p->xpose = false;
            p->bytes = ((int)st->rhs->shape.dim[0] * p->pitch * type_size(p->type) + 127) & ~127;
            if (!async_copyable(c, p, S))
                nops--;
            continue;
        }
        Expr *mm = st->kind == S_ASSIGN || st->kind == S_LET || st->kind == S_VAR ? (st->kind == S_ASSIGN ? st->rhs : st->init) : NULL;
        if (!mm || mm->kind != E_BINARY || mm->op != OP_MATMUL)
            continue;
        MatmulPlan *plan = matmul_plan(c, mm);
        defer |= plan->row->tensor_cores;
        Expr *side[2] = { mm->a, mm->b };
        PipeOperand cand[2];
        bool have[2] = { false, false };
        for (int j = 0; j < 2; j++) {
            bool tf32;
            Expr *x = matmul_operand(side[j], &tf32);
            if (!pipelinable_window(x, inner, ninner))
                continue;
            PipeOperand *p = &cand[j];
            p->operand = p->window = x;
            p->trans = false;
            if (plan->trans[j]) {
                /* a column-major window: copied as its twin, rows in memory order, for a path
                   that reads it transposed */
                if (!matmul_reads_trans(plan, j)) {
                    warning_at(x->loc, "pipeline(%d): '%s' is read transposed (its first dimension is "
                               "the contiguous one), which the %s path takes only through registers; "
                               "it is loaded in each iteration instead", S, x->sym->name, plan->row->name);
                    continue;
                }
                p->window = x->twin;
                p->trans = true;
            }
            p->var = NULL;
            p->type = x->type;
            p->tmap = p->bars = p->map_addr = -1;
            p->mc = false;
            p->held = false;
            p->plan = plan;
            p->side = j;
            set_stage_layout(c, p);
            have[j] = async_copyable(c, p, S);
        }
        /* a path that needs an operand this loop cannot copy (wgmma reads both from its slabs)
           gives way to its fallback, whose layouts the other then takes */
        const MatmulPathRow *row = plan->row;
        matmul_set_sources(plan, have[0] ? MS_CPASYNC : MS_REGS, have[1] ? MS_CPASYNC : MS_REGS);
        for (int j = 0; j < 2; j++)
            if (have[j] && plan->row != row) {
                set_stage_layout(c, &cand[j]);
                have[j] = async_copyable(c, &cand[j], S);
            }
        /* a window the loop does not move is copied once (never one rounded in place: its
           rounding would rewrite what the tensor cores may be reading) */
        for (int j = 0; j < 2; j++)
            if (have[j]) {
                cand[j].held = !pipe_uses_sym(cand[j].window, s->sym) && !rounds_in_place(&cand[j]) && !cand[j].xpose;
                int of = same_window(ops, nops, &cand[j]);
                if (of >= 0 && nalias < 16)
                    alias[nalias++] = (PipeAlias){ cand[j].operand, of, cand[j].trans, cand[j].plan, cand[j].side };
                else
                    ops[nops++] = cand[j];
            }
    }
    if (!nops) {
        if (!c->versioning)   /* the warnings above say what the other version copies */
            warning_at(s->loc, "pipeline(%d): the loop moves no tensor window into shared memory or a matmul; nothing to pipeline", S);
        return false;
    }
    f->cur_line = s->loc.line;
    int mark = c->smem_top;
    PipeLoop pl = { .loop = s, .ops = ops, .nops = nops, .alias = alias, .nalias = nalias, .S = S, .nbuf = S,
                    .phase = -1, .leader = -1 };
    if (keeps_group(c, body, ops, nops, S)) {
        pl.nbuf = S + 1;
        keep_group(c, &pl);
    }
    int B = pl.nbuf;
    /* the slabs TMA can bring (lower_tma.c) */
    bool tma = tma_choose(c, &pl);
    /* stage buffers, contiguous, and their addresses as register tensors */
    for (int i = 0; i < nops; i++) {
        pl.async_proxy |= ops[i].plan && matmul_side(ops[i].plan->row->proxy, ops[i].side) && ops[i].tmap < 0;
        const char *nm = ops[i].var ? ops[i].var->name : ops[i].operand->sym->name;
        if (ops[i].held) {
            int off = smem_alloc_aligned(c, ops[i].bytes, slab(ops[i].swz) ? 1024 : 128);
            f->smem_bufs.v[f->smem_bufs.n - 1].name = arena_printf(c->a, "the buffer of '%s'", nm);
            f->cur_what = "held buffer address";
            ops[i].held_base = smem_base_reg(c, off);
            ops[i].array = -1;
            continue;
        }
        int off = smem_alloc_aligned(c, B * ops[i].bytes, slab(ops[i].swz) || ops[i].xpose ? 1024 : 128);
        SmemBuf *sb = &f->smem_bufs.v[f->smem_bufs.n - 1];
        sb->name = arena_printf(c->a, "the stage buffers of '%s'", nm);
        sb->stage_bytes = ops[i].bytes;
        RegArray arr = { arena_printf(c->a, "%s_stages", nm), B, RC_R, s->loc.line, false, false };
        vec_push(&f->arrays, arr);
        ops[i].array = f->arrays.n - 1;
        f->cur_what = "stage buffer address";
        for (int st = 0; st < B; st++) {
            int r = smem_base_reg(c, off + st * ops[i].bytes);
            Ins *in = emit_ins(f, OP_ARRSET, PT_U32);
            in->src[0] = R(r);
            in->nsrc = 1;
            in->off = st;
            in->array = ops[i].array;
        }
    }
    if (tma)
        tma_setup(c, &pl);
    pl.ws = tma && one_product_of(body, ops, nops, S, true) && ws_choose(c, &pl);
    if (pl.ws) {
        /* the empty barriers guard the stage the group in flight reads: no spare stage needed */
        keep_group(c, &pl);
        ws_setup(c, &pl);
    }
    f->cur_what = "temporary";
    Tile lo = lower_expr(c, s->lo, NULL), hi = lower_expr(c, s->hi, NULL);
    split_bounds(c, s, &lo.v[0], &hi.v[0]);
    int64_t step = s->step ? s->step->ival : 1;
    pl.hi = opnd_reg(c, hi.v[0], PT_S32);
    int i = ir_mov(f, PT_S32, lo.v[0]);
    f->regs.v[i].what = s->name;
    /* a body of one tensor-core matmul places the barrier itself (pipe_take_barrier) */
    bool bar_to_mma = S >= 2 && defer && body->nbody == 1;
    /* ... and one whose path keeps its group in flight into the next iteration waits for it at
       that barrier (lower_mma_swap.c, "In flight") */
    bool inflight = false;
    for (int k = 0; k < nops; k++)
        inflight |= bar_to_mma && ops[k].plan && ops[k].plan->row->inflight;
    /* gathered windows: their row indices once, in the layout every iteration's copies use */
    int ngathers = c->ngathers;
    for (int k = 0; k < nops; k++)
        if (ops[k].tmap < 0)
            gather_hoist(c, ops[k].window, ops[k].pitch);
    /* the held windows, in the first group of copies the loop waits for */
    bool held_copies = false;
    for (int k = 0; k < nops; k++)
        if (ops[k].held) {
            copy_window_async(c, ops[k].window, ops[k].held_base, ops[k].pitch, ops[k].swz, -1);
            held_copies = true;
        }
    /* with no prologue to close their group (one stage, or the producer's loop) they would stay
       outside every group, and a loop that never runs would leave with them pending: the
       cp.async.wait_group at its exit covers committed groups only */
    if (held_copies && (S < 2 || pl.ws))
        emit_ins(f, OP_CPCOMMIT, PT_B32);
    /* one stage refilled as soon as it is read: iteration 0's copies before the loop, and the
       held windows waited for (their group is the older) */
    int first_rd[16], last_rd[16];
    pl.refill = S == 1 && !pl.ws && refill_readers(body, &pl, first_rd, last_rd);
    if (pl.refill) {
        pipe_issue_copies(c, &pl, ir_mov(f, PT_S32, R(i)), IMM(0));
        if (held_copies) {
            cp_wait(f, 1);
            if (pl.async_proxy)
                emit_ins(f, OP_FENCEPROXY, PT_B32);
            ir_bar(f);
        }
    }
    /* prologue: iterations 0 .. S-2, or the producer warp's loop */
    if (pl.ws)
        ws_producer(c, &pl, i, step);
    for (int st = 0; st + 1 < S && !pl.ws; st++) {
        int v = st ? ir_bin(f, OP_ADD, PT_S32, R(i), IMM(st * step)) : ir_mov(f, PT_S32, R(i));
        pipe_issue_copies(c, &pl, v, IMM(st));
    }
    int stage = ir_mov(f, PT_U32, IMM(0));
    f->regs.v[stage].what = "stage";
    f->regs.v[stage].stage_S = B;
    int head = new_label(f), exit = new_label(f);
    ir_label(f, head);
    int p = ir_setp(f, CMP_GE, PT_S32, R(i), R(pl.hi));
    ir_bra(f, exit, p, false);
    /* the body's view of the pipeline, which the barrier's tf32 rounding (publish_stage) reads
       too: the current stage of this iteration's windows */
    WgInflight held = { 0 };
    pl.stage = stage;
    pl.iter = i;
    pl.lo = lo.v[0];
    pl.inflight = inflight ? &held : NULL;
    pl.outer = c->pipe;
    c->pipe = &pl;
    pipe_set_loop_value(c, s, i);
    if (!bar_to_mma && S >= 2)
        publish_stage(c, S - 2);
    else if (!bar_to_mma && !pl.refill)
        ir_bar(f);
    /* iteration j + S - 1 goes into stage (stage + S - 1) mod B */
    pl.ahead = ir_bin(f, OP_ADD, PT_S32, R(i), IMM((S - 1) * step));
    int w = stage;
    if (S > 1) {
        int w1 = ir_bin(f, OP_ADD, PT_U32, R(stage), IMM(S - 1));
        int wrap = ir_setp(f, CMP_GE, PT_U32, R(w1), IMM(B));
        int w2 = ir_bin(f, OP_SUB, PT_U32, R(w1), IMM(B));
        w = ir_tern(f, OP_SELP, PT_U32, R(w2), R(w1), R(wrap));
    }
    pl.write = R(w);
    /* With S >= 2 the stage written (read by the previous iteration, which every thread has
       finished at the barrier) is not the one this body reads, so the copies may wait until the
       body has its first operands in registers: ptxas keeps cp.async and shared loads in program
       order, and copies issued first would hold back the body's first mma. */
    if (pl.ws || pl.refill) {
        /* the producer's; the refilled buffers' (refill_issue) */
    } else if (S == 1 || !defer) {
        pipe_issue_copies(c, &pl, pl.ahead, pl.write);
        if (S == 1)
            publish_stage(c, 0);
    } else {
        pl.copies_pending = true;
    }
    pipe_set_loop_value(c, s, i);
    pl.bar_pending = bar_to_mma;
    pl.refills = 0;
    for (int b = 0; b < body->nbody; b++) {
        if (pl.refill)
            refill_wait(c, &pl, first_rd, b);
        lower_stmt(c, body->body[b]);
        if (pl.refill)
            refill_issue(c, &pl, last_rd, b, step);
    }
    if (pl.bar_pending && !c->too_big)   /* (a body cut short by a limit never takes it) */
        die("pipeline: the loop's barrier was left to a matmul that did not place it");
    c->pipe = pl.outer;
    issue_pending(c, &pl);
    if (pl.ws)
        ws_release(c, &pl);
    int phase = pl.phase;
    f->cur_line = s->loc.line;
    pipe_advance(f, stage, phase, B);
    ir_bin_to(f, OP_ADD, PT_S32, i, R(i), IMM(step));
    ir_bra(f, head, -1, false);
    ir_label(f, exit);
    if (inflight || pl.wg_keep) {
        /* the last iterations' wgmma, before anything reads the accumulators */
        emit_ins(f, OP_WGWAIT, PT_B32)->inflight = 0;
        if (inflight)
            wg_hold(f, held.regs, held.n);
        /* and the last fp8 partial sums (zero if the loop never ran) */
        for (int q = 0; pl.promote && pl.acc.v && q < layout_slots(&pl.acc.L); q++)
            ir_bin_to(f, OP_ADD, PT_F32, pl.acc.v[q].reg, pl.acc.v[q], pl.part.v[q]);
    }
    if (pl.ws)
        ws_finish(c, &pl);
    /* copies issued for iterations past the end were predicated off; drain anyway so shared
       memory is quiet for whatever follows */
    cp_wait(f, 0);
    ir_bar(f);
    c->scratch_read = false;
    c->ngathers = ngathers;
    /* past that barrier the loop's buffers (stages, held windows, its body's shared vars and
       staged operands) are dead: a later loop, or the next unrolled copy of this one, reuses them */
    smem_release(c, mark, true);
    return true;
}
