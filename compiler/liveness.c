/* liveness.c: where each register is live, as hull intervals over instruction positions.
 * Needs: a complete Func (labels placed, branches resolved). Gives: per register its hull
 * interval in two versions (plain: backwards liveness; demand: intersected with "written on some
 * path", see below), and from them the pressure per position. Register allocation names
 * registers and measures the peak with them; address splitting asks whether a longer life
 * would raise that peak. */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

typedef struct { int first, last; int succ[2]; int nsucc; } Block;



static void set(uint64_t *b, int i) { b[i >> 6] |= 1ull << (i & 63); }

/* The index of the lowest set bit of x != 0 (a de Bruijn sequence picks it out). */
static int lowest_bit(uint64_t x)
{
    static const int index[64] = {
        0, 1, 48, 2, 57, 49, 28, 3, 61, 58, 50, 42, 38, 29, 17, 4, 62, 55, 59, 36, 53, 51, 43, 22,
        45, 39, 33, 30, 24, 18, 12, 5, 63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23,
        11, 46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9, 13, 8, 7, 6,
    };
    return index[((x & -x) * 0x03f79d71b4cb0a89u) >> 58];
}
static void clr(uint64_t *b, int i) { b[i >> 6] &= ~(1ull << (i & 63)); }

typedef Vec(Block) Blocks;

/* Each register's hull: from its first to its last touch, live-in/out sets counted at the block
 * ends. */
static void hull_intervals(Func *f, const Blocks *blocks, const uint64_t *livein, const uint64_t *liveout,
                           const int *greg, int nwords, Interval *iv)
{
    int n = f->code.n, uses[24];
    for (int v = 0; v < f->regs.n; v++)
        iv[v] = (Interval){ v, n, -1 };
#define TOUCH(v, pos) do { if ((pos) < iv[v].start) iv[v].start = (pos); if ((pos) > iv[v].end) iv[v].end = (pos); } while (0)
    for (int bi = 0; bi < blocks->n; bi++) {
        const Block *b = &blocks->v[bi];
        for (int side = 0; side < 2; side++) {
            const uint64_t *set_ = (side ? liveout : livein) + (size_t)bi * nwords;
            for (int w = 0; w < nwords; w++)
                for (uint64_t x = set_[w]; x; x &= x - 1) {
                    int v = greg[w * 64 + lowest_bit(x)];
                    TOUCH(v, side ? b->last : b->first);
                }
        }
        for (int i = b->first; i <= b->last; i++) {
            Ins *in = &f->code.v[i];
            for (int d = 0; d < in->ndst; d++)
                TOUCH(in->dst[d], i);
            int nu = ir_uses(in, uses);
            for (int u = 0; u < nu; u++)
                TOUCH(uses[u], i);
        }
    }
#undef TOUCH
}

int reg_weight(RegClass rc) { return rc == RC_D ? 2 : rc == RC_P ? 0 : 1; }

void liveness(Func *f, Liveness *lv)
{
    int n = f->code.n, nv = f->regs.n;
    /* basic blocks */
    int *label_block = malloc(sizeof(int) * (size_t)(f->nlabels + 1));
    int *block_of = malloc(sizeof(int) * (size_t)(n + 1));
    Blocks blocks = { 0 };
    for (int i = 0; i < n;) {
        Block b = { i, i, { -1, -1 }, 0 };
        int j = i;
        while (j < n) {
            Ins *in = &f->code.v[j];
            if (j > i && in->op == OP_LABEL)
                break;
            j++;
            if (in->op == OP_BRA || in->op == OP_RET)
                break;
        }
        b.last = j - 1;
        vec_push(&blocks, b);
        for (int k = i; k < j; k++)
            block_of[k] = blocks.n - 1;
        if (f->code.v[i].op == OP_LABEL)
            label_block[f->code.v[i].label] = blocks.n - 1;
        i = j;
    }
    for (int bi = 0; bi < blocks.n; bi++) {
        Block *b = &blocks.v[bi];
        Ins *in = &f->code.v[b->last];
        bool falls = !(in->op == OP_RET || (in->op == OP_BRA && in->guard < 0));
        if (in->op == OP_BRA)
            b->succ[b->nsucc++] = label_block[in->label];
        if (falls && bi + 1 < blocks.n)
            b->succ[b->nsucc++] = bi + 1;
    }
    /* Only a register read in a block before any write of it there (upward exposed) can be
       live into a block, so the dataflow's bit sets hold those alone, renumbered densely: tile
       code's registers mostly live and die inside one block, and sets over every register made
       ifs and loops by the thousand take blocks x registers of time and memory. */
    int nb = blocks.n;
    int uses[24];
    int *gid = malloc(sizeof(int) * (size_t)(nv + 1)), *greg = malloc(sizeof(int) * (size_t)(nv + 1));
    int *seen_def = malloc(sizeof(int) * (size_t)(nv + 1));
    int ng = 0;
    for (int v = 0; v < nv; v++)
        gid[v] = -1, seen_def[v] = -1;
    for (int bi = 0; bi < nb; bi++) {
        Block *b = &blocks.v[bi];
        for (int i = b->first; i <= b->last; i++) {
            Ins *in = &f->code.v[i];
            int nu = ir_uses(in, uses);
            for (int u = 0; u < nu; u++)
                if (seen_def[uses[u]] != bi && gid[uses[u]] < 0) {
                    gid[uses[u]] = ng;
                    greg[ng++] = uses[u];
                }
            for (int d = 0; d < in->ndst; d++)
                seen_def[in->dst[d]] = bi;
        }
    }
    free(seen_def);
    int nwords = (ng + 63) / 64 + 1;
    /* backward dataflow: live-in = use ∪ (live-out − def) */
    uint64_t *livein = calloc((size_t)nb * (size_t)nwords, 8), *liveout = calloc((size_t)nb * (size_t)nwords, 8);
    uint64_t *tmp = calloc((size_t)nwords, 8);
    if (!gid || !greg || !livein || !liveout || !tmp)
        die("out of memory");
    for (bool changed = true; changed;) {
        changed = false;
        for (int bi = nb - 1; bi >= 0; bi--) {
            Block *b = &blocks.v[bi];
            uint64_t *out = liveout + (size_t)bi * nwords;
            for (int s = 0; s < b->nsucc; s++) {
                uint64_t *in = livein + (size_t)b->succ[s] * nwords;
                for (int w = 0; w < nwords; w++)
                    out[w] |= in[w];
            }
            memcpy(tmp, out, (size_t)nwords * 8);
            for (int i = b->last; i >= b->first; i--) {
                Ins *in = &f->code.v[i];
                for (int d = 0; d < in->ndst; d++)
                    if (gid[in->dst[d]] >= 0)
                        clr(tmp, gid[in->dst[d]]);
                int nu = ir_uses(in, uses);
                for (int u = 0; u < nu; u++)
                    if (gid[uses[u]] >= 0)
                        set(tmp, gid[uses[u]]);
            }
            uint64_t *li = livein + (size_t)bi * nwords;
            if (memcmp(li, tmp, (size_t)nwords * 8)) {
                memcpy(li, tmp, (size_t)nwords * 8);
                changed = true;
            }
        }
    }
    /* Forward: a register no path has written yet holds no value, so it is not live there even
       where a read follows on some path. The case: a pipelined loop's carried fragments, written
       in its first iteration's block or by the previous iteration, are read at the top of the
       body; backwards alone they are live from the kernel's entry, through every loop before
       (each unrolled copy of a loop adding its fragments to all the copies before it). */
    uint64_t *defin = calloc((size_t)nb * (size_t)nwords, 8), *defout = calloc((size_t)nb * (size_t)nwords, 8);
    if (!defin || !defout)
        die("out of memory");
    for (bool changed = true; changed;) {
        changed = false;
        for (int bi = 0; bi < nb; bi++) {
            Block *b = &blocks.v[bi];
            uint64_t *din = defin + (size_t)bi * nwords, *dout = defout + (size_t)bi * nwords;
            memcpy(tmp, din, (size_t)nwords * 8);
            for (int i = b->first; i <= b->last; i++) {
                Ins *in = &f->code.v[i];
                for (int d = 0; d < in->ndst; d++)
                    if (gid[in->dst[d]] >= 0)
                        set(tmp, gid[in->dst[d]]);
            }
            if (memcmp(dout, tmp, (size_t)nwords * 8)) {
                memcpy(dout, tmp, (size_t)nwords * 8);
                changed = true;
            }
            for (int s = 0; s < b->nsucc; s++) {
                uint64_t *sin = defin + (size_t)b->succ[s] * nwords;
                for (int w = 0; w < nwords; w++)
                    if ((sin[w] | dout[w]) != sin[w]) {
                        sin[w] |= dout[w];
                        changed = true;
                    }
            }
        }
    }
    /* hull intervals: of the plain liveness for the registers the PTX names (ptxas allocates its
       own, and measured the names alone move its schedule: the names the intersection gives
       made tf32 matmuls 1-3% slower on an H100), of the intersected one for the demand */
    Interval *iv = malloc(sizeof(Interval) * (size_t)(nv + 1)), *ivp = malloc(sizeof(Interval) * (size_t)(nv + 1));
    hull_intervals(f, &blocks, livein, liveout, greg, nwords, iv);
    for (size_t w = 0; w < (size_t)nb * (size_t)nwords; w++) {
        livein[w] &= defin[w];
        liveout[w] &= defout[w];
    }
    free(defin);
    free(defout);
    hull_intervals(f, &blocks, livein, liveout, greg, nwords, ivp);    lv->plain = iv;
    lv->demand = ivp;
    free(gid);
    free(greg);
    free(tmp);
    free(livein);
    free(liveout);
    free(label_block);
    free(block_of);
    vec_free(&blocks);
}

void liveness_free(Liveness *lv)
{
    free(lv->plain);
    free(lv->demand);
    lv->plain = lv->demand = NULL;
}

int pressure(const Func *f, const Interval *iv, int *p, int *at)
{
    int n = f->code.n;
    for (int i = 0; i <= n; i++)
        p[i] = 0;
    for (int v = 0; v < f->regs.n; v++) {
        if (iv[v].end < 0)
            continue;
        int w = reg_weight(f->regs.v[v].rc);
        p[iv[v].start] += w;
        p[iv[v].end + 1] -= w;
    }
    int cur = 0, peak = 0;
    if (at)
        *at = 0;
    for (int i = 0; i < n; i++) {
        cur += p[i];
        p[i] = cur;
        if (cur > peak) {
            peak = cur;
            if (at)
                *at = i;
        }
    }
    p[n] = 0;
    return peak;
}
