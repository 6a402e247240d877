/* lower_smem.c: the block's shared memory during lowering: allocation, checked against what
 * any GPU offers, and the scratch area that reductions and layout changes share. */
#include "lower.h"

/* ---- shared memory */

static void reuse(Lower *c);

/* The sizes are counted in 64 bits and the limit is checked here, at the statement that asks:
 * past what any GPU offers, the first allocation over is an error there and every later one gets
 * offset 0 (the kernel fails; its code is never emitted). */
int smem_alloc_aligned(Lower *c, int bytes, int align)
{
    int64_t off = ((int64_t)c->smem_top + align - 1) & ~(int64_t)(align - 1);
    if (bytes < 0 || off + bytes > MAX_SMEM_BYTES) {
        if (!c->smem_over) {
            error_at(c->loc, "kernel '%s' needs %lld bytes of shared memory per block here; no GPU "
                     "offers more than %d: use smaller tiles or fewer pipeline stages", c->k->name,
                     (long long)off + bytes, MAX_SMEM_BYTES);
            /* what multiplied it: each unrolled copy of a loop has buffers of its own */
            if (c->unrolled)
                note_at(c->unrolled->loc, "this loop is unrolled (constant bounds, few trips): the "
                        "statement runs in %lld copies, each with shared buffers of its own; a loop "
                        "whose bound is a run-time value keeps one", (long long)c->unroll_copies);
        }
        c->smem_over = c->failed = true;
        off = bytes = 0;
    }
    if (!c->smem_over && bytes > 0 && off < c->reuse_hi && off + bytes > c->reuse_lo)
        reuse(c);
    /* every allocation is listed (an empty one past the limit), so callers may name the last */
    SmemBuf b = { (int)off, bytes, c->f->cur_what, 0, c->f->code.n };
    vec_push(&c->f->smem_bufs, b);
    if (c->smem_over)
        return 0;
    c->smem_top = (int)(off + bytes);
    if (c->smem_top > c->smem_peak)
        c->smem_peak = c->smem_top;
    return (int)off;
}

/* Memory a pipelined loop released is quiet: the loop ended with cp.async.wait_group 0 and a
 * barrier, so every thread's reads, writes and copies of it are done; a block's is not (its
 * last readers may still be reading), and takes a barrier. Generic accesses are not ordered
 * with the async proxy (TMA, wgmma) of a later owner without a proxy fence, and an mbarrier's
 * memory is reused only after mbarrier.inval (PTX ISA, mbarrier): on sm_90 each thread fences,
 * one thread invalidates, and a barrier publishes both before the new owner's first access. */
static void reuse(Lower *c)
{
    Func *f = c->f;
    bool fence = c->target->tma;
    if (fence)
        emit_ins(f, OP_FENCEPROXY, PT_B32);
    if (c->nmbar_dead) {
        int leader = ir_setp(f, CMP_EQ, PT_U32, R(c->tid), IMM(0));
        for (int i = 0; i < c->nmbar_dead; i++) {
            int r = ir_movsym(f, PT_U32, arena_printf(c->a, "tilec_smem+%d", c->mbar_dead[i]));
            Ins *in = emit_ins(f, OP_MBINVAL, PT_B64);
            in->src[0] = R(r);
            in->nsrc = 1;
            in->guard = leader;
        }
    }
    if (fence || c->nmbar_dead || c->reuse_bar)
        ir_bar(f);
    c->nmbar_dead = 0;
    c->reuse_bar = false;
    c->reuse_lo = c->reuse_hi = 0;
}

void smem_release(Lower *c, int mark, bool quiet)
{
    if (c->smem_over || c->smem_top <= mark || c->mbar_untracked)
        return;
    int dead = 0;
    for (int i = 0; i < c->nmbar_live; i++)
        dead += c->mbar_live[i] >= mark;
    if (c->nmbar_dead + dead > (int)(sizeof c->mbar_dead / sizeof *c->mbar_dead))
        return;     /* no room to remember them: the memory is kept (never reused) */
    int keep = 0;
    for (int i = 0; i < c->nmbar_live; i++) {
        if (c->mbar_live[i] < mark)
            c->mbar_live[keep++] = c->mbar_live[i];
        else
            c->mbar_dead[c->nmbar_dead++] = c->mbar_live[i];
    }
    c->nmbar_live = keep;
    c->reuse_bar |= !quiet;
    if (c->reuse_hi <= c->reuse_lo)
        c->reuse_lo = c->reuse_hi = mark;
    c->reuse_lo = c->reuse_lo < mark ? c->reuse_lo : mark;
    c->reuse_hi = c->reuse_hi > c->smem_top ? c->reuse_hi : c->smem_top;
    c->smem_top = mark;
}

void smem_retire_mbarriers(Lower *c, int live)
{
    while (c->nmbar_live > live && c->nmbar_dead < (int)(sizeof c->mbar_dead / sizeof *c->mbar_dead))
        c->mbar_dead[c->nmbar_dead++] = c->mbar_live[--c->nmbar_live];
    if (c->nmbar_dead)
        reuse(c);
}

void smem_note_mbarriers(Lower *c, int off, int n)
{
    for (int i = 0; i < n; i++) {
        if (c->nmbar_live == (int)(sizeof c->mbar_live / sizeof *c->mbar_live)) {
            c->mbar_untracked = true;   /* too many to follow: nothing is released from now on */
            return;
        }
        c->mbar_live[c->nmbar_live++] = off + 8 * i;
    }
}

int smem_alloc(Lower *c, int bytes) { return smem_alloc_aligned(c, bytes, 128); }

/* The scratch area is shared by every reduction and layout change. Before writing it, wait until
 * earlier readers are done; after writing, wait until the writes are visible. */
void scratch_begin_write(Lower *c, int bytes)
{
    if (bytes > c->scratch_size)
        c->scratch_size = bytes;
    if (c->scratch_read)
        ir_bar(c->f);
    c->scratch_read = false;
}

void scratch_end_write(Lower *c)
{
    ir_bar(c->f);
    c->scratch_read = true;
}

int scratch_base_reg(Lower *c)
{
    return ir_movsym(c->f, PT_U32, "tilec_scratch");
}
