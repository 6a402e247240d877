/* interp_expr.c: the interpreter's expressions. Each evaluation returns a fresh dense tile of
 * the expression's checked type and shape; elementwise operations broadcast their operands to
 * it. Arithmetic is the GPU's: f32 operations rounded once each (f16, bf16 and fp8 values are
 * computed in f32 and stay unrounded until narrowed), integers wrap, shifts clamp their counts,
 * comparisons of floats are ordered (NaN compares false, != included, as setp.ne). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"

static Value empty(void)
{
    Value v;
    memset(&v, 0, sizeof v);
    return v;
}

static Value fresh(Interp *in, const Expr *e, ElemType t, Shape s)
{
    Value v = value_new(t, s);
    if (!v.v)
        interp_error(in, e->loc, "out of memory for a %s tile of %lld elements", type_name(t),
                     (long long)shape_count(s));
    return v;
}

/* ---------------------------------------------------------------- launch-time integers */

static bool mul_ok(int64_t a, int64_t b, int64_t *r)
{
    if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)
              : (b > 0 ? a < INT64_MIN / b : (a != 0 && b < INT64_MAX / a)))
        return false;
    *r = a * b;
    return true;
}

int64_t interp_launch_int(Interp *in, const Expr *e)
{
    if (in->failed)
        return 0;
    switch (e->kind) {
    case E_INT: case E_BOOL: return e->ival;
    case E_FLOAT: return (int64_t)e->fval;
    case E_NAME: {
        const Sym *s = e->sym;
        if (s && s->kind == SYM_SIZE)
            return in->args[in->k->nparams + s->size_index].i;
        if (s && s->kind == SYM_SCALAR)
            return in->args[s->param_index].i;
        break;
    }
    case E_CAST: return e->a ? interp_launch_int(in, e->a) : 0;
    case E_UNARY: {
        int64_t a = interp_launch_int(in, e->a);
        if (e->op == '!')
            return !a;
        if (e->op == '~')
            return ~a;
        if (a == INT64_MIN) {
            interp_error(in, e->loc, "integer overflow (neg of %lld)", (long long)a);
            return 0;
        }
        return -a;
    }
    case E_BINARY: case E_CALL: {
        const Expr *x = e->kind == E_BINARY ? e->a : e->args[0];
        const Expr *y = e->kind == E_BINARY ? e->b : e->args[1];
        int op = e->kind == E_BINARY ? e->op
               : e->builtin == B_CDIV ? 'c' : e->builtin == B_MAXIMUM ? 'M' : e->builtin == B_MINIMUM ? 'm' : 0;
        int64_t a = interp_launch_int(in, x), b = interp_launch_int(in, y), r = 0;
        bool ok = true;
        switch (op) {
        case '+': ok = !((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)); r = a + (ok ? b : 0); break;
        case '-': ok = !((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)); r = a - (ok ? b : 0); break;
        case '*': ok = mul_ok(a, b, &r); break;
        case '/': case '%': case 'c':
            if (b == 0) {
                interp_error(in, e->loc, "division by zero (%lld / 0)", (long long)a);
                return 0;
            }
            if (a == INT64_MIN && b == -1) {
                ok = op == '%';
                r = 0;
                break;
            }
            r = op == '%' ? a % b : a / b;
            if (op == 'c' && a % b != 0 && (a < 0) == (b < 0))
                r++;
            break;
        case 'M': r = a > b ? a : b; break;
        case 'm': r = a < b ? a : b; break;
        case OP_EQ: r = a == b; break;
        case OP_NE: r = a != b; break;
        case '<': r = a < b; break;
        case OP_LE: r = a <= b; break;
        case '>': r = a > b; break;
        case OP_GE: r = a >= b; break;
        case OP_AND: r = a && b; break;
        case OP_OR: r = a || b; break;
        default:
            interp_error(in, e->loc, "this operator cannot be evaluated at launch");
            return 0;
        }
        if (!ok)
            interp_error(in, e->loc, "integer overflow (%lld and %lld)", (long long)a, (long long)b);
        return r;
    }
    default:
        break;
    }
    interp_error(in, e->loc, "this expression cannot be evaluated at launch");
    return 0;
}

int64_t interp_extent(Interp *in, const Extent *x)
{
    if (x->expr)
        return interp_launch_int(in, x->expr);
    if (x->size)
        return in->args[in->k->nparams + x->size->size_index].i;
    return x->cval;
}

/* ---------------------------------------------------------------- elementwise arithmetic */

static bool is_unsigned(ElemType t) { return t == TY_U32 || t == TY_U8; }
static int int_width(ElemType t) { return t == TY_I64 ? 64 : 32; }

static int64_t shift(ElemType t, int op, int64_t x, int64_t count, ElemType ct)
{
    /* the count is taken as unsigned (of its own width) and clamped to the shifted width */
    uint64_t n = ct == TY_I64 ? (uint64_t)count : (uint64_t)(uint32_t)(uint64_t)count;
    int w = int_width(t);
    if (op == OP_LSHIFT)
        return n >= (uint64_t)w ? 0 : wrap_to(t, (int64_t)((uint64_t)x << n));
    if (is_unsigned(t))
        return n >= (uint64_t)w ? 0 : (int64_t)((uint64_t)x >> n);
    if (n >= (uint64_t)w)
        return x < 0 ? -1 : 0;
    /* arithmetic shift without relying on >> of a negative value */
    return x < 0 ? ~(int64_t)(~(uint64_t)x >> n) : (int64_t)((uint64_t)x >> n);
}

/* x / y and x % y truncating; the interpreter's value for a zero divisor is -1 (all bits set)
 * and x, what the GPU's division gives, and the most negative value over -1 wraps. */
static int64_t idiv(ElemType t, bool rem, int64_t x, int64_t y)
{
    if (y == 0)
        return rem ? x : wrap_to(t, -1);
    if (y == -1)
        return rem ? 0 : wrap_to(t, (int64_t)(0 - (uint64_t)x));
    return rem ? x % y : x / y;
}

static Elem bin_elem(int op, ElemType t, ElemType bt, Elem a, Elem b)
{
    Elem r;
    r.i = 0;
    if (type_is_float(t)) {
        float x = a.f, y = b.f;
        switch (op) {
        case '+': r.f = x + y; break;
        case '-': r.f = x - y; break;
        case '*': r.f = x * y; break;
        case '/': r.f = x / y; break;
        case OP_EQ: r.i = x == y; break;
        case OP_NE: r.i = x < y || x > y; break;
        case '<': r.i = x < y; break;
        case OP_LE: r.i = x <= y; break;
        case '>': r.i = x > y; break;
        case OP_GE: r.i = x >= y; break;
        default: break;
        }
        return r;
    }
    int64_t x = a.i, y = b.i;
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
    switch (op) {
    case '+': r.i = wrap_to(t, (int64_t)(ux + uy)); break;
    case '-': r.i = wrap_to(t, (int64_t)(ux - uy)); break;
    case '*': r.i = wrap_to(t, (int64_t)(ux * uy)); break;
    case '/': r.i = idiv(t, false, x, y); break;
    case '%': r.i = idiv(t, true, x, y); break;
    case '&': r.i = wrap_to(t, x & y); break;
    case '|': r.i = wrap_to(t, x | y); break;
    case '^': r.i = wrap_to(t, x ^ y); break;
    case OP_LSHIFT: case OP_RSHIFT: r.i = shift(t, op, x, y, bt); break;
    case OP_EQ: r.i = x == y; break;
    case OP_NE: r.i = x != y; break;
    case '<': r.i = x < y; break;
    case OP_LE: r.i = x <= y; break;
    case '>': r.i = x > y; break;
    case OP_GE: r.i = x >= y; break;
    case OP_AND: r.i = x && y; break;
    case OP_OR: r.i = x || y; break;
    default: break;
    }
    return r;
}

/* a op b elementwise into a tile of type rt and shape s; t the operands' type. */
static Value map2(Interp *in, const Expr *e, int op, ElemType t, ElemType rt, Shape s,
                  const Value *a, const Value *b)
{
    Value r = fresh(in, e, rt, s);
    if (!r.v)
        return r;
    for (int64_t i = 0; i < r.n; i++)
        r.v[i] = bin_elem(op, t, b->type, a->v[bcast_index(a, s, i)], b->v[bcast_index(b, s, i)]);
    return r;
}

Value interp_binop(Interp *in, const Expr *e, int op, const Value *a, const Value *b, ElemType rt,
                   Shape s)
{
    return map2(in, e, op, a->type, rt, s, a, b);
}

/* ---------------------------------------------------------------- math builtins */

/* Results below the smallest normal f32 flushed to zero, as ex2.approx, lg2.approx and
 * rsqrt.approx give them (docs/language.md, the precision table). */
static float ftz(float y) { return fabsf(y) < 0x1p-126f ? copysignf(0.0f, y) : y; }

static float pow_f32(float x, float y)
{
    /* C's cases: pow(1, y) is 1 for every y, pow(-1, +-inf) too; pow(-1, 0.5) is NaN below */
    if (y == 0 || x == 1 || (x == -1 && isinf(y)))
        return 1.0f;
    if (fabsf(x) < 0x1p-126f)
        x = 0;   /* a subnormal x (and -0) counts as +0 */
    if (x == 0)
        return y > 0 ? 0.0f : y < 0 ? INFINITY : NAN;
    bool odd = false;
    if (x < 0) {
        if (!(truncf(y) == y))
            return NAN;
        odd = fmodf(y, 2.0f) != 0;
    }
    float r = ftz((float)exp2((double)y * log2(fabs((double)x))));
    return odd ? -r : r;
}

static float math1(Builtin b, float x)
{
    switch (b) {
    case B_EXP: return ftz(expf(x));
    case B_EXP2: return ftz(exp2f(x));
    case B_LOG: return ftz(logf(x));
    case B_LOG2: return ftz(log2f(x));
    case B_SQRT: return sqrtf(x);
    case B_RSQRT: return ftz((float)(1.0 / sqrt((double)x)));
    case B_TANH: return tanhf(x);
    case B_SIGMOID: return 1.0f / (1.0f + ftz(expf(-x)));
    case B_ABS: return fabsf(x);
    case B_ERF: return erff(x);
    case B_LOG1P: return log1pf(x);
    case B_EXPM1: return expm1f(x);
    case B_FLOOR: return floorf(x);
    case B_CEIL: return ceilf(x);
    case B_ROUND: return rintf(x);
    default: return x;
    }
}

/* ---------------------------------------------------------------- reductions */

static bool better(Builtin b, ElemType t, Elem x, Elem best)
{
    bool mx = b == B_MAX || b == B_ARGMAX;
    if (type_is_float(t))
        return mx ? x.f > best.f : x.f < best.f;
    return mx ? x.i > best.i : x.i < best.i;
}

static Elem combine(Builtin b, ElemType t, Elem acc, Elem x)
{
    Elem r;
    if (b == B_SUM || b == B_CUMSUM) {
        if (type_is_float(t))
            r.f = acc.f + x.f;
        else
            r.i = wrap_to(t, (int64_t)((uint64_t)acc.i + (uint64_t)x.i));
        return r;
    }
    /* max.f32 / min.f32: a NaN operand loses to a number */
    if (type_is_float(t)) {
        r.f = b == B_MAX ? fmaxf(acc.f, x.f) : fminf(acc.f, x.f);
        return r;
    }
    return better(b, t, x, acc) ? x : acc;
}

static Value reduce(Interp *in, const Expr *e, const Value *x)
{
    Builtin b = e->builtin;
    ElemType rt = e->type;
    /* sums of f16 and bf16 go into f32; the values already are */
    ElemType at = type_is_float(x->type) ? TY_F32 : x->type;
    Value r = fresh(in, e, rt, e->shape);
    if (!r.v)
        return r;
    int64_t rows = x->shape.rank == 2 ? x->shape.dim[0] : 1;
    int64_t cols = x->shape.rank >= 1 ? x->shape.dim[x->shape.rank - 1] : 1;
    if (e->axis < 0) {
        Elem acc = x->v[0];
        for (int64_t i = 1; i < x->n; i++)
            acc = combine(b, at, acc, x->v[i]);
        r.v[0] = acc;
        return r;
    }
    /* lines along the axis: line l, position p -> element index */
    bool along_rows = x->shape.rank == 2 && e->axis == 1;
    bool rank1 = x->shape.rank == 1;
    int64_t nlines = rank1 ? 1 : along_rows ? rows : cols;
    int64_t len = rank1 ? cols : along_rows ? cols : rows;
    for (int64_t l = 0; l < nlines; l++) {
        Elem acc = {0};
        int64_t arg = 0;
        for (int64_t p = 0; p < len; p++) {
            int64_t at_i = rank1 ? p : along_rows ? l * cols + p : p * cols + l;
            Elem v = x->v[at_i];
            if (p == 0) {
                acc = v;
            } else if (b == B_ARGMAX || b == B_ARGMIN) {
                if (better(b, x->type, v, acc)) {
                    acc = v;
                    arg = p;
                }
            } else {
                acc = combine(b, at, acc, v);
            }
            if (b == B_CUMSUM)
                r.v[at_i] = acc;
        }
        if (b == B_CUMSUM)
            continue;
        if (b == B_ARGMAX || b == B_ARGMIN)
            acc.i = arg;
        r.v[l] = acc;   /* the kept axis has size 1: line l is element l */
    }
    return r;
}

/* ---------------------------------------------------------------- random numbers */

static void words(ElemType t, Elem v, uint32_t *lo, uint32_t *hi)
{
    uint64_t u = (uint64_t)v.i;
    *lo = (uint32_t)u;
    *hi = t == TY_I64 ? (uint32_t)(u >> 32) : 0;
}

static Value random_tile(Interp *in, const Expr *e, const Value *seed, const Value *off)
{
    Value r = fresh(in, e, e->type, e->shape);
    if (!r.v)
        return r;
    uint32_t k0, k1;
    words(seed->type, seed->v[0], &k0, &k1);
    for (int64_t i = 0; i < r.n; i++) {
        uint32_t c0, c1, x0, x1;
        words(off->type, off->v[i], &c0, &c1);
        philox4x32_10(k0, k1, c0, c1, &x0, &x1);
        if (e->builtin == B_RANDINT) {
            r.v[i].i = x0;
        } else if (e->builtin == B_RAND) {
            r.v[i].f = (float)(x0 >> 8) * 0x1p-24f;
        } else {
            /* as lowered: -sqrt(-2 log1p(u1 - 1)) cos(2 pi (u2 - 1/2)), in f32 */
            float u1 = (float)((x0 >> 8) + 1) * 0x1p-24f, u2 = (float)(x1 >> 8) * 0x1p-24f;
            float rad = sqrtf(log1pf(u1 - 1.0f) * -2.0f);
            float th = (u2 - 0.5f) * 0x1.921fb6p+2f;
            r.v[i].f = -(rad * cosf(th));
        }
    }
    return r;
}

/* ---------------------------------------------------------------- calls */

static Value call(Interp *in, const Expr *e)
{
    Builtin b = e->builtin;
    BuiltinKind kind = builtin_info[b].kind;
    if (kind == BK_ARANGE) {
        Value r = fresh(in, e, TY_I32, e->shape);
        for (int64_t i = 0; r.v && i < r.n; i++)
            r.v[i].i = i;
        return r;
    }
    Value a[3] = { empty(), empty(), empty() };
    int n = kind == BK_BITCAST || kind == BK_RESHAPE ? 1 : e->nargs;
    for (int i = 0; i < n && !in->failed; i++)
        a[i] = interp_eval(in, e->args[i]);
    Value r = empty();
    if (in->failed)
        goto done;
    switch (kind) {
    case BK_MATH:
        r = fresh(in, e, e->type, e->shape);
        for (int64_t i = 0; r.v && i < r.n; i++) {
            if (type_is_float(e->type))
                r.v[i].f = math1(b, a[0].v[i].f);
            else   /* abs of an integer wraps: abs(INT32_MIN) is INT32_MIN */
                r.v[i].i = wrap_to(e->type, a[0].v[i].i < 0 ? (int64_t)(0 - (uint64_t)a[0].v[i].i) : a[0].v[i].i);
        }
        break;
    case BK_PAIR:
        if (b == B_CDIV) {
            r = fresh(in, e, e->type, e->shape);
            if (r.v) {
                int64_t x = a[0].v[0].i, y = a[1].v[0].i;
                Elem s, one = { .i = 1 }, xe = { .i = x }, ye = { .i = y };
                s = bin_elem('+', e->type, e->type, xe, ye);
                s = bin_elem('-', e->type, e->type, s, one);
                r.v[0] = bin_elem('/', e->type, e->type, s, ye);
            }
            break;
        }
        r = fresh(in, e, e->type, e->shape);
        for (int64_t i = 0; r.v && i < r.n; i++) {
            Elem x = a[0].v[bcast_index(&a[0], e->shape, i)], y = a[1].v[bcast_index(&a[1], e->shape, i)];
            if (b == B_POW)
                r.v[i].f = pow_f32(x.f, y.f);
            else if (type_is_float(e->type))
                r.v[i].f = b == B_MAXIMUM ? fmaxf(x.f, y.f) : fminf(x.f, y.f);
            else
                r.v[i] = (b == B_MAXIMUM ? x.i > y.i : x.i < y.i) ? x : y;
        }
        break;
    case BK_FMA:
        r = fresh(in, e, e->type, e->shape);
        for (int64_t i = 0; r.v && i < r.n; i++)
            r.v[i].f = fmaf(a[0].v[bcast_index(&a[0], e->shape, i)].f,
                            a[1].v[bcast_index(&a[1], e->shape, i)].f,
                            a[2].v[bcast_index(&a[2], e->shape, i)].f);
        break;
    case BK_SELECT:
        r = fresh(in, e, e->type, e->shape);
        for (int64_t i = 0; r.v && i < r.n; i++)
            r.v[i] = a[0].v[bcast_index(&a[0], e->shape, i)].i ? a[1].v[bcast_index(&a[1], e->shape, i)]
                                                               : a[2].v[bcast_index(&a[2], e->shape, i)];
        break;
    case BK_REDUCE:
        r = reduce(in, e, &a[0]);
        break;
    case BK_RAND:
        r = random_tile(in, e, &a[0], &a[1]);
        break;
    case BK_BITCAST:
        r = fresh(in, e, e->type, e->shape);
        for (int64_t i = 0; r.v && i < r.n; i++) {
            uint32_t bits;
            if (a[0].type == TY_F32)
                memcpy(&bits, &a[0].v[i].f, 4);
            else
                bits = (uint32_t)(uint64_t)a[0].v[i].i;
            if (e->type == TY_F32)
                memcpy(&r.v[i].f, &bits, 4);
            else
                r.v[i].i = wrap_to(e->type, (int64_t)bits);
        }
        break;
    case BK_RESHAPE:
        /* the same elements in the same order: only the shape changes */
        r = a[0];
        a[0] = empty();
        r.shape = e->shape;
        break;
    case BK_ARANGE:
        break;
    }
done:
    for (int i = 0; i < 3; i++)
        value_free(&a[i]);
    return r;
}

/* ---------------------------------------------------------------- dispatch */

static Value scalar(Interp *in, const Expr *e, ElemType t, Elem x)
{
    Value r = fresh(in, e, t, (Shape){0});
    if (r.v)
        r.v[0] = x;
    return r;
}

Value interp_eval(Interp *in, const Expr *e)
{
    if (in->failed)
        return empty();
    Elem x;
    x.i = 0;
    switch (e->kind) {
    case E_INT:
        if (type_is_float(e->type))
            x.f = (float)e->ival;
        else
            x.i = wrap_to(e->type, e->ival);
        return scalar(in, e, e->type, x);
    case E_FLOAT:
        if (type_is_float(e->type))
            x.f = (float)e->fval;
        else
            x.i = (int64_t)e->fval;
        return scalar(in, e, e->type, x);
    case E_BOOL:
        x.i = e->ival != 0;
        return scalar(in, e, TY_BOOL, x);
    case E_BLOCK:
        x.i = in->block[e->ival];
        return scalar(in, e, TY_I32, x);
    case E_NAME: {
        const Sym *s = e->sym;
        if (s->kind == SYM_SIZE) {
            x.i = in->args[in->k->nparams + s->size_index].i;
            return scalar(in, e, TY_I32, x);
        }
        if (s->kind == SYM_SCALAR) {
            const InterpArg *a = &in->args[s->param_index];
            if (type_is_float(s->type))
                x.f = round_to_type(s->type, (float)a->f);
            else
                x.i = wrap_to(s->type, a->i);
            return scalar(in, e, s->type, x);
        }
        Value *v = interp_slot(in, s);
        if (!v) {
            interp_error(in, e->loc, "'%s' has no value here", e->name);
            return empty();
        }
        Value r = value_copy(v);
        if (!r.v)
            interp_error(in, e->loc, "out of memory");
        return r;
    }
    case E_SLICE: {
        /* t[a +: W, :], t[3, :]: element (i, j) of the slice is the tile's at the subscripts'
           starts plus i, j along the kept dimensions */
        Value t = interp_eval(in, e->a);
        if (in->failed)
            return t;
        Value r = fresh(in, e, t.type, e->shape);
        for (int64_t i = 0; r.v && i < r.n; i++) {
            int64_t o[MAX_TILE_RANK] = { 0, 0 };
            if (e->shape.rank == 2) {
                o[0] = i / e->shape.dim[1];
                o[1] = i % e->shape.dim[1];
            } else {
                o[0] = i;
            }
            int64_t src = 0;
            for (int d = 0, k = 0; d < e->nidx; d++) {
                int64_t c = e->idx[d].start->ival + (e->idx[d].width ? o[k++] : 0);
                src = src * t.shape.dim[d] + c;
            }
            r.v[i] = t.v[src];
        }
        value_free(&t);
        return r;
    }
    case E_UNARY: {
        Value a = interp_eval(in, e->a);
        if (in->failed)
            return a;
        for (int64_t i = 0; i < a.n; i++) {
            if (e->op == '!')
                a.v[i].i = !a.v[i].i;
            else if (e->op == '~')
                a.v[i].i = wrap_to(a.type, ~a.v[i].i);
            else if (type_is_float(a.type))
                a.v[i].f = -a.v[i].f;
            else
                a.v[i].i = wrap_to(a.type, (int64_t)(0 - (uint64_t)a.v[i].i));
        }
        return a;
    }
    case E_BINARY: {
        Value a = interp_eval(in, e->a);
        Value b = interp_eval(in, e->b);
        Value r = empty();
        if (!in->failed)
            r = map2(in, e, e->op, e->a->type, e->type, e->shape, &a, &b);
        value_free(&a);
        value_free(&b);
        return r;
    }
    case E_CALL:
        return call(in, e);
    case E_CAST: {
        Value a = interp_eval(in, e->a);
        if (in->failed)
            return a;
        for (int64_t i = 0; i < a.n; i++)
            a.v[i] = convert_elem(e->to, a.type, a.v[i]);
        a.type = e->type;
        return a;
    }
    case E_INDEX:
        return interp_load(in, e);
    case E_TRANSPOSE: {         /* of a value (a window's is an E_INDEX of a swapped view) */
        Value a = interp_eval(in, e->a);
        if (in->failed)
            return a;
        Value t = value_new(a.type, e->shape);
        if (!t.v) {
            value_free(&a);
            interp_error(in, e->loc, "out of memory");
            return t;
        }
        int64_t r = a.shape.dim[0], k = a.shape.dim[1];
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < k; j++)
                t.v[j * r + i] = a.v[i * k + j];
        value_free(&a);
        return t;
    }
    }
    interp_error(in, e->loc, "this expression cannot be interpreted");
    return empty();
}

/* ---------------------------------------------------------------- matmul */

/* A tensor-core operand tf32(x): rounded as mma.sync's operands are (the default sm_80 code),
 * by an integer add of half the dropped bits' weight, NaNs included (docs/language.md, "Tensor
 * cores and precision": a NaN with its payload in the dropped bits reads as infinity, one with
 * the top 11 mantissa bits set as a zero). A tf32(x) elsewhere is cvt.rna, which keeps NaNs. */
static Value operand(Interp *in, const Expr *x)
{
    if (x->kind != E_CAST || x->to != TY_TF32)
        return interp_eval(in, x);
    Value v = interp_eval(in, x->a);
    for (int64_t i = 0; v.v && i < v.n; i++) {
        uint32_t u;
        memcpy(&u, &v.v[i].f, 4);
        u = (u + 0x1000u) & 0xffffe000u;
        memcpy(&v.v[i].f, &u, 4);
    }
    v.type = TY_TF32;
    return v;
}

void interp_matmul(Interp *in, const Expr *mm, Value *acc, bool acc_set)
{
    Value a = operand(in, mm->a);
    Value b = operand(in, mm->b);
    if (in->failed)
        goto done;
    /* tensor-core operands are the type's values: an f16 or bf16 operand computed in f32 is
       narrowed on its way in (tf32 was by its cast) */
    for (int s = 0; s < 2; s++) {
        Value *x = s ? &b : &a;
        if (x->type == TY_F16 || x->type == TY_BF16)
            for (int64_t i = 0; i < x->n; i++)
                x->v[i].f = round_to_type(x->type, x->v[i].f);
    }
    int64_t M = a.shape.dim[0], K = a.shape.dim[1], N = b.shape.dim[1];
    bool integer = mm->type == TY_I32;
    if (acc_set)
        for (int64_t i = 0; i < M * N; i++) {
            if (integer)
                acc->v[i].i = 0;
            else
                acc->v[i].f = 0;
        }
    if (integer) {
        /* i8/u8: exact products summed in i32, wrapping as the tensor cores' s32 does */
        for (int64_t i = 0; i < M; i++)
            for (int64_t k = 0; k < K; k++) {
                int64_t aik = a.v[i * K + k].i;
                for (int64_t j = 0; j < N; j++) {
                    uint32_t s = (uint32_t)acc->v[i * N + j].i + (uint32_t)(aik * b.v[k * N + j].i);
                    acc->v[i * N + j].i = (int32_t)s;
                }
            }
        goto done;
    }
    /* each element sums its products in order of k, one fma each (f32 accumulation) */
    for (int64_t i = 0; i < M; i++) {
        Elem *row = acc->v + i * N;
        for (int64_t k = 0; k < K; k++) {
            float aik = a.v[i * K + k].f;
            const Elem *brow = b.v + k * N;
            for (int64_t j = 0; j < N; j++)
                row[j].f = fmaf(aik, brow[j].f, row[j].f);
        }
    }
done:
    value_free(&a);
    value_free(&b);
}
