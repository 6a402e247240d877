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

static void sink_block(Sched *s, int first, int last, Ins *tmp)
{
    Ins *code = s->f->code.v + first;
    int len = last - first + 1;
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
    for (int x = len - 1; x >= stop; x--) {
        insert_after(s, s->head, x);
        note_node(s, x, &code[x]);
    }
    for (int i = end - 2; i >= 0; i--) {
        Ins *in = &code[i];
        int at = s->head;   /* insert after this node */
        if (movable(s, in)) {
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
                malloc(sizeof(int) * ((size_t)nv + 1)), calloc((size_t)nv + 1, sizeof(int)), 0, -1, NULL };
    Ins *tmp = malloc(sizeof(Ins) * ((size_t)n + 1));
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
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && !(j > i && f->code.v[j].op == OP_LABEL) && !ends_block(&f->code.v[j]))
            j++;
        int last = j < n && ends_block(&f->code.v[j]) ? j : j - 1;
        sink_block(&s, i, last, tmp);
        i = last + 1;
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
    free(tmp);
}
