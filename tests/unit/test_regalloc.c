/* test_regalloc.c: regalloc.c on hand-built IR: the linear scan gives a register free again to the
 * next value, but never the name of a wgmma accumulator made afresh in each iteration of a loop
 * (ptxas then serializes the products, C7511); an accumulator carried into the loop keeps
 * sharing with values outside it, and the names leave the predicted count as the scan found it. */
#include <stdlib.h>
#include "tilec.h"
#include "unit.h"

static Kernel kernel = { .name = "k", .loc = { 1, 1 } };

/* A value made and read at once: its register is free right after. */
static int temp(Func *f)
{
    int r = ir_mov(f, PT_F32, FIMM(2));
    ir_bin(f, OP_ADD, PT_F32, R(r), FIMM(1));
    return r;
}

/* One wgmma adding into the n accumulators acc (made here when fresh), committed, waited for. */
static void product(Func *f, int *acc, int n, bool fresh)
{
    for (int i = 0; fresh && i < n; i++)     /* zeroed first, as a product's own tile is */
        acc[i] = ir_mov(f, PT_F32, FIMM(0));
    Ins *w = emit_ins(f, OP_WGMMA, PT_F32);
    w->src[0] = R(new_reg(f, RC_D));
    w->src[1] = R(new_reg(f, RC_D));
    w->nsrc = 2;
    w->n = 8;
    for (int q = 0; q < n; q += 4) {
        Ins *g = emit_ins(f, OP_WGACC, PT_F32);
        for (int i = 0; i < 4; i++) {
            g->dst[i] = acc[q + i];
            g->src[i] = R(acc[q + i]);
        }
        g->ndst = g->nsrc = 4;
    }
    emit_ins(f, OP_WGCOMMIT, PT_B32);
    emit_ins(f, OP_WGWAIT, PT_B32)->inflight = 0;
}

static int shares(const Func *f, int v)
{
    int n = 0;
    for (int r = 0; r < f->regs.n; r++)
        n += r != v && f->regs.v[r].rc == f->regs.v[v].rc && f->regs.v[r].phys == f->regs.v[v].phys;
    return n;
}

int main(void)
{
    Arena *a = arena_new();
    Func *f = func_new(&kernel);
    f->arena = a;
    f->threads = 128;
    /* temporaries before the loop, a carried accumulator zeroed, then
         loop: s = fresh product; temporaries from s; acc += product; branch back
       and temporaries after the loop */
    int before[4], carried[8], s[8], in_loop[4], after[4], sum = -1;
    for (int i = 0; i < 4; i++)
        before[i] = temp(f);
    for (int i = 0; i < 8; i++)
        carried[i] = ir_mov(f, PT_F32, FIMM(0));
    int top = new_label(f);
    ir_label(f, top);
    product(f, s, 8, true);
    for (int i = 0; i < 8; i++)
        sum = ir_bin(f, OP_ADD, PT_F32, R(s[i]), sum < 0 ? FIMM(0) : R(sum));
    for (int i = 0; i < 4; i++)
        in_loop[i] = temp(f);
    product(f, carried, 8, false);
    int p = new_reg(f, RC_P);
    ir_bra(f, top, p, false);
    for (int i = 0; i < 8; i++)
        ir_bin(f, OP_ADD, PT_F32, R(carried[i]), R(sum));
    for (int i = 0; i < 4; i++)
        after[i] = temp(f);
    unit_check(regalloc(f, 255), "regalloc succeeds", "refused");
    const VReg *v = f->regs.v;
    int shared = 0, declared = 0;
    for (int i = 0; i < 8; i++) {
        shared += shares(f, s[i]);
        declared += v[s[i]].phys < f->nphys[RC_F];
    }
    unit_check(!shared, "no other value named as a fresh accumulator in a loop", "%d names shared", shared);
    unit_check(declared == 8, "fresh accumulators' names declared (below nphys)", "%d of 8", declared);
    int carried_shared = 0;
    for (int i = 0; i < 8; i++)
        carried_shared += shares(f, carried[i]) > 0;
    unit_check(carried_shared > 0, "a carried accumulator shares names outside its loop",
               "none of 8 shares");
    unit_check(v[before[0]].phys == v[before[1]].phys && v[after[0]].phys == v[after[3]].phys &&
               v[in_loop[0]].phys == v[in_loop[3]].phys,
               "temporaries share a freed register", "%d %d, %d %d, %d %d", v[before[0]].phys,
               v[before[1]].phys, v[after[0]].phys, v[after[3]].phys, v[in_loop[0]].phys, v[in_loop[3]].phys);
    /* the count is the scan's (here under the floor a wgmma of 8 accumulators needs: 8 + 26),
       not the accumulators' own names */
    unit_check(f->peak_regs == 8 + 26, "predicted registers from the scan, not the names", "%d", f->peak_regs);
    func_free(f);
    arena_free(a);
    return unit_exit();
}
