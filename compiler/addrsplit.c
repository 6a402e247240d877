/* addrsplit.c: turns full addresses into one shared base register plus a constant [reg+imm]. */
/*
 * Lowering writes every address in full (ir_naive_addr). This pass, run between lowering and
 * register allocation, rebuilds base + offset addressing in five sub-passes:
 *
 *   cse    identical pure integer computations share one register (value numbering);
 *   licm   loop-invariant pure computations move in front of their outermost loop;
 *   cse    again: the hoisted copies of one computation merge;
 *   fold   every memory address is split into a variadic base and a constant byte offset by
 *          walking its definitions; the constant goes into Ins.off;
 *   cse, dce  new bases of identical shape merge, and what nobody reads any more goes.
 *
 * Every sharing, hoist and fold that keeps a register live longer is weighed against the
 * occupancy it would cost ("register pressure" below): registers are spent only where they
 * cost no block per multiprocessor.
 *
 * The IR is not SSA: loop counters and accumulators are redefined. All reasoning therefore asks
 * one question -- "does register x hold at instruction U the value it held at instruction D?" --
 * and answers it only in two easy cases (valid_at):
 *   - x is stable: one unguarded definition, at top level (in no loop, under no branch), so it is
 *     written once and never changes afterwards;
 *   - D and U are in one straight-line stretch (one basic block, or both at top level, where
 *     every path from D to U stays between them) and nothing between them writes x.
 * Everything else is left as it was: the pass may miss a fold, never make a wrong one.
 *
 * Integer identities used by the fold are exact in modular arithmetic of the address width
 * (64 bits global, 32 bits shared), with one exception: a 32-bit constant moved out of a
 * sign/zero extension (cvt.s64.s32). That move is made only when a small range analysis proves
 * the 32-bit sum cannot wrap.
 */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

/* Global accesses keep |off| below this: beyond ~8 MiB ptxas materialises the offset again. */
enum { OFF_LIMIT = 1 << 23, OFF_CHUNK = 1 << 22, MAX_DEPTH = 16 };

/* Instructions whose src[0] is an address and that carry Ins.off. A new memory op (cp.async,
 * ...) joins here and nowhere else. */
static bool is_mem_op(const Ins *in)
{
    switch (in->op) {
    case OP_LD: case OP_ST: case OP_RED: case OP_ATOM:
        return in->space != SP_PARAM;
    case OP_CPASYNC:
        return true;
    default:
        return false;
    }
}

/* The address operands of a memory instruction with their offsets: src[0] with off always;
 * cp.async also reads global memory at src[1] + off2. */
static int mem_addrs(Ins *in, int *src, int64_t **off)
{
    src[0] = 0;
    off[0] = &in->off;
    if (in->op != OP_CPASYNC)
        return 1;
    src[1] = 1;
    off[1] = &in->off2;
    return 2;
}

/* Side-effect-free integer work the pass may share, move or delete. Floats stay where they are:
 * the pass is about addresses. */
static bool is_pure_int(const Ins *in)
{
    switch (in->op) {
    case OP_MOV: case OP_ADD: case OP_SUB: case OP_MUL: case OP_MULHI: case OP_MULWIDE:
    case OP_MAD: case OP_MIN: case OP_MAX: case OP_NEG: case OP_ABS: case OP_BAND: case OP_BOR:
    case OP_BXOR: case OP_BNOT: case OP_SHL: case OP_SHR: case OP_CVT: case OP_MOVSYM:
    case OP_CVTA: case OP_LDPARAM:
        break;
    default:
        return false;
    }
    if (in->ndst != 1 || in->ty == PT_PRED || in->ty == PT_F32 || in->ty == PT_F16 || in->ty == PT_BF16 ||
        in->ty == PT_F64)
        return false;
    if (in->op == OP_CVT && (in->ty2 == PT_F32 || in->ty2 == PT_F16 || in->ty2 == PT_BF16 || in->rnd))
        return false;
    /* reading a special register is pure only for the launch geometry */
    for (int s = 0; s < in->nsrc; s++)
        if (in->src[s].kind == O_SYM && in->op == OP_MOV &&
            strncmp(in->src[s].sym, "%tid", 4) && strncmp(in->src[s].sym, "%ctaid", 6) &&
            strncmp(in->src[s].sym, "%ntid", 5) && strncmp(in->src[s].sym, "%nctaid", 7))
            return false;
    return true;
}

/* What DCE may delete when its result is unused: pure work of any type. */
/* Pure instructions whose results nobody reads go (ops.h says which are pure). */
static bool is_removable(const Ins *in) { return ir_pure(in->op) && in->ndst > 0; }

/* ---------------------------------------------------------------- facts about the code */

typedef struct {
    Func *f;
    int n, nregs;
    int *dstart, *dpos;       /* definitions of r: dpos[dstart[r] .. dstart[r+1]), ascending */
    bool *dguard;             /* parallel to dpos: that definition is guarded */
    int *block;               /* basic block of each instruction */
    bool *top;                /* in no loop and under no forward branch: runs once, always */
    bool *fwd;                /* under a forward branch (the body of an if, or of a loop) */
    int *outer_loop;          /* index of the label heading the outermost loop around i, or -1 */
    int *loop_last;           /* at a loop's head: the last position of that outermost loop */
    int *first_use, *last_use;
} Facts;

static int ndefs(Facts *x, int r) { return x->dstart[r + 1] - x->dstart[r]; }

static bool stable(Facts *x, int r)
{
    if (ndefs(x, r) != 1)
        return false;
    int i = x->dstart[r];
    return !x->dguard[i] && x->top[x->dpos[i]];
}

/* The last definition of r strictly before position pos (index into dpos), or -1. */
static int last_def_before(Facts *x, int r, int pos)
{
    int lo = x->dstart[r], hi = x->dstart[r + 1];
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (x->dpos[mid] < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > x->dstart[r] ? lo - 1 : -1;
}

/* D and U lie in one straight-line stretch, D first. */
static bool linear(Facts *x, int d, int u)
{
    return d < u && (x->block[d] == x->block[u] || (x->top[d] && x->top[u]));
}

/* Register x holds at U the value it held when D (which reads it) ran. */
static bool valid_at(Facts *x, int r, int u, int d)
{
    if (stable(x, r))
        return true;
    int k = last_def_before(x, r, u);
    return linear(x, d, u) && (k < 0 || x->dpos[k] < d);
}

/* The instruction whose result r holds at U, or -1 when that is not one known instruction
 * (several reach, or the one that reaches is guarded). */
static int reaching(Facts *x, int r, int u)
{
    int k = last_def_before(x, r, u);
    if (k >= 0 && linear(x, x->dpos[k], u))
        return x->dguard[k] ? -1 : x->dpos[k];
    if (stable(x, r) && x->dpos[x->dstart[r]] < u)
        return x->dpos[x->dstart[r]];
    return -1;
}

static void facts_free(Facts *x)
{
    free(x->dstart); free(x->dpos); free(x->dguard); free(x->block); free(x->top); free(x->fwd);
    free(x->outer_loop); free(x->loop_last); free(x->first_use); free(x->last_use);
    memset(x, 0, sizeof *x);
}

static void note_use(Facts *x, int r, int i)
{
    if (x->first_use[r] < 0)
        x->first_use[r] = i;
    x->last_use[r] = i;
}

static void facts_build(Facts *x, Func *f)
{
    int n = f->code.n, nr = f->regs.n;
    x->f = f;
    x->n = n;
    x->nregs = nr;
    x->dstart = calloc((size_t)nr + 2, sizeof(int));
    x->block = calloc((size_t)n + 1, sizeof(int));
    x->top = calloc((size_t)n + 1, sizeof(bool));
    x->fwd = calloc((size_t)n + 1, sizeof(bool));
    x->outer_loop = malloc(((size_t)n + 1) * sizeof(int));
    x->loop_last = malloc(((size_t)n + 1) * sizeof(int));
    x->first_use = malloc(((size_t)nr + 1) * sizeof(int));
    x->last_use = malloc(((size_t)nr + 1) * sizeof(int));
    for (int r = 0; r < nr; r++)
        x->first_use[r] = x->last_use[r] = -1;
    /* definitions, counted then placed in order */
    int total = 0;
    for (int i = 0; i < n; i++)
        for (int d = 0; d < f->code.v[i].ndst; d++)
            x->dstart[f->code.v[i].dst[d] + 1]++, total++;
    for (int r = 0; r < nr; r++)
        x->dstart[r + 1] += x->dstart[r];
    x->dpos = malloc(((size_t)total + 1) * sizeof(int));
    x->dguard = malloc(((size_t)total + 1) * sizeof(bool));
    int *fill = malloc(((size_t)nr + 1) * sizeof(int));
    memcpy(fill, x->dstart, (size_t)nr * sizeof(int));
    for (int i = 0; i < n; i++) {
        Ins *in = &f->code.v[i];
        for (int d = 0; d < in->ndst; d++) {
            int k = fill[in->dst[d]]++;
            x->dpos[k] = i;
            x->dguard[k] = in->guard >= 0;
        }
        for (int s = 0; s < in->nsrc; s++)
            if (in->src[s].kind == O_REG)
                note_use(x, in->src[s].reg, i);
        if (in->guard >= 0) {
            note_use(x, in->guard, i);
            for (int d = 0; d < in->ndst; d++)   /* a guarded write keeps the old value */
                note_use(x, in->dst[d], i);
        }
    }
    free(fill);
    /* blocks, loops and forward-branch regions; control flow is structured (state.md) */
    int *label_at = malloc(((size_t)f->nlabels + 1) * sizeof(int));
    for (int l = 0; l <= f->nlabels; l++)
        label_at[l] = -1;
    for (int i = 0; i < n; i++)
        if (f->code.v[i].op == OP_LABEL)
            label_at[f->code.v[i].label] = i;
    int *cover = calloc((size_t)n + 2, sizeof(int));
    int b = 0;
    for (int i = 0; i < n; i++) {
        Ins *in = &f->code.v[i];
        if (in->op == OP_LABEL && i > 0)
            b++;
        x->block[i] = b;
        if (in->op == OP_BRA || in->op == OP_RET)
            b++;
        x->outer_loop[i] = -1;
    }
    for (int i = 0; i < n; i++) {
        Ins *in = &f->code.v[i];
        if (in->op != OP_BRA)
            continue;
        int t = label_at[in->label];
        if (t < 0)
            die("addrsplit: branch to a missing label");
        if (t > i) {                 /* forward: covers (i, t) */
            cover[i + 1]++;
            cover[t]--;
        } else
            for (int k = t; k <= i; k++)
                if (x->outer_loop[k] < 0 || t < x->outer_loop[k])
                    x->outer_loop[k] = t;
    }
    for (int i = 0; i < n; i++)
        if (x->outer_loop[i] >= 0)
            x->loop_last[x->outer_loop[i]] = i;
    for (int i = 0, c = 0; i < n; i++) {
        c += cover[i];
        x->fwd[i] = c != 0;
        x->top[i] = c == 0 && x->outer_loop[i] < 0;
    }
    free(cover);
    free(label_at);
}

/* ---------------------------------------------------------------- rebuilding the code */

/* Edits collected during a sub-pass and applied at once, so instruction indices stay put while
 * the facts are in use: instructions to drop, and instructions to insert before or after one. */
typedef struct { int at; bool after; Ins in; } Insert;
typedef struct {
    bool *drop;
    Vec(Insert) ins;
} Edits;

static void edits_apply(Func *f, Edits *e)
{
    int n = f->code.n;
    int *order = malloc(((size_t)e->ins.n + 1) * sizeof(int));
    for (int i = 0; i < e->ins.n; i++)
        order[i] = i;
    /* a stable insertion sort by place: insertions at one place keep the order they were made
       in, which is the order their operands need; the lists are short */
    for (int i = 1; i < e->ins.n; i++) {
        int v = order[i], j = i - 1;
        Insert *a = &e->ins.v[v];
        while (j >= 0) {
            Insert *c = &e->ins.v[order[j]];
            if (c->at * 2 + c->after <= a->at * 2 + a->after)
                break;
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = v;
    }
    Ins *old = f->code.v;
    f->code.v = NULL;
    f->code.n = f->code.cap = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        while (k < e->ins.n && e->ins.v[order[k]].at == i && !e->ins.v[order[k]].after)
            vec_push(&f->code, e->ins.v[order[k++]].in);
        if (!e->drop[i])
            vec_push(&f->code, old[i]);
        while (k < e->ins.n && e->ins.v[order[k]].at == i && e->ins.v[order[k]].after)
            vec_push(&f->code, e->ins.v[order[k++]].in);
    }
    free(old);
    free(order);
    free(e->drop);
    vec_free(&e->ins);
}

static void edits_init(Edits *e, int n)
{
    e->drop = calloc((size_t)n + 1, sizeof(bool));
    e->ins.v = NULL;
    e->ins.n = e->ins.cap = 0;
}

static void insert_at(Edits *e, int at, bool after, Ins in)
{
    Insert x = { at, after, in };
    vec_push(&e->ins, x);
}

/* ---------------------------------------------------------------- cse: value numbering */

static bool opnd_eq(Opnd a, Opnd b)
{
    if (a.kind != b.kind)
        return false;
    switch (a.kind) {
    case O_REG: return a.reg == b.reg;
    case O_IMM: return a.i == b.i;
    case O_FIMM: return memcmp(&a.f, &b.f, sizeof a.f) == 0;
    case O_SYM: return !strcmp(a.sym, b.sym);
    default: return true;
    }
}

static bool same_work(const Ins *a, const Ins *b)
{
    if (a->op != b->op || a->ty != b->ty || a->ty2 != b->ty2 || a->cmp != b->cmp || a->rnd != b->rnd ||
        a->nsrc != b->nsrc)
        return false;
    for (int s = 0; s < a->nsrc; s++)
        if (!opnd_eq(a->src[s], b->src[s]))
            return false;
    return true;
}

static uint64_t hash_work(const Ins *in)
{
    uint64_t h = 1469598103934665603ull;
#define MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ull)
    MIX(in->op); MIX(in->ty); MIX(in->ty2); MIX(in->cmp);
    for (int s = 0; s < in->nsrc; s++) {
        Opnd o = in->src[s];
        MIX(o.kind);
        if (o.kind == O_REG) MIX(o.reg);
        else if (o.kind == O_IMM) MIX(o.i);
        else if (o.kind == O_SYM)
            for (const char *p = o.sym; *p; p++)
                MIX(*p);
    }
#undef MIX
    return h;
}

static void rename_srcs(Ins *in, const int *repl)
{
    for (int s = 0; s < in->nsrc; s++)
        if (in->src[s].kind == O_REG && repl[in->src[s].reg] >= 0)
            in->src[s].reg = repl[in->src[s].reg];
}

/* ---------------------------------------------------------------- register pressure */

/* What a longer life costs. Sharing one register between two computations, or hoisting one out
 * of a loop, saves instructions but keeps a register live where it was not; where that crosses
 * the kernel's pressure peak it raises the registers every thread needs. Registers cost nothing
 * until they cost blocks per multiprocessor, and then they cost a great deal: before this check
 * the pass took every share and hoist, and 50 of the 180 example and test kernels lost a block
 * per multiprocessor on sm_90 to it; held to the peak itself instead, the hoists it refused
 * out of a wgmma mainloop that is the peak made matmul_f16 17% slower at 8192^3 (H100) at one
 * block per multiprocessor either way. So each sub-pass that lengthens lives works against the
 * pressure per position (the demand's liveness, as regalloc measures it) and takes a share or a
 * hoist only where every position its new life crosses stays within the limit: the most
 * registers that keep the occupancy the peak before the pass allows (reg_room, the register
 * cap's own slack included). Positions are those of the code the sub-pass started on (its edits
 * are applied at its end). */
/* Both liveness measures count: the demand's is the peak the report and the budget use, the plain
 * one sets the cap ptxas is given (regalloc.c), and ptxas fills a looser cap. */
enum { NMEASURE = 2 };
typedef struct {
    Liveness lv;
    Interval *iv[NMEASURE];   /* lv.demand, lv.plain */
    int *p[NMEASURE];         /* weight live at each position, updated as lives grow */
    int limit[NMEASURE];
} Pressure;

typedef struct { int peak[NMEASURE]; } Peaks;

static Peaks pressure_peaks(Func *f)
{
    Liveness lv;
    liveness(f, &lv);
    int *p = malloc(((size_t)f->code.n + 1) * sizeof(int));
    Peaks pk = { { pressure(f, lv.demand, p, NULL), pressure(f, lv.plain, p, NULL) } };
    free(p);
    liveness_free(&lv);
    return pk;
}

/* The peaks the code would reach without the pass: remat runs after it and brings the peak
 * down again (lse_bwd: 70 before, 62 after), so it is measured on a copy that remat has been
 * over; remat reads and writes only the code and the registers. */
static Peaks peaks_without(Func *f, bool remat_after)
{
    if (!remat_after)
        return pressure_peaks(f);
    Func g = *f;
    g.code.v = malloc(sizeof(Ins) * ((size_t)f->code.n + 1));
    g.regs.v = malloc(sizeof(VReg) * ((size_t)f->regs.n + 1));
    memcpy(g.code.v, f->code.v, sizeof(Ins) * (size_t)f->code.n);
    memcpy(g.regs.v, f->regs.v, sizeof(VReg) * (size_t)f->regs.n);
    g.code.cap = f->code.n + 1;
    g.regs.cap = f->regs.n + 1;
    remat_cheap(&g);
    Peaks pk = pressure_peaks(&g);
    free(g.code.v);
    free(g.regs.v);
    return pk;
}

/* The limits: each peak raised to the room its occupancy leaves (2 registers for the program
 * counter, as regalloc counts them). */
static Peaks pressure_limits(Func *f, Peaks pk)
{
    for (int m = 0; m < NMEASURE; m++)
        pk.peak[m] = reg_room(pk.peak[m] + 2, f->threads, f->sm_threads) - 2;
    return pk;
}

static void pressure_build(Pressure *pr, Func *f, Peaks limit)
{
    liveness(f, &pr->lv);
    pr->iv[0] = pr->lv.demand;
    pr->iv[1] = pr->lv.plain;
    for (int m = 0; m < NMEASURE; m++) {
        pr->p[m] = malloc(((size_t)f->code.n + 1) * sizeof(int));
        pressure(f, pr->iv[m], pr->p[m], NULL);
        pr->limit[m] = limit.peak[m];
    }
}

static void pressure_free(Pressure *pr)
{
    liveness_free(&pr->lv);
    for (int m = 0; m < NMEASURE; m++)
        free(pr->p[m]);
}

/* Can w more registers be live over positions lo..hi (empty when lo > hi)? */
static bool pressure_room(const Pressure *pr, int m, int lo, int hi, int w)
{
    for (int i = lo; i <= hi; i++)
        if (pr->p[m][i] + w > pr->limit[m])
            return false;
    return true;
}

static void pressure_add(Pressure *pr, int m, int lo, int hi, int w)
{
    for (int i = lo; i <= hi; i++)
        pr->p[m][i] += w;
}

/* Register e takes over the readers of d: e lives on to d's last reader, and to `to` (the end of
 * the loop around d when e is written outside it: a loop reads e on every pass), and d is gone.
 * Where e's life ends before d's begins, and past d's end up to `to`, is the new cost; where
 * they overlapped, one register fewer is live. False, changing nothing, when there is no room. */
static bool pressure_share(Pressure *pr, Func *f, int e, int d, int to)
{
    int w = reg_weight(f->regs.v[e].rc);
    for (int pass = 0; pass < 2; pass++)       /* check every measure, then change them */
        for (int m = 0; m < NMEASURE; m++) {
            Interval *ie = &pr->iv[m][e], *id = &pr->iv[m][d];
            if (ie->end < 0 || id->end < 0)
                continue;
            int gap_hi = id->start - 1, tail_lo = (ie->end > id->end ? ie->end : id->end) + 1;
            if (!pass) {
                if (!pressure_room(pr, m, ie->end + 1, gap_hi, w) || !pressure_room(pr, m, tail_lo, to, w))
                    return false;
                continue;
            }
            pressure_add(pr, m, ie->end + 1, gap_hi, w);
            pressure_add(pr, m, tail_lo, to, w);
            int both_end = ie->end < id->end ? ie->end : id->end;
            pressure_add(pr, m, id->start, both_end, -w);
            if (id->end > ie->end)
                ie->end = id->end;
            if (to > ie->end)
                ie->end = to;
            id->end = -1;
        }
    return true;
}

/* Register d, defined inside the loop at positions head..last, is defined in front of it
 * instead: it is live over the whole loop. */
static bool pressure_hoist(Pressure *pr, Func *f, int d, int head, int last)
{
    int w = reg_weight(f->regs.v[d].rc);
    for (int pass = 0; pass < 2; pass++)
        for (int m = 0; m < NMEASURE; m++) {
            Interval *id = &pr->iv[m][d];
            int s = id->end < 0 ? last + 1 : id->start, e = id->end < 0 ? last : id->end;
            if (!pass) {
                if (!pressure_room(pr, m, head, s - 1, w) || !pressure_room(pr, m, e + 1, last, w))
                    return false;
                continue;
            }
            pressure_add(pr, m, head, s - 1, w);
            pressure_add(pr, m, e + 1, last, w);
            if (id->end < 0 || id->start > head)
                id->start = head;
            if (id->end < last)
                id->end = last;
        }
    return true;
}

/* Instruction I recomputes what J computed: can I's readers read J's result instead? */
static bool can_share(Facts *x, int j, int i)
{
    Func *f = x->f;
    Ins *a = &f->code.v[j], *b = &f->code.v[i];
    for (int s = 0; s < b->nsrc; s++)
        if (b->src[s].kind == O_REG && !valid_at(x, b->src[s].reg, i, j))
            return false;
    int e = a->dst[0], d = b->dst[0];
    if (stable(x, e))
        return true;
    /* e must survive to d's last reader: keep to one stretch and check for writes */
    int last = x->last_use[d] < 0 ? i : x->last_use[d];
    if (!linear(x, j, last) || ndefs(x, e) != 1)
        return false;
    return true;
}

/* The registers that feed an address: address operands of memory instructions and, backwards,
 * every operand of the pure integer work that computes them. Only these are shared: sharing
 * other values (an index compared for a mask, say) would only stretch their lives. */
static bool *address_feeders(Func *f)
{
    bool *feeds = calloc((size_t)f->regs.n + 1, sizeof(bool));
    for (int i = 0; i < f->code.n; i++) {
        Ins *in = &f->code.v[i];
        if (!is_mem_op(in))
            continue;
        int src[2];
        int64_t *off[2];
        int na = mem_addrs(in, src, off);
        for (int k = 0; k < na; k++)
            if (in->src[src[k]].kind == O_REG)
                feeds[in->src[src[k]].reg] = true;
    }
    /* loops carry values backwards, so iterate to a fixed point */
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = f->code.n - 1; i >= 0; i--) {
            Ins *in = &f->code.v[i];
            if (!is_pure_int(in) || !feeds[in->dst[0]])
                continue;
            for (int s = 0; s < in->nsrc; s++)
                if (in->src[s].kind == O_REG && !feeds[in->src[s].reg])
                    feeds[in->src[s].reg] = changed = true;
        }
    }
    return feeds;
}

static void cse(Func *f, Peaks limit)
{
    Facts x;
    facts_build(&x, f);
    Pressure pr;
    pressure_build(&pr, f, limit);
    bool *feeds = address_feeders(f);
    Edits ed;
    edits_init(&ed, x.n);
    int *repl = malloc(((size_t)x.nregs + 1) * sizeof(int));
    for (int r = 0; r < x.nregs; r++)
        repl[r] = -1;
    int cap = 64;
    while (cap < 2 * x.n)
        cap *= 2;
    int *table = malloc((size_t)cap * sizeof(int));
    for (int i = 0; i < cap; i++)
        table[i] = -1;
    for (int i = 0; i < x.n; i++) {
        Ins *in = &f->code.v[i];
        rename_srcs(in, repl);
        if (in->guard >= 0 && repl[in->guard] >= 0)
            in->guard = repl[in->guard];
        if (!is_pure_int(in) || in->guard >= 0 || !feeds[in->dst[0]])
            continue;
        int d = in->dst[0];
        if (ndefs(&x, d) != 1 || (x.first_use[d] >= 0 && x.first_use[d] <= i))
            continue;
        uint64_t h = hash_work(in);
        int slot = (int)(h & (uint64_t)(cap - 1));
        while (table[slot] >= 0 && !same_work(&f->code.v[table[slot]], in))
            slot = (slot + 1) & (cap - 1);
        int j = table[slot];
        int loop = x.outer_loop[i];
        int to = j >= 0 && loop >= 0 && x.outer_loop[j] != loop ? x.loop_last[loop] : -1;
        if (j >= 0 && can_share(&x, j, i) && pressure_share(&pr, f, f->code.v[j].dst[0], d, to)) {
            repl[d] = f->code.v[j].dst[0];
            ed.drop[i] = true;
            continue;
        }
        table[slot] = i;
    }
    free(table);
    free(repl);
    free(feeds);
    pressure_free(&pr);
    facts_free(&x);
    edits_apply(f, &ed);
}

/* ---------------------------------------------------------------- licm: hoisting */

/* Pure integer work inside a loop whose operands never change moves in front of the outermost
 * loop (only a loop at top level: the new place then runs once, so its result is stable).
 * Pure and trap-free, so running it when the loop would not run is harmless. */
static void licm(Func *f, Peaks limit)
{
    Facts x;
    facts_build(&x, f);
    Pressure pr;
    pressure_build(&pr, f, limit);

    Edits ed;
    edits_init(&ed, x.n);
    /* hoisted[r]: r is now defined once, in front of loop head hoisted[r] */
    int *hoisted = malloc(((size_t)x.nregs + 1) * sizeof(int));
    for (int r = 0; r < x.nregs; r++)
        hoisted[r] = -1;
    for (int i = 0; i < x.n; i++) {
        Ins *in = &f->code.v[i];
        int head = x.outer_loop[i];
        if (head < 0 || x.fwd[head])         /* the new place must run once, always */
            continue;
        if (!is_pure_int(in) || in->guard >= 0 || in->op == OP_LDPARAM)
            continue;
        if (in->op == OP_DIV || in->op == OP_REM)
            continue;
        int d = in->dst[0];
        if (ndefs(&x, d) != 1 || x.first_use[d] <= i)
            continue;
        bool inv = true;
        for (int s = 0; s < in->nsrc && inv; s++) {
            if (in->src[s].kind != O_REG)
                continue;
            int r = in->src[s].reg;
            if (hoisted[r] >= 0 && hoisted[r] <= head)
                continue;
            inv = stable(&x, r) && x.dpos[x.dstart[r]] < head;
        }
        if (!inv || !pressure_hoist(&pr, f, d, head, x.loop_last[head]))
            continue;
        insert_at(&ed, head, false, *in);
        ed.drop[i] = true;
        hoisted[d] = head;
    }
    free(hoisted);
    pressure_free(&pr);
    facts_free(&x);
    edits_apply(f, &ed);
}

/* ---------------------------------------------------------------- ranges of 32-bit values */

typedef struct { int64_t lo, hi; } Range;

static const Range FULL32 = { INT32_MIN, INT32_MAX };

static Range fit32(int64_t lo, int64_t hi)
{
    if (lo < INT32_MIN || hi > INT32_MAX || lo > hi)
        return FULL32;
    Range r = { lo, hi };
    return r;
}

/* Bounds on the signed value of a 32-bit operand at instruction u. Unknown: FULL32. */
static Range range32(Facts *x, Opnd o, int u, int depth)
{
    if (o.kind == O_IMM)
        return fit32(o.i, o.i);
    if (o.kind != O_REG || depth > MAX_DEPTH)
        return FULL32;
    int d = reaching(x, o.reg, u);
    if (d < 0)
        return FULL32;
    Ins *in = &x->f->code.v[d];
    if (ptype_class((PType)in->ty) != RC_R)
        return FULL32;
    Range a = FULL32, b = FULL32;
    /* operands are read at d: they are what d saw, whatever happens after */
    if (in->op == OP_MOV && in->src[0].kind == O_SYM) {
        const char *s = in->src[0].sym;
        if (!strncmp(s, "%tid", 4))
            return fit32(0, 1023);
        if (!strncmp(s, "%ntid", 5))
            return fit32(1, 1024);
        if (!strncmp(s, "%ctaid", 6) || !strncmp(s, "%nctaid", 7))
            return fit32(0, INT32_MAX);
        return FULL32;
    }
    if (in->nsrc >= 1)
        a = range32(x, in->src[0], d, depth + 1);
    if (in->nsrc >= 2)
        b = range32(x, in->src[1], d, depth + 1);
    switch (in->op) {
    case OP_MOV:
        return a;
    case OP_BAND:
        if (in->src[1].kind == O_IMM && in->src[1].i >= 0 && in->src[1].i <= INT32_MAX)
            return fit32(0, a.lo >= 0 ? (a.hi < in->src[1].i ? a.hi : in->src[1].i) : in->src[1].i);
        return FULL32;
    case OP_SHR:
        if (in->src[1].kind == O_IMM && in->src[1].i > 0 && in->src[1].i < 32) {
            if (a.lo >= 0)
                return fit32(a.lo >> in->src[1].i, a.hi >> in->src[1].i);
            if (in->ty == PT_U32 || in->ty == PT_B32)
                return fit32(0, (int64_t)(UINT32_MAX >> in->src[1].i));
        }
        return FULL32;
    case OP_ADD:
        return fit32(a.lo + b.lo, a.hi + b.hi);
    case OP_SUB:
        return fit32(a.lo - b.hi, a.hi - b.lo);
    case OP_MUL:
        if (a.lo >= 0 && b.lo >= 0)
            return fit32(a.lo * b.lo, a.hi * b.hi);
        return FULL32;
    case OP_MAD: {
        Range c = range32(x, in->src[2], d, depth + 1);
        if (a.lo >= 0 && b.lo >= 0 && !(a.hi > INT32_MAX || b.hi > INT32_MAX)) {
            Range m = fit32(a.lo * b.lo, a.hi * b.hi);
            if (m.lo == FULL32.lo && m.hi == FULL32.hi)
                return FULL32;
            return fit32(m.lo + c.lo, m.hi + c.hi);
        }
        return FULL32;
    }
    default:
        return FULL32;
    }
}

/* ---------------------------------------------------------------- fold: base + offset */

typedef struct { Opnd base; int64_t c; bool done; } Split;

typedef struct {
    Facts x;
    Edits ed;
    Split *memo;              /* per defining instruction: its result split, built once */
    Arena *a;
} Folder;

static int64_t wrap(int64_t v, int bits)
{
    if (bits == 64)
        return v;
    return (int64_t)(int32_t)(uint32_t)(uint64_t)v;
}

static bool is_int_ty(int t, int bits)
{
    if (bits == 64)
        return t == PT_S64 || t == PT_U64 || t == PT_B64;
    return t == PT_S32 || t == PT_U32 || t == PT_B32;
}

static int split_new(Folder *fo, int like, int at, Ins in)
{
    Func *f = fo->x.f;
    const char *save = f->cur_what;
    f->cur_what = f->regs.v[like].what;
    int r = new_reg(f, f->regs.v[like].rc);
    f->cur_what = save;
    in.dst[0] = r;
    in.ndst = 1;
    in.guard = -1;
    insert_at(&fo->ed, at, true, in);
    return r;
}

static Split split_at(Folder *fo, Opnd o, int u, int bits, int depth);

/* The value of instruction d's result, split; new bases are computed right after d, so they are
 * valid wherever d's result is. */
static Split split_def(Folder *fo, int d, int bits, int depth)
{
    Facts *x = &fo->x;
    if (fo->memo[d].done)
        return fo->memo[d];
    Ins in = x->f->code.v[d];
    int r = in.dst[0];
    Split none = { R(r), 0, true };
    Split res = none;
    if (in.guard >= 0 || in.ndst != 1 || !is_int_ty(in.ty, bits))
        goto out;
    /* new operands must not be what d itself writes */
#define OK_BASE(s) ((s).base.kind != O_REG || (s).base.reg != r)
    switch (in.op) {
    case OP_MAD: case OP_MUL: case OP_SHL: {
        int k = in.src[1].kind == O_IMM ? 1 : in.src[0].kind == O_IMM ? 0 : -1;
        if (k < 0 || in.src[1 - k].kind != O_REG)
            break;
        int64_t m = in.op == OP_SHL ? (int64_t)((uint64_t)1 << (in.src[1].i & (bits - 1))) : in.src[k].i;
        if (in.op == OP_SHL && k != 1)
            break;
        Split s = split_at(fo, in.src[1 - k], d, bits, depth + 1);
        Split p = { IMM(0), 0, true };
        if (in.op == OP_MAD)
            p = split_at(fo, in.src[2], d, bits, depth + 1);
        if ((!s.c && !p.c) || !OK_BASE(s) || !OK_BASE(p))
            break;
        Ins n = in;
        n.src[1 - k] = s.base;
        if (in.op == OP_MAD)
            n.src[2] = p.base;
        res.base = R(split_new(fo, r, d, n));
        res.c = wrap((int64_t)((uint64_t)s.c * (uint64_t)m + (uint64_t)p.c), bits);
        break;
    }
    case OP_ADD: {
        if (in.src[0].kind != O_REG || in.src[1].kind != O_REG)
            break;
        Split a = split_at(fo, in.src[0], d, bits, depth + 1);
        Split b = split_at(fo, in.src[1], d, bits, depth + 1);
        if ((!a.c && !b.c) || !OK_BASE(a) || !OK_BASE(b))
            break;
        Ins n = in;
        n.src[0] = a.base;
        n.src[1] = b.base;
        res.base = R(split_new(fo, r, d, n));
        res.c = wrap((int64_t)((uint64_t)a.c + (uint64_t)b.c), bits);
        break;
    }
    case OP_CVT: {
        /* widening keeps the sum only if the 32-bit sum did not wrap */
        bool sgn = in.ty == PT_S64 && in.ty2 == PT_S32, uns = in.ty == PT_U64 && in.ty2 == PT_U32;
        if (bits != 64 || in.rnd || !(sgn || uns) || in.src[0].kind != O_REG)
            break;
        Split s = split_at(fo, in.src[0], d, 32, depth + 1);
        if (!s.c || !OK_BASE(s) || s.base.kind != O_REG)
            break;
        Range v = range32(x, in.src[0], d, 0);
        int64_t lo = v.lo - s.c, hi = v.hi - s.c;
        if (v.lo == FULL32.lo && v.hi == FULL32.hi)
            break;
        if (sgn && (lo < INT32_MIN || hi > INT32_MAX))
            break;
        if (uns && (v.lo < 0 || lo < 0 || hi > (int64_t)UINT32_MAX))
            break;
        Ins n = in;
        n.src[0] = s.base;
        res.base = R(split_new(fo, r, d, n));
        res.c = s.c;
        break;
    }
    case OP_MOVSYM: {
        /* "sym+N": the symbol is the base, N the offset */
        const char *plus = strchr(in.src[0].sym, '+');
        if (bits != 32 || !plus || !atoll(plus + 1))
            break;
        Ins n = in;
        n.src[0] = SYM(arena_strndup(fo->a, in.src[0].sym, (size_t)(plus - in.src[0].sym)));
        res.base = R(split_new(fo, r, d, n));
        res.c = atoll(plus + 1);
        break;
    }
    default:
        break;
    }
#undef OK_BASE
out:
    fo->memo[d] = res;
    return res;
}

/* Operand o as read at instruction u: base (valid at u) + constant. */
static Split split_at(Folder *fo, Opnd o, int u, int bits, int depth)
{
    Facts *x = &fo->x;
    Split none = { o, 0, true };
    if (o.kind != O_REG || depth > MAX_DEPTH)
        return none;
    int d = reaching(x, o.reg, u);
    if (d < 0)
        return none;
    Ins *in = &x->f->code.v[d];
    if (in->guard >= 0 || !is_int_ty(in->ty, bits))
        return none;
    /* add/sub of an immediate: follow the other operand if it still holds its value at u */
    if ((in->op == OP_ADD || in->op == OP_SUB) && in->nsrc == 2) {
        int k = in->src[1].kind == O_IMM ? 1 : (in->op == OP_ADD && in->src[0].kind == O_IMM) ? 0 : -1;
        if (k >= 0 && in->src[1 - k].kind == O_REG && valid_at(x, in->src[1 - k].reg, u, d)) {
            Split s = split_at(fo, in->src[1 - k], u, bits, depth + 1);
            int64_t c = in->op == OP_SUB ? -in->src[k].i : in->src[k].i;
            s.c = wrap((int64_t)((uint64_t)s.c + (uint64_t)c), bits);
            return s;
        }
    }
    if (in->op == OP_MOV && in->src[0].kind == O_REG && valid_at(x, in->src[0].reg, u, d))
        return split_at(fo, in->src[0], u, bits, depth + 1);
    return split_def(fo, d, bits, depth);
}

/* Splits address operand src of memory instruction u and moves the constant into its offset. */
static void fold_one(Folder *fo, int u, int src)
{
    Func *f = fo->x.f;
    Ins *in = &f->code.v[u];
    if (in->src[src].kind != O_REG)
        return;
    int bits = f->regs.v[in->src[src].reg].rc == RC_D ? 64 : 32;
    Split s = split_at(fo, in->src[src], u, bits, 0);
    if (s.base.kind != O_REG)
        return;
    in = &f->code.v[u];              /* split_at grows f->regs, never f->code: still valid */
    int sk[2];
    int64_t *offp[2];
    mem_addrs(in, sk, offp);
    int64_t *slot = offp[src == sk[0] ? 0 : 1];
    int64_t off = wrap((int64_t)((uint64_t)*slot + (uint64_t)s.c), bits);
    if (off <= -OFF_LIMIT || off >= OFF_LIMIT) {
        /* the far part goes into the base, shared (after cse) by neighbours of one chunk */
        int64_t keep = off % OFF_CHUNK;
        Ins n;
        memset(&n, 0, sizeof n);
        n.op = OP_ADD;
        n.ty = (uint8_t)(bits == 64 ? PT_S64 : PT_U32);
        n.vec = 1;
        n.guard = -1;
        n.src[0] = s.base;
        n.src[1] = IMM(off - keep);
        n.nsrc = 2;
        n.line = in->line;
        const char *save = f->cur_what;
        f->cur_what = f->regs.v[s.base.reg].what;
        n.dst[0] = new_reg(f, f->regs.v[s.base.reg].rc);
        n.ndst = 1;
        f->cur_what = save;
        insert_at(&fo->ed, u, false, n);
        s.base = R(n.dst[0]);
        off = keep;
    }
    in->src[src] = s.base;
    *slot = off;
}

static void fold(Arena *a, Func *f)
{
    Folder fo;
    fo.a = a;
    facts_build(&fo.x, f);
    edits_init(&fo.ed, fo.x.n);
    fo.memo = calloc((size_t)fo.x.n + 1, sizeof(Split));
    for (int u = 0; u < fo.x.n; u++) {
        if (!is_mem_op(&f->code.v[u]))
            continue;
        int src[2];
        int64_t *offp[2];
        int na = mem_addrs(&f->code.v[u], src, offp);
        for (int k = 0; k < na; k++)
            fold_one(&fo, u, src[k]);
    }
    free(fo.memo);
    facts_free(&fo.x);
    edits_apply(f, &fo.ed);
}

/* ---------------------------------------------------------------- dce */

static void dce(Func *f)
{
    int n = f->code.n, nr = f->regs.n;
    int *uses = calloc((size_t)nr + 1, sizeof(int));
    bool *dead = calloc((size_t)n + 1, sizeof(bool));
    for (int i = 0; i < n; i++) {
        Ins *in = &f->code.v[i];
        for (int s = 0; s < in->nsrc; s++)
            if (in->src[s].kind == O_REG)
                uses[in->src[s].reg]++;
        if (in->guard >= 0)
            uses[in->guard]++;
    }
    /* backwards until nothing changes: a removal frees its operands */
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = n - 1; i >= 0; i--) {
            Ins *in = &f->code.v[i];
            if (dead[i] || !is_removable(in))
                continue;
            bool used = false;
            for (int d = 0; d < in->ndst; d++)
                used |= uses[in->dst[d]] > 0;
            if (used)
                continue;
            dead[i] = true;
            changed = true;
            for (int s = 0; s < in->nsrc; s++)
                if (in->src[s].kind == O_REG)
                    uses[in->src[s].reg]--;
            if (in->guard >= 0)
                uses[in->guard]--;
        }
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!dead[i])
            f->code.v[k++] = f->code.v[i];
    f->code.n = k;
    free(uses);
    free(dead);
}

typedef struct { Ins *v; int n; } Code;

static Code code_save(const Func *f)
{
    Code c = { malloc(sizeof(Ins) * ((size_t)f->code.n + 1)), f->code.n };
    memcpy(c.v, f->code.v, sizeof(Ins) * (size_t)f->code.n);
    return c;
}

static void code_restore(Func *f, Code c)
{
    f->code.n = 0;
    for (int i = 0; i < c.n; i++)
        vec_push(&f->code, c.v[i]);
}

/* The sub-passes against one limit. */
static void split_within(Arena *a, Func *f, Peaks limit)
{
    cse(f, limit);
    licm(f, limit);
    cse(f, limit);
    /* The fold makes each new base right after the definition it splits, shared by every
       access that definition reaches, so a base can live long; where the fold as a whole
       takes either peak past its limit, the code goes back to what it was before it */
    Code before = code_save(f);
    fold(a, f);
    cse(f, limit);
    dce(f);
    Peaks now = pressure_peaks(f);
    if (now.peak[0] > limit.peak[0] || now.peak[1] > limit.peak[1]) {
        code_restore(f, before);
        dce(f);
    }
    free(before.v);
}

/* The registers a thread needs by the larger peak, as regalloc predicts them (with the two
 * that hold the program counter). */
static int peaks_pred(Peaks pk) { return (pk.peak[0] > pk.peak[1] ? pk.peak[0] : pk.peak[1]) + 2; }

/* The blocks per multiprocessor the cap regalloc will set aims at. */
static int cap_blocks(const Func *f, Peaks pk)
{
    return reg_cap_blocks(peaks_pred(pk), f->threads, f->sm_threads);
}

/* One block more is within the split's reach: the demand it needs is at most twice the cap's
 * slack (a tenth, at least 4) under the demand without the split. */
static bool block_in_reach(const Func *f, Peaks pk)
{
    int pred = peaks_pred(pk);
    int want = reg_cap_blocks(pred, f->threads, f->sm_threads) + 1;
    for (int d = pred - 1; d >= 24 && pred - d <= 2 * reg_cap_slack(pred); d--)
        if (reg_cap_blocks(d, f->threads, f->sm_threads) >= want)
            return true;
    return false;
}

void addr_split(Arena *a, Func *f, bool remat_after)
{
    Peaks base = peaks_without(f, remat_after), room = pressure_limits(f, base);
    bool spare = room.peak[0] != base.peak[0] || room.peak[1] != base.peak[1];
    if (!spare || !block_in_reach(f, base)) {
        split_within(a, f, spare ? room : base);
        return;
    }
    /* Near an occupancy boundary the split is made both ways: held to the peak, the shares it
       refuses and the temporaries it folds away can bring the demand under the boundary the cap
       aims at (lse_bwd: 69 registers, a cap of 64 and 4 blocks of 256 threads, against 70 and 3
       with the room spent: 1.04 against 0.95 of nvcc's time on an H100). Where they do, that one
       stands, else the one that spends the room. */
    Code orig = code_save(f);
    split_within(a, f, base);
    int strict_blocks = cap_blocks(f, peaks_without(f, remat_after));
    Code strict = code_save(f);
    code_restore(f, orig);
    split_within(a, f, room);
    if (strict_blocks > cap_blocks(f, peaks_without(f, remat_after)))
        code_restore(f, strict);
    free(orig.v);
    free(strict.v);
}
