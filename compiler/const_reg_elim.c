/* const_reg_elim.c: constant register tensor elimination.
 * Needs: ARRSET/ARRGET on Func.arrays (lowering of pipelined loops). Fills: plain arithmetic for
 * every read of an array it can prove affine and uniform. Breaks nothing; arrays it cannot
 * eliminate stay for arrays_to_local, which materialises them in .local memory.
 *
 * An array qualifies when (checked, not assumed): every element is set exactly once, all sets come
 * before the first read, each element is the same value in every thread (built from shared-memory
 * symbols, parameters, block indices and constants, never %tid), and the elements are
 * base + i * stride with one base register or symbol and a constant stride. Then arr[idx] is
 * base + idx * stride: one mad, no array. Small arrays that are not affine become a selp chain. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

enum { MAX_SELP_ELEMS = 4, MAX_UNIFORM_DEPTH = 16 };

typedef struct {
    bool known;
    const char *sym;       /* root symbol (MOVSYM), or NULL */
    int reg;               /* root register when sym is NULL */
    int64_t c;             /* constant added to the root */
} Affine;

static int *def_count, *def_at;

static void index_defs(Func *f)
{
    free(def_count);
    free(def_at);
    def_count = calloc((size_t)f->regs.n + 1, sizeof(int));
    def_at = calloc((size_t)f->regs.n + 1, sizeof(int));
    for (int i = 0; i < f->code.n; i++)
        for (int d = 0; d < f->code.v[i].ndst; d++) {
            def_count[f->code.v[i].dst[d]]++;
            def_at[f->code.v[i].dst[d]] = i;
        }
}

/* A value is uniform when every thread of the block computes the same one. */
static bool uniform(Func *f, Opnd o, int depth)
{
    if (o.kind == O_IMM || o.kind == O_FIMM)
        return true;
    if (o.kind == O_SYM)
        return strncmp(o.sym, "%tid", 4) != 0 && strncmp(o.sym, "%laneid", 7) != 0;
    if (o.kind != O_REG || depth > MAX_UNIFORM_DEPTH || def_count[o.reg] != 1)
        return false;
    Ins *in = &f->code.v[def_at[o.reg]];
    if (in->guard >= 0)
        return false;
    switch (in->op) {
    case OP_LDPARAM: return true;
    case OP_MOVSYM: return uniform(f, in->src[0], depth + 1);
    case OP_MOV: case OP_ADD: case OP_SUB: case OP_MUL: case OP_MAD: case OP_SHL: case OP_SHR:
    case OP_CVT: case OP_CVTA:
        for (int s = 0; s < in->nsrc; s++)
            if (!uniform(f, in->src[s], depth + 1))
                return false;
        return true;
    default: return false;
    }
}

static Affine affine_of(Func *f, Opnd o, int depth)
{
    Affine a = { false, NULL, -1, 0 };
    if (o.kind != O_REG)
        return a;
    if (depth < MAX_UNIFORM_DEPTH && def_count[o.reg] == 1) {
        Ins *in = &f->code.v[def_at[o.reg]];
        if (in->guard < 0 && in->op == OP_MOVSYM) {
            const char *s = in->src[0].sym;
            const char *plus = strchr(s, '+');
            a.known = true;
            a.sym = plus ? NULL : s;
            if (plus) {
                /* "tilec_smem+N": the root is the symbol, N the constant */
                static char root[64];
                size_t n = (size_t)(plus - s) < sizeof root - 1 ? (size_t)(plus - s) : sizeof root - 1;
                memcpy(root, s, n);
                root[n] = 0;
                a.sym = root;
                a.c = atoll(plus + 1);
            }
            return a;
        }
        if (in->guard < 0 && in->op == OP_ADD && in->src[1].kind == O_IMM) {
            a = affine_of(f, in->src[0], depth + 1);
            a.c += in->src[1].i;
            return a;
        }
    }
    a.known = true;
    a.reg = o.reg;
    return a;
}

static bool same_root(Affine x, Affine y)
{
    if (x.sym || y.sym)
        return x.sym && y.sym && !strcmp(x.sym, y.sym);
    return x.reg == y.reg;
}

typedef Vec(Ins) InsVec;

static void push(InsVec *v, Ins in) { vec_push(v, in); }

static Ins mk(int op, PType t, int line)
{
    Ins in;
    memset(&in, 0, sizeof in);
    in.op = (uint16_t)op;
    in.ty = (uint8_t)t;
    in.vec = 1;
    in.guard = -1;
    in.line = line;
    return in;
}

int const_reg_elim(Func *f)
{
    int rewritten = 0;
    index_defs(f);
    for (int ai = 0; ai < f->arrays.n; ai++) {
        RegArray *arr = &f->arrays.v[ai];
        int n = arr->n;
        Opnd *elem = calloc((size_t)n, sizeof(Opnd));
        int *sets = calloc((size_t)n, sizeof(int));
        int first_get = -1, last_set = -1;
        bool ok = true;
        for (int i = 0; i < f->code.n; i++) {
            Ins *in = &f->code.v[i];
            if (in->array != ai || (in->op != OP_ARRSET && in->op != OP_ARRGET))
                continue;
            if (in->op == OP_ARRGET) {
                if (first_get < 0)
                    first_get = i;
                continue;
            }
            if (in->off < 0 || in->off >= n || sets[in->off]++ || in->guard >= 0)
                ok = false;
            else
                elem[in->off] = in->src[0];
            last_set = i;
        }
        for (int i = 0; i < n; i++)
            ok = ok && sets[i] == 1;
        if (first_get >= 0 && last_set > first_get)
            ok = false;   /* written after it was read: not a constant tensor */
        bool uni = ok;
        for (int i = 0; uni && i < n; i++)
            uni = uniform(f, elem[i], 0);
        Affine a0 = { false, NULL, -1, 0 };
        int64_t stride = 0;
        bool affine = uni;
        if (affine) {
            a0 = affine_of(f, elem[0], 0);
            Affine a1 = n > 1 ? affine_of(f, elem[1], 0) : a0;
            stride = a1.c - a0.c;
            for (int i = 0; affine && i < n; i++) {
                Affine ai_ = affine_of(f, elem[i], 0);
                affine = ai_.known && same_root(ai_, a0) && ai_.c == a0.c + i * stride;
            }
        }
        if (!ok || (!affine && n > MAX_SELP_ELEMS)) {
            warning_at((Loc){ arr->line, 1 }, "register tensor '%s' (%d elements) %s: it stays an array in local memory",
                       arr->name, n, !ok ? "is written after it is read" : "is not affine in its index");
            free(elem);
            free(sets);
            continue;
        }
        /* rewrite: drop the sets, replace every read */
        InsVec out = { 0 };
        for (int i = 0; i < f->code.n; i++) {
            Ins in = f->code.v[i];
            if (in.array == ai && in.op == OP_ARRSET)
                continue;
            if (!(in.array == ai && in.op == OP_ARRGET)) {
                push(&out, in);
                continue;
            }
            int dst = in.dst[0];
            Opnd idx = in.src[0];
            if (affine) {
                /* base + idx * stride */
                Opnd base;
                if (a0.sym) {
                    int b = new_reg(f, RC_R);
                    Ins m = mk(OP_MOVSYM, PT_U32, in.line);
                    m.dst[0] = b;
                    m.ndst = 1;
                    m.src[0] = SYM(a0.c ? arena_printf(f->arena, "%s+%lld", a0.sym, (long long)a0.c) : arena_strndup(f->arena, a0.sym, strlen(a0.sym)));
                    m.nsrc = 1;
                    push(&out, m);
                    base = R(b);
                } else {
                    base = R(a0.reg);
                    if (a0.c) {
                        int b = new_reg(f, RC_R);
                        Ins m = mk(OP_ADD, PT_U32, in.line);
                        m.dst[0] = b;
                        m.ndst = 1;
                        m.src[0] = R(a0.reg);
                        m.src[1] = IMM(a0.c);
                        m.nsrc = 2;
                        push(&out, m);
                        base = R(b);
                    }
                }
                Ins m = mk(OP_MAD, PT_U32, in.line);
                m.dst[0] = dst;
                m.ndst = 1;
                m.src[0] = idx;
                m.src[1] = IMM(stride);
                m.src[2] = base;
                m.nsrc = 3;
                push(&out, m);
            } else {
                /* selp chain over the few elements */
                Ins m = mk(OP_MOV, PT_U32, in.line);
                m.dst[0] = dst;
                m.ndst = 1;
                m.src[0] = elem[0];
                m.nsrc = 1;
                push(&out, m);
                for (int e = 1; e < n; e++) {
                    int p = new_reg(f, RC_P);
                    Ins q = mk(OP_SETP, PT_U32, in.line);
                    q.cmp = CMP_EQ;
                    q.dst[0] = p;
                    q.ndst = 1;
                    q.src[0] = idx;
                    q.src[1] = IMM(e);
                    q.nsrc = 2;
                    push(&out, q);
                    Ins sl = mk(OP_SELP, PT_U32, in.line);
                    sl.dst[0] = dst;
                    sl.ndst = 1;
                    sl.src[0] = elem[e];
                    sl.src[1] = R(dst);
                    sl.src[2] = R(p);
                    sl.nsrc = 3;
                    push(&out, sl);
                }
            }
        }
        vec_free(&f->code);
        f->code.v = out.v;
        f->code.n = out.n;
        f->code.cap = out.cap;
        arr = &f->arrays.v[ai];
        arr->eliminated = true;
        rewritten++;
        index_defs(f);
        free(elem);
        free(sets);
    }
    free(def_count);
    free(def_at);
    def_count = def_at = NULL;
    ir_dce(f);
    return rewritten;
}

void arrays_to_local(Func *f)
{
    for (int ai = 0; ai < f->arrays.n; ai++) {
        RegArray *arr = &f->arrays.v[ai];
        if (arr->eliminated)
            continue;
        arr->in_local = true;
        char name[32];
        snprintf(name, sizeof name, "tilec_arr%d", ai);
        arr->name = arena_strndup(f->arena, name, strlen(name));
        InsVec out = { 0 };
        for (int i = 0; i < f->code.n; i++) {
            Ins in = f->code.v[i];
            if (in.array != ai || (in.op != OP_ARRSET && in.op != OP_ARRGET)) {
                push(&out, in);
                continue;
            }
            int base = new_reg(f, RC_R);
            Ins m = mk(OP_MOVSYM, PT_U32, in.line);
            m.dst[0] = base;
            m.ndst = 1;
            m.src[0] = SYM(arr->name);
            m.nsrc = 1;
            push(&out, m);
            if (in.op == OP_ARRSET) {
                Ins st = mk(OP_ST, PT_B32, in.line);
                st.space = SP_LOCAL;
                st.src[0] = R(base);
                st.src[1] = in.src[0];
                st.nsrc = 2;
                st.off = in.off * 4;
                push(&out, st);
            } else {
                int a = new_reg(f, RC_R);
                Ins m2 = mk(OP_MAD, PT_U32, in.line);
                m2.dst[0] = a;
                m2.ndst = 1;
                m2.src[0] = in.src[0];
                m2.src[1] = IMM(4);
                m2.src[2] = R(base);
                m2.nsrc = 3;
                push(&out, m2);
                Ins ld = mk(OP_LD, PT_B32, in.line);
                ld.space = SP_LOCAL;
                ld.dst[0] = in.dst[0];
                ld.ndst = 1;
                ld.src[0] = R(a);
                ld.nsrc = 1;
                push(&out, ld);
            }
        }
        vec_free(&f->code);
        f->code.v = out.v;
        f->code.n = out.n;
        f->code.cap = out.cap;
    }
}
