/* check_expr.c: types and shapes of expressions, constant folding, builtins, indexing and `@`.
 *
 * Folding happens in place: an E_NAME of a const, or an operator on constants, becomes an E_INT,
 * E_FLOAT or E_BOOL node at the same location. Number constants (E_INT, E_FLOAT) are "literals":
 * they take the type of the other operand (adapt_literal); everything else must match exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ---------------------------------------------------------------- helpers */

bool is_matmul(const Expr *e) { return e && e->kind == E_BINARY && e->op == '@'; }
static Expr *new_node(Check *c, ExprKind kind, Loc loc);
bool is_literal(const Expr *e) { return e->kind == E_INT || e->kind == E_FLOAT; }

static bool fail(Expr *e) { e->type = TY_NONE; return false; }

static bool set_int(Expr *e, int64_t v)
{
    e->kind = E_INT;
    e->ival = v;
    e->a = e->b = NULL;
    e->type = v >= INT32_MIN && v <= INT32_MAX ? TY_I32 : TY_I64;
    e->shape.rank = 0;
    return true;
}

static bool set_float(Expr *e, double v)
{
    e->kind = E_FLOAT;
    e->fval = v;
    e->a = e->b = NULL;
    e->type = TY_F32;
    e->shape.rank = 0;
    return true;
}

static bool set_bool(Expr *e, bool v)
{
    e->kind = E_BOOL;
    e->ival = v;
    e->a = e->b = NULL;
    e->type = TY_BOOL;
    e->shape.rank = 0;
    return true;
}

/* A tile of shape s fits a block of the kernel's threads: at most MAX_TILE_PER_THREAD elements a
 * thread. Said at the value (a window, a var, an operation that broadcasts), before lowering
 * would make a register and instructions for each element. */
bool tile_fits(Check *c, Loc loc, ElemType t, Shape s)
{
    if (s.rank == 0)
        return true;
    int threads = c->k && c->k->threads ? c->k->threads : 256;
    int64_t most = (int64_t)MAX_TILE_PER_THREAD * threads;
    int64_t d0 = s.rank == 2 ? s.dim[0] : 1, d1 = s.dim[s.rank - 1];
    if (d0 <= most && d1 <= most && d0 * d1 <= most)   /* each <= 2^22: no overflow */
        return true;
    if (d0 <= INT64_MAX / d1)
        error_at(loc, "%s is too large for a block of %d threads: %lld elements per thread, at "
                 "most %d", shape_str(c, t, s), threads, (long long)(d0 * d1 / threads),
                 MAX_TILE_PER_THREAD);
    else
        error_at(loc, "%s is too large for a block of %d threads: more than %d elements per "
                 "thread", shape_str(c, t, s), threads, MAX_TILE_PER_THREAD);
    return false;
}

const char *shape_str(Check *c, ElemType t, Shape s)
{
    if (s.rank == 0)
        return type_name(t);
    if (s.rank == 1)
        return arena_printf(c->a, "%s[%lld]", type_name(t), (long long)s.dim[0]);
    return arena_printf(c->a, "%s[%lld,%lld]", type_name(t), (long long)s.dim[0],
                        (long long)s.dim[1]);
}

bool broadcast_shapes(Shape a, Shape b, Shape *out)
{
    Shape r = {.rank = a.rank > b.rank ? a.rank : b.rank};
    for (int i = 0; i < r.rank; i++) {
        int64_t da = i < a.rank ? a.dim[a.rank - 1 - i] : 1;
        int64_t db = i < b.rank ? b.dim[b.rank - 1 - i] : 1;
        if (da != db && da != 1 && db != 1)
            return false;
        r.dim[r.rank - 1 - i] = da == 1 ? db : da;
    }
    *out = r;
    return true;
}

/* Broadcasts a with b into e's shape, or reports both shapes. */
static bool broadcast_into(Check *c, Expr *e, Expr *a, Expr *b)
{
    if (!broadcast_shapes(a->shape, b->shape, &e->shape)) {
        error_at(e->loc, "shapes %s and %s do not broadcast", shape_str(c, a->type, a->shape),
                 shape_str(c, b->type, b->shape));
        return false;
    }
    return true;
}

/* Where a value of the float type t rounds to infinity (to nearest even): f32 from 2^128 - 2^103
 * up; f16 and bf16, which are rounded from f32, from the midpoint past their largest value. */
static double float_overflow_at(ElemType t)
{
    /* f8e4m3 has no infinity: past 448 (at the midpoint to the next step, 480) a conversion
       saturates rather than rounds, which a constant is not let to do silently */
    return t == TY_F16 ? 65520.0 : t == TY_BF16 ? 0x1.ffp+127 : t == TY_F8E4M3 ? 464.0
         : t == TY_F8E5M2 ? 61440.0 : 0x1.ffffffp+127;
}

/* Does the integer v fit in the integer type t? */
static bool int_fits(int64_t v, ElemType t)
{
    switch (t) {
    case TY_I32: return v >= INT32_MIN && v <= INT32_MAX;
    case TY_U32: return v >= 0 && v <= (int64_t)UINT32_MAX;
    case TY_I8: return v >= -128 && v <= 127;
    case TY_U8: return v >= 0 && v <= 255;
    default: return true;
    }
}

bool float_const_fits(double v, ElemType t)
{
    if (!isfinite(v))
        return true;   /* inf as written */
    if (fabs(v) >= 0x1.ffffffp+127)
        return false;
    return fabs((double)(float)v) < float_overflow_at(t);
}

/* The integer constant v as an f32 value, rounded once (as cvt.rn.f32.s64 does); through double
 * it would be rounded twice, to 53 bits first, and could land on the other neighbour. */
static double int_to_f32(int64_t v) { return (double)(float)v; }

/* v in the fewest digits that read back as v: 2147483648, not %g's 2.14748e+09. */
static const char *float_text(Check *c, double v)
{
    if (v == trunc(v) && fabs(v) < 1e16)
        return arena_printf(c->a, "%.0f", v);
    for (int digits = 1;; digits++) {
        char *t = arena_printf(c->a, "%.*g", digits, v);
        if (digits >= 17 || strtod(t, NULL) == v)
            return t;
    }
}

bool adapt_literal(Check *c, Expr *e, ElemType t)
{
    if (t == TY_NONE)
        return false;
    if (t == TY_BOOL) {
        error_at(e->loc, "a number cannot be used as a bool; compare it, e.g. x != 0");
        return false;
    }
    if (e->kind == E_INT) {
        if (type_is_float(t)) {
            double v = int_to_f32(e->ival);
            set_float(e, v);
            e->type = t == TY_TF32 ? TY_F32 : t;
            return true;
        }
        if (!int_fits(e->ival, t)) {
            error_at(e->loc, "integer constant %lld does not fit in %s", (long long)e->ival,
                     type_name(t));
            return false;
        }
        e->type = t;
        return true;
    }
    if (type_is_float(t)) {
        if (!float_const_fits(e->fval, TY_F32)) {
            error_at(e->loc, "the float constant %s is out of the range of f32", float_text(c, e->fval));
            return fail(e);
        }
        e->type = t == TY_TF32 ? TY_F32 : t;
        return true;
    }
    error_at(e->loc, "the float constant %g cannot be used as %s", e->fval, type_name(t));
    return false;
}

/* The common type of a binary operation's operands: a literal adapts to the other side; two
 * non-literals must have the same type. */
static ElemType unify(Check *c, Expr *e, Expr *a, Expr *b)
{
    if (is_literal(a) && !is_literal(b))
        return adapt_literal(c, a, b->type) ? b->type : TY_NONE;
    if (is_literal(b) && !is_literal(a))
        return adapt_literal(c, b, a->type) ? a->type : TY_NONE;
    if (a->type == b->type)
        return a->type;
    /* Suggest the wider type: float over int, then the larger. */
    ElemType w = a->type;
    if ((type_is_float(b->type) && !type_is_float(a->type)) ||
        (type_is_float(b->type) == type_is_float(a->type) && type_size(b->type) > type_size(a->type)))
        w = b->type;
    error_at(e->loc, "mixing %s and %s needs a cast, e.g. %s(x)", type_name(a->type),
             type_name(b->type), type_name(w));
    return TY_NONE;
}

static const char *op_text(int op)
{
    switch (op) {
    case OP_EQ: return "==";
    case OP_NE: return "!=";
    case OP_LE: return "<=";
    case OP_GE: return ">=";
    case OP_AND: return "&&";
    case OP_OR: return "||";
    case '+': return "+";
    case '-': return "-";
    case '*': return "*";
    case '/': return "/";
    case '%': return "%";
    case '<': return "<";
    case '>': return ">";
    case '@': return "@";
    case '&': return "&";
    case '|': return "|";
    case '^': return "^";
    case OP_LSHIFT: return "<<";
    case OP_RSHIFT: return ">>";
    default: return "?";
    }
}

static bool is_compare(int op)
{
    return op == '<' || op == '>' || op == OP_LE || op == OP_GE || op == OP_EQ || op == OP_NE;
}

static bool is_bitwise(int op)
{
    return op == '&' || op == '|' || op == '^' || op == OP_LSHIFT || op == OP_RSHIFT;
}

/* ---------------------------------------------------------------- constant folding */

/* Integer constants are exact: 64-bit arithmetic, and an error where the exact result does not
 * fit (never a detour through double, which holds 53 bits). */
static bool mul_overflows(int64_t a, int64_t b)
{
    if (a == 0 || b == 0)
        return false;
    if (a > 0)
        return b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a;
    return b > 0 ? a < INT64_MIN / b : a < INT64_MAX / b;
}

static bool int_overflows(int op, int64_t a, int64_t b)
{
    switch (op) {
    case '+': return (b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b);
    case '-': return (b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b);
    case '*': return mul_overflows(a, b);
    case '/': case '%': return a == INT64_MIN && b == -1;
    case OP_LSHIFT: return b < 0 || b > 63 || (a != 0 && (b == 63 || a > (INT64_MAX >> b) || a < (INT64_MIN >> b)));
    case OP_RSHIFT: return b < 0 || b > 63;
    default: return false;
    }
}


/* Folds a binary operator on two constants (numbers or bools). Returns false after an error. */
static bool fold_binary(Check *c, Expr *e, Expr *a, Expr *b)
{
    (void)c;
    int op = e->op;
    bool ab = a->kind == E_BOOL, bb = b->kind == E_BOOL;
    if (ab || bb) {
        if (!(ab && bb)) {
            error_at(e->loc, "'%s' cannot mix bool and a number", op_text(op));
            return false;
        }
        switch (op) {
        case OP_AND: set_bool(e, a->ival && b->ival); return true;
        case OP_OR: set_bool(e, a->ival || b->ival); return true;
        case OP_EQ: set_bool(e, a->ival == b->ival); return true;
        case OP_NE: set_bool(e, a->ival != b->ival); return true;
        default:
            error_at(e->loc, "'%s' needs numbers, not bool", op_text(op));
            return false;
        }
    }
    if (op == OP_AND || op == OP_OR) {
        error_at(e->loc, "'%s' needs bool operands, not numbers", op_text(op));
        return false;
    }
    if (a->kind == E_INT && b->kind == E_INT) {
        int64_t x = a->ival, y = b->ival;
        if ((op == '/' || op == '%') && y == 0) {
            error_at(e->loc, "division by zero in a constant expression");
            return false;
        }
        if ((op == OP_LSHIFT || op == OP_RSHIFT) && (y < 0 || y > 63)) {
            error_at(e->loc, "shift count %lld is outside 0..63 in a constant expression", (long long)y);
            return false;
        }
        if (int_overflows(op, x, y)) {
            error_at(e->loc, "integer overflow in a constant expression");
            return false;
        }
        switch (op) {
        case '+': set_int(e, x + y); return true;
        case '-': set_int(e, x - y); return true;
        case '*': set_int(e, x * y); return true;
        case '/': set_int(e, x / y); return true;
        case '%': set_int(e, x % y); return true;
        case '<': set_bool(e, x < y); return true;
        case '>': set_bool(e, x > y); return true;
        case OP_LE: set_bool(e, x <= y); return true;
        case OP_GE: set_bool(e, x >= y); return true;
        case OP_EQ: set_bool(e, x == y); return true;
        case OP_NE: set_bool(e, x != y); return true;
        case '&': set_int(e, x & y); return true;
        case '|': set_int(e, x | y); return true;
        case '^': set_int(e, x ^ y); return true;
        case OP_LSHIFT: set_int(e, (int64_t)((uint64_t)x << y)); return true;
        case OP_RSHIFT: set_int(e, x < 0 ? ~(~x >> y) : x >> y); return true;   /* arithmetic */
        }
        die("fold_binary: operator %d", op);
    }
    double x = a->kind == E_INT ? (double)a->ival : a->fval;
    double y = b->kind == E_INT ? (double)b->ival : b->fval;
    double r;
    switch (op) {
    case '+': r = x + y; break;
    case '-': r = x - y; break;
    case '*': r = x * y; break;
    case '/': r = x / y; break;
    case '%': case '&': case '|': case '^': case OP_LSHIFT: case OP_RSHIFT:
        error_at(e->loc, "'%s' needs integer operands, not float constants", op_text(op));
        return false;
    case '<': set_bool(e, x < y); return true;
    case '>': set_bool(e, x > y); return true;
    case OP_LE: set_bool(e, x <= y); return true;
    case OP_GE: set_bool(e, x >= y); return true;
    case OP_EQ: set_bool(e, x == y); return true;
    case OP_NE: set_bool(e, x != y); return true;
    default: die("fold_binary: operator %d", op);
    }
    if (isnan(r) || (isinf(r) && isfinite(x) && isfinite(y))) {
        error_at(e->loc, "the constant expression has no finite value");
        return false;
    }
    set_float(e, r);
    return true;
}

static bool is_const(const Expr *e) { return is_literal(e) || e->kind == E_BOOL; }

/* ---------------------------------------------------------------- operators */

/* 8-bit values are stored, loaded, converted and selected; computing on them takes a widening
 * cast first, so that where each value is rounded or wraps is written in the program. */
static bool computed_8bit(Check *c, const Expr *x, const char *what)
{
    (void)c;
    if (!type_is_8bit(x->type))
        return false;
    const char *wide = type_is_f8(x->type) ? "f32" : "i32";
    error_at(x->loc, "%s on %s values: 8-bit types are for storage; widen them first, e.g. %s(x)",
             what, type_name(x->type), wide);
    return true;
}

static bool check_unary(Check *c, Expr *e)
{
    Expr *a = e->a;
    check_expr(c, a);
    if (a->type == TY_NONE)
        return fail(e);
    if (computed_8bit(c, a, e->op == '-' ? "'-'" : e->op == '~' ? "'~'" : "'!'"))
        return fail(e);
    if (e->op == '-') {
        if (a->type == TY_BOOL) {
            error_at(e->loc, "'-' needs a number, not bool");
            return fail(e);
        }
        if (a->kind == E_INT) {
            if (a->ival == INT64_MIN) {
                error_at(e->loc, "integer overflow in a constant expression");
                return fail(e);
            }
            return set_int(e, -a->ival);
        }
        if (a->kind == E_FLOAT)
            return set_float(e, -a->fval);
    } else if (e->op == '~') {
        if (!type_is_int(a->type) && a->kind != E_INT) {
            error_at(e->loc, "'~' needs an integer, not %s", shape_str(c, a->type, a->shape));
            return fail(e);
        }
        if (a->kind == E_INT)
            return set_int(e, ~a->ival);
    } else {
        if (a->type != TY_BOOL) {
            error_at(e->loc, "'!' needs a bool, not %s", shape_str(c, a->type, a->shape));
            return fail(e);
        }
        if (a->kind == E_BOOL)
            return set_bool(e, !a->ival);
    }
    e->type = a->type;
    e->shape = a->shape;
    return true;
}

static bool check_binary(Check *c, Expr *e)
{
    Expr *a = e->a, *b = e->b;
    if (e->op == '@') {
        check_matmul(c, e);
        if (e->type != TY_NONE)
            error_at(e->loc, "@ must be the whole right-hand side of an assignment (acc += a @ b)");
        return fail(e);
    }
    if (e->op == '=') {   /* a named argument outside a call's argument list */
        error_at(e->loc, "'%s=' is only allowed as a function argument", a->name);
        return fail(e);
    }
    check_expr(c, a);
    check_expr(c, b);
    if (a->type == TY_NONE || b->type == TY_NONE)
        return fail(e);
    if (is_const(a) && is_const(b)) {
        if (!fold_binary(c, e, a, b))
            fail(e);
        return true;
    }
    int op = e->op;
    bool logical = op == OP_AND || op == OP_OR;
    for (int i = 0; i < 2; i++)
        if (computed_8bit(c, i ? b : a, arena_printf(c->a, "'%s'", op_text(op))))
            return fail(e);
    for (int i = 0; i < 2; i++) {
        Expr *x = i ? b : a;
        if (logical && x->type != TY_BOOL) {
            error_at(x->loc, "'%s' needs bool operands, not %s", op_text(op), type_name(x->type));
            return fail(e);
        }
        if (is_bitwise(op) && x->type == TY_BOOL) {
            error_at(e->loc, "'%s' needs integers, not bool (bools take &&, || and !=)", op_text(op));
            return fail(e);
        }
        if (!logical && op != OP_EQ && op != OP_NE && x->type == TY_BOOL) {
            error_at(e->loc, "'%s' needs numbers, not bool", op_text(op));
            return fail(e);
        }
    }
    bool shift = op == OP_LSHIFT || op == OP_RSHIFT;
    /* a shift's count may be any integer type: the result has the shifted value's */
    ElemType t = !shift ? unify(c, e, a, b)
               : is_literal(a) && !is_literal(b) ? (adapt_literal(c, a, TY_I32) ? TY_I32 : TY_NONE)
               : a->type;
    if (shift && t != TY_NONE && is_literal(b) && !adapt_literal(c, b, type_is_int(t) ? t : TY_I32))
        t = TY_NONE;
    if (shift && t != TY_NONE && type_is_int(t) && !type_is_int(b->type)) {
        error_at(e->loc, "'%s' needs an integer count, not %s", op_text(op), type_name(b->type));
        return fail(e);
    }
    if (t == TY_NONE)
        return fail(e);
    if (!broadcast_into(c, e, a, b))
        return fail(e);
    if (op == OP_AND || op == OP_OR) {
        if (t != TY_BOOL) {
            error_at(e->loc, "'%s' needs bool operands, not %s", op_text(op), type_name(t));
            return fail(e);
        }
        e->type = TY_BOOL;
        return true;
    }
    if (t == TY_BOOL && op != OP_EQ && op != OP_NE) {
        error_at(e->loc, "'%s' needs numbers, not bool", op_text(op));
        return fail(e);
    }
    if ((op == '%' || is_bitwise(op)) && !type_is_int(t)) {
        error_at(e->loc, "'%s' needs integer operands, not %s", op_text(op), type_name(t));
        return fail(e);
    }
    e->type = is_compare(op) ? TY_BOOL : t;
    return true;
}

/* ---------------------------------------------------------------- calls */


const BuiltinInfo builtin_info[B_COUNT_] = {
#define X(n, name, alias, lo, hi, kind) { name, alias, lo, hi, kind },
    BUILTINS(X)
#undef X
};

static bool check_math(Check *c, Expr *e, Expr *x)
{
    if (is_literal(x) && !adapt_literal(c, x, x->kind == E_INT && e->builtin == B_ABS ? TY_I32 : TY_F32))
        return fail(e);
    bool ok = type_is_float(x->type) || (e->builtin == B_ABS && type_is_int(x->type));
    if (!ok || x->type == TY_TF32) {
        error_at(x->loc, "'%s' needs a float%s argument, not %s; convert it, e.g. f32(x)", e->name,
                 e->builtin == B_ABS ? " or integer" : "", type_name(x->type));
        return fail(e);
    }
    e->type = x->type;
    e->shape = x->shape;
    return true;
}

static bool check_reduction(Check *c, Expr *e, Expr *x, Expr *axis)
{
    if (x->type == TY_BOOL) {
        error_at(x->loc, "'%s' needs numbers, not bool", e->name);
        return fail(e);
    }
    e->type = e->builtin == B_SUM && (x->type == TY_F16 || x->type == TY_BF16) ? TY_F32 : x->type;
    bool arg = e->builtin == B_ARGMAX || e->builtin == B_ARGMIN;
    if (e->builtin == B_CUMSUM) {
        if (!axis || x->shape.rank == 0) {
            error_at(e->loc, "'cumsum' needs a tile and axis=K: cumsum(x, axis=1) is the running "
                     "sums along each row");
            return fail(e);
        }
        if (x->type == TY_I64) {
            error_at(x->loc, "'cumsum' takes f32, f16, bf16, i32 or u32 values, not i64");
            return fail(e);
        }
        e->type = x->type == TY_F16 || x->type == TY_BF16 ? TY_F32 : x->type;
    }
    if (arg) {
        /* the position along the axis: the first of equal values */
        e->type = TY_I32;
        if (!axis || x->shape.rank == 0) {
            error_at(e->loc, "'%s' needs a tile and axis=K: %s(x, axis=1) is each row's position "
                     "of its %s", e->name, e->name, e->builtin == B_ARGMAX ? "largest" : "smallest");
            return fail(e);
        }
        if (x->type == TY_I64) {
            error_at(x->loc, "'%s' takes f32, f16, bf16, i32 or u32 values, not i64", e->name);
            return fail(e);
        }
    }
    if (!axis) {
        e->axis = -1;
        e->shape.rank = 0;
        return true;
    }
    check_expr(c, axis);
    if (axis->type == TY_NONE)
        return fail(e);
    if (axis->kind != E_INT) {
        error_at(axis->loc, "axis= must be an integer constant");
        return fail(e);
    }
    if (axis->ival < 0 || axis->ival >= x->shape.rank) {
        error_at(axis->loc, "axis %lld is out of range for %s", (long long)axis->ival,
                 shape_str(c, x->type, x->shape));
        return fail(e);
    }
    e->axis = (int)axis->ival;
    e->shape = x->shape;
    if (e->builtin != B_CUMSUM)
        e->shape.dim[e->axis] = 1;
    return true;
}

/* cdiv and two-argument max/min: like a binary operator (folded on constants); pow: two floats,
 * computed as the kernel computes it even on constants (a folded value would be more exact than
 * the same call on a tile, and differ from it). */
static bool check_pair(Check *c, Expr *e, Expr *a, Expr *b)
{
    if (e->builtin == B_POW && is_literal(a) && is_literal(b) &&
        (!adapt_literal(c, a, TY_F32) || !adapt_literal(c, b, TY_F32)))
        return fail(e);
    if (e->builtin != B_POW && is_literal(a) && is_literal(b)) {
        if (e->builtin == B_CDIV) {
            if (a->kind != E_INT || b->kind != E_INT) {
                error_at(e->loc, "'cdiv' needs integer arguments");
                return fail(e);
            }
            if (b->ival <= 0 || a->ival < 0) {
                error_at(e->loc, "cdiv(%lld, %lld): the arguments must be >= 0 and > 0",
                         (long long)a->ival, (long long)b->ival);
                return fail(e);
            }
            return set_int(e, a->ival / b->ival + (a->ival % b->ival != 0));
        }
        bool mx = e->builtin == B_MAXIMUM;
        if (a->kind == E_INT && b->kind == E_INT)
            return set_int(e, mx ? (a->ival > b->ival ? a->ival : b->ival)
                                 : (a->ival < b->ival ? a->ival : b->ival));
        double x = a->kind == E_INT ? (double)a->ival : a->fval;
        double y = b->kind == E_INT ? (double)b->ival : b->fval;
        return set_float(e, mx ? (x > y ? x : y) : (x < y ? x : y));
    }
    ElemType t = unify(c, e, a, b);
    if (t == TY_NONE)
        return fail(e);
    if (t == TY_BOOL || t == TY_TF32) {
        error_at(e->loc, "'%s' needs numbers, not %s", e->name, type_name(t));
        return fail(e);
    }
    if (e->builtin == B_POW && (!type_is_float(t) || t == TY_TF32)) {
        error_at(e->loc, "'pow' needs float arguments, not %s; convert them, e.g. f32(x)", type_name(t));
        return fail(e);
    }
    if (e->builtin == B_CDIV) {
        if (!type_is_int(t) || a->shape.rank || b->shape.rank) {
            error_at(e->loc, "'cdiv' needs integer scalars, not %s and %s",
                     shape_str(c, a->type, a->shape), shape_str(c, b->type, b->shape));
            return fail(e);
        }
    } else if (!broadcast_into(c, e, a, b)) {
        return fail(e);
    }
    e->type = t;
    return true;
}

/* fma(a, b, c): three floats of one type (constants take it), broadcasting all three. Not folded
 * on constants, for the reason pow is not. */
static bool check_fma(Check *c, Expr *e)
{
    Expr **a = e->args;
    ElemType t = TY_F32;
    for (int i = 2; i >= 0; i--)
        if (!is_literal(a[i]))
            t = a[i]->type;
    for (int i = 0; i < 3; i++)
        if (is_literal(a[i]) && !adapt_literal(c, a[i], t))
            return fail(e);
    for (int i = 1; i < 3; i++)
        if (a[i]->type != a[0]->type && unify(c, e, a[0], a[i]) == TY_NONE)
            return fail(e);
    if (!type_is_float(t) || t == TY_TF32) {
        error_at(e->loc, "'fma' needs float arguments, not %s; convert them, e.g. f32(x)", type_name(t));
        return fail(e);
    }
    Shape ab;
    if (!broadcast_shapes(a[0]->shape, a[1]->shape, &ab)) {
        error_at(e->loc, "shapes %s and %s do not broadcast", shape_str(c, t, a[0]->shape),
                 shape_str(c, t, a[1]->shape));
        return fail(e);
    }
    if (!broadcast_shapes(ab, a[2]->shape, &e->shape)) {
        error_at(e->loc, "shapes %s and %s do not broadcast", shape_str(c, t, ab), shape_str(c, t, a[2]->shape));
        return fail(e);
    }
    e->type = t;
    return true;
}

/* rand, randn, randint(seed, offset): an integer scalar seed (the Philox key) and an integer
 * offset of any shape (the counter), the result shaped like the offset. A constant seed is i32
 * when it fits, else u32, else i64, so that 0xdeadbeef keys the stream as u32(0xdeadbeef) does;
 * a constant offset is i32. */
static bool check_rand(Check *c, Expr *e)
{
    Expr *seed = e->args[0], *off = e->args[1];
    for (int i = 0; i < 2; i++) {
        Expr *x = e->args[i];
        const char *what = i ? "offset" : "seed";
        if (is_literal(x)) {
            if (x->kind != E_INT) {
                error_at(x->loc, "the %s of '%s' must be an integer, not a float constant", what, e->name);
                return fail(e);
            }
            ElemType t = i == 0 && x->ival > INT32_MAX && x->ival <= UINT32_MAX ? TY_U32
                       : i == 0 && (x->ival < INT32_MIN || x->ival > UINT32_MAX) ? TY_I64 : TY_I32;
            if (!adapt_literal(c, x, t))
                return fail(e);
        }
        if (!type_is_int(x->type)) {
            error_at(x->loc, "the %s of '%s' must be i32, u32 or i64, not %s", what, e->name,
                     shape_str(c, x->type, x->shape));
            return fail(e);
        }
    }
    if (seed->shape.rank) {
        error_at(seed->loc, "the seed of '%s' must be a scalar, not %s; offsets tell elements apart",
                 e->name, shape_str(c, seed->type, seed->shape));
        return fail(e);
    }
    e->type = e->builtin == B_RANDINT ? TY_U32 : TY_F32;
    e->shape = off->shape;
    return true;
}

static bool check_select(Check *c, Expr *e)
{
    Expr *cond = e->args[0], *a = e->args[1], *b = e->args[2];
    if (cond->type != TY_BOOL) {
        error_at(cond->loc, "the condition of '%s' must be bool, not %s", e->name,
                 shape_str(c, cond->type, cond->shape));
        return fail(e);
    }
    if (is_literal(a) && is_literal(b)) {
        /* Both branches constant: the float one decides, else i32. */
        ElemType t = a->kind == E_FLOAT || b->kind == E_FLOAT ? TY_F32 : TY_I32;
        if (!adapt_literal(c, a, t) || !adapt_literal(c, b, t))
            return fail(e);
    }
    ElemType t = unify(c, e, a, b);
    if (t == TY_NONE)
        return fail(e);
    Shape ab;
    if (!broadcast_shapes(a->shape, b->shape, &ab)) {
        error_at(e->loc, "shapes %s and %s do not broadcast", shape_str(c, a->type, a->shape),
                 shape_str(c, b->type, b->shape));
        return fail(e);
    }
    if (!broadcast_shapes(cond->shape, ab, &e->shape)) {
        error_at(e->loc, "shapes %s and %s do not broadcast", shape_str(c, cond->type, cond->shape),
                 shape_str(c, t, ab));
        return fail(e);
    }
    e->type = t;
    return true;
}

/* reshape(x, D0) or reshape(x, D0, D1): x's elements in row-major order, as many of them, in a
 * tile of that shape (constant powers of two). */
static bool check_reshape(Check *c, Expr *e, Expr *x)
{
    if (x->shape.rank == 0) {
        error_at(x->loc, "reshape takes a tile; this is a scalar");
        return fail(e);
    }
    Shape s = { e->nargs - 1, { 0, 0 } };
    int64_t n = 1, have = 1;
    for (int i = 1; i < e->nargs; i++) {
        Expr *d = e->args[i];
        if (d->kind != E_INT || d->ival <= 0) {
            error_at(d->loc, "reshape's sizes are positive integer constants");
            return fail(e);
        }
        if (d->ival & (d->ival - 1)) {
            error_at(d->loc, "tile dimension %lld is not a power of two", (long long)d->ival);
            return fail(e);
        }
        d->type = TY_I32;
        s.dim[i - 1] = d->ival;
        n *= d->ival;
    }
    for (int i = 0; i < x->shape.rank; i++)
        have *= x->shape.dim[i];
    if (n != have) {
        error_at(e->loc, "reshape to %s: %lld elements, but x (%s) has %lld", shape_str(c, x->type, s),
                 (long long)n, shape_str(c, x->type, x->shape), (long long)have);
        return fail(e);
    }
    e->type = x->type;
    e->shape = s;
    return true;
}

static bool check_call(Check *c, Expr *e)
{
    /* Take `axis=K` out of the argument list. */
    Expr *axis = NULL;
    int n = 0;
    bool bad = false;
    for (int i = 0; i < e->nargs; i++) {
        Expr *arg = e->args[i];
        if (arg->kind == E_BINARY && arg->op == '=' && arg->a->kind == E_NAME) {
            if (strcmp(arg->a->name, "axis")) {
                error_at(arg->loc, "unknown argument '%s='; only axis= is accepted", arg->a->name);
                bad = true;
            } else if (axis) {
                error_at(arg->loc, "axis= given twice");
                bad = true;
            } else {
                axis = arg->b;
            }
            continue;
        }
        e->args[n++] = arg;
    }
    e->nargs = n;

    const BuiltinInfo *bi = NULL;
    Builtin b = B_COUNT_;
    for (int i = 0; i < B_COUNT_ && !bi; i++)
        if ((builtin_info[i].name && !strcmp(builtin_info[i].name, e->name)) ||
            (builtin_info[i].alias && !strcmp(builtin_info[i].alias, e->name)))
            bi = &builtin_info[i], b = (Builtin)i;
    if (!bi) {
        error_at(e->loc, "unknown function '%s'", e->name);
        return fail(e);
    }
    if (n < bi->min_args || n > bi->max_args) {
        if (bi->min_args == bi->max_args)
            error_at(e->loc, "'%s' takes %d argument%s, not %d", e->name, bi->min_args,
                     bi->min_args == 1 ? "" : "s", n);
        else
            error_at(e->loc, "'%s' takes %d or %d arguments, not %d", e->name, bi->min_args,
                     bi->max_args, n);
        return fail(e);
    }
    e->builtin = b;
    if ((e->builtin == B_MAX || e->builtin == B_MIN) && n == 2)
        e->builtin = e->builtin == B_MAX ? B_MAXIMUM : B_MINIMUM;
    bool reduction = builtin_info[e->builtin].kind == BK_REDUCE;
    if (axis && !reduction) {
        error_at(axis->loc, "'%s' takes no axis=%s", e->name,
                 n == 2 ? " (max(x, axis=K) reduces; max(x, y) is elementwise)" : "");
        bad = true;
    }
    for (int i = 0; i < n; i++) {
        if (e->builtin == B_BITCAST && i == 1 && e->args[i]->kind == E_CAST && !e->args[i]->a)
            continue;   /* the type to take the bits as */
        check_expr(c, e->args[i]);
        if (e->args[i]->type == TY_NONE || e->args[i]->type == TY_TF32)
            bad = true;
    }
    if (bad)
        return fail(e);
    /* a selection or a rank change moves 8-bit values as they are; the rest computes */
    BuiltinKind kind = builtin_info[e->builtin].kind;
    for (int i = 0; i < n && kind != BK_SELECT && kind != BK_RESHAPE; i++)
        if (computed_8bit(c, e->args[i], arena_printf(c->a, "'%s'", e->name)))
            return fail(e);

    Expr *x = e->args[0];
    switch (builtin_info[e->builtin].kind) {
    case BK_MATH:
        return check_math(c, e, x);
    case BK_REDUCE:
        return check_reduction(c, e, x, axis);
    case BK_PAIR:
        return check_pair(c, e, x, e->args[1]);
    case BK_FMA:
        return check_fma(c, e);
    case BK_RAND:
        return check_rand(c, e);
    case BK_SELECT:
        return check_select(c, e);
    case BK_BITCAST: {
        Expr *to = e->args[1];
        if (to->kind != E_CAST || to->a) {
            error_at(to->loc, "bitcast's second argument is a type: bitcast(x, u32)");
            return fail(e);
        }
        if (is_literal(x) && !adapt_literal(c, x, x->kind == E_FLOAT ? TY_F32 : TY_I32))
            return fail(e);
        bool four = (x->type == TY_F32 || x->type == TY_I32 || x->type == TY_U32) &&
                    (to->to == TY_F32 || to->to == TY_I32 || to->to == TY_U32);
        if (!four) {
            error_at(e->loc, "bitcast takes one 32-bit type to another (f32, i32, u32), not %s to %s",
                     type_name(x->type), type_name(to->to));
            return fail(e);
        }
        e->type = to->to;
        e->shape = x->shape;
        return true;
    }
    case BK_RESHAPE: {
        if (e->builtin == B_RESHAPE)
            return check_reshape(c, e, x);
        /* expand_dims(x, 0 or 1): [W] as [1, W] or [W, 1]; squeeze(x, A): a [.., ..] tile whose
           axis A has size 1 as the rank-1 tile of the other */
        Expr *ax = e->args[1];
        bool expand = e->builtin == B_EXPAND_DIMS;
        if (ax->kind != E_INT || ax->ival < 0 || ax->ival > 1) {
            error_at(ax->loc, "%s's axis is the constant 0 or 1", e->name);
            return fail(e);
        }
        int a = (int)ax->ival;
        if (expand && x->shape.rank != 1) {
            error_at(x->loc, "expand_dims takes a rank-1 tile (this one has rank %d)", x->shape.rank);
            return fail(e);
        }
        if (!expand && (x->shape.rank != 2 || x->shape.dim[a] != 1)) {
            if (x->shape.rank != 2)
                error_at(x->loc, "squeeze takes a rank-2 tile (this one has rank %d)", x->shape.rank);
            else
                error_at(x->loc, "squeeze(x, %d): axis %d of x has size %lld, not 1", a, a,
                         (long long)x->shape.dim[a]);
            return fail(e);
        }
        e->type = x->type;
        if (expand)
            e->shape = a ? (Shape){.rank = 2, .dim = {x->shape.dim[0], 1}} : (Shape){.rank = 2, .dim = {1, x->shape.dim[0]}};
        else
            e->shape = (Shape){.rank = 1, .dim = {x->shape.dim[1 - a]}};
        e->axis = a;
        return true;
    }
    case BK_ARANGE:
        if (x->kind != E_INT || x->ival <= 0) {
            error_at(x->loc, "arange(W) needs a positive integer constant width");
            return fail(e);
        }
        if (x->ival & (x->ival - 1)) {
            error_at(x->loc, "tile dimension %lld is not a power of two", (long long)x->ival);
            return fail(e);
        }
        x->type = TY_I32;
        e->type = TY_I32;
        e->shape = (Shape){.rank = 1, .dim = {x->ival}};
        return true;
    }
    die("check_call: builtin %d", e->builtin);
}

/* ---------------------------------------------------------------- casts, names, indexing */

/* The exact value of a cast of a number constant, computed here, never by the target's hardware
 * or through double: an integer keeps its value (and must fit), a float becomes an integer by
 * truncation toward zero (and must fit), a float type takes the value rounded to nearest even
 * (to f32, then to f16 or bf16 as at run time), where it must not become infinite. The cast
 * stays an E_CAST of the converted constant, so the result keeps the cast's type. */
static bool fold_cast(Check *c, Expr *e)
{
    Expr *a = e->a;
    ElemType t = e->to;
    if (!is_literal(a) || t == TY_BOOL)
        return true;
    if (type_is_int(t)) {
        int64_t v;
        if (a->kind == E_INT) {
            v = a->ival;
        } else {
            double x = trunc(a->fval);
            /* the range of i64, as doubles: [-2^63, 2^63) */
            if (!(x >= -0x1p63 && x < 0x1p63)) {
                error_at(a->loc, "%s is out of the range of %s", float_text(c, a->fval), type_name(t));
                return false;
            }
            v = (int64_t)x;
        }
        if (!int_fits(v, t)) {
            if (a->kind == E_INT)
                error_at(a->loc, "%lld is out of the range of %s", (long long)v, type_name(t));
            else
                error_at(a->loc, "%s is out of the range of %s", float_text(c, a->fval), type_name(t));
            return false;
        }
        set_int(a, v);
        a->type = t;
        return true;
    }
    if (a->kind == E_FLOAT && !float_const_fits(a->fval, t)) {
        error_at(a->loc, "%s is out of the range of %s", float_text(c, a->fval), type_name(t));
        return false;
    }
    double v = a->kind == E_INT ? int_to_f32(a->ival) : (double)(float)a->fval;
    if (a->kind == E_INT && !float_const_fits(v, t)) {
        error_at(a->loc, "%lld is out of the range of %s", (long long)a->ival, type_name(t));
        return false;
    }
    set_float(a, v);
    return true;
}

static bool check_cast(Check *c, Expr *e)
{
    if (!e->a) {   /* a type name alone: only bitcast's second argument */
        error_at(e->loc, "'%s' is a type, not a value; a cast is written %s(x)", type_name(e->to),
                 type_name(e->to));
        return fail(e);
    }
    check_expr(c, e->a);
    if (e->to == TY_TF32) {
        error_at(e->loc, "tf32(...) may only be used as an operand of @");
        return fail(e);
    }
    if (e->a->type == TY_NONE || e->a->type == TY_TF32)
        return fail(e);
    if (!fold_cast(c, e))
        return fail(e);
    e->type = e->to;
    e->shape = e->a->shape;
    return true;
}

static bool check_name(Check *c, Expr *e)
{
    Sym *s = lookup(c, e->name);
    if (!s) {
        error_at(e->loc, "use of undeclared name '%s'", e->name);
        return fail(e);
    }
    if (s->kind == SYM_CONST) {
        if (s->type == TY_NONE)
            return fail(e);
        if (s->is_float)
            return set_float(e, s->fval);
        return set_int(e, s->ival);
    }
    if (s->kind == SYM_TENSOR) {
        error_at(e->loc, "'%s' is a tensor parameter: index it to get a tile, e.g. %s[i +: 64]",
                 e->name, e->name);
        return fail(e);
    }
    e->sym = s;
    e->type = s->type;
    e->shape = s->shape;
    return true;
}

/* A constant slice of a local tile: t[0 +: 16, :], t[3, :] (a row), t[:, 5]. Each subscript is a
 * window with a constant start, `:` (the whole dimension) or a constant single index (the
 * dimension dropped), inside the tile; the result is an E_SLICE of the tile's name. */
static bool check_slice(Check *c, Expr *e, Sym *s, bool is_target)
{
    const char *name = e->base->name;
    if (is_target) {
        error_at(e->loc, "a slice of the tile '%s' is a value and cannot be assigned to; assign "
                 "the whole var (where() picks the elements to change)", name);
        return fail(e);
    }
    if (e->nidx != s->shape.rank) {
        error_at(e->loc, "the tile '%s' has rank %d but %d subscript%s given", name, s->shape.rank,
                 e->nidx, e->nidx == 1 ? " is" : "s are");
        return fail(e);
    }
    if (e->fill) {
        error_at(e->fill->loc, "'else' gives the value of masked loads of a tensor; a slice of a "
                 "tile is never out of bounds");
        return fail(e);
    }
    Shape shape = {0};
    bool bad = false;
    for (int i = 0; i < e->nidx; i++) {
        Index *ix = &e->idx[i];
        int64_t dim = s->shape.dim[i];
        if (!ix->start) {          /* `:` */
            ix->start = new_node(c, E_INT, ix->loc);
            ix->start->ival = 0;
            ix->width = dim;
            shape.dim[shape.rank++] = dim;
            continue;
        }
        Expr *st = ix->start;
        check_expr(c, st);
        if (st->type == TY_NONE) {
            bad = true;
            continue;
        }
        if (st->kind != E_INT) {
            error_at(st->loc, "a slice of a tile starts at a constant (the tile '%s' is in registers, "
                     "spread over the threads); for a start known only at run time, index a tensor",
                     name);
            bad = true;
            continue;
        }
        int64_t w = 0;
        if (ix->width_expr) {
            Expr *we = ix->width_expr;
            check_expr(c, we);
            if (we->type == TY_NONE) {
                bad = true;
                continue;
            }
            if (we->kind != E_INT || we->ival <= 0) {
                error_at(we->loc, "a window width must be a positive integer constant");
                bad = true;
                continue;
            }
            if (we->ival & (we->ival - 1)) {
                error_at(we->loc, "tile dimension %lld is not a power of two", (long long)we->ival);
                bad = true;
                continue;
            }
            w = we->ival;
        }
        if (st->ival < 0 || st->ival + (w ? w : 1) > dim) {
            if (w)
                error_at(st->loc, "the slice %lld +: %lld is outside dimension %d of '%s', of size %lld",
                         (long long)st->ival, (long long)w, i, name, (long long)dim);
            else
                error_at(st->loc, "index %lld is outside dimension %d of '%s', of size %lld",
                         (long long)st->ival, i, name, (long long)dim);
            bad = true;
            continue;
        }
        st->type = TY_I32;
        ix->width = w;
        if (w)
            shape.dim[shape.rank++] = w;
    }
    if (bad)
        return fail(e);
    Expr *base = e->base;
    base->sym = s;
    base->type = s->type;
    base->shape = s->shape;
    e->kind = E_SLICE;
    e->a = base;
    e->sym = NULL;
    e->type = s->type;
    e->shape = shape;
    return true;
}

bool check_index(Check *c, Expr *e, bool is_target)
{
    const char *name = e->base->name;
    Sym *s = lookup(c, name);
    if (!s) {
        error_at(e->loc, "use of undeclared name '%s'", name);
        return fail(e);
    }
    if ((s->kind == SYM_LET || s->kind == SYM_VAR) && s->shape.rank > 0)
        return check_slice(c, e, s, is_target);
    if (s->kind != SYM_TENSOR) {
        error_at(e->loc, "only tensor parameters and local tiles can be indexed; '%s' is %s", name,
                 s->shape.rank == 0 && (s->kind == SYM_LET || s->kind == SYM_VAR) ? "a scalar"
                 : "not one");
        note_at(s->loc, "'%s' was declared here", name);
        return fail(e);
    }
    e->sym = e->base->sym = s;
    e->base->type = s->type;
    bool bad = false;
    if (e->nidx != s->rank) {
        error_at(e->loc, "'%s' has %d dimension%s but %d subscript%s given", name, s->rank,
                 s->rank == 1 ? "" : "s", e->nidx, e->nidx == 1 ? " is" : "s are");
        bad = true;
    }
    Shape shape = {0};
    int windows = 0;
    for (int i = 0; i < e->nidx; i++) {
        Index *ix = &e->idx[i];
        Expr *st = ix->start;
        if (!st) {
            error_at(ix->loc, "':' takes a whole dimension of a local tile; a window of a tensor "
                     "has a start and a width, as in %s[0 +: 64]", name);
            bad = true;
            continue;
        }
        check_expr(c, st);
        if (st->type == TY_NONE) {
            bad = true;
        } else if (is_literal(st) ? !adapt_literal(c, st, TY_I32) : false) {
            bad = true;
        } else if (st->type == TY_I32 && st->shape.rank == 1 && !ix->width_expr) {
            /* a gather: rows chosen by an index tile, then a window along the rows */
            if (windows > 0) {
                error_at(st->loc, "an index tile (%s) picks rows or elements: it goes before any "
                         "window, as in X[rows, 0 +: 64] or x[idx]", shape_str(c, st->type, st->shape));
                bad = true;
                continue;
            }
            ix->gather = true;
            ix->width = st->shape.dim[0];
            windows++;
            shape.dim[shape.rank++] = ix->width;
            continue;
        } else if (st->type != TY_I32 || st->shape.rank != 0) {
            error_at(st->loc, "an index must be an i32 scalar or an i32[W] tile of row indices, not %s",
                     shape_str(c, st->type, st->shape));
            bad = true;
        }
        if (!ix->width_expr)
            continue;
        Expr *w = ix->width_expr;
        check_expr(c, w);
        if (w->type == TY_NONE) {
            bad = true;
            continue;
        }
        if (w->kind != E_INT || w->ival <= 0) {
            error_at(w->loc, "a window width must be a positive integer constant");
            bad = true;
            continue;
        }
        if (w->ival & (w->ival - 1)) {
            error_at(w->loc, "tile dimension %lld is not a power of two", (long long)w->ival);
            bad = true;
            continue;
        }
        w->type = TY_I32;
        ix->width = w->ival;
        if (++windows == MAX_TILE_RANK + 1) {
            error_at(ix->loc, "at most %d windows in one index: tiles have rank 0, 1 or 2",
                     MAX_TILE_RANK);
            bad = true;
        }
        if (shape.rank < MAX_TILE_RANK)
            shape.dim[shape.rank++] = w->ival;
    }
    if (e->fill) {
        Expr *f = e->fill;
        check_expr(c, f);
        if (is_target) {
            error_at(f->loc, "'else' gives the value of masked loads; a store cannot have one");
            bad = true;
        } else if (f->type == TY_NONE) {
            bad = true;
        } else if (!is_literal(f)) {
            error_at(f->loc, "the value after 'else' must be a constant, e.g. -inf or 0");
            bad = true;
        } else if (!adapt_literal(c, f, s->type)) {
            bad = true;
        }
    }
    if (bad || !tile_fits(c, e->loc, s->type, shape))
        return fail(e);
    e->type = s->type;
    e->shape = shape;
    return true;
}

/* ---------------------------------------------------------------- transposed views */

static Expr *new_node(Check *c, ExprKind kind, Loc loc)
{
    Expr *e = arena_alloc(c->a, sizeof *e);
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->loc = loc;
    e->type = TY_I32;
    return e;
}

/* An extent as an expression (a size name or a constant). */
static Expr *extent_expr(Check *c, Extent x, Loc loc)
{
    if (x.expr)
        return x.expr;
    Expr *e = new_node(c, x.size ? E_NAME : E_INT, loc);
    if (x.size) {
        e->name = x.size->name;
        e->sym = x.size;
    } else {
        e->ival = x.cval;
    }
    return e;
}

/* Stride d of a tensor with default strides, written out: the product of the later dimensions,
 * constant where they all are (check_params computed those), else an expression of sizes. */
static Extent default_stride(Check *c, const Sym *t, int d)
{
    if (d == t->rank - 1)
        return (Extent){ .cval = 1 };
    if (t->stride[d].cval > 0)
        return t->stride[d];
    Expr *prod = NULL;
    for (int j = d + 1; j < t->rank; j++) {
        Expr *x = extent_expr(c, t->dim[j], t->loc);
        if (prod) {
            Expr *m = new_node(c, E_BINARY, t->loc);
            m->op = '*';
            m->a = prod;
            m->b = x;
            x = m;
        }
        prod = x;
    }
    if (prod->kind == E_NAME)
        return (Extent){ .cval = 1, .size = prod->sym };
    return (Extent){ .cval = 1, .expr = prod };
}

/* Tensor t seen with dimensions d0 and d1 swapped: the same argument and memory, made once per
 * kernel, tensor and pair (Kernel.views); the view of a view is the tensor. */
static Sym *swapped_view(Check *c, Sym *t, int d0, int d1)
{
    if (t->view_of && t->view_d0 == d0 && t->view_d1 == d1)
        return t->view_of;
    for (int i = 0; i < c->views.n; i++) {
        Sym *v = c->views.v[i];
        if (v->view_of == t && v->view_d0 == d0 && v->view_d1 == d1)
            return v;
    }
    Sym *v = arena_alloc(c->a, sizeof *v);
    *v = *t;
    v->name = arena_printf(c->a, "%s.T", t->name);
    v->view_of = t;
    v->view_d0 = d0;
    v->view_d1 = d1;
    v->lower = NULL;
    v->has_default_strides = false;
    for (int d = 0; d < t->rank; d++)
        v->stride[d] = t->has_default_strides ? default_stride(c, t, d) : t->stride[d];
    Extent x = v->dim[d0];
    v->dim[d0] = v->dim[d1];
    v->dim[d1] = x;
    x = v->stride[d0];
    v->stride[d0] = v->stride[d1];
    v->stride[d1] = x;
    vec_push(&c->views, v);
    return v;
}

/* The two windowed subscripts of a checked 2-D window (false if it is not one). */
bool window_dims(const Expr *e, int *d0, int *d1)
{
    if (e->kind != E_INDEX || e->shape.rank != 2)
        return false;
    int n = 0;
    for (int i = 0; i < e->nidx; i++)
        if (e->idx[i].width_expr)
            *(n++ ? d1 : d0) = i;
    return n == 2;
}

/* The same elements as window e (2-D, checked), transposed: a window of the swapped view. */
Expr *transposed_window(Check *c, Expr *e)
{
    int d0, d1;
    if (!window_dims(e, &d0, &d1))
        return NULL;
    Expr *t = arena_alloc(c->a, sizeof *t);
    *t = *e;
    t->sym = swapped_view(c, e->sym, d0, d1);
    t->idx = arena_alloc(c->a, sizeof *t->idx * (size_t)e->nidx);
    memcpy(t->idx, e->idx, sizeof *t->idx * (size_t)e->nidx);
    t->idx[d0] = e->idx[d1];
    t->idx[d1] = e->idx[d0];
    t->shape.dim[0] = e->shape.dim[1];
    t->shape.dim[1] = e->shape.dim[0];
    t->twin = NULL;
    return t;
}

/* x.T: of a 2-D window of a tensor, the node becomes the window of the swapped view, whose twin
 * is x itself (read as stored: no data movement); of any other 2-D tile, it stays a transpose of
 * the value (lowered through shared memory). */
static bool check_transpose(Check *c, Expr *e)
{
    Expr *x = e->a;
    if (x->kind != E_INDEX) {
        check_expr(c, x);
        if (x->type == TY_NONE)
            return fail(e);
        if (x->shape.rank != 2) {
            error_at(e->loc, "'.T' transposes a 2-D tile, and this one is %s", shape_str(c, x->type, x->shape));
            return fail(e);
        }
        e->type = x->type;
        e->shape = x->shape;
        e->shape.dim[0] = x->shape.dim[1];
        e->shape.dim[1] = x->shape.dim[0];
        return true;
    }
    if (!check_index(c, x, false))
        return fail(e);
    Expr *t = transposed_window(c, x);
    if (!t) {
        error_at(e->loc, "'.T' transposes a 2-D window of a tensor, and this one is %s",
                 shape_str(c, x->type, x->shape));
        return fail(e);
    }
    Loc loc = e->loc;
    *e = *t;
    e->loc = loc;
    e->twin = x;
    return true;
}

/* Is stride d of tensor t known to be 1 (elements contiguous along d)? */
static bool unit_stride(const Sym *t, int d)
{
    if (t->has_default_strides)
        return d == t->rank - 1;
    return !t->stride[d].size && !t->stride[d].expr && t->stride[d].cval == 1;
}

/* An `@` operand that is a 2-D window contiguous along its first windowed dimension (a
 * column-major view) gets its twin, the same window of the swapped view, which is contiguous
 * along rows: the pipeline copies that and the tensor cores read it transposed. */
void find_twin(Check *c, Expr *x)
{
    int d0, d1;
    if (x->kind == E_CAST)
        x = x->a;
    if (x->twin || !window_dims(x, &d0, &d1) || !unit_stride(x->sym, d0) || unit_stride(x->sym, d1))
        return;
    x->twin = transposed_window(c, x);
}

/* ---------------------------------------------------------------- matmul */

static bool check_operand(Check *c, Expr *x)
{
    if (x->kind == E_CAST && x->to == TY_TF32) {
        check_expr(c, x->a);
        if (x->a->type == TY_NONE)
            return fail(x);
        if (x->a->type != TY_F32) {
            error_at(x->loc, "tf32(...) takes an f32 value, not %s", type_name(x->a->type));
            return fail(x);
        }
        x->type = TY_TF32;
        x->shape = x->a->shape;
        return true;
    }
    check_expr(c, x);
    return true;
}

bool check_matmul(Check *c, Expr *e)
{
    Expr *a = e->a, *b = e->b;
    check_operand(c, a);
    check_operand(c, b);
    if (a->type == TY_NONE || b->type == TY_NONE)
        return fail(e);
    for (int i = 0; i < 2; i++) {
        Expr *x = i ? b : a;
        if (x->type != TY_F32 && x->type != TY_TF32 && x->type != TY_F16 && x->type != TY_BF16 &&
            !type_is_8bit(x->type)) {
            error_at(x->loc, "@ needs f32, tf32, f16, bf16, f8e4m3, f8e5m2, i8 or u8 operands, not %s",
                     type_name(x->type));
            return fail(e);
        }
    }
    /* 8-bit operands may mix within their family: i8 x u8, e4m3 x e5m2 (the tensor cores take
       each pair) */
    bool ints = (a->type == TY_I8 || a->type == TY_U8) && (b->type == TY_I8 || b->type == TY_U8);
    bool fp8 = type_is_f8(a->type) && type_is_f8(b->type);
    if (a->type != b->type && !ints && !fp8) {
        error_at(e->loc, "both operands of @ must have the same type (or two 8-bit integer or two "
                 "fp8 types), not %s and %s", type_name(a->type), type_name(b->type));
        return fail(e);
    }
    if (a->shape.rank != 2 || b->shape.rank != 2 || a->shape.dim[1] != b->shape.dim[0]) {
        error_at(e->loc, "shapes %s and %s do not match for @ (it needs [M,K] @ [K,N])",
                 shape_str(c, a->type, a->shape), shape_str(c, b->type, b->shape));
        return fail(e);
    }
    /* 8-bit products accumulate exactly where they can: integers in i32, fp8 in f32 */
    e->type = a->type == TY_I8 || a->type == TY_U8 ? TY_I32 : TY_F32;
    e->shape = (Shape){.rank = 2, .dim = {a->shape.dim[0], b->shape.dim[1]}};
    if (!tile_fits(c, e->loc, e->type, e->shape))
        return fail(e);
    find_twin(c, a);
    find_twin(c, b);
    return true;
}

/* ---------------------------------------------------------------- dispatch */

void check_expr(Check *c, Expr *e)
{
    if (++c->edepth > MAX_EXPR_DEPTH) {
        if (!c->too_deep)
            error_at(e->loc, "expression nested too deeply (more than %d levels)", MAX_EXPR_DEPTH);
        c->too_deep = true;
        c->edepth--;
        fail(e);
        return;
    }
    e->shape.rank = 0;
    switch (e->kind) {
    case E_INT: e->type = e->ival >= INT32_MIN && e->ival <= INT32_MAX ? TY_I32 : TY_I64; break;
    case E_FLOAT: e->type = TY_F32; break;
    case E_BOOL: e->type = TY_BOOL; break;
    case E_BLOCK: e->type = TY_I32; break;
    case E_NAME: check_name(c, e); break;
    case E_UNARY: check_unary(c, e); break;
    case E_BINARY: check_binary(c, e); break;
    case E_CALL: check_call(c, e); break;
    case E_CAST: check_cast(c, e); break;
    case E_INDEX: check_index(c, e, false); break;
    case E_TRANSPOSE: check_transpose(c, e); break;
    case E_SLICE:          /* checked before (an E_INDEX then): its shape again */
        e->type = e->a->type;
        for (int i = 0; i < e->nidx; i++)
            if (e->idx[i].width)
                e->shape.dim[e->shape.rank++] = e->idx[i].width;
        break;
    }
    if (e->type != TY_NONE && e->kind != E_INDEX && !tile_fits(c, e->loc, e->type, e->shape))
        fail(e);
    c->edepth--;
}
