/* test_ir_verify.c: the IR verifier on hand-built code. Each rule gets code that keeps it, which
 * must pass, and code that breaks it, which must fail with a report naming the stage and the
 * instruction. The reports go to a temporary file, not to the terminal. */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"
#include "unit.h"

static Kernel kernel = { .name = "k", .loc = { 1, 1 } };
static Arena *arena;

static Func *fresh(void)
{
    Func *f = func_new(&kernel);
    f->arena = arena;
    f->threads = 128;
    return f;
}

static int tid(Func *f) { return ir_mov(f, PT_U32, SYM("%tid.x")); }

static int pred(Func *f, int r) { return ir_setp(f, CMP_LT, PT_U32, R(r), IMM(64)); }

static void st_shared(Func *f, int addr, int val)
{
    Ins *in = emit_ins(f, OP_ST, PT_B32);
    in->space = SP_SHARED;
    in->src[0] = R(addr);
    in->src[1] = R(val);
    in->nsrc = 2;
}

static int ld_global(Func *f, int addr, int guard)
{
    int d = new_reg(f, RC_R);
    Ins *in = emit_ins(f, OP_LD, PT_B32);
    in->dst[0] = d;
    in->ndst = 1;
    in->src[0] = R(addr);
    in->nsrc = 1;
    in->guard = guard;
    return d;
}

/* The report of the last failure, read back from diag.out. */
static char report[4096];

static bool verify(Func *f, const char *after)
{
    rewind(diag.out);
    int bugs = diag.nbugs;
    bool ok = ir_verify(f, after);
    fflush(diag.out);
    long n = ftell(diag.out);
    rewind(diag.out);
    size_t want = n > 0 && n < (long)sizeof report ? (size_t)n : sizeof report - 1;
    size_t got = fread(report, 1, want, diag.out);
    report[got] = 0;
    if (ok == (diag.nbugs != bugs))
        unit_check(false, after, "ir_verify returned %s but counted %d bugs", ok ? "true" : "false",
                   diag.nbugs - bugs);
    return ok;
}

/* Passes; the function is freed. */
static void pass(Func *f, const char *name)
{
    emit_ins(f, OP_RET, PT_B32);
    bool ok = verify(f, "lower");
    unit_check(ok, name, "refused: %s", report);
    func_free(f);
}

/* Fails naming `what` (part of the reason) and the instruction text `ins`. */
static void refuse(Func *f, const char *name, const char *what, const char *ins)
{
    emit_ins(f, OP_RET, PT_B32);
    bool ok = verify(f, "remat");
    bool named = strstr(report, what) && strstr(report, ins) && strstr(report, "after remat");
    unit_check(!ok && named, name, ok ? "passed" : "reported: %s", report);
    func_free(f);
}

/* ---- form */

static void form(void)
{
    Func *f = fresh();
    int t = tid(f);
    int s = ir_bin(f, OP_ADD, PT_U32, R(t), IMM(4));
    ir_bin(f, OP_MULWIDE, PT_U32, R(s), IMM(4));
    int p = pred(f, s);
    ir_tern(f, OP_SELP, PT_U32, R(s), IMM(0), R(p));
    ir_cvt(f, PT_F32, PT_U32, R(s));
    pass(f, "arithmetic of matching sizes passes");

    f = fresh();
    t = tid(f);
    emit_ins(f, OP_MOV, PT_U32)->dst[0] = 7;
    f->code.v[f->code.n - 1].ndst = 1;
    f->code.v[f->code.n - 1].src[0] = IMM(0);
    f->code.v[f->code.n - 1].nsrc = 1;
    refuse(f, "destination register out of range", "register 7 of", "MOV.u32 v7, 0");

    f = fresh();
    t = tid(f);
    ir_bin(f, OP_ADD, PT_U32, R(t), IMM(1));
    f->code.v[f->code.n - 1].nsrc = 1;
    refuse(f, "an add with one source", "1 sources where ADD has 2", "ADD.u32");

    f = fresh();
    t = tid(f);
    ir_bin(f, OP_ADD, PT_U32, R(t), IMM(1));
    f->code.v[f->code.n - 1].off = 8;
    refuse(f, "a field the operation's row does not name", "field off is set", "ADD.u32");

    f = fresh();
    t = tid(f);
    ir_bin(f, OP_ADD, PT_U32, R(t), IMM(1));
    f->code.v[f->code.n - 1].guard = t;
    refuse(f, "a guard that is no predicate", "is not a predicate", "@v0 ADD.u32");

    f = fresh();
    t = tid(f);
    int d = new_reg(f, RC_R);
    ir_bin_to(f, OP_ADD, PT_S64, d, R(t), IMM(1));
    refuse(f, "a 64-bit add into a 32-bit register", "32-bit register where 64 bits belong", "ADD.s64");

    f = fresh();
    t = tid(f);
    ir_setp(f, CMP_EQ, PT_U32, R(t), IMM(0));
    f->code.v[f->code.n - 1].dst[0] = t;
    refuse(f, "a setp into a 32-bit register", "where 1 bits belong", "SETP.u32");

    f = fresh();
    t = tid(f);
    ld_global(f, t, -1);
    f->code.v[f->code.n - 1].vec = 2;
    refuse(f, "a two-wide load with one destination", "1 destinations where LD has 2", "LD.b32.v2");

    f = fresh();
    ir_bra(f, new_label(f), -1, false);
    refuse(f, "a branch to a label nothing defines", "no instruction defines", "BRA.b32 L0");

    f = fresh();
    int l = new_label(f);
    ir_label(f, l);
    ir_label(f, l);
    refuse(f, "a label defined twice", "defined twice", "L0:");
}

/* print()'s call: vprintf(format, arguments) with generic addresses made by cvta */
static int generic(Func *f, const char *sym, int space)
{
    int a = ir_mov(f, PT_U64, IMM(0));
    f->code.v[f->code.n - 1].op = OP_MOVSYM;
    f->code.v[f->code.n - 1].src[0] = SYM(sym);
    int g = new_reg(f, RC_D);
    Ins *in = emit_ins(f, OP_CVTAGEN, PT_U64);
    in->space = (uint8_t)space;
    in->dst[0] = g;
    in->ndst = 1;
    in->src[0] = R(a);
    in->nsrc = 1;
    return g;
}

static void vprintf_call(Func *f, int fmt, int args)
{
    Ins *in = emit_ins(f, OP_VPRINTF, PT_B64);
    in->src[0] = R(fmt);
    in->src[1] = R(args);
    in->nsrc = 2;
}

static void print_ops(void)
{
    Func *f = fresh();
    vprintf_call(f, generic(f, "tilec_str0_k", SP_GLOBAL), generic(f, "tilec_print_args", SP_LOCAL));
    pass(f, "vprintf of a global format and local arguments passes");

    f = fresh();
    generic(f, "tilec_smem", SP_SHARED);
    refuse(f, "a generic address of shared memory", "a generic address of space 1", "CVTAGEN.u64");

    f = fresh();
    int fmt = generic(f, "tilec_str0_k", SP_GLOBAL), args = generic(f, "tilec_print_args", SP_LOCAL);
    int first = pred(f, tid(f));
    vprintf_call(f, fmt, args);
    f->code.v[f->code.n - 1].guard = first;
    refuse(f, "a guarded vprintf", "a guarded call", "VPRINTF.b64");

    f = fresh();
    fmt = generic(f, "tilec_str0_k", SP_GLOBAL);
    vprintf_call(f, fmt, tid(f));
    refuse(f, "vprintf of a 32-bit argument address", "32-bit register where 64 bits belong", "VPRINTF.b64");

    f = fresh();
    int x = ir_mov(f, PT_F32, FIMM(1.5));
    ir_cvt(f, PT_F64, PT_F32, R(x));
    pass(f, "an f32 widened to f64 passes");
}

/* wgmma and its accumulator groups */
static void wgmma(int groups, bool ok)
{
    Func *f = fresh();
    int da = ir_mov(f, PT_B64, IMM(0)), db = ir_mov(f, PT_B64, IMM(0));
    int acc[8];
    for (int i = 0; i < 8; i++)
        acc[i] = ir_mov(f, PT_F32, FIMM(0));
    Ins *in = emit_ins(f, OP_WGMMA, PT_F32);
    in->ty2 = in->ty3 = PT_F16;
    in->src[0] = R(da);
    in->src[1] = R(db);
    in->nsrc = 2;
    in->n = 16;
    for (int g = 0; g < groups; g++) {
        Ins *a = emit_ins(f, OP_WGACC, PT_B32);
        for (int q = 0; q < 4; q++) {
            a->dst[q] = acc[4 * (g % 2) + q];
            a->src[q] = R(acc[4 * (g % 2) + q]);
        }
        a->ndst = a->nsrc = 4;
    }
    if (ok)
        pass(f, "wgmma m64n16 with its two accumulator groups");
    else
        refuse(f, "wgmma m64n16 with one accumulator group", "followed by 1 accumulator groups, not 2",
               "WGMMA.f32");
}

/* a register tensor read after it was eliminated */
static void arrays(bool eliminated)
{
    Func *f = fresh();
    RegArray arr = { "stages", 2, RC_R, 1, false, eliminated };
    vec_push(&f->arrays, arr);
    int t = tid(f);
    for (int e = 0; e < 2; e++) {
        Ins *in = emit_ins(f, OP_ARRSET, PT_B32);
        in->src[0] = R(t);
        in->nsrc = 1;
        in->off = e;
    }
    int d = new_reg(f, RC_R);
    Ins *in = emit_ins(f, OP_ARRGET, PT_B32);
    in->dst[0] = d;
    in->ndst = 1;
    in->src[0] = R(t);
    in->nsrc = 1;
    if (eliminated)
        refuse(f, "a register tensor read after its elimination", "is eliminated", "ARRSET");
    else
        pass(f, "a register tensor set, then read");
}

/* ---- definitions */

static void straight_line(void)
{
    Func *f = fresh();
    int t = tid(f);
    int x = new_reg(f, RC_R);
    ir_bin(f, OP_ADD, PT_U32, R(t), R(x));
    refuse(f, "a read of a register nothing wrote", "v1 is read", "ADD.u32 v2, v0, v1");
}

/* x written on one side of an if (or both), read after it */
static void if_else(bool both)
{
    Func *f = fresh();
    int t = tid(f), p = pred(f, t), x = new_reg(f, RC_R);
    int els = new_label(f), end = new_label(f);
    ir_bra(f, els, p, true);
    ir_bin_to(f, OP_ADD, PT_U32, x, R(t), IMM(1));
    ir_bra(f, end, -1, false);
    ir_label(f, els);
    if (both)
        ir_bin_to(f, OP_ADD, PT_U32, x, R(t), IMM(2));
    ir_label(f, end);
    ir_bin(f, OP_ADD, PT_U32, R(x), IMM(3));
    if (both)
        pass(f, "a register written on both sides of an if");
    else
        refuse(f, "a register written on one side of an if", "v2 is read", "ADD.u32 v3, v2, 3");
}

/* a loop-carried sum: written before the loop (or only in the body, after its read) */
static void loop(bool init)
{
    Func *f = fresh();
    int t = tid(f), sum = new_reg(f, RC_R), i = new_reg(f, RC_R);
    ir_bin_to(f, OP_ADD, PT_U32, i, R(t), IMM(0));
    if (init)
        ir_bin_to(f, OP_ADD, PT_U32, sum, R(t), IMM(0));
    int head = new_label(f), exit = new_label(f);
    ir_label(f, head);
    int p = ir_setp(f, CMP_GE, PT_U32, R(i), IMM(8));
    ir_bra(f, exit, p, false);
    ir_bin_to(f, OP_ADD, PT_U32, sum, R(sum), R(i));
    ir_bin_to(f, OP_ADD, PT_U32, i, R(i), IMM(1));
    ir_bra(f, head, -1, false);
    ir_label(f, exit);
    if (init)
        pass(f, "a loop-carried value written before the loop");
    else
        refuse(f, "a loop-carried value the first iteration reads unwritten", "v1 is read",
               "ADD.u32 v1, v1, v2");
}

/* a masked load: its register is garbage where the guard is false, which the selp discards */
static void masked_load(void)
{
    Func *f = fresh();
    int t = tid(f), p = pred(f, t);
    int a = ir_cvt(f, PT_U64, PT_U32, R(t));
    int x = ld_global(f, a, p);
    ir_tern(f, OP_SELP, PT_U32, R(x), IMM(0), R(p));
    pass(f, "a masked load read through a selp on its guard");
}

/* The rotated pipelined loop: step 0's value is computed in the first iteration, which a
 * branch on a first-iteration predicate skips after, when the previous iteration left it. Only
 * with the predicate marked does the check know that the first iteration cannot skip. */
static void first_iteration(bool marked)
{
    Func *f = fresh();
    int t = tid(f), i = new_reg(f, RC_R), x = new_reg(f, RC_R);
    ir_bin_to(f, OP_ADD, PT_U32, i, R(t), IMM(0));
    int stage = ir_mov(f, PT_U32, IMM(0));
    f->regs.v[stage].stage_S = 2;
    int head = new_label(f), exit = new_label(f), skip = new_label(f);
    ir_label(f, head);
    int p = ir_setp(f, CMP_GE, PT_U32, R(i), IMM(8));
    ir_bra(f, exit, p, false);
    int first = ir_setp(f, CMP_EQ, PT_U32, R(i), R(t));
    f->regs.v[first].first_iter = marked;
    ir_bra(f, skip, first, true);
    ir_bin_to(f, OP_ADD, PT_U32, x, R(t), IMM(1));
    ir_label(f, skip);
    ir_bin(f, OP_ADD, PT_U32, R(x), IMM(2));
    ir_bin_to(f, OP_ADD, PT_U32, i, R(i), IMM(1));
    Ins *in = emit_ins(f, OP_SELP, PT_U32);
    in->dst[0] = stage;
    in->ndst = 1;
    in->src[0] = IMM(0);
    in->src[1] = IMM(1);
    in->src[2] = R(p);
    in->nsrc = 3;
    ir_bra(f, head, -1, false);
    ir_label(f, exit);
    if (marked)
        pass(f, "a value the first iteration computes and later ones keep");
    else
        refuse(f, "the same loop without the first-iteration mark", "v2 is read", "ADD.u32 v6, v2, 2");
}

/* ---- barriers */

/* Code race_check saw, then the same after a pass that moved a shared store across the barrier
 * (or left it in place). */
static void barrier_order(bool moved)
{
    Func *f = fresh();
    int t = tid(f);
    int a = ir_tern(f, OP_MAD, PT_U32, R(t), IMM(4), R(ir_mov(f, PT_U32, SYM("tilec_smem"))));
    st_shared(f, a, t);
    ir_bar(f);
    emit_ins(f, OP_RET, PT_B32);
    bool first = verify(f, "lower");
    if (moved) {
        Ins st = f->code.v[f->code.n - 3];
        f->code.v[f->code.n - 3] = f->code.v[f->code.n - 2];
        f->code.v[f->code.n - 2] = st;
    } else {
        ir_comment(f, "a comment moves nothing");
    }
    bool second = verify(f, "schedule");
    if (moved)
        unit_check(first && !second && strstr(report, "after schedule"),
                   "a shared store moved across a barrier", second ? "passed" : "reported: %s", report);
    else
        unit_check(first && second, "barriers and shared accesses in place", "refused: %s", report);
    func_free(f);
}

int main(void)
{
    arena = arena_new();
    diag_reset("test.tile", NULL, 0);
    diag.out = tmpfile();
    if (!diag.out)
        return 2;
    form();
    print_ops();
    wgmma(2, true);
    wgmma(1, false);
    arrays(false);
    arrays(true);
    straight_line();
    if_else(true);
    if_else(false);
    loop(true);
    loop(false);
    masked_load();
    first_iteration(true);
    first_iteration(false);
    barrier_order(false);
    barrier_order(true);
    fclose(diag.out);
    diag.out = NULL;
    arena_free(arena);
    return unit_exit();
}
