/* regalloc.c: liveness over the CFG, then linear-scan allocation per register class.
 * Needs: a complete Func. Fills: VReg.phys, Func.nphys, the predicted peak (registers per thread,
 * where, and which values). There is no spilling: a kernel over budget is an error that names
 * the values live at the peak.
 *
 * Linear scan, not graph colouring: intervals come out of tile code almost nested (a tile's
 * registers live from its load to its last use), so the hull intervals lose little, the scan is
 * O(n log n) on kernels with tens of thousands of instructions, and the peak it measures is the
 * number the report needs. */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

typedef struct { int first, last; int succ[2]; int nsucc; } Block;

typedef struct { uint64_t *w; } Bits;

static int nwords;

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

const char *reg_value_name(Arena *a, const char *name, ElemType t, Shape s)
{
    if (s.rank == 0)
        return arena_printf(a, "%s: %s", name, type_name(t));
    if (s.rank == 1)
        return arena_printf(a, "%s: %s[%lld]", name, type_name(t), (long long)s.dim[0]);
    return arena_printf(a, "%s: %s[%lld,%lld]", name, type_name(t), (long long)s.dim[0], (long long)s.dim[1]);
}

int reg_budget(int threads)
{
    int r = 65536 / (threads > 0 ? threads : 1);
    if (r > 255)
        r = 255;
    return r >= 255 ? 255 : r & ~7;
}

/* The .maxnreg tilec binds ptxas to: the demand plus slack, never across an occupancy boundary.
 * What costs speed is not registers but occupancy: a block
 * of T threads using R registers lets floor(65536 / (T * R)) blocks share a multiprocessor (R in
 * units of 8, the hardware's allocation unit), and one register over a boundary can halve that
 * (layernorm at 1024 threads: 2 blocks at 32 registers, 1 at 40 -- measured 0.165 against
 * 0.239 ms on an H200). So the cap is the most registers that keep the occupancy the predicted
 * demand allows, with a tenth (at least REG_SLACK) of slack on the demand: ptxas reschedules our
 * code and the demand is an estimate. Below the cap ptxas is free to use what it likes; above it
 * would only lose blocks. ptxas raises any cap below 24 to 24; the budget rules. */
enum { REG_SLACK = 4, REG_FILE = 65536, MAX_BLOCKS_SM = 32 };

static int blocks_per_sm(int threads, int regs, int sm_threads)
{
    int by_regs = REG_FILE / (threads * regs);
    int by_threads = sm_threads / threads;
    int b = by_regs < by_threads ? by_regs : by_threads;
    return b < MAX_BLOCKS_SM ? b : MAX_BLOCKS_SM;
}

int reg_cap_slack(int pred)
{
    return pred / 10 > REG_SLACK ? pred / 10 : REG_SLACK;
}

static int ptx_maxnreg(int pred, int budget, int threads, int sm_threads, int *boundary_out)
{
    int slack = pred / 10 > REG_SLACK ? pred / 10 : REG_SLACK;
    int limit = budget > 0 && budget < 255 ? budget : 255;
    /* the occupancy the demand (less its slack) allows, and the most registers that keep it */
    int floor_regs = (pred - slack + 7) & ~7;
    if (floor_regs < 24)
        floor_regs = 24;
    *boundary_out = limit;
    if (floor_regs > limit)
        return limit;
    int want = blocks_per_sm(threads, floor_regs, sm_threads);
    int boundary = floor_regs;
    for (int r = floor_regs + 8; r <= limit && blocks_per_sm(threads, r, sm_threads) >= want; r += 8)
        boundary = r;
    /* and no more than the demand needs: where threads, not registers, bound occupancy the
       boundary is loose and ptxas would fill it, making its count unpredictable for nothing
       (registers are allocated in units of 8, so an unrounded cap costs no occupancy) */
    *boundary_out = boundary;
    int cap = pred + slack < boundary ? pred + slack : boundary;
    if (cap < 24)
        cap = 24;
    return cap > limit ? limit : cap;
}

static int weight(RegClass rc) { return rc == RC_D ? 2 : rc == RC_P ? 0 : 1; }

typedef struct { int v, start, end; } Interval;

static int by_start(const void *a, const void *b)
{
    const Interval *x = a, *y = b;
    return x->start != y->start ? x->start - y->start : x->v - y->v;
}

/* A binary min-heap of (key, phys); the idle heaps use the register number as the key. */
typedef struct { int key, phys; } HeapItem;
typedef Vec(HeapItem) Heap;

static bool heap_less(HeapItem a, HeapItem b) { return a.key != b.key ? a.key < b.key : a.phys < b.phys; }

static void heap_push(Heap *h, int key, int phys)
{
    HeapItem x = { key, phys };
    vec_push(h, x);
    for (int i = h->n - 1; i > 0 && heap_less(h->v[i], h->v[(i - 1) / 2]); i = (i - 1) / 2) {
        HeapItem t = h->v[i];
        h->v[i] = h->v[(i - 1) / 2];
        h->v[(i - 1) / 2] = t;
    }
}

static HeapItem heap_pop(Heap *h)
{
    HeapItem top = h->v[0];
    h->v[0] = h->v[--h->n];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && heap_less(h->v[l], h->v[m]))
            m = l;
        if (r < h->n && heap_less(h->v[r], h->v[m]))
            m = r;
        if (m == i)
            break;
        HeapItem t = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = t;
        i = m;
    }
    return top;
}

typedef struct { const char *what; int regs; } Holder;

/* The statement of s that starts on line (the innermost, found first in program order). */
static const Stmt *stmt_at_line(const Stmt *s, int line)
{
    if (!s)
        return NULL;
    if (s->kind == S_BLOCK) {
        for (int i = 0; i < s->nbody; i++) {
            const Stmt *t = stmt_at_line(s->body[i], line);
            if (t)
                return t;
        }
        return NULL;
    }
    if (s->kind == S_FOR || s->kind == S_IF) {
        const Stmt *t = stmt_at_line(s->then, line);
        if (!t)
            t = stmt_at_line(s->els, line);
        if (t)
            return t;
    }
    return s->loc.line == line ? s : NULL;
}

static int by_regs(const void *a, const void *b)
{
    const Holder *x = a, *y = b;
    return y->regs - x->regs;
}

typedef Vec(Block) Blocks;

/* The most weight live at once over intervals iv, and where (delta: n + 2 zeroed ints, left
 * zeroed). */
static int peak_of(const Func *f, const Interval *iv, int *delta, int *at)
{
    int n = f->code.n;
    for (int v = 0; v < f->regs.n; v++) {
        if (iv[v].end < 0)
            continue;
        int w = weight(f->regs.v[v].rc);
        delta[iv[v].start] += w;
        delta[iv[v].end + 1] -= w;
    }
    int cur = 0, peak = 0;
    *at = 0;
    for (int i = 0; i < n; i++) {
        cur += delta[i];
        if (cur > peak) {
            peak = cur;
            *at = i;
        }
    }
    memset(delta, 0, sizeof(int) * ((size_t)n + 2));
    return peak;
}

/* Each register's hull: from its first to its last touch, live-in/out sets counted at the block
 * ends. */
static void hull_intervals(Func *f, const Blocks *blocks, const uint64_t *livein, const uint64_t *liveout,
                           const int *greg, Interval *iv)
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

bool regalloc(Func *f, int budget)
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
    nwords = (ng + 63) / 64 + 1;
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
    hull_intervals(f, &blocks, livein, liveout, greg, iv);
    for (size_t w = 0; w < (size_t)nb * (size_t)nwords; w++) {
        livein[w] &= defin[w];
        liveout[w] &= defout[w];
    }
    free(defin);
    free(defout);
    hull_intervals(f, &blocks, livein, liveout, greg, ivp);
    /* pressure per position, and the peak: the demand's, and the plain liveness' (the cap's) */
    int *delta = calloc((size_t)n + 2, sizeof(int));
    int peak_at = 0, plain_at = 0;
    int peak = peak_of(f, ivp, delta, &peak_at), plain = peak_of(f, iv, delta, &plain_at);
    /* linear scan: a free list per class; intervals that end before one starts free their reg */
    Interval *order = malloc(sizeof(Interval) * (size_t)(nv + 1));
    int m = 0;
    for (int v = 0; v < nv; v++)
        if (iv[v].end >= 0)
            order[m++] = iv[v];
        else
            f->regs.v[v].phys = 0;      /* never used: any name will do */
    qsort(order, (size_t)m, sizeof *order, by_start);
    /* Each interval takes the lowest-numbered register of its class whose holder has ended
       before it starts: per class, the holders in a heap by end, the free registers in a heap by
       number, so thousands of live values cost a logarithm each, not a scan of them. */
    Heap busy[RC_COUNT] = { { 0 } }, idle[RC_COUNT] = { { 0 } };
    int nphys[RC_COUNT] = { 0 };
    for (int k = 0; k < m; k++) {
        Interval *x = &order[k];
        RegClass rc = f->regs.v[x->v].rc;
        while (busy[rc].n && busy[rc].v[0].key < x->start) {
            int freed = heap_pop(&busy[rc]).phys;
            heap_push(&idle[rc], freed, freed);
        }
        int p = idle[rc].n ? heap_pop(&idle[rc]).phys : nphys[rc]++;
        heap_push(&busy[rc], x->end, p);
        f->regs.v[x->v].phys = p;
    }
    for (int rc = 0; rc < RC_COUNT; rc++) {
        vec_free(&busy[rc]);
        vec_free(&idle[rc]);
    }
    memcpy(f->nphys, nphys, sizeof nphys);
    /* two registers hold the thread's own program counter since Volta */
    f->peak_regs = peak + 2;
    /* The cap from the plain liveness, which the PTX's names follow too: with the demand's
       (lower where a loop's carried values count from the loop) a tf32 matmul's cap fell from
       194 to 183, above the 176 ptxas used either way, and it ran 1.5% slower (H200, same-call
       A/B); the budget check and the report use the demand. */
    int cap_from = plain + 2 > f->peak_regs ? plain + 2 : f->peak_regs;
    f->maxnreg = ptx_maxnreg(cap_from, budget, f->threads, f->sm_threads ? f->sm_threads : 2048, &f->reg_boundary);
    f->cap_tight = f->maxnreg < cap_from + reg_cap_slack(cap_from);
    f->peak_index = peak_at;
    f->peak_line = n ? f->code.v[peak_at].line : 0;
    /* group the values live at the peak by the source value they belong to */
    Holder *h = calloc((size_t)nv + 1, sizeof(Holder));
    Map index = { 0 };   /* what -> 1 + its position in h */
    int nh = 0;
    for (int v = 0; v < nv; v++) {
        if (ivp[v].end < 0 || ivp[v].start > peak_at || ivp[v].end < peak_at || !weight(f->regs.v[v].rc))
            continue;
        const char *w = f->regs.v[v].what;
        int j = (int)(intptr_t)map_get(&index, w) - 1;
        if (j < 0) {
            j = nh;
            h[nh++] = (Holder){ w, 0 };
            map_put(&index, w, (void *)(intptr_t)nh);
        }
        h[j].regs += weight(f->regs.v[v].rc);
    }
    map_free(&index);
    qsort(h, (size_t)nh, sizeof *h, by_regs);
    f->ntop = nh < 5 ? nh : 5;
    for (int j = 0; j < f->ntop; j++) {
        f->top[j].what = h[j].what;
        f->top[j].regs = h[j].regs;
    }
    free(h);
    bool ok = true;
    if (budget > 0 && f->peak_regs > budget) {
        /* at the statement where the demand peaks, which is what to change */
        const Stmt *at = stmt_at_line(f->k->body, f->peak_line);
        Loc loc = at ? at->loc : f->k->loc;
        int full = reg_budget(f->threads), twice = 2 * f->threads;
        if (budget == reg_budget(f->threads))
            error_at(loc, "kernel '%s' needs %d registers per thread, more than the %d a block of %d threads allows",
                     f->k->name, f->peak_regs, budget, f->threads);
        else
            error_at(loc, "kernel '%s' needs %d registers per thread, more than the budget of %d (--max-regs)",
                     f->k->name, f->peak_regs, budget);
        for (int j = 0; j < f->ntop; j++)
            note_at(loc, "%s holds %d register%s/thread at line %d", f->top[j].what, f->top[j].regs,
                    f->top[j].regs == 1 ? "" : "s", f->peak_line);
        /* A tile's registers per thread are its elements over the threads sharing it: fewer
           threads raise them, more threads lower them (down to a smaller budget each) */
        if (budget < full)
            note_at(loc, "--max-regs=%d is below the %d registers a block of %d threads allows: raise it, or "
                    "use smaller tiles", budget, full, f->threads);
        else if (twice <= 1024)
            note_at(loc, "use smaller tiles, or more threads per block: each tile's registers per thread fall as "
                    "more threads share it (threads(%d) allows %d registers each)", twice, reg_budget(twice));
        else
            note_at(loc, "use smaller tiles: a block of %d threads is the largest", f->threads);
        ok = false;
        f->over_budget = true;
    }
    free(gid);
    free(greg);
    free(order);
    free(delta);
    free(iv);
    free(ivp);
    free(tmp);
    free(livein);
    free(liveout);
    free(label_block);
    free(block_of);
    vec_free(&blocks);
    return ok;
}
