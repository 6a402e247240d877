/* lower_mem.c: tensor windows (loads, stores, atomics) and shared tiles.
 * Every address is one base register per tile (per row group when the row pitch is a run-time
 * value) plus a constant byte offset that PTX carries as [reg+imm]. Edge masks are per row group
 * and per column chunk; masks the compiler can prove unnecessary are left out. */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "lower.h"

static int64_t gcd64(int64_t a, int64_t b)
{
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The k of a fact `X % k == 0` about s anywhere in a conjunction e (`a && b` states both), as the
 * least common multiple with m; `X == c` (a head dimension fixed at 64, say) makes X a multiple
 * of c. */
static int64_t multiple_in(Expr *e, Sym *s, int64_t m)
{
    if (e->kind == E_BINARY && e->op == OP_AND)
        return multiple_in(e->b, s, multiple_in(e->a, s, m));
    if (e->kind == E_BINARY && e->op == OP_EQ && e->a->kind == E_NAME && e->a->sym == s &&
        e->b->kind == E_INT && e->b->ival > 0) {
        int64_t k = e->b->ival < (1 << 30) ? e->b->ival : 1;
        return m / gcd64(m, k) * k;
    }
    if (e->kind == E_BINARY && e->op == OP_EQ && e->b->kind == E_INT && e->b->ival == 0 &&
        e->a->kind == E_BINARY && e->a->op == '%' && e->a->a->kind == E_NAME && e->a->a->sym == s &&
        e->a->b->kind == E_INT && e->a->b->ival > 0) {
        int64_t k = e->a->b->ival;
        m = m / gcd64(m, k) * k;
    }
    return m;
}

/* Divisibility facts from `assume(X % k == 0)`, alone or within a conjunction. */
int64_t size_multiple(Lower *c, Sym *s)
{
    int64_t m = 1;
    for (int i = 0; i < c->k->nassumes; i++)
        m = multiple_in(c->k->assumes[i]->cond, s, m);
    return m;
}

enum { BIG_MULTIPLE = 1 << 30 };

int64_t known_multiple(Lower *c, Expr *e)
{
    switch (e->kind) {
    case E_INT: return e->ival ? (e->ival < 0 ? -e->ival : e->ival) : BIG_MULTIPLE;
    case E_BINARY:
        if (e->op == '*') {
            int64_t m = known_multiple(c, e->a) * known_multiple(c, e->b);
            return m > BIG_MULTIPLE ? BIG_MULTIPLE : m;
        }
        if (e->op == '+' || e->op == '-')
            return gcd64(known_multiple(c, e->a), known_multiple(c, e->b));
        return 1;
    case E_NAME: {
        Sym *s = e->sym;
        SymInfo *si = s->lower;
        if (s->kind == SYM_SIZE)
            return size_multiple(c, s);
        if (s->kind == SYM_LOOP && si && si->loop) {
            int64_t step = si->loop->step && si->loop->step->kind == E_INT ? si->loop->step->ival : 1;
            return gcd64(known_multiple(c, si->loop->lo), step);
        }
        if (s->kind == SYM_LET && si && si->def && si->def->shape.rank == 0)
            return known_multiple(c, si->def);
        return 1;
    }
    default: return 1;
    }
}

/* The size symbol or constant of tensor dimension d. */
static bool extent_is(Sym *t, int d, Expr *e)
{
    Extent x = t->dim[d];
    if (x.size)
        return e->kind == E_NAME && e->sym == x.size;
    return e->kind == E_INT && e->ival == x.cval;
}

static Expr *strip_let(Expr *e)
{
    while (e->kind == E_NAME && e->sym->kind == SYM_LET && e->sym->lower && ((SymInfo *)e->sym->lower)->def &&
           ((SymInfo *)e->sym->lower)->def->shape.rank == 0)
        e = ((SymInfo *)e->sym->lower)->def;
    return e;
}

/* Is [start, start + width) inside tensor dimension d for every launch the assumes allow? */
bool window_in_bounds(Lower *c, Expr *tensor, int d, Expr *start, int64_t width)
{
    Sym *t = tensor->sym;
    Extent x = t->dim[d];
    int64_t xm = x.size ? size_multiple(c, x.size) : x.cval;
    start = strip_let(start);
    if (start->kind == E_INT && !x.size)
        return start->ival >= 0 && start->ival + (width ? width : 1) <= x.cval;
    int64_t w = width ? width : 1;
    /* for k in 0 .. K step W  with K % W == 0 */
    if (start->kind == E_NAME && start->sym->kind == SYM_LOOP) {
        Stmt *loop = ((SymInfo *)start->sym->lower)->loop;
        int64_t step = loop->step ? loop->step->ival : 1;
        return loop->lo->kind == E_INT && loop->lo->ival == 0 && extent_is(t, d, loop->hi) && step == w &&
               xm % w == 0;
    }
    /* block.a * W (or block.a alone for a single index) with grid(.., cdiv(X, W) or X, ..) */
    Expr *blk = NULL;
    int64_t mul = 1;
    if (start->kind == E_BLOCK)
        blk = start;
    else if (start->kind == E_BINARY && start->op == '*' && start->a->kind == E_BLOCK && start->b->kind == E_INT) {
        blk = start->a;
        mul = start->b->ival;
    }
    if (!blk || mul != w || blk->ival >= c->k->ngrid)
        return false;
    Expr *g = c->k->grid[blk->ival];
    if (w == 1)
        return extent_is(t, d, g);
    return g->kind == E_CALL && g->builtin == B_CDIV && g->nargs == 2 && extent_is(t, d, g->args[0]) &&
           g->args[1]->kind == E_INT && g->args[1]->ival == w && xm % w == 0;
}

/* ---- typed memory access of one chunk of vm elements */

PType mem_ptype(ElemType t)
{
    switch (t) {
    case TY_F32: case TY_TF32: return PT_F32;
    case TY_F16: case TY_BF16: return PT_B16;
    case TY_I32: return PT_S32;
    case TY_U32: return PT_U32;
    case TY_I64: return PT_S64;
    case TY_BOOL: case TY_U8: case TY_F8E4M3: case TY_F8E5M2: return PT_U8;
    case TY_I8: return PT_S8;
    default: return PT_B32;
    }
}

Opnd widen_held(Lower *c, ElemType t, int r)
{
    Func *f = c->f;
    switch (t) {
    case TY_F16: return R(ir_cvt(f, PT_F32, PT_F16, R(r)));
    case TY_BF16: {
        int w = ir_cvt(f, PT_U32, PT_U16, R(r));
        return R(ir_mov(f, PT_F32, R(ir_bin(f, OP_SHL, PT_B32, R(w), IMM(16)))));
    }
    case TY_BOOL: return R(ir_setp(f, CMP_NE, PT_U32, R(r), IMM(0)));
    case TY_F8E4M3: case TY_F8E5M2: return R(f8_widen(c, t, ir_cvt(f, PT_U16, PT_U32, R(r))));
    default: return R(r);    /* i8, u8: loaded sign- or zero-extended into 32 bits */
    }
}

/* The one instruction of the code so far that writes r, or NULL (none, or more than one). */
static const Ins *sole_def(const Func *f, int r)
{
    const Ins *d = NULL;
    for (int i = 0; i < f->code.n; i++) {
        const Ins *in = &f->code.v[i];
        for (int k = 0; k < in->ndst; k++)
            if (in->dst[k] == r) {
                if (d)
                    return NULL;
                d = in;
            }
    }
    return d;
}

/* The 16-bit value a held f32 value was widened from (widen_held's instructions, after the
 * rounding of an f16() or bf16() cast, narrow_slot), or -1. Storing that value stores the same
 * bits without converting twice more: conversions issue at 16 a cycle on a multiprocessor, and
 * `C = f16(acc)` of a 128 x 256 tile made 98304 of them where 32768 do. Each register must
 * have one writer, so that the pair always holds one value's two forms. Only the code so far is
 * searched: what comes later cannot write them either, as the cast's registers are fresh and a
 * var copies a value into registers of its own (which never match: their writer is a mov). */
static int widened_from(const Func *f, ElemType t, Opnd v)
{
    if (v.kind != O_REG)
        return -1;
    const Ins *d = sole_def(f, v.reg);
    if (t == TY_BF16) {
        /* mov.f32 (shl.b32 (cvt.u32.u16 b), 16) */
        if (!d || d->op != OP_MOV || d->src[0].kind != O_REG)
            return -1;
        d = sole_def(f, d->src[0].reg);
        if (!d || d->op != OP_SHL || d->src[0].kind != O_REG || d->src[1].kind != O_IMM || d->src[1].i != 16)
            return -1;
        d = sole_def(f, d->src[0].reg);
        if (!d || d->op != OP_CVT || d->ty != PT_U32 || d->ty2 != PT_U16 || d->src[0].kind != O_REG)
            return -1;
    } else if (!d || d->op != OP_CVT || d->ty != PT_F32 || d->ty2 != PT_F16 || d->rnd || d->src[0].kind != O_REG) {
        return -1;
    }
    int h = d->src[0].reg;
    const Ins *hd = sole_def(f, h);
    PType ht = t == TY_BF16 ? PT_BF16 : PT_F16;
    return hd && hd->op == OP_CVT && hd->ty == ht && hd->ty2 == PT_F32 ? h : -1;
}

static int narrow(Lower *c, ElemType t, Opnd v)
{
    Func *f = c->f;
    int h = t == TY_F16 || t == TY_BF16 ? widened_from(f, t, v) : -1;
    if (h >= 0)
        return h;
    switch (t) {
    case TY_F16: return ir_cvt(f, PT_F16, PT_F32, R(opnd_reg(c, v, PT_F32)));
    case TY_BF16: return ir_cvt(f, PT_BF16, PT_F32, R(opnd_reg(c, v, PT_F32)));
    case TY_BOOL: return ir_tern(f, OP_SELP, PT_U32, IMM(1), IMM(0), R(opnd_reg(c, v, PT_PRED)));
    case TY_F8E4M3: case TY_F8E5M2:
        return ir_cvt(f, PT_U32, PT_U16, R(f8_narrow(c, t, opnd_reg(c, v, PT_F32))));
    default: return opnd_reg(c, v, held_ptype(t));    /* i8, u8: the low byte is stored */
    }
}

/* Constant parts of 64-bit addresses, folded as the GPU computes them: modulo 2^64. An element
 * index times a constant stride can pass 2^63 (f32[2147483647, 2147483647]: no such tensor fits
 * a GPU, but the compiler must not overflow a signed integer computing its address). */
static int64_t wrap64(uint64_t v) { return v <= INT64_MAX ? (int64_t)v : -(int64_t)(UINT64_MAX - v) - 1; }
static int64_t add64(int64_t a, int64_t b) { return wrap64((uint64_t)a + (uint64_t)b); }
static int64_t mul64(int64_t a, int64_t b) { return wrap64((uint64_t)a * (uint64_t)b); }

/* Sixteen bytes as four 32-bit words, split into 16-bit or 8-bit elements: a register vector
 * holds at most four elements, and 8-byte loads of a 16-bit row move half a sector's worth per
 * instruction (4-byte loads of an 8-bit row, a quarter). */
static void mem_load_words(Lower *c, int space, ElemType t, int addr, int64_t off, int guard, Opnd fill, Opnd *out)
{
    Func *f = c->f;
    bool zero_fill = (fill.kind == O_IMM && fill.i == 0) || (fill.kind == O_FIMM && fill.f == 0 && !signbit(fill.f));
    Ins *in;
    int w[4];
    for (int i = 0; i < 4; i++)
        w[i] = guard >= 0 ? ir_mov(f, PT_B32, IMM(0)) : new_reg(f, RC_R);
    in = emit_ins(f, OP_LD, PT_B32);
    in->space = (uint8_t)space;
    in->vec = 4;
    for (int i = 0; i < 4; i++)
        in->dst[i] = w[i];
    in->ndst = 4;
    in->src[0] = R(addr);
    in->nsrc = 1;
    in->off = off;
    in->guard = guard;
    ir_naive_addr(f);
    if (type_size(t) == 1) {
        /* bytes, sign- or zero-extended as an 8-bit load's would be, then widened */
        PType ht = held_ptype(t), bt = t == TY_I8 ? PT_S32 : PT_U32;
        for (int i = 0; i < 16; i++) {
            int b = new_reg(f, RC_R);
            in = emit_ins(f, OP_BFE, bt);
            in->dst[0] = b;
            in->ndst = 1;
            in->src[0] = R(w[i / 4]);
            in->src[1] = IMM(8 * (i % 4));
            in->src[2] = IMM(8);
            in->nsrc = 3;
            Opnd v = widen_held(c, t, b);
            out[i] = guard >= 0 && !zero_fill ? R(ir_tern(f, OP_SELP, ht, v, fill, R(guard))) : v;
        }
        return;
    }
    for (int i = 0; i < 4; i++) {
        /* halves, each widened as a 16-bit load's would be: the chain sinks to its use
           (schedule.c), as a shift or mask of the shared word would not */
        int h0 = new_reg(f, RC_H), h1 = new_reg(f, RC_H);
        in = emit_ins(f, OP_UNPACK2, PT_B32);
        in->dst[0] = h0;
        in->dst[1] = h1;
        in->ndst = 2;
        in->src[0] = R(w[i]);
        in->nsrc = 1;
        Opnd lo = widen_held(c, t, h0), hi = widen_held(c, t, h1);
        if (guard >= 0 && !zero_fill) {
            lo = R(ir_tern(f, OP_SELP, PT_F32, lo, fill, R(guard)));
            hi = R(ir_tern(f, OP_SELP, PT_F32, hi, fill, R(guard)));
        }
        out[2 * i] = lo;
        out[2 * i + 1] = hi;
    }
}

static void mem_load(Lower *c, int space, ElemType t, int addr, int64_t off, int vm, int guard, Opnd fill, Opnd *out)
{
    Func *f = c->f;
    if (vm * type_size(t) == 16 && type_size(t) <= 2) {
        mem_load_words(c, space, t, addr, off, guard, fill, out);
        return;
    }
    PType mt = mem_ptype(t);
    bool direct = mt == held_ptype(t);   /* loaded straight into the held register */
    /* a zero fill is all-zero bits in every type: masked lanes keep a zeroed register, and
       need no select after widening */
    bool zero_fill = (fill.kind == O_IMM && fill.i == 0) || (fill.kind == O_FIMM && fill.f == 0 && !signbit(fill.f));
    int dst[4];
    for (int i = 0; i < vm; i++) {
        if (direct && guard >= 0)
            dst[i] = ir_mov(f, mt, fill);          /* masked lanes keep the fill value */
        else if (guard >= 0)
            /* defined before the guarded load, so it is not live (and held) from the kernel's
               entry for the load's sake: a guarded definition reads its register */
            dst[i] = ir_mov(f, mt == PT_U8 || mt == PT_S8 ? PT_U32 : mt, IMM(0));   /* no mov.u8: a byte sits in 32 bits */
        else
            dst[i] = new_reg(f, ptype_class(mt));
    }
    Ins *in = emit_ins(f, OP_LD, mt);
    in->space = (uint8_t)space;
    in->vec = (uint8_t)vm;
    for (int i = 0; i < vm; i++)
        in->dst[i] = dst[i];
    in->ndst = vm;
    in->src[0] = R(addr);
    in->nsrc = 1;
    in->off = off;
    in->guard = guard;
    ir_naive_addr(f);
    for (int i = 0; i < vm; i++) {
        if (direct) {
            out[i] = R(dst[i]);
            continue;
        }
        Opnd w = widen_held(c, t, dst[i]);
        if (guard >= 0 && !zero_fill) {
            PType ht = held_ptype(t);
            if (ht == PT_PRED) {
                int fl = opnd_reg(c, fill, PT_PRED);
                int a = ir_bin(f, OP_BAND, PT_PRED, R(guard), w);
                int ng = ir_un(f, OP_BNOT, PT_PRED, R(guard));
                int b = ir_bin(f, OP_BAND, PT_PRED, R(ng), R(fl));
                w = R(ir_bin(f, OP_BOR, PT_PRED, R(a), R(b)));
            } else {
                w = R(ir_tern(f, OP_SELP, ht, w, fill, R(guard)));
            }
        }
        out[i] = w;
    }
}

/* One word of two 16-bit values (f16 or bf16 held as f32), lo in the lower half. */
static int pack_pair(Lower *c, ElemType t, Opnd lo, Opnd hi)
{
    int w = new_reg(c->f, RC_R), l = opnd_reg(c, lo, PT_F32), h = opnd_reg(c, hi, PT_F32);
    Ins *p = emit_ins(c->f, OP_PACK2, t == TY_BF16 ? PT_BF16 : PT_F16);
    p->dst[0] = w;
    p->ndst = 1;
    p->src[0] = R(h);
    p->src[1] = R(l);
    p->nsrc = 2;
    return w;
}

/* One word of four 8-bit values, the first in the lowest byte. */
static int pack_bytes(Lower *c, ElemType t, const Opnd *v)
{
    int w = narrow(c, t, v[0]);
    for (int k = 1; k < 4; k++)
        w = ir_bfi(c->f, R(narrow(c, t, v[k])), w, 8 * k, 8);
    return w;
}

/* atomic_add of the bf16 value (16-bit register h) at global address addr + off before sm_90,
 * which has no bf16 atomic: a compare-and-swap loop on the aligned word holding it. Each try adds
 * to the element as the word holds it, rounds to bf16 (to nearest even) and swaps the word if no
 * other thread changed it meanwhile -- the same sum and rounding a red.add.noftz.bf16 makes. */
static void bf16_add_cas(Lower *c, int addr, int64_t off, int h, int guard)
{
    Func *f = c->f;
    int skip = new_label(f), again = new_label(f);
    if (guard >= 0) {      /* per-lane masks: the branches diverge */
        ir_bra(f, skip, guard, true);
        f->code.v[f->code.n - 1].divergent = true;
    }
    int ea = off ? ir_bin(f, OP_ADD, PT_S64, R(addr), IMM(off)) : addr;
    int word = ir_bin(f, OP_BAND, PT_B64, R(ea), IMM(~(int64_t)3));
    int low = ir_cvt(f, PT_U32, PT_U64, R(ea));
    int shift = ir_bin(f, OP_SHL, PT_B32, R(ir_bin(f, OP_BAND, PT_B32, R(low), IMM(2))), IMM(3));
    int keep = ir_un(f, OP_BNOT, PT_B32, R(ir_bin(f, OP_SHL, PT_B32, IMM(0xffff), R(shift))));
    Opnd v = widen_held(c, TY_BF16, h);
    int old = new_reg(f, RC_R);
    Ins *in = emit_ins(f, OP_LD, PT_B32);
    in->space = SP_GLOBAL;
    in->dst[0] = old;
    in->ndst = 1;
    in->src[0] = R(word);
    in->nsrc = 1;
    ir_label(f, again);
    int cur = ir_bin(f, OP_BAND, PT_B32, R(ir_bin(f, OP_SHR, PT_U32, R(old), R(shift))), IMM(0xffff));
    int curf = ir_mov(f, PT_F32, R(ir_bin(f, OP_SHL, PT_B32, R(cur), IMM(16))));
    int sum = ir_bin(f, OP_ADD, PT_F32, R(curf), v);
    int n16 = ir_cvt(f, PT_U32, PT_U16, R(ir_cvt(f, PT_BF16, PT_F32, R(sum))));
    int nw = ir_bin(f, OP_BOR, PT_B32, R(ir_bin(f, OP_BAND, PT_B32, R(old), R(keep))),
                    R(ir_bin(f, OP_SHL, PT_B32, R(n16), R(shift))));
    int prev = new_reg(f, RC_R);
    in = emit_ins(f, OP_ATOM, PT_B32);
    in->space = SP_GLOBAL;
    in->redop = RED_CAS;
    in->dst[0] = prev;
    in->ndst = 1;
    in->src[0] = R(word);
    in->src[1] = R(old);
    in->src[2] = R(nw);
    in->nsrc = 3;
    int lost = ir_setp(f, CMP_NE, PT_U32, R(prev), R(old));
    ir_bin_to(f, OP_BOR, PT_B32, old, R(prev), IMM(0));
    ir_bra(f, again, lost, false);
    f->code.v[f->code.n - 1].divergent = true;
    ir_label(f, skip);
}

static void mem_store(Lower *c, int space, int red, ElemType t, int addr, int64_t off, int vm, int guard, Opnd *vals)
{
    Func *f = c->f;
    PType mt = mem_ptype(t);
    if (vm * type_size(t) == 16 && type_size(t) <= 2) {
        /* sixteen bytes as four words: 16-bit elements packed in pairs (the lower element in the
           lower half), 8-bit ones each byte inserted at its place */
        int w[4];
        for (int i = 0; i < 4; i++)
            w[i] = type_size(t) == 2 ? pack_pair(c, t, vals[2 * i], vals[2 * i + 1]) : pack_bytes(c, t, &vals[4 * i]);
        Ins *in = emit_ins(f, OP_ST, PT_B32);
        in->space = (uint8_t)space;
        in->vec = 4;
        in->src[0] = R(addr);
        for (int i = 0; i < 4; i++)
            in->src[1 + i] = R(w[i]);
        in->nsrc = 5;
        in->off = off;
        in->guard = guard;
        ir_naive_addr(f);
        return;
    }
    if (red == RED_ADD && (t == TY_F16 || t == TY_BF16) && vm == 2 &&
        !(t == TY_BF16 && c->target->sm < 90)) {
        /* an aligned pair: one packed add, red.add.noftz.f16x2 / .bf16x2 */
        int pair = pack_pair(c, t, vals[0], vals[1]);
        Ins *in = emit_ins(f, OP_RED, t == TY_BF16 ? PT_BF16X2 : PT_F16X2);
        in->space = SP_GLOBAL;
        in->redop = RED_ADD;
        in->src[0] = R(addr);
        in->src[1] = R(pair);
        in->nsrc = 2;
        in->off = off;
        in->guard = guard;
        ir_naive_addr(f);
        return;
    }
    int v[4];
    for (int i = 0; i < vm; i++)
        v[i] = narrow(c, t, vals[i]);
    if (red == RED_ADD && t == TY_BF16 && c->target->sm < 90) {
        for (int i = 0; i < vm; i++)
            bf16_add_cas(c, addr, add64(off, (int64_t)i * 2), v[i], guard);
        return;
    }
    if (red == RED_ADD && (t == TY_F16 || t == TY_BF16)) {
        /* red.add.noftz.f16 (sm_70 on) / .bf16 (sm_90 on), each element rounded to the type
           first: the add itself rounds again */
        for (int i = 0; i < vm; i++) {
            Ins *in = emit_ins(f, OP_RED, t == TY_BF16 ? PT_BF16 : PT_F16);
            in->space = SP_GLOBAL;
            in->redop = RED_ADD;
            in->src[0] = R(addr);
            in->src[1] = R(v[i]);
            in->nsrc = 2;
            in->off = add64(off, (int64_t)i * 2);
            in->guard = guard;
            ir_naive_addr(f);
        }
        return;
    }
    if (red < 0) {
        Ins *in = emit_ins(f, OP_ST, mt);
        in->space = (uint8_t)space;
        in->vec = (uint8_t)vm;
        in->src[0] = R(addr);
        for (int i = 0; i < vm; i++)
            in->src[1 + i] = R(v[i]);
        in->nsrc = 1 + vm;
        in->off = off;
        in->guard = guard;
        ir_naive_addr(f);
        return;
    }
    for (int i = 0; i < vm; i++) {
        if (red == RED_MAX && t == TY_F32) {
            /* float max through integer atomics: for x >= 0 signed max on the bits orders like
             * the floats; for x < 0 unsigned min does */
            int pos = ir_setp(f, CMP_GE, PT_F32, R(v[i]), FIMM(0));
            int neg = ir_un(f, OP_BNOT, PT_PRED, R(pos));
            if (guard >= 0) {
                pos = ir_bin(f, OP_BAND, PT_PRED, R(pos), R(guard));
                neg = ir_bin(f, OP_BAND, PT_PRED, R(neg), R(guard));
            }
            int bits = ir_mov(f, PT_B32, R(v[i]));
            Ins *in = emit_ins(f, OP_RED, PT_S32);
            in->space = SP_GLOBAL;
            in->redop = RED_MAX;
            in->src[0] = R(addr);
            in->src[1] = R(bits);
            in->nsrc = 2;
            in->off = add64(off, i * 4);
            in->guard = pos;
            ir_naive_addr(f);
            in = emit_ins(f, OP_RED, PT_U32);
            in->space = SP_GLOBAL;
            in->redop = RED_MIN;
            in->src[0] = R(addr);
            in->src[1] = R(bits);
            in->nsrc = 2;
            in->off = add64(off, i * 4);
            in->guard = neg;
            ir_naive_addr(f);
            continue;
        }
        Ins *in = emit_ins(f, OP_RED, mt);
        in->space = SP_GLOBAL;
        in->redop = (uint8_t)red;
        in->src[0] = R(addr);
        in->src[1] = R(v[i]);
        in->nsrc = 2;
        in->off = add64(off, (int64_t)i * type_size(t));
        in->guard = guard;
        ir_naive_addr(f);
    }
}

/* ---- windows */

typedef struct {
    Sym *t;
    SymInfo *ti;
    int es;
    int nwin, wd[2];           /* tensor dims of tile dims 0 and 1 (-1: none) */
    Opnd start[MAX_TENSOR_RANK];
    int64_t width[MAX_TENSOR_RANK];
    bool inb[MAX_TENSOR_RANK]; /* proven in bounds */
    int vm;                    /* elements per memory access */
    int gd;                    /* the gathered dimension (tile dimension 0), -1: none ... */
    Expr *gexpr;               /* ... and its i32[W] tile of row indices */
} Access;

/* What access_init knows of window e without emitting code: all but the start registers. */
static void access_shape(Lower *c, Expr *e, Access *a)
{
    memset(a, 0, sizeof *a);
    a->t = e->sym;
    a->ti = e->sym->lower;
    a->es = type_size(a->t->type);
    a->wd[0] = a->wd[1] = -1;
    int wins[2], nw = 0;
    a->gd = -1;
    for (int d = 0; d < e->nidx; d++) {
        if (e->idx[d].gather) {
            a->gd = d;
            a->gexpr = e->idx[d].start;
            a->width[d] = e->idx[d].width;
            wins[nw++] = d;
            a->inb[d] = false;
            continue;
        }
        a->width[d] = e->idx[d].width_expr ? e->idx[d].width : 0;
        if (a->width[d])
            wins[nw++] = d;
        a->inb[d] = window_in_bounds(c, e->base, d, e->idx[d].start, a->width[d]);
    }
    a->nwin = nw;
    if (nw == 2) {
        a->wd[0] = wins[0];
        a->wd[1] = wins[1];
    } else if (nw == 1) {
        a->wd[1] = wins[0];
    }
}

static void access_init(Lower *c, Expr *e, Access *a)
{
    access_shape(c, e, a);
    for (int d = 0; d < e->nidx; d++)
        a->start[d] = d == a->gd ? IMM(0) : lower_expr(c, e->idx[d].start, NULL).v[0];
}

/* May the innermost tile dimension move in vectors of vm elements? */
/* Can the innermost tile dimension move in chunks of vm elements (aligned, wholly in or out)? */
static bool vector_ok(Lower *c, Expr *e, Access *a, int vm)
{
    int d1 = a->wd[1];
    if (d1 < 0 || a->width[d1] < vm)
        return false;
    SymInfo *ti = a->ti;
    if (!(ti->stride[d1].kind == O_IMM && ti->stride[d1].i == 1))
        return false;
    if (known_multiple(c, e->idx[d1].start) % vm)
        return false;
    /* every other stride a multiple of vm, so each row starts aligned */
    for (int d = 0; d < a->t->rank; d++) {
        if (d == d1)
            continue;
        int64_t m;
        if (!a->t->has_default_strides)
            m = a->t->stride[d].expr ? known_multiple(c, a->t->stride[d].expr)
                : a->t->stride[d].size ? size_multiple(c, a->t->stride[d].size) : a->t->stride[d].cval;
        else
            m = a->t->dim[d1].size ? size_multiple(c, a->t->dim[d1].size) : a->t->dim[d1].cval;
        if (m % vm)
            return false;
    }
    /* a chunk is wholly in or out of bounds */
    int64_t xm = a->t->dim[d1].size ? size_multiple(c, a->t->dim[d1].size) : a->t->dim[d1].cval;
    return a->inb[d1] || xm % vm == 0;
}

/* The widest chunk (at most max_bytes) the alignment facts allow. Register loads use vectors of at
 * most 4 elements; cp.async moves 16 bytes whatever the element type. */
static int vector_width_bytes(Lower *c, Expr *e, Access *a, int max_bytes)
{
    for (int vm = max_bytes / a->es; vm > 1; vm /= 2)
        if (vector_ok(c, e, a, vm))
            return vm;
    return 1;
}

static int vector_width(Lower *c, Expr *e, Access *a)
{
    if (a->gd >= 0 && a->wd[1] == a->gd)
        return 1;          /* an element gather: each element at its own index */
    /* 16 bytes where the element allows: 16-bit elements go as four packed words; 8-bit ones
       four a vector (bool stays in single bytes) */
    int max_elems = a->es == 8 ? 2 : a->es == 1 ? (type_is_8bit(a->t->type) ? 16 : 1) : a->es == 2 ? 8 : 4;
    int vm = vector_width_bytes(c, e, a, max_elems * a->es);
    /* bytes move as one register each (up to four) or as four words (sixteen): not eight */
    return a->es == 1 && vm == 8 ? 4 : vm;
}

static int and_pred(Lower *c, int a, int b);

/* The widest vector (at most `cap` elements) that vector_ok's conditions could allow on some
 * launch: the innermost dimension contiguous and no constant start or stride against it. *pred
 * is then the uniform test of the conditions the facts leave open, on the launch's values (the
 * start, the strides, the row length, the pointer's low bits). 1, with no code, where that is no
 * wider than `least`. */
static int runtime_vector_width(Lower *c, Expr *e, Access *a, int cap, int least, int *pred)
{
    Func *f = c->f;
    int d1 = a->wd[1];
    SymInfo *ti = a->ti;
    if (d1 < 0 || (a->gd >= 0 && d1 == a->gd) || !(ti->stride[d1].kind == O_IMM && ti->stride[d1].i == 1))
        return 1;
    /* the values that must be multiples of vm, each with what the facts know of it */
    Opnd val[MAX_TENSOR_RANK + 2];
    int64_t known[MAX_TENSOR_RANK + 2];
    int n = 0;
    val[n] = a->start[d1];
    known[n++] = known_multiple(c, e->idx[d1].start);
    int64_t xm = a->t->dim[d1].size ? size_multiple(c, a->t->dim[d1].size) : a->t->dim[d1].cval;
    if (a->t->has_default_strides || !a->inb[d1]) {
        /* default strides are multiples of the row length; a chunk must be wholly in or out */
        val[n] = ti->dim[d1];
        known[n++] = xm;
    }
    if (!a->t->has_default_strides)
        for (int d = 0; d < a->t->rank; d++) {
            if (d == d1)
                continue;
            val[n] = ti->stride[d];
            known[n++] = a->t->stride[d].expr ? known_multiple(c, a->t->stride[d].expr)
                : a->t->stride[d].size ? size_multiple(c, a->t->stride[d].size) : a->t->stride[d].cval;
        }
    int vm = cap;
    while (vm > 1 && a->width[d1] < vm)
        vm /= 2;
    for (int i = 0; i < n; i++)
        while (vm > 1 && val[i].kind == O_IMM && val[i].i % vm)
            vm /= 2;
    if (vm <= least)
        return 1;
    /* or the open values together: their low bits are zero together */
    Opnd bits = IMM(0);
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen |= val[j].kind == O_REG && val[j].reg == val[i].reg && known[j] % vm;
        if (known[i] % vm == 0 || val[i].kind == O_IMM || seen)
            continue;
        Opnd v = val[i];
        if (f->regs.v[v.reg].rc == RC_D)       /* a stride in 64 bits: its low word decides */
            v = R(ir_cvt(f, PT_U32, PT_U64, v));
        bits = bits.kind == O_IMM ? v : R(ir_bin(f, OP_BOR, PT_B32, bits, v));
    }
    int p = -1;
    if (bits.kind != O_IMM)
        p = ir_setp(f, CMP_EQ, PT_S32, R(ir_bin(f, OP_BAND, PT_B32, bits, IMM(vm - 1))), IMM(0));
    int low = ir_bin(f, OP_BAND, PT_B64, R(ti->ptr), IMM(vm * a->es - 1));
    *pred = and_pred(c, p, ir_setp(f, CMP_EQ, PT_U64, R(low), IMM(0)));
    return vm;
}

static Layout access_layout(Lower *c, Expr *e, Access *a, const Layout *want, Shape shape)
{
    if (a->nwin == 0)
        return layout_scalar(c->threads);
    int vm = vector_width(c, e, a);
    /* the wanted layout may replicate along a size-1 dimension (a broadcast view) */
    if (want && want->rank == shape.rank && !(want->bcast[0] && want->S[0] != 1) && !(want->bcast[1] && want->S[1] != 1) &&
        want->S[1] == (int)shape.dim[shape.rank - 1] && want->S[0] == (shape.rank == 2 ? (int)shape.dim[0] : 1))
        return *want;
    return layout_rowmajor(shape, c->threads, vm);
}

/* The per-thread addressing of a window in layout L: row-group bases and constant offsets. */
typedef struct {
    int base;                  /* byte address of the thread's first element (64-bit) */
    Opnd rowstep, colstep;     /* bytes between tile rows / tile columns: imm or 64-bit reg */
    int row0, col0;            /* element index of the thread's first row / column (s32) */
    int single_pred;           /* single-index bounds (uniform), -1 if none needed */
} Addr;

static Opnd mul_s64(Lower *c, Opnd a, Opnd b)
{
    if (a.kind == O_IMM && b.kind == O_IMM)
        return IMM(mul64(a.i, b.i));
    if (a.kind == O_IMM) {
        Opnd t = a;
        a = b;
        b = t;
    }
    if (b.kind == O_IMM && b.i == 1)
        return a;
    return R(ir_bin(c->f, OP_MUL, PT_S64, a, b));
}

static Opnd s64_of(Lower *c, Opnd x)
{
    if (x.kind == O_IMM)
        return x;
    return R(ir_cvt(c->f, PT_S64, PT_S32, x));
}

static Opnd stride64(Lower *c, Access *a, int d)
{
    SymInfo *ti = a->ti;
    if (ti->stride[d].kind == O_IMM)
        return ti->stride[d];
    (void)c;
    return R(ti->stride64[d]);
}

static void access_addr(Lower *c, Access *a, const Layout *L, Addr *ad)
{
    Func *f = c->f;
    ad->single_pred = -1;
    /* uniform element offset of the window origin plus the thread's own origin */
    Opnd off = IMM(0);
    int t0 = -1, t1 = -1;
    ad->row0 = ad->col0 = -1;
    for (int d = 0; d < a->t->rank; d++) {
        Opnd idx = a->start[d];
        if (d == a->gd)
            continue;          /* each row's own index: for_each_chunk adds it */
        if (d == a->wd[0] || d == a->wd[1]) {
            int td = d == a->wd[0] ? 0 : 1;
            int tc = thread_coord(c, L, td);
            if (td == 0) t0 = tc; else t1 = tc;
            int rel = L->bcast[td] ? -1 : td == 0 ? thread_row0(c, L, tc, PT_S32) : ir_bin(f, OP_MUL, PT_S32, R(tc), IMM(L->V[td]));
            int sreg = opnd_reg(c, idx, PT_S32);
            int i0 = rel < 0 ? sreg : ir_bin(f, OP_ADD, PT_S32, R(sreg), R(rel));
            if (td == 0) ad->row0 = i0; else ad->col0 = i0;
            idx = R(i0);
        } else if (!a->inb[d]) {
            int sreg = opnd_reg(c, idx, PT_S32);
            int p = ir_setp(f, CMP_LO, PT_U32, R(sreg), a->ti->dim[d]);
            ad->single_pred = ad->single_pred < 0 ? p : ir_bin(f, OP_BAND, PT_PRED, R(ad->single_pred), R(p));
        }
        Opnd term = mul_s64(c, s64_of(c, idx), stride64(c, a, d));
        if (term.kind == O_IMM && off.kind == O_IMM)
            off = IMM(add64(off.i, term.i));
        else if (term.kind == O_IMM && term.i == 0)
            ;
        else if (off.kind == O_IMM && off.i == 0)
            off = term;
        else
            off = R(ir_bin(f, OP_ADD, PT_S64, off.kind == O_IMM ? term : off, off.kind == O_IMM ? off : term));
    }
    (void)t0;
    (void)t1;
    if (off.kind == O_IMM)
        ad->base = ir_bin(f, OP_ADD, PT_S64, R(a->ti->ptr), IMM(mul64(off.i, a->es)));
    else
        ad->base = ir_tern(f, OP_MAD, PT_S64, off, IMM(a->es), R(a->ti->ptr));
    ad->rowstep = a->wd[0] >= 0 ? mul_s64(c, stride64(c, a, a->wd[0]), IMM(a->es)) : IMM(0);
    ad->colstep = a->wd[1] >= 0 ? mul_s64(c, stride64(c, a, a->wd[1]), IMM(a->es)) : IMM(0);
}

static int slot_of(const Layout *L, int o0, int i0, int o1, int i1)
{
    return ((o0 * L->V[0] + i0) * L->O[1] + o1) * L->V[1] + i1;
}

static int col_delta(const Layout *L, int o1, int i1) { return L->bcast[1] ? o1 * L->V[1] + i1 : o1 * L->T[1] * L->V[1] + i1; }

static int and_pred(Lower *c, int a, int b)
{
    if (a < 0) return b;
    if (b < 0) return a;
    return ir_bin(c->f, OP_BAND, PT_PRED, R(a), R(b));
}

/* The row indices of a gather (an i32[W] tile) in the rows' view of L, each thread the rows it
 * holds: computed here, or the ones a pipelined loop computed once before it (gather_hoist). */
static Tile gather_rows(Lower *c, Expr *g, const Layout *L, Layout *gview)
{
    Shape cs = { 2, { L->S[0], 1 } };
    *gview = broadcast_view(L, cs);
    for (int i = 0; i < c->ngathers; i++)
        if (c->gathers[i].index == g && layout_eq(&c->gathers[i].rows.L, gview))
            return c->gathers[i].rows;
    return to_layout(c, tile_expand(c, lower_expr(c, g, NULL), 1), gview);
}

/* Visits every memory chunk of a window access in layout L with its address, offset and guard. */
typedef void ChunkFn(Lower *c, void *ctx, int addr, int64_t off, int vm, int guard, int slot);

static void for_each_chunk(Lower *c, Access *a, const Layout *L, int vm, int extra_guard, ChunkFn *fn, void *ctx)
{
    Func *f = c->f;
    Addr ad;
    access_addr(c, a, L, &ad);
    int base_guard = and_pred(c, extra_guard, ad.single_pred);
    if (a->gd >= 0 && a->wd[1] == a->gd) {
        /* x[idx] (and X[idx, j]): the element at each index, out of range (negative too, as
           unsigned) masked; the gathered dimension's stride is colstep */
        Tile gi = to_layout(c, lower_expr(c, a->gexpr, NULL), L);
        for (int o1 = 0; o1 < L->O[1]; o1++)
            for (int i1 = 0; i1 < L->V[1]; i1++) {
                int slot = slot_of(L, 0, 0, o1, i1);
                int greg = opnd_reg(c, gi.v[slot], PT_S32);
                int rp = ir_setp(f, CMP_LO, PT_U32, R(greg), a->ti->dim[a->gd]);
                int addr = ir_tern(f, OP_MAD, PT_S64, s64_of(c, R(greg)), ad.colstep, R(ad.base));
                fn(c, ctx, addr, 0, 1, and_pred(c, base_guard, rp), slot);
            }
        return;
    }
    /* column chunk predicates and offsets */
    int ncol = L->O[1] * L->V[1] / vm;
    int *cpred = malloc(sizeof(int) * (size_t)ncol);
    int64_t *coff = malloc(sizeof(int64_t) * (size_t)ncol);
    int *caddr_delta = malloc(sizeof(int) * (size_t)ncol);
    for (int j = 0; j < ncol; j++) {
        int o1 = (j * vm) / L->V[1], i1 = (j * vm) % L->V[1];
        int cd = col_delta(L, o1, i1);
        caddr_delta[j] = cd;
        cpred[j] = -1;
        if (a->wd[1] >= 0 && !a->inb[a->wd[1]]) {
            int idx = cd ? ir_bin(f, OP_ADD, PT_S32, R(ad.col0), IMM(cd)) : ad.col0;
            cpred[j] = ir_setp(f, CMP_LO, PT_U32, R(idx), a->ti->dim[a->wd[1]]);
        }
        coff[j] = ad.colstep.kind == O_IMM ? mul64(cd, ad.colstep.i) : 0;
    }
    /* a gather: every row's index, in the rows' view of L (each thread the rows it holds) */
    Tile gi = { TY_I32, *L, NULL };
    Layout gview;
    if (a->gd >= 0)
        gi = gather_rows(c, a->gexpr, L, &gview);
    for (int o0 = 0; o0 < L->O[0]; o0++)
        for (int i0 = 0; i0 < L->V[0]; i0++) {
            int rd = layout_row(L, o0, i0);
            int rpred = -1;
            if (a->gd >= 0) {
                /* the row at its own index: out of range (negative too, as unsigned) is masked */
                Opnd g = gi.v[slot_index(&gview, o0, i0, 0, 0)];
                int greg = opnd_reg(c, g, PT_S32);
                int rp = ir_setp(f, CMP_LO, PT_U32, R(greg), a->ti->dim[a->gd]);
                int rg = and_pred(c, base_guard, rp);
                int raddr = ir_tern(f, OP_MAD, PT_S64, s64_of(c, R(greg)), ad.rowstep, R(ad.base));
                for (int j = 0; j < ncol; j++) {
                    int o1 = (j * vm) / L->V[1], i1 = (j * vm) % L->V[1];
                    int addr = raddr;
                    if (ad.colstep.kind != O_IMM && caddr_delta[j])
                        addr = ir_tern(f, OP_MAD, PT_S64, ad.colstep, IMM(caddr_delta[j]), R(raddr));
                    fn(c, ctx, addr, coff[j], vm, and_pred(c, rg, cpred[j]), slot_of(L, o0, i0, o1, i1));
                }
                continue;
            }
            if (a->wd[0] >= 0 && !a->inb[a->wd[0]]) {
                int idx = rd ? ir_bin(f, OP_ADD, PT_S32, R(ad.row0), IMM(rd)) : ad.row0;
                rpred = ir_setp(f, CMP_LO, PT_U32, R(idx), a->ti->dim[a->wd[0]]);
            }
            int rguard = and_pred(c, base_guard, rpred);
            int raddr = ad.base;
            int64_t roff = 0;
            if (rd) {
                if (ad.rowstep.kind == O_IMM)
                    roff = mul64(rd, ad.rowstep.i);
                else
                    raddr = ir_tern(f, OP_MAD, PT_S64, ad.rowstep, IMM(rd), R(ad.base));
            }
            for (int j = 0; j < ncol; j++) {
                int o1 = (j * vm) / L->V[1], i1 = (j * vm) % L->V[1];
                int addr = raddr;
                int64_t off = add64(roff, coff[j]);
                if (ad.colstep.kind != O_IMM && caddr_delta[j])
                    addr = ir_tern(f, OP_MAD, PT_S64, ad.colstep, IMM(caddr_delta[j]), R(raddr));
                int g = and_pred(c, rguard, cpred[j]);
                fn(c, ctx, addr, off, vm, g, slot_of(L, o0, i0, o1, i1));
            }
        }
    free(cpred);
    free(coff);
    free(caddr_delta);
}

typedef struct { ElemType t; Opnd fill; Opnd *out; } LoadCtx;

static void load_chunk(Lower *c, void *ctx, int addr, int64_t off, int vm, int guard, int slot)
{
    LoadCtx *lc = ctx;
    mem_load(c, SP_GLOBAL, lc->t, addr, off, vm, guard, lc->fill, &lc->out[slot]);
}

static Opnd fill_of(Lower *c, Expr *e)
{
    Expr *fl = e->fill;
    PType ht = held_ptype(e->type);
    (void)c;
    if (!fl)
        return ht == PT_F32 ? FIMM(0) : IMM(0);
    if (fl->kind == E_FLOAT)
        return ht == PT_F32 ? FIMM(fl->fval) : IMM((int64_t)fl->fval);
    if (fl->kind == E_UNARY && fl->a->kind == E_FLOAT)
        return FIMM(-fl->a->fval);
    return ht == PT_F32 ? FIMM((double)fl->ival) : IMM(fl->ival);
}

/* A column of a tile whose rows are contiguous in memory (the `.T` of a row, a view whose first
 * dimension has stride 1) is loaded as the row it is in memory: its access with the two windowed
 * dimensions exchanged, in the transposed layout, which holds each element in the same slot, so
 * that vectors run along the stored row. Each thread's rows (L.V[0] of them) must be a slot run,
 * as they are in a column (one slot per row). 0: not such a column, or no vector fits. */
static int column_as_row(Lower *c, Expr *e, Access *a, const Layout *L, Access *t, Layout *T)
{
    if (a->nwin != 2 || a->gd >= 0 || L->S[1] != 1 || L->O[1] * L->V[1] != 1 || L->V[0] < 2 || L->bcast[0] ||
        !layout_transpose(L, T))
        return 0;
    *t = *a;
    t->wd[0] = a->wd[1];
    t->wd[1] = a->wd[0];
    int vm = vector_width(c, e, t);
    while (vm > 1 && T->V[1] % vm)
        vm /= 2;
    return vm > 1 ? vm : 0;
}

/* A 2-D window of 16-bit rows read in pieces narrower than 16 bytes only because the row length
 * is not known to keep rows 16-byte aligned (the start and the window allow 8 elements): a GEMV
 * so reads 2 bytes at a time. Warned once per tensor, naming the assume that lifts it. */
static void note_row_alignment(Lower *c, Expr *e, Access *a)
{
    Sym *t = a->t;
    int d1 = a->wd[1];
    if (a->es != 2 || a->nwin != 2 || a->gd >= 0 || a->ti->warned_align || d1 != t->rank - 1 ||
        !t->has_default_strides || !t->dim[d1].size || a->width[d1] < 8 ||
        known_multiple(c, e->idx[d1].start) % 8)
        return;
    a->ti->warned_align = true;
    warning_at(e->loc, "'%s' is read %s at a time: its rows (of %s elements) are not known to "
               "start 16-byte aligned; assume(%s %% 8 == 0) lets them move in 16-byte pieces",
               t->name, vector_width(c, e, a) == 1 ? "2 bytes" : "in pieces under 16 bytes",
               t->dim[d1].size->name, t->dim[d1].size->name);
}

Tile load_window(Lower *c, Expr *e, const Layout *want)
{
    Access a;
    access_init(c, e, &a);
    Layout L = access_layout(c, e, &a, want, e->shape);
    Access ta;
    Layout TL;
    int tvm = column_as_row(c, e, &a, &L, &ta, &TL);
    if (tvm) {
        a.ti->vec_ok = true;
        Tile r = { e->type, L, NULL };
        r.v = arena_alloc(c->a, sizeof *r.v * (size_t)layout_slots(&L));
        LoadCtx lc = { a.t->type, fill_of(c, e), r.v };
        for_each_chunk(c, &ta, &TL, tvm, -1, load_chunk, &lc);
        return r;
    }
    int vm = a.nwin ? vector_width(c, e, &a) : 1;
    if (vm < 8)
        note_row_alignment(c, e, &a);
    while (vm > 1 && (L.V[1] % vm || L.bcast[1]))
        vm /= 2;
    if (vm > 1)
        a.ti->vec_ok = true;
    Tile r = { e->type, L, NULL };
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)layout_slots(&L));
    LoadCtx lc = { a.t->type, fill_of(c, e), r.v };
    for_each_chunk(c, &a, &L, vm, -1, load_chunk, &lc);
    r.type = e->type;
    return r;
}

/* A 2-D window whose first dimension is the contiguous one in memory (the `.T` of a row-major
 * window, a view with strides (1, K)), for a consumer that takes it in any layout (a matmul
 * operand it stages in shared memory): read along the stored rows, as the row-major layout of
 * the swapped window, each thread's vector a run of its first dimension; the slots are then
 * renumbered into the transposed layout, which holds the same elements. Read in the row-major
 * layout of the window as written, each thread's elements would be a column's, 2 bytes a load
 * and a warp's loads 32 rows apart. Other windows load as load_window does. */
Tile load_window_any_layout(Lower *c, Expr *e)
{
    Access a;
    access_shape(c, e, &a);      /* decided before any code: a fallback leaves none behind */
    if (a.nwin != 2 || a.gd >= 0 || e->shape.rank != 2)
        return load_window(c, e, NULL);
    Access ta = a;
    ta.wd[0] = a.wd[1];
    ta.wd[1] = a.wd[0];
    int tvm = vector_width(c, e, &ta);
    Shape ts = e->shape;
    ts.dim[0] = e->shape.dim[1];
    ts.dim[1] = e->shape.dim[0];
    Layout TL = layout_rowmajor(ts, c->threads, tvm), L;
    while (tvm > 1 && TL.V[1] % tvm)
        tvm /= 2;
    if (tvm <= vector_width(c, e, &a) || !layout_transpose(&TL, &L))
        return load_window(c, e, NULL);
    access_init(c, e, &ta);
    ta.wd[0] = a.wd[1];
    ta.wd[1] = a.wd[0];
    a.ti->vec_ok = true;
    int n = layout_slots(&TL);
    Opnd *tv = arena_alloc(c->a, sizeof *tv * (size_t)n);
    LoadCtx lc = { a.t->type, fill_of(c, e), tv };
    for_each_chunk(c, &ta, &TL, tvm, -1, load_chunk, &lc);
    Tile r = { e->type, L, NULL };
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
    for (int o0 = 0; o0 < TL.O[0]; o0++)
        for (int i0 = 0; i0 < TL.V[0]; i0++)
            for (int o1 = 0; o1 < TL.O[1]; o1++)
                for (int i1 = 0; i1 < TL.V[1]; i1++)
                    r.v[slot_of(&L, o1, i1, o0, i0)] = tv[slot_of(&TL, o0, i0, o1, i1)];
    return r;
}

/* The widths (elements a vector) of the windows an elementwise expression loads: false unless
 * every leaf is a window of exactly `shape` (no gather), a constant or a scalar, joined by casts
 * and arithmetic -- an expression whose every tile is loaded where it is used, so that any
 * layout costs it nothing. */
static bool stream_widths(Lower *c, Expr *e, Shape shape, int *vmin, int *vmax)
{
    switch (e->kind) {
    case E_INT: case E_FLOAT: case E_BOOL: case E_BLOCK:
        return true;
    case E_NAME:
        return e->shape.rank == 0 && !(e->sym->kind == SYM_VAR && e->sym->is_shared);
    case E_UNARY: case E_CAST:
        return stream_widths(c, e->a, shape, vmin, vmax);
    case E_BINARY:
        return e->op != OP_MATMUL && stream_widths(c, e->a, shape, vmin, vmax) &&
               stream_widths(c, e->b, shape, vmin, vmax);
    case E_INDEX: {
        if (e->shape.rank != shape.rank)
            return false;
        for (int d = 0; d < shape.rank; d++)
            if (e->shape.dim[d] != shape.dim[d])
                return false;
        Access a;
        access_shape(c, e, &a);
        if (a.nwin != shape.rank || a.gd >= 0)
            return false;
        int vm = vector_width(c, e, &a);
        *vmin = vm < *vmin ? vm : *vmin;
        *vmax = vm > *vmax ? vm : *vmax;
        return true;
    }
    default:
        return false;
    }
}

/* `T[...] = e` where e only loads windows of T's shape (stream_widths) and one of them moves
 * more elements a vector than T's stores can (an 8-bit or 16-bit tensor widened into f32: 16
 * elements a load, 4 a store): the row-major layout at the narrowest of the widths, so that every
 * access of a warp is one contiguous run. In the loads' own layout each thread would store 16
 * consecutive f32 as four 16-byte pieces 64 bytes apart, and a warp's store touch 2 KiB for 512
 * bytes written (2.2x slower than with 1-byte loads: an assume made it slower). false: the loads'
 * own layout is that already. */
bool store_stream_layout(Lower *c, Expr *target, Expr *rhs, Layout *out)
{
    if (target->kind != E_INDEX || target->shape.rank < 1)
        return false;
    Access a;
    access_shape(c, target, &a);
    if (a.nwin != target->shape.rank || a.gd >= 0)
        return false;
    int vt = vector_width(c, target, &a), vmin = vt, vmax = 0;
    if (!stream_widths(c, rhs, target->shape, &vmin, &vmax) || vmax <= vt)
        return false;
    *out = layout_rowmajor(target->shape, c->threads, vmin);
    return true;
}

typedef struct { ElemType t; Tile *v; int red; } StoreCtx;

static void store_chunk(Lower *c, void *ctx, int addr, int64_t off, int vm, int guard, int slot)
{
    StoreCtx *sc = ctx;
    mem_store(c, SP_GLOBAL, sc->red, sc->t, addr, off, vm, guard, &sc->v->v[slot]);
}

static void store_like(Lower *c, Expr *target, Tile v, int red)
{
    Access a;
    access_init(c, target, &a);
    if (target->shape.rank == 1 && v.L.rank == 2)
        v = tile_drop_unit_axis(c, v);
    Layout L;
    if (a.nwin == 0)
        L = layout_scalar(c->threads);
    else if (v.L.rank == target->shape.rank && v.L.S[1] == (int)target->shape.dim[target->shape.rank - 1] &&
             v.L.S[0] == (target->shape.rank == 2 ? (int)target->shape.dim[0] : 1) && !v.L.bcast[0] && !v.L.bcast[1])
        L = v.L;
    else
        L = layout_rowmajor(target->shape, c->threads, vector_width(c, target, &a));
    v = to_layout(c, v, &L);
    int vm = a.nwin && red < 0 ? vector_width(c, target, &a) : 1;
    /* 16-bit float adds go in aligned pairs where the pairs are wholly in or out */
    if (red == RED_ADD && (a.t->type == TY_F16 || a.t->type == TY_BF16) && a.nwin && vector_width(c, target, &a) >= 2)
        vm = 2;
    while (vm > 1 && (L.V[1] % vm || L.bcast[1]))
        vm /= 2;
    if (vm > 1)
        a.ti->vec_ok = true;
    int prim = primary_pred(c, &L);
    StoreCtx sc = { a.t->type, &v, red };
    /* where the layout gives a thread runs the facts cannot prove aligned (an epilogue whose row
       length no assume states), the stores are versioned on the launch's values: one uniform
       test, then the narrower stores the facts allow, or vector stores where the test holds */
    int wide = 1, aligned = -1;
    if (red < 0 && a.nwin && !L.bcast[1] && L.V[1] > vm) {
        /* 16 bytes a store; bytes four to a register (bool stays in single bytes) */
        int cap = a.es == 1 ? (type_is_8bit(a.t->type) ? 4 : 1) : 16 / a.es;
        while (cap > 1 && L.V[1] % cap)
            cap /= 2;
        if (cap > vm)
            wide = runtime_vector_width(c, target, &a, cap, vm, &aligned);
    }
    if (wide > vm) {
        int wide_path = new_label(c->f), done = new_label(c->f);
        ir_bra(c->f, wide_path, aligned, false);
        for_each_chunk(c, &a, &L, vm, prim, store_chunk, &sc);
        ir_bra(c->f, done, -1, false);
        ir_label(c->f, wide_path);
        for_each_chunk(c, &a, &L, wide, prim, store_chunk, &sc);
        ir_label(c->f, done);
        return;
    }
    for_each_chunk(c, &a, &L, vm, prim, store_chunk, &sc);
}

void store_window(Lower *c, Expr *target, Tile v) { store_like(c, target, v, -1); }

void store_smem_run(Lower *c, ElemType t, int addr, int64_t off, int vm, int guard, Opnd *vals)
{
    mem_store(c, SP_SHARED, -1, t, addr, off, vm, guard, vals);
}

void atomic_window(Lower *c, Expr *target, Tile v, int op) { store_like(c, target, v, op == '+' ? RED_ADD : RED_MAX); }

/* ---- shared tiles: row-major with a padded pitch */

static int smem_addr(Lower *c, Sym *s, const Layout *L)
{
    Func *f = c->f;
    SymInfo *si = s->lower;
    int es = type_size(s->type);
    int base = pipe_buffer(c, NULL, s);   /* a pipelined loop's current stage */
    if (base < 0)
        base = smem_base_reg(c, si->smem_off);
    int t0 = thread_coord(c, L, 0), t1 = thread_coord(c, L, 1);
    int r0 = thread_row0(c, L, t0, PT_U32);
    int c0 = L->bcast[1] ? ir_mov(f, PT_U32, IMM(0)) : ir_bin(f, OP_MUL, PT_U32, R(t1), IMM(L->V[1]));
    int lin = ir_tern(f, OP_MAD, PT_U32, R(r0), IMM(si->smem_ld), R(c0));
    return ir_tern(f, OP_MAD, PT_U32, R(lin), IMM(es), R(base));
}

static int smem_vec(Sym *s, const Layout *L)
{
    SymInfo *si = s->lower;
    int es = type_size(s->type);
    int vm = es == 8 ? 2 : es == 1 ? 1 : 4;
    while (vm > 1 && (L->V[1] % vm || si->smem_ld % vm || L->bcast[1]))
        vm /= 2;
    return vm;
}

Tile load_shared_var(Lower *c, Sym *s, const Layout *want)
{
    SymInfo *si = s->lower;
    Layout L;
    if (want && want->rank == s->shape.rank && want->S[1] == (int)s->shape.dim[s->shape.rank - 1] && !want->bcast[0] &&
        !want->bcast[1] && want->S[0] == (s->shape.rank == 2 ? (int)s->shape.dim[0] : 1))
        L = *want;
    else if (s->kind == SYM_VAR && si->has_hint)   /* a let kept here: the layout it was stored in */
        L = si->hint;
    else
        L = layout_rowmajor(s->shape, c->threads, 4);
    int addr = smem_addr(c, s, &L);
    int vm = smem_vec(s, &L);
    int es = type_size(s->type);
    Tile r = { s->type, L, NULL };
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)layout_slots(&L));
    for (int o0 = 0; o0 < L.O[0]; o0++)
        for (int i0 = 0; i0 < L.V[0]; i0++)
            for (int o1 = 0; o1 < L.O[1]; o1++)
                for (int i1 = 0; i1 < L.V[1]; i1 += vm) {
                    int64_t off = ((int64_t)layout_row(&L, o0, i0) * si->smem_ld + col_delta(&L, o1, i1)) * es;
                    mem_load(c, SP_SHARED, s->type, addr, off, vm, -1, IMM(0), &r.v[slot_of(&L, o0, i0, o1, i1)]);
                }
    return r;
}

/* Writes tile v (a 2-D shape) row-major at base with the given pitch, as element type t. */
void store_tile_smem(Lower *c, Tile v, int base, int pitch, ElemType t)
{
    Func *f = c->f;
    Layout L = v.L;
    if (L.bcast[0] || L.bcast[1] || L.rank == 0) {
        Shape sh = { L.rank ? L.rank : 2, { L.S[0], L.S[1] } };
        if (L.rank == 1)
            sh.dim[0] = L.S[1];
        L = layout_rowmajor(sh, c->threads, 4);
        v = to_layout(c, v, &L);
    }
    int es = type_size(t);
    int vm = es == 8 ? 2 : es == 1 ? 1 : 4;
    while (vm > 1 && (L.V[1] % vm || pitch % vm))
        vm /= 2;
    int t0 = thread_coord(c, &L, 0), t1 = thread_coord(c, &L, 1);
    int r0 = thread_row0(c, &L, t0, PT_U32);
    int c0 = ir_bin(f, OP_MUL, PT_U32, R(t1), IMM(L.V[1]));
    int lin = ir_tern(f, OP_MAD, PT_U32, R(r0), IMM(pitch), R(c0));
    int addr = ir_tern(f, OP_MAD, PT_U32, R(lin), IMM(es), R(base));
    int prim = primary_pred(c, &L);
    for (int o0 = 0; o0 < L.O[0]; o0++)
        for (int i0 = 0; i0 < L.V[0]; i0++)
            for (int o1 = 0; o1 < L.O[1]; o1++)
                for (int i1 = 0; i1 < L.V[1]; i1 += vm) {
                    int64_t off = ((int64_t)layout_row(&L, o0, i0) * pitch + col_delta(&L, o1, i1)) * es;
                    mem_store(c, SP_SHARED, -1, t, addr, off, vm, prim, &v.v[slot_of(&L, o0, i0, o1, i1)]);
                }
}

typedef struct {
    int sbase, pitch, es;
    const Layout *L;
    int guard;
    int swz;           /* swizzled tile (SWZ_*, swizzle.c): tbase, r0, c0 place the pieces */
    int tbase;         /* swizzled: the tile base; r0, c0: the thread's first row, column */
    int r0, c0;
    bool round;        /* round_window_tf32: the copied pieces rounded in place instead */
} AsyncCtx;

/* A copied f32 piece rounded in place to tf32 for wgmma's tensor cores, which truncate: to
 * nearest, ties to even, as its register operands are (lower_mma.c). */
static void round_piece_tf32(Lower *c, int saddr, int64_t soff, int words, int guard)
{
    Opnd w[4];
    int from = c->f->code.n;
    mem_load(c, SP_SHARED, TY_I32, saddr, soff, words, -1, IMM(0), w);
    for (int i = 0; i < words; i++)
        w[i] = R(round_tf32_even(c, w[i].reg));
    mem_store(c, SP_SHARED, -1, TY_I32, saddr, soff, words, guard, w);
    /* the pieces this thread copied: no other thread touches them before the barrier */
    for (int i = from; i < c->f->code.n; i++)
        c->f->code.v[i].own = c->f->code.v[i].op == OP_LD || c->f->code.v[i].op == OP_ST;
}

static void async_chunk(Lower *c, void *ctx, int addr, int64_t off, int vm, int mask, int slot)
{
    Func *f = c->f;
    AsyncCtx *ac = ctx;
    const Layout *L = ac->L;
    /* slot -> (o0, i0, o1, i1) */
    int i1 = slot % L->V[1], o1 = slot / L->V[1] % L->O[1];
    int i0 = slot / (L->V[1] * L->O[1]) % L->V[0], o0 = slot / (L->V[1] * L->O[1] * L->V[0]);
    int rd = layout_row(L, o0, i0), cd = col_delta(L, o1, i1);
    int64_t soff = ac->swz == SWZ_TURN ? ((int64_t)cd * ac->pitch + rd) * ac->es : ((int64_t)rd * ac->pitch + cd) * ac->es;
    int bytes = vm * ac->es;
    int sbase = ac->sbase;
    /* a whole number of swizzle periods from the thread's first piece: a constant; else placed anew */
    if (ac->swz && ac->swz != SWZ_TURN && !swz_delta(ac->swz, ac->pitch * ac->es, L->S[0], rd,
                              (int64_t)cd * ac->es, &soff)) {
        int row = ir_bin(f, OP_ADD, PT_U32, R(ac->r0), IMM(rd));
        int col = ir_tern(f, OP_MAD, PT_U32, R(ac->c0), IMM(ac->es), IMM((int64_t)cd * ac->es));
        int off = swz_offset_ir(c, ac->swz, row, col, bytes == 16, ac->pitch * ac->es, L->S[0]);
        sbase = ir_bin(f, OP_ADD, PT_U32, R(ac->tbase), R(off));
        soff = 0;
    }
    if (ac->round) {
        round_piece_tf32(c, sbase, soff, vm, ac->guard);
        return;
    }
    /* masked chunks copy nothing and zero-fill: edge tiles hold zeros, not stale data */
    Opnd size = mask < 0 ? IMM(bytes) : R(ir_tern(f, OP_SELP, PT_U32, IMM(bytes), IMM(0), R(mask)));
    int gaddr = off ? ir_bin(f, OP_ADD, PT_S64, R(addr), IMM(off)) : addr;
    int saddr = soff ? ir_bin(f, OP_ADD, PT_U32, R(sbase), IMM(soff)) : sbase;
    Ins *in = emit_ins(f, OP_CPASYNC, PT_B32);
    in->src[0] = R(saddr);
    in->src[1] = R(gaddr);
    in->src[2] = size;
    in->nsrc = 3;
    in->vec = (uint8_t)bytes;
    in->guard = ac->guard;
}

/* Copies window win into shared memory at base (row-major, pitch elements, swizzled when swz)
 * with cp.async, in the widest chunks alignment allows; guard (or -1) predicates the whole copy. */
/* The widest piece the alignment facts allow cp.async to move win in, into rows `pitch` elements
 * apart: vm elements. */
static int async_piece(Lower *c, Expr *win, Access *a, int pitch)
{
    int vm = vector_width_bytes(c, win, a, 16);
    while (vm > 1 && pitch % vm)
        vm /= 2;
    return vm;
}

int async_piece_bytes(Lower *c, Expr *win, int pitch)
{
    Access a;
    access_shape(c, win, &a);
    return async_piece(c, win, &a, pitch) * a.es;
}

/* Walks the pieces of win as copy_window_async moves them: copies them, or rounds them in place. */
static void walk_async_pieces(Lower *c, Expr *win, int base, int pitch, int swz, int guard, bool round)
{
    Func *f = c->f;
    Access a;
    access_init(c, win, &a);
    /* a tile turned around moves in single elements, each to its own row (SWZ_TURN: 4-byte ones):
       a warp's lanes read along the window's rows, 64 or 128 contiguous bytes, and write down
       the stage's columns, rows + 4 words apart (a 2-way bank conflict at 16 lanes of a row) */
    int vm = swz == SWZ_TURN ? 1 : async_piece(c, win, &a, pitch);
    if (vm * a.es < 4)
        die("copy_window_async: %d-byte pieces, which cp.async cannot move", vm * a.es);
    if (vm > 1)
        a.ti->vec_ok = true;
    /* a transposing copy's staging is written in its blocks of 4 rows (lower_transpose.c) */
    Layout L;
    if (swz != SWZ_BLK4)
        L = layout_rowmajor(win->shape, c->threads, vm);
    else if (!xpose_layout(win->shape, c->threads, &L))
        die("copy_window_async: no transposing layout for the window");
    int t0 = thread_coord(c, &L, 0), t1 = thread_coord(c, &L, 1);
    int r0 = thread_row0(c, &L, t0, PT_U32);
    int c0 = ir_bin(f, OP_MUL, PT_U32, R(t1), IMM(L.V[1]));
    AsyncCtx ac = { -1, pitch, a.es, &L, -1, swz, base, r0, c0, round };
    if (swz == SWZ_TURN) {
        int lin = ir_tern(f, OP_MAD, PT_U32, R(c0), IMM(pitch), R(r0));
        ac.sbase = ir_tern(f, OP_MAD, PT_U32, R(lin), IMM(a.es), R(base));
    } else if (swz) {
        int col = ir_bin(f, OP_MUL, PT_U32, R(c0), IMM(a.es));
        ac.sbase = ir_bin(f, OP_ADD, PT_U32, R(base), R(swz_offset_ir(c, swz, r0, col, vm * a.es == 16, pitch * a.es, L.S[0])));
    } else {
        int lin = ir_tern(f, OP_MAD, PT_U32, R(r0), IMM(pitch), R(c0));
        ac.sbase = ir_tern(f, OP_MAD, PT_U32, R(lin), IMM(a.es), R(base));
    }
    int prim = primary_pred(c, &L);
    ac.guard = guard < 0 ? prim : prim < 0 ? guard : ir_bin(f, OP_BAND, PT_PRED, R(guard), R(prim));
    for_each_chunk(c, &a, &L, vm, -1, async_chunk, &ac);
}

/* A gathered window a pipelined loop copies: its row indices, in the layout its copies want,
 * computed once before the loop (where they are read from registers in every iteration, not
 * moved between layouts again); forgotten when the loop is done (ngathers set back). */
void gather_hoist(Lower *c, Expr *win, int pitch)
{
    int gd = index_gather_dim(win);
    if (gd < 0 || c->ngathers == (int)(sizeof c->gathers / sizeof *c->gathers))
        return;
    Access a;
    access_shape(c, win, &a);
    Layout L = layout_rowmajor(win->shape, c->threads, async_piece(c, win, &a, pitch));
    Layout gview;
    Tile rows = gather_rows(c, win->idx[gd].start, &L, &gview);
    c->gathers[c->ngathers].index = win->idx[gd].start;
    c->gathers[c->ngathers].rows = rows;
    c->ngathers++;
}

void copy_window_async(Lower *c, Expr *win, int base, int pitch, int swz, int guard)
{
    walk_async_pieces(c, win, base, pitch, swz, guard, false);
}

/* Each thread rounds the pieces it copied: its own cp.async writes are visible to it once waited
 * for, and no other thread writes them. */
void round_window_tf32(Lower *c, Expr *win, int base, int pitch, int swz)
{
    walk_async_pieces(c, win, base, pitch, swz, -1, true);
}

void store_shared_var(Lower *c, Sym *s, Tile v)
{
    SymInfo *si = s->lower;
    ir_bar(c->f);      /* earlier readers of the tile are done */
    store_tile_smem(c, v, smem_base_reg(c, si->smem_off), si->smem_ld, s->type);
    ir_bar(c->f);      /* the new contents are visible */
}
