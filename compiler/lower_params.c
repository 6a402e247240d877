/* lower_params.c: the kernel's ABI: its arguments as KernelMeta lists them, the loads of its
 * parameters (tensor extents and strides) and special registers, and grid() and assume()
 * expressions as launch-time RPN. */
#include "lower.h"

/* ---- kernel entry: parameters and special registers */

static ElemType scalar_param_type(Sym *s) { return s->type; }

/* A stride written as an expression of sizes and constants (check.c), in an s64 register: the
 * S * D of a [B, S, H, D] view passes 2^31 long before the tensor's bytes do. */
static Opnd stride_expr64(Lower *c, Expr *e)
{
    if (e->kind == E_INT)
        return R(ir_mov(c->f, PT_S64, IMM(e->ival)));
    if (e->kind == E_NAME) {
        if (e->sym->kind != SYM_SIZE)
            die("lower: stride term '%s' is not a size", e->name);
        return R(ir_cvt(c->f, PT_S64, PT_S32, ((SymInfo *)e->sym->lower)->val.v[0]));
    }
    if (e->kind != E_BINARY || (e->op != '+' && e->op != '*'))
        die("lower: stride expression of kind %d", e->kind);
    Opnd a = e->a->kind == E_INT ? IMM(e->a->ival) : stride_expr64(c, e->a);
    Opnd b = e->b->kind == E_INT ? IMM(e->b->ival) : stride_expr64(c, e->b);
    if (a.kind == O_IMM) {    /* PTX wants a register first */
        Opnd t = a;
        a = b;
        b = t;
    }
    return R(ir_bin(c->f, e->op == '+' ? OP_ADD : OP_MUL, PT_S64, a, b));
}

void load_params(Lower *c)
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
            if (s->stride[d].expr)
                si->stride64[d] = (st = stride_expr64(c, s->stride[d].expr)).reg;
            else if (!s->has_default_strides)
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
    /* transposed views (check.c): the same pointer, two dimensions and their strides swapped */
    for (int i = 0; i < c->k->nviews; i++) {
        Sym *v = c->k->views[i];
        SymInfo *si = arena_alloc(c->a, sizeof *si), *of = v->view_of->lower;
        *si = *of;
        si->vec_ok = false;
        int d0 = v->view_d0, d1 = v->view_d1;
        Opnd x = si->dim[d0];
        si->dim[d0] = si->dim[d1], si->dim[d1] = x;
        x = si->stride[d0];
        si->stride[d0] = si->stride[d1], si->stride[d1] = x;
        int r = si->stride64[d0];
        si->stride64[d0] = si->stride64[d1], si->stride64[d1] = r;
        v->lower = si;
    }
    f->cur_what = "thread index";
    c->tid = ir_movsym(f, PT_U32, "%tid.x");
    static const char *const ct[3] = { "%ctaid.x", "%ctaid.y", "%ctaid.z" };
    f->cur_what = "block index";
    for (int d = 0; d < 3; d++)
        c->ctaid[d] = ir_movsym(f, PT_U32, ct[d]);
    block_order(c);
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
    if (e.expr)
        return rpn_text(c, e.expr, "a stride expression");
    if (!e.size)
        return arena_printf(c->a, "%lld", (long long)e.cval);
    return arena_printf(c->a, "a%d", c->k->nparams + e.size->size_index);
}

/* The RPN of a grid() or assume() expression. The runtime reads at most META_MAX_RPN tokens; the
 * checker refused longer expressions at their source (check.c), so one here is a compiler bug. */
const char *rpn_text(Lower *c, Expr *e, const char *what)
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
