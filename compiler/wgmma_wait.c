/* wgmma_wait.c: moves each wgmma.wait_group the lowering put right after its product down to the
 * first instruction that needs the product done, so that the tensor cores run while the thread
 * goes on with other work.
 *
 * Why. The lowering waits for every product it issues at once (lower_wgmma.c), which is right
 * for a product whose result is used next, but a kernel that issues the next block's product
 * before the softmax of this one (flash attention's scores, docs/language.md, "Products in
 * flight") then stands still exactly where the overlap was meant to be. Where the wait goes is a
 * question about the instructions between, not about the product, so it is answered here, after
 * lowering, once for every path that issues products.
 *
 * Contract. Needs: lowered code in which a wgmma group's registers (its accumulators, A's
 * fragments) are touched only after a wait that covers it (the lowering's rule). Gives: the same,
 * with waits that follow a commit moved later, none across a barrier, a label reached from
 * elsewhere, a loop's back edge, or a write of shared memory (a product in flight may read what
 * the write would change) other than a pipelined loop's copies into its stage ahead (Ins.ahead:
 * no product of the iteration reads that stage, lower_pipeline.c). A forward branch whose code
 * is entered only from it (an if statement) is passed: where its code needs the product, a wait
 * goes before that instruction there too. Each moved wait takes the hold of the registers the
 * group reads or writes (WGHOLD): until the wait none of them may be given to another value.
 * race_check.c, which runs next, still proves the shared accesses ordered. */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

enum { CROSS, COMMIT, WAIT, BRANCH, STOP };

/* A wait to insert before pos, with newer groups left in flight. */
typedef struct { int pos, newer; } Wait;

typedef struct {
    Func *f;
    int *label_at;            /* label -> position */
    int *first_from, *last_from;    /* label -> the first and last branch to it */
    uint8_t *mark;            /* register -> in the group's set */
    int *held;                /* the group's registers, in order */
    int nheld;
    Wait *waits;              /* inside passed branches */
    int nwaits;
    int newer;                /* groups committed since the moved wait's own */
} Sink;

static int classify(const Ins *in)
{
    if (in->ahead)
        return CROSS;
    if (op_has(in->op, OPF_PURE))
        return CROSS;
    switch (in->op) {
    case OP_LD: case OP_LDMATRIX: case OP_SHFL: case OP_MBWAIT: case OP_CPWAIT: case OP_COMMENT:
    case OP_WGFENCE: case OP_WGMMA: case OP_WGACC: case OP_WGHOLD: case OP_MMA: case OP_ARRGET:
    case OP_ARRSET:
        return CROSS;
    case OP_ST: case OP_RED: case OP_ATOM:
        return in->space == SP_SHARED ? STOP : CROSS;
    case OP_WGCOMMIT: return COMMIT;
    case OP_WGWAIT: return WAIT;
    case OP_BRA: return BRANCH;
    default: return STOP;
    }
}

static bool touches(const Sink *s, const Ins *in)
{
    int u[24], n = ir_uses(in, u);
    for (int k = 0; k < n; k++)
        if (s->mark[u[k]])
            return true;
    for (int d = 0; d < in->ndst; d++)
        if (s->mark[in->dst[d]])
            return true;
    return false;
}

static void hold(Sink *s, int r)
{
    if (!s->mark[r]) {
        s->mark[r] = 1;
        s->held[s->nheld++] = r;
    }
}

/* The registers of the groups committed since the last complete wait before `from`: every
   accumulator, and A's fragments where A comes from registers. */
static void group_regs(Sink *s, int from)
{
    const Func *f = s->f;
    for (int k = from; k >= 0; k--) {
        const Ins *in = &f->code.v[k];
        if ((in->op == OP_WGWAIT && in->inflight == 0) || in->op == OP_LABEL || in->op == OP_BRA ||
            in->op == OP_BAR || in->op == OP_BARRED)
            return;
        if (in->op == OP_WGACC)
            for (int d = 0; d < in->ndst; d++)
                hold(s, in->dst[d]);
        if (in->op == OP_WGMMA && in->a_regs)
            for (int i = 0; i < 4; i++)
                hold(s, in->src[i].reg);
    }
}

/* The code of a forward branch at j, if it is entered only through it: the position of its last
   label, with waits recorded before whatever in it needs the group done; -1 if not. */
static int pass_branch(Sink *s, int j)
{
    const Func *f = s->f;
    const Ins *b = &f->code.v[j];
    int end = s->label_at[b->label];
    if (end <= j)
        return -1;
    int nwaits = s->nwaits;
    bool waited = false;
    for (int k = j + 1; k <= end; k++) {
        const Ins *in = &f->code.v[k];
        if (in->op == OP_LABEL) {
            if (s->first_from[in->label] < j || s->last_from[in->label] > k)
                goto entered;     /* from outside, or a loop */
            waited = false;
        } else if (in->op == OP_BRA) {
            int t = s->label_at[in->label];
            if (t <= j)
                goto entered;
            end = t > end ? t : end;
        } else if (in->op == OP_RET || in->op == OP_WGCOMMIT || in->op == OP_WGWAIT || in->op == OP_WGMMA) {
            goto entered;     /* (a group's count would differ between the paths) */
        } else if (!waited && (classify(in) != CROSS || touches(s, in))) {
            s->waits[s->nwaits++] = (Wait){ k, s->newer };
            waited = true;
        }
    }
    return end;
entered:
    s->nwaits = nwaits;
    return -1;
}

/* A wait (inflight: the groups it leaves in flight) or a hold, with no operands yet. */
static Ins pseudo(int op, int inflight)
{
    Ins w;
    memset(&w, 0, sizeof w);
    w.op = (uint16_t)op;
    w.ty = PT_B32;
    w.vec = 1;
    w.guard = -1;
    w.inflight = (uint8_t)inflight;
    return w;
}

/* The wait at i, if it follows a commit: moved. Returns whether the code changed. */
static bool sink(Sink *s, int i)
{
    Func *f = s->f;
    const Ins *w = &f->code.v[i];
    if (w->op != OP_WGWAIT || w->inflight != 0 || w->guard >= 0)
        return false;
    int c = i - 1;
    while (c >= 0 && f->code.v[c].ahead)
        c--;
    if (c < 0 || f->code.v[c].op != OP_WGCOMMIT)
        return false;
    memset(s->mark, 0, (size_t)f->regs.n + 1);
    s->nheld = s->nwaits = s->newer = 0;
    group_regs(s, c - 1);
    int nh = 0;
    while (i + 1 + nh < f->code.n && f->code.v[i + 1 + nh].op == OP_WGHOLD) {
        const Ins *h = &f->code.v[i + 1 + nh];
        for (int k = 0; k < h->nsrc; k++)
            if (h->src[k].kind == O_REG)
                hold(s, h->src[k].reg);
        nh++;
    }
    /* where the wait goes (before `at`), or the later wait that covers it (`merged`) */
    int at = i + 1 + nh, merged = -1;
    for (;;) {
        if (at >= f->code.n)
            break;
        const Ins *in = &f->code.v[at];
        if (touches(s, in))
            break;
        int k = classify(in);
        if (k == CROSS) {
            at++;
        } else if (k == COMMIT) {
            s->newer++;
            at++;
        } else if (k == WAIT) {
            if (in->inflight <= s->newer && in->guard < 0) {
                merged = at;
                break;
            }
            at++;
        } else if (k == BRANCH) {
            int end = pass_branch(s, at);
            if (end < 0)
                break;
            at = end + 1;
        } else {
            break;
        }
    }
    if (merged < 0 && at == i + 1 + nh && s->nwaits == 0)
        return false;
    /* the hold goes after the wait that finishes the group: the moved one, or the later one
       and its own holds */
    int hold_at = merged >= 0 ? merged + 1 : at;
    while (merged >= 0 && hold_at < f->code.n && f->code.v[hold_at].op == OP_WGHOLD)
        hold_at++;
    Vec(Ins) out = { 0 };
    int q = 0;
    int *moved_to = malloc(sizeof(int) * ((size_t)f->code.n + 1));
    for (int p = 0; p <= f->code.n; p++) {
        moved_to[p] = out.n;
        for (; q < s->nwaits && s->waits[q].pos == p; q++) {
            Ins wq = pseudo(OP_WGWAIT, s->waits[q].newer);
            wq.line = f->code.v[p].line;
            vec_push(&out, wq);
        }
        if (p == at && merged < 0) {
            Ins wi = pseudo(OP_WGWAIT, s->newer);
            wi.line = f->code.v[i].line;
            vec_push(&out, wi);
        }
        for (int k = 0; p == hold_at && k < s->nheld; k += 10) {
            Ins h = pseudo(OP_WGHOLD, 0);
            h.line = f->code.v[i].line;
            for (int r = k; r < s->nheld && r < k + 10; r++)
                h.src[h.nsrc++] = R(s->held[r]);
            vec_push(&out, h);
        }
        if (p == f->code.n)
            break;
        if (p < i || p > i + nh)      /* (the wait and its holds are moved) */
            vec_push(&out, f->code.v[p]);
    }
    /* race_check.c tells a buffer from an earlier one in the same bytes by the instruction
       count at its allocation: counted in the new code */
    for (int b = 0; b < f->smem_bufs.n; b++) {
        int at = f->smem_bufs.v[b].at;
        f->smem_bufs.v[b].at = at < 0 ? at : at > f->code.n ? out.n : moved_to[at];
    }
    free(moved_to);
    free(f->code.v);
    f->code.v = out.v;
    f->code.n = out.n;
    f->code.cap = out.cap;
    return true;
}

static void index_labels(Sink *s)
{
    Func *f = s->f;
    for (int l = 0; l < f->nlabels; l++) {
        s->label_at[l] = -1;
        s->first_from[l] = f->code.n;
        s->last_from[l] = -1;
    }
    for (int i = 0; i < f->code.n; i++) {
        const Ins *in = &f->code.v[i];
        if (in->label < 0 || in->label >= f->nlabels)
            continue;
        if (in->op == OP_LABEL)
            s->label_at[in->label] = i;
        else if (in->op == OP_BRA) {
            if (i < s->first_from[in->label])
                s->first_from[in->label] = i;
            s->last_from[in->label] = i;
        }
    }
}

int wgmma_wait_sink(Func *f)
{
    Sink s = { 0 };
    s.f = f;
    int nl = f->nlabels + 1, moved = 0;
    s.label_at = malloc(sizeof(int) * (size_t)nl);
    s.first_from = malloc(sizeof(int) * (size_t)nl);
    s.last_from = malloc(sizeof(int) * (size_t)nl);
    s.mark = malloc((size_t)f->regs.n + 1);
    s.held = malloc(sizeof(int) * ((size_t)f->regs.n + 1));
    s.waits = NULL;
    /* the last wait first: a later product's wait, already past the code between, lets an
       earlier one count that product as still in flight (wait_group 1) instead of meeting its
       complete wait there; the code before i never changes */
    for (int i = f->code.n - 1; i >= 0; i--) {
        if (f->code.v[i].op != OP_WGWAIT)
            continue;
        /* (each moved wait adds instructions: sized for the code as it now is) */
        free(s.waits);
        s.waits = malloc(sizeof(Wait) * ((size_t)f->code.n + 1));
        index_labels(&s);
        if (sink(&s, i))
            moved++;
    }
    /* ir_verify.c holds later passes to the order of barriers and waits that the race check
       sees, which runs next: the lowered code's record no longer stands */
    if (moved)
        f->sync_order_set = false;
    free(s.waits);
    free(s.label_at);
    free(s.first_from);
    free(s.last_from);
    free(s.mark);
    free(s.held);
    return moved;
}
