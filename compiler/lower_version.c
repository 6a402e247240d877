/* lower_version.c: a pipelined loop versioned on the alignment of the windows it copies.
 *
 * cp.async moves 4, 8 or 16 bytes, as far as the facts (`assume(N % 8 == 0)`) prove the copied
 * rows aligned: a window whose row length or stride no fact covers moves in small pieces, or, for
 * 16-bit rows not known to start 4-byte aligned, not at all (lower_pipeline.c). A kernel written
 * without the assume would run its k loop unpipelined at every size, aligned ones included.
 * Instead such a loop is lowered twice: as the facts stand, and with the facts that make each
 * such window's rows 16-byte aligned (its row length or stride, a size, a multiple of 16 bytes);
 * one uniform test of those sizes and of the tensors' base addresses, on the launch's values,
 * picks the version. The facts hold only while the second version is lowered: the launcher does
 * not check them, and the tensors that version reads in vectors keep their declared alignment
 * (the test covers the addresses).
 *
 * Both versions write the same variables' registers and join after the loop. Each allocates
 * shared memory as if it were alone (the allocator's state is put back between them: they
 * exclude each other), so the block needs the larger of the two. The aligned version may bring
 * operands by TMA: its maps are made `if-aligned` (tilec.h, TensorMapMeta), which the launcher
 * builds only where the pointer and strides are 16-byte aligned and the test here implies
 * (the facts cover the row lengths, the pointers are tested or checked at launch, and an outer
 * stride is a multiple of its row length: default strides); the other version brings by TMA
 * only windows the facts as written align, through plain maps. Each version's mbarriers are
 * invalidated on its own path before the join. A loop after mbarriers released by an earlier one
 * is not versioned: their invalidation would fall inside one path.
 *
 * The aligned version is lowered first: a producer warp it takes (lower_warpspec.c) grows the
 * block, and the other version, lowered knowing that, starts by sending those threads away (and
 * handing over a producer warpgroup's registers as the first does: ws_other_version), its
 * barriers counting the consumers alone. Its report lines still read first. */
#include <string.h>
#include "lower.h"

enum { MAX_FACTS = 8 };

typedef struct {
    Sym *size;
    int64_t mult;
} Fact;

/* The size whose multiples of n elements would make window w's rows 16-byte aligned (n = 16 /
 * element size), as lower_pipeline.c's warning names it; NULL when none would, or when the
 * window's own start is what is off (a start like `n0 + 1`, which no fact mends). The rows of a
 * gathered window are those its gather picks. */
Sym *window_row_size(Lower *c, Expr *w, int64_t n)
{
    Sym *t = w->sym;
    if (!t || w->kind != E_INDEX)
        return NULL;
    int d = -1, last = -1;
    for (int i = 0; i < w->nidx; i++)
        if (w->idx[i].width_expr) {
            if (d < 0)
                d = i;
            last = i;
        }
    /* a gathered window (`X[rows, k +: 32]`) has one windowed dimension: its rows are the
       gather's, as far apart as that dimension's stride */
    int gd = index_gather_dim(w);
    if (d >= 0 && last == d && gd >= 0 && gd < d)
        d = gd;
    if (d < 0 || last == d || known_multiple(c, w->idx[last].start) % n)
        return NULL;
    if (t->has_default_strides && d == t->rank - 2 && t->dim[t->rank - 1].size)
        return t->dim[t->rank - 1].size;
    if (!t->has_default_strides && t->stride[d].size && !t->stride[d].expr)
        return t->stride[d].size;
    return NULL;
}

int window_row_facts(Lower *c, Expr *w, int64_t n, Sym **out)
{
    int k = 0;
    Sym *sz = window_row_size(c, w, n), *t = w->sym;
    if (sz && size_multiple(c, sz) % n)
        out[k++] = sz;
    /* rows a stride of their own apart: a 16-byte piece must also lie wholly inside or outside
       the row's length (lower_mem.c, vector_ok), so that length is a fact too */
    if (sz && !t->has_default_strides) {
        Sym *len = t->dim[w->nidx - 1].size;
        if (len && len != sz && size_multiple(c, len) % n)
            out[k++] = len;
    }
    return k;
}

/* A window whose TMA map takes its rows in groups of 8 (SWZ_SLAB_K8: the swapped tf32
 * product's B), copied by cp.async where its tensor's row count is not a multiple of 8: that
 * count, when a size no fact makes such a multiple. */
static Sym *rows8_size(Lower *c, Expr *w, int rows_mult)
{
    Sym *t = w->sym;
    if (rows_mult < 8 || !t || w->kind != E_INDEX || !tma_rows8_window(c, w))
        return NULL;
    Extent n = t->dim[t->rank - 2];
    return n.size && !n.expr && size_multiple(c, n.size) % rows_mult ? n.size : NULL;
}

static int version_facts(Lower *c, Stmt *s, Fact *facts)
{
    Expr *w[32];
    int rows_mult[32];
    int nw = pipe_windows(c, s, w, rows_mult, 32), nf = 0;
    for (int i = 0; i < nw; i++) {
        int64_t n = 16 / type_size(w[i]->type), mults[3];
        Sym *szs[3];
        int nq = window_row_facts(c, w[i], n, szs);
        for (int q = 0; q < nq; q++)
            mults[q] = n;
        if ((szs[nq] = rows8_size(c, w[i], rows_mult[i])))
            mults[nq++] = rows_mult[i];
        for (int q = 0; q < nq; q++) {
            n = mults[q];
            int j = 0;
            while (j < nf && facts[j].size != szs[q])
                j++;
            if (j == nf) {
                if (nf == MAX_FACTS)
                    continue;
                facts[nf++] = (Fact){ szs[q], 1 };
            }
            if (facts[j].mult < n)
                facts[j].mult = n;     /* powers of two: the larger is the multiple of both */
        }
    }
    return nf;
}

static Expr *expr_new(Lower *c, ExprKind kind)
{
    Expr *e = arena_alloc(c->a, sizeof *e);     /* zeroed */
    e->kind = kind;
    return e;
}

/* `size % mult == 0`, as an assume states it */
static Stmt *fact_stmt(Lower *c, const Fact *f)
{
    Expr *name = expr_new(c, E_NAME), *m = expr_new(c, E_INT), *zero = expr_new(c, E_INT);
    name->sym = f->size;
    name->name = f->size->name;
    m->ival = f->mult;
    Expr *mod = expr_new(c, E_BINARY), *eq = expr_new(c, E_BINARY);
    mod->op = '%';
    mod->a = name;
    mod->b = m;
    eq->op = OP_EQ;
    eq->a = mod;
    eq->b = zero;
    Stmt *st = arena_alloc(c->a, sizeof *st);
    st->kind = S_ASSUME;
    st->cond = eq;
    return st;
}

/* (a copy of the list, so that the one put back is the one before) */
AssumeMark assume_facts(Lower *c, Sym *size, int64_t mult)
{
    Kernel *k = c->k;
    AssumeMark m = { k->assumes, k->nassumes };
    k->assumes = arena_alloc(c->a, sizeof *k->assumes * (size_t)(m.n + 1));
    if (m.n)
        memcpy(k->assumes, m.assumes, sizeof *k->assumes * (size_t)m.n);
    k->assumes[k->nassumes++] = fact_stmt(c, &(Fact){ size, mult });
    return m;
}

void assume_restore(Lower *c, AssumeMark m)
{
    c->k->assumes = m.assumes;
    c->k->nassumes = m.n;
}

/* The launch's values meet the facts, and every tensor argument not already read in vectors
 * starts 16-byte aligned (the facts' version may read any of them so): one uniform predicate. */
int alignment_holds(Lower *c, int p, Sym *size, int64_t mult, Sym *tensor)
{
    Func *f = c->f;
    int q;
    if (size) {
        int low = ir_bin(f, OP_BAND, PT_B32, ((SymInfo *)size->lower)->val.v[0], IMM(mult - 1));
        q = ir_setp(f, CMP_EQ, PT_S32, R(low), IMM(0));
    } else {
        int low = ir_bin(f, OP_BAND, PT_B64, R(((SymInfo *)tensor->lower)->ptr), IMM(15));
        q = ir_setp(f, CMP_EQ, PT_U64, R(low), IMM(0));
    }
    return p < 0 ? q : ir_bin(f, OP_BAND, PT_PRED, R(p), R(q));
}

static int facts_hold(Lower *c, const Fact *facts, int nf)
{
    int p = -1;
    for (int i = 0; i < nf; i++)
        p = alignment_holds(c, p, facts[i].size, facts[i].mult, NULL);
    for (int i = 0; i < c->k->nparams; i++) {
        SymInfo *si = c->k->params[i].sym->lower;
        if (c->k->params[i].is_tensor && si && !si->vec_ok)
            p = alignment_holds(c, p, NULL, 0, c->k->params[i].sym);
    }
    return p;
}

/* What lowering one version changes that the other must start from as it was. */
typedef struct {
    int smem_top, reuse_lo, reuse_hi, nmbar_live;
    bool reuse_bar, scratch_read;
    int ngathers;
} State;

static State state_of(const Lower *c)
{
    return (State){ c->smem_top, c->reuse_lo, c->reuse_hi, c->nmbar_live, c->reuse_bar, c->scratch_read, c->ngathers };
}

static void state_set(Lower *c, const State *s)
{
    c->smem_top = s->smem_top;
    c->reuse_lo = s->reuse_lo;
    c->reuse_hi = s->reuse_hi;
    c->nmbar_live = s->nmbar_live;
    c->reuse_bar = s->reuse_bar;
    c->scratch_read = s->scratch_read;
    c->ngathers = s->ngathers;
}

bool lower_versioned_loop(Lower *c, Stmt *s)
{
    Fact facts[MAX_FACTS];
    if (c->pipe || c->nmbar_dead || c->mbar_untracked)
        return false;
    /* the loop variable's facts (its step), which the windows' starts rest on */
    if (!s->sym->lower)
        s->sym->lower = arena_alloc(c->a, sizeof(SymInfo));
    ((SymInfo *)s->sym->lower)->loop = s;
    int nf = version_facts(c, s, facts);
    for (int j = 0; j < nf; j++) {
        Opnd v = ((SymInfo *)facts[j].size->lower)->val.v[0];
        if (v.kind == O_IMM)
            return false;      /* a size the kernel fixes: the facts already know it */
    }
    if (!nf)
        return false;
    Func *f = c->f;
    Kernel *k = c->k;
    f->cur_line = s->loc.line;
    const char *saved_what = f->cur_what;
    f->cur_what = "loop version test";
    int holds = facts_hold(c, facts, nf);
    f->cur_what = saved_what;
    /* the aligned version first: a producer warp it takes joins the block (lower_warpspec.c),
       whose extra threads the other version must send away before its code */
    int other = new_label(f), done = new_label(f);
    ir_bra(f, other, holds, true);
    /* the plans' rows as chosen: a version whose operands cannot come asynchronously moves its
       products to their fallbacks (matmul_set_sources), which the other must not inherit */
    int nplans = 0;
    for (MatmulPlan *p = c->plans; p; p = p->next)
        nplans++;
    const MatmulPathRow **rows = arena_alloc(c->a, sizeof *rows * (size_t)(nplans + 1));
    int i = 0;
    for (MatmulPlan *p = c->plans; p; p = p->next)
        rows[i++] = p->row;
    State before = state_of(c);
    int threads = f->threads;
    c->versioning = true;
    /* the facts, for this version only; and the vector reads it makes ask nothing of the launch */
    AssumeMark mark = { k->assumes, k->nassumes };
    for (int j = 0; j < nf; j++)
        assume_facts(c, facts[j].size, facts[j].mult);
    bool *vec = arena_alloc(c->a, sizeof *vec * (size_t)(k->nparams + 1));
    for (int j = 0; j < k->nparams; j++)
        vec[j] = k->params[j].sym->lower && ((SymInfo *)k->params[j].sym->lower)->vec_ok;
    c->version_aligned = true;
    lower_for(c, s);
    c->version_aligned = false;
    smem_retire_mbarriers(c, before.nmbar_live);
    assume_restore(c, mark);
    for (int j = 0; j < k->nparams; j++)
        if (k->params[j].sym->lower)
            ((SymInfo *)k->params[j].sym->lower)->vec_ok = vec[j];
    ir_bra(f, done, -1, false);
    State aligned = state_of(c);
    state_set(c, &before);
    i = 0;
    for (MatmulPlan *p = c->plans; p && i < nplans; p = p->next)
        p->row = rows[i++];
    ir_label(f, other);
    if (f->threads > threads)
        ws_other_version(c, threads);
    lower_for(c, s);
    smem_retire_mbarriers(c, before.nmbar_live);
    ir_label(f, done);
    c->versioning = false;
    /* after the join: either version's released memory may be reused, and either may have
       left the scratch read */
    c->reuse_lo = c->reuse_lo < aligned.reuse_lo ? c->reuse_lo : aligned.reuse_lo;
    c->reuse_hi = c->reuse_hi > aligned.reuse_hi ? c->reuse_hi : aligned.reuse_hi;
    c->reuse_bar |= aligned.reuse_bar;
    c->scratch_read |= aligned.scratch_read;
    return true;
}
