/* check.c: semantic checks of the parsed program (the contract is in tilec.h).
 *
 * Names, types, shapes, constant folding (const, -D) and what is legal where. It reports as many
 * errors as it can: an expression with an error gets type TY_NONE and every check that sees a
 * TY_NONE operand stays silent, so one mistake gives one message. Statements are checked here;
 * expressions in check_expr.c. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ---------------------------------------------------------------- types */

static const char *const type_names[TY_COUNT] = {
    [TY_NONE] = "<error>", [TY_BOOL] = "bool", [TY_I32] = "i32", [TY_U32] = "u32",
    [TY_I64] = "i64", [TY_F16] = "f16", [TY_BF16] = "bf16", [TY_F32] = "f32", [TY_TF32] = "tf32",
    [TY_I8] = "i8", [TY_U8] = "u8", [TY_F8E4M3] = "f8e4m3", [TY_F8E5M2] = "f8e5m2",
};

const char *type_name(ElemType t)
{
    return t < TY_COUNT ? type_names[t] : "<bad type>";
}

int type_size(ElemType t)
{
    switch (t) {
    case TY_BOOL: case TY_I8: case TY_U8: case TY_F8E4M3: case TY_F8E5M2: return 1;
    case TY_F16: case TY_BF16: return 2;
    case TY_I32: case TY_U32: case TY_F32: case TY_TF32: return 4;
    case TY_I64: return 8;
    default: return 0;
    }
}

bool type_is_float(ElemType t) { return t == TY_F16 || t == TY_BF16 || t == TY_F32 || t == TY_TF32 || type_is_f8(t); }
bool type_is_int(ElemType t) { return t == TY_I32 || t == TY_U32 || t == TY_I64 || t == TY_I8 || t == TY_U8; }
bool type_is_8bit(ElemType t) { return t == TY_I8 || t == TY_U8 || type_is_f8(t); }
bool type_is_f8(ElemType t) { return t == TY_F8E4M3 || t == TY_F8E5M2; }

int program_min_sm(const Program *p)
{
    for (int i = 0; i < p->nkernels; i++)
        for (int j = 0; j < p->kernels[i]->nparams; j++)
            if (type_is_f8(p->kernels[i]->params[j].type))
                return 89;
    return 0;
}

/* ---------------------------------------------------------------- names */

Sym *new_sym(Check *c, SymKind kind, const char *name, Loc loc)
{
    Sym *s = arena_alloc(c->a, sizeof *s);
    s->kind = kind;
    s->name = name;
    s->loc = loc;
    if (c->k && kind != SYM_CONST)
        vec_push(&c->syms, s);
    return s;
}

/* Names are hashed: a file of 100000 consts must not take a scan of them per use. There is no
 * shadowing (declare), so a name maps to one symbol at a time. */
Sym *lookup(Check *c, const char *name)
{
    Sym *s = map_get(&c->scope_names, name);
    return s ? s : map_get(&c->const_names, name);
}

void scope_push(Check *c, Sym *s)
{
    vec_push(&c->scope, s);
    map_put(&c->scope_names, s->name, s);
}

void scope_pop(Check *c, int mark)
{
    while (c->scope.n > mark)
        map_del(&c->scope_names, c->scope.v[--c->scope.n]->name);
}

/* Adds s to the innermost scope, or reports the clash with a visible name of the same spelling
 * (there is no shadowing: a kernel is short and a shadowed name is a likely mistake). */
static bool declare(Check *c, Sym *s)
{
    Sym *old = lookup(c, s->name);
    if (old) {
        error_at(s->loc, "'%s' is already declared", s->name);
        note_at(old->loc, "'%s' was declared here", s->name);
        return false;
    }
    if (s->kind == SYM_CONST) {
        vec_push(&c->consts, s);
        map_put(&c->const_names, s->name, s);
    } else {
        scope_push(c, s);
    }
    return true;
}

/* ---------------------------------------------------------------- constants and -D */

/* Parses a -D value: an integer (decimal or 0x hex, optional '-') or a float literal. */
static bool parse_define(const char *v, Expr *out)
{
    if (!*v)
        return false;
    char *end;
    errno = 0;
    long long i = strtoll(v, &end, 0);
    if (!*end && errno == 0 && !(v[0] == '0' && v[1] && v[1] != 'x' && v[1] != 'X')) {
        out->kind = E_INT;
        out->ival = i;
        return true;
    }
    errno = 0;
    double f = strtod(v, &end);
    if (!*end && errno == 0 && isfinite(f) && (strchr(v, '.') || strchr(v, 'e') || strchr(v, 'E'))) {
        out->kind = E_FLOAT;
        out->fval = f;
        return true;
    }
    return false;
}

static void check_consts(Check *c, Define *defs, int ndefs)
{
    Program *p = c->p;
    for (int i = 0; i < p->nconsts; i++) {
        ConstDecl *d = &p->consts[i];
        Sym *s = new_sym(c, SYM_CONST, d->name, d->loc);
        Define *def = NULL;
        for (int j = 0; j < ndefs; j++)
            if (!strcmp(defs[j].name, d->name))
                def = &defs[j];
        if (def) {
            def->used = true;
            Expr v = {.loc = d->loc};
            if (!parse_define(def->value, &v)) {
                error_at(d->loc, "-D %s=%s: the value is not an integer or float literal",
                         def->name, def->value);
                s->type = TY_NONE;
            } else {
                *d->value = (Expr){.kind = v.kind, .loc = d->value->loc, .ival = v.ival,
                                   .fval = v.fval, .axis = -1};
                d->overridden = true;
            }
        }
        check_expr(c, d->value);
        Expr *e = d->value;
        if (e->type != TY_NONE) {
            if (e->kind == E_INT) {
                s->ival = e->ival;
                s->fval = (double)e->ival;
                s->type = e->type;
            } else if (e->kind == E_FLOAT) {
                s->is_float = true;
                s->fval = e->fval;
                s->type = TY_F32;
            } else {
                error_at(e->loc, "the value of const '%s' must be a constant number", d->name);
                s->type = TY_NONE;
            }
        }
        declare(c, s);
    }
    for (int j = 0; j < ndefs; j++)
        if (!defs[j].used)
            sys_error("-D %s=%s: there is no const named '%s'", defs[j].name, defs[j].value,
                      defs[j].name);
}

/* ---------------------------------------------------------------- kernel parameters */

static int rpn_tokens(const Expr *e);
static Loc start_loc(const Expr *e);

/* The symbol of a name used as a size: a new size symbol (shared by all the kernel's parameters)
 * the first time, else what it names. */
static Sym *size_name(Check *c, Expr *e)
{
    Sym *s = lookup(c, e->name);
    if (!s) {
        s = new_sym(c, SYM_SIZE, e->name, e->loc);
        s->type = TY_I32;
        s->size_index = c->sizes.n;
        vec_push(&c->sizes, s);
        scope_push(c, s);
    }
    return s;
}

/* A stride written as an expression (strides(S * D, D, 1), a head's view into [B, S, H, D]):
 * sizes, consts and integers joined by + and *. Sizes are never negative and the integers must
 * be positive, so the stride is never negative, and it can be computed at launch (TMA's pitch). */
static bool stride_expr_ok(Check *c, Expr *e, int depth)
{
    if (depth > MAX_NESTING)
        return false;
    switch (e->kind) {
    case E_INT:
        return true;
    case E_NAME: {
        Sym *s = size_name(c, e);
        if (s->kind == SYM_SIZE || s->kind == SYM_CONST)
            return true;
        error_at(e->loc, "'%s' is a parameter, not a size", e->name);
        note_at(s->loc, "'%s' was declared here", e->name);
        return false;
    }
    case E_BINARY:
        if (e->op != '+' && e->op != '*')
            break;
        return stride_expr_ok(c, e->a, depth + 1) && stride_expr_ok(c, e->b, depth + 1);
    default:
        break;
    }
    error_at(start_loc(e), "a tensor stride must be a size, an integer constant, or sizes and "
             "constants joined by '+' and '*'");
    return false;
}

/* The first integer of a checked stride expression that is not positive or passes i32, or NULL. */
static const Expr *bad_int(const Expr *e)
{
    if (e->kind == E_INT)
        return e->ival > 0 && e->ival <= INT32_MAX ? NULL : e;
    if (e->kind == E_BINARY)
        return bad_int(e->a) ? bad_int(e->a) : bad_int(e->b);
    return NULL;
}

/* A tensor dimension or stride: a bare name that is not a const is a size symbol, shared by all
 * the kernel's parameters; a stride may also be an expression of sizes (stride_expr_ok); anything
 * else must fold to a positive constant. */
static Extent check_extent(Check *c, Expr *e, bool is_stride)
{
    Extent x = {.cval = 1};
    if (is_stride && e->kind == E_BINARY && (e->op == '+' || e->op == '*')) {
        if (!stride_expr_ok(c, e, 0))
            return x;
        check_expr(c, e);
        if (e->type == TY_NONE)
            return x;
        if (e->kind != E_INT) {
            const Expr *bad = bad_int(e);
            if (bad) {
                error_at(bad->loc, "the integers in a tensor stride must be positive and fit in i32, "
                         "not %lld", (long long)bad->ival);
                return x;
            }
            if (rpn_tokens(e) > TILERT_MAX_RPN) {
                error_at(start_loc(e), "this stride takes %d terms to evaluate at launch; the launcher "
                         "takes at most %d", rpn_tokens(e), TILERT_MAX_RPN);
                return x;
            }
            x.expr = e;
            return x;
        }
    }
    if (e->kind == E_NAME) {
        Sym *s = size_name(c, e);
        if (s->kind == SYM_SIZE) {
            e->sym = s;
            e->type = TY_I32;
            x.size = s;
            return x;
        }
        if (s->kind != SYM_CONST) {
            error_at(e->loc, "'%s' is a parameter, not a size", e->name);
            note_at(s->loc, "'%s' was declared here", e->name);
            return x;
        }
    }
    check_expr(c, e);
    if (e->type == TY_NONE)
        return x;
    if (e->kind != E_INT) {
        error_at(start_loc(e), is_stride ? "a tensor stride must be a size, an integer constant, or sizes "
                 "and constants joined by '+' and '*'" : "a tensor dimension must be a size name or an "
                 "integer constant");
        return x;
    }
    if (e->ival <= 0 || e->ival > INT32_MAX) {
        error_at(e->loc, "a tensor %s must be positive and fit in i32, not %lld",
                 is_stride ? "stride" : "dimension", (long long)e->ival);
        return x;
    }
    x.cval = e->ival;
    return x;
}

static void check_params(Check *c, Kernel *k)
{
    for (int i = 0; i < k->nparams; i++) {
        Param *pa = &k->params[i];
        Sym *s = new_sym(c, pa->is_tensor ? SYM_TENSOR : SYM_SCALAR, pa->name, pa->loc);
        s->type = pa->type;
        s->param_index = i;
        pa->sym = s;
        if (!pa->is_tensor && type_is_8bit(pa->type))
            error_at(pa->loc, "a scalar parameter cannot be %s: 8-bit types are for tensors; pass "
                     "an %s", type_name(pa->type), type_is_f8(pa->type) ? "f32" : "i32");
        if (pa->is_tensor) {
            s->rank = pa->rank;
            for (int d = 0; d < pa->rank; d++)
                s->dim[d] = check_extent(c, pa->dims[d], false);
            s->has_default_strides = !pa->has_strides;
            if (pa->has_strides) {
                for (int d = 0; d < pa->rank; d++)
                    s->stride[d] = check_extent(c, pa->strides[d], true);
            } else if (pa->rank > 0) {
                /* Row-major: constant where every later dimension is a constant. */
                int64_t prod = 1;
                bool known = true;
                for (int d = pa->rank - 1; d >= 0; d--) {
                    s->stride[d] = (Extent){.cval = known ? prod : 0};
                    if (s->dim[d].size || prod > INT32_MAX / (s->dim[d].cval ? s->dim[d].cval : 1))
                        known = false;
                    else
                        prod *= s->dim[d].cval;
                }
            }
        }
        declare(c, s);
    }
}

/* ---------------------------------------------------------------- launch expressions */

/* grid(...) and assume(...) are evaluated by the launcher from the kernel's arguments: they may
 * use sizes, integer scalar parameters, constants, arithmetic, comparisons, cdiv/min/max. */
static bool launch_expr_ok(Check *c, Expr *e, int depth)
{
    if (depth > MAX_NESTING)
        return false;
    switch (e->kind) {
    case E_INT: case E_BOOL: case E_FLOAT:
        return true;
    case E_NAME: {
        Sym *s = lookup(c, e->name);
        return !s || s->kind == SYM_CONST || s->kind == SYM_SIZE ||
               (s->kind == SYM_SCALAR && type_is_int(s->type));
    }
    case E_UNARY:
        return launch_expr_ok(c, e->a, depth + 1);
    case E_BINARY:
        return e->op != '@' && launch_expr_ok(c, e->a, depth + 1) && launch_expr_ok(c, e->b, depth + 1);
    case E_CALL:
        if (!(!strcmp(e->name, "cdiv") || !strcmp(e->name, "min") || !strcmp(e->name, "max")) ||
            e->nargs != 2)
            return false;
        for (int i = 0; i < e->nargs; i++)
            if (!launch_expr_ok(c, e->args[i], depth + 1))
                return false;
        return true;
    default:
        return false;
    }
}

/* Tokens of the RPN the launcher evaluates for e (lower.c's rpn writes one per node; a cast
 * writes none of its own). */
static int rpn_tokens(const Expr *e)
{
    switch (e->kind) {
    case E_UNARY: return 1 + rpn_tokens(e->a);
    case E_BINARY: return 1 + rpn_tokens(e->a) + rpn_tokens(e->b);
    case E_CAST: return rpn_tokens(e->a);
    case E_CALL: {
        int n = 1;
        for (int i = 0; i < e->nargs; i++)
            n += rpn_tokens(e->args[i]);
        return n;
    }
    default: return 1;
    }
}

/* Where an expression's text starts: a binary operator's location is the operator's. */
static Loc start_loc(const Expr *e)
{
    while (e->kind == E_BINARY)
        e = e->a;
    return e->loc;
}

/* A checked launch expression the runtime can evaluate: at most TILERT_MAX_RPN tokens. */
static void launch_expr_size(Expr *e, const char *what)
{
    int n = rpn_tokens(e);
    if (n > TILERT_MAX_RPN)
        error_at(start_loc(e), "this %s takes %d terms to evaluate at launch; the launcher takes "
                 "at most %d", what, n, TILERT_MAX_RPN);
}

static void check_grid(Check *c, Kernel *k)
{
    for (int i = 0; i < k->ngrid; i++) {
        Expr *e = k->grid[i];
        if (!launch_expr_ok(c, e, 0)) {
            error_at(e->loc, "grid() may only use sizes, scalar parameters and constants");
            continue;
        }
        check_expr(c, e);
        if (e->type == TY_NONE)
            continue;
        if (!type_is_int(e->type) || e->shape.rank != 0)
            error_at(e->loc, "a grid dimension must be an integer scalar, not %s",
                     shape_str(c, e->type, e->shape));
        else
            launch_expr_size(e, "grid expression");
    }
    k->threads = 256;
    if (k->threads_expr) {
        Expr *e = k->threads_expr;
        check_expr(c, e);
        if (e->type == TY_NONE)
            return;
        if (e->kind != E_INT) {
            error_at(e->loc, "threads(...) must be an integer constant");
            return;
        }
        int64_t t = e->ival;
        if (t < 32 || t > 1024 || (t & (t - 1)) || t % 32) {
            error_at(e->loc, "threads(%lld) must be a power of two multiple of 32, from 32 to 1024",
                     (long long)t);
            return;
        }
        k->threads = (int)t;
    }
}

/* ---------------------------------------------------------------- statements */

static void check_stmt(Check *c, Stmt *st);

/* Products inside larger expressions. A product is computed whole into its accumulator (its
 * tensor-core or FFMA plan), so `@` as part of an expression -- `f32(q @ k.T) * scale`, `a @ b +
 * bias`, `C[...] = a @ b`, `acc -= a @ b` -- becomes a `let` of its own just before the statement
 * that reads it, named after its place ("@LINE:COL", which no source name can be), and the
 * expression reads that. Every later pass then sees products only as the whole right-hand side
 * of a let, var or assignment to a var (`acc += a @ b` stays fused). Operands are hoisted before
 * the products that read them; an `else if` condition's products go into the else branch. */
typedef Vec(Stmt *) StmtList;

static void hoist_products(Check *c, Expr **slot, StmtList *out, int depth);

static void hoist_operands(Check *c, Expr *e, StmtList *out, int depth)
{
    if (!e || depth > MAX_NESTING)
        return;     /* (too deep: check_expr says so) */
    switch (e->kind) {
    case E_UNARY: case E_CAST: case E_TRANSPOSE:
        hoist_products(c, &e->a, out, depth + 1);
        break;
    case E_BINARY:
        hoist_products(c, &e->a, out, depth + 1);
        hoist_products(c, &e->b, out, depth + 1);
        break;
    case E_CALL:
        for (int i = 0; i < e->nargs; i++)
            hoist_products(c, &e->args[i], out, depth + 1);
        break;
    case E_INDEX:
        for (int i = 0; i < e->nidx; i++)
            hoist_products(c, &e->idx[i].start, out, depth + 1);
        hoist_products(c, &e->fill, out, depth + 1);
        break;
    default:
        break;
    }
}

static void hoist_products(Check *c, Expr **slot, StmtList *out, int depth)
{
    Expr *e = *slot;
    if (!e)
        return;
    hoist_operands(c, e, out, depth);
    if (e->kind != E_BINARY || e->op != OP_MATMUL)
        return;
    Stmt *let = arena_alloc(c->a, sizeof *let);
    let->kind = S_LET;
    let->loc = e->loc;
    let->name = arena_printf(c->a, "@%d:%d", e->loc.line, e->loc.col);
    let->decl_type = TY_NONE;
    let->decl_rank = -1;
    let->init = e;
    vec_push(out, let);
    Expr *ref = arena_alloc(c->a, sizeof *ref);
    ref->kind = E_NAME;
    ref->loc = e->loc;
    ref->name = let->name;
    *slot = ref;
}

/* A statement's value: a product that is all of it (`whole`) stays, its operands' do not. */
static void hoist_value(Check *c, Expr **slot, bool whole, StmtList *out)
{
    if (whole && is_matmul(*slot))
        hoist_operands(c, *slot, out, 0);
    else
        hoist_products(c, slot, out, 0);
}

/* st's own expressions' products, into out before st. */
static void hoist_stmt(Check *c, Stmt *st, StmtList *out)
{
    switch (st->kind) {
    case S_LET: case S_VAR:
        hoist_value(c, &st->init, true, out);
        break;
    case S_ASSIGN:
        hoist_operands(c, st->lhs, out, 0);
        hoist_value(c, &st->rhs, st->lhs->kind == E_NAME && (st->op == '=' || st->op == '+'), out);
        break;
    case S_ATOMIC:
        hoist_operands(c, st->lhs, out, 0);
        hoist_products(c, &st->rhs, out, 0);
        break;
    case S_IF:
        hoist_products(c, &st->cond, out, 0);
        if (st->els && st->els->kind == S_IF) {
            Stmt *b = arena_alloc(c->a, sizeof *b);
            b->kind = S_BLOCK;
            b->loc = st->els->loc;
            b->decl_rank = -1;
            b->body = arena_alloc(c->a, sizeof *b->body);
            b->body[0] = st->els;
            b->nbody = 1;
            st->els = b;
        }
        break;
    case S_PRINT:
        hoist_products(c, &st->init, out, 0);
        break;
    default:
        break;
    }
    vec_push(out, st);
}

static void check_block(Check *c, Stmt *st)
{
    StmtList body = { 0 };
    for (int i = 0; i < st->nbody; i++)
        hoist_stmt(c, st->body[i], &body);
    if (body.n != st->nbody) {   /* (the AST lives in the arena) */
        st->body = arena_alloc(c->a, sizeof *st->body * (size_t)body.n);
        memcpy(st->body, body.v, sizeof *st->body * (size_t)body.n);
        st->nbody = body.n;
    }
    vec_free(&body);
    int mark = c->scope.n;
    for (int i = 0; i < st->nbody; i++)
        check_stmt(c, st->body[i]);
    scope_pop(c, mark);
}

/* A constant tile dimension of a var: positive and a power of two. */
static int64_t tile_dim(Check *c, Expr *e)
{
    check_expr(c, e);
    if (e->type == TY_NONE)
        return 0;
    if (e->kind != E_INT || e->ival <= 0) {
        error_at(e->loc, "a tile dimension must be a positive integer constant");
        return 0;
    }
    if (e->ival & (e->ival - 1)) {
        error_at(e->loc, "tile dimension %lld is not a power of two", (long long)e->ival);
        return 0;
    }
    return e->ival;
}

/* The value v is stored into a place of type t and shape s (a var, a tensor window): literals
 * adapt, the types must agree, and v's shape must broadcast to s. */
static void check_store_value(Check *c, Expr *v, ElemType t, Shape s, const char *what)
{
    if (v->type == TY_NONE || t == TY_NONE)
        return;
    if (is_literal(v)) {
        if (!adapt_literal(c, v, t))
            return;
    } else if (v->type != t) {
        error_at(v->loc, "%s has type %s but the value is %s; convert it, e.g. %s(x)", what,
                 type_name(t), type_name(v->type), type_name(t));
        return;
    }
    /* A reduction keeps its axis with size 1; a window without that axis takes it as it is:
     * Y[r0 +: 64] = sum(x, axis=1) stores the [64, 1] column of sums. */
    bool window = !strcmp(what, "the window");
    if (window && v->shape.rank == 2 && s.rank == 1 &&
        ((v->shape.dim[1] == 1 && v->shape.dim[0] == s.dim[0]) ||
         (v->shape.dim[0] == 1 && v->shape.dim[1] == s.dim[0])))
        return;
    Shape r;
    if (!broadcast_shapes(v->shape, s, &r) || r.rank != s.rank ||
        memcmp(r.dim, s.dim, sizeof(int64_t) * (size_t)s.rank)) {
        error_at(v->loc, "a value of shape %s cannot be stored to %s of shape %s",
                 shape_str(c, v->type, v->shape), what, shape_str(c, t, s));
    }
}

static Sym *declare_local(Check *c, Stmt *st, SymKind kind)
{
    Sym *s = new_sym(c, kind, st->name, st->loc);
    st->sym = s;
    declare(c, s);
    return s;
}

static void check_let(Check *c, Stmt *st)
{
    Expr *e = st->init;
    if (is_matmul(e))
        check_matmul(c, e);
    else
        check_expr(c, e);
    if (is_literal(e) && st->decl_type == TY_NONE)
        adapt_literal(c, e, e->type);   /* a constant held as its own type must fit it */
    Sym *s = declare_local(c, st, SYM_LET);
    s->type = e->type;
    s->shape = e->shape;
    if (st->decl_type != TY_NONE && e->type != TY_NONE) {
        if (is_literal(e))
            adapt_literal(c, e, st->decl_type);
        else if (e->type != st->decl_type)
            error_at(e->loc, "'%s' is declared %s but its value is %s; convert it, e.g. %s(x)",
                     st->name, type_name(st->decl_type), type_name(e->type),
                     type_name(st->decl_type));
        s->type = st->decl_type;
    }
}

/* A shared tile of this shape and type takes no more than a block's shared memory. */
static bool shared_fits(Shape s, ElemType t)
{
    int64_t d0 = s.rank == 2 ? s.dim[0] : 1, d1 = s.dim[s.rank - 1];
    return d0 <= MAX_SMEM_BYTES && d1 <= MAX_SMEM_BYTES && d0 * d1 * type_size(t) <= MAX_SMEM_BYTES;
}

static void check_var(Check *c, Stmt *st)
{
    Shape shape = {0};
    bool shape_ok = true;
    for (int i = 0; i < st->decl_rank; i++) {
        shape.dim[i] = tile_dim(c, st->decl_dims[i]);
        shape_ok &= shape.dim[i] > 0;
    }
    if (st->decl_rank > 0)
        shape.rank = st->decl_rank;
    st->decl_shape = shape;

    Expr *e = st->init;
    if (e) {
        if (is_matmul(e))
            check_matmul(c, e);
        else
            check_expr(c, e);
    }
    Sym *s = declare_local(c, st, SYM_VAR);
    s->is_shared = st->is_shared;
    if (shape_ok && st->decl_rank > 0) {
        Loc at = st->decl_dims[0]->loc;
        if (st->is_shared && !shared_fits(shape, st->decl_type)) {
            error_at(at, "shared var '%s' of %s needs more shared memory than a block has (%d "
                     "bytes)", st->name, shape_str(c, st->decl_type, shape), MAX_SMEM_BYTES);
            shape_ok = false;
        } else if (!st->is_shared && !tile_fits(c, at, st->decl_type, shape)) {
            shape_ok = false;
        }
    }
    if (st->is_shared) {
        if (st->decl_rank < 1)
            error_at(st->loc, "a shared var needs a written shape, e.g. var %s: shared %s[64, 64]",
                     st->name, type_name(st->decl_type));
        if (e)
            error_at(e->loc, "a shared var cannot have an initial value; assign it later "
                     "(%s = A[...])", st->name);
    }
    if (st->decl_rank < 0) {   /* no type written: all from the initial value */
        if (!e) {
            error_at(st->loc, "var '%s' needs a type or an initial value", st->name);
            s->type = TY_NONE;
            return;
        }
        if (is_literal(e))
            adapt_literal(c, e, e->type);
        s->type = e->type;
        s->shape = e->shape;
        if (e->type == TY_TF32)
            s->type = TY_NONE;
        return;
    }
    s->type = st->decl_type;
    if (!shape_ok) {
        s->type = TY_NONE;
        return;
    }
    if (st->decl_rank == 0) {   /* `var s: f32 = x`: the shape comes from the value */
        if (e && e->type != TY_NONE) {
            shape = e->shape;
            st->decl_shape = shape;
        }
    }
    s->shape = shape;
    if (e && !st->is_shared)
        check_store_value(c, e, s->type, s->shape, "the var");
}

static const char *sym_what(Sym *s)
{
    switch (s->kind) {
    case SYM_CONST: return "a const";
    case SYM_SIZE: return "a size";
    case SYM_TENSOR: return "a tensor parameter; store to a window of it, e.g. A[i +: W] = x";
    case SYM_SCALAR: return "a parameter";
    case SYM_LET: return "declared with let";
    case SYM_LOOP: return "a loop variable";
    default: return "not a var";
    }
}

static void check_assign(Check *c, Stmt *st)
{
    Expr *lhs = st->lhs, *rhs = st->rhs;
    if (lhs->kind == E_INDEX) {
        check_index(c, lhs, true);
        if (is_matmul(rhs)) {
            error_at(rhs->loc, "@ must be the whole right-hand side of an assignment to a var "
                     "(acc += a @ b)");
            return;
        }
        check_expr(c, rhs);
        if (st->op != '=') {
            error_at(lhs->loc, "'%c=' cannot update a tensor window; use atomic_add, or load, "
                     "compute and store", st->op);
            return;
        }
        if (lhs->type != TY_NONE)
            check_store_value(c, rhs, lhs->type, lhs->shape, "the window");
        return;
    }
    Sym *s = lookup(c, lhs->name);
    if (!s) {
        error_at(lhs->loc, "use of undeclared name '%s'", lhs->name);
        check_expr(c, rhs);
        return;
    }
    lhs->sym = s;
    lhs->type = s->type;
    lhs->shape = s->shape;
    if (s->kind != SYM_VAR) {
        error_at(lhs->loc, "cannot assign to '%s': %s", lhs->name, sym_what(s));
        check_expr(c, rhs);
        return;
    }
    if (is_matmul(rhs)) {
        check_matmul(c, rhs);
        if (rhs->type == TY_NONE || s->type == TY_NONE)
            return;
        if (st->op != '=' && st->op != '+') {
            error_at(rhs->loc, "@ accumulates with '=' or '+=' only");
            return;
        }
        if (s->is_shared || s->type != rhs->type || s->shape.rank != 2 ||
            s->shape.dim[0] != rhs->shape.dim[0] || s->shape.dim[1] != rhs->shape.dim[1])
            error_at(lhs->loc, "the result of @ is %s; '%s' must be a register var of that type and shape, "
                     "not %s%s", shape_str(c, rhs->type, rhs->shape), lhs->name,
                     s->is_shared ? "shared " : "", shape_str(c, s->type, s->shape));
        return;
    }
    check_expr(c, rhs);
    if (s->type == TY_NONE || rhs->type == TY_NONE)
        return;
    if (s->is_shared && st->op != '=') {
        error_at(lhs->loc, "shared var '%s' can only be assigned with '='", lhs->name);
        return;
    }
    if (st->op != '=' && (s->type == TY_BOOL)) {
        error_at(lhs->loc, "'%c=' needs a number, not bool", st->op);
        return;
    }
    check_store_value(c, rhs, s->type, s->shape, "the var");
}

/* A scalar i32 (loop bounds): literals adapt. */
static void want_i32_scalar(Check *c, Expr *e, const char *what)
{
    check_expr(c, e);
    if (e->type == TY_NONE)
        return;
    if (is_literal(e) && !adapt_literal(c, e, TY_I32))
        return;
    if (e->type != TY_I32 || e->shape.rank != 0)
        error_at(e->loc, "%s must be an i32 scalar, not %s", what, shape_str(c, e->type, e->shape));
}

/* Does e mention s? */
static bool mentions(const Expr *e, const Sym *s)
{
    if (!e)
        return false;
    if (e->kind == E_NAME && e->sym == s)
        return true;
    if (mentions(e->a, s) || mentions(e->b, s) || mentions(e->fill, s))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (mentions(e->args[i], s))
            return true;
    for (int i = 0; i < e->nidx; i++)
        if (mentions(e->idx[i].start, s))
            return true;
    return false;
}

/* A loop that multiplies windows its variable moves, written without pipeline(S): every
 * iteration waits for its loads before its products, and the tensor cores idle through them
 * (flash attention so ran at 0.2 of SDPA against 0.7-0.9 with pipeline(1) or (2), H200,
 * docs/performance.md). Said once a loop, at the first such window; `pipeline(0)` keeps the
 * plain loop without it. Loops of constant bounds are unrolled, and left alone. */
static void warn_unpipelined(const Stmt *st, const Sym *var)
{
    if (st->pipeline_expr || (st->lo->kind == E_INT && st->hi->kind == E_INT) || !st->then)
        return;
    for (int i = 0; i < st->then->nbody; i++) {
        const Stmt *b = st->then->body[i];
        const Expr *mm = b->kind == S_ASSIGN ? b->rhs : b->kind == S_LET || b->kind == S_VAR ? b->init : NULL;
        if (!mm || mm->kind != E_BINARY || mm->op != OP_MATMUL || mm->type == TY_NONE)
            continue;
        const Expr *side[2] = { mm->a, mm->b };
        for (int j = 0; j < 2; j++) {
            const Expr *x = side[j];
            while (x->kind == E_CAST)
                x = x->a;
            if (x->kind == E_INDEX && x->sym && x->sym->kind == SYM_TENSOR && mentions(x, var)) {
                warning_at(x->base ? x->base->loc : x->loc, "'%s' moves with '%s' in a loop without pipeline(S): each iteration "
                           "waits for its loads before its products; pipeline(2) overlaps them (pipeline(0) "
                           "keeps the plain loop)", x->sym->name, var->name);
                return;
            }
        }
    }
}

static void check_for(Check *c, Stmt *st)
{
    want_i32_scalar(c, st->lo, "the loop's lower bound");
    want_i32_scalar(c, st->hi, "the loop's upper bound");
    if (st->step) {
        check_expr(c, st->step);
        if (st->step->type != TY_NONE) {
            if (st->step->kind != E_INT || st->step->ival <= 0 || st->step->ival > INT32_MAX)
                error_at(st->step->loc, "the loop step must be a positive integer constant");
            else
                st->step->type = TY_I32;
        }
    }
    if (st->pipeline_expr) {
        Expr *e = st->pipeline_expr;
        check_expr(c, e);
        if (e->type != TY_NONE) {
            /* 0 turns pipelining off, so -D STAGES=0 builds the plain loop */
            if (e->kind != E_INT || e->ival < 0 || e->ival > 8)
                error_at(e->loc, "pipeline(...) takes a constant number of stages from 0 (off) to 8");
            else
                st->pipeline = (int)e->ival;
        }
    }
    int mark = c->scope.n;
    Sym *s = declare_local(c, st, SYM_LOOP);
    s->type = TY_I32;
    check_stmt(c, st->then);
    if (!diag.nerrors)
        warn_unpipelined(st, s);
    scope_pop(c, mark);
}

static void check_atomic(Check *c, Stmt *st)
{
    Expr *t = st->lhs;
    check_index(c, t, true);
    check_expr(c, st->rhs);
    if (t->type == TY_NONE)
        return;
    bool ok = st->op == '+' ? t->type == TY_F32 || t->type == TY_I32 || t->type == TY_F16 || t->type == TY_BF16
                            : t->type == TY_F32 || t->type == TY_I32 || t->type == TY_U32;
    if (!ok) {
        error_at(t->loc, "%s works on %s tensors, not %s",
                 st->op == '+' ? "atomic_add" : "atomic_max",
                 st->op == '+' ? "f32, i32, f16 or bf16" : "f32, i32 or u32", type_name(t->type));
        return;
    }
    check_store_value(c, st->rhs, t->type, t->shape, "the window");
}

static void check_assume(Check *c, Stmt *st)
{
    vec_push(&c->assumes, st);
    if (!launch_expr_ok(c, st->cond, 0)) {
        error_at(st->cond->loc, "assume() may only use sizes, scalar parameters and constants");
        return;
    }
    check_expr(c, st->cond);
    if (st->cond->type != TY_NONE && (st->cond->type != TY_BOOL || st->cond->shape.rank != 0))
        error_at(st->cond->loc, "assume() needs a bool condition, not %s",
                 shape_str(c, st->cond->type, st->cond->shape));
    else if (st->cond->type != TY_NONE)
        launch_expr_size(st->cond, "assume");
}

static void check_stmt(Check *c, Stmt *st)
{
    if (++c->depth > MAX_NESTING) {
        if (!c->too_deep)
            error_at(st->loc, "statements nested too deeply (more than %d levels)", MAX_NESTING);
        c->too_deep = true;
        c->depth--;
        return;
    }
    switch (st->kind) {
    case S_BLOCK: check_block(c, st); break;
    case S_LET: check_let(c, st); break;
    case S_VAR: check_var(c, st); break;
    case S_ASSIGN: check_assign(c, st); break;
    case S_FOR: check_for(c, st); break;
    case S_IF: {
        check_expr(c, st->cond);
        Expr *e = st->cond;
        if (e->type != TY_NONE && (e->type != TY_BOOL || e->shape.rank != 0))
            error_at(e->loc, "the condition of if must be a bool scalar, not %s",
                     shape_str(c, e->type, e->shape));
        check_stmt(c, st->then);
        if (st->els)
            check_stmt(c, st->els);
        break;
    }
    case S_ATOMIC: check_atomic(c, st); break;
    case S_ASSUME: check_assume(c, st); break;
    case S_PRINT:
        /* any value: the interpreter shows it, the GPU through vprintf (lower_print.c) */
        check_expr(c, st->init);
        if (!c->k->first_print)
            c->k->first_print = st;
        break;
    }
    c->depth--;
}

/* ---------------------------------------------------------------- kernels */

/* The kernel's arguments (parameters, then size symbols: the ABI in tilec.h) within what the
 * runtime passes; the error points at the first one too many. */
static void check_arg_count(Check *c, Kernel *k)
{
    int n = k->nparams + c->sizes.n;
    if (n <= TILERT_MAX_ARGS)
        return;
    Loc at = k->nparams > TILERT_MAX_ARGS ? k->params[TILERT_MAX_ARGS].loc
                                          : c->sizes.v[TILERT_MAX_ARGS - k->nparams]->loc;
    error_at(at, "kernel '%s' has %d arguments (its parameters, then its sizes); a kernel takes "
             "at most %d", k->name, n, TILERT_MAX_ARGS);
}

/* PTX names the compiler or the assembler owns: a kernel may not take one. */
static void check_kernel_name(Kernel *k)
{
    if (!strcmp(k->name, "_") || !strcmp(k->name, "WARP_SZ") || !strncmp(k->name, "tilec_", 6) ||
        !strcmp(k->name, "vprintf"))
        error_at(k->loc, "'%s' cannot name a kernel: %s", k->name,
                 k->name[0] == 't' ? "names starting with tilec_ are the compiler's own"
                 : k->name[0] == 'v' ? "it is the GPU's printf, which print() calls"
                                     : "PTX reserves it");
}

static void check_kernel(Check *c, Kernel *k)
{
    c->k = k;
    scope_pop(c, 0);
    check_kernel_name(k);
    c->sizes.n = 0;
    c->views.n = 0;
    c->assumes.n = 0;
    c->syms.n = 0;
    c->depth = 0;
    check_params(c, k);
    check_arg_count(c, k);
    check_grid(c, k);
    int errors = diag.nerrors;
    if (k->body)
        check_stmt(c, k->body);
    if (k->body && diag.nerrors == errors)
        push_transposes(c, k->body);

    k->nviews = c->views.n;
    k->views = arena_alloc(c->a, (size_t)(k->nviews + 1) * sizeof *k->views);
    for (int i = 0; i < k->nviews; i++)
        k->views[i] = c->views.v[i];
    k->nsizes = c->sizes.n;
    k->sizes = arena_alloc(c->a, (size_t)(k->nsizes + 1) * sizeof *k->sizes);
    if (k->nsizes)
        memcpy(k->sizes, c->sizes.v, (size_t)k->nsizes * sizeof *k->sizes);
    k->nassumes = c->assumes.n;
    k->assumes = arena_alloc(c->a, (size_t)(k->nassumes + 1) * sizeof *k->assumes);
    if (k->nassumes)
        memcpy(k->assumes, c->assumes.v, (size_t)k->nassumes * sizeof *k->assumes);
    k->nsyms = c->syms.n;
    k->syms = arena_alloc(c->a, (size_t)(k->nsyms + 1) * sizeof *k->syms);
    if (k->nsyms)
        memcpy(k->syms, c->syms.v, (size_t)k->nsyms * sizeof *k->syms);
}

bool check_program(Arena *a, Program *p, Define *defs, int ndefs)
{
    int before = diag.nerrors;
    Check c = {.a = a, .p = p};
    Map kernels = {0};
    check_consts(&c, defs, ndefs);
    for (int i = 0; i < p->nkernels; i++) {
        Kernel *k = p->kernels[i];
        Kernel *old = map_get(&kernels, k->name);
        if (old) {
            error_at(k->loc, "kernel '%s' is already defined", k->name);
            note_at(old->loc, "'%s' was defined here", k->name);
        } else {
            map_put(&kernels, k->name, k);
        }
        check_kernel(&c, k);
    }
    map_free(&kernels);
    map_free(&c.const_names);
    map_free(&c.scope_names);
    vec_free(&c.consts);
    vec_free(&c.scope);
    vec_free(&c.sizes);
    vec_free(&c.views);
    vec_free(&c.assumes);
    vec_free(&c.syms);
    return diag.nerrors == before;
}
