/* lower.c: a checked kernel -> thread-level IR: the lowering pipeline of one kernel. Its steps
 * have files of their own (the layering is in lower.h).
 * Needs: check_program succeeded. Fills: Func (virtual registers), KernelMeta (args, grid,
 * assumes, shared memory). */
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

Func *lower_kernel(Arena *a, Program *p, Kernel *k, Options *opt, KernelMeta *meta)
{
    Lower lc;
    memset(&lc, 0, sizeof lc);
    /* a kernel compiled again (compile.c: without a producer warp, or with lets demoted) starts
       from a blank record: a tensor map the last try registered would be found and reused
       without marking its tensor's pointer for the launcher's alignment check */
    memset(meta, 0, sizeof *meta);
    Lower *c = &lc;
    c->a = a;
    c->p = p;
    c->k = k;
    c->opt = opt;
    c->target = opt && opt->arch && target_of(opt->arch) ? target_of(opt->arch) : target_default();
    c->meta = meta;
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
    plan_layouts(c, k->body);
    split_plan(c);
    lower_block(c, k->body);
    split_exit(c);
    /* a kernel whose blocks may share copies in pairs (lower_warpspec.c) */
    if (c->ws_cluster)
        meta->cluster = 2;
    emit_ins(c->f, OP_RET, PT_B32);
    ws_tail_emit(c);
    c->loc = k->loc;   /* the scratch serves the whole kernel */
    /* ... above every buffer, released ones included: no reuse code after the return */
    c->smem_top = c->smem_peak;
    c->reuse_lo = c->reuse_hi = 0;
    /* the scratch area goes after the named shared buffers */
    int scratch = c->scratch_size ? smem_alloc(c, c->scratch_size) : c->smem_top;
    if (c->scratch_size) {
        c->f->smem_bufs.v[c->f->smem_bufs.n - 1].name = "the scratch area";
        c->f->smem_bufs.v[c->f->smem_bufs.n - 1].at = 0;   /* its addresses are made anywhere */
    }
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
    for (int i = 0; i < k->nviews; i++) {   /* a view's vector accesses rest on its tensor's pointer */
        Sym *v = k->views[i];
        SymInfo *si = v->lower;
        if (si && si->vec_ok)
            meta->args[v->param_index].align = 16;
    }
    if (c->failed) {
        func_free(c->f);
        return NULL;
    }
    return c->f;
}
