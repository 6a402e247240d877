/* layout_plan.c: the layouts of a kernel's lets and vars, chosen before any of it is lowered, from
 * what feeds them and how they are used, so that values meet in the layout they are combined in
 * rather than moving between layouts (through shared memory and barriers) where they meet.
 *
 * Three rules, in order; a symbol keeps the first layout a rule gives it:
 *  1. values made from a product's accumulator (its row statistics, a rescaled copy) keep the
 *     accumulator's layout, and so do the vars and lets they are assigned to (expr_hint);
 *  2. a var fed by an outer product of broadcasts (`res += g * exp2(w * x + b - o) * w` with w a
 *     column [M, 1] and o a row [1, N]) takes the register-blocked layout of a matmul result: each
 *     thread holds a TM x TN block, so it needs TM elements of each column operand and TN of each
 *     row operand per step, the fewest loads for the elements it computes;
 *  3. a let used next to a value whose layout is planned takes that layout, or its broadcast view
 *     when the let is smaller (a column of a [M, N] value is held, replicated, by the threads
 *     that hold the value's rows): broadcasting it is then a register read.
 * The planned layout is a wish: lowering passes it as the wanted layout (a window is loaded in
 * it directly); an expression that cannot produce it (a reduction, say) gets converted where it
 * is used, as without a plan. */
#include "lower.h"

/* ---- rule 1: values of products */

/* The layout e has when lowered, if it comes from a product's accumulator: the accumulator's, or
 * for a reduction along the rows of such a value the layout reduce_tile gives it (the rows kept
 * where they were, the one column held by each of the threads that held a part of the row). */
static bool expr_hint(Lower *c, Expr *e, Layout *out)
{
    if (!e || e->shape.rank != 2)
        return false;
    switch (e->kind) {
    case E_BINARY:
        if (e->op == OP_MATMUL) {
            *out = matmul_plan(c, e)->acc;
            return true;
        }
        return (e->a->shape.rank == 2 && e->a->shape.dim[0] == e->shape.dim[0] &&
                e->a->shape.dim[1] == e->shape.dim[1] && expr_hint(c, e->a, out)) ||
               (e->b->shape.rank == 2 && e->b->shape.dim[0] == e->shape.dim[0] &&
                e->b->shape.dim[1] == e->shape.dim[1] && expr_hint(c, e->b, out));
    case E_UNARY:
    case E_CAST:
        return expr_hint(c, e->a, out);
    case E_NAME: {
        SymInfo *si = e->sym->lower;
        if (!si || (e->sym->kind != SYM_LET && e->sym->kind != SYM_VAR) || e->sym->is_shared)
            return false;
        if (si->plan)
            *out = si->plan->acc;
        else if (si->has_hint)
            *out = si->hint;
        return si->plan || si->has_hint;
    }
    case E_CALL: {
        BuiltinKind k = builtin_info[e->builtin].kind;
        if (k == BK_REDUCE && e->builtin != B_CUMSUM && e->axis == 1 && e->nargs == 1 && e->args[0]->shape.rank == 2 &&
            e->args[0]->shape.dim[0] == e->shape.dim[0] && expr_hint(c, e->args[0], out)) {
            if (!out->bcast[1] && !(layout_tid_plain(out) && out->T[1] <= 32))
                return false;        /* reduced through shared memory, into a layout of its own */
            out->bcast[1] = out->bcast[1] || out->T[1] > 1;
            out->S[1] = out->O[1] = out->V[1] = 1;
            return true;
        }
        if (k != BK_MATH && k != BK_PAIR && k != BK_FMA && k != BK_SELECT && k != BK_BITCAST && k != BK_RAND && !(k == BK_REDUCE && e->nargs == 2))
            return false;
        for (int i = 0; i < e->nargs; i++)
            if (e->args[i]->shape.rank == 2 && e->args[i]->shape.dim[0] == e->shape.dim[0] &&
                e->args[i]->shape.dim[1] == e->shape.dim[1] && expr_hint(c, e->args[i], out))
                return true;
        return false;
    }
    default:
        return false;
    }
}

static void set_hint(Lower *c, Sym *s, Expr *from)
{
    SymInfo *si = info(c, s);
    Layout L;
    if (s->is_shared || si->plan || si->has_hint || s->shape.rank != 2 || !expr_hint(c, from, &L) ||
        L.S[0] != (int)s->shape.dim[0] || L.S[1] != (int)s->shape.dim[1])
        return;
    si->has_hint = true;
    si->hint = L;
}

static void hint_var(Lower *c, Stmt *s)
{
    switch (s->kind) {
    case S_LET:
        if (s->sym)
            set_hint(c, s->sym, s->init);
        break;
    case S_VAR:
        if (s->sym && s->init)
            set_hint(c, s->sym, s->init);
        break;
    case S_ASSIGN:
        if (s->lhs->kind == E_NAME && s->lhs->sym->kind == SYM_VAR)
            set_hint(c, s->lhs->sym, s->rhs);
        break;
    default: break;
    }
}


/* ---- rule 2: vars fed by outer products of broadcasts */

/* A rank-2 shape's rows and columns; a rank-1 tile is one row, a scalar one element. */
static int rows_of(Shape s) { return s.rank == 2 ? (int)s.dim[0] : 1; }
static int cols_of(Shape s) { return s.rank >= 1 ? (int)s.dim[s.rank - 1] : 1; }

static bool elementwise(Expr *e)
{
    switch (e->kind) {
    case E_UNARY:
    case E_CAST: return true;
    case E_BINARY: return e->op != OP_MATMUL;
    case E_CALL: {
        BuiltinKind k = builtin_info[e->builtin].kind;
        return k == BK_MATH || k == BK_PAIR || k == BK_FMA || k == BK_SELECT || k == BK_BITCAST || k == BK_RAND || (k == BK_REDUCE && e->nargs == 2);
    }
    default: return false;
    }
}

static int nopnds(Expr *e) { return e->kind == E_CALL ? e->nargs : e->kind == E_BINARY ? 2 : 1; }
static Expr *opnd(Expr *e, int i) { return e->kind == E_CALL ? e->args[i] : i ? e->b : e->a; }

/* Whether e, of a shape with several rows and columns, repeats a single row of some operand down
 * its rows (*row) and a single column across its columns (*col), anywhere in its elementwise
 * tree; lets are looked through to their definitions (depth bounds the walk). */
static void broadcasts(Lower *c, Expr *e, bool *row, bool *col, int depth)
{
    if (!e || depth > 64)
        return;
    if (e->kind == E_NAME && e->sym->kind == SYM_LET && e->sym->lower) {
        broadcasts(c, info(c, e->sym)->def, row, col, depth + 1);
        return;
    }
    if (!elementwise(e))
        return;
    int M = rows_of(e->shape), N = cols_of(e->shape);
    for (int i = 0; i < nopnds(e); i++) {
        Expr *x = opnd(e, i);
        if (x->shape.rank == 0)
            continue;
        int m = rows_of(x->shape), n = cols_of(x->shape);
        *row = *row || (m == 1 && M > 1 && n == N && N > 1);
        *col = *col || (n == 1 && N > 1 && m == M && M > 1);
        broadcasts(c, x, row, col, depth + 1);
    }
}

/* ---- rule 3: lets next to planned values */

static void plan_let(Lower *c, Sym *s, const Layout *L, int depth);

/* e is to be computed in layout L (of e's shape): the lets it combines elementwise take L, or
 * its broadcast view where they are smaller. */
static void want_layout(Lower *c, Expr *e, const Layout *L, int depth)
{
    if (!e || e->shape.rank == 0 || depth > 64)
        return;
    if (e->kind == E_NAME) {
        if (e->sym->kind == SYM_LET)
            plan_let(c, e->sym, L, depth + 1);
        return;
    }
    if (!elementwise(e))
        return;
    for (int i = 0; i < nopnds(e); i++) {
        Expr *x = opnd(e, i);
        if (x->shape.rank == 0)
            continue;
        if (rows_of(x->shape) == L->S[0] && cols_of(x->shape) == L->S[1] && x->shape.rank == L->rank) {
            want_layout(c, x, L, depth + 1);
        } else {
            Layout v = broadcast_view(L, x->shape);
            want_layout(c, x, &v, depth + 1);
        }
    }
}

static void plan_let(Lower *c, Sym *s, const Layout *L, int depth)
{
    SymInfo *si = info(c, s);
    if (s->is_shared || si->plan || si->has_hint || rows_of(s->shape) != L->S[0] || cols_of(s->shape) != L->S[1])
        return;
    si->has_hint = true;
    si->hint = *L;
    want_layout(c, si->def, L, depth);
}

/* The statements of a kernel, walked with a var to plan: its feeding expressions. */
typedef struct { Sym *var; Expr *feeds[16]; int n; } Feeds;

static void find_feeds(Stmt *s, Feeds *fd)
{
    if (!s)
        return;
    switch (s->kind) {
    case S_BLOCK:
        for (int i = 0; i < s->nbody; i++)
            find_feeds(s->body[i], fd);
        break;
    case S_FOR: find_feeds(s->then, fd); break;
    case S_IF:
        find_feeds(s->then, fd);
        find_feeds(s->els, fd);
        break;
    case S_VAR:
        if (s->sym == fd->var && s->init && s->init->shape.rank > 0 && fd->n < 16)
            fd->feeds[fd->n++] = s->init;
        break;
    case S_ASSIGN:
        if (s->lhs->kind == E_NAME && s->lhs->sym == fd->var && fd->n < 16)
            fd->feeds[fd->n++] = s->rhs;
        break;
    default: break;
    }
}

static void plan_var(Lower *c, Stmt *s)
{
    if (s->kind != S_VAR || !s->sym || s->sym->is_shared || s->sym->shape.rank != 2)
        return;
    SymInfo *si = info(c, s->sym);
    if (si->plan || si->has_hint)
        return;
    Feeds fd = { s->sym, { 0 }, 0 };
    find_feeds(c->k->body, &fd);
    bool row = false, col = false;
    for (int i = 0; i < fd.n; i++)
        broadcasts(c, fd.feeds[i], &row, &col, 0);
    if (!row || !col)
        return;
    Layout L = layout_matmul(s->sym->shape, c->threads);
    si->has_hint = true;
    si->hint = L;
    for (int i = 0; i < fd.n; i++)
        want_layout(c, fd.feeds[i], &L, 0);
}

static void record_def(Lower *c, Stmt *s)
{
    if (s->kind == S_LET && s->sym)
        info(c, s->sym)->def = s->init;
}

void plan_layouts(Lower *c, Stmt *body)
{
    each_simple_stmt(c, body, record_def);
    each_simple_stmt(c, body, hint_var);
    each_simple_stmt(c, body, hint_var);     /* again: a var read before its assignment in a loop */
    each_simple_stmt(c, body, plan_var);
}
