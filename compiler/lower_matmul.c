/* lower_matmul.c: acc (+)= a @ b, the part every path shares.
 * The product's plan (matmul_plan.c) says the path. Operands go to shared memory as row-major
 * matrices of their own element type (or are there already: shared tiles, pipelined stage
 * buffers, which say where they came from: MatmulSource), then the path's function computes. */
#include <stdlib.h>
#include <string.h>
#include "lower.h"

int smem_base_reg(Lower *c, int off)
{
    return ir_movsym(c->f, PT_U32, arena_printf(c->a, "tilec_smem+%d", off));
}

/* A window staged whole holds rows x cols / threads of its elements a thread in registers at
 * once: a 64 x 256 f16 window of 128 threads, 128 of them, which beside a 64 x 256 accumulator is
 * more than a thread may have (where a pipelined loop cannot copy an operand -- its version for
 * rows not known to be aligned, lower_version.c -- both are staged in every iteration, and that
 * version's peak is the kernel's). So a larger window goes through in bands of its rows, at most
 * STAGE_ELEMS elements a thread each, every band stored before the next is loaded. */
enum { STAGE_ELEMS = 32 };

/* Rows r0 .. r0 + h of the 2-D window x, or NULL where x is not a plain window of a tensor. The
 * first subscript that keeps its dimension is the window's first dimension. */
static Expr *window_rows(Lower *c, Expr *x, int64_t r0, int64_t h)
{
    if (x->kind != E_INDEX || x->shape.rank != 2)
        return NULL;
    int d = 0;
    while (d < x->nidx && x->idx[d].width == 0)
        d++;
    if (d == x->nidx || x->idx[d].gather || !x->idx[d].start || x->idx[d].width != x->shape.dim[0])
        return NULL;
    Expr *start = x->idx[d].start;
    Expr *off = arena_alloc(c->a, sizeof *off), *at = arena_alloc(c->a, sizeof *at);
    memset(off, 0, sizeof *off);
    off->kind = E_INT;
    off->loc = start->loc;
    off->ival = r0;
    off->type = start->type;
    memset(at, 0, sizeof *at);
    at->kind = E_BINARY;
    at->loc = start->loc;
    at->op = '+';
    at->a = start;
    at->b = off;
    at->type = start->type;
    Expr *w = arena_alloc(c->a, sizeof *w);
    *w = *x;
    w->twin = NULL;
    w->idx = arena_alloc(c->a, sizeof *w->idx * (size_t)x->nidx);
    memcpy(w->idx, x->idx, sizeof *w->idx * (size_t)x->nidx);
    w->idx[d].start = at;
    w->idx[d].width = h;
    w->shape.dim[0] = h;
    return w;
}

/* Stages an operand that is not in shared memory yet. */
static SmemMatrix stage_operand(Lower *c, const MatmulPlan *plan, int side, Expr *e, MatmulSource *src)
{
    bool tf32;
    Expr *x = matmul_operand(e, &tf32);
    SmemMatrix m = { -1, 0, matmul_stored_type(x), tf32, (int)x->shape.dim[0], (int)x->shape.dim[1], SWZ_NONE, 0, false };
    if (x->kind == E_NAME && x->sym->kind == SYM_VAR && x->sym->is_shared) {
        SymInfo *si = x->sym->lower;
        m.base = pipe_buffer(c, NULL, x->sym);
        *src = m.base >= 0 ? MS_STAGE : MS_SHARED;
        if (m.base < 0)
            m.base = smem_base_reg(c, si->smem_off);
        m.pitch = si->smem_ld;
        m.type = x->sym->type;
        return m;
    }
    PipeOperand *po = pipe_find(c, x, NULL);
    if (po) {
        m.pitch = po->pitch;
        m.swz = po->swz;
        m.type = po->type;
        m.stage_bytes = po->held ? 0 : po->bytes;
        m.trans = po->trans;
        m.base = pipe_buffer(c, x, NULL);
        *src = po->tmap >= 0 ? MS_TMA : MS_CPASYNC;
        if (po->swz == SWZ_TURN) {
            /* copied turned around: read as the transposed operand, [cols][rows] (lower_ffma) */
            m.swz = SWZ_NONE;
            m.trans = !po->trans;
        }
        if (po->xpose) {
            /* the path reads the tile turned around: K-major, [cols][rows] in slabs */
            m.swz = SWZ_SLAB;
            m.pitch = m.rows;
            m.trans = true;
        }
        return m;
    }
    *src = MS_REGS;
    m.pitch = matmul_stage_pitch(plan, side, m.type, m.cols);
    int off = smem_alloc(c, m.rows * m.pitch * type_size(m.type));
    /* a window is read along its stored rows, whichever its layout: the store below takes any */
    c->f->cur_line = x->loc.line;
    m.base = smem_base_reg(c, off);
    int64_t h = m.rows;
    while (h % 2 == 0 && h / 2 * m.cols >= (int64_t)c->threads * 8 && h * m.cols > (int64_t)c->threads * STAGE_ELEMS)
        h /= 2;
    if (h < m.rows && window_rows(c, x, 0, h)) {
        for (int64_t r0 = 0; r0 < m.rows; r0 += h) {
            int band = r0 ? ir_bin(c->f, OP_ADD, PT_U32, R(m.base), IMM(r0 * m.pitch * type_size(m.type))) : m.base;
            store_tile_smem(c, load_window_any_layout(c, window_rows(c, x, r0, h)), band, m.pitch, m.type);
        }
        return m;
    }
    Tile v = x->kind == E_INDEX ? load_window_any_layout(c, x) : lower_expr(c, x, NULL);
    store_tile_smem(c, v, m.base, m.pitch, m.type);
    return m;
}

/* How operand `side` of mm reached the product, in the report's words. */
static const char *operand_how(Lower *c, const MatmulPlan *plan, Expr *mm, int side, MatmulSource src)
{
    bool tf32;
    Expr *x = matmul_operand(side ? mm->b : mm->a, &tf32);
    PipeOperand *po = src >= MS_CPASYNC ? pipe_find(c, x, NULL) : NULL;
    const char *once = po && po->held ? ", once (the loop does not move it)" : "";
    switch (src) {
    case MS_REGS:
        if (side == 0 && plan->a_value && plan->row->path == MM_WGMMA_RA)
            return "from its registers (a value)";
        return x->kind == E_INDEX ? "loaded where used (no pipelined copy)" : "a value, stored to shared memory first";
    case MS_SHARED:
        return "from its shared var";
    case MS_STAGE:
        return "from its shared var, filled by the loop's copies";
    case MS_CPASYNC:
        if (!po)
            return "by cp.async";
        if (po->swz == SWZ_TURN)
            return arena_printf(c->a, "by cp.async in 4-byte pieces, turned K-major%s", once);
        if (po->xpose)
            return arena_printf(c->a, "by cp.async, turned K-major by the threads%s", once);
        return arena_printf(c->a, "by cp.async in %d-byte pieces%s", async_piece_bytes(c, po->window, po->pitch),
                            once);
    case MS_TMA:
        return arena_printf(c->a, "by TMA%s%s", po && po->mc ? ", multicast in a cluster of two" : "", once);
    }
    return "";
}

/* Notes for the report how mm was computed (its path, its operands' ways, the loop's pipeline):
 * once a text, under the `@`'s place; a loop versioned on alignment says which version is which. */
static void note_product(Lower *c, const MatmulPlan *plan, Expr *mm, MatmulSource sa, MatmulSource sb)
{
    KernelMeta *m = c->meta;
    const char *pipe = "";
    if (c->pipe)
        pipe = arena_printf(c->a, "; pipeline(%d)%s%s", c->pipe->S, c->pipe->refill ? ", one stage refilled" : "",
                            !c->pipe->ws ? "" : c->pipe->producer == 128 ? ", a producer warpgroup" : ", a producer warp");
    const char *version = !c->versioning ? "" : c->version_aligned ? "where the launch is aligned: " : "otherwise: ";
    const char *why = matmul_plan_why(c, plan);
    const char *how = arena_printf(c->a, "%s%s%s%s%s; A %s; B %s%s", version, plan->row->name, why ? " (" : "",
                                   why ? why : "", why ? ")" : "", operand_how(c, plan, mm, 0, sa),
                                   operand_how(c, plan, mm, 1, sb), pipe);
    int i = 0;
    while (i < m->nproducts && (m->products[i].line != mm->loc.line || m->products[i].col != mm->loc.col))
        i++;
    if (i == MAX_PRODUCT_NOTES)
        return;
    if (i == m->nproducts) {
        m->products[i].line = mm->loc.line;
        m->products[i].col = mm->loc.col;
        m->products[i].nhow = 0;
        m->nproducts++;
    }
    for (int j = 0; j < m->products[i].nhow; j++)
        if (!strcmp(m->products[i].how[j], how))
            return;
    if (m->products[i].nhow < 2)
        m->products[i].how[m->products[i].nhow++] = how;
    /* a versioned loop's aligned version is lowered first (lower_version.c) but reads second */
    if (m->products[i].nhow == 2 && !c->version_aligned && c->versioning) {
        const char *t = m->products[i].how[0];
        m->products[i].how[0] = m->products[i].how[1];
        m->products[i].how[1] = t;
    }
}

/* acc (+)= mm, for the `@` expression mm. */
void lower_matmul(Lower *c, Tile *acc, Expr *mm, bool accumulate)
{
    Func *f = c->f;
    Layout *L = &acc->L;
    MatmulPlan *plan = matmul_plan(c, mm);
    PType at = mm->type == TY_I32 ? PT_S32 : PT_F32;   /* the accumulator's: i32 for 8-bit integers */
    /* a wgmma group left in flight writes acc until a later wait: only where nothing but the
       next product touches acc (accumulating in its own layout) */
    if (c->pipe && (!accumulate || !layout_eq(&plan->acc, L)))
        c->pipe->wg_keep = 0;
    if (!layout_eq(&plan->acc, L)) {
        /* acc was laid out for another matmul (a var accumulated by @ of other operand types):
           compute this product in its own layout and move it over */
        Tile t = tile_new(c, mm->type, plan->acc);
        lower_matmul(c, &t, mm, false);
        t = to_layout(c, t, L);
        for (int s = 0; s < layout_slots(L); s++) {
            Opnd x = t.v[s];
            if (accumulate) {
                ir_bin_to(f, OP_ADD, at, acc->v[s].reg, acc->v[s], x);
            } else {
                Ins *in = emit_ins(f, OP_MOV, at);
                in->dst[0] = acc->v[s].reg;
                in->ndst = 1;
                in->src[0] = x;
                in->nsrc = 1;
            }
        }
        return;
    }
    const char *saved = f->cur_what;
    int nslots = layout_slots(L);
    if (!accumulate)
        for (int s = 0; s < nslots; s++) {
            Ins *in = emit_ins(f, OP_MOV, at);
            in->dst[0] = acc->v[s].reg;
            in->ndst = 1;
            in->src[0] = at == PT_S32 ? IMM(0) : FIMM(0);
            in->nsrc = 1;
        }
    f->cur_what = "matmul operand";
    MatmulSource sa = MS_REGS, sb;
    SmemMatrix ma, mb;
    if (plan->a_value && plan->row->path == MM_WGMMA_RA) {
        /* A a value: its registers are wgmma's A fragments where B arrives in its slab (else the
           fallback stages A like any value) */
        mb = stage_operand(c, plan, 1, mm->b, &sb);
        matmul_set_sources(plan, MS_REGS, sb);
        if (plan->row->path == MM_WGMMA_RA) {
            bool tf32;
            Expr *x = matmul_operand(mm->a, &tf32);
            Layout want = wgmma_value_layout(c, x->type, plan->M, plan->K);
            /* f16(v) of an f32 v: the fragments' pack rounds v to nearest even as the cast would,
               so the cast's own rounding is left out */
            bool narrowed = x->kind == E_CAST && x->a->type == TY_F32;
            Tile av = to_layout(c, lower_expr(c, narrowed ? x->a : x, &want), &want);
            av.type = x->type;
            /* B came by the loop's copies (the row needs it so): the loop's barrier publishes it */
            note_product(c, plan, mm, MS_REGS, sb);
            lower_wgmma_value(c, acc, &av, mb);
            f->cur_what = saved;
            return;
        }
        ma = stage_operand(c, plan, 0, mm->a, &sa);
    } else {
        ma = stage_operand(c, plan, 0, mm->a, &sa);
        mb = stage_operand(c, plan, 1, mm->b, &sb);
    }
    matmul_set_sources(plan, sa, sb);
    bool pipelined = sa >= MS_STAGE && sb >= MS_STAGE;
    if (!pipelined)
        ir_bar(f);                 /* staged operands visible to every thread */
    note_product(c, plan, mm, sa, sb);
    plan->row->lower(c, acc, plan, ma, mb);
    /* the next writer of these buffers waits for this matmul's readers (a pipelined loop puts
       its barrier at the top of each iteration instead) */
    if (!pipelined)
        ir_bar(f);
    f->cur_what = saved;
}
