/* ir_verify.c: checks that the thread-level IR is well formed, after lowering and after every
 * pass, in test builds (Options.verify_ir; compile.c calls it). A pass that breaks the IR then
 * fails where it broke it, naming the instruction, and not as wrong PTX, a ptxas error or a
 * crash several stages later.
 *
 * Each rule states what every correct kernel satisfies, so that the check never refuses one:
 * - form: each operation has the operand counts of its ops.h row, registers in range, the
 *   fields its row does not name left blank (so that no field carries a meaning the table does
 *   not know), labels defined once and every branch target defined, and registers of the size
 *   the instruction's type asks for where PTX fixes it (a predicate for guards and setp, 64 bits
 *   for descriptors and global addresses, the type's size for arithmetic). 32-bit registers of
 *   the two classes (%r, %f) are not told apart: PTX accepts a .b32 register for any 32-bit
 *   type, and the lowering moves bits between them.
 * - definitions: every register read is written before on every path from the entry (a forward
 *   "must be written" data flow over the code between labels, which tells a pipelined loop's
 *   first iteration from the others as race_check.c does). Guarded writes count as writes (see
 *   reads() for why), and registers loops carry are written before the loop.
 * - barriers: race_check proves the code as lowered race-free, from the register tensors and
 *   shared-memory symbols that only that code still has: const-reg-elim turns a stage array's
 *   reads into arithmetic whose stage race_check no longer recognises, arrays-to-local into
 *   .local loads, addr-split folds offsets into Ins.off, which race_check does not read. Run
 *   after any of them it reports races that are not there (on the examples: after every pass
 *   from const-reg-elim on), so it runs only where it is sound, as the race-check pass, on
 *   every compilation. What this file checks after every pass is that the proof still applies:
 *   the barriers, waits, labels and branches keep their order, and between two of them the same
 *   shared-memory accesses remain (passes may move loads and pure arithmetic inside a block,
 *   never a shared access across a barrier).
 *
 * Not checked: that physical registers given by regalloc never hold two live values at once,
 * what addresses and immediates hold, the values of ty on operations whose PTX has no type,
 * and anything about code no path from the entry reaches (it is never executed). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

typedef struct {
    Func *f;
    const char *after;
    bool failed;
} Verify;

/* One report per kernel and stage: after the first fault the rest follow from it. */
static bool fail(Verify *v, int i, const char *fmt, ...)
{
    if (v->failed)
        return false;
    v->failed = true;
    diag.nbugs++;
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    Func *f = v->f;
    Buf text = { 0 };
    int line = f->k ? f->k->loc.line : 0;
    if (i >= 0 && i < f->code.n) {
        ir_ins_text(&text, &f->code.v[i]);
        if (f->code.v[i].line > 0)
            line = f->code.v[i].line;
    }
    Loc at = { line, 1 };
    error_at(at, "kernel '%s': the IR after %s is malformed: %s, at instruction %d `%s`; this is a "
             "compiler bug, please report it", f->k && f->k->name ? f->k->name : "?", v->after, why, i,
             text.s ? text.s : "");
    buf_free(&text);
    return false;
}

/* ---- form */

static int class_bits(RegClass rc)
{
    static const int bits[RC_COUNT] = { 1, 16, 32, 32, 64 };
    return rc < RC_COUNT ? bits[rc] : 0;
}

/* The size of the register an operand of type t lives in (u8 in a 32-bit one). */
static int type_bits(PType t) { return class_bits(ptype_class(t)); }

static bool reg_ok(Verify *v, int r) { return r >= 0 && r < v->f->regs.n; }

static int reg_bits(Verify *v, int r) { return class_bits(v->f->regs.v[r].rc); }

/* A register operand (any other kind passes) of exactly `bits`, or of at least `bits` (loads and
 * stores may move a narrower type through a wider register). */
static bool src_bits(Verify *v, int i, int s, int bits, bool wider)
{
    const Opnd *o = &v->f->code.v[i].src[s];
    if (o->kind != O_REG)
        return true;
    int b = reg_bits(v, o->reg);
    if (b == bits || (wider && b > bits))
        return true;
    return fail(v, i, "source %d (v%d) is a %d-bit register where %s%d bits belong", s, o->reg, b,
                wider ? "at least " : "", bits);
}

/* Sources 0 .. n-1 of exactly bits[0 .. n-1]. */
static bool srcs_bits(Verify *v, int i, int n, const int *bits)
{
    for (int s = 0; s < n; s++)
        if (!src_bits(v, i, s, bits[s], false))
            return false;
    return true;
}

static bool dst_bits(Verify *v, int i, int d, int bits, bool wider)
{
    int r = v->f->code.v[i].dst[d], b = reg_bits(v, r);
    if (b == bits || (wider && b > bits))
        return true;
    return fail(v, i, "destination %d (v%d) is a %d-bit register where %s%d bits belong", d, r, b,
                wider ? "at least " : "", bits);
}

static bool src_kind(Verify *v, int i, int s, OpndKind k)
{
    if (v->f->code.v[i].src[s].kind == k)
        return true;
    return fail(v, i, "source %d is not %s", s, k == O_REG ? "a register" : k == O_IMM ? "an immediate"
                : "a symbol");
}

/* Whether the WGACC at i reads its accumulators: not after a fresh wgmma (scale-d 0). */
static bool wgacc_reads(const Func *f, int i)
{
    while (i > 0 && f->code.v[i].op == OP_WGACC)
        i--;
    return !(f->code.v[i].op == OP_WGMMA && f->code.v[i].fresh);
}

/* The operand counts ops.h gives, where they depend on other fields. */
static bool counts(Verify *v, int i)
{
    const Ins *in = &v->f->code.v[i];
    const OpInfo *op = &op_info[in->op];
    int nd = op->dsts, ns = op->srcs;
    if (nd == N_VEC)
        nd = in->vec;
    if (ns == N_VEC)
        ns = 1 + in->vec;
    if (ns == N_VAR) {
        switch (in->op) {
        case OP_ATOM: ns = in->redop == RED_CAS ? 3 : 2; break;
        case OP_CPASYNC: ns = in->nsrc == 2 ? 2 : 3; break;
        case OP_WGMMA: ns = in->a_regs ? 5 : 2; break;
        case OP_WGACC: ns = wgacc_reads(v->f, i) ? 4 : 0; break;
        case OP_WGHOLD: ns = in->nsrc >= 1 && in->nsrc <= 10 ? in->nsrc : 1; break;
        case OP_TMALOAD: ns = in->nsrc >= 5 && in->nsrc <= 5 + TMAP_MAX_OUTER + (in->count ? 1 : 0) ? in->nsrc : 5; break;
        case OP_TMASTORE: ns = in->nsrc >= 4 && in->nsrc <= 4 + TMAP_MAX_OUTER ? in->nsrc : 4; break;
        default: return fail(v, i, "ops.h gives no source count");
        }
    }
    if (in->ndst != nd)
        return fail(v, i, "%d destinations where %s has %d", in->ndst, op->name, nd);
    if (in->nsrc != ns)
        return fail(v, i, "%d sources where %s has %d", in->nsrc, op->name, ns);
    return true;
}

/* Fields the op's row does not name hold what emit_ins leaves there. */
static bool blank_fields(Verify *v, int i)
{
    const Ins *in = &v->f->code.v[i];
    int fl = op_info[in->op].fields;
    const char *field = NULL;
    if (!(fl & FL_OFF) && in->off)
        field = "off";
    else if (!(fl & FL_OFF2) && in->off2)
        field = "off2";
    else if (!(fl & FL_LABEL) && in->label)
        field = "label";
    else if (!(fl & FL_INFLIGHT) && in->inflight)
        field = "inflight";
    else if (!(fl & FL_ARRAY) && in->array)
        field = "array";
    else if (!(fl & FL_N) && in->n)
        field = "n";
    else if (!(fl & FL_COUNT) && in->count)
        field = "count";
    else if (!(fl & FL_BYTES) && in->bytes)
        field = "bytes";
    else if (!(fl & FL_CMP) && in->cmp)
        field = "cmp";
    else if (!(fl & FL_RND) && in->rnd)
        field = "rnd";
    else if (!(fl & FL_TRANS) && in->trans)
        field = "trans";
    else if (!(fl & FL_TRANS) && in->trans_a)
        field = "trans_a";
    else if (!(fl & FL_A_REGS) && in->a_regs)
        field = "a_regs";
    else if (!(fl & FL_FRESH) && in->fresh)
        field = "fresh";
    else if (!(fl & FL_VEC) && in->vec != 1)
        field = "vec";
    else if (!(fl & FL_SPACE) && in->space)
        field = "space";
    else if (!(fl & FL_REDOP) && in->redop)
        field = "redop";
    else if (!(fl & FL_TY2) && in->ty2)
        field = "ty2";
    else if (!(fl & FL_TEXT) && in->text)
        field = "text";
    else if (!(fl & FL_OWN) && in->own)
        field = "own";
    else if (!(fl & FL_TY3) && in->ty3)
        field = "ty3";
    else if (in->guard < 0 && in->guard_neg)
        field = "guard_neg";
    if (field)
        return fail(v, i, "field %s is set, which %s does not use (ops.h)", field, op_name(in->op));
    return true;
}

static bool operands_in_range(Verify *v, int i)
{
    const Ins *in = &v->f->code.v[i];
    if (in->ndst < 0 || in->ndst > 4 || in->nsrc < 0 || in->nsrc > 10)
        return fail(v, i, "%d destinations and %d sources", in->ndst, in->nsrc);
    if (in->ty >= PT_COUNT || in->ty2 >= PT_COUNT || in->ty3 >= PT_COUNT)
        return fail(v, i, "type %d, second type %d, third type %d", in->ty, in->ty2, in->ty3);
    for (int d = 0; d < in->ndst; d++)
        if (!reg_ok(v, in->dst[d]))
            return fail(v, i, "destination %d is register %d of %d", d, in->dst[d], v->f->regs.n);
    for (int s = 0; s < in->nsrc; s++) {
        const Opnd *o = &in->src[s];
        if (o->kind == O_REG && !reg_ok(v, o->reg))
            return fail(v, i, "source %d is register %d of %d", s, o->reg, v->f->regs.n);
        if (o->kind == O_SYM && !o->sym)
            return fail(v, i, "source %d is a symbol without a name", s);
        if (o->kind != O_REG && o->kind != O_IMM && o->kind != O_FIMM && o->kind != O_SYM)
            return fail(v, i, "source %d is empty", s);
    }
    if (in->guard >= 0) {
        if (!reg_ok(v, in->guard))
            return fail(v, i, "guard is register %d of %d", in->guard, v->f->regs.n);
        if (v->f->regs.v[in->guard].rc != RC_P)
            return fail(v, i, "guard v%d is not a predicate", in->guard);
    } else if (in->guard != -1) {
        return fail(v, i, "guard %d", in->guard);
    }
    return true;
}

/* Register sizes of the operations PTX writes from their type (ops.h spells them). */
static bool typed_sizes(Verify *v, int i)
{
    const Ins *in = &v->f->code.v[i];
    PType t = (PType)in->ty;
    int tb = type_bits(t);
    int db = in->op == OP_SETP ? 1 : in->op == OP_MULWIDE ? 2 * tb : tb;
    for (int d = 0; d < in->ndst; d++)
        if (!dst_bits(v, i, d, db, false))
            return false;
    for (int s = 0; s < in->nsrc; s++) {
        int sb = tb;
        if (in->op == OP_CVT)
            sb = type_bits((PType)in->ty2);
        else if (in->op == OP_SELP && s == 2)
            sb = 1;
        else if ((in->op == OP_SHL || in->op == OP_SHR) && s == 1)
            sb = 32;
        if (!src_bits(v, i, s, sb, false))
            return false;
    }
    if (in->op == OP_SETP && in->cmp > CMP_HS)
        return fail(v, i, "comparison %d", in->cmp);
    if (in->op == OP_CVT && in->rnd != RND_DEFAULT && in->rnd != RND_TF32_RNA && in->rnd != RND_TF32_RN &&
        !((in->rnd == RND_RNI || in->rnd == RND_RMI || in->rnd == RND_RPI) && in->ty == PT_F32 && in->ty2 == PT_F32))
        return fail(v, i, "rounding %d", in->rnd);
    return true;
}

static bool vec_of(Verify *v, int i, int a, int b, int c)
{
    int n = v->f->code.v[i].vec;
    return n == a || n == b || n == c ? true : fail(v, i, "vector width %d", n);
}

static bool array_op(Verify *v, int i)
{
    const Ins *in = &v->f->code.v[i];
    int a = in->array;
    if (a < 0 || a >= v->f->arrays.n)
        return fail(v, i, "register tensor %d of %d", a, v->f->arrays.n);
    const RegArray *arr = &v->f->arrays.v[a];
    if (arr->eliminated || arr->in_local)
        return fail(v, i, "register tensor %d is %s, yet still read or written", a,
                    arr->eliminated ? "eliminated" : "in .local memory");
    if (in->op == OP_ARRSET && (in->off < 0 || in->off >= arr->n))
        return fail(v, i, "element %lld of %d", (long long)in->off, arr->n);
    return in->op == OP_ARRSET ? src_bits(v, i, 0, 32, false) : dst_bits(v, i, 0, 32, false) &&
           src_bits(v, i, 0, 32, false);
}

/* A tensor-core product's B type (ty3) is A's (ty2), or the other of its 8-bit family: i8 x u8,
 * e4m3 x e5m2. */
static bool operand_types(Verify *v, int i)
{
    const Ins *in = &v->f->code.v[i];
    int a = in->ty2, b = in->ty3;
    bool ints = (a == PT_S8 || a == PT_U8) && (b == PT_S8 || b == PT_U8);
    bool fp8 = (a == PT_E4M3 || a == PT_E5M2) && (b == PT_E4M3 || b == PT_E5M2);
    if (a != b && !ints && !fp8)
        return fail(v, i, "product of %s and %s operands", ptype_suffix((PType)a), ptype_suffix((PType)b));
    return true;
}

/* The accumulators of a wgmma: N / 8 WGACC right after it, each reading and writing four. */
static bool wgmma_group(Verify *v, int i)
{
    Func *f = v->f;
    const Ins *in = &f->code.v[i];
    int N = in->n;
    if (N < 8 || N > 256 || N % 8)
        return fail(v, i, "wgmma with N = %d", N);
    int n = 0;
    while (i + 1 + n < f->code.n && f->code.v[i + 1 + n].op == OP_WGACC)
        n++;
    if (n != N / 8)
        return fail(v, i, "wgmma m64n%d followed by %d accumulator groups, not %d", N, n, N / 8);
    bool b8 = in->ty2 == PT_S8 || in->ty2 == PT_U8 || in->ty2 == PT_E4M3 || in->ty2 == PT_E5M2;
    if (!operand_types(v, i))
        return false;
    if (in->ty2 != PT_F16 && in->ty2 != PT_BF16 && in->ty2 != PT_B32 && !b8)
        return fail(v, i, "wgmma of type %s", ptype_suffix((PType)in->ty2));
    if (in->ty != ((in->ty2 == PT_S8 || in->ty2 == PT_U8) ? PT_S32 : PT_F32))
        return fail(v, i, "wgmma of %s operands accumulating in %s", ptype_suffix((PType)in->ty2),
                    ptype_suffix((PType)in->ty));
    if ((in->ty2 == PT_B32 || b8) && in->trans)
        return fail(v, i, "%s wgmma with B N-major (K-major only)", ptype_suffix((PType)in->ty2));
    if (b8 && in->a_regs)
        return fail(v, i, "8-bit wgmma with A from registers");
    if (in->trans_a && (in->ty2 == PT_B32 || b8 || in->a_regs))
        return fail(v, i, "%s wgmma with A M-major (16-bit A from a descriptor only)", ptype_suffix((PType)in->ty2));
    if (in->a_regs)
        return srcs_bits(v, i, 5, (const int[]){ 32, 32, 32, 32, 64 });
    return srcs_bits(v, i, 2, (const int[]){ 64, 64 });
}

static bool wgacc(Verify *v, int i)
{
    const Ins *in = &v->f->code.v[i];
    if (i == 0 || (in[-1].op != OP_WGMMA && in[-1].op != OP_WGACC))
        return fail(v, i, "accumulator group without its wgmma");
    for (int q = 0; q < 4; q++) {
        if (!dst_bits(v, i, q, 32, false))
            return false;
        if (in->nsrc == 0)     /* a fresh wgmma's: written only */
            continue;
        if (!src_kind(v, i, q, O_REG))
            return false;
        if (in->src[q].reg != in->dst[q])
            return fail(v, i, "accumulator %d reads v%d and writes v%d", q, in->src[q].reg, in->dst[q]);
    }
    return true;
}

/* What one instruction's row and operation ask of it. */
static bool check_ins(Verify *v, int i, const int *label_at)
{
    Func *f = v->f;
    const Ins *in = &f->code.v[i];
    if (in->op >= OP_COUNT_)
        return fail(v, i, "operation %d", in->op);
    if (!operands_in_range(v, i) || !counts(v, i) || !blank_fields(v, i))
        return false;
    if (op_info[in->op].ptx_int || op_info[in->op].ptx_float || in->op == OP_SETP || in->op == OP_CVT)
        return typed_sizes(v, i);
    int tb = type_bits((PType)in->ty);
    switch (in->op) {
    case OP_LD:
        if (!vec_of(v, i, 1, 2, 4) || !src_bits(v, i, 0, 32, true))
            return false;
        for (int d = 0; d < in->ndst; d++)
            if (!dst_bits(v, i, d, tb, true))
                return false;
        return true;
    case OP_ST:
        if (!vec_of(v, i, 1, 2, 4) || !src_bits(v, i, 0, 32, true))
            return false;
        for (int s = 1; s < in->nsrc; s++)
            if (!src_bits(v, i, s, tb, true))
                return false;
        return true;
    case OP_RED: case OP_ATOM:
        if (in->redop > RED_CAS)
            return fail(v, i, "reduction %d", in->redop);
        return src_bits(v, i, 0, 32, true) && src_bits(v, i, 1, tb, true) &&
               (in->ndst == 0 || dst_bits(v, i, 0, tb, true));
    case OP_SHFL:
        return src_kind(v, i, 1, O_IMM) && dst_bits(v, i, 0, 32, false) && src_bits(v, i, 0, 32, false);
    case OP_LDPARAM:
        return src_kind(v, i, 0, O_SYM) && dst_bits(v, i, 0, tb, true);
    case OP_MOVSYM:
        return src_kind(v, i, 0, O_SYM) && dst_bits(v, i, 0, tb, false);
    case OP_CVTA:
        return dst_bits(v, i, 0, 64, false) && src_bits(v, i, 0, 64, false);
    case OP_CVTAGEN:
        if (in->space != SP_GLOBAL && in->space != SP_LOCAL)
            return fail(v, i, "a generic address of space %d", in->space);
        return dst_bits(v, i, 0, 64, false) && src_bits(v, i, 0, 64, false);
    case OP_VPRINTF:
        if (in->guard >= 0)
            return fail(v, i, "a guarded call");
        return srcs_bits(v, i, 2, (const int[]){ 64, 64 });
    case OP_CPASYNC:
        return vec_of(v, i, 4, 8, 16) && srcs_bits(v, i, in->nsrc, (const int[]){ 32, 64, 32 });
    case OP_ARRSET: case OP_ARRGET:
        return array_op(v, i);
    case OP_LABEL: case OP_BRA:
        if (in->label < 0 || in->label >= f->nlabels)
            return fail(v, i, "label %d of %d", in->label, f->nlabels);
        if (in->op == OP_LABEL && label_at[in->label] != i)
            return fail(v, i, "label L%d defined twice", in->label);
        if (in->op == OP_BRA && label_at[in->label] < 0)
            return fail(v, i, "branch to L%d, which no instruction defines", in->label);
        return true;
    case OP_COMMENT:
        return in->text ? true : fail(v, i, "comment without text");
    case OP_LDMATRIX:
        if (!vec_of(v, i, 1, 2, 4) || !src_bits(v, i, 0, 32, false))
            return false;
        for (int d = 0; d < in->ndst; d++)
            if (!dst_bits(v, i, d, 32, false))
                return false;
        return true;
    case OP_MMA:
        if (in->ty2 != PT_F16 && in->ty2 != PT_BF16 && in->ty2 != PT_B32 && in->ty2 != PT_S8 &&
            in->ty2 != PT_U8 && in->ty2 != PT_E4M3 && in->ty2 != PT_E5M2)
            return fail(v, i, "mma of type %s", ptype_suffix((PType)in->ty2));
        if (!operand_types(v, i))
            return false;
        if (in->ty != ((in->ty2 == PT_S8 || in->ty2 == PT_U8) ? PT_S32 : PT_F32))
            return fail(v, i, "mma of %s operands accumulating in %s", ptype_suffix((PType)in->ty2),
                        ptype_suffix((PType)in->ty));
        for (int d = 0; d < 4; d++)
            if (!dst_bits(v, i, d, 32, false))
                return false;
        for (int s = 0; s < 10; s++)
            if (!src_bits(v, i, s, 32, false))
                return false;
        return true;
    case OP_WGMMA: return wgmma_group(v, i);
    case OP_WGACC: return wgacc(v, i);
    case OP_WGHOLD:
        for (int s = 0; s < in->nsrc; s++)
            if (!src_kind(v, i, s, O_REG))
                return false;
        return true;
    case OP_MBINIT: case OP_MBEXPECT: case OP_MBINVAL: case OP_MBARRIVE: case OP_MBARRIVEC:
        return src_bits(v, i, 0, 32, false);
    case OP_STCLUSTER:
        return srcs_bits(v, i, 2, (const int[]){ 32, 32 });
    case OP_MBWAIT:
        return dst_bits(v, i, 0, 1, false) && srcs_bits(v, i, 2, (const int[]){ 32, 32 });
    case OP_TMALOAD:
        if (in->count)   /* a multicast copy: the cta mask last */
            return srcs_bits(v, i, in->nsrc - 1, (const int[]){ 32, 64, 32, 32, 32, 32, 32, 32 }) &&
                   src_bits(v, i, in->nsrc - 1, 16, false);
        return srcs_bits(v, i, in->nsrc, (const int[]){ 32, 64, 32, 32, 32, 32, 32, 32 });
    case OP_TMASTORE:
        return srcs_bits(v, i, in->nsrc, (const int[]){ 32, 64, 32, 32, 32, 32, 32, 32 });
    case OP_F8WIDEN: case OP_F8NARROW:
        if (!in->text || (strcmp(in->text, "e4m3") && strcmp(in->text, "e5m2")))
            return fail(v, i, "fp8 conversion of format %s", in->text ? in->text : "(none)");
        return in->op == OP_F8WIDEN ? dst_bits(v, i, 0, 32, false) && src_bits(v, i, 0, 16, false)
                                    : dst_bits(v, i, 0, 16, false) && srcs_bits(v, i, 2, (const int[]){ 32, 32 });
    default:
        return true;
    }
}

static bool check_form(Verify *v, int *label_at)
{
    Func *f = v->f;
    for (int l = 0; l < f->nlabels; l++)
        label_at[l] = -1;
    for (int i = 0; i < f->code.n; i++) {
        const Ins *in = &f->code.v[i];
        if (in->op == OP_LABEL && in->label >= 0 && in->label < f->nlabels && label_at[in->label] < 0)
            label_at[in->label] = i;
    }
    for (int i = 0; i < f->code.n; i++)
        if (!check_ins(v, i, label_at))
            return false;
    return true;
}

/* ---- definitions */

static bool has(const uint64_t *s, int i) { return s[i >> 6] >> (i & 63) & 1; }
static void put(uint64_t *s, int i) { s[i >> 6] |= 1ull << (i & 63); }

/* The registers the definition check asks to be written before: sources and the guard. A guarded
 * instruction also reads its destinations (ir_uses: where the guard is false they keep their
 * value), but that value may be deliberately undefined: a masked load's register is garbage
 * where its guard is false, and the selp on the same guard that follows discards it. WGHOLD
 * makes no code, its reads only keep registers allocated: the pipelined loop's hold at the top
 * of each iteration names the previous iteration's fragments, which the first has not written. */
static int reads(const Ins *in, int *out)
{
    int n = 0;
    if (in->op == OP_WGHOLD)
        return 0;
    for (int s = 0; s < in->nsrc; s++)
        if (in->src[s].kind == O_REG)
            out[n++] = in->src[s].reg;
    if (in->guard >= 0)
        out[n++] = in->guard;
    return n;
}

/* The walk of the data flow, as race_check.c's: from instruction 0 and from each label to the
 * next label, through guarded branches, in one of two phases: inside a pipelined loop's first
 * iteration or not. A branch on a VReg.first_iter predicate goes one way in the first and the
 * other after it (the rotated matmul loads step 0's fragments in the first iteration and carries
 * them from the previous one after), so that the two are told apart; a stage counter (VReg.stage_S)
 * set to 0 enters the first iteration, set to anything else leaves it. */
typedef struct {
    Verify *v;
    int *gid;              /* per register: its bit in the sets, -1 when no walk reads it unwritten */
    int *stamp;            /* per register: the last walk start that wrote it */
    int *slot;             /* per instruction: its walk start's number (0 and labels), else -1 */
    size_t words;
    uint64_t *in[2];       /* per walk start and phase: written on every path to it */
    bool *seen[2];
    Vec(int) work;
    const int *label_at;
} Defs;

static void reach(Defs *d, int at, int phase, const uint64_t *cur)
{
    int k = d->slot[at];
    uint64_t *to = d->in[phase] + (size_t)k * d->words;
    bool changed = !d->seen[phase][k];
    for (size_t w = 0; w < d->words; w++)
        if (to[w] & ~cur[w]) {
            to[w] &= cur[w];
            changed = true;
        }
    if (changed) {
        d->seen[phase][k] = true;
        vec_push(&d->work, at << 1 | phase);
    }
}

/* One walk from start in a phase: the sets it reaches; with report, the first read of a register
 * not written on every path. */
static void walk(Defs *d, int start, int phase, uint64_t *cur, bool report)
{
    Func *f = d->v->f;
    int uses[16], id = start << 1 | phase;
    memcpy(cur, d->in[phase] + (size_t)d->slot[start] * d->words, sizeof(uint64_t) * d->words);
    for (int i = start; i < f->code.n; i++) {
        const Ins *in = &f->code.v[i];
        if (in->op == OP_LABEL && i != start) {
            if (!report)
                reach(d, i, phase, cur);
            return;
        }
        if (report) {
            int nu = reads(in, uses);
            for (int u = 0; u < nu; u++)
                if (d->stamp[uses[u]] != id && (d->gid[uses[u]] < 0 || !has(cur, d->gid[uses[u]]))) {
                    fail(d->v, i, "v%d is read where some path from the entry has not written it",
                         uses[u]);
                    return;
                }
        }
        for (int k = 0; k < in->ndst; k++) {
            int r = in->dst[k];
            if (report)
                d->stamp[r] = id;
            else if (d->gid[r] >= 0)
                put(cur, d->gid[r]);
            if (f->regs.v[r].stage_S)
                phase = in->op == OP_MOV && in->src[0].kind == O_IMM && in->src[0].i == 0;
        }
        bool taken = in->op == OP_BRA;
        bool falls = !(in->op == OP_RET || in->op == OP_BRA) || in->guard >= 0;
        if (in->op == OP_BRA && in->guard >= 0 && f->regs.v[in->guard].first_iter) {
            taken = (phase != 0) != in->guard_neg;
            falls = !taken;
        }
        if (taken && !report)
            reach(d, d->label_at[in->label], phase, cur);
        if (!falls)
            return;
    }
}

/* Only registers some walk reads before it writes them can be unwritten for a reason outside the
 * walk: the sets hold those alone (numbered densely), the rest are checked walk by walk. */
static bool check_defs(Verify *v, const int *label_at)
{
    Func *f = v->f;
    int n = f->code.n, nv = f->regs.n, ng = 0, uses[16];
    if (!n)
        return true;
    Defs d = { v, malloc(sizeof(int) * ((size_t)nv + 1)), malloc(sizeof(int) * ((size_t)nv + 1)),
               malloc(sizeof(int) * (size_t)n), 0, { NULL, NULL }, { NULL, NULL }, { 0 }, label_at };
    if (!d.gid || !d.stamp || !d.slot)
        die("out of memory");
    int nstarts = 0;
    for (int i = 0; i < n; i++)
        d.slot[i] = i == 0 || f->code.v[i].op == OP_LABEL ? nstarts++ : -1;
    for (int r = 0; r < nv; r++)
        d.gid[r] = d.stamp[r] = -1;
    for (int i = 0, start = 0; i < n; i++) {
        const Ins *in = &f->code.v[i];
        if (in->op == OP_LABEL)
            start = i;
        int nu = reads(in, uses);
        for (int u = 0; u < nu; u++)
            if (d.stamp[uses[u]] != start && d.gid[uses[u]] < 0)
                d.gid[uses[u]] = ng++;
        for (int k = 0; k < in->ndst; k++)
            d.stamp[in->dst[k]] = start;
    }
    d.words = (size_t)(ng + 63) / 64 + 1;
    /* every set starts full (the meet's identity) but the entry's, which is empty */
    for (int ph = 0; ph < 2; ph++) {
        d.in[ph] = malloc(sizeof(uint64_t) * d.words * (size_t)nstarts);
        d.seen[ph] = calloc((size_t)nstarts, 1);
        if (!d.in[ph] || !d.seen[ph])
            die("out of memory");
        memset(d.in[ph], 0xff, sizeof(uint64_t) * d.words * (size_t)nstarts);
    }
    uint64_t *cur = malloc(sizeof(uint64_t) * d.words);
    if (!cur)
        die("out of memory");
    memset(d.in[0], 0, sizeof(uint64_t) * d.words);
    d.seen[0][0] = true;
    vec_push(&d.work, 0);
    while (d.work.n) {
        int item = d.work.v[--d.work.n];
        walk(&d, item >> 1, item & 1, cur, false);
    }
    for (int r = 0; r < nv; r++)
        d.stamp[r] = -1;
    for (int i = 0; i < n && !v->failed; i++)
        for (int ph = 0; ph < 2 && !v->failed; ph++)
            if (d.slot[i] >= 0 && d.seen[ph][d.slot[i]])
                walk(&d, i, ph, cur, true);
    for (int ph = 0; ph < 2; ph++) {
        free(d.in[ph]);
        free(d.seen[ph]);
    }
    vec_free(&d.work);
    free(cur);
    free(d.gid);
    free(d.stamp);
    free(d.slot);
    return !v->failed;
}

/* ---- barriers */

/* A shared-memory access, as race_check.c's access_of counts them. */
static bool shared_access(const Ins *in)
{
    switch (in->op) {
    case OP_LD: case OP_ST: case OP_RED: case OP_ATOM: return in->space == SP_SHARED;
    case OP_LDMATRIX: case OP_CPASYNC: case OP_TMALOAD: case OP_TMASTORE: case OP_WGMMA: return true;
    default: return false;
    }
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185u;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44du;
    return x ^ x >> 33;
}

/* The sequence of barriers, waits, labels and branches, each with its operand that race_check
 * reads (the groups a wait leaves in flight, the label), and between two of them the multiset of
 * shared accesses (kind and whether only its own thread's bytes), folded into one number. */
static uint64_t sync_order(Func *f)
{
    uint64_t h = 0, accesses = 0;
    for (int i = 0; i < f->code.n; i++) {
        const Ins *in = &f->code.v[i];
        bool fence = op_has(in->op, OPF_SYNC) || op_has(in->op, OPF_JUMP) || in->op == OP_LABEL;
        if (shared_access(in))
            accesses += mix((uint64_t)in->op << 8 | (uint64_t)in->own << 4 | in->space);
        if (fence) {
            uint64_t key = (uint64_t)in->op << 48 ^ (uint64_t)(uint32_t)in->label << 16 ^
                           (uint64_t)in->inflight << 1 ^ (in->guard >= 0);
            h = mix(h ^ accesses) + mix(key);
            accesses = 0;
        }
    }
    return mix(h ^ accesses);
}

static bool check_barriers(Verify *v)
{
    Func *f = v->f;
    uint64_t h = sync_order(f);
    if (!f->sync_order_set) {
        f->sync_order = h;
        f->sync_order_set = true;
        return true;
    }
    if (h != f->sync_order)
        return fail(v, -1, "the barriers, waits, branches or shared-memory accesses are not those "
                    "the race check saw (one was added, removed or moved across another)");
    return true;
}

bool ir_verify(Func *f, const char *after)
{
    Verify v = { f, after, false };
    int *label_at = malloc(sizeof(int) * ((size_t)f->nlabels + 1));
    if (!label_at)
        die("out of memory");
    bool ok = check_form(&v, label_at) && check_defs(&v, label_at) && check_barriers(&v);
    free(label_at);
    return ok;
}
