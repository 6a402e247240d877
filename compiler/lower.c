/* lower.c: a checked kernel -> thread-level IR. Statements and elementwise expressions live here;
 * memory windows, reductions and matmul have files of their own.
 * Needs: check_program succeeded. Fills: Func (virtual registers), KernelMeta (args, grid,
 * assumes, shared memory). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lower.h"

/* Shared memory a block may opt into: 227 KB on sm_90, 163 KB on sm_80, 99 KB on sm_86 and sm_89.
 * PTX for one architecture also runs on later ones, so only what no GPU offers is an error; more
 * than the named architecture offers is a warning (the launch fails there). */
static void check_smem_size(Lower *c, Kernel *k)
{
    enum { MOST = MAX_SMEM_BYTES };
    const char *arch = c->target->name;
    int limit = c->target->smem_block;
    if (c->smem_top > MOST) {
        c->failed = true;
        error_at(k->loc, "kernel '%s' needs %d bytes of shared memory per block; no GPU offers more than %d: "
                 "use smaller tiles or fewer pipeline stages", k->name, c->smem_top, MOST);
    } else if (c->smem_top > limit)
        warning_at(k->loc, "kernel '%s' needs %d bytes of shared memory per block, more than %s offers (%d): "
                   "it launches only on later GPUs", k->name, c->smem_top, arch, limit);
}

/* ---- elementwise operations */

static bool is_imm(Opnd o) { return o.kind == O_IMM || o.kind == O_FIMM; }

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
static int64_t wrap_int(ElemType t, uint64_t v)
{
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
    double lo = t == TY_U32 ? 0 : t == TY_I32 ? INT32_MIN : -0x1p63;
    double hi = t == TY_U32 ? UINT32_MAX : t == TY_I32 ? INT32_MAX : 0x1p63;
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
static Opnd binop_slot(Lower *c, int op, ElemType t, Opnd a, Opnd b)
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
        default: break;
        }
    }
    switch (op) {
    case '+': return R(emit_to(f, OP_ADD, pt, a, b));
    case '-': return R(emit_to(f, OP_SUB, pt, a, b));
    case '*': return R(emit_to(f, OP_MUL, pt, a, b));
    case '/': return R(emit_to(f, OP_DIV, pt, a, b));
    case '%': return R(emit_to(f, OP_REM, pt, a, b));
    case OP_AND: return R(ir_bin(f, OP_BAND, PT_PRED, R(opnd_reg(c, a, PT_PRED)), R(opnd_reg(c, b, PT_PRED))));
    case OP_OR: return R(ir_bin(f, OP_BOR, PT_PRED, R(opnd_reg(c, a, PT_PRED)), R(opnd_reg(c, b, PT_PRED))));
    default: break;
    }
    die("lower: binary operator %d", op);
}

static Opnd cmp_slot(Lower *c, int op, ElemType t, Opnd a, Opnd b)
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
        /* slots that repeat operands (broadcast scalars) repeat the result; looked for among
           the first 64 only, so a tile of thousands of slots costs no quadratic search */
        int j = 0;
        while (i < 64 && j < i && !(same_opnd(a.v[j], a.v[i]) && same_opnd(b.v[j], b.v[i])))
            j++;
        if (j < i && i < 64) {
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

/* Rounds a held f32 value to f16/bf16 precision and widens it back. */
static Opnd narrow_slot(Lower *c, ElemType to, Opnd x)
{
    Func *f = c->f;
    int xr = opnd_reg(c, x, PT_F32);
    if (to == TY_F16) {
        int h = ir_cvt(f, PT_F16, PT_F32, R(xr));
        return R(ir_cvt(f, PT_F32, PT_F16, R(h)));
    }
    /* bf16: round to nearest even by cvt, widen by shifting the bits up */
    return widen_held(c, TY_BF16, ir_cvt(f, PT_BF16, PT_F32, R(xr)));
}

static Opnd cast_slot(Lower *c, ElemType to, ElemType from, Opnd x)
{
    Func *f = c->f;
    PType pt = held_ptype(to), pf = held_ptype(from);
    if (to == TY_TF32)
        return R(ir_mov(f, PT_F32, R(round_tf32_value(c, opnd_reg(c, x, PT_F32)))));
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
    if (pt == PT_F32 && pf == PT_F32) {
        if (to == TY_F16 || to == TY_BF16)
            return narrow_slot(c, to, x);
        return x;
    }
    if (pt == pf)
        return x;
    Opnd r = R(ir_cvt(f, pt, pf, R(opnd_reg(c, x, pf))));
    if (to == TY_F16 || to == TY_BF16)
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

static Tile lower_call(Lower *c, Expr *e, const Layout *want)
{
    Func *f = c->f;
    /* the builtins.h kinds lowered one way for every member */
    if (builtin_info[e->builtin].kind == BK_MATH)
        return map_unary(c, lower_expr(c, e->args[0], want), e->type, math_slot, e->builtin);
    if (builtin_info[e->builtin].kind == BK_REDUCE)
        return reduce_tile(c, lower_expr(c, e->args[0], NULL), e->builtin, e->axis);
    switch (e->builtin) {
    case B_MAXIMUM: case B_MINIMUM: {
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
    case B_SELECT: {
        /* values first: their loads pick the layout, the condition follows it */
        Tile a = lower_expr(c, e->args[1], want);
        Tile b = lower_expr(c, e->args[2], a.L.rank ? &a.L : want);
        const Layout *lw = a.L.rank ? &a.L : b.L.rank ? &b.L : want;
        Tile cnd = lower_expr(c, e->args[0], lw);
        Layout L = result_layout(c, e->shape, cnd.L.rank ? &cnd : &a, a.L.rank ? &a : &b, want);
        cnd = to_layout(c, cnd, &L);
        a = to_layout(c, a, &L);
        b = to_layout(c, b, &L);
        Tile r = { e->type, L, NULL };
        int n = layout_slots(&L);
        r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
        PType pt = held_ptype(e->type);
        for (int i = 0; i < n; i++) {
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
            else
                r.v[i] = R(ir_un(f, OP_BNOT, PT_PRED, R(opnd_reg(c, x.v[i], PT_PRED))));
        }
        return r;
    }
    case E_BINARY:
        if (e->op == OP_MATMUL) {
            Layout L = matmul_layout(c, e->a, e->b, e->shape);
            Tile acc = tile_new(c, TY_F32, L);
            lower_matmul(c, &acc, e->a, e->b, false);
            return acc;
        }
        return lower_binary(c, e, want);
    case E_CALL: return lower_call(c, e, want);
    case E_CAST: return lower_cast(c, e, want);
    case E_INDEX: return load_window(c, e, want);
    }
    die("lower: expression kind %d", e->kind);
}

/* ---- statements */


static void assign_slots(Lower *c, Tile *dst, Tile v, int op)
{
    Func *f = c->f;
    v = to_layout(c, v, &dst->L);
    PType pt = held_ptype(dst->type);
    int n = layout_slots(&dst->L);
    for (int i = 0; i < n; i++) {
        Ins *in;
        if (op == '=') {
            in = emit_ins(f, OP_MOV, pt);
            in->src[0] = pt == PT_PRED && is_imm(v.v[i]) ? R(opnd_reg(c, v.v[i], PT_PRED)) : v.v[i];
            in->nsrc = 1;
        } else {
            in = emit_ins(f, op == '+' ? OP_ADD : op == '-' ? OP_SUB : OP_MUL, pt);
            in->src[0] = dst->v[i];
            in->src[1] = v.v[i];
            in->nsrc = 2;
        }
        in->dst[0] = dst->v[i].reg;
        in->ndst = 1;
    }
}

static void lower_block(Lower *c, Stmt *b)
{
    for (int i = 0; i < b->nbody; i++)
        lower_stmt(c, b->body[i]);
}

static bool is_matmul(Expr *e) { return e && e->kind == E_BINARY && e->op == OP_MATMUL; }

/* A loop with constant bounds and a few iterations is unrolled: ptxas would unroll it anyway, and
 * the register prediction must describe the code ptxas really schedules. The loop variable becomes
 * a constant in each copy. Nested, only up to MAX_UNROLL_COPIES copies (unroll_trips). */

static bool unroll_constant_loop(Lower *c, Stmt *s)
{
    int64_t trips = unroll_trips(s, c->unroll_copies), step = s->step ? s->step->ival : 1;
    if (trips < 0)
        return false;
    SymInfo *si = info(c, s->sym);
    si->loop = s;
    int64_t copies = c->unroll_copies;
    c->unroll_copies = copies * (trips ? trips : 1);
    for (int64_t t = 0; t < trips; t++) {
        si->val = tile_splat(c, TY_I32, layout_scalar(c->threads), IMM(s->lo->ival + t * step));
        lower_block(c, s->then);
    }
    c->unroll_copies = copies;
    return true;
}

static void lower_stmt_kind(Lower *c, Stmt *s);

void lower_stmt(Lower *c, Stmt *s)
{
    if (!lower_budget_before(c, s))
        return;
    Loc saved = c->loc;
    c->loc = s->loc;
    lower_stmt_kind(c, s);
    c->loc = saved;
    lower_budget_after(c, s);
}

static void lower_stmt_kind(Lower *c, Stmt *s)
{
    Func *f = c->f;
    f->cur_line = s->loc.line;
    switch (s->kind) {
    case S_BLOCK: lower_block(c, s); break;
    case S_LET: {
        f->cur_what = reg_value_name(c->a, s->name, s->init->type, s->init->shape);
        Tile v = lower_expr(c, s->init, NULL);
        if (s->sym->type != v.type && s->sym->type != TY_NONE) {
            Tile w = { s->sym->type, v.L, NULL };
            int n = layout_slots(&v.L);
            w.v = arena_alloc(c->a, sizeof *w.v * (size_t)n);
            for (int i = 0; i < n; i++)
                w.v[i] = cast_slot(c, s->sym->type, v.type, v.v[i]);
            v = w;
        }
        info(c, s->sym)->val = v;
        info(c, s->sym)->def = s->init;
        f->cur_what = "temporary";
        break;
    }
    case S_VAR: {
        Sym *sym = s->sym;
        SymInfo *si = info(c, sym);
        if (sym->is_shared) {
            int S0 = sym->shape.rank == 2 ? (int)sym->shape.dim[0] : 1;
            int S1 = sym->shape.rank ? (int)sym->shape.dim[sym->shape.rank - 1] : 1;
            si->smem_ld = S1 + (S1 >= 32 ? 4 : 0);
            si->smem_off = smem_alloc(c, S0 * si->smem_ld * type_size(sym->type));
            c->f->smem_bufs.v[c->f->smem_bufs.n - 1].name = sym->name;
            break;
        }
        f->cur_what = reg_value_name(c->a, s->name, sym->type, sym->shape);
        Layout L;
        Tile init = { TY_NONE, { 0 }, NULL };
        if (si->mm) {
            L = matmul_layout(c, si->mm->a, si->mm->b, sym->shape);
        } else if (s->init && s->init->shape.rank == sym->shape.rank && sym->shape.rank > 0 && !is_matmul(s->init)) {
            init = lower_expr(c, s->init, NULL);
            L = init.L;
        } else {
            L = sym->shape.rank ? layout_rowmajor(sym->shape, c->threads, 4) : layout_scalar(c->threads);
        }
        si->val = tile_new(c, sym->type, L);
        if (is_matmul(s->init)) {
            lower_matmul(c, &si->val, s->init->a, s->init->b, false);
        } else if (s->init) {
            if (!init.v)
                init = lower_expr(c, s->init, &L);
            assign_slots(c, &si->val, init, '=');
        }
        f->cur_what = "temporary";
        break;
    }
    case S_ASSIGN: {
        Expr *l = s->lhs;
        if (l->kind == E_INDEX) {
            Tile v = lower_expr(c, s->rhs, NULL);
            store_window(c, l, v);
            break;
        }
        Sym *sym = l->sym;
        bool piped = false;
        for (int i = 0; i < c->npipe; i++)
            piped |= c->pipe[i].var == sym && c->pipe[i].operand == s->rhs;
        if (piped)
            break;   /* the pipelined loop copies it, ahead of time */
        if (sym->is_shared) {
            Tile v = lower_expr(c, s->rhs, NULL);
            store_shared_var(c, sym, v);
            break;
        }
        SymInfo *si = info(c, sym);
        if (is_matmul(s->rhs) && (s->op == '+' || s->op == '=')) {
            lower_matmul(c, &si->val, s->rhs->a, s->rhs->b, s->op == '+');
            break;
        }
        Tile v = lower_expr(c, s->rhs, &si->val.L);
        assign_slots(c, &si->val, v, s->op);
        break;
    }
    case S_FOR: {
        if (s->pipeline >= 1 && lower_pipelined_loop(c, s))
            break;
        if (unroll_constant_loop(c, s))
            break;
        SymInfo *si = info(c, s->sym);
        si->loop = s;
        Tile lo = lower_expr(c, s->lo, NULL), hi = lower_expr(c, s->hi, NULL);
        int64_t step = 1;
        if (s->step) {
            Tile st = lower_expr(c, s->step, NULL);
            step = st.v[0].i;
        }
        int i = ir_mov(f, PT_S32, lo.v[0]);
        f->regs.v[i].what = s->name;
        int hreg = opnd_reg(c, hi.v[0], PT_S32);
        si->val = scalar_of(c, TY_I32, R(i));
        int head = new_label(f), exit = new_label(f);
        ir_label(f, head);
        int p = ir_setp(f, CMP_GE, PT_S32, R(i), R(hreg));
        ir_bra(f, exit, p, false);
        /* the head is also reached from the end of the body, whose scratch reads (a reduction's
           last step, say) the next iteration's first scratch write must wait for */
        c->scratch_read = true;
        lower_block(c, s->then);
        f->cur_line = s->loc.line;
        ir_bin_to(f, OP_ADD, PT_S32, i, R(i), IMM(step));
        ir_bra(f, head, -1, false);
        ir_label(f, exit);
        /* a loop may run zero times: scratch state after it is unknown */
        c->scratch_read = true;
        break;
    }
    case S_IF: {
        Tile cnd = lower_expr(c, s->cond, NULL);
        int p = opnd_reg(c, cnd.v[0], PT_PRED);
        int els = new_label(f), end = new_label(f);
        bool scratch_read = c->scratch_read;
        ir_bra(f, els, p, true);
        lower_block(c, s->then);
        ir_bra(f, end, -1, false);
        ir_label(f, els);
        /* the else branch starts from the state before the if, not from the end of the then branch */
        c->scratch_read = scratch_read;
        if (s->els)
            lower_stmt(c, s->els);
        ir_label(f, end);
        c->scratch_read = true;
        break;
    }
    case S_ATOMIC: {
        Tile v = lower_expr(c, s->rhs, NULL);
        atomic_window(c, s->lhs, v, s->op);
        break;
    }
    case S_ASSUME: break;   /* checked at launch; known_multiple reads the facts */
    }
}

/* Vars accumulated by `@` get the matmul layout from their declaration on. */
static void mark_var(Sym *v, Expr *mm)
{
    SymInfo *si = v->lower;
    if (!si)
        return;
    if (!si->mm)
        si->mm = mm;
}

static void mark_matmul_vars(Lower *c, Stmt *s)
{
    if (!s)
        return;
    switch (s->kind) {
    case S_BLOCK:
        for (int i = 0; i < s->nbody; i++)
            mark_matmul_vars(c, s->body[i]);
        break;
    case S_FOR: mark_matmul_vars(c, s->then); break;
    case S_IF:
        mark_matmul_vars(c, s->then);
        mark_matmul_vars(c, s->els);
        break;
    case S_ASSIGN:
        if (s->lhs->kind == E_NAME && is_matmul(s->rhs))
            mark_var(s->lhs->sym, s->rhs);
        break;
    case S_VAR:
        if (is_matmul(s->init))
            mark_var(s->sym, s->init);
        break;
    default: break;
    }
}

static void alloc_var_infos(Lower *c, Stmt *s)
{
    if (!s)
        return;
    if (s->kind == S_VAR && s->sym)
        info(c, s->sym);
    if (s->kind == S_BLOCK)
        for (int i = 0; i < s->nbody; i++)
            alloc_var_infos(c, s->body[i]);
    if (s->kind == S_FOR || s->kind == S_IF) {
        alloc_var_infos(c, s->then);
        alloc_var_infos(c, s->els);
    }
}

/* ---- kernel entry: parameters and special registers */

static ElemType scalar_param_type(Sym *s) { return s->type; }

static void load_params(Lower *c)
{
    Func *f = c->f;
    Kernel *k = c->k;
    KernelMeta *m = c->meta;
    m->nargs = k->nparams + k->nsizes;
    m->args = arena_alloc(c->a, sizeof *m->args * (size_t)(m->nargs ? m->nargs : 1));
    int ai = 0;
    for (int i = 0; i < k->nparams; i++, ai++) {
        Param *p = &k->params[i];
        KernelArg *a = &m->args[ai];
        a->name = p->name;
        a->type = p->type;
        a->kind = p->is_tensor ? ARG_PTR : ARG_SCALAR;
        a->align = p->is_tensor ? type_size(p->type) : 0;
    }
    for (int i = 0; i < k->nsizes; i++, ai++) {
        KernelArg *a = &m->args[ai];
        a->name = k->sizes[i]->name;
        a->type = TY_I32;
        a->kind = ARG_SIZE;
        a->align = 0;
    }
    /* sizes first: tensor strides are computed from them */
    for (int i = 0; i < k->nsizes; i++) {
        f->cur_what = k->sizes[i]->name;
        int r = new_reg(f, RC_R);
        Ins *in = emit_ins(f, OP_LDPARAM, PT_S32);
        in->dst[0] = r;
        in->ndst = 1;
        in->src[0] = SYM(arena_printf(c->a, "%s_param_%d", k->name, k->nparams + i));
        in->nsrc = 1;
        info(c, k->sizes[i])->val = scalar_of(c, TY_I32, R(r));
    }
    for (int i = 0; i < k->nparams; i++) {
        Param *p = &k->params[i];
        Sym *s = p->sym;
        SymInfo *si = info(c, s);
        f->cur_what = p->name;
        const char *pname = arena_printf(c->a, "%s_param_%d", k->name, i);
        if (!p->is_tensor) {
            ElemType t = scalar_param_type(s);
            PType lt = t == TY_F32 ? PT_F32 : t == TY_I64 ? PT_S64 : t == TY_U32 || t == TY_BOOL ? PT_U32
                     : t == TY_F16 || t == TY_BF16 ? PT_B16 : PT_S32;
            int r = new_reg(f, ptype_class(lt));
            Ins *in = emit_ins(f, OP_LDPARAM, lt);
            in->dst[0] = r;
            in->ndst = 1;
            in->src[0] = SYM(pname);
            in->nsrc = 1;
            si->val = scalar_of(c, t, widen_held(c, t, r));
            continue;
        }
        int raw = new_reg(f, RC_D);
        Ins *in = emit_ins(f, OP_LDPARAM, PT_U64);
        in->dst[0] = raw;
        in->ndst = 1;
        in->src[0] = SYM(pname);
        in->nsrc = 1;
        si->ptr = ir_un(f, OP_CVTA, PT_U64, R(raw));
        for (int d = 0; d < s->rank; d++)
            si->dim[d] = s->dim[d].size ? ((SymInfo *)s->dim[d].size->lower)->val.v[0] : IMM(s->dim[d].cval);
        /* strides in elements, as s64 registers or immediates. A default stride, the product of
           the later dimensions, is computed in 64 bits: the M K of a [B, M, K] tensor passes
           2^31 at 8 GiB of f32, and wrapped in 32 bits it addressed the wrong elements. */
        for (int d = s->rank - 1; d >= 0; d--) {
            Opnd st;
            si->stride64[d] = -1;
            if (!s->has_default_strides)
                st = s->stride[d].size ? ((SymInfo *)s->stride[d].size->lower)->val.v[0] : IMM(s->stride[d].cval);
            else if (d == s->rank - 1)
                st = IMM(1);
            else if (si->stride[d + 1].kind == O_IMM && si->dim[d + 1].kind == O_IMM)
                st = IMM(wrap_int(TY_I64, (uint64_t)si->stride[d + 1].i * (uint64_t)si->dim[d + 1].i));
            else if (d == s->rank - 2) {   /* one extent: fits s32 */
                int a = opnd_reg(c, si->stride[d + 1], PT_S32);
                st = R(ir_bin(f, OP_MUL, PT_S32, R(a), si->dim[d + 1]));
            } else {
                Opnd later = si->stride64[d + 1] >= 0 ? R(si->stride64[d + 1]) : si->stride[d + 1];
                Opnd dim = si->dim[d + 1].kind == O_IMM ? si->dim[d + 1]
                                                       : R(ir_cvt(f, PT_S64, PT_S32, si->dim[d + 1]));
                if (later.kind == O_IMM && dim.kind == O_IMM)
                    die("lower: constant stride of a run-time extent");
                st = later.kind == O_IMM && later.i == 1 ? dim
                     : later.kind == O_IMM ? R(ir_bin(f, OP_MUL, PT_S64, dim, later))
                                           : R(ir_bin(f, OP_MUL, PT_S64, later, dim));
                si->stride64[d] = st.reg;
            }
            si->stride[d] = st;
            if (st.kind == O_REG && si->stride64[d] < 0)
                si->stride64[d] = ir_cvt(f, PT_S64, PT_S32, st);
        }
    }
    f->cur_what = "thread index";
    c->tid = new_reg(f, RC_R);
    Ins *in = emit_ins(f, OP_MOVSYM, PT_U32);
    in->dst[0] = c->tid;
    in->ndst = 1;
    in->src[0] = SYM("%tid.x");
    in->nsrc = 1;
    static const char *const ct[3] = { "%ctaid.x", "%ctaid.y", "%ctaid.z" };
    f->cur_what = "block index";
    for (int d = 0; d < 3; d++) {
        c->ctaid[d] = new_reg(f, RC_R);
        in = emit_ins(f, OP_MOVSYM, PT_U32);
        in->dst[0] = c->ctaid[d];
        in->ndst = 1;
        in->src[0] = SYM(ct[d]);
        in->nsrc = 1;
    }
    f->cur_what = "temporary";
}

/* ---- launch-time expressions as RPN over kernel arguments */

static void rpn(Lower *c, Buf *b, Expr *e)
{
    switch (e->kind) {
    case E_INT: buf_printf(b, " %lld", (long long)e->ival); return;
    case E_BOOL: buf_printf(b, " %d", (int)e->ival); return;
    case E_NAME: {
        Sym *s = e->sym;
        int idx = s->kind == SYM_SIZE ? c->k->nparams + s->size_index : s->param_index;
        buf_printf(b, " a%d", idx);
        return;
    }
    case E_UNARY:
        rpn(c, b, e->a);
        buf_puts(b, e->op == '-' ? " neg" : " !");
        return;
    case E_BINARY: {
        rpn(c, b, e->a);
        rpn(c, b, e->b);
        const char *op;
        switch (e->op) {
        case OP_EQ: op = "=="; break;
        case OP_NE: op = "!="; break;
        case OP_LE: op = "<="; break;
        case OP_GE: op = ">="; break;
        case OP_AND: op = "&&"; break;
        case OP_OR: op = "||"; break;
        default: {
            static char one[2];
            one[0] = (char)e->op;
            one[1] = 0;
            op = one;
        }
        }
        buf_printf(b, " %s", op);
        return;
    }
    case E_CALL:
        for (int i = 0; i < e->nargs; i++)
            rpn(c, b, e->args[i]);
        buf_puts(b, e->builtin == B_CDIV ? " cdiv" : e->builtin == B_MAXIMUM ? " max" : " min");
        return;
    case E_CAST: rpn(c, b, e->a); return;
    default: die("launch expression of kind %d", e->kind);
    }
}

const char *extent_rpn(Lower *c, Extent e)
{
    if (!e.size)
        return arena_printf(c->a, "%lld", (long long)e.cval);
    return arena_printf(c->a, "a%d", c->k->nparams + e.size->size_index);
}

/* The RPN of a grid() or assume() expression. The runtime reads at most META_MAX_RPN tokens; the
 * checker refused longer expressions at their source (check.c), so one here is a compiler bug. */
static const char *rpn_text(Lower *c, Expr *e, const char *what)
{
    Buf b = { 0 };
    rpn(c, &b, e);
    int tokens = 0;
    for (size_t i = 0; i < b.len; i++)
        tokens += b.s[i] == ' ';
    if (tokens > META_MAX_RPN)
        die("%s of %d tokens passed the checker, which allows %d", what, tokens, META_MAX_RPN);
    const char *s = arena_strndup(c->a, b.s + 1, b.len - 1);
    buf_free(&b);
    return s;
}

Func *lower_kernel(Arena *a, Program *p, Kernel *k, Options *opt, KernelMeta *meta)
{
    Lower lc;
    memset(&lc, 0, sizeof lc);
    Lower *c = &lc;
    c->a = a;
    c->p = p;
    c->k = k;
    c->opt = opt;
    c->target = opt && opt->arch && target_of(opt->arch) ? target_of(opt->arch) : target_default();
    c->meta = meta;
    c->pipe_leader = c->pipe_phase = -1;
    c->threads = k->threads;
    c->loc = k->loc;
    c->unroll_copies = 1;
    c->f = func_new(k);
    c->f->arena = a;
    c->f->threads = k->threads;
    meta->name = k->name;
    meta->threads = k->threads;
    meta->ptxas_regs = meta->ptxas_spill_loads = meta->ptxas_spill_stores = meta->ptxas_stack = -1;
    meta->ngrid = k->ngrid;
    for (int i = 0; i < k->ngrid; i++)
        meta->grid_rpn[i] = rpn_text(c, k->grid[i], "this grid() expression");
    meta->nassumes = k->nassumes;
    meta->assume_rpn = arena_alloc(a, sizeof(char *) * (size_t)(k->nassumes + 1));
    meta->assume_text = arena_alloc(a, sizeof(char *) * (size_t)(k->nassumes + 1));
    for (int i = 0; i < k->nassumes; i++) {
        meta->assume_rpn[i] = rpn_text(c, k->assumes[i]->cond, "this assume()");
        meta->assume_text[i] = k->assumes[i]->text;
    }
    load_params(c);
    alloc_var_infos(c, k->body);
    mark_matmul_vars(c, k->body);
    lower_block(c, k->body);
    emit_ins(c->f, OP_RET, PT_B32);
    c->loc = k->loc;   /* the scratch serves the whole kernel */
    /* the scratch area goes after the named shared buffers */
    int scratch = c->scratch_size ? smem_alloc(c, c->scratch_size) : c->smem_top;
    if (c->scratch_size)
        c->f->smem_bufs.v[c->f->smem_bufs.n - 1].name = "the scratch area";
    c->f->smem_bytes = c->smem_top;
    meta->smem_bytes = c->smem_top;
    check_smem_size(c, k);
    /* resolve the scratch symbol to its offset: MOVSYM of tilec_scratch becomes smem + off */
    for (int i = 0; i < c->f->code.n; i++) {
        Ins *in = &c->f->code.v[i];
        if (in->op == OP_MOVSYM && in->src[0].sym && !strcmp(in->src[0].sym, "tilec_scratch"))
            in->src[0].sym = arena_printf(a, "tilec_smem+%d", scratch);
    }
    for (int i = 0; i < k->nparams; i++) {
        SymInfo *si = k->params[i].sym->lower;
        if (k->params[i].is_tensor && si && si->vec_ok)
            meta->args[i].align = 16;
    }
    if (c->failed) {
        func_free(c->f);
        return NULL;
    }
    return c->f;
}
