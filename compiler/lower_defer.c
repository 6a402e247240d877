/* lower_defer.c: whole-tile sums accumulated by a loop, reduced across threads once after it.
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
 * bodies are lowered in pieces, are left as written. */
#include "lower.h"

enum { MAX_DEFER = 8 };

struct DeferSet {
    Stmt *s[MAX_DEFER];        /* the deferred statements ... */
    int var[MAX_DEFER];        /* ... each with its var's entry below */
    int ns;
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
    if (!v || v->kind != SYM_VAR || v->is_shared || v->shape.rank != 0)
        return false;
    if (r->kind != E_CALL || r->builtin != B_SUM || r->axis >= 0 || r->nargs != 1 ||
        r->args[0]->shape.rank == 0 || r->type != v->type)
        return false;
    return v->type == TY_F32 || v->type == TY_I32 || v->type == TY_U32;
}

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
        if (d->ns == MAX_DEFER)
            break;
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
    for (int i = 0; i < d->nv; i++) {
        Sym *v = d->v[i];
        PType t = held_ptype(v->type);
        Opnd total = reduce_across(c, R(d->partial[i]), B_SUM, t);
        int var = ((SymInfo *)v->lower)->val.v[0].reg;
        ir_bin_to(c->f, OP_ADD, t, var, R(var), total);
    }
}
