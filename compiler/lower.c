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
