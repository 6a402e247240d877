/* transpose_push.c: x.T of a value pushed down to where it costs nothing, and a let read only
 * transposed computed transposed.
 *
 * Contract: runs on a checked kernel body (no errors); rewrites expressions in place into ones
 * with the same values; never changes what the kernel computes.
 *
 * The transpose of a tile in registers moves it through shared memory (lower_tile.c,
 * tile_transpose): a write, a barrier, a read down the columns. Written the way the FA2 paper
 * writes attention's backward,
 *
 *     let s = Q[h, m +: BQ, :] @ K[kv, n0 +: BN, :].T;
 *     let p = exp(s * scale - expand_dims(L[h, m +: BQ], 1));
 *     dv += f16(p).T @ dO[h, m +: BQ, :];
 *
 * that is a trip a step for each of P and dS. But a transpose goes through elementwise work to
 * its operands ((a * b).T = a.T * b.T, f16(x).T = f16(x.T), a row [N] broadcast as [1, N] becomes
 * the column expand_dims(x, 1)), through a product by swapping it ((A @ B).T = B.T @ A.T), and a
 * window's transpose is the window read the other way, which costs nothing. So where every read
 * of a let is transposed, the let is computed transposed (`s` above as K @ Q.T, p from it), and
 * each `x.T` of such lets, windows and elementwise work of them becomes the expression with the
 * transposes at its leaves, gone. What cannot take a transpose (a reduction, a slice, a gather,
 * an 8-bit product, whose operands the tensor cores read in one order only) keeps its `.T`, which
 * is then moved through shared memory as written.
 *
 * Which lets go transposed is a fixed point: start with every 2-D let, drop any read other than
 * through a transpose (directly, or inside the definition of another let that goes transposed),
 * any read at all for one never read transposed, and any whose definition cannot take the
 * transpose; repeat until nothing changes. Each round only removes, so it ends. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

enum { MAX_ROUNDS = 32 };

typedef struct {
    Check *c;
    Sym **let; int nlet;     /* the 2-D lets of the kernel */
    bool *in;                /* ... which are (still) computed transposed */
    int *plain, *tposed;     /* reads of each: as it is, under a transpose */
} Push;

/* The lets are kept in address order: a read finds its let by binary search, so a kernel of
 * thousands of lets costs a logarithm a read, not a scan. */
static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(Sym *const *)a, y = (uintptr_t)*(Sym *const *)b;
    return (x > y) - (x < y);
}

static int let_index(const Push *t, const Sym *s)
{
    int lo = 0, hi = t->nlet - 1;
    while (s && lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        uintptr_t m = (uintptr_t)t->let[mid], x = (uintptr_t)s;
        if (m == x)
            return mid;
        if (m < x)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Products the transposition may swap: tensor-core or FFMA products of 16- and 32-bit floats. */
static bool swappable_matmul(const Expr *e)
{
    ElemType x = e->a->type, y = e->b->type;
    return (x == TY_F16 || x == TY_BF16 || x == TY_F32 || x == TY_TF32) && x == y;
}

static bool elementwise_call(const Expr *e)
{
    BuiltinKind k = builtin_info[e->builtin].kind;
    return e->shape.rank == 2 && (k == BK_MATH || k == BK_PAIR || k == BK_FMA || k == BK_SELECT);
}

/* A row [N] whose column [N, 1] is made from its parts turned (`n0 + arange(BN)` as `n0 +
 * expand_dims(arange(BN), 1)`, each thread making its own rows' indices, where the row made and
 * then turned would move through shared memory): a let, elementwise arithmetic, a cast. */
static bool row_kind(const Expr *e)
{
    return e->kind == E_NAME || e->kind == E_UNARY || e->kind == E_CAST ||
           (e->kind == E_BINARY && e->op != OP_MATMUL);
}

/* Can e.T be written without a transpose of a value left in it (the lets in t->in taken as
 * computed transposed)? */
static bool can_push(const Push *t, const Expr *e, int depth)
{
    if (depth > MAX_EXPR_DEPTH)
        return false;
    if (e->shape.rank < 2)
        return true;       /* a scalar is its own transpose; a row [N] becomes a column */
    switch (e->kind) {
    case E_NAME: {
        int i = let_index(t, e->sym);
        return i >= 0 && t->in[i];
    }
    case E_TRANSPOSE:
        return true;       /* (x.T).T = x */
    case E_INDEX: {
        int d0, d1;
        return e->twin || window_dims(e, &d0, &d1);
    }
    case E_UNARY: case E_CAST:
        return can_push(t, e->a, depth + 1);
    case E_BINARY:
        if (e->op == OP_MATMUL && !swappable_matmul(e))
            return false;
        return can_push(t, e->a, depth + 1) && can_push(t, e->b, depth + 1);
    case E_CALL:
        if (e->builtin == B_EXPAND_DIMS)
            return true;
        if (!elementwise_call(e))
            return false;
        for (int i = 0; i < e->nargs; i++)
            if (!can_push(t, e->args[i], depth + 1))
                return false;
        return true;
    default:
        return false;
    }
}

/* ---- counting reads */

static void count_expr(Push *t, Expr *e, bool tposed, int depth);

static void count_children(Push *t, Expr *e, bool tposed, int depth)
{
    count_expr(t, e->a, tposed, depth + 1);
    count_expr(t, e->b, tposed, depth + 1);
    for (int i = 0; i < e->nargs; i++)
        count_expr(t, e->args[i], tposed, depth + 1);
}

/* The reads of lets in e, which the transposition reaches (tposed) or not. */
static void count_expr(Push *t, Expr *e, bool tposed, int depth)
{
    if (!e || depth > MAX_EXPR_DEPTH)
        return;
    if (tposed && (e->shape.rank == 0 || (e->shape.rank == 1 && !row_kind(e))))
        tposed = false;    /* a scalar, or a row made as it is and then turned */
    switch (e->kind) {
    case E_NAME: {
        int i = let_index(t, e->sym);
        if (i >= 0)
            (tposed ? t->tposed : t->plain)[i]++;
        return;
    }
    case E_TRANSPOSE:
        /* pushed if it can be, and then its operand is read transposed; else as it is */
        count_expr(t, e->a, !tposed && can_push(t, e->a, 0), depth + 1);
        return;
    case E_INDEX:
        if (e->base)
            count_expr(t, e->base, false, depth + 1);
        for (int i = 0; i < e->nidx; i++) {
            count_expr(t, e->idx[i].start, false, depth + 1);
            count_expr(t, e->idx[i].width_expr, false, depth + 1);
        }
        count_expr(t, e->fill, false, depth + 1);
        return;
    default:
        count_children(t, e, tposed, depth);
        return;
    }
}

static void count_stmt(Push *t, Stmt *s)
{
    if (!s)
        return;
    if (s->kind == S_LET) {
        int i = let_index(t, s->sym);
        count_expr(t, s->init, i >= 0 && t->in[i], 0);
    } else {
        Expr *es[] = { s->init, s->lhs, s->rhs, s->cond, s->lo, s->hi, s->step, s->pipeline_expr };
        for (size_t k = 0; k < sizeof es / sizeof es[0]; k++)
            count_expr(t, es[k], false, 0);
    }
    for (int i = 0; i < s->nbody; i++)
        count_stmt(t, s->body[i]);
    count_stmt(t, s->then);
    count_stmt(t, s->els);
}

static void find_lets(Push *t, Stmt *s, int *cap)
{
    if (!s)
        return;
    if (s->kind == S_LET && s->sym && s->sym->kind == SYM_LET && !s->sym->is_shared &&
        s->init && (s->init->shape.rank == 2 || s->init->shape.rank == 1) && s->init->type != TY_NONE) {
        if (t->nlet == *cap) {
            *cap = *cap ? 2 * *cap : 16;
            t->let = realloc(t->let, sizeof *t->let * (size_t)*cap);
            if (!t->let)
                die("out of memory");
        }
        t->let[t->nlet++] = s->sym;
    }
    for (int i = 0; i < s->nbody; i++)
        find_lets(t, s->body[i], cap);
    find_lets(t, s->then, cap);
    find_lets(t, s->els, cap);
}

/* Drops a let whose definition cannot take the transpose. */
static bool drop_unpushable(Push *t, Stmt *s)
{
    bool changed = false;
    if (!s)
        return false;
    if (s->kind == S_LET) {
        int i = let_index(t, s->sym);
        if (i >= 0 && t->in[i] && !can_push(t, s->init, 0)) {
            t->in[i] = false;
            changed = true;
        }
    }
    for (int i = 0; i < s->nbody; i++)
        changed |= drop_unpushable(t, s->body[i]);
    changed |= drop_unpushable(t, s->then);
    changed |= drop_unpushable(t, s->els);
    return changed;
}

/* ---- rewriting */

static Expr *new_node(Push *t, const Expr *like)
{
    Expr *n = arena_alloc(t->c->a, sizeof *n);
    *n = *like;
    return n;
}

static Shape swapped(Shape s)
{
    Shape r = s;
    r.dim[0] = s.dim[1];
    r.dim[1] = s.dim[0];
    return r;
}

static Expr *rewrite(Push *t, Expr *e, int depth);
static Expr *plain_row(Expr *x, const Expr *n);

/* e.T, can_push(e) having said it can be written so. */
static Expr *push(Push *t, Expr *e, int depth)
{
    if (e->shape.rank == 0)
        return rewrite(t, e, depth + 1);
    if (e->shape.rank == 1 && row_kind(e)) {   /* the column made as one: its parts turned */
        Expr *n;
        switch (e->kind) {
        case E_NAME:                   /* a row let read only turned is made a column */
            if (let_index(t, e->sym) >= 0 && t->in[let_index(t, e->sym)]) {
                n = new_node(t, e);
                n->shape = e->sym->shape;
                return n;
            }
            break;
        case E_UNARY: case E_CAST:
            n = new_node(t, e);
            n->a = push(t, e->a, depth + 1);
            n->shape = (Shape){ .rank = 2, .dim = { e->shape.dim[0], 1 } };
            return n;
        case E_BINARY:
            n = new_node(t, e);
            n->a = push(t, e->a, depth + 1);
            n->b = push(t, e->b, depth + 1);
            n->shape = (Shape){ .rank = 2, .dim = { e->shape.dim[0], 1 } };
            return n;
        default:
            break;
        }
    }
    if (e->shape.rank == 1) {          /* a row [N] as the column [N, 1] */
        Expr *n = new_node(t, e);
        memset(n, 0, sizeof *n);
        n->kind = E_CALL;
        n->loc = e->loc;
        n->name = "expand_dims";
        n->builtin = B_EXPAND_DIMS;
        n->nargs = 2;
        n->args = arena_alloc(t->c->a, sizeof *n->args * 2);
        n->args[0] = rewrite(t, e, depth + 1);
        Expr *ax = arena_alloc(t->c->a, sizeof *ax);
        memset(ax, 0, sizeof *ax);
        ax->kind = E_INT;
        ax->loc = e->loc;
        ax->ival = 1;
        ax->type = TY_I32;
        n->args[1] = ax;
        n->axis = 1;
        n->type = e->type;
        n->shape = (Shape){ .rank = 2, .dim = { e->shape.dim[0], 1 } };
        return n;
    }
    Expr *n;
    switch (e->kind) {
    case E_NAME:                       /* a let computed transposed: its shape is swapped */
        n = new_node(t, e);
        n->shape = e->sym->shape;
        return n;
    case E_TRANSPOSE:
        return rewrite(t, e->a, depth + 1);
    case E_INDEX:
        if (e->twin)
            return e->twin;
        n = transposed_window(t->c, e);
        n->twin = e;
        return n;
    case E_UNARY: case E_CAST:
        n = new_node(t, e);
        n->a = push(t, e->a, depth + 1);
        n->shape = swapped(e->shape);
        return n;
    case E_BINARY:
        n = new_node(t, e);
        n->shape = swapped(e->shape);
        if (e->op == OP_MATMUL) {      /* (A @ B).T = B.T @ A.T */
            n->a = push(t, e->b, depth + 1);
            n->b = push(t, e->a, depth + 1);
            find_twin(t->c, n->a);
            find_twin(t->c, n->b);
        } else {
            n->a = plain_row(push(t, e->a, depth + 1), n);
            n->b = plain_row(push(t, e->b, depth + 1), n);
        }
        return n;
    case E_CALL:
        n = new_node(t, e);
        n->shape = swapped(e->shape);
        if (e->builtin == B_EXPAND_DIMS) {   /* [N] as a column <-> as a row */
            n->axis = 1 - e->axis;
            n->args = arena_alloc(t->c->a, sizeof *n->args * 2);
            n->args[0] = rewrite(t, e->args[0], depth + 1);
            n->args[1] = new_node(t, e->args[1]);
            n->args[1]->ival = n->axis;
            return n;
        }
        n->args = arena_alloc(t->c->a, sizeof *n->args * (size_t)e->nargs);
        for (int i = 0; i < e->nargs; i++)
            n->args[i] = plain_row(push(t, e->args[i], depth + 1), n);
        return n;
    default:
        return e;                      /* unreachable: can_push said no */
    }
}

/* An operand the pushed form of a 2-D elementwise node n holds: a row made of a rank-1 tile,
 * expand_dims(x, 0), beside a 2-D tile as wide as it is that same x, broadcast as a row (a rank-1
 * tile's own shape in a 2-D operation), which a load of x can make in the other operand's
 * layout (a column of L in attention's `s - expand_dims(L, 1)`, transposed, is L again). */
static Expr *plain_row(Expr *x, const Expr *n)
{
    if (x->kind == E_CALL && x->builtin == B_EXPAND_DIMS && x->axis == 0 && n->shape.rank == 2 &&
        n->shape.dim[0] > 1 && x->shape.dim[1] == n->shape.dim[1])
        return x->args[0];
    return x;
}

/* e with each pushable x.T inside it replaced by the pushed form. */
static Expr *rewrite(Push *t, Expr *e, int depth)
{
    if (!e || depth > MAX_EXPR_DEPTH)
        return e;
    if (e->kind == E_TRANSPOSE) {
        if (can_push(t, e->a, 0))
            return push(t, e->a, depth + 1);
        e->a = rewrite(t, e->a, depth + 1);
        return e;
    }
    if (e->kind == E_INDEX) {
        for (int i = 0; i < e->nidx; i++)
            e->idx[i].start = rewrite(t, e->idx[i].start, depth + 1);
        return e;
    }
    e->a = rewrite(t, e->a, depth + 1);
    e->b = rewrite(t, e->b, depth + 1);
    for (int i = 0; i < e->nargs; i++)
        e->args[i] = rewrite(t, e->args[i], depth + 1);
    return e;
}

static void rewrite_stmt(Push *t, Stmt *s)
{
    if (!s)
        return;
    if (s->kind == S_LET) {
        int i = let_index(t, s->sym);
        s->init = i >= 0 && t->in[i] ? push(t, s->init, 0) : rewrite(t, s->init, 0);
    } else {
        Expr **es[] = { &s->init, &s->rhs, &s->cond, &s->lo, &s->hi, &s->step };
        for (size_t k = 0; k < sizeof es / sizeof es[0]; k++)
            *es[k] = rewrite(t, *es[k], 0);
        if (s->lhs && s->lhs->kind == E_INDEX)
            rewrite(t, s->lhs, 0);
    }
    for (int i = 0; i < s->nbody; i++)
        rewrite_stmt(t, s->body[i]);
    rewrite_stmt(t, s->then);
    rewrite_stmt(t, s->els);
}

/* Is there a transpose of a value anywhere (the common case: none, and nothing to do)? */
static bool has_transpose(const Expr *e, int depth)
{
    if (!e || depth > MAX_EXPR_DEPTH)
        return false;
    if (e->kind == E_TRANSPOSE)
        return true;
    if (has_transpose(e->a, depth + 1) || has_transpose(e->b, depth + 1))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (has_transpose(e->args[i], depth + 1))
            return true;
    return false;
}

static bool stmt_has_transpose(const Stmt *s)
{
    if (!s)
        return false;
    const Expr *es[] = { s->init, s->lhs, s->rhs, s->cond, s->lo, s->hi, s->step };
    for (size_t k = 0; k < sizeof es / sizeof es[0]; k++)
        if (has_transpose(es[k], 0))
            return true;
    for (int i = 0; i < s->nbody; i++)
        if (stmt_has_transpose(s->body[i]))
            return true;
    return stmt_has_transpose(s->then) || stmt_has_transpose(s->els);
}

void push_transposes(Check *c, Stmt *body)
{
    if (!stmt_has_transpose(body))
        return;
    Push t = { .c = c };
    int cap = 0;
    find_lets(&t, body, &cap);
    if (t.nlet)
        qsort(t.let, (size_t)t.nlet, sizeof *t.let, by_address);
    t.in = calloc((size_t)t.nlet + 1, sizeof *t.in);
    t.plain = calloc((size_t)t.nlet + 1, sizeof *t.plain);
    t.tposed = calloc((size_t)t.nlet + 1, sizeof *t.tposed);
    if (!t.in || !t.plain || !t.tposed)
        die("out of memory");
    for (int i = 0; i < t.nlet; i++)
        t.in[i] = true;
    /* A round walks the whole body; a chain of lets each read transposed in the next may take
       a round a let to settle. Past MAX_ROUNDS nothing is pushed: the transposes stay as
       written (through shared memory), never wrong, and the compile time stays linear. */
    int rounds = 0;
    for (bool changed = true; changed; rounds++) {
        if (rounds == MAX_ROUNDS) {
            memset(t.in, 0, sizeof *t.in * (size_t)t.nlet);
            break;
        }
        changed = drop_unpushable(&t, body);
        memset(t.plain, 0, sizeof *t.plain * (size_t)t.nlet);
        memset(t.tposed, 0, sizeof *t.tposed * (size_t)t.nlet);
        count_stmt(&t, body);
        for (int i = 0; i < t.nlet; i++)
            if (t.in[i] && (t.plain[i] || !t.tposed[i])) {
                t.in[i] = false;
                changed = true;
            }
    }
    for (int i = 0; i < t.nlet; i++) {
        Shape *sh = &t.let[i]->shape;
        if (t.in[i])
            *sh = sh->rank == 1 ? (Shape){ .rank = 2, .dim = { sh->dim[0], 1 } } : swapped(*sh);
    }
    rewrite_stmt(&t, body);
    free(t.let);
    free(t.in);
    free(t.plain);
    free(t.tposed);
}
