/* test_addrsplit.c: the address-splitting pass on small functions built by hand, one per case
 * where a naive split would be wrong (32-bit wrap under a widening, a redefined base, a guarded
 * definition, offsets past the immediate range, negative offsets) and the cases it must win
 * (one base for many accesses, hoisting out of a loop, sharing identical bases).
 * Prints `ok NAME` / `FAIL NAME: why` lines; exits 1 on any failure. */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"
#include "../unit/unit.h"

static Kernel kernel = { .name = "t" };
static Arena *arena;

static Func *fresh(void)
{
    Func *f = func_new(&kernel);
    f->threads = 256;
    return f;
}

static int param64(Func *f, const char *name)
{
    Ins *in = emit_ins(f, OP_LDPARAM, PT_U64);
    in->src[0] = SYM(name);
    in->nsrc = 1;
    in->dst[0] = new_reg(f, RC_D);
    in->ndst = 1;
    return in->dst[0];
}

static int param32(Func *f, const char *name)
{
    Ins *in = emit_ins(f, OP_LDPARAM, PT_S32);
    in->src[0] = SYM(name);
    in->nsrc = 1;
    in->dst[0] = new_reg(f, RC_R);
    in->ndst = 1;
    return in->dst[0];
}

static void load(Func *f, int space, int addr, int guard)
{
    Ins *in = emit_ins(f, OP_LD, PT_F32);
    in->space = (uint8_t)space;
    in->dst[0] = new_reg(f, RC_F);
    in->ndst = 1;
    in->src[0] = R(addr);
    in->nsrc = 1;
    in->guard = guard;
}

/* The i-th memory instruction of f, or NULL. */
static Ins *mem(Func *f, int i)
{
    for (int k = 0; k < f->code.n; k++)
        if (f->code.v[k].op == OP_LD && i-- == 0)
            return &f->code.v[k];
    return NULL;
}

static Ins *def_of(Func *f, int r)
{
    for (int k = 0; k < f->code.n; k++)
        if (f->code.v[k].ndst && f->code.v[k].dst[0] == r)
            return &f->code.v[k];
    return NULL;
}

static int count_op(Func *f, int op, int ty)
{
    int n = 0;
    for (int k = 0; k < f->code.n; k++)
        n += f->code.v[k].op == op && (ty < 0 || f->code.v[k].ty == ty);
    return n;
}

/* A signed 32-bit index plus a constant, widened: the constant may not leave the widening,
 * because the 32-bit sum can wrap (the parameter may be near 2^31). */
static void wrap_unknown(void)
{
    Func *f = fresh();
    int p = param64(f, "p"), i = param32(f, "i");
    int j = ir_bin(f, OP_ADD, PT_S32, R(i), IMM(16));
    int w = ir_cvt(f, PT_S64, PT_S32, R(j));
    int a = ir_tern(f, OP_MAD, PT_S64, R(w), IMM(4), R(p));
    load(f, SP_GLOBAL, a, -1);
    addr_split(arena, f, false);
    Ins *ld = mem(f, 0);
    unit_check(ld && ld->off == 0, "wrap: constant stays inside cvt.s64.s32 of an unknown index",
               "off %lld", ld ? (long long)ld->off : -1);
    func_free(f);
}

/* The same with an index known to be small (tid & 255): now the constant moves out. */
static void wrap_bounded(void)
{
    Func *f = fresh();
    int p = param64(f, "p");
    int t = ir_mov(f, PT_U32, SYM("%tid.x"));
    int m = ir_bin(f, OP_BAND, PT_B32, R(t), IMM(255));
    int j = ir_bin(f, OP_ADD, PT_S32, R(m), IMM(16));
    int w = ir_cvt(f, PT_S64, PT_S32, R(j));
    int a = ir_tern(f, OP_MAD, PT_S64, R(w), IMM(4), R(p));
    load(f, SP_GLOBAL, a, -1);
    addr_split(arena, f, false);
    Ins *ld = mem(f, 0);
    unit_check(ld && ld->off == 64, "wrap: constant leaves the widening of a bounded index",
               "off %lld", ld ? (long long)ld->off : -1);
    func_free(f);
}

/* a = b + 8; b redefined; load [a]: folding to [b+8] would read the new b. */
static void redefined_base(void)
{
    Func *f = fresh();
    int p = param64(f, "p");
    int b = ir_mov(f, PT_S64, R(p));
    int a = ir_bin(f, OP_ADD, PT_S64, R(b), IMM(8));
    Ins *in = emit_ins(f, OP_ADD, PT_S64);            /* b += 4: a second definition */
    in->dst[0] = b;
    in->ndst = 1;
    in->src[0] = R(b);
    in->src[1] = IMM(4);
    in->nsrc = 2;
    load(f, SP_GLOBAL, a, -1);
    load(f, SP_GLOBAL, b, -1);                        /* keeps b alive */
    addr_split(arena, f, false);
    Ins *ld = mem(f, 0);
    bool ok = ld && !(ld->src[0].kind == O_REG && ld->src[0].reg == b);
    /* whatever the base is, it must not be the redefined register */
    unit_check(ok, "redefined: no fold through a register written between the add and the use",
               "load reads [v%d+%lld]", ld ? ld->src[0].reg : -1, ld ? (long long)ld->off : -1);
    func_free(f);
}

/* The same inside a loop, where the counter is redefined after the address is taken. */
static void redefined_in_loop(void)
{
    Func *f = fresh();
    int p = param64(f, "p"), n = param32(f, "n");
    int k = ir_mov(f, PT_S64, R(p));
    int i = ir_mov(f, PT_S32, IMM(0));
    int top = new_label(f), out = new_label(f);
    ir_label(f, top);
    int c = ir_setp(f, CMP_GE, PT_S32, R(i), R(n));
    ir_bra(f, out, c, false);
    int a = ir_bin(f, OP_ADD, PT_S64, R(k), IMM(8));
    Ins *in = emit_ins(f, OP_ADD, PT_S64);
    in->dst[0] = k; in->ndst = 1; in->src[0] = R(k); in->src[1] = IMM(4); in->nsrc = 2;
    load(f, SP_GLOBAL, a, -1);
    in = emit_ins(f, OP_ADD, PT_S32);
    in->dst[0] = i; in->ndst = 1; in->src[0] = R(i); in->src[1] = IMM(1); in->nsrc = 2;
    ir_bra(f, top, -1, false);
    ir_label(f, out);
    addr_split(arena, f, false);
    Ins *ld = mem(f, 0);
    bool ok = ld && !(ld->src[0].kind == O_REG && ld->src[0].reg == k);
    unit_check(ok, "redefined: no fold through a loop counter bumped after the add", "folded onto the counter");
    func_free(f);
}

/* A guarded definition leaves the old value where the guard is false: no fold through it. */
static void guarded_def(void)
{
    Func *f = fresh();
    int p = param64(f, "p"), q = param64(f, "q"), n = param32(f, "n");
    int g = ir_setp(f, CMP_LT, PT_S32, R(n), IMM(5));
    int a = ir_mov(f, PT_S64, R(q));
    Ins *in = emit_ins(f, OP_ADD, PT_S64);
    in->dst[0] = a; in->ndst = 1; in->src[0] = R(p); in->src[1] = IMM(8); in->nsrc = 2; in->guard = g;
    load(f, SP_GLOBAL, a, -1);
    addr_split(arena, f, false);
    Ins *ld = mem(f, 0);
    unit_check(ld && ld->src[0].reg == a && ld->off == 0, "guarded: no fold through a guarded definition",
               "load reads [v%d+%lld]", ld ? ld->src[0].reg : -1, ld ? (long long)ld->off : -1);
    func_free(f);
}

/* Negative offsets fold and print as [r+-8]. */
static void negative(void)
{
    Func *f = fresh();
    int p = param64(f, "p");
    int a = ir_bin(f, OP_ADD, PT_S64, R(p), IMM(-8));
    load(f, SP_GLOBAL, a, -1);
    int b = ir_bin(f, OP_SUB, PT_S64, R(p), IMM(12));
    load(f, SP_GLOBAL, b, -1);
    addr_split(arena, f, false);
    Ins *l0 = mem(f, 0), *l1 = mem(f, 1);
    unit_check(l0 && l0->src[0].reg == p && l0->off == -8, "negative: add of -8 folds to off -8",
               "off %lld", l0 ? (long long)l0->off : -1);
    unit_check(l1 && l1->src[0].reg == p && l1->off == -12, "negative: sub of 12 folds to off -12",
               "off %lld", l1 ? (long long)l1->off : -1);
    unit_check(count_op(f, OP_ADD, -1) == 0 && count_op(f, OP_SUB, -1) == 0, "negative: the adds are gone", "%d left",
               count_op(f, OP_ADD, -1) + count_op(f, OP_SUB, -1));
    KernelMeta m;
    memset(&m, 0, sizeof m);
    m.name = "t";
    Buf out = { 0 };
    emit_ptx_kernel(&out, f, &m);
    unit_check(out.s && strstr(out.s, "+-8]") && strstr(out.s, "+-12]"), "negative: PTX spells [r+-8]", "%s",
               out.s ? out.s : "");
    buf_free(&out);
    func_free(f);
}

/* Offsets past the immediate range: the far part goes to the base, |off| < 2^23. */
static void large(void)
{
    static const int64_t offs[] = { 20000000, -20000000, (int64_t)1 << 23, ((int64_t)1 << 23) - 4, 3000000000ll };
    for (size_t t = 0; t < sizeof offs / sizeof *offs; t++) {
        Func *f = fresh();
        int p = param64(f, "p");
        int a = ir_bin(f, OP_ADD, PT_S64, R(p), IMM(offs[t]));
        load(f, SP_GLOBAL, a, -1);
        addr_split(arena, f, false);
        Ins *ld = mem(f, 0);
        Ins *d = ld && ld->src[0].kind == O_REG ? def_of(f, ld->src[0].reg) : NULL;
        int64_t total = ld ? ld->off : 0;
        if (ld && ld->src[0].reg != p)
            total += d && d->op == OP_ADD && d->src[0].kind == O_REG && d->src[0].reg == p && d->src[1].kind == O_IMM
                         ? d->src[1].i : (int64_t)1 << 60;
        char name[96];
        snprintf(name, sizeof name, "large: offset %lld splits into base + |off| < 2^23", (long long)offs[t]);
        unit_check(ld && ld->off > -(1 << 23) && ld->off < (1 << 23) && total == offs[t], name,
                   "off %lld, total %lld", ld ? (long long)ld->off : -1, (long long)total);
        func_free(f);
    }
}

/* 16 unrolled shared accesses at constant distances: one base, offsets in the instructions,
 * the symbol's own offset folded too. */
static void one_base(void)
{
    Func *f = fresh();
    int t = ir_mov(f, PT_U32, SYM("%tid.x"));
    Ins *in = emit_ins(f, OP_MOVSYM, PT_U32);
    in->dst[0] = new_reg(f, RC_R); in->ndst = 1; in->src[0] = SYM("tilec_smem+256"); in->nsrc = 1;
    int s = in->dst[0];
    int base = ir_tern(f, OP_MAD, PT_U32, R(t), IMM(4), R(s));
    for (int i = 0; i < 16; i++) {
        int a = i ? ir_bin(f, OP_ADD, PT_U32, R(base), IMM(i * 1056)) : base;
        load(f, SP_SHARED, a, -1);
    }
    addr_split(arena, f, false);
    bool same = true, offs = true;
    for (int i = 0; i < 16; i++) {
        Ins *ld = mem(f, i);
        same &= ld && ld->src[0].reg == mem(f, 0)->src[0].reg;
        offs &= ld && ld->off == 256 + i * 1056;
    }
    unit_check(same, "one base: 16 shared loads read one register", "bases differ");
    unit_check(offs, "one base: offsets are 256 + i*1056", "off[1] %lld", mem(f, 1) ? (long long)mem(f, 1)->off : -1);
    unit_check(count_op(f, OP_ADD, -1) == 0, "one base: no address add left", "%d adds", count_op(f, OP_ADD, -1));
    func_free(f);
}

/* Loop-invariant base arithmetic moves out of the loop and identical bases merge -- where the
 * registers that keeps live longer cost no occupancy. With room: 256 threads, whose 8 blocks a
 * multiprocessor allow 32 registers a thread. Without: 1024 threads (2 blocks at up to 32) and
 * eight 64-bit values live across the loop body's bases (summed after them into the address of
 * one more load), so the loop is the peak, at the edge of the room: everything stays put. */
static void hoist_and_share(bool room)
{
    Func *f = fresh();
    if (!room)
        f->threads = 1024;
    int p = param64(f, "p"), n = param32(f, "n");
    int t = ir_mov(f, PT_U32, SYM("%tid.x"));
    int first = 0;
    int i = ir_mov(f, PT_S32, IMM(0));
    int top = new_label(f), out = new_label(f);
    ir_label(f, top);
    int c = ir_setp(f, CMP_GE, PT_S32, R(i), R(n));
    ir_bra(f, out, c, false);
    int v[8];
    for (int j = 0; !room && j < 8; j++)
        v[j] = ir_bin(f, OP_ADD, PT_S64, R(p), IMM(64 * j));
    for (int k = 0; k < 2; k++) {        /* the same base computed twice in the body */
        int w = ir_cvt(f, PT_S64, PT_S32, R(t));
        int a = ir_tern(f, OP_MAD, PT_S64, R(w), IMM(4), R(p));
        int b = ir_bin(f, OP_ADD, PT_S64, R(a), IMM(1024 * k));
        load(f, SP_GLOBAL, b, -1);
    }
    if (!room) {
        int sum = v[0];
        for (int j = 1; j < 8; j++)
            sum = ir_bin(f, OP_ADD, PT_S64, R(sum), R(v[j]));
        load(f, SP_GLOBAL, sum, -1);
    }
    Ins *in = emit_ins(f, OP_ADD, PT_S32);
    in->dst[0] = i; in->ndst = 1; in->src[0] = R(i); in->src[1] = IMM(1); in->nsrc = 2;
    ir_bra(f, top, -1, false);
    ir_label(f, out);
    addr_split(arena, f, false);
    int head = -1;
    for (int k = 0; k < f->code.n; k++)
        if (f->code.v[k].op == OP_LABEL && f->code.v[k].label == top)
            head = k;
    int inside = 0;
    for (int k = head; k < f->code.n; k++)
        inside += f->code.v[k].op == OP_MAD || f->code.v[k].op == OP_CVT;
    Ins *l0 = mem(f, first), *l1 = mem(f, first + 1);
    if (room) {
        unit_check(inside == 0, "hoist: invariant cvt and mad leave the loop", "%d left inside", inside);
        unit_check(l0 && l1 && l0->src[0].reg == l1->src[0].reg && l0->off == 0 && l1->off == 1024,
                   "share: both loads use one base, offsets 0 and 1024", "bases v%d v%d",
                   l0 ? l0->src[0].reg : -1, l1 ? l1->src[0].reg : -1);
    } else {
        unit_check(inside > 0, "pressure: no hoist out of a loop that is the kernel's peak", "all hoisted");
        unit_check(l0 && l1 && l0->off == 0 && l1->off == 1024, "pressure: the offsets still fold",
                   "offsets %lld %lld", l0 ? (long long)l0->off : -1, l1 ? (long long)l1->off : -1);
    }
    func_free(f);
}

int main(void)
{
    arena = arena_new();
    wrap_unknown();
    wrap_bounded();
    redefined_base();
    redefined_in_loop();
    guarded_def();
    negative();
    large();
    one_base();
    hoist_and_share(true);
    hoist_and_share(false);
    arena_free(arena);
    return unit_exit();
}
