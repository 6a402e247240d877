/* lower_mask.c: when a where()'s mask is all true, told once for the whole block.
 *
 * Tiled loops mask their edges: `where(n + arange(BK) < S, s, -inf)` past the end of a row,
 * `where(cols <= rows, p, 0.0)` above a causal diagonal. Written the natural way the mask is
 * made in every step, and its index tiles move into the values' layout through shared memory
 * each time, though only the blocks at an edge have a false element: attention's backward ran
 * at 0.62 of SDPA with such masks and 0.81 with them made only at the edges (H200,
 * docs/performance.md). A mask built from comparisons of index tiles (arange, expand_dims,
 * sums and differences of them and of i32 scalars, and lets of those) has elements bounded by
 * scalars of the block: `hi(cols) <= lo(rows)` says every `cols <= rows` holds. The where is
 * then lowered past a uniform branch: where the bound holds the values are taken as they are,
 * elsewhere the mask is made and applied, into the values' own registers when they are computed
 * afresh (`let p = where(m, exp(...), 0.0)`, lower_expr.c's select_in_place) or into the var's
 * when the where rewrites it (`t = where(m, t, -inf)`, lower_stmt.c), so no copy of the values
 * is live beside them.
 *
 * The bounds are exact for a comparison of tiles that vary along different axes (a column of
 * keys against a row of queries) and conservative otherwise: a false "all true" is impossible,
 * a missed one costs only the mask. They are computed in i32 as the elements are: an index whose
 * bound overflows overflows itself. */
#include "lower.h"

enum { MASK_DEPTH = 12 };   /* operators and lets followed, at most */

/* An i32 or bool scalar that can be computed again where the test is made: constants, names of
 * non-tensor symbols, operators, casts and min/max/cdiv/where of such. Inside a let followed
 * for its definition (in_let) no var may appear: its value may have changed since. */
static bool pure_scalar(const Expr *e, bool in_let, int depth, bool *loopy)
{
    if (depth > MASK_DEPTH || e->shape.rank != 0)
        return false;
    switch (e->kind) {
    case E_INT: case E_BOOL: case E_BLOCK:
        return true;
    case E_NAME:
        *loopy |= e->sym && e->sym->kind == SYM_LOOP;
        return e->sym && e->sym->kind != SYM_TENSOR && !e->sym->is_shared &&
               !(in_let && e->sym->kind == SYM_VAR);
    case E_UNARY: case E_CAST:
        return pure_scalar(e->a, in_let, depth + 1, loopy);
    case E_BINARY:
        return e->op != OP_MATMUL && pure_scalar(e->a, in_let, depth + 1, loopy) &&
               pure_scalar(e->b, in_let, depth + 1, loopy);
    case E_CALL:
        if (e->builtin != B_MAXIMUM && e->builtin != B_MINIMUM && e->builtin != B_CDIV &&
            e->builtin != B_SELECT)
            return false;
        for (int i = 0; i < e->nargs; i++)
            if (!pure_scalar(e->args[i], in_let, depth + 1, loopy))
                return false;
        return true;
    default:
        return false;
    }
}

/* The let e names, if any, with a definition to follow. */
static const Expr *let_def(Lower *c, const Expr *e)
{
    if (e->kind != E_NAME || !e->sym || e->sym->kind != SYM_LET || e->sym->is_shared)
        return NULL;
    const SymInfo *si = e->sym->lower;
    (void)c;
    return si ? si->def : NULL;
}

/* [lo, hi] of the elements of the i32 index tile e, as operands computed here. */
static bool bounds(Lower *c, const Expr *e, Opnd *lo, Opnd *hi, int depth, bool in_let, bool *loopy)
{
    if (depth > MASK_DEPTH || e->type != TY_I32)
        return false;
    if (e->shape.rank == 0) {
        if (!pure_scalar(e, in_let, depth, loopy))
            return false;
        Tile t = lower_expr(c, (Expr *)e, NULL);
        *lo = *hi = t.v[0];
        return true;
    }
    switch (e->kind) {
    case E_CALL:
        if (e->builtin == B_ARANGE) {
            *lo = IMM(0);
            *hi = IMM(e->shape.dim[e->shape.rank - 1] - 1);
            return true;
        }
        return e->builtin == B_EXPAND_DIMS && bounds(c, e->args[0], lo, hi, depth + 1, in_let, loopy);
    case E_BINARY: {
        Opnd alo, ahi, blo, bhi;
        if ((e->op != '+' && e->op != '-') || !bounds(c, e->a, &alo, &ahi, depth + 1, in_let, loopy) ||
            !bounds(c, e->b, &blo, &bhi, depth + 1, in_let, loopy))
            return false;
        *lo = binop_slot(c, e->op, TY_I32, alo, e->op == '+' ? blo : bhi);
        *hi = binop_slot(c, e->op, TY_I32, ahi, e->op == '+' ? bhi : blo);
        return true;
    }
    case E_NAME: {
        const Expr *d = let_def(c, e);
        return d && bounds(c, d, lo, hi, depth + 1, true, loopy);
    }
    default:
        return false;
    }
}

/* A predicate that every element of the bool tile e is true, or -1. */
static int all_true(Lower *c, const Expr *e, int depth, bool in_let, bool *loopy)
{
    Func *f = c->f;
    if (depth > MASK_DEPTH || e->type != TY_BOOL)
        return -1;
    if (e->shape.rank == 0) {          /* a scalar of the block: `causal == 0` */
        if (!pure_scalar(e, in_let, depth, loopy))
            return -1;
        Tile t = lower_expr(c, (Expr *)e, NULL);
        return opnd_reg(c, t.v[0], PT_PRED);
    }
    if (e->kind == E_NAME) {
        const Expr *d = let_def(c, e);
        return d ? all_true(c, d, depth + 1, true, loopy) : -1;
    }
    if (e->kind != E_BINARY)
        return -1;
    switch (e->op) {
    case OP_AND: case OP_OR: {
        int x = all_true(c, e->a, depth + 1, in_let, loopy), y = all_true(c, e->b, depth + 1, in_let, loopy);
        if (x >= 0 && y >= 0)
            return ir_bin(f, e->op == OP_AND ? OP_BAND : OP_BOR, PT_PRED, R(x), R(y));
        /* one side all true makes an `||` all true; an `&&` needs both */
        return e->op == OP_OR ? (x >= 0 ? x : y) : -1;
    }
    case '<': case OP_LE: case '>': case OP_GE: {
        Opnd alo, ahi, blo, bhi;
        if (e->a->type != TY_I32 || e->b->type != TY_I32 ||
            !bounds(c, e->a, &alo, &ahi, depth + 1, in_let, loopy) ||
            !bounds(c, e->b, &blo, &bhi, depth + 1, in_let, loopy))
            return -1;
        /* a < b everywhere: the largest a below the smallest b; a > b: the smallest a above the
           largest b */
        bool below = e->op == '<' || e->op == OP_LE;
        Opnd x = below ? ahi : alo, y = below ? blo : bhi;
        if (is_imm(x) && is_imm(y)) {
            int64_t u = x.i, v = y.i;
            bool holds = e->op == '<' ? u < v : e->op == OP_LE ? u <= v : e->op == '>' ? u > v : u >= v;
            if (!holds)
                return -1;          /* never all true: the mask is needed in every block */
        }
        return opnd_reg(c, cmp_slot(c, e->op, TY_I32, x, y), PT_PRED);
    }
    default:
        return -1;
    }
}

/* Only a mask that moves with a loop variable is split: one made once (a row's `arange(BN) <
 * N` in a kernel without a loop) has no interior steps to save, and its branch only changes
 * what ptxas keeps live (layernorm: 37 -> 38 registers, not faster). */
int mask_all_true(Lower *c, const Expr *e)
{
    bool loopy = false;
    int all = all_true(c, e, 0, false, &loopy);
    return loopy ? all : -1;
}

/* ---- a let read once: its registers may take the mask in place */

static int uses_in(const Expr *e, const Sym *v)
{
    if (!e)
        return 0;
    /* twin is another view of the same window, never lowered beside it */
    int n = e->kind == E_NAME && e->sym == v;
    n += uses_in(e->a, v) + uses_in(e->b, v) + uses_in(e->base, v) + uses_in(e->fill, v);
    for (int i = 0; i < e->nargs; i++)
        n += uses_in(e->args[i], v);
    for (int i = 0; i < e->nidx; i++)
        n += uses_in(e->idx[i].start, v) + uses_in(e->idx[i].width_expr, v);
    return n;
}

/* The uses of v in s; those under a loop that s holds count as many (a let of the loop's
 * enclosing block is read again each step). */
static int uses_stmt(const Stmt *s, const Sym *v)
{
    if (!s)
        return 0;
    const Expr *es[] = { s->init, s->lhs, s->rhs, s->cond, s->lo, s->hi, s->step };
    int n = 0;
    for (size_t i = 0; i < sizeof es / sizeof es[0]; i++)
        n += uses_in(es[i], v);
    for (int i = 0; i < s->nbody; i++)
        n += uses_stmt(s->body[i], v);
    int inner = uses_stmt(s->then, v) + uses_stmt(s->els, v);
    return n + (s->kind == S_FOR && inner ? 2 * inner : inner);
}

/* The block statement that declares the let v, or NULL. */
static const Stmt *decl_block(const Stmt *s, const Sym *v)
{
    if (!s)
        return NULL;
    for (int i = 0; i < s->nbody; i++)
        if (s->body[i]->kind == S_LET && s->body[i]->sym == v)
            return s;
    for (int i = 0; i < s->nbody; i++) {
        const Stmt *d = decl_block(s->body[i], v);
        if (d)
            return d;
    }
    const Stmt *d = decl_block(s->then, v);
    return d ? d : decl_block(s->els, v);
}

bool mask_value_once(Lower *c, const Sym *v)
{
    if (!v || v->kind != SYM_LET || v->is_shared || !c->f->k)
        return false;
    const Stmt *b = decl_block(c->f->k->body, v);
    /* read once in the block that declares it, and not again in a step of a loop there */
    return b && uses_stmt(b, v) == 1;
}

/* ---- an index tile let read once: made where it is read

 * `let keys = n0 + expand_dims(arange(BN), 1)` before `pt = where(keys <= qs, pt, 0.0)` made
 * its registers at the let, before the where's test of the block, and held them across it:
 * attention's dK/dV kernel so written needed 8 more registers than with the same expressions
 * inside the where, and lost a block per multiprocessor (0.73 -> 0.96 of SDPA at head dim 64,
 * H200). A let of index tiles (arange, expand_dims, arithmetic, comparisons and logic of them
 * and of scalars that name no var) read once, outside any loop of its block, is lowered where
 * it is read, as if written there: nothing it names can change in between. */
static bool index_expr(const Expr *e, int depth)
{
    bool loopy = false;
    if (depth > MASK_DEPTH)
        return false;
    if (e->shape.rank == 0)
        return (e->type == TY_I32 || e->type == TY_BOOL) && pure_scalar(e, true, depth, &loopy);
    if (e->type != TY_I32 && e->type != TY_BOOL)
        return false;
    switch (e->kind) {
    case E_CALL:
        return e->builtin == B_ARANGE ||
               (e->builtin == B_EXPAND_DIMS && index_expr(e->args[0], depth + 1));
    case E_UNARY:
        return index_expr(e->a, depth + 1);
    case E_BINARY:
        return e->op != OP_MATMUL && e->op != '/' && e->op != '%' && index_expr(e->a, depth + 1) &&
               index_expr(e->b, depth + 1);
    case E_NAME:
        return e->sym && e->sym->kind == SYM_LET && !e->sym->is_shared;
    default:
        return false;
    }
}

bool let_made_at_use(Lower *c, const Stmt *s)
{
    return s->kind == S_LET && !s->sym->is_shared && s->init->shape.rank > 0 &&
           (s->sym->type == s->init->type || s->sym->type == TY_NONE) && index_expr(s->init, 0) &&
           mask_value_once(c, s->sym);
}
