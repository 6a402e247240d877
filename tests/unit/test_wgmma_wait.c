/* test_wgmma_wait.c: where wgmma_wait.c puts a product's wait, on hand-built IR: down to the first
 * instruction that touches the group's registers, never past a barrier, a shared store or a label
 * reached from elsewhere, through an if with a wait inside it where its body needs the product,
 * counting the groups committed after it, and with the memory's allocation points kept in step. */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"
#include "unit.h"

static Kernel kernel = { .name = "k", .loc = { 1, 1 } };

static Func *fresh(Arena *a)
{
    Func *f = func_new(&kernel);
    f->arena = a;
    f->threads = 128;
    return f;
}

/* One wgmma group writing four accumulators (returned in acc), committed, waited for at once as
   the lowering does. */
static void product(Func *f, int acc[4])
{
    Ins *w = emit_ins(f, OP_WGMMA, PT_F32);
    w->src[0] = R(new_reg(f, RC_D));
    w->src[1] = R(new_reg(f, RC_D));
    w->nsrc = 2;
    w->n = 8;
    Ins *g = emit_ins(f, OP_WGACC, PT_F32);
    for (int i = 0; i < 4; i++) {
        acc[i] = new_reg(f, RC_F);
        g->dst[i] = acc[i];
        g->src[i] = R(acc[i]);
    }
    g->ndst = g->nsrc = 4;
    emit_ins(f, OP_WGCOMMIT, PT_B32);
    emit_ins(f, OP_WGWAIT, PT_B32)->inflight = 0;
}

/* An instruction reading r (or an unrelated register, r < 0). */
static int use(Func *f, int r)
{
    return ir_bin(f, OP_ADD, PT_F32, R(r >= 0 ? r : new_reg(f, RC_F)), FIMM(1));
}

static void st_shared(Func *f)
{
    Ins *in = emit_ins(f, OP_ST, PT_B32);
    in->space = SP_SHARED;
    in->src[0] = R(new_reg(f, RC_R));
    in->src[1] = IMM(0);
    in->nsrc = 2;
}

/* The position of the n-th instruction with op (0: the first), -1 if none. */
static int at(const Func *f, int op, int n)
{
    for (int i = 0; i < f->code.n; i++)
        if (f->code.v[i].op == op && n-- == 0)
            return i;
    return -1;
}

/* The position of the instruction whose first destination is r. */
static int def(const Func *f, int r)
{
    for (int i = 0; i < f->code.n; i++)
        if (f->code.v[i].ndst > 0 && f->code.v[i].dst[0] == r)
            return i;
    return -1;
}

/* product, unrelated work, the result's use: the wait goes right before the use, its holds after */
static void to_first_use(Arena *a)
{
    Func *f = fresh(a);
    int acc[4];
    product(f, acc);
    int other = use(f, -1);
    int u = use(f, acc[2]);
    emit_ins(f, OP_RET, PT_B32);
    wgmma_wait_sink(f);
    int w = at(f, OP_WGWAIT, 0);
    unit_check(w > def(f, other) && w + 2 == def(f, u) && f->code.v[w + 1].op == OP_WGHOLD &&
               f->code.v[w + 1].nsrc == 4 && f->code.v[w].inflight == 0,
               "wgmma wait: moved past unrelated work to the result's first use",
               "wait at %d, unrelated at %d, use at %d", w, def(f, other), def(f, u));
    func_free(f);
}

/* a barrier or a shared store stops it; -fno-wgmma-wait's code is the lowering's */
static void stops(Arena *a, int op)
{
    Func *f = fresh(a);
    int acc[4];
    product(f, acc);
    use(f, -1);
    if (op == OP_BAR)
        ir_bar(f);
    else
        st_shared(f);
    use(f, acc[0]);
    emit_ins(f, OP_RET, PT_B32);
    wgmma_wait_sink(f);
    int w = at(f, OP_WGWAIT, 0), stop = at(f, op, 0);
    unit_check(w >= 0 && f->code.v[w + 1].op == OP_WGHOLD && w + 1 + (f->code.v[w + 1].op == OP_WGHOLD) == stop,
               op == OP_BAR ? "wgmma wait: not past a barrier" : "wgmma wait: not past a shared store",
               "wait at %d, the stop at %d", w, stop);
    func_free(f);
}

/* two products, the first's result used after the second's commit: the first waits with one group
   left in flight (wait_group 1), the second at its own result */
static void two_groups(Arena *a)
{
    Func *f = fresh(a);
    int x[4], y[4];
    product(f, x);
    use(f, -1);
    product(f, y);
    int ux = use(f, x[1]);
    int uy = use(f, y[3]);
    emit_ins(f, OP_RET, PT_B32);
    wgmma_wait_sink(f);
    int w0 = at(f, OP_WGWAIT, 0), w1 = at(f, OP_WGWAIT, 1);
    unit_check(w0 >= 0 && w1 >= 0 && f->code.v[w0].inflight == 1 && w0 < def(f, ux) &&
               w0 > at(f, OP_WGCOMMIT, 1) && f->code.v[w1].inflight == 0 && w1 > def(f, ux) && w1 < def(f, uy),
               "wgmma wait: an earlier group waited with the later one in flight",
               "waits at %d (%d in flight) and %d (%d), uses at %d and %d", w0, f->code.v[w0].inflight, w1,
               f->code.v[w1].inflight, def(f, ux), def(f, uy));
    func_free(f);
}

/* an if whose body stores to shared memory: a wait inside before the store, the moved one after
   the join; a label inside entered from before the product: the wait stays before the branch */
static void branch(Arena *a, bool entered)
{
    Func *f = fresh(a);
    int inside = new_label(f), join = new_label(f), p = new_reg(f, RC_P);
    if (entered)
        ir_bra(f, inside, p, false);
    int acc[4];
    product(f, acc);
    ir_bra(f, join, p, false);
    use(f, -1);
    ir_label(f, inside);
    st_shared(f);
    ir_label(f, join);
    int u = use(f, acc[0]);
    emit_ins(f, OP_RET, PT_B32);
    wgmma_wait_sink(f);
    int w0 = at(f, OP_WGWAIT, 0), w1 = at(f, OP_WGWAIT, 1), st = at(f, OP_ST, 0), b = at(f, OP_BRA, entered);
    if (entered)
        unit_check(w1 < 0 && w0 >= 0 && w0 < b, "wgmma wait: not into code entered from elsewhere",
                   "waits at %d and %d, the branch at %d", w0, w1, b);
    else
        unit_check(w0 >= 0 && w1 >= 0 && w0 + 1 == st && w1 > at(f, OP_LABEL, 1) && w1 < def(f, u),
                   "wgmma wait: through an if, waiting inside before its shared store",
                   "waits at %d and %d, the store at %d, the use at %d", w0, w1, st, def(f, u));
    func_free(f);
}

/* a buffer allocated after the moved wait keeps its place in the new code (race_check.c tells
   reused memory apart by it) */
static void buffers(Arena *a)
{
    Func *f = fresh(a);
    int acc[4];
    product(f, acc);
    use(f, -1);
    int mark = f->code.n;
    SmemBuf b = { 0, 256, "later", 0, mark };
    vec_push(&f->smem_bufs, b);
    int first = use(f, -1);
    use(f, acc[0]);
    emit_ins(f, OP_RET, PT_B32);
    wgmma_wait_sink(f);
    int now = f->smem_bufs.v[0].at;
    unit_check(now == def(f, first), "wgmma wait: allocation points follow the code",
               "the buffer's point %d, its first instruction at %d", now, def(f, first));
    func_free(f);
}

int main(void)
{
    Arena *a = arena_new();
    to_first_use(a);
    stops(a, OP_BAR);
    stops(a, OP_ST);
    two_groups(a);
    branch(a, false);
    branch(a, true);
    buffers(a);
    arena_free(a);
    return unit_exit();
}
