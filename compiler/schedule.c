/* schedule.c: contract: reorders instructions inside basic blocks so that values live shorter
 * and no point's register pressure rises (but inside a moved tree, by its own few temporaries);
 * never changes what the code computes.
 *
 * The first move it makes is a sink: an instruction goes down to just before the first instruction
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
 * store, atomic, barrier, async copy or anything this file does not know).
 *
 * The second move is a tree's: an instruction and the pure instructions above it whose results
 * only it and they read (the whole of `sigmoid(h)` or `erf(h)` for one element: a multiply, an
 * ex2, an add, a reciprocal) go down together, in their order, to just before the first reader
 * of the tree's result, when what the tree reads from outside is live there anyway. Elementwise
 * expressions are lowered a tile at a time, so `h * sigmoid(h)` computed sigmoid for every
 * element of h before the first product: 64 results live beside h's 64, which in a GEMM's
 * epilogue cost the kernel its second block a multiprocessor (an `nn.Linear` with a GELU, 128 x
 * 128 tiles: 0.66 of torch at 144 registers, one block). Moved, each element's tree runs just
 * before its product, and the peak is h's registers and one tree's. The one exception to "never
 * rises": the points inside the moved tree carry its own few temporaries on top of what was live
 * before its reader (a tree is at most MAX_TREE instructions). Trees move only where the
 * pressure at their root is near the function's peak (within an eighth) and TREE_PRESSURE or
 * more: elsewhere a move cannot lower what the kernel needs, and ptxas schedules such code its
 * own way whatever the order, so moves there only make the prediction drift from what it uses
 * (softmax: predicted 25 -> 21 registers, ptxas 27 -> 31) or cost ptxas a spill (sm_80's
 * attention backward at head dim 128: 240 -> 255 registers and 8 bytes). */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

static bool ends_block(const Ins *in) { return op_has(in->op, OPF_JUMP); }

static int weight(RegClass rc) { return rc == RC_D ? 2 : rc == RC_P ? 0 : 1; }

/* The block being scheduled as a list in its current order. Bottom-up, the instructions below the
 * one being placed (the "suffix") keep their relative order for good; the placed one goes in at
 * the suffix's head or just before the instruction that stops its sink. What the sink needs of
 * the suffix is kept per register: its first reader, its last reader and its first writer, and
 * the first instruction no load may pass; "first" and "last" compare order labels (increasing
 * along the list, relabelled locally when an insertion finds no room: Dietz and Sleator's order
 * maintenance), so each instruction is placed in time independent of the block's length. An
 * earlier version rescanned the block from each instruction: quadratic, 120 s on six nested
 * unrolled loops. */
enum { HEAD_GAP = 1 << 30 };
static const uint64_t FIRST_LABEL = (uint64_t)1 << 62;

enum { MAX_TREE = 48, TREE_SPAN = 4096, TREE_PRESSURE = 96, MAX_ROUNDS = 6 };

typedef struct {
    Func *f;
    int *ndefs;        /* definitions of each register in the function */
    int *nuses;        /* instructions reading each register */
    int *use_block;    /* the block of a register's uses: -1 none yet, -2 several blocks */
    /* the suffix: nodes are block positions 0..len-1, then the head and tail sentinels */
    int *next, *prev;
    uint64_t *label;
    int head, tail;
    /* per register, valid where stamp == the block's number: suffix nodes (-1 none) */
    int *first_reader, *last_reader, *first_writer, *stamp;
    int block;
    int first_ldbar;   /* the first suffix node a load may not pass, -1 none */
    bool *narrow;      /* per register: 16-bit from memory, or widened from one by a chain link */
    /* trees (block positions, and per register where tstamp == the block's number) */
    bool *placed;      /* per position: already in the suffix (moved with a tree) */
    bool *in_tree;     /* per position: a member of the tree being grown */
    int *def_at;       /* per register: the position defining it in this block */
    int *readers;      /* per register: its reads by the tree's members */
    int *tstamp;
    int *press;        /* per position of the function: the pressure as the round began */
    int first;         /* the block's first position in the function */
    int tree_floor;    /* the least pressure at a tree's root that lets it move */
    bool trees_only;   /* a later round: only trees move */
    bool tree_moved;
} Sched;

/* A link of the chain that widens a 16-bit value read from memory (one result from one register
 * read only here, that register a loaded or unpacked 16-bit one or itself widened from one): its
 * sink is neutral for pressure, the
 * source living longer by what the result lives shorter, but it lets what feeds the chain follow
 * it down. An f16 row loaded as packed words is a load, an unpack to two halves and a widening of
 * each: without this the widened values stay by the load, all of a tile's rows at once, where
 * ptxas converts each just before its use. Only these chains: sinking every single-use chain
 * (address arithmetic, parameter loads) lowered predictions that ptxas, hoisting them back, did
 * not meet (a softmax predicted at 21 registers then needed 29). */
static bool chain_link(Sched *s, const Ins *in)
{
    if (in->ndst != 1 || in->op == OP_LD)
        return false;
    int src = -1;
    for (int k = 0; k < in->nsrc; k++) {
        if (in->src[k].kind != O_REG)
            continue;
        if (src >= 0 || s->nuses[in->src[k].reg] != 1)
            return false;
        src = in->src[k].reg;
    }
    return src >= 0 && s->narrow[src];
}

static bool movable(Sched *s, const Ins *in)
{
    if (in->guard >= 0 || in->ndst == 0 || !(ir_pure(in->op) || in->op == OP_LD))
        return false;
    for (int d = 0; d < in->ndst; d++)
        if (s->ndefs[in->dst[d]] != 1 || (in->op == OP_LD && s->nuses[in->dst[d]] != 1))
            return false;
    return true;
}

static bool before(const Sched *s, int a, int b) { return s->label[a] < s->label[b]; }

/* Gives the nodes after a room for one more right after a: the smallest run of k = 2, 4, ...
 * successors whose label span exceeds k^2 is spread evenly. */
static void make_room(Sched *s, int a)
{
    for (uint64_t k = 2;; k *= 2) {
        int b = a;
        uint64_t n = 0;
        while (n < k && b != s->tail) {
            b = s->next[b];
            n++;
        }
        uint64_t span = s->label[b] - s->label[a];
        if (span / n > n || b == s->tail) {
            uint64_t step = span / n;
            int x = s->next[a];
            for (uint64_t j = 1; j < n; j++, x = s->next[x])
                s->label[x] = s->label[a] + j * step;
            return;
        }
    }
}

/* Puts node x into the list right after node a. */
static void insert_after(Sched *s, int a, int x)
{
    int b = s->next[a];
    if (a == s->head && b != s->tail && s->label[b] > HEAD_GAP) {
        s->label[x] = s->label[b] - HEAD_GAP;   /* the common case: placed where it was */
    } else if (a == s->head && b == s->tail) {
        s->label[x] = FIRST_LABEL;
    } else {
        if (s->label[b] - s->label[a] < 2)
            make_room(s, a);
        b = s->next[a];
        s->label[x] = s->label[a] + (s->label[b] - s->label[a]) / 2;
    }
    s->next[x] = b;
    s->prev[x] = a;
    s->next[a] = x;
    s->prev[b] = x;
}

static int reg_node(const Sched *s, const int *v, int reg) { return s->stamp[reg] == s->block ? v[reg] : -1; }

static void touch(Sched *s, int reg)
{
    if (s->stamp[reg] != s->block) {
        s->stamp[reg] = s->block;
        s->first_reader[reg] = s->last_reader[reg] = s->first_writer[reg] = -1;
    }
}

/* Node x (instruction in), now in the suffix, in the per-register facts. */
static void note_node(Sched *s, int x, const Ins *in)
{
    int u[24];
    int n = ir_uses(in, u);
    for (int k = 0; k < n; k++) {
        touch(s, u[k]);
        if (s->first_reader[u[k]] < 0 || before(s, x, s->first_reader[u[k]]))
            s->first_reader[u[k]] = x;
        if (s->last_reader[u[k]] < 0 || before(s, s->last_reader[u[k]], x))
            s->last_reader[u[k]] = x;
    }
    for (int d = 0; d < in->ndst; d++) {
        touch(s, in->dst[d]);
        if (s->first_writer[in->dst[d]] < 0 || before(s, x, s->first_writer[in->dst[d]]))
            s->first_writer[in->dst[d]] = x;
    }
    bool ldbar = in->op == OP_LABEL || !(ir_pure(in->op) || in->op == OP_LD || in->op == OP_COMMENT);
    if (ldbar && (s->first_ldbar < 0 || before(s, x, s->first_ldbar)))
        s->first_ldbar = x;
}

/* The earlier of the candidate c and q (q is never -1). */
static int earlier(const Sched *s, int c, int q) { return c >= 0 && before(s, c, q) ? c : q; }

static bool tree_member(const Ins *in) { return in->guard < 0 && in->ndst == 1 && ir_pure(in->op); }

static void tree_touch(Sched *s, int reg)
{
    if (s->tstamp[reg] != s->block) {
        s->tstamp[reg] = s->block;
        s->def_at[reg] = -1;
        s->readers[reg] = 0;
    }
}

/* Grows the tree rooted at position i (not yet placed) into t[]: a member's source joins through
 * its defining instruction when that is a pure, unguarded instruction above i in this block with
 * one result defined nowhere else, and every read of the result is a member's. Returns the
 * number of members, positions in the order found; *top gets the highest (smallest) position. */
static int grow_tree(Sched *s, const Ins *code, int i, int *t, int *top)
{
    int n = 0;
    t[n++] = i;
    s->in_tree[i] = true;
    *top = i;
    for (int m = 0; m < n; m++) {
        int u[24], nu = ir_uses(&code[t[m]], u);
        for (int k = 0; k < nu; k++) {
            int r = u[k];
            tree_touch(s, r);
            s->readers[r]++;
            int d = s->def_at[r];
            if (d < 0 || d >= i || s->placed[d] || s->in_tree[d] || s->readers[r] != s->nuses[r] ||
                s->ndefs[r] != 1 || s->use_block[r] == -2 || !tree_member(&code[d]) || n == MAX_TREE)
                continue;
            t[n++] = d;
            s->in_tree[d] = true;
            if (d < *top)
                *top = d;
        }
    }
    return n;
}

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

/* Tries the tree move of position i (see the head of the file); true if it placed the tree. */
static bool sink_tree(Sched *s, const Ins *code, int i, int end, int len)
{
    int t[MAX_TREE], ext[MAX_TREE * 4], top, next = 0;
    int n = grow_tree(s, code, i, t, &top);
    bool moved = false;
    if (n < 2 || i - top > TREE_SPAN || !tree_member(&code[i]) || s->press[s->first + i] < s->tree_floor)
        goto done;
    /* what the tree reads from outside, once each */
    for (int m = 0; m < n; m++)
        for (int k = 0; k < code[t[m]].nsrc; k++) {
            const Opnd *o = &code[t[m]].src[k];
            if (o->kind != O_REG)
                continue;
            int r = o->reg, dr = s->tstamp[r] == s->block ? s->def_at[r] : -1;
            bool dup = dr >= 0 && s->in_tree[dr];   /* made inside the tree */
            for (int e = 0; e < next && !dup; e++)
                dup = ext[e] == r;
            if (dup)
                continue;
            if (next == (int)(sizeof ext / sizeof *ext))
                goto done;
            ext[next++] = r;
        }
    /* the first suffix instruction the tree may not pass: a reader of its result, a writer of
       what it reads; and between its members nothing may write what it reads */
    int q = end < len ? len - 1 : s->tail;
    q = earlier(s, reg_node(s, s->first_reader, code[i].dst[0]), q);
    for (int e = 0; e < next; e++) {
        int r = ext[e], dr = s->tstamp[r] == s->block ? s->def_at[r] : -1;
        q = earlier(s, reg_node(s, s->first_writer, r), q);
        if (dr > top && dr < i)
            goto done;
        if (s->ndefs[r] > 1)
            for (int x = top + 1; x < i; x++)
                if (!s->in_tree[x] && !s->placed[x])
                    for (int d = 0; d < code[x].ndst; d++)
                        if (code[x].dst[d] == r)
                            goto done;
    }
    if (q == s->next[s->head])
        goto done;
    /* Below i, up to q: the root's result no longer lives there; what the tree reads and nothing
       reads at or after q lives longer. */
    int gain = weight(s->f->regs.v[code[i].dst[0]].rc);
    for (int e = 0; e < next; e++) {
        int r = ext[e], lr = reg_node(s, s->last_reader, r);
        bool live = s->use_block[r] == -2 || (lr >= 0 && q != s->tail && !before(s, lr, q));
        if (!live)
            gain -= weight(s->f->regs.v[r].rc);
    }
    if (gain < 0)
        goto done;
    /* Above i, after each member: the tree's values made and still to be read there no longer
       live; what it reads from outside, read by nothing below (in the suffix) and by no member
       after that point, lives longer (a reader outside the tree above i is not looked for: the
       count can only be too high). The move must raise no point and lower one. */
    qsort(t, (size_t)n, sizeof *t, cmp_int);
    int last[MAX_TREE], xlast[MAX_TREE * 4];   /* the last member reading each result, each ext */
    for (int v = 0; v < n; v++)
        last[v] = -1;
    for (int e = 0; e < next; e++)
        xlast[e] = -1;
    for (int w = 0; w < n; w++)
        for (int k = 0; k < code[t[w]].nsrc; k++) {
            if (code[t[w]].src[k].kind != O_REG)
                continue;
            int r = code[t[w]].src[k].reg;
            for (int v = 0; v < w; v++)
                if (code[t[v]].dst[0] == r)
                    last[v] = t[w];
            for (int e = 0; e < next; e++)
                if (ext[e] == r)
                    xlast[e] = t[w];
        }
    bool lowers = gain > 0;
    for (int m = 0; m + 1 < n; m++) {
        int delta = 0;
        for (int v = 0; v <= m; v++)   /* members' results made by then (the root's is later) */
            if (last[v] > t[m])
                delta -= weight(s->f->regs.v[code[t[v]].dst[0]].rc);
        for (int e = 0; e < next; e++)
            if (s->use_block[ext[e]] != -2 && reg_node(s, s->last_reader, ext[e]) < 0 && xlast[e] <= t[m])
                delta += weight(s->f->regs.v[ext[e]].rc);
        if (delta > 0)
            goto done;
        lowers |= delta < 0 && t[m + 1] > t[m] + 1;   /* a point outside the tree between them */
    }
    if (!lowers)
        goto done;
    for (int m = 0; m < n; m++) {
        insert_after(s, s->prev[q], t[m]);
        s->placed[t[m]] = true;
    }
    for (int m = 0; m < n; m++)
        note_node(s, t[m], &code[t[m]]);
    moved = s->tree_moved = true;
done:
    for (int m = 0; m < n; m++) {
        s->in_tree[t[m]] = false;
        int u[24], nu = ir_uses(&code[t[m]], u);   /* the read counts start again at the next root */
        for (int k = 0; k < nu; k++)
            s->readers[u[k]] = 0;
    }
    return moved;
}

static void sink_block(Sched *s, int first, int last, Ins *tmp)
{
    Ins *code = s->f->code.v + first;
    int len = last - first + 1;
    s->first = first;
    int end = ends_block(&code[len - 1]) ? len - 1 : len;   /* nothing passes the terminator */
    s->head = len;
    s->tail = len + 1;
    s->next[s->head] = s->tail;
    s->prev[s->tail] = s->head;
    s->label[s->head] = 0;
    s->label[s->tail] = UINT64_MAX;
    s->first_ldbar = -1;
    s->block++;
    int stop = end - 1 > 0 ? end - 1 : 0;
    for (int x = 0; x < len; x++) {
        s->placed[x] = false;
        for (int d = 0; d < code[x].ndst; d++) {
            tree_touch(s, code[x].dst[d]);
            s->def_at[code[x].dst[d]] = x;
        }
    }
    for (int x = len - 1; x >= stop; x--) {
        insert_after(s, s->head, x);
        note_node(s, x, &code[x]);
    }
    for (int i = end - 2; i >= 0; i--) {
        Ins *in = &code[i];
        int at = s->head;   /* insert after this node */
        if (s->placed[i])
            continue;
        if (movable(s, in) && s->trees_only) {
            if (in->op != OP_LD && sink_tree(s, code, i, end, len))
                continue;
        } else if (movable(s, in)) {
            /* the first suffix instruction the sink may not pass: a reader of a result, a
               writer of a source, for a load anything but pure work and loads; else the end */
            int q = end < len ? len - 1 : s->tail;
            for (int d = 0; d < in->ndst; d++)
                q = earlier(s, reg_node(s, s->first_reader, in->dst[d]), q);
            for (int k = 0; k < in->nsrc; k++)
                if (in->src[k].kind == O_REG)
                    q = earlier(s, reg_node(s, s->first_writer, in->src[k].reg), q);
            if (in->op == OP_LD)
                q = earlier(s, s->first_ldbar, q);
            if (q != s->next[s->head]) {
                int gain = 0;
                for (int d = 0; d < in->ndst; d++)
                    gain += weight(s->f->regs.v[in->dst[d]].rc);
                for (int k = 0; k < in->nsrc; k++) {
                    if (in->src[k].kind != O_REG)
                        continue;
                    int r = in->src[k].reg, seen = 0;
                    for (int k2 = 0; k2 < k; k2++)
                        seen |= in->src[k2].kind == O_REG && in->src[k2].reg == r;
                    /* read at or after q (in this block or another): the move lengthens it */
                    int lr = reg_node(s, s->last_reader, r);
                    bool live = s->use_block[r] == -2 || (lr >= 0 && q != s->tail && !before(s, lr, q));
                    if (!seen && !live)
                        gain -= weight(s->f->regs.v[r].rc);
                }
                if (gain > 0 || (gain == 0 && chain_link(s, in)))
                    at = s->prev[q];
            }
            if (at == s->head && in->op != OP_LD && sink_tree(s, code, i, end, len))
                continue;
        }
        insert_after(s, at, i);
        note_node(s, i, in);
    }
    int n = 0;
    for (int x = s->next[s->head]; x != s->tail; x = s->next[x])
        tmp[n++] = code[x];
    memcpy(code, tmp, sizeof(Ins) * (size_t)len);
}

void schedule_pressure(Func *f)
{
    int n = f->code.n, nv = f->regs.n;
    Sched s = { f, calloc((size_t)nv + 1, sizeof(int)), calloc((size_t)nv + 1, sizeof(int)),
                malloc(sizeof(int) * ((size_t)nv + 1)),
                malloc(sizeof(int) * ((size_t)n + 2)), malloc(sizeof(int) * ((size_t)n + 2)),
                malloc(sizeof(uint64_t) * ((size_t)n + 2)), 0, 0,
                malloc(sizeof(int) * ((size_t)nv + 1)), malloc(sizeof(int) * ((size_t)nv + 1)),
                malloc(sizeof(int) * ((size_t)nv + 1)), calloc((size_t)nv + 1, sizeof(int)), 0, -1, NULL,
                NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, false, false };
    Ins *tmp = malloc(sizeof(Ins) * ((size_t)n + 1));
    s.placed = calloc((size_t)n + 2, sizeof(bool));
    s.in_tree = calloc((size_t)n + 2, sizeof(bool));
    s.def_at = malloc(sizeof(int) * ((size_t)nv + 1));
    s.readers = calloc((size_t)nv + 1, sizeof(int));
    s.tstamp = calloc((size_t)nv + 1, sizeof(int));
    s.press = malloc(sizeof(int) * ((size_t)n + 1));
    if (!s.placed || !s.in_tree || !s.def_at || !s.readers || !s.tstamp || !s.press)
        die("out of memory");

    if (!s.ndefs || !s.nuses || !s.use_block || !s.next || !s.prev || !s.label ||
        !s.first_reader || !s.last_reader || !s.first_writer || !s.stamp || !tmp)
        die("out of memory");
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
    s.narrow = calloc((size_t)nv + 1, sizeof(bool));
    if (!s.narrow)
        die("out of memory");
    for (int i = 0; i < n; i++) {
        Ins *in = &f->code.v[i];
        if (in->op == OP_LD || in->op == OP_UNPACK2) {
            for (int d = 0; d < in->ndst; d++)
                s.narrow[in->dst[d]] = f->regs.v[in->dst[d]].rc == RC_H;
            continue;
        }
        if (in->ndst != 1 || s.ndefs[in->dst[0]] != 1)
            continue;
        int src = -1, regs = 0;
        for (int k = 0; k < in->nsrc; k++)
            if (in->src[k].kind == O_REG) {
                src = in->src[k].reg;
                regs++;
            }
        if (regs == 1 && s.narrow[src])
            s.narrow[in->dst[0]] = true;
    }
    /* Rounds: the first moves single instructions and trees; each later one only trees, near
       the peak the moves before left (a tile-at-a-time GELU lowers its peak a sweep at a time),
       while the round before moved one and the peak has not yet won a block a multiprocessor:
       moves past that only reorder what ptxas schedules its own way (the erf GELU of a 128 x
       128 epilogue: so ptxas 126 registers, two blocks; four rounds whatever the blocks, 116
       predicted but ptxas 144, one block). */
    int sm = f->sm_threads ? f->sm_threads : 2048, blocks = 0;
    for (int round = 0; round < MAX_ROUNDS && (round == 0 || s.tree_moved); round++) {
        Liveness lv;
        liveness(f, &lv);
        int peak = pressure(f, lv.demand, s.press, NULL);
        liveness_free(&lv);
        int b = reg_cap_blocks(peak, f->threads, sm);
        if (round > 0 && b > blocks)
            break;
        blocks = b;
        s.tree_floor = peak - peak / 8 > TREE_PRESSURE ? peak - peak / 8 : TREE_PRESSURE;
        s.trees_only = round > 0;
        s.tree_moved = false;
        for (int i = 0; i < n;) {
            int j = i;
            while (j < n && !(j > i && f->code.v[j].op == OP_LABEL) && !ends_block(&f->code.v[j]))
                j++;
            int last = j < n && ends_block(&f->code.v[j]) ? j : j - 1;
            sink_block(&s, i, last, tmp);
            i = last + 1;
        }
    }
    free(s.ndefs);
    free(s.nuses);
    free(s.use_block);
    free(s.next);
    free(s.prev);
    free(s.label);
    free(s.first_reader);
    free(s.last_reader);
    free(s.first_writer);
    free(s.stamp);
    free(s.narrow);
    free(s.placed);
    free(s.in_tree);
    free(s.def_at);
    free(s.readers);
    free(s.tstamp);
    free(s.press);
    free(tmp);
}
