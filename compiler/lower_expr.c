/* lower_expr.c: expressions -> per-slot IR: constants, names, operators (immediates folded as the
 * hardware computes), casts and elementwise builtins. Windows, reductions and matmul go to their
 * own files. */
#include <math.h>
#include <string.h>
#include "lower.h"

/* ---- elementwise operations */

bool is_imm(Opnd o) { return o.kind == O_IMM || o.kind == O_FIMM; }

static bool same_opnd(Opnd a, Opnd b)
{
    if (a.kind != b.kind)
        return false;
    switch (a.kind) {
    case O_REG: return a.reg == b.reg;
    case O_IMM: return a.i == b.i;
    case O_FIMM: return a.f == b.f;
    default: return false;
    }
}

static double imm_val(Opnd o) { return o.kind == O_IMM ? (double)o.i : o.f; }

/* v as a value of integer type t: two's complement wrapping, as the hardware computes (an i32
 * immediate must print within i32). Folding integers through double would keep 53 bits. */
int64_t wrap_int(ElemType t, uint64_t v)
{
    if (t == TY_U8)
        return (int64_t)(v & 0xffu);
    if (t == TY_I8) {
        v &= 0xffu;
        return v >= 0x80u ? (int64_t)v - 0x100 : (int64_t)v;
    }
    if (t == TY_U32)
        return (int64_t)(v & 0xffffffffu);
    if (t == TY_I32) {
        v &= 0xffffffffu;
        return v >= 0x80000000u ? (int64_t)v - 0x100000000 : (int64_t)v;
    }
    return v <= INT64_MAX ? (int64_t)v : -(int64_t)(UINT64_MAX - v) - 1;
}

/* A float immediate converted to integer type t as cvt.rzi does: toward zero, clamped to the
 * type's range, NaN to 0. */
static int64_t float_to_int(ElemType t, double v)
{
    if (isnan(v))
        return 0;
    double lo = t == TY_U32 || t == TY_U8 ? 0 : t == TY_I32 ? INT32_MIN : t == TY_I8 ? -128 : -0x1p63;
    double hi = t == TY_U32 ? UINT32_MAX : t == TY_I32 ? INT32_MAX : t == TY_I8 ? 127 : t == TY_U8 ? 255 : 0x1p63;
    v = trunc(v);
    if (v <= lo)
        return (int64_t)lo;
    if (v >= hi)
        return t == TY_I64 ? INT64_MAX : (int64_t)hi;
    return (int64_t)v;
}

/* The layout of a broadcast result of shape s from operands a, b. */
static Layout result_layout(Lower *c, Shape s, Tile *a, Tile *b, const Layout *want)
{
    Layout L;
    int S[2] = { s.rank == 2 ? (int)s.dim[0] : 1, s.rank >= 1 ? (int)s.dim[s.rank - 1] : 1 };
    Tile *cand[2] = { a, b };
    for (int i = 0; i < 2; i++)
        if (cand[i] && cand[i]->L.rank == s.rank && cand[i]->L.S[0] == S[0] && cand[i]->L.S[1] == S[1])
            return cand[i]->L;
    if (want && want->rank == s.rank && want->S[0] == S[0] && want->S[1] == S[1])
        return *want;
    if (s.rank == 0)
        return layout_scalar(c->threads);
    L = layout_rowmajor(s, c->threads, 4);
    return L;
}

static int emit_to(Func *f, int op, PType t, Opnd a, Opnd b)
{
    return b.kind == O_NONE ? ir_un(f, op, t, a) : ir_bin(f, op, t, a, b);
}

/* One binary operation on one slot. Folds immediates. */
Opnd binop_slot(Lower *c, int op, ElemType t, Opnd a, Opnd b)
{
    Func *f = c->f;
    PType pt = held_ptype(t);
    bool fl = type_is_float(t);
    if (is_imm(a) && is_imm(b) && pt != PT_PRED && fl) {
        double x = imm_val(a), y = imm_val(b);
        switch (op) {
        case '+': return FIMM(x + y);
        case '-': return FIMM(x - y);
        case '*': return FIMM(x * y);
        default: break;
        }
    }
    if (a.kind == O_IMM && b.kind == O_IMM && pt != PT_PRED && !fl) {
        uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
        switch (op) {
        case '+': return IMM(wrap_int(t, x + y));
        case '-': return IMM(wrap_int(t, x - y));
        case '*': return IMM(wrap_int(t, x * y));
        case '&': return IMM(wrap_int(t, x & y));
        case '|': return IMM(wrap_int(t, x | y));
        case '^': return IMM(wrap_int(t, x ^ y));
        default: break;
        }
    }
    if (op == OP_LSHIFT || op == OP_RSHIFT) {
        /* PTX's count is a u32 whatever the width; counts of the width or more clamp to it (the
           value shifted out: 0, or the sign for a signed >>) */
        if (b.kind == O_REG && f->regs.v[b.reg].rc == RC_D)
            b = R(ir_cvt(f, PT_U32, PT_S64, R(ir_bin(f, OP_MIN, PT_U64, b, IMM(64)))));
        else if (b.kind == O_IMM)
            b = IMM(b.i < 0 || b.i > 64 ? 64 : b.i);
        if (a.kind != O_REG)
            a = R(opnd_reg(c, a, pt));
        return R(ir_bin(f, op == OP_LSHIFT ? OP_SHL : OP_SHR, pt, a, b));
    }
    switch (op) {
    case '+': return R(emit_to(f, OP_ADD, pt, a, b));
    case '-': return R(emit_to(f, OP_SUB, pt, a, b));
    case '*': return R(emit_to(f, OP_MUL, pt, a, b));
    case '/': return R(emit_to(f, OP_DIV, pt, a, b));
    case '%': return R(emit_to(f, OP_REM, pt, a, b));
    case OP_AND: return R(ir_bin(f, OP_BAND, PT_PRED, R(opnd_reg(c, a, PT_PRED)), R(opnd_reg(c, b, PT_PRED))));
    case OP_OR: return R(ir_bin(f, OP_BOR, PT_PRED, R(opnd_reg(c, a, PT_PRED)), R(opnd_reg(c, b, PT_PRED))));
    case '&': case '|': case '^':
        if (a.kind != O_REG) {   /* PTX wants a register first */
            Opnd s = a;
            a = b;
            b = s;
        }
        if (a.kind != O_REG)
            a = R(opnd_reg(c, a, pt));
        return R(ir_bin(f, op == '&' ? OP_BAND : op == '|' ? OP_BOR : OP_BXOR, pt, a, b));
    default: break;
    }
    die("lower: binary operator %d", op);
}

Opnd cmp_slot(Lower *c, int op, ElemType t, Opnd a, Opnd b)
{
    Cmp cmp;
    switch (op) {
    case '<': cmp = CMP_LT; break;
    case '>': cmp = CMP_GT; break;
    case OP_LE: cmp = CMP_LE; break;
    case OP_GE: cmp = CMP_GE; break;
    case OP_EQ: cmp = CMP_EQ; break;
    default: cmp = CMP_NE; break;
    }
    PType pt = held_ptype(t);
    if (pt == PT_PRED) {   /* bool == bool: xor */
        int x = ir_bin(c->f, OP_BXOR, PT_PRED, R(opnd_reg(c, a, PT_PRED)), R(opnd_reg(c, b, PT_PRED)));
        return cmp == CMP_EQ ? R(ir_un(c->f, OP_BNOT, PT_PRED, R(x))) : R(x);
    }
    if (is_imm(a)) {       /* PTX wants a register first: swap the comparison */
        Opnd tmp = a;
        a = b;
        b = tmp;
        static const Cmp swapped[] = { CMP_EQ, CMP_NE, CMP_GT, CMP_GE, CMP_LT, CMP_LE, CMP_HS, CMP_LO };
        cmp = swapped[cmp];
        if (is_imm(a))
            a = R(opnd_reg(c, a, pt));
    }
    return R(ir_setp(c->f, cmp, pt, a, b));
}

/* Applies fn slot by slot over operands broadcast to one layout. */
static bool same_shape(Shape x, Shape y)
{
    if (x.rank != y.rank)
        return false;
    for (int d = 0; d < x.rank; d++)
        if (x.dim[d] != y.dim[d])
            return false;
    return true;
}

/* Lowers the two operands of a broadcasting operation: the full-shape one first, so the other can
 * be produced directly in a matching broadcast view of its layout. */
static void lower_pair(Lower *c, Expr *x, Expr *y, Shape full, const Layout *want, Tile *tx, Tile *ty)
{
    bool x_full = same_shape(x->shape, full), y_full = same_shape(y->shape, full);
    if (!x_full && !y_full && want && want->rank == full.rank && full.rank == 2 &&
        want->S[0] == full.dim[0] && want->S[1] == full.dim[1]) {
        /* both broadcast (a row and a column making a mask): each in its view of the wanted
           layout, so the result is made there with no layout change */
        Layout vx = broadcast_view(want, x->shape), vy = broadcast_view(want, y->shape);
        *tx = lower_expr(c, x, x->shape.rank ? &vx : NULL);
        *ty = lower_expr(c, y, y->shape.rank ? &vy : NULL);
        return;
    }
    if (!x_full && y_full && x->shape.rank > 0) {
        *ty = lower_expr(c, y, want);
        Layout v = broadcast_view(&ty->L, x->shape);
        *tx = lower_expr(c, x, &v);
        return;
    }
    *tx = lower_expr(c, x, want);
    if (x_full && !y_full && y->shape.rank > 0 && tx->L.rank) {
        Layout v = broadcast_view(&tx->L, y->shape);
        *ty = lower_expr(c, y, &v);
        return;
    }
    *ty = lower_expr(c, y, tx->L.rank ? &tx->L : want);
}

/* The layout an operand of shape s is lowered in next to a full-shape one in layout full (NULL:
 * none): full's broadcast view when s is smaller (built in *buf), else full, else dflt. */
static const Layout *follow_full(const Layout *full, Shape s, Shape whole, Layout *buf, const Layout *dflt)
{
    if (!full || !full->rank || s.rank == 0 || same_shape(s, whole))
        return full ? full : dflt;
    *buf = broadcast_view(full, s);
    return buf;
}

/* A value the expression computes afresh, one register a slot that nothing else reads: arithmetic,
 * the elementwise math builtins, and a let read only here (`let s = Q @ K^T; let t = where(m, s,
 * -inf)`). A cast, a broadcast or a slice may hand back the registers of a let or var. */
static bool fresh_value(Lower *c, const Expr *e, const Tile *t)
{
    bool kind = (e->kind == E_BINARY && (e->op == '+' || e->op == '-' || e->op == '*' || e->op == '/')) ||
                (e->kind == E_UNARY && e->op == '-') ||
                (e->kind == E_CALL && builtin_info[e->builtin].kind == BK_MATH) ||
                (e->kind == E_NAME && mask_value_once(c, e->sym));
    int n = layout_slots(&t->L);
    if (!kind || t->L.bcast[0] || t->L.bcast[1])
        return false;
    for (int i = 0; i < n; i++) {
        if (t->v[i].kind != O_REG)
            return false;
        for (int j = 0; j < i; j++)
            if (t->v[j].reg == t->v[i].reg)
                return false;
    }
    return true;
}

/* where(m, a, b) with a computed afresh (fresh_value) and a mask that is all true where the
 * uniform predicate `all` is set (lower_mask.c): a branch taken alike by every thread past the
 * mask, which on the other side is made and applied into a's own registers. a is the result
 * either way, so the where costs no registers beyond a's. The scratch area may be read on one
 * side only, so after the join it counts as read, as after an `if`. */
static Tile select_in_place(Lower *c, Expr *e, Tile a, Tile b, int all)
{
    Func *f = c->f;
    b = to_layout(c, b, &a.L);
    int end = new_label(f);
    ir_bra(f, end, all, false);
    Layout mw;
    Tile m = lower_expr(c, e->args[0], follow_full(&a.L, e->args[0]->shape, e->shape, &mw, &a.L));
    m = to_layout(c, m, &a.L);
    PType pt = held_ptype(e->type);
    for (int i = 0; i < layout_slots(&a.L); i++) {
        Ins *in = emit_ins(f, OP_SELP, pt);
        in->src[0] = a.v[i];
        in->src[1] = b.v[i];
        in->src[2] = R(opnd_reg(c, m.v[i], PT_PRED));
        in->nsrc = 3;
        in->dst[0] = a.v[i].reg;
        in->ndst = 1;
    }
    ir_label(f, end);
    c->scratch_read = true;
    a.type = e->type;
    return a;
}

/* An earlier slot than i whose operands (a's, and b's unless b is NULL) are the same: slots
 * that repeat operands (a broadcast scalar, a row's value along its row) repeat the result.
 * Looked for among the first 64 only, so a tile of thousands of slots costs no quadratic
 * search. -1: none. */
static int repeated_slot(const Tile *a, const Tile *b, int i)
{
    for (int j = 0; i < 64 && j < i; j++)
        if (same_opnd(a->v[j], a->v[i]) && (!b || same_opnd(b->v[j], b->v[i])))
            return j;
    return -1;
}

static Tile lower_binary(Lower *c, Expr *e, const Layout *want)
{
    Tile a, b;
    lower_pair(c, e->a, e->b, e->shape, want, &a, &b);
    Layout L = result_layout(c, e->shape, &a, &b, want);
    a = to_layout(c, a, &L);
    b = to_layout(c, b, &L);
    bool cmp = e->op == '<' || e->op == '>' || e->op == OP_LE || e->op == OP_GE || e->op == OP_EQ || e->op == OP_NE;
    Tile r = { e->type, L, NULL };
    int n = layout_slots(&L);
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
    for (int i = 0; i < n; i++) {
        int j = repeated_slot(&a, &b, i);
        if (j >= 0) {
            r.v[i] = r.v[j];
            continue;
        }
        r.v[i] = cmp ? cmp_slot(c, e->op, e->a->type, a.v[i], b.v[i]) : binop_slot(c, e->op, e->type, a.v[i], b.v[i]);
    }
    return r;
}

static Opnd math_slot(Lower *c, Builtin b, ElemType t, Opnd x)
{
    Func *f = c->f;
    const double LOG2E = 1.4426950408889634, LN2 = 0.6931471805599453;
    if (b == B_ABS)
        return R(ir_un(f, OP_ABS, held_ptype(t), x));
    if (x.kind != O_REG)
        x = R(opnd_reg(c, x, PT_F32));
    switch (b) {
    case B_EXP: return R(ir_un(f, OP_EX2, PT_F32, R(ir_bin(f, OP_MUL, PT_F32, x, FIMM(LOG2E)))));
    case B_EXP2: return R(ir_un(f, OP_EX2, PT_F32, x));
    case B_LOG: return R(ir_bin(f, OP_MUL, PT_F32, R(ir_un(f, OP_LG2, PT_F32, x)), FIMM(LN2)));
    case B_LOG2: return R(ir_un(f, OP_LG2, PT_F32, x));
    case B_SQRT: return R(ir_un(f, OP_SQRT, PT_F32, x));
    case B_RSQRT: return R(ir_un(f, OP_RSQRT, PT_F32, x));
    case B_TANH: return R(ir_un(f, OP_TANH, PT_F32, x));
    case B_SIGMOID: {
        int e = ir_un(f, OP_EX2, PT_F32, R(ir_bin(f, OP_MUL, PT_F32, x, FIMM(-LOG2E))));
        return R(ir_un(f, OP_RCP, PT_F32, R(ir_bin(f, OP_ADD, PT_F32, R(e), FIMM(1.0)))));
    }
    case B_FLOOR: return round_f32(c, RND_RMI, x);
    case B_CEIL: return round_f32(c, RND_RPI, x);
    case B_ROUND: return round_f32(c, RND_RNI, x);
    case B_ERF: case B_LOG1P: case B_EXPM1: return math_seq_slot(c, b, x);
    default: die("lower: builtin %d", b);
    }
}

static Tile map_unary(Lower *c, Tile x, ElemType rt, Opnd (*fn)(Lower *, Builtin, ElemType, Opnd), Builtin b)
{
    Tile r = { rt, x.L, NULL };
    int n = layout_slots(&x.L);
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
    for (int i = 0; i < n; i++)
        r.v[i] = (i > 0 && x.v[i].kind == O_REG && x.v[i].reg == x.v[0].reg) ? r.v[0] : fn(c, b, x.type, x.v[i]);
    return r;
}

/* The fp8 conversions are sm_89 instructions (cvt with .e4m3x2 / .e5m2x2); said once a kernel. */
static void f8_target(Lower *c, ElemType t)
{
    if (c->target->sm >= 89 || c->failed)
        return;
    error_at(c->loc, "%s values need sm_89 or later (the conversions to and from f32 are sm_89 "
             "instructions); this kernel is compiled for %s: use --arch=sm_89, sm_90 or sm_90a",
             type_name(t), c->target->name);
    c->failed = true;
}

static const char *f8_format(ElemType t) { return t == TY_F8E5M2 ? "e5m2" : "e4m3"; }

int f8_widen(Lower *c, ElemType t, int h)
{
    Func *f = c->f;
    f8_target(c, t);
    int pair = new_reg(f, RC_R), lo = new_reg(f, RC_H), hi = new_reg(f, RC_H);
    Ins *in = emit_ins(f, OP_F8WIDEN, PT_B32);
    in->text = f8_format(t);
    in->dst[0] = pair;
    in->ndst = 1;
    in->src[0] = R(h);
    in->nsrc = 1;
    in = emit_ins(f, OP_UNPACK2, PT_B32);
    in->dst[0] = lo;
    in->dst[1] = hi;
    in->ndst = 2;
    in->src[0] = R(pair);
    in->nsrc = 1;
    return ir_cvt(f, PT_F32, PT_F16, R(lo));     /* every fp8 value is an f16 value */
}

int f8_narrow(Lower *c, ElemType t, int x)
{
    Func *f = c->f;
    f8_target(c, t);
    int h = new_reg(f, RC_H);
    Ins *in = emit_ins(f, OP_F8NARROW, PT_B16);
    in->text = f8_format(t);
    in->dst[0] = h;
    in->ndst = 1;
    in->src[0] = FIMM(0);     /* the upper byte, unused */
    in->src[1] = R(x);
    in->nsrc = 2;
    return h;
}

/* Rounds a held f32 value to f16/bf16/fp8 precision and widens it back. */
static Opnd narrow_slot(Lower *c, ElemType to, Opnd x)
{
    Func *f = c->f;
    int xr = opnd_reg(c, x, PT_F32);
    if (type_is_f8(to))
        return R(f8_widen(c, to, f8_narrow(c, to, xr)));
    if (to == TY_F16) {
        int h = ir_cvt(f, PT_F16, PT_F32, R(xr));
        return R(ir_cvt(f, PT_F32, PT_F16, R(h)));
    }
    /* bf16: round to nearest even by cvt, widen by shifting the bits up */
    return widen_held(c, TY_BF16, ir_cvt(f, PT_BF16, PT_F32, R(xr)));
}

/* An i32 or u32 held value (or one of an integer type narrower or wider) as i8 or u8 -- wrapped
 * to the low byte, as C converts -- widened back as the type is held. */
static Opnd wrap_byte(Lower *c, ElemType to, Opnd x)
{
    Func *f = c->f;
    int r = opnd_reg(c, x, PT_S32);
    if (to == TY_U8)
        return R(ir_bin(f, OP_BAND, PT_B32, R(r), IMM(0xff)));
    return R(ir_bin(f, OP_SHR, PT_S32, R(ir_bin(f, OP_SHL, PT_B32, R(r), IMM(24))), IMM(24)));
}

Opnd cast_slot(Lower *c, ElemType to, ElemType from, Opnd x)
{
    Func *f = c->f;
    PType pt = held_ptype(to), pf = held_ptype(from);
    if (to == TY_TF32)
        return R(ir_mov(f, PT_F32, R(round_tf32_value(c, opnd_reg(c, x, PT_F32)))));
    /* to i8 or u8 from a register: a float truncates toward zero, saturating at the type's range
       (NaN to 0), as cvt.rzi to an 8-bit integer does; an integer wraps */
    if ((to == TY_I8 || to == TY_U8) && !is_imm(x) && pf != PT_PRED) {
        if (type_is_float(from)) {
            Opnd w = cast_slot(c, TY_I32, from, x);
            int lo = ir_bin(f, OP_MAX, PT_S32, w, IMM(to == TY_I8 ? -128 : 0));
            return R(ir_bin(f, OP_MIN, PT_S32, R(lo), IMM(to == TY_I8 ? 127 : 255)));
        }
        Opnd w = pf == PT_S64 ? R(ir_cvt(f, PT_S32, PT_S64, R(opnd_reg(c, x, PT_S64)))) : x;
        return wrap_byte(c, to, w);
    }
    if (is_imm(x) && pt != PT_PRED && pf != PT_PRED) {
        if (type_is_float(to)) {
            /* an integer rounds to f32 once, as cvt.rn.f32.s64 does */
            double v = x.kind == O_IMM ? (double)(float)x.i : x.f;
            if (to == TY_F32)
                return FIMM(v);
            return narrow_slot(c, to, R(opnd_reg(c, FIMM(v), PT_F32)));
        }
        return IMM(x.kind == O_IMM ? wrap_int(to, (uint64_t)x.i) : float_to_int(to, x.f));
    }
    if (pf == PT_PRED)
        return R(ir_tern(f, OP_SELP, pt == PT_PRED ? PT_S32 : pt, pt == PT_F32 ? FIMM(1) : IMM(1),
                         pt == PT_F32 ? FIMM(0) : IMM(0), R(opnd_reg(c, x, PT_PRED))));
    if (pt == PT_PRED)
        return R(ir_setp(f, CMP_NE, pf, R(opnd_reg(c, x, pf)), pf == PT_F32 ? FIMM(0) : IMM(0)));
    /* a float narrower than f32 is rounded to its precision here, not only where it is stored
       (f8e5m2(f8e4m3(x)) saturates at 448 first) */
    bool narrower = to == TY_F16 || to == TY_BF16 || type_is_f8(to);
    if (pt == PT_F32 && pf == PT_F32) {
        if (narrower)
            return narrow_slot(c, to, x);
        return x;
    }
    if (pt == pf)
        return x;
    Opnd r = R(ir_cvt(f, pt, pf, R(opnd_reg(c, x, pf))));
    if (narrower)
        return narrow_slot(c, to, r);
    return r;
}

static Tile lower_cast(Lower *c, Expr *e, const Layout *want)
{
    Tile x = lower_expr(c, e->a, want);
    Tile r = { e->to, x.L, NULL };
    int n = layout_slots(&x.L);
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
    for (int i = 0; i < n; i++)
        r.v[i] = cast_slot(c, e->to, x.type, x.v[i]);
    return r;
}

/* exp(a - b) of f32 operands: ex2(a log2e - b log2e), the multiply and the difference one fma
 * (flash attention's softmax: exp(s - rowmax)). b's product is taken in b's own slots, so a row
 * statistic broadcast along its row costs one multiply a row; each element then costs an fma
 * and an ex2 where it cost a subtraction, a multiply and an ex2. The exponent's error is
 * 2^-24 (|a - b| + |b|) log2e instead of 2^-23 |a - b| log2e (docs/language.md, the precision
 * table); infinities and NaN come out as from the subtraction. */
static bool exp_of_difference(const Expr *e)
{
    const Expr *d = e->args[0];
    return e->builtin == B_EXP && d->kind == E_BINARY && d->op == '-' && d->type == TY_F32 &&
           d->a->type == TY_F32 && d->b->type == TY_F32;
}

/* The scalar factor of a (x * k or k * x, k an f32 scalar, x a tile), or NULL: exp(x k - b) then
   takes k log2 e once and one fma an element, where the product x k would be a multiply of its
   own (attention's exp(s * scale - m)). */
static Expr *scalar_factor(const Expr *a, Expr **x)
{
    if (a->kind != E_BINARY || a->op != '*' || a->type != TY_F32 || a->a->type != TY_F32 ||
        a->b->type != TY_F32 || (a->a->shape.rank == 0) == (a->b->shape.rank == 0))
        return NULL;
    *x = a->a->shape.rank ? a->a : a->b;
    return a->a->shape.rank ? a->b : a->a;
}

static Tile lower_exp_difference(Lower *c, Expr *e, const Layout *want)
{
    Func *f = c->f;
    const double LOG2E = 1.4426950408889634;
    Expr *d = e->args[0], *x_of_a = NULL, *k_of_a = scalar_factor(d->a, &x_of_a);
    /* exp(a - b) = 2^(a log2 e - b log2 e); a = x k: 2^(x (k log2 e) - b log2 e) */
    Opnd scale = FIMM(LOG2E);
    if (k_of_a) {
        Tile k = lower_expr(c, k_of_a, NULL);
        Opnd kv = k.v[0];
        scale = kv.kind == O_FIMM ? FIMM((double)(float)((double)(float)kv.f * (double)(float)LOG2E))
              : R(ir_bin(f, OP_MUL, PT_F32, kv.kind == O_REG ? kv : R(opnd_reg(c, kv, PT_F32)), FIMM(LOG2E)));
    }
    Tile a, b;
    lower_pair(c, k_of_a ? x_of_a : d->a, d->b, d->shape, want, &a, &b);
    int nb = layout_slots(&b.L);
    Tile mb = { TY_F32, b.L, arena_alloc(c->a, sizeof *mb.v * (size_t)nb) };
    for (int i = 0; i < nb; i++) {
        int j = repeated_slot(&b, NULL, i);    /* b broadcast: one product a register */
        if (j >= 0) {
            mb.v[i] = mb.v[j];
            continue;
        }
        Opnd x = b.v[i].kind == O_REG ? b.v[i] : R(opnd_reg(c, b.v[i], PT_F32));
        mb.v[i] = R(ir_bin(f, OP_MUL, PT_F32, x, FIMM(-LOG2E)));
    }
    Layout L = result_layout(c, d->shape, &a, &mb, want);
    a = to_layout(c, a, &L);
    mb = to_layout(c, mb, &L);
    Tile r = { e->type, L, NULL };
    int n = layout_slots(&L);
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
    for (int i = 0; i < n; i++) {
        int j = repeated_slot(&a, &mb, i);
        if (j >= 0) {
            r.v[i] = r.v[j];
            continue;
        }
        Opnd x = a.v[i].kind == O_REG ? a.v[i] : R(opnd_reg(c, a.v[i], PT_F32));
        Opnd y = mb.v[i].kind == O_REG ? mb.v[i] : R(opnd_reg(c, mb.v[i], PT_F32));
        r.v[i] = R(ir_un(f, OP_EX2, PT_F32, R(ir_tern(f, OP_FMA, PT_F32, x, scale, y))));
    }
    return r;
}

static Tile lower_call(Lower *c, Expr *e, const Layout *want)
{
    Func *f = c->f;
    if (exp_of_difference(e))
        return lower_exp_difference(c, e, want);
    /* the builtins.h kinds lowered one way for every member */
    if (builtin_info[e->builtin].kind == BK_MATH)
        return map_unary(c, lower_expr(c, e->args[0], want), e->type, math_slot, e->builtin);
    if (builtin_info[e->builtin].kind == BK_REDUCE)
        return reduce_tile(c, lower_expr(c, e->args[0], NULL), e->builtin, e->axis);
    if (builtin_info[e->builtin].kind == BK_RAND)
        return lower_rand(c, e, want);
    switch (e->builtin) {
    case B_BITCAST: {   /* the same 32 bits in a register of the other class */
        Tile x = lower_expr(c, e->args[0], want);
        ElemType from = e->args[0]->type;
        Tile r = { e->type, x.L, NULL };
        int n = layout_slots(&x.L);
        r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
        for (int i = 0; i < n; i++) {
            Opnd v = x.v[i];
            if (is_imm(v)) {
                uint32_t bits;
                if (from == TY_F32) {
                    float fv = (float)(v.kind == O_FIMM ? v.f : (double)v.i);
                    memcpy(&bits, &fv, 4);
                } else {
                    bits = (uint32_t)v.i;
                }
                float fb;
                memcpy(&fb, &bits, 4);
                r.v[i] = e->type == TY_F32 ? FIMM(fb) : IMM(wrap_int(e->type, bits));
                continue;
            }
            int d = new_reg(f, ptype_class(held_ptype(e->type)));
            Ins *in = emit_ins(f, OP_MOV, PT_B32);
            in->dst[0] = d;
            in->ndst = 1;
            in->src[0] = v;
            in->nsrc = 1;
            r.v[i] = R(d);
        }
        return r;
    }
    case B_MAXIMUM: case B_MINIMUM: case B_POW: {
        Tile a, b;
        lower_pair(c, e->args[0], e->args[1], e->shape, want, &a, &b);
        Layout L = result_layout(c, e->shape, &a, &b, want);
        a = to_layout(c, a, &L);
        b = to_layout(c, b, &L);
        Tile r = { e->type, L, NULL };
        int n = layout_slots(&L);
        r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
        PType pt = held_ptype(e->type);
        for (int i = 0; i < n; i++) {
            Opnd x = a.v[i], y = b.v[i];
            if (e->builtin == B_POW) {
                r.v[i] = pow_slot(c, x, y);
                continue;
            }
            if (is_imm(x)) {
                Opnd t = x;
                x = y;
                y = t;
            }
            if (is_imm(x))
                x = R(opnd_reg(c, x, pt));
            r.v[i] = R(ir_bin(f, e->builtin == B_MAXIMUM ? OP_MAX : OP_MIN, pt, x, y));
        }
        return r;
    }
    case B_SELECT: case B_FMA: {
        /* values first: their loads pick the layout, the others follow the first full-shape one
           (a smaller shape in its broadcast view, which broadcasting then moves no data from);
           for fma(a, b, c) the "condition" is a, lowered last the same way */
        Tile a = lower_expr(c, e->args[1], want);
        const Layout *full = a.L.rank && same_shape(e->args[1]->shape, e->shape) ? &a.L : NULL;
        Layout bw, cw;
        Tile b = lower_expr(c, e->args[2], follow_full(full, e->args[2]->shape, e->shape, &bw, a.L.rank ? &a.L : want));
        if (!full && b.L.rank && same_shape(e->args[2]->shape, e->shape))
            full = &b.L;
        const Layout *lw = full ? full : want;
        if (e->builtin == B_SELECT && full == &a.L && held_ptype(e->type) != PT_PRED && a.type == e->type &&
            !c->opt->no_mask_split && fresh_value(c, e->args[1], &a)) {
            int all = mask_all_true(c, e->args[0]);
            if (all >= 0)
                return select_in_place(c, e, a, b, all);
        }
        Tile cnd = lower_expr(c, e->args[0], follow_full(lw, e->args[0]->shape, e->shape, &cw, lw));
        Layout L = result_layout(c, e->shape, cnd.L.rank ? &cnd : &a, a.L.rank ? &a : &b, want);
        cnd = to_layout(c, cnd, &L);
        a = to_layout(c, a, &L);
        b = to_layout(c, b, &L);
        Tile r = { e->type, L, NULL };
        int n = layout_slots(&L);
        r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
        PType pt = held_ptype(e->type);
        for (int i = 0; i < n; i++) {
            if (e->builtin == B_FMA) {   /* a * b + c, rounded once */
                Opnd x = cnd.v[i];
                if (x.kind != O_REG)
                    x = R(opnd_reg(c, x, PT_F32));
                r.v[i] = R(ir_tern(f, OP_FMA, PT_F32, x, a.v[i], b.v[i]));
                continue;
            }
            int p = opnd_reg(c, cnd.v[i], PT_PRED);
            if (pt == PT_PRED) {
                int x = ir_bin(f, OP_BAND, PT_PRED, R(p), R(opnd_reg(c, a.v[i], PT_PRED)));
                int np = ir_un(f, OP_BNOT, PT_PRED, R(p));
                int y = ir_bin(f, OP_BAND, PT_PRED, R(np), R(opnd_reg(c, b.v[i], PT_PRED)));
                r.v[i] = R(ir_bin(f, OP_BOR, PT_PRED, R(x), R(y)));
            } else {
                r.v[i] = R(ir_tern(f, OP_SELP, pt, a.v[i], b.v[i], R(p)));
            }
        }
        return r;
    }
    case B_CDIV: {
        Tile a = lower_expr(c, e->args[0], NULL), b = lower_expr(c, e->args[1], NULL);
        PType pt = held_ptype(e->type);
        if (is_imm(a.v[0]) && is_imm(b.v[0]) && b.v[0].i)
            return scalar_of(c, e->type, IMM((a.v[0].i + b.v[0].i - 1) / b.v[0].i));
        Opnd s = binop_slot(c, '-', e->type, binop_slot(c, '+', e->type, a.v[0], b.v[0]), IMM(1));
        return scalar_of(c, e->type, R(ir_bin(f, OP_DIV, pt, R(opnd_reg(c, s, pt)), b.v[0])));
    }
    case B_EXPAND_DIMS:
        if (e->axis == 1 && e->args[0]->kind == E_CALL && e->args[0]->builtin == B_ARANGE && want &&
            want->rank == 2 && want->S[0] == e->shape.dim[0] && want->S[1] == 1)
            return tile_row_iota(c, want);
        if (e->axis == 0 && want && want->rank == 2 && want->S[0] == 1 && want->S[1] == e->shape.dim[1]) {
            /* a [1, W] row is laid out as the rank-1 tile it is made of: made in want's */
            Layout row = *want;
            row.rank = 1;
            return tile_expand(c, lower_expr(c, e->args[0], &row), 0);
        }
        return tile_expand(c, lower_expr(c, e->args[0], NULL), e->axis);
    case B_SQUEEZE:
        return tile_drop_unit_axis(c, lower_expr(c, e->args[0], NULL));
    case B_RESHAPE:
        return tile_reshape(c, lower_expr(c, e->args[0], NULL), e->shape, want);
    case B_ARANGE: {
        Layout L = want && want->rank == e->shape.rank && want->S[1] == e->shape.dim[e->shape.rank - 1] && want->S[0] == 1
                       ? *want : layout_rowmajor(e->shape, c->threads, 4);
        Tile r = { TY_I32, L, NULL };
        int n = layout_slots(&L);
        r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
        int t1 = thread_coord(c, &L, 1);
        int base = L.bcast[1] ? ir_mov(f, PT_S32, IMM(0)) : ir_bin(f, OP_MUL, PT_S32, R(t1), IMM(L.V[1]));
        for (int o1 = 0; o1 < L.O[1]; o1++)
            for (int i1 = 0; i1 < L.V[1]; i1++) {
                int col = slot_col(&L, o1, i1);
                Opnd v = col ? R(ir_bin(f, OP_ADD, PT_S32, R(base), IMM(col))) : R(base);
                for (int o0 = 0; o0 < L.O[0]; o0++)
                    for (int i0 = 0; i0 < L.V[0]; i0++)
                        r.v[slot_index(&L, o0, i0, o1, i1)] = v;
            }
        return r;
    }
    default: break;
    }
    die("lower: call of builtin %d", e->builtin);
}

/* t[a +: W, :], t[3, :]: the sub-tile (tile_slice), then the dimensions of single indices
 * dropped (a row stays in its registers; a column or one element may move). */
static Tile lower_slice(Lower *c, Expr *e, const Layout *want)
{
    Tile v = lower_expr(c, e->a, NULL);
    int a[2] = { 0, 0 }, w[2] = { v.L.S[0], v.L.S[1] };
    for (int i = 0; i < e->nidx; i++) {
        int d = v.L.rank == 2 ? i : 1;
        a[d] = (int)e->idx[i].start->ival;
        w[d] = e->idx[i].width ? (int)e->idx[i].width : 1;
    }
    Tile r = tile_slice(c, v, a, w, e->shape.rank == v.L.rank ? want : NULL);
    if (e->shape.rank == 0) {
        Layout one = layout_scalar(c->threads);
        return to_layout(c, r, &one);
    }
    if (r.L.rank == 2 && e->shape.rank == 1)   /* t[i, :] or t[:, j] */
        r = tile_drop_unit_axis(c, r);
    return r;
}

Tile lower_expr(Lower *c, Expr *e, const Layout *want)
{
    Func *f = c->f;
    f->cur_line = e->loc.line;
    switch (e->kind) {
    case E_INT: return scalar_of(c, e->type, type_is_float(e->type) ? FIMM((double)e->ival) : IMM(e->ival));
    case E_FLOAT: return scalar_of(c, e->type, type_is_float(e->type) ? FIMM(e->fval) : IMM((int64_t)e->fval));
    case E_BOOL: return scalar_of(c, TY_BOOL, IMM(e->ival));
    case E_BLOCK: return scalar_of(c, TY_I32, R(c->ctaid[e->ival]));
    case E_NAME: {
        SymInfo *si = e->sym->lower;
        if (e->sym->kind == SYM_VAR && e->sym->is_shared)
            return load_shared_var(c, e->sym, want);
        if (!si)
            die("lower: name '%s' has no value", e->name);
        if (si->at_use)
            return lower_expr(c, si->def, want ? want : si->has_hint ? &si->hint : NULL);
        return si->val;
    }
    case E_UNARY: {
        Tile x = lower_expr(c, e->a, want);
        Tile r = { e->type, x.L, NULL };
        int n = layout_slots(&x.L);
        r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
        for (int i = 0; i < n; i++) {
            if (e->op == '-' && is_imm(x.v[i]))
                r.v[i] = x.v[i].kind == O_IMM ? IMM(wrap_int(e->type, -(uint64_t)x.v[i].i)) : FIMM(-x.v[i].f);
            else if (e->op == '-')
                r.v[i] = R(ir_un(f, OP_NEG, held_ptype(e->type), x.v[i]));
            else if (e->op == '~' && x.v[i].kind == O_IMM)
                r.v[i] = IMM(wrap_int(e->type, ~(uint64_t)x.v[i].i));
            else if (e->op == '~')
                r.v[i] = R(ir_un(f, OP_BNOT, held_ptype(e->type), x.v[i]));
            else
                r.v[i] = R(ir_un(f, OP_BNOT, PT_PRED, R(opnd_reg(c, x.v[i], PT_PRED))));
        }
        return r;
    }
    case E_BINARY:
        if (e->op == OP_MATMUL) {
            Tile acc = tile_new(c, e->type, matmul_plan(c, e)->acc);
            lower_matmul(c, &acc, e, false);
            return acc;
        }
        return lower_binary(c, e, want);
    case E_CALL: return lower_call(c, e, want);
    case E_CAST: return lower_cast(c, e, want);
    case E_INDEX: return load_window(c, e, want);
    case E_TRANSPOSE:           /* of a value (check made a window's an E_INDEX) */
        return tile_transpose(c, lower_expr(c, e->a, NULL), want);
    case E_SLICE: return lower_slice(c, e, want);
    }
    die("lower: expression kind %d", e->kind);
}
