/* schedule.c: contract: reorders instructions inside basic blocks so that no point's register
 * pressure rises and values live shorter; never changes what the code computes.
 *
 * The one move it makes is a sink: an instruction goes down to just before the first instruction
 * of its block that reads one of its results, when the registers it defines weigh more than the
 * source registers whose life the move would lengthen. Between the old and the new place the
 * defined registers are then no longer live and at most lighter ones are, so pressure can only
 * fall, everywhere. Walking each block bottom-up lets a chain follow its user down: a 4-wide load
 * sinks to the reduction step that reads it, then the address add that fed it follows.
 *
 * This is what shrinks a tree reduction over values loaded all at once (the cross-warp step of a
 * block reduction loads every warp's partial before combining them): loads move to their
 * combining step and the peak falls from "all partials" to "one load plus the partial results".
 *
 * What may move: pure arithmetic and register reads (ir_pure) without a guard whose results are
 * defined nowhere else; loads too, but only past pure instructions and other loads (never past a
 * store, atomic, barrier, async copy or anything this file does not know). */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

static bool ends_block(const Ins *in) { return in->op == OP_BRA || in->op == OP_RET; }

static int weight(RegClass rc) { return rc == RC_D ? 2 : rc == RC_P ? 0 : 1; }

static bool reads(const Ins *in, int reg)
{
    int u[24];
    int n = ir_uses(in, u);
    for (int k = 0; k < n; k++)
        if (u[k] == reg)
            return true;
    return false;
}

static bool writes(const Ins *in, int reg)
{
    for (int d = 0; d < in->ndst; d++)
        if (in->dst[d] == reg)
            return true;
    return false;
}

typedef struct {
    Func *f;
    int *ndefs;        /* definitions of each register in the function */
    int *nuses;        /* instructions reading each register */
    int *use_block;    /* the block of a register's uses: -1 none yet, -2 several blocks */
} Sched;

static bool movable(Sched *s, const Ins *in)
{
    if (in->guard >= 0 || in->ndst == 0 || !(ir_pure(in->op) || in->op == OP_LD))
        return false;
    for (int d = 0; d < in->ndst; d++)
        if (s->ndefs[in->dst[d]] != 1 || (in->op == OP_LD && s->nuses[in->dst[d]] != 1))
            return false;
    return true;
}

/* Is reg read at or after position q of the block ending at last, or in another block? */
static bool live_at(Sched *s, int reg, int q, int last)
{
    if (s->use_block[reg] == -2)
        return true;
    for (int j = q; j <= last; j++)
        if (reads(&s->f->code.v[j], reg))
            return true;
    return false;
}

static void sink_block(Sched *s, int first, int last)
{
    Ins *code = s->f->code.v;
    int end = ends_block(&code[last]) ? last : last + 1;   /* nothing passes the terminator */
    for (int i = end - 2; i >= first; i--) {
        Ins *in = &code[i];
        if (!movable(s, in))
            continue;
        int q = i + 1;
        for (; q < end; q++) {
            Ins *c = &code[q];
            bool stop = c->op == OP_LABEL || (in->op == OP_LD && !(ir_pure(c->op) || c->op == OP_LD
                                                                    || c->op == OP_COMMENT));
            for (int d = 0; d < in->ndst && !stop; d++)
                stop = reads(c, in->dst[d]);
            for (int k = 0; k < in->nsrc && !stop; k++)
                stop = in->src[k].kind == O_REG && writes(c, in->src[k].reg);
            if (stop)
                break;
        }
        if (q == i + 1)
            continue;
        int gain = 0;
        for (int d = 0; d < in->ndst; d++)
            gain += weight(s->f->regs.v[in->dst[d]].rc);
        for (int k = 0; k < in->nsrc; k++) {
            if (in->src[k].kind != O_REG)
                continue;
            int r = in->src[k].reg, seen = 0;
            for (int k2 = 0; k2 < k; k2++)
                seen |= in->src[k2].kind == O_REG && in->src[k2].reg == r;
            if (!seen && !live_at(s, r, q, last))
                gain -= weight(s->f->regs.v[r].rc);
        }
        if (gain <= 0)
            continue;
        Ins moved = *in;
        memmove(&code[i], &code[i + 1], sizeof(Ins) * (size_t)(q - 1 - i));
        code[q - 1] = moved;
    }
}

void schedule_pressure(Func *f)
{
    int n = f->code.n, nv = f->regs.n;
    Sched s = { f, calloc((size_t)nv + 1, sizeof(int)), calloc((size_t)nv + 1, sizeof(int)),
                malloc(sizeof(int) * ((size_t)nv + 1)) };
    for (int v = 0; v < nv; v++)
        s.use_block[v] = -1;
    int u[24];
    int block = 0;
    for (int i = 0; i < n; i++) {
        Ins *in = &f->code.v[i];
        if (in->op == OP_LABEL && i > 0 && !ends_block(&f->code.v[i - 1]))
            block++;
        for (int d = 0; d < in->ndst; d++)
            s.ndefs[in->dst[d]]++;
        int nu = ir_uses(in, u);
        for (int k = 0; k < nu; k++)
            s.nuses[u[k]]++;
        for (int k = 0; k < nu; k++)
            s.use_block[u[k]] = s.use_block[u[k]] == -1 || s.use_block[u[k]] == block ? block : -2;
        if (ends_block(in))
            block++;
    }
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && !(j > i && f->code.v[j].op == OP_LABEL) && !ends_block(&f->code.v[j]))
            j++;
        int last = j < n && ends_block(&f->code.v[j]) ? j : j - 1;
        sink_block(&s, i, last);
        i = last + 1;
    }
    free(s.ndefs);
    free(s.nuses);
    free(s.use_block);
}
