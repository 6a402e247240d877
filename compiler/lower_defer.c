/* lower_defer.c: sums a loop accumulates (whole tiles and along an axis), reduced across
 * threads once after it.
 *
 *     var s: f32 = 0;
 *     for j in 0 .. N step BN { s += sum(X[r, j +: BN]); }
 *
 * reduces across the block in every step as written: shuffles, a word per warp through shared
 * memory and a barrier, which stops the next step's loads from starting before this step's
 * reduction is done (a row sum ran at 0.90 of a device copy's bandwidth so). When nothing in
 * the loop reads s but that statement, the order of the additions is free (docs/language.md:
 * sums in any order), so each thread adds its own slots into a partial register each step and
 * the cross-thread reduction runs once, after the loop, into s. Each term then passes through
 * fewer additions than before (its thread's slots, the steps, the threads), within the bound
 * any order has.
 *
 * Only direct statements of a loop's body, only `+=` of a whole-tile `sum` into a scalar
 * register var of the sum's own 32-bit type, declared before the loop (several such statements
 * into one var share its partial). Pipelined loops, whose
 * bodies are lowered in pieces, are left as written.
 *
 * The same holds for a sum along an axis into a register var (a GEMV's
 *
 *     acc += sum(f32(W[r0 +: 8, k +: 1024]) * f32(x[k +: 1024]), axis=1);
 *
 * reduced a row block across the whole block every step). The partial is then a tile: the
 * summed tile's layout with each thread's slots along the axis added together but the threads
 * along it kept apart (their coordinate is the partial's along that axis). Its layout is known
 * only once the first step's value is lowered, inside the loop, so the partial's zeroing is
 * emitted then and moved to where the loop began. */
#include <stdlib.h>
#include <string.h>
#include "lower.h"

enum { MAX_DEFER = 8 };

struct DeferSet {
    Stmt *s[MAX_DEFER];        /* the deferred statements ... */
    int var[MAX_DEFER];        /* ... each with its var's entry below (whole-tile sums) */
    Tile part[MAX_DEFER];      /* ... or its own partial tile (sums along an axis; .v NULL
                                  until the first step is lowered) */
    int ns;
    int at;                    /* where the loop's code begins: axis partials are zeroed there */
    Sym *v[MAX_DEFER];         /* the vars, each with the thread's partial sum: a register */
    int partial[MAX_DEFER];    /* through the loop */
    int nv;
    DeferSet *outer;
};

static bool mentions(Expr *e, Sym *v);

static bool mentions_all(Expr **es, int n, Sym *v)
{
    for (int i = 0; i < n; i++)
        if (mentions(es[i], v))
            return true;
    return false;
}

static bool mentions(Expr *e, Sym *v)
{
    if (!e)
        return false;
    if (e->sym == v)
        return true;
    if (mentions(e->a, v) || mentions(e->b, v) || mentions(e->base, v) || mentions(e->fill, v) ||
        mentions(e->twin, v) || mentions_all(e->args, e->nargs, v))
        return true;
    for (int i = 0; i < e->nidx; i++)
        if (mentions(e->idx[i].start, v) || mentions(e->idx[i].width_expr, v))
            return true;
    return false;
}

/* `v += sum(tile)` of a whole tile into a scalar register var of the sum's 32-bit type. */
static bool sum_add(Stmt *s)
{
    if (s->kind != S_ASSIGN || s->op != '+' || !s->lhs || s->lhs->kind != E_NAME)
        return false;
    Sym *v = s->lhs->sym;
    Expr *r = s->rhs;
    if (!v || v->kind != SYM_VAR || v->is_shared)
        return false;
    if (r->kind != E_CALL || r->builtin != B_SUM || r->nargs != 1 || r->type != v->type)
        return false;
    if (r->axis < 0 ? v->shape.rank != 0 || r->args[0]->shape.rank == 0
                    : v->shape.rank == 0 || r->args[0]->shape.rank != 2)
        return false;
    return v->type == TY_F32 || v->type == TY_I32 || v->type == TY_U32;
}

static bool axis_sum(Stmt *s) { return s->rhs->axis >= 0; }

/* Does statement s (and what it holds) read or write v, other than in a direct `v += sum(..)`
 * of the loop's body (those are all deferred together)? */
static bool stmt_mentions(Stmt *s, Sym *v, Stmt *body)
{
    if (!s)
        return false;
    if (s->kind == S_BLOCK && s == body) {
        for (int i = 0; i < s->nbody; i++)
            if (!(sum_add(s->body[i]) && s->body[i]->lhs->sym == v && !mentions(s->body[i]->rhs, v)) &&
                stmt_mentions(s->body[i], v, NULL))
                return true;
        return false;
    }
    Expr *es[] = { s->init, s->lhs, s->rhs, s->cond, s->lo, s->hi, s->step };
    if (mentions_all(es, (int)(sizeof es / sizeof es[0]), v))
        return true;
    for (int i = 0; i < s->nbody; i++)
        if (stmt_mentions(s->body[i], v, NULL))
            return true;
    return stmt_mentions(s->then, v, NULL) || stmt_mentions(s->els, v, NULL);
}

/* A direct `v += sum(tile)` of the loop's body, v already lowered (declared before the loop)
 * and read nowhere else in the loop. */
static bool deferrable(Stmt *loop, Stmt *s)
{
    if (!sum_add(s))
        return false;
    Sym *v = s->lhs->sym;
    if (!v->lower || !((SymInfo *)v->lower)->val.v)
        return false;
    return !stmt_mentions(loop->then, v, loop->then);
}

/* Moves the instructions from `from` to the end of the code to position `at`, ahead of the rest;
 * the sets of the loops inside this one (which began later) move their positions with them. */
static void move_tail(Lower *c, DeferSet *d, int from)
{
    Func *f = c->f;
    int n = f->code.n - from, at = d->at;
    if (n <= 0 || at >= from)
        return;
    Ins *tmp = malloc(sizeof(Ins) * (size_t)n);
    memcpy(tmp, &f->code.v[from], sizeof(Ins) * (size_t)n);
    memmove(&f->code.v[at + n], &f->code.v[at], sizeof(Ins) * (size_t)(from - at));
    memcpy(&f->code.v[at], tmp, sizeof(Ins) * (size_t)n);
    free(tmp);
    for (DeferSet *e = c->defer; e && e != d; e = e->outer)
        if (e->at >= at)
            e->at += n;
}

/* The partial of a sum along an axis: along the axis, one slot per thread (S = T there), the
 * kept dimension as the summed tile has it. NULL where the layout does not allow it (the axis
 * broadcast, an outer thread grid along it): such a step is summed whole, as written. */
static bool axis_partial_layout(const Layout *L, int nd, Layout *out)
{
    if (L->rank != 2 || L->bcast[nd] || !layout_tid_plain(L))
        return false;
    Layout P = *L;
    P.S[nd] = L->T[nd];
    P.O[nd] = 1;
    P.V[nd] = 1;
    *out = P;
    return true;
}

static bool defer_axis(Lower *c, DeferSet *d, int i)
{
    Stmt *s = d->s[i];
    int nd = s->rhs->axis;
    SymInfo *si = s->lhs->sym->lower;
    Tile v = lower_expr(c, s->rhs->args[0], NULL);
    Layout P;
    Tile *part = &d->part[i];
    if (!axis_partial_layout(&v.L, nd, &P) || (part->v && !layout_eq(&P, &part->L))) {
        /* summed as written: the var is read nowhere else in the loop, so when does not matter */
        assign_tile(c, &si->val, reduce_tile(c, v, B_SUM, s->rhs->axis), '+');
        return true;
    }
    PType t = held_ptype(s->lhs->sym->type);
    if (!part->v) {
        int from = c->f->code.n;
        int n = layout_slots(&P);
        *part = (Tile){ s->lhs->sym->type, P, arena_alloc(c->a, sizeof(Opnd) * (size_t)n) };
        for (int k = 0; k < n; k++) {
            int r = ir_mov(c->f, t, reduce_identity(B_SUM, t));
            part->v[k] = R(r);
            c->f->regs.v[r].what = s->lhs->sym->name;
        }
        move_tail(c, d, from);
    }
    /* a step's slots along the axis are summed as a tree, then added to the partial: each term
       passes through log2(slots) + steps roundings, the depth docs/language.md gives deferred
       sums, where adding the slots one by one into the partial made it slots x steps */
    int kd = 1 - nd, n = v.L.O[nd] * v.L.V[nd];
    Opnd *xs = arena_alloc(c->a, sizeof *xs * (size_t)n);
    for (int o = 0; o < v.L.O[kd]; o++)
        for (int j = 0; j < v.L.V[kd]; j++) {
            Opnd acc = part->v[nd == 1 ? slot_index(&P, o, j, 0, 0) : slot_index(&P, 0, 0, o, j)];
            int k = 0;
            for (int a = 0; a < v.L.O[nd]; a++)
                for (int b = 0; b < v.L.V[nd]; b++)
                    xs[k++] = v.v[nd == 1 ? slot_index(&v.L, o, j, a, b) : slot_index(&v.L, a, b, o, j)];
            ir_bin_to(c->f, OP_ADD, t, acc.reg, acc, reduce_slots(c, B_SUM, t, xs, n));
        }
    return true;
}

void defer_begin(Lower *c, Stmt *loop, DeferSet **out)
{
    *out = NULL;
    Stmt *body = loop->then;
    if (!body || body->kind != S_BLOCK)
        return;
    DeferSet *d = NULL;
    for (int i = 0; i < body->nbody; i++) {
        Stmt *s = body->body[i];
        if (!deferrable(loop, s))
            continue;
        if (!d) {
            d = arena_alloc(c->a, sizeof *d);
            d->outer = c->defer;
            d->at = c->f->code.n;
        }
        if (d->ns == MAX_DEFER)
            break;
        if (axis_sum(s)) {
            d->part[d->ns].v = NULL;
            d->var[d->ns] = -1;
            d->s[d->ns++] = s;
            continue;
        }
        Sym *v = s->lhs->sym;
        int e = 0;
        while (e < d->nv && d->v[e] != v)
            e++;
        if (e == d->nv) {
            if (d->nv == MAX_DEFER)
                break;
            PType t = held_ptype(v->type);
            d->v[e] = v;
            d->partial[e] = ir_mov(c->f, t, reduce_identity(B_SUM, t));
            c->f->regs.v[d->partial[e]].what = v->name;
            d->nv++;
        }
        d->s[d->ns] = s;
        d->var[d->ns++] = e;
    }
    if (d && d->ns)
        c->defer = d;
    *out = d && d->ns ? d : NULL;
}

bool defer_assign(Lower *c, Stmt *s)
{
    for (DeferSet *d = c->defer; d; d = d->outer)
        for (int i = 0; i < d->ns; i++) {
            if (d->s[i] != s)
                continue;
            if (axis_sum(s))
                return defer_axis(c, d, i);
            int p = d->partial[d->var[i]];
            PType t = held_ptype(s->lhs->sym->type);
            Tile v = lower_expr(c, s->rhs->args[0], NULL);
            Opnd part = reduce_in_thread(c, v, B_SUM);
            ir_bin_to(c->f, OP_ADD, t, p, R(p), part);
            return true;
        }
    return false;
}

void defer_end(Lower *c, DeferSet *d)
{
    if (!d)
        return;
    c->defer = d->outer;
    for (int i = 0; i < d->ns; i++) {
        Stmt *s = d->s[i];
        if (!axis_sum(s) || !d->part[i].v)
            continue;
        Tile total = reduce_tile(c, d->part[i], B_SUM, s->rhs->axis);
        assign_tile(c, &((SymInfo *)s->lhs->sym->lower)->val, total, '+');
    }
    for (int i = 0; i < d->nv; i++) {
        Sym *v = d->v[i];
        PType t = held_ptype(v->type);
        Opnd total = reduce_across(c, R(d->partial[i]), B_SUM, t);
        int var = ((SymInfo *)v->lower)->val.v[0].reg;
        ir_bin_to(c->f, OP_ADD, t, var, R(var), total);
    }
}
