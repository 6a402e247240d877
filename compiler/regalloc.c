/* regalloc.c: linear-scan allocation per register class over liveness.c's intervals.
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


const char *reg_value_name(Arena *a, const char *name, ElemType t, Shape s)
{
    if (s.rank == 0)
        return arena_printf(a, "%s: %s", name, type_name(t));
    if (s.rank == 1)
        return arena_printf(a, "%s: %s[%lld]", name, type_name(t), (long long)s.dim[0]);
    return arena_printf(a, "%s: %s[%lld,%lld]", name, type_name(t), (long long)s.dim[0], (long long)s.dim[1]);
}

/* The register file is four quadrants of 16384, one a scheduler, and a block's warps are dealt
 * round the four: a block of 9 warps puts 3 on one quadrant, so its threads may have 16384 /
 * (3 * 32) = 170 registers (168 in units of 8), not 65536 / 288 = 227 -- a launch of 288
 * threads at 223 registers fails with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (H200, 2026-11-28). */
enum { REG_QUADRANTS = 4, REG_QUADRANT = 16384 };

int reg_budget(int threads)
{
    int warps = (threads > 0 ? threads : 1) + 31;
    warps /= 32;
    int r = REG_QUADRANT / (32 * ((warps + REG_QUADRANTS - 1) / REG_QUADRANTS));
    return r >= 255 ? 255 : r & ~7;
}

/* The .maxnreg tilec binds ptxas to: the demand plus slack, never across an occupancy boundary.
 * What costs speed is not registers but occupancy: a block
 * of T threads using R registers lets 4 floor(16384 / (32 R)) / ceil(T / 32) blocks share a
 * multiprocessor (R in units of 8, the hardware's allocation unit; whole warps a quadrant, as
 * reg_budget says), and one register over a boundary can halve that
 * (layernorm at 1024 threads: 2 blocks at 32 registers, 1 at 40 -- measured 0.165 against
 * 0.239 ms on an H200). So the cap is the most registers that keep the occupancy the predicted
 * demand allows, with a tenth (at least REG_SLACK) of slack on the demand: ptxas reschedules our
 * code and the demand is an estimate. Below the cap ptxas is free to use what it likes; above it
 * would only lose blocks. ptxas raises any cap below 24 to 24; the budget rules. */
enum { REG_SLACK = 4, MAX_BLOCKS_SM = 32 };

static int blocks_per_sm(int threads, int regs, int sm_threads)
{
    /* warps a quadrant holds at `regs` registers, four quadrants */
    int warps = (threads + 31) / 32, by_regs = REG_QUADRANTS * (REG_QUADRANT / (32 * regs)) / warps;
    int by_threads = sm_threads / threads;
    int b = by_regs < by_threads ? by_regs : by_threads;
    return b < MAX_BLOCKS_SM ? b : MAX_BLOCKS_SM;
}

int reg_cap_slack(int pred)
{
    return pred / 10 > REG_SLACK ? pred / 10 : REG_SLACK;
}

int reg_cap_blocks(int pred, int threads, int sm_threads)
{
    int floor_regs = (pred - reg_cap_slack(pred) + 7) & ~7;
    return blocks_per_sm(threads, floor_regs < 24 ? 24 : floor_regs, sm_threads > 0 ? sm_threads : 2048);
}

int reg_room(int pred, int threads, int sm_threads)
{
    int limit = reg_budget(threads);
    if (sm_threads <= 0)
        sm_threads = 2048;
    if (pred > limit)
        return pred;
    int want = blocks_per_sm(threads, (pred + 7) & ~7, sm_threads);
    int r = pred;
    while (r + 1 + reg_cap_slack(r + 1) <= limit &&
           blocks_per_sm(threads, r + 1 + reg_cap_slack(r + 1), sm_threads) >= want)
        r++;
    return r;
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


/* ptxas compiles a wgmma only with its accumulators and about 26 registers more at hand (it says
 * "Insufficient registers (80) ... register target of 90" for 64 accumulators, and takes 154 for
 * 128): the allocator's own count, which holds the addresses and descriptors apart, can be under
 * that, and a cap there costs a round of ptxas (regcap.c) per such kernel: the prediction and the
 * cap start from at least this. */
static int wgmma_floor(const Func *f)
{
    int most = 0;
    for (int i = 0; i < f->code.n; i++) {
        if (f->code.v[i].op != OP_WGMMA)
            continue;
        int accs = 0;
        for (int j = i + 1; j < f->code.n && f->code.v[j].op == OP_WGACC; j++)
            accs += f->code.v[j].ndst;
        if (accs > most)
            most = accs;
    }
    return most ? most + 26 : 0;
}

/* ptxas keeps a wgmma's accumulators where the PTX names them: where a product made afresh each
 * iteration of a loop (attention's scores, `let s = q @ k.T`) has names the scan hands on within
 * the loop to other values (the exp chain's temporaries), ptxas is left short of the registers
 * the group in flight needs and serializes the kernel's wgmma (C7511, "insufficient register
 * resources for the wgmma pipeline") or waits early (C7517): attention's backward, four products
 * an iteration, had both. Such accumulators are named by themselves alone. Those carried into
 * the loop (a GEMM's acc, fp8's partial sums) share names only with values before or after it,
 * which ptxas minds not; renaming those too made it spill where it had not (matmul_fp8 with a
 * producer warp, 168 registers). The names are only names: the count and cap are the scan's. */
static void unshare_wgmma_accumulators(Func *f, const Interval *iv, int nphys[RC_COUNT])
{
    int nv = f->regs.n, n = f->code.n, nloops = 0;
    int *label_at = malloc(sizeof(int) * (size_t)(f->nlabels + 1));
    int *loop = malloc(sizeof(int) * 2 * (size_t)(n + 1));    /* back edges: head, branch */
    unsigned char *fresh = calloc((size_t)nv + 1, 1);
    for (int l = 0; l < f->nlabels; l++)
        label_at[l] = n;
    for (int i = 0; i < n; i++)
        if (f->code.v[i].op == OP_LABEL)
            label_at[f->code.v[i].label] = i;
    for (int b = 0; b < n; b++)
        if (f->code.v[b].op == OP_BRA && label_at[f->code.v[b].label] < b) {
            loop[2 * nloops] = label_at[f->code.v[b].label];
            loop[2 * nloops++ + 1] = b;
        }
    for (int i = 0; nloops && i < n; i++) {
        const Ins *in = &f->code.v[i];
        if (in->op != OP_WGACC)
            continue;
        /* the innermost loop around it: the back edge b -> h with h <= i < b and h largest */
        int head = -1;
        for (int l = 0; l < nloops; l++)
            if (loop[2 * l] <= i && i < loop[2 * l + 1] && loop[2 * l] > head)
                head = loop[2 * l];
        for (int d = 0; head >= 0 && d < in->ndst; d++)
            if (in->dst[d] >= 0 && in->dst[d] < nv && iv[in->dst[d]].start > head)
                fresh[in->dst[d]] = 1;
    }
    for (int v = 0; v < nv; v++)
        if (fresh[v])
            f->regs.v[v].phys = nphys[f->regs.v[v].rc]++;
    free(fresh);
    free(loop);
    free(label_at);
}

bool regalloc(Func *f, int budget)
{
    int n = f->code.n, nv = f->regs.n;
    Liveness lv;
    liveness(f, &lv);
    Interval *iv = lv.plain, *ivp = lv.demand;
    /* pressure per position, and the peak: the demand's, and the plain liveness' (the cap's) */
    int *delta = calloc((size_t)n + 2, sizeof(int));
    int peak_at = 0, plain_at = 0;
    int peak = pressure(f, ivp, delta, &peak_at), plain = pressure(f, iv, delta, &plain_at);
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
    unshare_wgmma_accumulators(f, iv, nphys);
    memcpy(f->nphys, nphys, sizeof nphys);
    /* two registers hold the thread's own program counter since Volta; a wgmma needs its own
       floor (wgmma_floor), which the prediction reports as ptxas will count it */
    int wg_floor = wgmma_floor(f);
    f->peak_regs = peak + 2 > wg_floor ? peak + 2 : wg_floor;
    /* The cap from the plain liveness, which the PTX's names follow too: with the demand's
       (lower where a loop's carried values count from the loop) a tf32 matmul's cap fell from
       194 to 183, above the 176 ptxas used either way, and it ran 1.5% slower (H200, same-call
       A/B); the budget check and the report use the demand. */
    int cap_from = plain + 2 > f->peak_regs ? plain + 2 : f->peak_regs;
    f->maxnreg = ptx_maxnreg(cap_from, budget, f->threads, f->sm_threads ? f->sm_threads : 2048, &f->reg_boundary);
    f->peak_index = peak_at;
    f->peak_line = n ? f->code.v[peak_at].line : 0;
    /* group the values live at the peak by the source value they belong to */
    Holder *h = calloc((size_t)nv + 1, sizeof(Holder));
    Map index = { 0 };   /* what -> 1 + its position in h */
    int nh = 0;
    for (int v = 0; v < nv; v++) {
        if (ivp[v].end < 0 || ivp[v].start > peak_at || ivp[v].end < peak_at || !reg_weight(f->regs.v[v].rc))
            continue;
        const char *w = f->regs.v[v].what;
        int j = (int)(intptr_t)map_get(&index, w) - 1;
        if (j < 0) {
            j = nh;
            h[nh++] = (Holder){ w, 0 };
            map_put(&index, w, (void *)(intptr_t)nh);
        }
        h[j].regs += reg_weight(f->regs.v[v].rc);
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
    free(order);
    free(delta);
    liveness_free(&lv);
    return ok;
}
