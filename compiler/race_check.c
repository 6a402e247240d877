/* race_check.c: proves that the lowered code orders every shared-memory write and every other
 * thread's access to the same bytes by a block barrier, on every path; fails the compilation,
 * naming both instructions, where it cannot.
 *
 * Why a check and not only care in the lowering: barriers are placed by several files (scratch
 * for reductions and layout changes, shared vars, staged matmul operands, pipelined loops, TMA),
 * and a missing one is invisible in testing (a race shows only under another clock, GPU or a
 * race detector). The rule the lowering follows is in docs/internals.md ("Barriers"); this pass
 * checks the code against it, so a new construct cannot bring a race in silently.
 *
 * The model. Threads of a block run the same instruction stream; bar.sync is reached by all of
 * them (the lowering never puts one under a divergent branch). Between two barriers, any two
 * shared accesses of different threads may run in any order, so two accesses conflict when they
 * may touch the same buffer, one of them writes, and no barrier lies between them on some path.
 * A forward data flow over the control-flow graph carries, at every point, the accesses made
 * since the last barrier (a set, joined by union); each access is checked against that set.
 *
 * Precision, and why it is enough:
 * - Buffers, not bytes: an access's address is traced back through its arithmetic to the
 *   allocation it points into (Func.smem_bufs). Two accesses of one buffer are taken to overlap.
 *   The lowering never relies on threads touching disjoint parts of one buffer between barriers,
 *   except for the cases below, which the IR states.
 * - Stages: a pipelined loop's stage buffers are one allocation indexed by a stage counter
 *   (VReg.stage_S). An access into it is kept as "stage counter + r (mod S)"; copies into the
 *   stage ahead and reads of the current one then do not meet. Where the counter is set to 0,
 *   accesses to constant stages k (the prologue) become "counter + k"; where it advances, every
 *   r held becomes r - 1.
 * - Own pieces: cp.async and TMA copies, and the in-place tf32 rounding of what a thread copied
 *   (Ins.own), touch bytes that only the issuing thread touches until the next barrier; two such
 *   accesses never conflict with each other.
 * - A producer warp (lower_warpspec.c) runs a loop the consumers never reach and leaves: its
 *   path holds only its own TMA copies, and nothing here pairs them with the consumers' reads.
 *   The rings' mbarriers order those by construction (lower_warpspec.c says how), and
 *   compute-sanitizer checks them on the GPU (tests/gpu/warpspec.mk).
 * - Asynchronous accesses outlive barriers: a cp.async write is pending until a
 *   cp.async.wait_group that covers its group (ages count commits), a TMA write until a wait on
 *   its stage's mbarrier, a wgmma read until wgmma.wait_group; only then does the next barrier
 *   order them. A TMA store's read of its staged tile is waited for by the thread that issued it
 *   right after the issue, so it counts as an ordinary read. */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

enum { NO_BUF = -1, ANY_BUF = -2 };
enum { ST_NONE = 0, ST_ABS = 1, ST_REL = 2 };     /* an access's stage: none, constant, counter-relative */
enum { AS_SYNC, AS_CP, AS_TMA, AS_WG };            /* what completes an access */
enum { MAX_AGE = 15 };

/* Where a register points into shared memory, or which stage it indexes. */
typedef struct {
    int buf;               /* NO_BUF: not a shared address; ANY_BUF: unknown */
    uint8_t st;            /* ST_*: the stage within a stage buffer */
    int ctr;               /* ST_REL: the stage counter register */
    int stage;             /* ST_ABS: the stage; ST_REL: the offset from the counter */
    /* a stage index rather than an address: idx = counter + stage (ST_REL) or stage (ST_ABS) */
    bool is_index;
    /* an address delta of one stage forward (next_stage_delta's selp): bytes per stage */
    int64_t step_bytes;
    bool is_const;         /* a constant (the prologue's stage numbers): cval */
    int64_t cval;
} Prov;

typedef struct {
    int ins;               /* the instruction (for the message) */
    int buf;
    uint8_t st;
    int ctr, stage;
    bool write, atomic, own;
    uint8_t as;            /* AS_* */
    int8_t age;            /* AS_CP: commits since its group closed (-1: open); AS_WG likewise */
    int bar_stage;         /* AS_TMA: the stage of the mbarrier it completes on (-1: unknown) */
    bool bar_abs;          /* ... a constant stage (the prologue's), not one relative to the counter */
    int bar_buf;           /* AS_TMA: the buffer of that mbarrier */
} Access;

typedef Vec(Access) AccSet;

typedef struct {
    Func *f;
    Kernel *k;
    Prov *prov;            /* per register */
    int *stage_S;          /* per register: S of a stage counter, 0 otherwise */
    int *array_buf;        /* per register tensor: the buffer its elements point into */
    int *array_stride;     /* per register tensor: bytes between elements */
    int *label_at;         /* label -> instruction index */
    /* per instruction and phase: accesses pending on entry (labels only). The phase is whether
       control is in the first iteration of a pipelined loop (a branch on VReg.first_iter
       predicates goes one way in it, the other after), kept apart so that the first iteration's
       own barrier is not lost in a join with the later ones. */
    AccSet *in[2];
    bool *seen[2];
    bool failed;
} Check;

/* ---- address provenance */

/* The buffer an address made by instruction `ins` points into: of those allocated before it
 * that hold the offset, the latest (memory a loop released is allocated again later: the
 * earlier buffer's addresses were all made before). */
static int buf_of_offset(Func *f, int64_t off, int ins)
{
    int found = ANY_BUF;
    for (int i = 0; i < f->smem_bufs.n; i++)
        if (f->smem_bufs.v[i].at <= ins && off >= f->smem_bufs.v[i].off &&
            off < f->smem_bufs.v[i].off + f->smem_bufs.v[i].bytes)
            found = i;
    return found;
}

/* Do two buffers share bytes (one reuses memory the other's loop released)? */
static bool bufs_overlap(const Func *f, int a, int b)
{
    const SmemBuf *x = &f->smem_bufs.v[a], *y = &f->smem_bufs.v[b];
    return x->off < y->off + y->bytes && y->off < x->off + x->bytes;
}

static Prov prov_none(void) { Prov p = { NO_BUF, ST_NONE, -1, 0, false, 0, false, 0 }; return p; }
static Prov prov_any(void) { Prov p = { ANY_BUF, ST_NONE, -1, 0, false, 0, false, 0 }; return p; }

static Prov opnd_prov(Check *c, Opnd o)
{
    if (o.kind == O_REG && o.reg >= 0 && o.reg < c->f->regs.n)
        return c->prov[o.reg];
    return prov_none();
}

static bool is_addr(Prov p) { return p.buf != NO_BUF && !p.is_index; }

/* The stage a stage-index operand names, or false when it is not one. */
static bool stage_index(Check *c, Opnd o, Prov *out)
{
    if (o.kind == O_IMM) {
        Prov p = prov_none();
        p.st = ST_ABS;
        p.stage = (int)o.i;
        *out = p;
        return true;
    }
    if (o.kind != O_REG)
        return false;
    if (c->stage_S[o.reg]) {
        Prov p = prov_none();
        p.st = ST_REL;
        p.ctr = o.reg;
        p.stage = 0;
        *out = p;
        return true;
    }
    Prov p = c->prov[o.reg];
    if (p.is_const) {
        p = prov_none();
        p.st = ST_ABS;
        p.stage = (int)c->prov[o.reg].cval;
    } else if (!p.is_index) {
        return false;
    }
    *out = p;
    return true;
}

static int mod(int a, int m) { return m > 0 ? ((a % m) + m) % m : a; }

/* Provenance of an instruction's result from its operands. Arithmetic carries an address's
 * buffer (offsets move inside it); stage indexes follow +, - and selp between equal stages. */
static Prov def_prov(Check *c, const Ins *in)
{
    Func *f = c->f;
    if (in->op == OP_MOV && in->src[0].kind == O_IMM) {
        Prov p = prov_none();
        p.is_const = true;
        p.cval = in->src[0].i;
        return p;
    }
    switch (in->op) {
    case OP_MOVSYM:
        if (in->src[0].sym && !strncmp(in->src[0].sym, "tilec_smem+", 11)) {
            Prov p = prov_none();
            p.buf = buf_of_offset(f, strtoll(in->src[0].sym + 11, NULL, 10), (int)(in - f->code.v));
            return p;
        }
        return prov_none();
    case OP_ARRGET: {
        int a = in->array;
        Prov p = prov_none();
        if (a < 0 || a >= f->arrays.n || c->array_buf[a] == NO_BUF)
            return p;
        p.buf = c->array_buf[a];
        Prov s;
        if (stage_index(c, in->src[0], &s)) {
            p.st = s.st;
            p.ctr = s.ctr;
            p.stage = s.stage;
        }
        return p;
    }
    case OP_SELP: {
        Prov a = opnd_prov(c, in->src[0]), b = opnd_prov(c, in->src[1]);
        /* next_stage_delta: -(S-1) * bytes or + bytes, one stage forward either way */
        if (in->src[0].kind == O_IMM && in->src[1].kind == O_IMM && in->src[1].i > 0 && in->src[0].i < 0 &&
            -in->src[0].i % in->src[1].i == 0) {
            Prov p = prov_none();
            p.step_bytes = in->src[1].i;
            return p;
        }
        Prov sa, sb;
        if (stage_index(c, in->src[0], &sa) && stage_index(c, in->src[1], &sb) && sa.st == ST_REL && sb.st == ST_REL &&
            sa.ctr == sb.ctr) {
            int S = c->stage_S[sa.ctr];
            if (mod(sa.stage, S) == mod(sb.stage, S)) {
                sa.is_index = true;
                sa.stage = mod(sa.stage, S);
                sa.buf = NO_BUF;
                return sa;
            }
        }
        if (is_addr(a) || is_addr(b))
            return a.buf == b.buf && a.st == b.st && a.ctr == b.ctr && a.stage == b.stage ? a : prov_any();
        return prov_none();
    }
    case OP_ADD: case OP_SUB: case OP_MOV: case OP_MAD: case OP_MUL: case OP_SHL: case OP_SHR: case OP_BAND:
    case OP_BOR: case OP_BXOR: case OP_CVT: case OP_CVTA: {
        /* a stage index plus or minus a constant */
        Prov s;
        if ((in->op == OP_ADD || in->op == OP_SUB || in->op == OP_MOV) && stage_index(c, in->src[0], &s) &&
            s.st == ST_REL && (in->op == OP_MOV || in->src[1].kind == O_IMM)) {
            int d = in->op == OP_MOV ? 0 : (int)(in->op == OP_ADD ? in->src[1].i : -in->src[1].i);
            s.is_index = true;
            s.buf = NO_BUF;
            s.stage = mod(s.stage + d, c->stage_S[s.ctr]);
            return s;
        }
        Prov out = prov_none();
        int naddr = 0;
        int64_t step = 0;
        for (int i = 0; i < in->nsrc; i++) {
            Prov p = opnd_prov(c, in->src[i]);
            if (is_addr(p)) {
                out = p;
                naddr++;
            } else if (p.step_bytes) {
                step = p.step_bytes;
            }
        }
        if (naddr > 1)
            return prov_any();
        if (naddr == 1 && step && in->op == OP_ADD && out.st == ST_REL &&
            c->f->smem_bufs.v[out.buf].stage_bytes == step)
            out.stage = mod(out.stage + 1, c->stage_S[out.ctr]);
        return out;
    }
    default:
        return prov_none();
    }
}

/* ---- accesses */

static bool stages_may_meet(Check *c, const Access *a, const Access *b)
{
    if (a->st == ST_NONE || b->st == ST_NONE)
        return true;
    if (a->st == ST_ABS && b->st == ST_ABS)
        return a->stage == b->stage;
    if (a->st == ST_REL && b->st == ST_REL && a->ctr == b->ctr) {
        int S = c->stage_S[a->ctr];
        return mod(a->stage, S) == mod(b->stage, S);
    }
    return true;
}

static bool conflict(Check *c, const Access *a, const Access *b)
{
    /* two buffers that share bytes: any access of one may meet any of the other */
    bool other = a->buf != b->buf && a->buf != ANY_BUF && b->buf != ANY_BUF;
    if (other && !bufs_overlap(c->f, a->buf, b->buf))
        return false;
    if (!a->write && !b->write)
        return false;
    if (a->atomic && b->atomic)
        return false;
    if (a->own && b->own)
        return false;
    /* two plain stores: a tile store writes each element from one thread (the primary copy of a
       replicated layout), so its own stores never overlap across threads; write-after-write
       between two tile stores is not checked (the lowering always reads a buffer between two
       writes of it, and that read is checked against both) */
    if (a->write && b->write && !a->atomic && !b->atomic && a->as == AS_SYNC && b->as == AS_SYNC &&
        !a->own && !b->own)
        return false;
    return other || stages_may_meet(c, a, b);
}

static bool same_key(const Access *a, const Access *b)
{
    return a->buf == b->buf && a->st == b->st && a->ctr == b->ctr && a->stage == b->stage && a->write == b->write &&
           a->atomic == b->atomic && a->own == b->own && a->as == b->as && a->age == b->age &&
           a->bar_stage == b->bar_stage && a->bar_abs == b->bar_abs && a->bar_buf == b->bar_buf;
}

/* Adds x unless an access of the same kind is there (the first one found names it). */
static bool add(AccSet *s, Access x)
{
    for (int i = 0; i < s->n; i++)
        if (same_key(&s->v[i], &x))
            return false;
    vec_push(s, x);
    return true;
}

static const char *buf_name(Check *c, int buf)
{
    if (buf == ANY_BUF)
        return "shared memory";
    const char *n = c->f->smem_bufs.v[buf].name;
    return n ? n : "a shared buffer";
}

static const char *access_name(const Ins *in)
{
    switch (in->op) {
    case OP_LD: return "ld.shared";
    case OP_ST: return "st.shared";
    case OP_RED: case OP_ATOM: return "atom.shared";
    case OP_LDMATRIX: return "ldmatrix";
    case OP_CPASYNC: return "cp.async";
    case OP_TMALOAD: return "cp.async.bulk.tensor";
    case OP_TMASTORE: return "cp.async.bulk.tensor (store)";
    case OP_WGMMA: return "wgmma.mma_async";
    default: return op_name(in->op);
    }
}

/* One report per kernel: the first race found names both instructions; the rest would repeat it. */
static void report(Check *c, const Access *old, int now)
{
    if (c->failed)
        return;
    c->failed = true;
    diag.nbugs++;
    const Ins *a = &c->f->code.v[old->ins], *b = &c->f->code.v[now];
    int la = a->line > 0 ? a->line : c->k->loc.line, lb = b->line > 0 ? b->line : c->k->loc.line;
    Loc at = { lb, 1 };
    error_at(at, "kernel '%s': shared-memory race in the generated code: %s (line %d) and %s (line %d) of %s can "
             "meet without a barrier between them; this is a compiler bug, please report it",
             c->k->name, access_name(a), la, access_name(b), lb, buf_name(c, old->buf));
}

/* The shared access instruction i makes, if any. Returns the number of addresses it reads (0: none). */
static int access_of(Check *c, int i, Access *x, Opnd *addrs)
{
    const Ins *in = &c->f->code.v[i];
    memset(x, 0, sizeof *x);
    x->ins = i;
    x->age = -1;
    x->bar_stage = -1;
    x->bar_buf = ANY_BUF;
    x->own = in->own;
    switch (in->op) {
    case OP_LD: case OP_ST: case OP_RED: case OP_ATOM:
        if (in->space != SP_SHARED)
            return 0;
        x->write = in->op != OP_LD;
        x->atomic = in->op == OP_RED || in->op == OP_ATOM;
        addrs[0] = in->src[0];
        return 1;
    case OP_LDMATRIX:
        addrs[0] = in->src[0];
        return 1;
    case OP_CPASYNC:
        x->write = true;
        x->own = true;
        x->as = AS_CP;
        addrs[0] = in->src[0];
        return 1;
    case OP_TMALOAD: {
        x->write = true;
        x->own = true;
        x->as = AS_TMA;
        Prov b = opnd_prov(c, in->src[4]);
        x->bar_stage = b.st == ST_REL || b.st == ST_ABS ? b.stage : -1;
        x->bar_abs = b.st == ST_ABS;
        x->bar_buf = b.buf;
        addrs[0] = in->src[0];
        return 1;
    }
    case OP_TMASTORE:
        /* a read of the staged tile; the issuing thread waits for it (cp.async.bulk.wait_group.read)
           before it reaches another barrier (lower_tma_store.c), so it counts as done there */
        addrs[0] = in->src[0];
        return 1;
    case OP_WGMMA:
        x->as = AS_WG;
        if (in->a_regs) {               /* A in registers, B's descriptor */
            addrs[0] = in->src[4];
            return 1;
        }
        addrs[0] = in->src[0];
        addrs[1] = in->src[1];
        return 2;
    default:
        return 0;
    }
}

static void check_access(Check *c, AccSet *s, int i)
{
    Access x;
    Opnd addrs[2];
    int n = access_of(c, i, &x, addrs);
    for (int j = 0; j < n; j++) {
        if (addrs[j].kind != O_REG)
            continue;      /* a wgmma's register-sourced A */
        Prov p = opnd_prov(c, addrs[j]);
        x.buf = p.buf == NO_BUF ? ANY_BUF : p.buf;
        x.st = p.st;
        x.ctr = p.ctr;
        x.stage = p.stage;
        for (int k = 0; k < s->n; k++)
            if (conflict(c, &s->v[k], &x)) {
                report(c, &s->v[k], i);
                break;
            }
        add(s, x);
    }
}

/* ---- the transfer function */

static void barrier(AccSet *s)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        if (s->v[i].as != AS_SYNC)
            s->v[n++] = s->v[i];
    s->n = n;
}

/* Accesses whose completion this instruction waits for become ordinary ones: the next barrier
 * orders them. */
static void complete(AccSet *s, int as, int min_age, int bar_stage)
{
    for (int i = 0; i < s->n; i++) {
        Access *a = &s->v[i];
        if (a->as != as)
            continue;
        if ((as == AS_CP || as == AS_WG) && (a->age < 0 || a->age < min_age))
            continue;
        if (as == AS_TMA && bar_stage >= 0 && a->bar_stage >= 0 && !a->bar_abs && a->bar_stage != bar_stage)
            continue;
        a->as = AS_SYNC;
        a->age = -1;
    }
}

/* Every thread waits on the mbarrier of buffer bars, stage st/stage (ST_REL or ST_ABS; else
 * not a stage's): the TMA copies known to complete on it are over and their bytes visible to
 * each thread that saw the phase complete (PTX ISA, mbarrier's complete_tx), so they need no
 * barrier after; those known to complete on another stay pending; any other becomes an ordinary
 * write, which the next barrier orders. Known: the same stage of the same buffer, or a buffer
 * that holds one mbarrier and no stages. */
static void complete_tma(Check *c, AccSet *s, int bars, int st, int stage)
{
    bool staged = st == ST_REL || st == ST_ABS;
    bool single = !staged && bars >= 0 && bars < c->f->smem_bufs.n && c->f->smem_bufs.v[bars].bytes == 8;
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        Access *a = &s->v[i];
        if (a->as != AS_TMA) {
            s->v[n++] = *a;
            continue;
        }
        bool known = (staged && a->bar_stage >= 0 && a->bar_abs == (st == ST_ABS)) || (single && a->bar_stage < 0);
        bool other = (staged && known && a->bar_stage != stage) || (bars >= 0 && a->bar_buf >= 0 && a->bar_buf != bars);
        if (!other && known && bars >= 0 && a->bar_buf == bars)
            continue;
        if (!other) {
            a->as = AS_SYNC;
            a->age = -1;
        }
        s->v[n++] = *a;
    }
    s->n = n;
}

/* TMA copies completing on an mbarrier of buffer `bars` (ANY_BUF: unknown, all of them) are
 * done. */
static void complete_on(Check *c, AccSet *s, int bars)
{
    (void)c;
    for (int i = 0; i < s->n; i++) {
        Access *a = &s->v[i];
        if (a->as == AS_TMA && (bars == ANY_BUF || a->bar_buf == ANY_BUF || a->bar_buf == bars)) {
            a->as = AS_SYNC;
            a->age = -1;
        }
    }
}

static void commit(AccSet *s, int as)
{
    for (int i = 0; i < s->n; i++)
        if (s->v[i].as == as && s->v[i].age < MAX_AGE)
            s->v[i].age++;
}

/* A stage counter changes: to 0 (constant stages become relative ones) or by one (the stages
 * held shift back by one). */
static void restage(Check *c, AccSet *s, const Ins *in, int ctr)
{
    int S = c->stage_S[ctr];
    bool reset = in->op == OP_MOV && in->src[0].kind == O_IMM && in->src[0].i == 0;
    for (int i = 0; i < s->n; i++) {
        Access *a = &s->v[i];
        if (reset && a->st == ST_ABS) {
            a->st = ST_REL;
            a->ctr = ctr;
        } else if (!reset && a->st == ST_REL && a->ctr == ctr) {
            a->stage = mod(a->stage - 1, S);
        }
        if (a->as == AS_TMA && a->bar_abs && reset)
            a->bar_abs = false;
        else if (a->as == AS_TMA && a->bar_stage >= 0 && !a->bar_abs && !reset)
            a->bar_stage = mod(a->bar_stage - 1, S);
    }
}

static void transfer(Check *c, AccSet *s, int *first, int i)
{
    const Ins *in = &c->f->code.v[i];
    for (int d = 0; d < in->ndst; d++)
        if (in->dst[d] >= 0 && c->stage_S[in->dst[d]])
            *first = in->op == OP_MOV && in->src[0].kind == O_IMM && in->src[0].i == 0;
    switch (in->op) {
    case OP_BAR: case OP_BARRED: case OP_CLUSTERSYNC: barrier(s); return;
    case OP_CPCOMMIT: commit(s, AS_CP); return;
    case OP_WGCOMMIT: commit(s, AS_WG); return;
    case OP_CPWAIT: complete(s, AS_CP, in->inflight, -1); return;
    case OP_WGWAIT: complete(s, AS_WG, in->inflight, -1); return;
    case OP_MBWAIT: {
        Prov b = opnd_prov(c, in->src[0]);
        if (in->guard >= 0)    /* not every thread waits: the copies stay a barrier away */
            complete(s, AS_TMA, 0, b.st == ST_REL ? b.stage : -1);
        else
            complete_tma(c, s, b.buf, b.st, b.stage);
        return;
    }
    case OP_MBINVAL:
        /* an mbarrier is invalidated only with no copy pending on it (PTX ISA): the lowering
           invalidates a loop's barriers after the loop, whose copies past its end were
           predicated off, so none of the copies that completes on them is pending */
        complete_on(c, s, opnd_prov(c, in->src[0]).buf);
        break;
    default: break;
    }
    check_access(c, s, i);
    if (in->op == OP_CPASYNC)
        s->v[s->n - 1].age = -1;
    for (int d = 0; d < in->ndst; d++)
        if (in->dst[d] >= 0 && c->stage_S[in->dst[d]])
            restage(c, s, in, in->dst[d]);
}

/* ---- data flow */

static bool merge_into(AccSet *dst, const AccSet *src)
{
    bool changed = false;
    for (int i = 0; i < src->n; i++)
        changed |= add(dst, src->v[i]);
    return changed;
}

static bool ends_block(const Ins *in) { return in->op == OP_RET || (in->op == OP_BRA && in->guard < 0); }

/* Register provenance in one pass over the code in order. A register defined twice with
 * different provenance (only loop-carried ones are) gets the join: unknown if either is an
 * address. */
static void compute_prov(Check *c)
{
    Func *f = c->f;
    bool *defined = calloc((size_t)f->regs.n + 1, 1);
    for (int i = 0; i < f->code.n; i++) {
        const Ins *in = &f->code.v[i];
        if (in->op == OP_ARRSET) {
            int a = in->array;
            Prov p = opnd_prov(c, in->src[0]);
            if (a >= 0 && a < f->arrays.n && is_addr(p))
                c->array_buf[a] = p.buf;
            continue;
        }
        if (in->ndst < 1)
            continue;
        Prov p = def_prov(c, in);
        for (int d = 0; d < in->ndst; d++) {
            int r = in->dst[d];
            if (r < 0 || r >= f->regs.n || c->stage_S[r])
                continue;
            if (!defined[r]) {
                c->prov[r] = p;
                defined[r] = true;
            } else if (memcmp(&c->prov[r], &p, sizeof p)) {
                c->prov[r] = is_addr(c->prov[r]) || is_addr(p) ? prov_any() : prov_none();
            }
        }
    }
    free(defined);
}

bool race_check(Func *f)
{
    Check c = { 0 };
    c.f = f;
    c.k = f->k;
    int nr = f->regs.n + 1, n = f->code.n;
    c.prov = calloc((size_t)nr, sizeof *c.prov);
    c.stage_S = calloc((size_t)nr, sizeof *c.stage_S);
    c.array_buf = malloc(sizeof(int) * ((size_t)f->arrays.n + 1));
    c.label_at = malloc(sizeof(int) * ((size_t)f->nlabels + 1));
    for (int ph = 0; ph < 2; ph++) {
        c.in[ph] = calloc((size_t)n + 1, sizeof *c.in[ph]);
        c.seen[ph] = calloc((size_t)n + 1, 1);
        if (!c.in[ph] || !c.seen[ph])
            die("out of memory");
    }
    if (!c.prov || !c.stage_S || !c.array_buf || !c.label_at)
        die("out of memory");
    for (int r = 0; r < f->regs.n; r++) {
        c.prov[r] = prov_none();
        c.stage_S[r] = f->regs.v[r].stage_S;
    }
    for (int a = 0; a < f->arrays.n; a++)
        c.array_buf[a] = NO_BUF;
    for (int l = 0; l < f->nlabels; l++)
        c.label_at[l] = -1;
    for (int i = 0; i < n; i++)
        if (f->code.v[i].op == OP_LABEL && f->code.v[i].label >= 0 && f->code.v[i].label < f->nlabels)
            c.label_at[f->code.v[i].label] = i;
    compute_prov(&c);

    /* worklist of (block start, phase): instruction 0 and labels, each with the accesses
       pending on entry; a block runs to the next label (merged into, not entered) or to its end */
    Vec(int) work = { 0 };
    vec_push(&work, 0);
    c.seen[0][0] = true;
    AccSet cur = { 0 };
    while (work.n) {
        int item = work.v[--work.n], start = item >> 1, first = item & 1;
        cur.n = 0;
        merge_into(&cur, &c.in[first][start]);
        for (int i = start; i < n; i++) {
            const Ins *in = &f->code.v[i];
            if (in->op == OP_LABEL && i != start) {
                if (merge_into(&c.in[first][i], &cur) || !c.seen[first][i]) {
                    c.seen[first][i] = true;
                    vec_push(&work, i << 1 | first);
                }
                break;
            }
            transfer(&c, &cur, &first, i);
            bool taken = true, falls = !ends_block(in);
            if (in->op == OP_BRA && in->guard >= 0 && f->regs.v[in->guard].first_iter) {
                taken = (first != 0) != in->guard_neg;
                falls = !taken;
            }
            if (in->op == OP_BRA && taken && in->label >= 0 && in->label < f->nlabels && c.label_at[in->label] >= 0) {
                int t = c.label_at[in->label];
                if (merge_into(&c.in[first][t], &cur) || !c.seen[first][t]) {
                    c.seen[first][t] = true;
                    vec_push(&work, t << 1 | first);
                }
            }
            if (!falls)
                break;
        }
    }
    vec_free(&cur);
    vec_free(&work);
    for (int ph = 0; ph < 2; ph++) {
        for (int i = 0; i < n; i++)
            vec_free(&c.in[ph][i]);
        free(c.in[ph]);
        free(c.seen[ph]);
    }
    free(c.prov);
    free(c.stage_S);
    free(c.array_buf);
    free(c.label_at);
    return !c.failed;
}
