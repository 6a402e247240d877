/* ir.c: construction and printing of the thread-level IR.
 * Needs nothing; every other back-end file builds on it. */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

const OpInfo op_info[OP_COUNT_] = {
#define X(n, i, f, sfx, flags, fields, dsts, srcs) { #n, i, f, sfx, flags, fields, dsts, srcs },
    IR_OPS(X)
#undef X
};

const char *op_name(int op) { return op >= 0 && op < OP_COUNT_ ? op_info[op].name : "?"; }

bool op_has(int op, int flags) { return op >= 0 && op < OP_COUNT_ && (op_info[op].flags & flags) == flags; }

RegClass ptype_class(PType t)
{
    switch (t) {
    case PT_PRED: return RC_P;
    case PT_B16: case PT_F16: case PT_BF16: case PT_U16: return RC_H;
    case PT_U8: case PT_S8: return RC_R;      /* a byte sits in 32 bits */
    case PT_F16X2: case PT_BF16X2: case PT_E4M3: case PT_E5M2: return RC_R;
    case PT_F32: return RC_F;
    case PT_B32: case PT_S32: case PT_U32: return RC_R;
    default: return RC_D;
    }
}

const char *ptype_suffix(PType t)
{
    static const char *const s[PT_COUNT] = {
        ".pred", ".b16", ".f16", ".bf16", ".b32", ".s32", ".u32", ".f32", ".b64", ".s64", ".u64", ".u16", ".u8", ".s8",
        ".f16x2", ".bf16x2", ".e4m3", ".e5m2", ".f64",
    };
    return t < PT_COUNT ? s[t] : "?";
}

Func *func_new(Kernel *k)
{
    Func *f = calloc(1, sizeof *f);
    if (!f)
        die("out of memory");
    f->k = k;
    f->cur_what = "temporary";
    return f;
}

void func_free(Func *f)
{
    if (!f)
        return;
    vec_free(&f->code);
    vec_free(&f->regs);
    vec_free(&f->arrays);
    vec_free(&f->smem_bufs);
    vec_free(&f->strings);
    free(f);
}

int new_reg(Func *f, RegClass rc)
{
    VReg r = { rc, f->cur_what, -1, 0, false };
    vec_push(&f->regs, r);
    return f->regs.n - 1;
}

int new_label(Func *f) { return f->nlabels++; }

Ins *emit_ins(Func *f, int op, PType ty)
{
    Ins in;
    memset(&in, 0, sizeof in);
    in.op = (uint16_t)op;
    in.ty = (uint8_t)ty;
    in.vec = 1;
    in.guard = -1;
    in.line = f->cur_line;
    in.ahead = f->cur_ahead;
    vec_push(&f->code, in);
    return &f->code.v[f->code.n - 1];
}

Opnd R(int reg) { Opnd o = { O_REG, reg, 0, 0, NULL }; return o; }
Opnd IMM(int64_t v) { Opnd o = { O_IMM, -1, v, 0, NULL }; return o; }
Opnd FIMM(double v) { Opnd o = { O_FIMM, -1, 0, v, NULL }; return o; }
Opnd SYM(const char *s) { Opnd o = { O_SYM, -1, 0, 0, s }; return o; }

static int def1(Func *f, Ins *in, PType t)
{
    /* new_reg may move f->code? No: it grows f->regs only. */
    int d = new_reg(f, ptype_class(t));
    in->dst[0] = d;
    in->ndst = 1;
    return d;
}

int ir_mov(Func *f, PType t, Opnd a)
{
    Ins *in = emit_ins(f, OP_MOV, t);
    in->src[0] = a;
    in->nsrc = 1;
    return def1(f, in, t);
}

int ir_movsym(Func *f, PType t, const char *sym)
{
    Ins *in = emit_ins(f, OP_MOVSYM, t);
    in->src[0] = SYM(sym);
    in->nsrc = 1;
    return def1(f, in, t);
}

int ir_bin(Func *f, int op, PType t, Opnd a, Opnd b)
{
    Ins *in = emit_ins(f, op, t);
    in->src[0] = a;
    in->src[1] = b;
    in->nsrc = 2;
    /* the destination of MULWIDE is twice as wide */
    return def1(f, in, op == OP_MULWIDE ? (t == PT_U32 ? PT_U64 : PT_S64) : t);
}

int ir_bfi(Func *f, Opnd field, int into, int pos, int len)
{
    Ins *in = emit_ins(f, OP_BFI, PT_B32);
    in->src[0] = field;
    in->src[1] = R(into);
    in->src[2] = IMM(pos);
    in->src[3] = IMM(len);
    in->nsrc = 4;
    return def1(f, in, PT_B32);
}

int ir_tern(Func *f, int op, PType t, Opnd a, Opnd b, Opnd c)
{
    Ins *in = emit_ins(f, op, t);
    in->src[0] = a;
    in->src[1] = b;
    in->src[2] = c;
    in->nsrc = 3;
    return def1(f, in, t);
}

void ir_bin_to(Func *f, int op, PType t, int dst, Opnd a, Opnd b)
{
    Ins *in = emit_ins(f, op, t);
    in->src[0] = a;
    in->src[1] = b;
    in->nsrc = 2;
    in->dst[0] = dst;
    in->ndst = 1;
}

int ir_un(Func *f, int op, PType t, Opnd a)
{
    Ins *in = emit_ins(f, op, t);
    in->src[0] = a;
    in->nsrc = 1;
    return def1(f, in, t);
}

int ir_setp(Func *f, Cmp c, PType t, Opnd a, Opnd b)
{
    Ins *in = emit_ins(f, OP_SETP, t);
    in->cmp = (uint8_t)c;
    in->src[0] = a;
    in->src[1] = b;
    in->nsrc = 2;
    return def1(f, in, PT_PRED);
}

int ir_cvt(Func *f, PType to, PType from, Opnd a)
{
    Ins *in = emit_ins(f, OP_CVT, to);
    in->ty2 = (uint8_t)from;
    in->src[0] = a;
    in->nsrc = 1;
    return def1(f, in, to);
}

/* Lowering writes every address in full: the memory instruction just emitted gets its constant
 * offset as an explicit add in front of it (the address-splitting pass folds such adds back into
 * [base+imm] operands, where it can prove that safe). */
void ir_naive_addr(Func *f)
{
    Ins in = f->code.v[f->code.n - 1];
    if (!in.off)
        return;
    f->code.n--;
    RegClass rc = f->regs.v[in.src[0].reg].rc;
    PType t = rc == RC_D ? PT_S64 : PT_U32;
    int a = ir_bin(f, OP_ADD, t, in.src[0], IMM(in.off));
    f->code.v[f->code.n - 1].line = in.line;
    in.src[0] = R(a);
    in.off = 0;
    vec_push(&f->code, in);
}

/* Side-effect-free register operations: the passes may move, copy or delete them. */
bool ir_pure(int op) { return op_has(op, OPF_PURE); }

/* Registers the instruction reads. A guarded definition also reads its destinations: where the
 * guard is false the old value survives. out needs room for 5 + 1 + 4 + 10 entries at most. */
int ir_uses(const Ins *in, int *out)
{
    int n = 0;
    for (int s = 0; s < in->nsrc; s++)
        if (in->src[s].kind == O_REG)
            out[n++] = in->src[s].reg;
    if (in->guard >= 0) {
        out[n++] = in->guard;
        for (int d = 0; d < in->ndst; d++)
            out[n++] = in->dst[d];
    }
    return n;
}

void rename_regs(Func *f, int from, const int *old, const int *new_, int n)
{
    int *to = malloc(sizeof(int) * (size_t)(f->regs.n + 1));
    for (int r = 0; r < f->regs.n; r++)
        to[r] = r;
    for (int i = 0; i < n; i++)
        to[old[i]] = new_[i];
    for (int i = from; i < f->code.n; i++) {
        Ins *in = &f->code.v[i];
        for (int d = 0; d < in->ndst; d++)
            in->dst[d] = to[in->dst[d]];
        for (int s = 0; s < in->nsrc; s++)
            if (in->src[s].kind == O_REG)
                in->src[s].reg = to[in->src[s].reg];
        if (in->guard >= 0)
            in->guard = to[in->guard];
    }
    free(to);
}

int ir_dce(Func *f)
{
    int removed = 0;
    int *uses = malloc(sizeof(int) * (size_t)(f->regs.n + 1));
    for (bool again = true; again;) {
        again = false;
        memset(uses, 0, sizeof(int) * (size_t)(f->regs.n + 1));
        for (int i = 0; i < f->code.n; i++) {
            int u[24], nu = ir_uses(&f->code.v[i], u);
            for (int k = 0; k < nu; k++)
                uses[u[k]]++;
        }
        int n = 0;
        for (int i = 0; i < f->code.n; i++) {
            Ins *in = &f->code.v[i];
            bool dead = ir_pure(in->op) && in->ndst > 0;
            for (int d = 0; dead && d < in->ndst; d++)
                dead = uses[in->dst[d]] == 0;
            if (dead) {
                removed++;
                again = true;
                continue;
            }
            f->code.v[n++] = *in;
        }
        f->code.n = n;
    }
    free(uses);
    return removed;
}

void ir_label(Func *f, int label) { emit_ins(f, OP_LABEL, PT_B32)->label = label; }

void ir_bra(Func *f, int label, int guard, bool neg)
{
    Ins *in = emit_ins(f, OP_BRA, PT_B32);
    in->label = label;
    in->guard = guard;
    in->guard_neg = neg;
}

void ir_bar(Func *f) { emit_ins(f, OP_BAR, PT_B32)->count = (uint16_t)f->bar_threads; }

void ir_comment(Func *f, const char *text) { emit_ins(f, OP_COMMENT, PT_B32)->text = text; }

static void dump_opnd(Buf *out, Opnd o)
{
    switch (o.kind) {
    case O_REG: buf_printf(out, "v%d", o.reg); break;
    case O_IMM: buf_printf(out, "%lld", (long long)o.i); break;
    case O_FIMM: buf_printf(out, "%g", o.f); break;
    case O_SYM: buf_printf(out, "%s", o.sym); break;
    default: buf_puts(out, "_"); break;
    }
}

/* The fields ops.h says the operation uses, each with its name. */
static void dump_fields(Buf *out, const Ins *in)
{
    static const char *const space[] = { "global", "shared", "param", "local" };
    int fl = op_info[in->op].fields;
    if (fl & FL_OFF)
        buf_printf(out, " +%lld", (long long)in->off);
    if (fl & FL_OFF2)
        buf_printf(out, " off2=%lld", (long long)in->off2);
    if (fl & FL_LABEL)
        buf_printf(out, " L%d", in->label);
    if (fl & FL_INFLIGHT)
        buf_printf(out, " inflight=%d", in->inflight);
    if (fl & FL_ARRAY)
        buf_printf(out, " array=%d", in->array);
    if (fl & FL_N)
        buf_printf(out, " n=%d", in->n);
    if (fl & FL_COUNT)
        buf_printf(out, " count=%d", in->count);
    if (fl & FL_BYTES)
        buf_printf(out, " bytes=%d", in->bytes);
    if (fl & FL_CMP)
        buf_printf(out, " cmp=%d", in->cmp);
    if (fl & FL_RND)
        buf_printf(out, " rnd=%d", in->rnd);
    if (fl & FL_TRANS)
        buf_printf(out, " trans=%d", in->trans);
    if ((fl & FL_TRANS) && in->trans_a)
        buf_puts(out, " trans_a");
    if (fl & FL_A_REGS)
        buf_printf(out, " a_regs=%d", in->a_regs);
    if ((fl & FL_FRESH) && in->fresh)
        buf_puts(out, " fresh");
    if (fl & FL_SPACE)
        buf_printf(out, " %s", in->space < 4 ? space[in->space] : "?");
    if (fl & FL_REDOP)
        buf_printf(out, " redop=%d", in->redop);
    if ((fl & FL_TY3) && in->ty3 != in->ty2)
        buf_printf(out, " ty3=%s", ptype_suffix((PType)in->ty3) + 1);
    if (fl & FL_TY2)
        buf_printf(out, " ty2=%s", ptype_suffix((PType)in->ty2) + 1);
    if ((fl & FL_OWN) && in->own)
        buf_puts(out, " own");
}

void ir_ins_text(Buf *out, const Ins *in)
{
    if (in->op >= OP_COUNT_) {
        buf_printf(out, "op%d", in->op);
        return;
    }
    if (in->op == OP_LABEL) {
        buf_printf(out, "L%d:", in->label);
        return;
    }
    if (in->op == OP_COMMENT) {
        buf_printf(out, "// %s", in->text);
        return;
    }
    if (in->guard >= 0)
        buf_printf(out, "@%sv%d ", in->guard_neg ? "!" : "", in->guard);
    buf_printf(out, "%s%s", op_name(in->op), ptype_suffix((PType)in->ty));
    if (in->vec > 1)
        buf_printf(out, ".v%d", in->vec);
    for (int d = 0; d < in->ndst; d++)
        buf_printf(out, "%sv%d", d ? ", " : " ", in->dst[d]);
    for (int s = 0; s < in->nsrc; s++) {
        buf_puts(out, (s || in->ndst) ? ", " : " ");
        dump_opnd(out, in->src[s]);
    }
    dump_fields(out, in);
}

/* A stable, readable text form: one instruction a line, labels at the margin. */
void ir_dump(Func *f, FILE *out)
{
    fprintf(out, "func %s threads %d smem %d\n", f->k->name, f->threads, f->smem_bytes);
    Buf line = { 0 };
    for (int i = 0; i < f->code.n; i++) {
        line.len = 0;
        ir_ins_text(&line, &f->code.v[i]);
        fprintf(out, "%s%s\n", f->code.v[i].op == OP_LABEL ? "" : "    ", line.s);
    }
    buf_free(&line);
}
