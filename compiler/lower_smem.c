/* lower_smem.c: the block's shared memory during lowering: allocation, checked against what
 * any GPU offers, and the scratch area that reductions and layout changes share. */
#include "lower.h"

/* ---- shared memory */

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
    /* every allocation is listed (an empty one past the limit), so callers may name the last */
    SmemBuf b = { (int)off, bytes, c->f->cur_what, 0 };
    vec_push(&c->f->smem_bufs, b);
    if (c->smem_over)
        return 0;
    c->smem_top = (int)(off + bytes);
    return (int)off;
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
    int r = new_reg(c->f, RC_R);
    Ins *in = emit_ins(c->f, OP_MOVSYM, PT_U32);
    in->dst[0] = r;
    in->ndst = 1;
    in->src[0] = SYM("tilec_scratch");
    in->nsrc = 1;
    return r;
}
