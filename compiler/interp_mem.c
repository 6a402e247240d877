/* interp_mem.c: the interpreter's tensor accesses. A window's lanes outside the tensor's
 * extent are masked as the language says (loads read 0 or the `else` value, stores and atomics
 * drop them); a lane inside the extent whose element lies outside the memory the caller gave
 * for the tensor is an error at the access: the bug compute-sanitizer would find on the GPU. */
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "interp.h"

void interp_tensor_geometry(Interp *in, const Sym *t, int64_t dim[], int64_t stride[])
{
    for (int d = 0; d < t->rank; d++)
        dim[d] = interp_extent(in, &t->dim[d]);
    if (t->has_default_strides) {
        int64_t s = 1;
        for (int d = t->rank - 1; d >= 0; d--) {
            stride[d] = s;
            s *= dim[d] > 0 ? dim[d] : 1;
        }
        return;
    }
    for (int d = 0; d < t->rank; d++)
        stride[d] = interp_extent(in, &t->stride[d]);
}

/* One access: the tensor, its geometry, the subscripts' values. */
typedef struct {
    const Expr *e;
    const Sym *t;
    const InterpArg *arg;
    int64_t dim[MAX_TENSOR_RANK], stride[MAX_TENSOR_RANK];
    int64_t start[MAX_TENSOR_RANK];
    Value rows;            /* a gather's index tile */
    int es;
} Access;

static bool access_begin(Interp *in, const Expr *e, Access *a)
{
    memset(a, 0, sizeof *a);
    a->e = e;
    a->t = e->sym;
    a->arg = &in->args[a->t->param_index];
    a->es = type_size(a->t->type);
    interp_tensor_geometry(in, a->t, a->dim, a->stride);
    for (int d = 0; d < e->nidx && !in->failed; d++) {
        if (e->idx[d].gather) {
            a->rows = interp_eval(in, e->idx[d].start);
            continue;
        }
        Value s = interp_eval(in, e->idx[d].start);
        if (s.v)
            a->start[d] = s.v[0].i;
        value_free(&s);
    }
    return !in->failed;
}

static void access_end(Access *a) { value_free(&a->rows); }

/* The element of lane `flat` (of the window's shape): its byte offset in *off, false when the
 * lane is masked (outside the extent), an error when the element is outside the memory. */
static bool lane(Interp *in, Access *a, int64_t flat, bool write, size_t *off)
{
    const Expr *e = a->e;
    int64_t o[MAX_TILE_RANK] = {0, 0};
    if (e->shape.rank == 2) {
        o[0] = flat / e->shape.dim[1];
        o[1] = flat % e->shape.dim[1];
    } else if (e->shape.rank == 1) {
        o[0] = flat;
    }
    int64_t c[MAX_TENSOR_RANK];
    int k = 0;
    for (int d = 0; d < e->nidx; d++) {
        if (e->idx[d].gather)
            c[d] = a->rows.v[o[k++]].i;
        else if (e->idx[d].width)
            c[d] = a->start[d] + o[k++];
        else
            c[d] = a->start[d];
        if (c[d] < 0 || c[d] >= a->dim[d])
            return false;
    }
    /* inside the extent: the element must be inside the memory given */
    int64_t el = 0;
    bool ok = true;
    for (int d = 0; d < e->nidx && ok; d++) {
        int64_t s = a->stride[d];
        if (s != 0 && (c[d] > INT64_MAX / (s < 0 ? -s : s)))
            ok = false;
        else if ((el > 0 && c[d] * s > INT64_MAX - el) || (el < 0 && c[d] * s < INT64_MIN - el))
            ok = false;
        else
            el += c[d] * s;
    }
    if (ok && el >= 0 && (uint64_t)el <= (SIZE_MAX - (size_t)a->es) / (size_t)a->es &&
        (size_t)el * (size_t)a->es + (size_t)a->es <= a->arg->bytes && a->arg->ptr) {
        *off = (size_t)el * (size_t)a->es;
        return true;
    }
    if (!in->failed) {
        char at[160];
        int n = 0;
        for (int d = 0; d < e->nidx; d++)
            n += snprintf(at + n, sizeof at - (size_t)n, "%s%lld", d ? ", " : "", (long long)c[d]);
        const Sym *t = a->t->view_of ? a->t->view_of : a->t;
        interp_error(in, e->loc, "out-of-bounds %s of '%s'%s at [%s]: element %lld is outside the "
                     "%zu bytes given for it", write ? "write" : "read", t->name,
                     a->t->view_of ? " (transposed)" : "", at, (long long)el, a->arg->bytes);
    }
    return false;
}

Value interp_load(Interp *in, const Expr *e)
{
    Access a;
    Value r = value_new(e->type, e->shape);
    if (!r.v) {
        interp_error(in, e->loc, "out of memory");
        return r;
    }
    if (!access_begin(in, e, &a)) {
        access_end(&a);
        value_free(&r);
        return r;
    }
    Elem fill = { 0 };
    if (e->fill) {
        Value f = interp_eval(in, e->fill);
        if (f.v)
            fill = convert_elem(e->type, f.type, f.v[0]);
        value_free(&f);
    }
    const char *base = a.arg->ptr;
    for (int64_t i = 0; i < r.n && !in->failed; i++) {
        size_t off;
        r.v[i] = lane(in, &a, i, false, &off) ? load_elem(e->type, base + off) : fill;
    }
    access_end(&a);
    if (in->failed)
        value_free(&r);
    return r;
}

void interp_store(Interp *in, const Expr *e, const Value *v, int op)
{
    Access a;
    if (!access_begin(in, e, &a)) {
        access_end(&a);
        return;
    }
    ElemType t = e->type;
    /* a [W, 1] or [1, W] value (a reduction that kept its axis) stores to a [W] window as it is */
    bool flat = v->shape.rank == 2 && e->shape.rank == 1 && v->n == shape_count(e->shape);
    char *base = a.arg->ptr;
    int64_t n = shape_count(e->shape);
    for (int64_t i = 0; i < n && !in->failed; i++) {
        size_t off;
        if (!lane(in, &a, i, true, &off))
            continue;
        Elem x = v->v[flat ? i : bcast_index(v, e->shape, i)];
        if (op == '+') {
            /* each add rounds to the tensor's type (red.add.noftz for f16 and bf16) */
            Elem old = load_elem(t, base + off);
            if (type_is_float(t))
                x.f = round_to_type(t, old.f + x.f);
            else
                x.i = wrap_to(t, (int64_t)((uint64_t)old.i + (uint64_t)x.i));
        } else if (op == 'M') {
            Elem old = load_elem(t, base + off);
            if (type_is_float(t))
                x.f = fmaxf(old.f, x.f);
            else if (old.i > x.i)
                x = old;
        }
        store_elem(t, base + off, x);
    }
    access_end(&a);
}
