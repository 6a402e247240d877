/* inputs.c: the kernel's arguments at one size set, from its parameter list as the front end
 * checked it, and the random values its tensors start with.
 *
 * A tensor gets the memory its farthest element needs: 1 + sum of (extent - 1) * stride over its
 * dimensions, with the strides it declares (sizes, consts, + and *) or the row-major ones. So a
 * strided view gets the whole of what it may address and no candidate reads outside it. */
#include <stdlib.h>
#include <string.h>

#include "tune.h"

enum { MAX_ELEMS_LOG2 = 40 };   /* 2^40 elements: beyond any GPU's memory */

static bool size_value(const SizeSet *set, const char *name, int64_t *out)
{
    for (int i = 0; i < set->n; i++)
        if (!strcmp(set->name[i], name)) {
            *out = set->value[i];
            return true;
        }
    return false;
}

/* A stride or extent expression: sizes, integer consts (already folded), + and *. */
static bool eval(const Expr *e, const SizeSet *set, int64_t *out)
{
    int64_t x, y;
    switch (e->kind) {
    case E_INT:
        *out = e->ival;
        return true;
    case E_NAME:
        if (e->sym && e->sym->kind == SYM_CONST && !e->sym->is_float) {
            *out = e->sym->ival;
            return true;
        }
        return e->sym && e->sym->kind == SYM_SIZE && size_value(set, e->sym->name, out);
    case E_BINARY:
        if (!eval(e->a, set, &x) || !eval(e->b, set, &y) || x < 0 || y < 0)
            return false;
        if (e->op == '+' && x <= INT64_MAX - y) {
            *out = x + y;
            return true;
        }
        if (e->op == '*' && (y == 0 || x <= INT64_MAX / y)) {
            *out = x * y;
            return true;
        }
        return false;
    default:
        return false;
    }
}

static bool extent(const Extent *x, const SizeSet *set, int64_t *out)
{
    if (x->expr)
        return eval(x->expr, set, out);
    if (x->size)
        return size_value(set, x->size->name, out);
    *out = x->cval;
    return true;
}

/* Elements a tensor parameter may address at these sizes. */
static bool tensor_elems(const Sym *t, const SizeSet *set, int64_t *out, char *why, size_t why_size)
{
    int64_t dim[MAX_TENSOR_RANK], stride[MAX_TENSOR_RANK];
    const int64_t limit = (int64_t)1 << MAX_ELEMS_LOG2;
    for (int d = 0; d < t->rank; d++)
        if (!extent(&t->dim[d], set, &dim[d]) || dim[d] < 0 || dim[d] > limit) {
            snprintf(why, why_size, "cannot size tensor %s: dimension %d", t->name, d + 1);
            return false;
        }
    for (int d = t->rank - 1; d >= 0; d--) {
        if (t->has_default_strides) {
            stride[d] = d == t->rank - 1 ? 1 : stride[d + 1] * dim[d + 1];
        } else if (!extent(&t->stride[d], set, &stride[d])) {
            snprintf(why, why_size, "cannot size tensor %s: its stride %d", t->name, d + 1);
            return false;
        }
        if (stride[d] < 0 || stride[d] > limit) {
            snprintf(why, why_size, "tensor %s: more than 2^40 elements", t->name);
            return false;
        }
    }
    int64_t last = 0;
    for (int d = 0; d < t->rank; d++) {
        if (dim[d] == 0) {
            *out = 0;
            return true;
        }
        last += (dim[d] - 1) * stride[d];
        if (last > limit) {
            snprintf(why, why_size, "tensor %s: more than 2^40 elements", t->name);
            return false;
        }
    }
    *out = last + 1;
    return true;
}

static const char *scalar_text(const TuneArgs *a, const char *name)
{
    for (int i = 0; i < a->nscalars; i++)
        if (!strcmp(a->scalars[i].name, name))
            return a->scalars[i].value;
    return "1";
}

bool kernel_inputs(const TuneArgs *a, const Source *s, const SizeSet *set, Input *in, int *n,
                   char *why, size_t why_size)
{
    const Kernel *k = s->k;
    *n = 0;
    if (k->nparams + k->nsizes > MAX_KARGS) {
        snprintf(why, why_size, "more than %d arguments", MAX_KARGS);
        return false;
    }
    for (int i = 0; i < k->nparams; i++) {
        const Param *p = &k->params[i];
        Input *x = &in[(*n)++];
        memset(x, 0, sizeof *x);
        x->name = p->name;
        x->type = p->type;
        if (p->is_tensor) {
            x->kind = IN_TENSOR;
            if (!tensor_elems(p->sym, set, &x->elems, why, why_size))
                return false;
            continue;
        }
        x->kind = IN_SCALAR;
        const char *v = scalar_text(a, p->name);
        char *end;
        if (type_is_float(p->type)) {
            x->fval = strtod(v, &end);
        } else {
            x->ival = strtoll(v, &end, 0);
        }
        bool bad_bool = p->type == TY_BOOL && x->ival != 0 && x->ival != 1;
        if (*end || end == v || bad_bool) {
            snprintf(why, why_size, "--arg %s=%s: not a%s %s value", p->name, v,
                     p->type == TY_I32 || p->type == TY_I64 ? "n" : "", type_name(p->type));
            return false;
        }
    }
    for (int i = 0; i < k->nsizes; i++) {
        Input *x = &in[(*n)++];
        memset(x, 0, sizeof *x);
        x->kind = IN_SIZE;
        x->name = k->sizes[i]->name;
        x->type = TY_I32;
        size_value(set, x->name, &x->ival);
    }
    return true;
}

/* splitmix64: a fixed, fast sequence per seed, so every run fills the same inputs. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* f32 to f16 or bf16 bits, rounding to nearest even; the values here are small and finite. */
uint16_t half_bits(float f, bool bf16)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (bf16)
        return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    uint32_t sign = (u >> 16) & 0x8000;
    int exp = (int)((u >> 23) & 0xff) - 127 + 15;
    uint32_t mant = u & 0x7fffff;
    if (exp <= 0) {                       /* subnormal or zero in f16 */
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000;
        int shift = 14 - exp;
        uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = sign | (uint32_t)exp << 10 | mant >> 13, rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
        h++;
    return (uint16_t)h;
}

void fill_host(void *dst, int64_t n, ElemType t, uint64_t seed, int64_t bound)
{
    uint64_t st = seed;
    unsigned char *p = dst;
    if (bound < 1)
        bound = 1;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = next_random(&st);
        float f = (float)((double)(r >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
        switch (t) {
        case TY_F32: case TY_TF32: memcpy(p + 4 * i, &f, 4); break;
        case TY_F16: case TY_BF16: {
            uint16_t h = half_bits(f, t == TY_BF16);
            memcpy(p + 2 * i, &h, 2);
            break;
        }
        case TY_I32: case TY_U32: {
            int32_t v = (int32_t)(r % (uint64_t)(bound < INT32_MAX ? bound : INT32_MAX));
            memcpy(p + 4 * i, &v, 4);
            break;
        }
        case TY_I64: {
            int64_t v = (int64_t)(r % (uint64_t)bound);
            memcpy(p + 8 * i, &v, 8);
            break;
        }
        case TY_I8: case TY_U8:
            p[i] = (unsigned char)(r % (uint64_t)(bound < 128 ? bound : 128));
            break;
        case TY_F8E4M3: case TY_F8E5M2:
            /* the exponent's top bit clear: finite values below 2 in either format */
            p[i] = (unsigned char)(r & 0xbf);
            break;
        case TY_BOOL:
            p[i] = (unsigned char)(r & 1);
            break;
        default:
            memset(p + (size_t)type_size(t) * (size_t)i, 0, (size_t)type_size(t));
            break;
        }
    }
}

bool max_inputs(const TuneArgs *a, const Source *s, const Candidate *cs, int n,
                const SizeSet *set, Input *in, int *nin, char *why, size_t why_size)
{
    if (!kernel_inputs(a, s, set, in, nin, why, why_size))
        return false;
    /* A const may be a tensor's extent: each candidate's program says what it addresses. Its
     * front end takes microseconds; its messages were tilec's to print already. */
    FILE *quiet = fopen("/dev/null", "w");
    FILE *saved = diag.out;
    diag.out = quiet;
    bool ok = true;
    for (int c = 0; c < n && ok; c++) {
        if (!cs[c].alive || cs[c].is_default)
            continue;
        Define defs[MAX_CONSTS];
        for (int i = 0; i < a->nconsts; i++)
            defs[i] = (Define){ a->consts[i].name, cs[c].values[i], false };
        Arena *ar = arena_new();
        Source cand = *s;
        cand.p = compile_front(ar, a->input, s->src, s->len, defs, a->nconsts);
        cand.k = NULL;
        for (int i = 0; cand.p && i < cand.p->nkernels; i++)
            if (!strcmp(cand.p->kernels[i]->name, s->k->name))
                cand.k = cand.p->kernels[i];
        Input tmp[MAX_KARGS];
        int ntmp;
        if (cand.k && kernel_inputs(a, &cand, set, tmp, &ntmp, why, why_size) && ntmp == *nin) {
            for (int i = 0; i < ntmp; i++)
                if (in[i].kind == IN_TENSOR && tmp[i].elems > in[i].elems)
                    in[i].elems = tmp[i].elems;
        } else if (cand.k) {
            ok = false;
        }
        arena_free(ar);
    }
    diag.out = saved;
    if (quiet)
        fclose(quiet);
    return ok;
}
