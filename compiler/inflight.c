/* inflight.c: how many bytes of global memory a thread has requested and not yet waited for, at
 * most, for --report. A memory-bound kernel runs at a copy's speed only with enough bytes in
 * flight on each multiprocessor (blocks x threads x this), and neither the register count nor the
 * occupancy says it: a row kernel of 1024 threads moving 16 bytes each holds two blocks and 32 KiB
 * on an H100, and runs at 0.94 of a copy where 512 threads of 32 bytes (48 KiB) run at 1.00.
 *
 * Needs: the final code of a kernel. Walks it once in order. ld.global: the bytes of one straight
 * run of code (no label, branch or barrier inside) whose addresses do not come from a load of the
 * same run -- ptxas issues those together ahead of their uses, whatever order the text has them
 * in. cp.async: the groups committed and not yet waited for at each cp.async.wait_group (a
 * pipeline's prologue fills its stages before the loop's first wait). TMA: the bytes the block
 * expects on its mbarriers before a wait, shared among its threads. Loads that may overlap across
 * runs (a loop's next iteration) are not added up: the count is low, never high. */
#include <stdlib.h>
#include "tilec.h"

static int load_bytes(const Func *f, const Ins *in)
{
    int size;
    switch (in->ty) {
    case PT_U8: case PT_S8: size = 1; break;
    case PT_B16: case PT_F16: case PT_BF16: case PT_U16: size = 2; break;
    default: {
        RegClass rc = in->ndst > 0 ? f->regs.v[in->dst[0]].rc : RC_R;
        size = rc == RC_D ? 8 : rc == RC_H ? 2 : 4;
    }
    }
    return size * (in->vec ? in->vec : 1);
}

/* The oldest groups leave first: keep the newest `keep` of n. */
static int keep_newest(int *groups, int n, int keep)
{
    if (keep >= n)
        return n;
    for (int i = 0; i < keep; i++)
        groups[i] = groups[n - keep + i];
    return keep;
}

int64_t inflight_bytes(const Func *f)
{
    int nregs = f->regs.n;
    bool *tainted = calloc((size_t)nregs + 1, 1);
    enum { MAX_GROUPS = 64 };
    int groups[MAX_GROUPS], ngroups = 0, open_cp = 0;
    int64_t ld = 0, tma = 0, best = 0;
    if (!tainted)
        return 0;
    for (int i = 0; i <= f->code.n; i++) {
        const Ins *in = i < f->code.n ? &f->code.v[i] : NULL;
        /* a straight run ends at a label, a branch or a barrier: ptxas moves no load across */
        if (!in || in->op == OP_LABEL || in->op == OP_BRA || in->op == OP_BAR || in->op == OP_BARRED ||
            in->op == OP_CLUSTERSYNC) {
            best = ld > best ? ld : best;
            ld = 0;
            for (int r = 0; r < nregs; r++)
                tainted[r] = false;
            if (!in)
                break;
        }
        bool from_load = false;
        for (int s = 0; s < in->nsrc && !from_load; s++)
            from_load = in->src[s].kind == O_REG && in->src[s].reg < nregs && tainted[in->src[s].reg];
        int64_t cp = open_cp;
        for (int g = 0; g < ngroups; g++)
            cp += groups[g];
        int64_t now = cp + (f->threads > 0 ? tma / f->threads : 0);
        switch (in->op) {
        case OP_LD:
            /* a load whose address comes from a load of this run waits for it: not counted */
            if (in->space == SP_GLOBAL && !from_load && !in->once)
                ld += load_bytes(f, in);
            from_load = from_load || in->space == SP_GLOBAL;
            break;
        case OP_CPASYNC:
            if (!in->once)
                open_cp += in->vec;
            break;
        case OP_CPCOMMIT:
            if (ngroups == MAX_GROUPS)
                ngroups = keep_newest(groups, ngroups, MAX_GROUPS - 1);
            groups[ngroups++] = open_cp;
            open_cp = 0;
            break;
        case OP_CPWAIT:
            best = now > best ? now : best;
            ngroups = keep_newest(groups, ngroups, in->inflight);
            break;
        case OP_MBEXPECT:
            tma += in->bytes;
            break;
        case OP_MBWAIT:
            best = now > best ? now : best;
            tma = 0;
            break;
        default:
            break;
        }
        for (int d = 0; d < in->ndst; d++)
            if (in->dst[d] < nregs)
                tainted[in->dst[d]] = from_load;
    }
    free(tainted);
    return best;
}
