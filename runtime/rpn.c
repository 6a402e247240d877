/* rpn.c: evaluates the integer RPN expressions of grid() and assume() at launch.
 *
 * Arithmetic is int64 and checked: a grid computed from wrapped-around values would launch a
 * wrong number of blocks, so overflow is an error, like division by zero. */
#include "tilert_internal.h"

enum { STACK_MAX = RT_MAX_RPN };

static bool add_ok(int64_t a, int64_t b, int64_t *r)
{
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b))
        return false;
    *r = a + b;
    return true;
}

static bool sub_ok(int64_t a, int64_t b, int64_t *r)
{
    if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b))
        return false;
    *r = a - b;
    return true;
}

static bool mul_ok(int64_t a, int64_t b, int64_t *r)
{
    if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)
              : (b > 0 ? a < INT64_MIN / b : (a != 0 && b < INT64_MAX / a)))
        return false;
    *r = a * b;
    return true;
}

tilert_status rt_rpn_eval(const rpn_expr *e, const int64_t *vals, int nvals, int64_t *out)
{
    int64_t st[STACK_MAX];
    int sp = 0;
    for (int i = 0; i < e->n; i++) {
        const rpn_tok *t = &e->tok[i];
        if (t->op == RPN_INT || t->op == RPN_ARG) {
            if (sp == STACK_MAX)
                return rt_error(TILERT_ERR_BAD_META, "RPN stack overflow");
            if (t->op == RPN_ARG && (t->v < 0 || t->v >= nvals))
                return rt_error(TILERT_ERR_BAD_META, "RPN argument a%lld does not exist",
                                (long long)t->v);
            st[sp++] = t->op == RPN_INT ? t->v : vals[t->v];
            continue;
        }
        if (t->op == RPN_NOT || t->op == RPN_NEG) {
            if (sp < 1)
                return rt_error(TILERT_ERR_BAD_META, "RPN stack underflow");
            int64_t a = st[sp - 1];
            if (t->op == RPN_NEG && a == INT64_MIN)
                return rt_error(TILERT_ERR_BAD_ARGS, "integer overflow (neg of %lld)",
                                (long long)a);
            st[sp - 1] = t->op == RPN_NOT ? !a : -a;
            continue;
        }
        if (sp < 2)
            return rt_error(TILERT_ERR_BAD_META, "RPN stack underflow");
        int64_t a = st[sp - 2], b = st[sp - 1], r = 0;
        bool ok = true;
        switch (t->op) {
        case RPN_ADD: ok = add_ok(a, b, &r); break;
        case RPN_SUB: ok = sub_ok(a, b, &r); break;
        case RPN_MUL: ok = mul_ok(a, b, &r); break;
        case RPN_DIV:
        case RPN_MOD:
        case RPN_CDIV:
            if (b == 0)
                return rt_error(TILERT_ERR_BAD_ARGS, "division by zero (%lld / 0)", (long long)a);
            if (a == INT64_MIN && b == -1) {
                ok = t->op == RPN_MOD;      /* the remainder is 0; the quotient overflows */
                r = 0;
                break;
            }
            if (t->op == RPN_MOD)
                r = a % b;
            else {
                r = a / b;                  /* C truncates toward zero ... */
                if (t->op == RPN_CDIV && a % b != 0 && ((a < 0) == (b < 0)))
                    r++;                    /* ... cdiv rounds toward +infinity */
            }
            break;
        case RPN_MIN: r = a < b ? a : b; break;
        case RPN_MAX: r = a > b ? a : b; break;
        case RPN_EQ: r = a == b; break;
        case RPN_NE: r = a != b; break;
        case RPN_LT: r = a < b; break;
        case RPN_LE: r = a <= b; break;
        case RPN_GT: r = a > b; break;
        case RPN_GE: r = a >= b; break;
        case RPN_AND: r = a && b; break;
        case RPN_OR: r = a || b; break;
        default:
            return rt_error(TILERT_ERR_BAD_META, "bad RPN operator %d", (int)t->op);
        }
        if (!ok)
            return rt_error(TILERT_ERR_BAD_ARGS, "integer overflow (%lld and %lld)", (long long)a,
                            (long long)b);
        st[--sp - 1] = r;
    }
    if (sp != 1)
        return rt_error(TILERT_ERR_BAD_META, "RPN expression leaves %d values, not 1", sp);
    *out = st[0];
    return TILERT_OK;
}
