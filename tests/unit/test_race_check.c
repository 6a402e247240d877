/* test_race_check.c: the shared-memory race check on hand-built IR. Each case is a small piece of
 * code the lowering could emit, with and without the barrier (or wait) that orders it: the check
 * must pass the first and fail the second. The failing cases print the check's error to stderr. */
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
    SmemBuf bufs[] = { { 0, 1024, "scratch", 0, 0 }, { 1024, 2048, "stages", 1024, 0 } };
    for (int i = 0; i < 2; i++)
        vec_push(&f->smem_bufs, bufs[i]);
    return f;
}

static int movsym(Func *f, const char *sym)
{
    int r = new_reg(f, RC_R);
    Ins *in = emit_ins(f, OP_MOVSYM, PT_U32);
    in->dst[0] = r;
    in->ndst = 1;
    in->src[0] = SYM(sym);
    in->nsrc = 1;
    return r;
}

/* An address in the buffer at byte `off`, moved by the thread id as tile accesses are. */
static int addr(Func *f, int off)
{
    int tid = new_reg(f, RC_R);
    return ir_tern(f, OP_MAD, PT_U32, R(tid), IMM(4), R(movsym(f, arena_printf(f->arena, "tilec_smem+%d", off))));
}

static void st(Func *f, int a)
{
    Ins *in = emit_ins(f, OP_ST, PT_B32);
    in->space = SP_SHARED;
    in->src[0] = R(a);
    in->src[1] = IMM(0);
    in->nsrc = 2;
}

static void ld(Func *f, int a)
{
    int d = new_reg(f, RC_R);
    Ins *in = emit_ins(f, OP_LD, PT_B32);
    in->space = SP_SHARED;
    in->dst[0] = d;
    in->ndst = 1;
    in->src[0] = R(a);
    in->nsrc = 1;
}

static void cp_async(Func *f, int a)
{
    Ins *in = emit_ins(f, OP_CPASYNC, PT_B32);
    in->src[0] = R(a);
    in->src[1] = R(new_reg(f, RC_D));
    in->src[2] = IMM(16);
    in->nsrc = 3;
    in->vec = 16;
}

static void cp_wait(Func *f, int n) { emit_ins(f, OP_CPWAIT, PT_B32)->inflight = (uint8_t)n; }
static void commit(Func *f) { emit_ins(f, OP_CPCOMMIT, PT_B32); }

static bool check(Func *f)
{
    emit_ins(f, OP_RET, PT_B32);
    bool ok = race_check(f);
    func_free(f);
    return ok;
}

static void expect(bool want_ok, bool got_ok, const char *name)
{
    unit_check(want_ok == got_ok, name, "race_check %s, expected it to %s", got_ok ? "passed" : "failed",
               want_ok ? "pass" : "fail");
}

/* write, (barrier), read: the reduction's hand-off */
static void straight(Arena *a, bool bar)
{
    Func *f = fresh(a);
    st(f, addr(f, 0));
    if (bar)
        ir_bar(f);
    ld(f, addr(f, 0));
    expect(bar, check(f), bar ? "write, barrier, read" : "write then read, no barrier");
}

/* reads of one buffer and writes of another never meet */
static void other_buffers(Arena *a)
{
    Func *f = fresh(a);
    st(f, addr(f, 0));
    ld(f, addr(f, 1024));
    expect(true, check(f), "write one buffer, read another");
}

/* memory released and allocated again: a buffer made after the first over the same bytes is
   another buffer, but its accesses meet the first one's -- a read of the old, then a write of the
   new, needs the barrier between them */
static void reused(Arena *a, bool bar)
{
    Func *f = fresh(a);
    ld(f, addr(f, 1024));
    SmemBuf again = { 1024, 512, "reused", 0, f->code.n };
    vec_push(&f->smem_bufs, again);
    if (bar)
        ir_bar(f);
    st(f, addr(f, 1024 + 256));
    expect(bar, check(f), bar ? "read, barrier, write of the memory again" :
                              "read, then write of the memory again, no barrier");
}

/* a loop whose body writes, barriers, reads: the next iteration's write meets the last read
   unless the body starts with a barrier */
static void loop(Arena *a, bool bar_at_top)
{
    Func *f = fresh(a);
    int head = new_label(f), exit = new_label(f);
    ir_label(f, head);
    int p = new_reg(f, RC_P);
    ir_bra(f, exit, p, false);
    if (bar_at_top)
        ir_bar(f);
    st(f, addr(f, 0));
    ir_bar(f);
    ld(f, addr(f, 0));
    ir_bra(f, head, -1, false);
    ir_label(f, exit);
    expect(bar_at_top, check(f), bar_at_top ? "loop: barrier before the write" : "loop: write after last iteration's read");
}

/* an if whose then branch ends in a barrier must not cover the else branch */
static void branches(Arena *a, bool bar_in_else)
{
    Func *f = fresh(a);
    ld(f, addr(f, 0));
    int els = new_label(f), end = new_label(f);
    int p = new_reg(f, RC_P);
    ir_bra(f, els, p, true);
    ir_bar(f);
    st(f, addr(f, 0));
    ir_bra(f, end, -1, false);
    ir_label(f, els);
    if (bar_in_else)
        ir_bar(f);
    st(f, addr(f, 0));
    ir_label(f, end);
    expect(bar_in_else, check(f), bar_in_else ? "if/else: both branches barrier" : "if/else: else branch writes unordered");
}

/* cp.async is in flight across a barrier until a wait covers its group */
static void async_copy(Arena *a, int wait)
{
    Func *f = fresh(a);
    cp_async(f, addr(f, 0));
    commit(f);
    if (wait >= 0)
        cp_wait(f, wait);
    ir_bar(f);
    ld(f, addr(f, 0));
    char name[64];
    snprintf(name, sizeof name, "cp.async, wait_group %d, barrier, read", wait);
    expect(wait == 0, check(f), wait < 0 ? "cp.async, barrier, read (no wait)" : name);
}

/* in-place rounding of the pieces a thread copied needs no barrier; another thread's read does */
static void own_pieces(Arena *a, bool own)
{
    Func *f = fresh(a);
    int p = addr(f, 0);
    cp_async(f, p);
    commit(f);
    cp_wait(f, 0);
    int from = f->code.n;
    ld(f, p);
    st(f, p);
    for (int i = from; i < f->code.n; i++)
        f->code.v[i].own = own;
    ir_bar(f);
    ld(f, addr(f, 0));
    expect(own, check(f), own ? "cp.async then in-place rounding of own pieces" : "cp.async then another thread's read");
}

/* A two-stage loop as lower_pipeline.c builds it: the prologue copies stage 0, each iteration
 * waits, barriers, reads the current stage and copies into the other. Reading the stage being
 * copied into, or leaving out the barrier, is a race. */
static void pipeline(Arena *a, int read_ahead, bool bar)
{
    Func *f = fresh(a);
    int S = 2;
    RegArray arr = { "stages", S, RC_R, 1, false, false };
    vec_push(&f->arrays, arr);
    for (int s = 0; s < S; s++) {
        int base = movsym(f, s ? "tilec_smem+2048" : "tilec_smem+1024");
        Ins *in = emit_ins(f, OP_ARRSET, PT_U32);
        in->src[0] = R(base);
        in->nsrc = 1;
        in->off = s;
        in->array = 0;
    }
    int k0 = ir_mov(f, PT_U32, IMM(0));
    int b0 = new_reg(f, RC_R);
    Ins *g = emit_ins(f, OP_ARRGET, PT_U32);
    g->dst[0] = b0, g->ndst = 1, g->src[0] = R(k0), g->nsrc = 1, g->array = 0;
    cp_async(f, b0);
    commit(f);
    int stage = ir_mov(f, PT_U32, IMM(0));
    f->regs.v[stage].stage_S = S;
    int head = new_label(f), exit = new_label(f);
    ir_label(f, head);
    ir_bra(f, exit, new_reg(f, RC_P), false);
    cp_wait(f, 0);
    if (bar)
        ir_bar(f);
    int w1 = ir_bin(f, OP_ADD, PT_U32, R(stage), IMM(1));
    int wrap = ir_setp(f, CMP_GE, PT_U32, R(w1), IMM(S));
    int w2 = ir_bin(f, OP_SUB, PT_U32, R(w1), IMM(S));
    int w = ir_tern(f, OP_SELP, PT_U32, R(w2), R(w1), R(wrap));
    int cur = new_reg(f, RC_R), ahead = new_reg(f, RC_R);
    g = emit_ins(f, OP_ARRGET, PT_U32);
    g->dst[0] = cur, g->ndst = 1, g->src[0] = R(read_ahead ? w : stage), g->nsrc = 1, g->array = 0;
    g = emit_ins(f, OP_ARRGET, PT_U32);
    g->dst[0] = ahead, g->ndst = 1, g->src[0] = R(w), g->nsrc = 1, g->array = 0;
    ld(f, cur);
    cp_async(f, ahead);
    commit(f);
    int n1 = ir_bin(f, OP_ADD, PT_U32, R(stage), IMM(1));
    int wr = ir_setp(f, CMP_GE, PT_U32, R(n1), IMM(S));
    Ins *in = emit_ins(f, OP_SELP, PT_U32);
    in->dst[0] = stage, in->ndst = 1, in->src[0] = IMM(0), in->src[1] = R(n1), in->src[2] = R(wr), in->nsrc = 3;
    ir_bra(f, head, -1, false);
    ir_label(f, exit);
    bool want = bar && !read_ahead;
    expect(want, check(f), !bar ? "pipeline: no barrier after the wait" :
                           read_ahead ? "pipeline: reading the stage being copied into" : "pipeline: two stages");
}

/* A TMA copy into the stages completing on the mbarrier at bar, then a wait on the one at
   wait_on (every thread, or one thread when guarded), then every thread reads the copy. */
static void tma_then_read(Arena *a, int bar, int wait_on, bool guarded, bool bar_after, bool want)
{
    Func *f = fresh(a);
    SmemBuf bars[] = { { 3072, 8, "full", 0, 0 }, { 3080, 8, "other", 0, 0 } };
    for (int i = 0; i < 2; i++)
        vec_push(&f->smem_bufs, bars[i]);
    int dst = movsym(f, "tilec_smem+1024");
    int mb = movsym(f, arena_printf(f->arena, "tilec_smem+%d", bar));
    Ins *in = emit_ins(f, OP_TMALOAD, PT_B32);
    in->src[0] = R(dst);
    for (int i = 1; i < 4; i++)
        in->src[i] = R(new_reg(f, RC_R));
    in->src[4] = R(mb);
    in->nsrc = 5;
    in->guard = new_reg(f, RC_P);
    int wb = movsym(f, arena_printf(f->arena, "tilec_smem+%d", wait_on));
    int again = new_label(f), done = new_reg(f, RC_P);
    ir_label(f, again);
    in = emit_ins(f, OP_MBWAIT, PT_PRED);
    in->dst[0] = done;
    in->ndst = 1;
    in->src[0] = R(wb);
    in->src[1] = R(new_reg(f, RC_R));
    in->nsrc = 2;
    if (guarded)
        in->guard = new_reg(f, RC_P);
    ir_bra(f, again, done, true);
    if (bar_after)
        ir_bar(f);
    ld(f, addr(f, 1024));
    expect(want, check(f), arena_printf(f->arena, "TMA copy, wait on %s%s%s, read",
                                        wait_on == bar ? "its mbarrier" : "another mbarrier",
                                        guarded ? " in one thread" : "", bar_after ? ", barrier" : ""));
}

int main(void)
{
    Arena *a = arena_new();
    straight(a, true);
    straight(a, false);
    other_buffers(a);
    reused(a, true);
    reused(a, false);
    loop(a, true);
    loop(a, false);
    branches(a, true);
    branches(a, false);
    async_copy(a, 0);
    async_copy(a, 1);
    async_copy(a, -1);
    own_pieces(a, true);
    own_pieces(a, false);
    pipeline(a, 0, true);
    pipeline(a, 1, true);
    pipeline(a, 0, false);
    /* every thread's wait on the copy's own mbarrier makes its bytes visible: no barrier needed */
    tma_then_read(a, 3072, 3072, false, false, true);
    tma_then_read(a, 3072, 3080, false, false, false);
    tma_then_read(a, 3072, 3080, false, true, false);
    tma_then_read(a, 3072, 3072, true, false, false);
    tma_then_read(a, 3072, 3072, true, true, true);
    arena_free(a);
    return unit_exit();
}
