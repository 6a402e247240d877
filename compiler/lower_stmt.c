/* lower_stmt.c: statements -> IR: let, var, assignment, for (constant loops unrolled), if, atomic;
 * and the pass before them that gives vars accumulated by `@` the product's layout. */
#include "lower.h"

/* ---- statements */


void assign_tile(Lower *c, Tile *dst, Tile v, int op)
{
    Func *f = c->f;
    v = to_layout(c, v, &dst->L);
    PType pt = held_ptype(dst->type);
    int n = layout_slots(&dst->L);
    for (int i = 0; i < n; i++) {
        Ins *in;
        if (op == '=') {
            in = emit_ins(f, OP_MOV, pt);
            in->src[0] = pt == PT_PRED && is_imm(v.v[i]) ? R(opnd_reg(c, v.v[i], PT_PRED)) : v.v[i];
            in->nsrc = 1;
        } else {
            in = emit_ins(f, op == '+' ? OP_ADD : op == '-' ? OP_SUB : OP_MUL, pt);
            in->src[0] = dst->v[i];
            in->src[1] = v.v[i];
            in->nsrc = 2;
        }
        in->dst[0] = dst->v[i].reg;
        in->ndst = 1;
    }
}

/* A statement whose shared memory is dead at its end: all but a shared var's declaration (a
   matmul's staged operands, say, which a loop after it may then reuse). */
static bool frees_its_smem(const Stmt *s)
{
    return !((s->kind == S_LET || s->kind == S_VAR) && s->sym && s->sym->is_shared);
}

void lower_block(Lower *c, Stmt *b)
{
    int mark = c->smem_top;
    for (int i = 0; i < b->nbody; i++) {
        int before = c->smem_top;
        lower_stmt(c, b->body[i]);
        if (frees_its_smem(b->body[i]))
            smem_release(c, before, false);
    }
    /* the block's shared vars and staged operands are dead at its end (each unrolled copy of a
       loop body is a block of its own); what reuses them waits at a barrier for their readers */
    smem_release(c, mark, false);
}

static bool is_matmul(Expr *e) { return e && e->kind == E_BINARY && e->op == OP_MATMUL; }

/* A shared var's buffer, rows padded against bank conflicts. */
static void shared_var_alloc(Lower *c, Sym *sym)
{
    SymInfo *si = info(c, sym);
    int S0 = sym->shape.rank == 2 ? (int)sym->shape.dim[0] : 1;
    int S1 = sym->shape.rank ? (int)sym->shape.dim[sym->shape.rank - 1] : 1;
    si->smem_ld = S1 + (S1 >= 32 ? 4 : 0);
    si->smem_off = smem_alloc(c, S0 * si->smem_ld * type_size(sym->type));
    c->f->smem_bufs.v[c->f->smem_bufs.n - 1].name = sym->name;
}

/* A loop with constant bounds and a few iterations is unrolled: ptxas would unroll it anyway, and
 * the register prediction must describe the code ptxas really schedules. The loop variable becomes
 * a constant in each copy. Nested, only up to MAX_UNROLL_COPIES copies (unroll_trips). */

static bool unroll_constant_loop(Lower *c, Stmt *s)
{
    int64_t trips = unroll_trips(s, c->unroll_copies), step = s->step ? s->step->ival : 1;
    if (trips < 0)
        return false;
    SymInfo *si = info(c, s->sym);
    si->loop = s;
    int64_t copies = c->unroll_copies;
    Stmt *outer = c->unrolled;
    c->unroll_copies = copies * (trips ? trips : 1);
    if (!outer)
        c->unrolled = s;
    for (int64_t t = 0; t < trips; t++) {
        si->val = tile_splat(c, TY_I32, layout_scalar(c->threads), IMM(s->lo->ival + t * step));
        lower_block(c, s->then);
    }
    c->unroll_copies = copies;
    c->unrolled = outer;
    return true;
}

/* A loop with run-time bounds: the counter in a register, the test at the head. */
static void lower_loop(Lower *c, Stmt *s)
{
    Func *f = c->f;
    SymInfo *si = info(c, s->sym);
    si->loop = s;
    Tile lo = lower_expr(c, s->lo, NULL), hi = lower_expr(c, s->hi, NULL);
    split_bounds(c, s, &lo.v[0], &hi.v[0]);
    int64_t step = 1;
    if (s->step) {
        Tile st = lower_expr(c, s->step, NULL);
        step = st.v[0].i;
    }
    int i = ir_mov(f, PT_S32, lo.v[0]);
    f->regs.v[i].what = s->name;
    int hreg = opnd_reg(c, hi.v[0], PT_S32);
    si->val = scalar_of(c, TY_I32, R(i));
    int head = new_label(f), exit = new_label(f);
    ir_label(f, head);
    int p = ir_setp(f, CMP_GE, PT_S32, R(i), R(hreg));
    ir_bra(f, exit, p, false);
    /* the head is also reached from the end of the body, whose scratch reads (a reduction's
       last step, say) the next iteration's first scratch write must wait for */
    c->scratch_read = true;
    lower_block(c, s->then);
    f->cur_line = s->loc.line;
    ir_bin_to(f, OP_ADD, PT_S32, i, R(i), IMM(step));
    ir_bra(f, head, -1, false);
    ir_label(f, exit);
    /* a loop may run zero times: scratch state after it is unknown */
    c->scratch_read = true;
}

void lower_for(Lower *c, Stmt *s)
{
    if (s->pipeline >= 1 && lower_pipelined_loop(c, s))
        return;
    DeferSet *d;
    defer_begin(c, s, &d);
    if (!unroll_constant_loop(c, s))
        lower_loop(c, s);
    defer_end(c, d);
}

static void lower_stmt_kind(Lower *c, Stmt *s);

void lower_stmt(Lower *c, Stmt *s)
{
    if (!lower_budget_before(c, s))
        return;
    Loc saved = c->loc;
    c->loc = s->loc;
    lower_stmt_kind(c, s);
    c->loc = saved;
    lower_budget_after(c, s);
}

static void lower_stmt_kind(Lower *c, Stmt *s)
{
    Func *f = c->f;
    f->cur_line = s->loc.line;
    switch (s->kind) {
    case S_BLOCK: lower_block(c, s); break;
    case S_LET: {
        f->cur_what = reg_value_name(c->a, s->name, s->init->type, s->init->shape);
        SymInfo *si = info(c, s->sym);
        if (s->sym->is_shared) {
            /* a let the registers could not hold (compile.c): in shared memory, each use a load */
            Sym *sym = s->sym;
            Tile v = lower_expr(c, s->init, NULL);
            if (v.type != sym->type) {
                Tile w = { sym->type, v.L, NULL };
                int n = layout_slots(&v.L);
                w.v = arena_alloc(c->a, sizeof *w.v * (size_t)n);
                for (int i = 0; i < n; i++)
                    w.v[i] = cast_slot(c, sym->type, v.type, v.v[i]);
                v = w;
            }
            if (v.L.bcast[0] || v.L.bcast[1]) {
                Layout plain = layout_rowmajor(sym->shape, c->threads, 4);
                v = to_layout(c, v, &plain);
            }
            shared_var_alloc(c, sym);
            store_shared_var(c, sym, v);
            /* its uses read it back in the layout it had: no layout change where it meets the
               values it was computed beside */
            si->has_hint = true;
            si->hint = v.L;
            f->cur_what = "temporary";
            break;
        }
        if (let_made_at_use(c, s)) {
            si->def = s->init;
            si->at_use = true;
            f->cur_what = "temporary";
            break;
        }
        Tile v = lower_expr(c, s->init, si->has_hint ? &si->hint : NULL);
        if (s->sym->type != v.type && s->sym->type != TY_NONE) {
            Tile w = { s->sym->type, v.L, NULL };
            int n = layout_slots(&v.L);
            w.v = arena_alloc(c->a, sizeof *w.v * (size_t)n);
            for (int i = 0; i < n; i++)
                w.v[i] = cast_slot(c, s->sym->type, v.type, v.v[i]);
            v = w;
        }
        si->val = v;
        si->def = s->init;
        f->cur_what = "temporary";
        break;
    }
    case S_VAR: {
        Sym *sym = s->sym;
        SymInfo *si = info(c, sym);
        if (sym->is_shared) {
            shared_var_alloc(c, sym);
            break;
        }
        f->cur_what = reg_value_name(c->a, s->name, sym->type, sym->shape);
        Layout L;
        Tile init = { TY_NONE, { 0 }, NULL };
        if (si->plan) {
            L = si->plan->acc;
        } else if (si->has_hint) {
            L = si->hint;
        } else if (s->init && s->init->shape.rank == sym->shape.rank && sym->shape.rank > 0 && !is_matmul(s->init)) {
            init = lower_expr(c, s->init, NULL);
            L = init.L;
        } else {
            L = sym->shape.rank ? layout_rowmajor(sym->shape, c->threads, 4) : layout_scalar(c->threads);
        }
        si->val = tile_new(c, sym->type, L);
        if (is_matmul(s->init)) {
            lower_matmul(c, &si->val, s->init, false);
        } else if (s->init) {
            if (!init.v)
                init = lower_expr(c, s->init, &L);
            assign_tile(c, &si->val, init, '=');
        }
        f->cur_what = "temporary";
        break;
    }
    case S_ASSIGN: {
        Expr *l = s->lhs;
        if (l->kind == E_INDEX) {
            Layout want;
            TmaStage st;
            bool staged = tma_store_stage(c, l, s->rhs, &st);
            Tile v = lower_expr(c, s->rhs, store_stream_layout(c, l, s->rhs, &want) ? &want : NULL);
            if (!staged || !tma_store(c, l, v, &st))
                store_window(c, l, v);
            break;
        }
        Sym *sym = l->sym;
        if (pipe_fills(c, sym, s->rhs))
            break;   /* the pipelined loop copies it, ahead of time */
        if (sym->is_shared) {
            Tile v = lower_expr(c, s->rhs, NULL);
            store_shared_var(c, sym, v);
            break;
        }
        if (defer_assign(c, s))
            break;   /* a sum its loop reduces across threads once, after the loop */
        SymInfo *si = info(c, sym);
        if (is_matmul(s->rhs) && (s->op == '+' || s->op == '=')) {
            lower_matmul(c, &si->val, s->rhs, s->op == '+');
            break;
        }
        /* v = where(m, v, b) with a mask all true in most blocks (lower_mask.c): as if written
           `if (!all) { v = where(m, v, b); }`, which leaves v's registers alone where it holds */
        int end = -1;
        if (s->op == '=' && s->rhs->kind == E_CALL && s->rhs->builtin == B_SELECT && !c->opt->no_mask_split &&
            s->rhs->args[1]->kind == E_NAME && s->rhs->args[1]->sym == sym && sym->shape.rank) {
            int all = mask_all_true(c, s->rhs->args[0]);
            if (all >= 0) {
                end = new_label(f);
                ir_bra(f, end, all, false);
            }
        }
        Tile v = lower_expr(c, s->rhs, &si->val.L);
        assign_tile(c, &si->val, v, s->op);
        if (end >= 0) {
            ir_label(f, end);
            c->scratch_read = true;
        }
        break;
    }
    case S_FOR:
        split_begin(c, s);
        if (!(s->pipeline >= 1 && !c->versioning && lower_versioned_loop(c, s)))
            lower_for(c, s);
        split_fixup(c, s);
        break;
    case S_IF: {
        Tile cnd = lower_expr(c, s->cond, NULL);
        int p = opnd_reg(c, cnd.v[0], PT_PRED);
        int els = new_label(f), end = new_label(f);
        bool scratch_read = c->scratch_read;
        ir_bra(f, els, p, true);
        lower_block(c, s->then);
        ir_bra(f, end, -1, false);
        ir_label(f, els);
        /* the else branch starts from the state before the if, not from the end of the then branch */
        c->scratch_read = scratch_read;
        if (s->els)
            lower_stmt(c, s->els);
        ir_label(f, end);
        c->scratch_read = true;
        break;
    }
    case S_ATOMIC: {
        Tile v = lower_expr(c, s->rhs, NULL);
        atomic_window(c, s->lhs, v, s->op);
        break;
    }
    case S_ASSUME: break;   /* checked at launch; known_multiple reads the facts */
    case S_PRINT: lower_print(c, s); break;
    }
}

/* Vars accumulated by `@` get the matmul layout from their declaration on. */
static void mark_var(Lower *c, Sym *v, Expr *mm)
{
    SymInfo *si = v->lower;
    if (!si)
        return;
    if (!si->plan)
        si->plan = matmul_plan(c, mm);
}

/* Calls fn on every statement of s that is not a block, a loop or an if, in program order. */
void each_simple_stmt(Lower *c, Stmt *s, void (*fn)(Lower *c, Stmt *s))
{
    if (!s)
        return;
    switch (s->kind) {
    case S_BLOCK:
        for (int i = 0; i < s->nbody; i++)
            each_simple_stmt(c, s->body[i], fn);
        break;
    case S_FOR: each_simple_stmt(c, s->then, fn); break;
    case S_IF:
        each_simple_stmt(c, s->then, fn);
        each_simple_stmt(c, s->els, fn);
        break;
    default: fn(c, s); break;
    }
}

static void mark_matmul_var(Lower *c, Stmt *s)
{
    switch (s->kind) {
    case S_ASSIGN:
        if (s->lhs->kind == E_NAME && is_matmul(s->rhs))
            mark_var(c, s->lhs->sym, s->rhs);
        break;
    case S_VAR:
        if (is_matmul(s->init))
            mark_var(c, s->sym, s->init);
        break;
    default: break;
    }
}

void mark_matmul_vars(Lower *c, Stmt *s) { each_simple_stmt(c, s, mark_matmul_var); }


static void alloc_var_info(Lower *c, Stmt *s)
{
    if (s->kind == S_VAR && s->sym)
        info(c, s->sym);
}

void alloc_var_infos(Lower *c, Stmt *s) { each_simple_stmt(c, s, alloc_var_info); }
