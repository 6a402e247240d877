/* interp.c: the interpreter's statements and launches. A launch does what the launcher does
 * (argument checks, every assume(), the grid) and then runs the kernel body once per block, the
 * blocks one after another in x, then y, then z order. Tile semantics are per block, so a block
 * is one walk of the body: `threads(...)` decides layouts, never meaning, and a pipelined loop
 * means what the plain loop means. Blocks running in sequence make atomics exact updates. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "interp.h"

void interp_error(Interp *in, Loc loc, const char *fmt, ...)
{
    if (in->failed)
        return;
    in->failed = true;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (in->running)
        error_at(loc, "%s (block %lld, %lld, %lld)", msg, (long long)in->block[0],
                 (long long)in->block[1], (long long)in->block[2]);
    else
        error_at(loc, "%s", msg);
}

/* ---------------------------------------------------------------- arguments */

int interp_nargs(const Kernel *k) { return k->nparams + k->nsizes; }

const char *interp_arg_name(const Kernel *k, int i)
{
    if (i < 0 || i >= interp_nargs(k))
        return NULL;
    return i < k->nparams ? k->params[i].name : k->sizes[i - k->nparams]->name;
}

/* ---------------------------------------------------------------- the values of names */

static size_t sym_hash(const Sym *s) { return ((uintptr_t)s >> 4) * 0x9E3779B97F4A7C15ull; }

static Slot *slot_find(Interp *in, const Sym *s, bool add)
{
    size_t mask = (size_t)in->nslots - 1;
    for (size_t i = sym_hash(s) & mask;; i = (i + 1) & mask) {
        Slot *sl = &in->slots[i];
        if (sl->sym == s)
            return sl;
        if (!sl->sym) {
            if (!add)
                return NULL;
            sl->sym = s;
            return sl;
        }
    }
}

Value *interp_slot(Interp *in, const Sym *s)
{
    Slot *sl = slot_find(in, s, false);
    return sl && sl->set ? &sl->val : NULL;
}

static void slot_set(Interp *in, const Sym *s, Value v)
{
    Slot *sl = slot_find(in, s, true);
    value_free(&sl->val);
    sl->val = v;
    sl->set = true;
}

static void slots_clear(Interp *in)
{
    for (int i = 0; i < in->nslots; i++) {
        value_free(&in->slots[i].val);
        in->slots[i].set = false;
    }
}

/* v broadcast to type t (the same: check saw to it) and shape s, as a var holds it. */
static Value broadcast_to(Interp *in, Loc loc, const Value *v, ElemType t, Shape s)
{
    Value r = value_new(t, s);
    if (!r.v) {
        interp_error(in, loc, "out of memory");
        return r;
    }
    for (int64_t i = 0; i < r.n; i++)
        r.v[i] = v->v[bcast_index(v, s, i)];
    return r;
}

/* ---------------------------------------------------------------- print */

static void print_value(Interp *in, const Stmt *st, const Value *v)
{
    if (!in->opt->print_all_blocks && (in->block[0] || in->block[1] || in->block[2]))
        return;
    FILE *out = in->opt->print_out ? in->opt->print_out : stdout;
    fprintf(out, "%s:%d: block (%lld, %lld, %lld): %.*s = %s", diag.file ? diag.file : "<input>",
            st->loc.line, (long long)in->block[0], (long long)in->block[1], (long long)in->block[2],
            st->text ? (int)strlen(st->text) : 1, st->text ? st->text : "?", type_name(v->type));
    if (v->shape.rank) {
        fputc('[', out);
        for (int d = 0; d < v->shape.rank; d++)
            fprintf(out, "%s%lld", d ? ", " : "", (long long)v->shape.dim[d]);
        fputc(']', out);
    }
    fputs(v->shape.rank == 2 ? "\n" : " ", out);
    int64_t rows = v->shape.rank == 2 ? v->shape.dim[0] : 1;
    int64_t cols = v->shape.rank ? v->shape.dim[v->shape.rank - 1] : 1;
    for (int64_t r = 0; r < rows; r++) {
        fputs(v->shape.rank == 2 ? "  [" : v->shape.rank ? "[" : "", out);
        for (int64_t c = 0; c < cols; c++) {
            if (c)
                fputs(", ", out);
            print_elem(out, v->type, v->v[r * cols + c]);
        }
        fputs(v->shape.rank ? "]\n" : "\n", out);
    }
}

/* ---------------------------------------------------------------- statements */

static void exec(Interp *in, const Stmt *st);

/* The value of a let or var's initializer (a product too) as the declared symbol holds it. */
static Value init_value(Interp *in, const Stmt *st, const Sym *s)
{
    Value r;
    memset(&r, 0, sizeof r);
    if (st->init && is_matmul(st->init)) {
        r = value_new(st->init->type, st->init->shape);
        if (!r.v)
            interp_error(in, st->loc, "out of memory");
        else
            interp_matmul(in, st->init, &r, true);
        return r;
    }
    if (!st->init) {
        r = value_new(s->type, s->shape);   /* a var without a value starts at zero */
        if (!r.v)
            interp_error(in, st->loc, "out of memory");
        return r;
    }
    Value v = interp_eval(in, st->init);
    if (in->failed)
        return v;
    if (st->kind == S_LET) {
        v.type = s->type;
        return v;
    }
    r = broadcast_to(in, st->loc, &v, s->type, s->shape);
    value_free(&v);
    return r;
}

static void assign(Interp *in, const Stmt *st)
{
    if (st->lhs->kind == E_INDEX) {
        Value v = interp_eval(in, st->rhs);
        if (!in->failed)
            interp_store(in, st->lhs, &v, '=');
        value_free(&v);
        return;
    }
    const Sym *s = st->lhs->sym;
    Value *cur = interp_slot(in, s);
    if (!cur) {
        interp_error(in, st->lhs->loc, "'%s' has no value here", s->name);
        return;
    }
    if (is_matmul(st->rhs)) {
        interp_matmul(in, st->rhs, cur, st->op == '=');
        return;
    }
    Value v = interp_eval(in, st->rhs);
    if (in->failed)
        return;
    Value r;
    if (st->op == '=')
        r = broadcast_to(in, st->loc, &v, s->type, s->shape);
    else
        r = interp_binop(in, st->rhs, st->op, cur, &v, s->type, s->shape);
    value_free(&v);
    if (in->failed) {
        value_free(&r);
        return;
    }
    /* a shared tile is memory of its type: what is written there is rounded to it */
    if (s->is_shared)
        for (int64_t i = 0; i < r.n; i++)
            r.v[i] = convert_elem(s->type, s->type, r.v[i]);
    slot_set(in, s, r);
}

static bool scalar_true(Interp *in, const Expr *cond)
{
    Value c = interp_eval(in, cond);
    bool t = c.v && c.v[0].i;
    value_free(&c);
    return t && !in->failed;
}

static int32_t scalar_i32(Interp *in, const Expr *e)
{
    Value v = interp_eval(in, e);
    int32_t r = v.v ? (int32_t)v.v[0].i : 0;
    value_free(&v);
    return r;
}

static void exec_for(Interp *in, const Stmt *st)
{
    int64_t lo = scalar_i32(in, st->lo), hi = scalar_i32(in, st->hi);
    int64_t step = st->step ? st->step->ival : 1;
    /* i is an i32 below hi: held in 64 bits, the last step cannot wrap around */
    for (int64_t i = lo; i < hi && !in->failed; i += step) {
        Value v = value_new(TY_I32, (Shape){0});
        if (!v.v) {
            interp_error(in, st->loc, "out of memory");
            return;
        }
        v.v[0].i = i;
        slot_set(in, st->sym, v);
        exec(in, st->then);
    }
}

static void exec(Interp *in, const Stmt *st)
{
    if (in->failed)
        return;
    switch (st->kind) {
    case S_BLOCK:
        for (int i = 0; i < st->nbody && !in->failed; i++)
            exec(in, st->body[i]);
        return;
    case S_LET: case S_VAR: {
        Value v = init_value(in, st, st->sym);
        if (in->failed) {
            value_free(&v);
            return;
        }
        if (st->sym->is_shared)
            for (int64_t i = 0; i < v.n; i++)
                v.v[i] = convert_elem(v.type, v.type, v.v[i]);
        slot_set(in, st->sym, v);
        return;
    }
    case S_ASSIGN:
        assign(in, st);
        return;
    case S_FOR:
        exec_for(in, st);
        return;
    case S_IF:
        if (scalar_true(in, st->cond))
            exec(in, st->then);
        else if (!in->failed && st->els)
            exec(in, st->els);
        return;
    case S_ATOMIC: {
        Value v = interp_eval(in, st->rhs);
        if (!in->failed)
            interp_store(in, st->lhs, &v, st->op);
        value_free(&v);
        return;
    }
    case S_ASSUME:
        return;   /* checked at launch, from the arguments alone */
    case S_PRINT: {
        Value v = interp_eval(in, st->init);
        if (!in->failed)
            print_value(in, st, &v);
        value_free(&v);
        return;
    }
    }
}

/* ---------------------------------------------------------------- launches */

static bool check_args(Interp *in, const InterpArg *args, int nargs)
{
    Kernel *k = in->k;
    if (nargs != interp_nargs(k)) {
        interp_error(in, k->loc, "kernel %s takes %d arguments, got %d", k->name, interp_nargs(k), nargs);
        return false;
    }
    for (int i = 0; i < k->nparams; i++) {
        const Param *p = &k->params[i];
        if (p->is_tensor && !args[i].ptr) {
            interp_error(in, p->loc, "argument '%s' of kernel %s is a null pointer", p->name, k->name);
            return false;
        }
    }
    for (int i = 0; i < k->nsizes; i++) {
        int64_t v = args[k->nparams + i].i;
        if (v < 0 || v > INT32_MAX) {
            interp_error(in, k->sizes[i]->loc, "size %s of kernel %s is %lld (allowed 0..%d)",
                         k->sizes[i]->name, k->name, (long long)v, INT32_MAX);
            return false;
        }
    }
    return true;
}

bool interp_launch(Program *p, Kernel *k, const InterpArg *args, int nargs, const InterpOptions *opt)
{
    InterpOptions none = { NULL, false };
    Interp in;
    memset(&in, 0, sizeof in);
    in.p = p;
    in.k = k;
    in.args = args;
    in.opt = opt ? opt : &none;
    if (!check_args(&in, args, nargs))
        return false;
    /* the launcher's checks: every fact, then the grid */
    for (int i = 0; i < k->nassumes && !in.failed; i++) {
        const Stmt *a = k->assumes[i];
        if (!interp_launch_int(&in, a->cond) && !in.failed)
            interp_error(&in, a->cond->loc, "kernel %s: assume(%s) is false for these arguments",
                         k->name, a->text ? a->text : "...");
    }
    static const int64_t limit[3] = { INT32_MAX, 65535, 65535 };
    int64_t grid[3] = { 1, 1, 1 };
    for (int d = 0; d < k->ngrid && !in.failed; d++) {
        grid[d] = interp_launch_int(&in, k->grid[d]);
        if (!in.failed && (grid[d] < 0 || grid[d] > limit[d]))
            interp_error(&in, k->grid[d]->loc, "kernel %s: grid dimension %c is %lld blocks "
                         "(allowed 0..%lld)", k->name, "xyz"[d], (long long)grid[d], (long long)limit[d]);
    }
    if (in.failed)
        return false;
    int n = 16;
    while (n < 2 * k->nsyms + 16)
        n *= 2;
    in.nslots = n;
    in.slots = calloc((size_t)n, sizeof *in.slots);
    if (!in.slots) {
        interp_error(&in, k->loc, "out of memory");
        return false;
    }
    in.running = true;
    for (int64_t z = 0; z < grid[2] && !in.failed; z++)
        for (int64_t y = 0; y < grid[1] && !in.failed; y++)
            for (int64_t x = 0; x < grid[0] && !in.failed; x++) {
                in.block[0] = x, in.block[1] = y, in.block[2] = z;
                exec(&in, k->body);
                slots_clear(&in);
            }
    slots_clear(&in);
    free(in.slots);
    return !in.failed;
}
