/* lower_split.c: a product's K loop split over blocks where the grid is short of the GPU.
 *
 * Why. A product of few rows (a decoder's 16 or 128 tokens against an 8192 x 8192 weight) has
 * few output tiles: 32 tiles of 128 x 256 for 132 multiprocessors, so three quarters of the GPU
 * sits idle while the others read the weight, and the plain kernel ran at 0.44-0.51 of cuBLAS
 * (H200, docs/performance.md, "Few rows"). cuBLAS splits K there. A user's kernel is written one
 * tile a block, and should not have to be written again for this (examples/matmul_splitk.tile is
 * what that costs by hand, and it only works for an f32 output a linear epilogue can add into).
 *
 * What. A kernel whose body is the tile program of a product -- scalar set-up, `var acc = 0`, one
 * loop whose body only adds products into such accumulators, then anything (the epilogue) --
 * takes a grid dimension more than it names (the split dimension, block.y of a 1-D grid, block.z
 * of a 2-D one). The launcher sets that extent S at each launch (runtime/launch.c: enough blocks
 * to fill the multiprocessors where the grid is short of them, each slice at least 8 iterations
 * of the loop; 1 otherwise). Block s of a tile runs the loop's iterations [s q, (s + 1) q), q =
 * cdiv(trips, S), from zeroed accumulators; the loop's own bounds and every fact about its
 * variable (alignment, windows in bounds) still hold, since the slice's values are the loop's.
 * After the loop the slices' sums meet (split_fixup), on a target with clusters in a cluster of a
 * tile's slices (cluster_sum: each warp's rows summed and stored by one of the blocks, the rest
 * of the kernel's stores made only by those warps), elsewhere -- and where the rest of the kernel
 * moves values made from the sums between threads -- in a binary tree: at each level two blocks
 * pair up, the first to arrive hands its sums over through a workspace and leaves, the second
 * adds them to its own -- a + b, exact in either order, so the result never depends on which
 * block came first -- and goes up; the block at the root runs the rest of the kernel. With S = 1
 * the test at the loop's end skips all of it.
 *
 * The launcher passes three hidden parameters, last: the workspace of partial sums (per tile and
 * slice, every thread's slots, slot-major so that each store and load of a warp is 512
 * contiguous bytes: a thread's slots in groups of four, v4), the tiles' pair words (a count and a
 * flag per pair, apart from the sums: a launch's sums never land where a later launch with more
 * tiles keeps its words; zero before a launch and after it), and the slice's length. The
 * launcher owns them per stream.
 *
 * Memory order: the first block's sums are plain stores; a block barrier, then thread 0's fence
 * (fence.acq_rel.gpu) and an atomic add to the pair's flag release them; the second block's
 * thread 0 reads the flag atomically until it is set, fences (acquire), and its barrier hands
 * that on to the threads that then read. */
#include <stdlib.h>
#include <string.h>

#include "lower.h"

/* SPLIT_MIN_TILE: the fewest accumulator elements a block worth splitting holds. A block of a
 * smaller tile does little work a K step, its product has many tiles unless it is tiny, and the
 * slice's bounds cost it a register: 32 x 32 products went from 12 blocks a multiprocessor to
 * 10 with them (ptxas 40 -> 48 registers). */
enum { SPLIT_MAX_ACC = 4, SPLIT_MIN_TILE = 64 * 128 };
/* a tile's pair words (split_fixup): 4 levels x 16 places x 2 words; the launcher's
   RT_SPLIT_CNT_TILE */
enum { CNT_TILE = 4 * 16 * 8 };

/* Does e name block.d (d >= dim)? */
static bool uses_block(const Expr *e, int dim)
{
    if (!e)
        return false;
    if (e->kind == E_BLOCK && e->ival >= dim)
        return true;
    if (uses_block(e->a, dim) || uses_block(e->b, dim) || uses_block(e->base, dim) || uses_block(e->fill, dim))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (uses_block(e->args[i], dim))
            return true;
    for (int i = 0; i < e->nidx; i++)
        if (uses_block(e->idx[i].start, dim) || uses_block(e->idx[i].width_expr, dim))
            return true;
    return false;
}

static bool stmt_uses_block(const Stmt *s, int dim)
{
    if (!s)
        return false;
    const Expr *ex[] = { s->init, s->lhs, s->rhs, s->cond, s->lo, s->hi, s->step };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++)
        if (uses_block(ex[i], dim))
            return true;
    for (int i = 0; i < s->nbody; i++)
        if (stmt_uses_block(s->body[i], dim))
            return true;
    return stmt_uses_block(s->then, dim) || stmt_uses_block(s->els, dim);
}

/* An expression the launcher can evaluate: sizes, integers and their arithmetic. */
static bool launch_expr(const Expr *e)
{
    switch (e->kind) {
    case E_INT: return true;
    case E_NAME: return e->sym && e->sym->kind == SYM_SIZE;
    case E_BINARY:
        return (e->op == '+' || e->op == '-' || e->op == '*' || e->op == '/' || e->op == '%') &&
               launch_expr(e->a) && launch_expr(e->b);
    case E_CALL:
        if (e->builtin != B_CDIV && e->builtin != B_MINIMUM && e->builtin != B_MAXIMUM)
            return false;
        for (int i = 0; i < e->nargs; i++)
            if (!launch_expr(e->args[i]))
                return false;
        return true;
    default: return false;
    }
}

/* A var the kernel declares as a zero tile of 32-bit sums: `var acc: f32[BM, BN] = 0`. */
static bool zero_acc(const Stmt *s)
{
    if (s->kind != S_VAR || s->is_shared || !s->sym || s->sym->shape.rank != 2 || !s->init ||
        s->sym->shape.dim[0] * s->sym->shape.dim[1] < SPLIT_MIN_TILE)
        return false;
    if (s->sym->type != TY_F32 && s->sym->type != TY_I32)
        return false;
    return (s->init->kind == E_INT && s->init->ival == 0) || (s->init->kind == E_FLOAT && s->init->fval == 0.0);
}

static int acc_index(Sym *const *acc, int n, const Sym *s)
{
    for (int i = 0; i < n; i++)
        if (acc[i] == s)
            return i;
    return -1;
}

/* Does e read one of the accumulators? */
static bool reads_acc(const Expr *e, Sym *const *acc, int nacc)
{
    if (!e)
        return false;
    if ((e->kind == E_NAME || e->kind == E_INDEX) && e->sym && acc_index(acc, nacc, e->sym) >= 0)
        return true;
    if (reads_acc(e->a, acc, nacc) || reads_acc(e->b, acc, nacc) || reads_acc(e->base, acc, nacc) ||
        reads_acc(e->fill, acc, nacc))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (reads_acc(e->args[i], acc, nacc))
            return true;
    for (int i = 0; i < e->nidx; i++)
        if (reads_acc(e->idx[i].start, acc, nacc))
            return true;
    return false;
}

/* The loop's body only adds products into the accumulators (lets may name its operands), and
 * nothing in it reads an accumulator: each slice starts its sums from zero, so a product of
 * one would not be the loop's. */
static bool product_loop(const Stmt *s, Sym *const *acc, int nacc)
{
    if (s->kind != S_FOR || (s->step && (s->step->kind != E_INT || s->step->ival < 1)) || !s->then ||
        unroll_trips(s, 1) >= 0 || !launch_expr(s->lo) || !launch_expr(s->hi))
        return false;
    bool any = false;
    for (int i = 0; i < s->then->nbody; i++) {
        const Stmt *b = s->then->body[i];
        if (b->kind == S_LET) {
            if (reads_acc(b->init, acc, nacc))
                return false;
            continue;
        }
        if (b->kind != S_ASSIGN || b->op != '+' || b->lhs->kind != E_NAME || acc_index(acc, nacc, b->lhs->sym) < 0 ||
            b->rhs->kind != E_BINARY || b->rhs->op != OP_MATMUL || reads_acc(b->rhs, acc, nacc))
            return false;
        any = true;
    }
    return any;
}

void split_plan(Lower *c)
{
    Kernel *k = c->k;
    c->split_loop = NULL;
    c->split_exit = -1;
    int dim = k->ngrid;
    /* not with -fcluster's pairs (their launch is a cluster of two already); a producer's threads
       meet the sum's cluster barriers on their way out (lower_warpspec.c, ws_tail_emit) */
    if (c->opt->no_split_k || c->opt->cluster || dim < 1 || dim >= MAX_GRID ||
        k->first_print || stmt_uses_block(k->body, dim))
        return;
    Sym *acc[SPLIT_MAX_ACC];
    int nacc = 0;
    for (int i = 0; i < k->body->nbody; i++) {
        Stmt *s = k->body->body[i];
        switch (s->kind) {
        case S_LET: case S_ASSUME:
            continue;
        case S_VAR:
            if (zero_acc(s) && nacc < SPLIT_MAX_ACC)
                acc[nacc++] = s->sym;
            continue;
        case S_ASSIGN:
            /* scalar set-up into registers; never an accumulator, never memory */
            if (s->lhs->kind == E_NAME && !s->lhs->sym->is_shared && acc_index(acc, nacc, s->lhs->sym) < 0)
                continue;
            return;
        case S_FOR:
            if (!product_loop(s, acc, nacc))
                return;
            /* the launcher's count of the loop's iterations: cdiv(hi - lo, step) */
            const char *hi = rpn_text(c, s->hi, "the loop's end"), *lo = rpn_text(c, s->lo, "the loop's start");
            int tokens = 3;
            for (const char *p = hi; *p; p++)
                tokens += *p == ' ';
            for (const char *p = lo; *p; p++)
                tokens += *p == ' ';
            if (tokens + 2 > META_MAX_RPN)
                return;
            c->meta->split_step = s->step ? s->step->ival : 1;
            c->meta->split_steps_rpn = arena_printf(c->a, "%s %s - %lld cdiv", hi, lo, (long long)c->meta->split_step);
            c->split_loop = s;
            c->split_dim = dim;
            c->split_nacc = nacc;
            memcpy(c->split_acc, acc, sizeof acc);
            c->split_exit = new_label(c->f);
            c->split_cluster = c->target->clusters && !c->opt->split_tree;
            return;
        default:
            return;
        }
    }
}

/* A hidden parameter NAME_param_WHAT (lower_params.c's spelling), of type t. */
static int param_load(Lower *c, const char *what, PType t)
{
    int r = new_reg(c->f, ptype_class(t));
    Ins *in = emit_ins(c->f, OP_LDPARAM, t);
    in->dst[0] = r;
    in->ndst = 1;
    in->src[0] = SYM(arena_printf(c->a, "%s_param_%s", c->k->name, what));
    in->nsrc = 1;
    return r;
}

/* The loop's slice in this block: [lo + s span, min(hi, lo + (s + 1) span)), where the launcher
 * passes span = cdiv(trips, S) * step (a hidden parameter): made of parameters and the block
 * index only, the bounds are uniform values ptxas keeps out of the threads' registers, where a
 * division here would leave them in one (a 40-register kernel went to 48). Computed once, before
 * the loop's lowering, which may make it twice (lower_version.c): both versions use these. */
void split_begin(Lower *c, const Stmt *s)
{
    if (s != c->split_loop)
        return;
    Func *f = c->f;
    f->cur_what = "the loop's slice";
    Tile lo = lower_expr(c, s->lo, NULL), hi = lower_expr(c, s->hi, NULL);
    int span = param_load(c, "span", PT_S32);
    int l = opnd_reg(c, lo.v[0], PT_S32);
    int start = ir_tern(f, OP_MAD, PT_S32, R(c->ctaid[c->split_dim]), R(span), R(l));
    c->split_hi = ir_bin(f, OP_MIN, PT_S32, R(opnd_reg(c, hi.v[0], PT_S32)), R(ir_bin(f, OP_ADD, PT_S32, R(start), R(span))));
    c->split_lo = start;
    f->cur_what = "temporary";
}

void split_bounds(Lower *c, const Stmt *s, Opnd *lo, Opnd *hi)
{
    if (s != c->split_loop)
        return;
    *lo = R(c->split_lo);
    *hi = R(c->split_hi);
}

static void global_access(Func *f, int op, PType t, int addr, int64_t off, int *regs, int vec)
{
    Ins *in = emit_ins(f, op, t);
    in->space = SP_GLOBAL;
    in->vec = (uint8_t)vec;
    in->off = off;
    in->src[0] = R(addr);
    if (op == OP_LD) {
        in->once = true;
        for (int j = 0; j < vec; j++)
            in->dst[j] = regs[j];
        in->ndst = vec;
        in->nsrc = 1;
    } else {
        for (int j = 0; j < vec; j++)
            in->src[1 + j] = R(regs[j]);
        in->nsrc = 1 + vec;
    }
}

/* The accumulators' registers, slot by slot, in one list (immediates made registers first: both
 * ways out of the fix-up must leave each slot in the same register). */
static int acc_regs(Lower *c, int *regs, PType *types, int most)
{
    int n = 0;
    for (int a = 0; a < c->split_nacc; a++) {
        SymInfo *si = info(c, c->split_acc[a]);
        PType t = c->split_acc[a]->type == TY_I32 ? PT_S32 : PT_F32;
        for (int q = 0; q < layout_slots(&si->val.L) && n < most; q++) {
            if (si->val.v[q].kind != O_REG)
                si->val.v[q] = R(ir_mov(c->f, t, si->val.v[q]));
            types[n] = t;
            regs[n++] = si->val.v[q].reg;
        }
    }
    return n;
}

static int slots_total(Lower *c)
{
    int n = 0;
    for (int a = 0; a < c->split_nacc; a++)
        n += layout_slots(&info(c, c->split_acc[a])->val.L);
    return n;
}

/* Each register's place in a block's partial sums: group g of four at g * T * 16 + tid * 16,
 * the remaining slots one word each after the groups. */
static void each_group(Lower *c, int part, const int *regs, const PType *types, int n, bool load)
{
    Func *f = c->f;
    int T = f->bar_threads ? f->bar_threads : c->threads;
    int v4 = ir_bin(f, OP_MUL, PT_U32, R(c->tid), IMM(16));
    int a4 = ir_bin(f, OP_ADD, PT_U64, R(part), R(ir_cvt(f, PT_U64, PT_U32, R(v4))));
    int w1 = ir_bin(f, OP_MUL, PT_U32, R(c->tid), IMM(4));
    int a1 = ir_bin(f, OP_ADD, PT_U64, R(part), R(ir_cvt(f, PT_U64, PT_U32, R(w1))));
    int groups = 0;
    for (int i = 0; i < n; groups++) {
        /* four slots of one type go together */
        int vec = i + 4 <= n && types[i] == types[i + 3] && types[i] == types[i + 1] && types[i] == types[i + 2] ? 4 : 1;
        int64_t off = vec == 4 ? (int64_t)groups * T * 16 : 0;
        if (vec == 1)
            break;
        if (!load) {
            global_access(f, OP_ST, types[i], a4, off, (int *)regs + i, 4);
        } else {
            int t[4];
            for (int j = 0; j < 4; j++)
                t[j] = new_reg(f, types[i] == PT_F32 ? RC_F : RC_R);
            global_access(f, OP_LD, types[i], a4, off, t, 4);
            for (int j = 0; j < 4; j++)
                ir_bin_to(f, OP_ADD, types[i], regs[i + j], R(regs[i + j]), R(t[j]));
        }
        i += 4;
    }
    for (int i = groups * 4, w = 0; i < n; i++, w++) {
        int64_t off = (int64_t)groups * T * 16 + (int64_t)w * T * 4;
        if (!load) {
            global_access(f, OP_ST, types[i], a1, off, (int *)regs + i, 1);
        } else {
            int t = new_reg(f, types[i] == PT_F32 ? RC_F : RC_R);
            global_access(f, OP_LD, types[i], a1, off, &t, 1);
            ir_bin_to(f, OP_ADD, types[i], regs[i], R(regs[i]), R(t));
        }
    }
}

/* The groups [g0, g0 + ng) of the partial sums at `part`, added into their registers through
 * shared memory at `buf`: each thread copies its own 16-byte pieces with cp.async and reads back
 * only those, so nothing but its own wait orders them. Loads into registers hold every piece in
 * flight in a register of its own, and ptxas issued a slice's 32 at once into whatever the cap
 * left free (tf32 on sm_80: 248 registers where the loop needs 216); copies take none. Either way
 * the reading is the one multiprocessor's: about 10 us for 4 x 128 KiB (docs/performance.md). */
static void staged_groups(Lower *c, int part, int buf, int g0, int ng, const int *regs, const PType *types)
{
    Func *f = c->f;
    int T = f->bar_threads ? f->bar_threads : c->threads;
    int g16 = ir_cvt(f, PT_U64, PT_U32, R(ir_bin(f, OP_MUL, PT_U32, R(c->tid), IMM(16))));
    int src = ir_bin(f, OP_ADD, PT_U64, R(part), R(g16));
    int dst = ir_bin(f, OP_ADD, PT_U32, R(smem_base_reg(c, buf)), R(ir_bin(f, OP_MUL, PT_U32, R(c->tid), IMM(16))));
    for (int g = 0; g < ng; g++) {
        Ins *in = emit_ins(f, OP_CPASYNC, PT_B32);
        in->src[0] = R(dst);
        in->src[1] = R(src);
        in->src[2] = IMM(16);
        in->nsrc = 3;
        in->vec = 16;
        in->off = (int64_t)g * T * 16;
        in->off2 = (int64_t)(g0 + g) * T * 16;
        in->once = true;
    }
    emit_ins(f, OP_CPCOMMIT, PT_B32);
    emit_ins(f, OP_CPWAIT, PT_B32)->inflight = 0;
    for (int g = 0; g < ng; g++) {
        int i = (g0 + g) * 4, t[4];
        Ins *in = emit_ins(f, OP_LD, types[i]);
        in->space = SP_SHARED;
        in->vec = 4;
        in->own = true;
        for (int j = 0; j < 4; j++)
            in->dst[j] = t[j] = new_reg(f, types[i] == PT_F32 ? RC_F : RC_R);
        in->ndst = 4;
        in->src[0] = R(dst);
        in->nsrc = 1;
        in->off = (int64_t)g * T * 16;
        for (int j = 0; j < 4; j++)
            ir_bin_to(f, OP_ADD, types[i], regs[i + j], R(regs[i + j]), R(t[j]));
    }
}

/* dst = atom.global.add.u32 [addr + off], v, under guard (-1: none); dst keeps its value where
 * the guard is false. */
static void atom_add(Func *f, int addr, int64_t off, int64_t v, int dst, int guard)
{
    Ins *in = emit_ins(f, OP_ATOM, PT_U32);
    in->space = SP_GLOBAL;
    in->redop = RED_ADD;
    in->dst[0] = dst;
    in->ndst = 1;
    in->src[0] = R(addr);
    in->src[1] = IMM(v);
    in->nsrc = 2;
    in->off = off;
    in->guard = guard;
}

/* The global address a hidden pointer parameter NAME_param_WHAT holds. */
static int param_ptr(Lower *c, const char *what)
{
    return ir_un(c->f, OP_CVTA, PT_U64, R(param_load(c, what, PT_U64)));
}

static void fence_gpu(Func *f, int guard)
{
    Ins *in = emit_ins(f, OP_FENCEGPU, PT_B32);
    in->guard = guard;
}

/* What split_fixup's sum works on: the predicate of the warps whose rows this block owns, the
 * tile, this block's slice, the slice count, the workspace, a block's bytes of sums in it, the
 * shared staging buffer (chunk groups of four; 0: none), and the accumulators' n registers. */
typedef struct {
    int own, tile, slice, S, parts;
    int64_t bytes;
    int buf, chunk, groups;
    const int *regs;
    const PType *types;
    int n;
    int recv, warps;   /* the owners' shared slots (-1: none, through the workspace), warps a block */
    int64_t frag;      /* a warp's sums */
} SumPlan;

/* The shared-memory hand-over (dsmem_sum): the bytes of slots a block of `warps` warps needs at S
 * slices, (S - 1) writers for each of its ceil(warps / S) owning warps. */
static int64_t dsmem_need(int warps, int64_t frag, int S)
{
    return (int64_t)(S - 1) * ((warps + S - 1) / S) * frag;
}

/* The most slices (2 to 8) whose slots, and every fewer slices' slots, fit in `room` bytes; 0
 * where 2 do not. *need: the largest of those sizes. */
static int dsmem_slices(int warps, int64_t frag, int64_t room, int64_t *need)
{
    int S = 1;
    *need = 0;
    while (S < 8 && dsmem_need(warps, frag, S + 1) <= room) {
        S++;
        if (dsmem_need(warps, frag, S) > *need)
            *need = dsmem_need(warps, frag, S);
    }
    return S >= 2 ? S : 0;
}

static void divergent_bra(Func *f, int label, int guard, bool neg)
{
    ir_bra(f, label, guard, neg);
    f->code.v[f->code.n - 1].divergent = true;
}

/* The slices of a tile as one cluster (a target with clusters; the launcher makes each tile's S
 * slices one, and a launch it cannot make so runs unsplit). A cluster's blocks all run at once,
 * so they may wait for one another, which the tree's could not: each warp's rows are summed by
 * one block, warp w's by block w % S. The other blocks' warp w write their sums of those rows
 * to the workspace; after one cluster barrier (release and acquire at the cluster's scope, which
 * covers the workspace's global memory) the owning warp adds them to its own, in the order of
 * the slices after its own, the same at every launch of the same S, and runs the rest of the
 * kernel for its rows; the others run it too with their stores switched off (split_exit), so
 * that every barrier in it still meets the whole block. A block so writes and reads (S - 1) / S
 * of a tile's sums, where the tree's root read a tile's worth at each of its log2(S) levels
 * after its sibling had written as much (docs/performance.md, "Few rows"). */
/* The cluster's hand-over through the owners' shared memory (measured 0.79 -> 0.82 of cuBLAS at
 * 128 rows against the workspace, docs/performance.md): after a first cluster barrier (every
 * block of the cluster is done with its loop's buffers), warp w of each other block writes its
 * sums straight into the owning block's slot for it (mapa, st.shared::cluster): slot
 * ((writer - owner) mod S - 1) * ceil(warps / S) + w / S, a warp's sums, piece g of its lane at
 * g * 512 + lane * 16 (the words after the pieces, lane * 4 apart); after a second the owning
 * warp adds its slots in turn from its own shared memory. */
/* A barrier of the tile's slices' cluster, counted: a producer's threads meet as many on their
 * way out (lower_warpspec.c, ws_tail_emit) */
static void cluster_barrier(Lower *c)
{
    emit_ins(c->f, OP_CLUSTERSYNC, PT_B32);
    c->split_syncs++;
}

int split_slices(Lower *c)
{
    static const char *const nct[3] = { "%nctaid.x", "%nctaid.y", "%nctaid.z" };
    return ir_movsym(c->f, PT_U32, nct[c->split_dim]);
}

static void dsmem_sum(Lower *c, const SumPlan *p, int done)
{
    Func *f = c->f;
    int warp = ir_bin(f, OP_SHR, PT_U32, R(c->tid), IMM(5));
    int lane = ir_bin(f, OP_BAND, PT_B32, R(c->tid), IMM(31));
    int nq = ir_bin(f, OP_DIV, PT_U32, R(ir_bin(f, OP_ADD, PT_U32, R(p->S), IMM(p->warps - 1))), R(p->S));
    int q = ir_bin(f, OP_DIV, PT_U32, R(warp), R(p->S));
    int base = smem_base_reg(c, p->recv);
    int64_t words_at = (int64_t)p->groups * 512;
    /* slot k's address for this lane's pieces (words_at further, lane * 4: its words) */
    #define SLOT(k) ir_tern(f, OP_MAD, PT_U32, R(ir_tern(f, OP_MAD, PT_U32, R(k), R(nq), R(q))), IMM(p->frag), R(base))
    cluster_barrier(c);
    int skip = new_label(f);
    divergent_bra(f, skip, p->own, false);
    int owner = ir_bin(f, OP_REM, PT_U32, R(warp), R(p->S));
    int k = ir_bin(f, OP_SUB, PT_U32,
                   R(ir_bin(f, OP_REM, PT_U32, R(ir_bin(f, OP_SUB, PT_U32, R(ir_bin(f, OP_ADD, PT_U32, R(p->slice), R(p->S))),
                                                        R(owner))), R(p->S))), IMM(1));
    int slot = SLOT(k);
    int there = ir_bin(f, OP_MAPA, PT_U32, R(ir_tern(f, OP_MAD, PT_U32, R(lane), IMM(16), R(slot))), R(owner));
    int there_w = ir_bin(f, OP_MAPA, PT_U32, R(ir_tern(f, OP_MAD, PT_U32, R(lane), IMM(4), R(slot))), R(owner));
    for (int i = 0; i < p->n;) {
        bool v4 = i < p->groups * 4;
        Ins *in = emit_ins(f, OP_STCLUSTER, p->types[i]);
        in->src[0] = R(v4 ? there : there_w);
        in->vec = (uint8_t)(v4 ? 4 : 1);
        for (int j = 0; j < in->vec; j++)
            in->src[1 + j] = R(p->regs[i + j]);
        in->nsrc = 1 + in->vec;
        in->off = v4 ? (int64_t)(i / 4) * 512 : words_at + (int64_t)(i - p->groups * 4) * 128;
        i += in->vec;
    }
    ir_label(f, skip);
    cluster_barrier(c);
    divergent_bra(f, done, p->own, true);
    int j = ir_mov(f, PT_U32, IMM(0)), head = new_label(f);
    ir_label(f, head);
    int mine = SLOT(j);
    int at = ir_tern(f, OP_MAD, PT_U32, R(lane), IMM(16), R(mine));
    int at_w = ir_tern(f, OP_MAD, PT_U32, R(lane), IMM(4), R(mine));
    for (int i = 0; i < p->n;) {
        bool v4 = i < p->groups * 4;
        int t[4], vec = v4 ? 4 : 1;
        for (int e = 0; e < vec; e++)
            t[e] = new_reg(f, p->types[i] == PT_F32 ? RC_F : RC_R);
        /* (the adds below move the code: nothing holds `in` past them) */
        Ins *in = emit_ins(f, OP_LD, p->types[i]);
        in->space = SP_SHARED;
        in->vec = (uint8_t)vec;
        for (int e = 0; e < vec; e++)
            in->dst[e] = t[e];
        in->ndst = vec;
        in->src[0] = R(v4 ? at : at_w);
        in->nsrc = 1;
        in->off = v4 ? (int64_t)(i / 4) * 512 : words_at + (int64_t)(i - p->groups * 4) * 128;
        for (int e = 0; e < vec; e++)
            ir_bin_to(f, OP_ADD, p->types[i], p->regs[i + e], R(p->regs[i + e]), R(t[e]));
        i += vec;
    }
    #undef SLOT
    ir_bin_to(f, OP_ADD, PT_U32, j, R(j), IMM(1));
    divergent_bra(f, head, ir_setp(f, CMP_LT, PT_U32, R(j), R(ir_bin(f, OP_SUB, PT_U32, R(p->S), IMM(1)))), false);
}

static void cluster_sum(Lower *c, const SumPlan *p, int done)
{
    Func *f = c->f;
    if (p->recv >= 0) {
        dsmem_sum(c, p, done);
        return;
    }
    int base = ir_bin(f, OP_MUL, PT_U32, R(p->tile), R(p->S));    /* the tile's slice 0 */
    int skip = new_label(f);
    divergent_bra(f, skip, p->own, false);
    int mine = ir_bin(f, OP_ADD, PT_U64, R(p->parts),
                      R(ir_bin(f, OP_MULWIDE, PT_U32, R(ir_bin(f, OP_ADD, PT_U32, R(base), R(p->slice))), IMM(p->bytes))));
    each_group(c, mine, p->regs, p->types, p->n, false);
    ir_label(f, skip);
    cluster_barrier(c);
    divergent_bra(f, done, p->own, true);
    /* the owners: the slices after this one, in turn */
    int j = ir_mov(f, PT_U32, IMM(1)), head = new_label(f);
    ir_label(f, head);
    int from = ir_bin(f, OP_REM, PT_U32, R(ir_bin(f, OP_ADD, PT_U32, R(p->slice), R(j))), R(p->S));
    int at = ir_bin(f, OP_ADD, PT_U64, R(p->parts),
                    R(ir_bin(f, OP_MULWIDE, PT_U32, R(ir_bin(f, OP_ADD, PT_U32, R(base), R(from))), IMM(p->bytes))));
    /* through shared memory where all of it fits at once: a thread reads back only the pieces
       it copied, after its own wait, and the adds that use one slice's pieces come before the
       next slice's copies over them (no barrier: the other warps are elsewhere) */
    if (p->chunk > 0 && p->chunk >= p->groups) {
        staged_groups(c, at, p->buf, 0, p->groups, p->regs, p->types);
        if (p->groups * 4 < p->n) {
            int rest = ir_bin(f, OP_ADD, PT_U64, R(at), IMM((int64_t)p->groups * (f->bar_threads ? f->bar_threads : c->threads) * 16));
            each_group(c, rest, p->regs + p->groups * 4, p->types + p->groups * 4, p->n - p->groups * 4, true);
        }
    } else {
        each_group(c, at, p->regs, p->types, p->n, true);
    }
    ir_bin_to(f, OP_ADD, PT_U32, j, R(j), IMM(1));
    divergent_bra(f, head, ir_setp(f, CMP_LT, PT_U32, R(j), R(p->S)), false);
}

void split_fixup(Lower *c, const Stmt *s)
{
    if (s != c->split_loop || c->failed || c->too_big)
        return;
    enum { MOST = 1024 };
    Func *f = c->f;
    int regs[MOST];
    PType types[MOST];
    int n = slots_total(c);
    if (n > MOST)
        die("split: %d accumulator slots a thread", n);
    f->cur_line = s->loc.line;
    f->cur_what = "split partial sums";
    n = acc_regs(c, regs, types, MOST);
    int T = f->bar_threads ? f->bar_threads : c->threads;
    int64_t bytes = (int64_t)(n / 4) * T * 16 + (int64_t)(n % 4) * T * 4;
    c->meta->split_dim = c->split_dim;
    c->meta->split_bytes = bytes;
    static const char *const ct[3] = { "%ctaid.x", "%ctaid.y", "%ctaid.z" };
    /* The sum goes through shared memory where the block has it free (the loop's buffers are
       released), in chunks that raise no peak: the groups of four of one type; the rest by loads.
       Taken before the test of S, so that both ways leave the allocator as the code is: a reuse
       of the loop's memory (its barrier and proxy fence) made on one path only would be missing
       on the other's epilogue. */
    int groups = 0;
    while (groups * 4 + 4 <= n && types[groups * 4] == types[groups * 4 + 3] &&
           types[groups * 4] == types[groups * 4 + 1] && types[groups * 4] == types[groups * 4 + 2])
        groups++;
    int mark = c->smem_top, at0 = (mark + 127) & ~127;
    /* the cluster's hand-over through shared memory where the slots fit in what the block has
       (the launcher keeps to the slices they fit: meta split_max); else the workspace's */
    int warps = T / 32, recv = -1;
    int64_t frag = (int64_t)32 * (groups * 16 + (n - groups * 4) * 4), need = 0;
    int smax = c->split_cluster && T % 32 == 0 ? dsmem_slices(warps, frag, c->smem_peak - at0, &need) : 0;
    if (smax) {
        recv = smem_alloc(c, (int)need);
        if (c->smem_over)
            smax = 0, recv = -1;
    }
    int chunk = recv >= 0 ? 0 : (int)((c->smem_peak - at0) / ((int64_t)T * 16));
    chunk = chunk < groups ? chunk : groups;
    int buf = chunk > 0 ? smem_alloc(c, chunk * T * 16) : 0;
    if (c->smem_over)
        chunk = 0;
    int S = split_slices(c);
    /* the cluster's form: warp w's rows are block w % S's (every warp's where S = 1) */
    int own = -1;
    if (c->split_cluster) {
        int warp = ir_bin(f, OP_SHR, PT_U32, R(c->tid), IMM(5));
        own = ir_setp(f, CMP_EQ, PT_U32, R(ir_bin(f, OP_REM, PT_U32, R(warp), R(S))), R(c->ctaid[c->split_dim]));
    }
    int whole = ir_setp(f, CMP_LE, PT_U32, R(S), IMM(1));
    int done = new_label(f);
    ir_bra(f, done, whole, false);
    /* the tile: the block's place in the grid the kernel names (the raw indices: a reordered
       grid's mapping is the same in every slice, but the raw ones need no care) */
    int tile = ir_movsym(f, PT_U32, ct[0]);
    if (c->split_dim == 2)
        tile = ir_tern(f, OP_MAD, PT_U32, R(ir_movsym(f, PT_U32, ct[1])), R(ir_movsym(f, PT_U32, "%nctaid.x")), R(tile));
    int slice = c->ctaid[c->split_dim];
    /* the partial sums' workspace and the tiles' pair words: apart, so that no launch's sums
       land where a later launch with more tiles keeps its words */
    int parts = param_ptr(c, "ws");
    if (c->split_cluster) {
        cluster_sum(c, &(SumPlan){ own, tile, slice, S, parts, bytes, buf, chunk, groups, regs, types, n, recv, warps, frag },
                    done);
        ir_label(f, done);
        if (chunk > 0 || recv >= 0)
            smem_release(c, mark, false);
        c->meta->split_cluster = true;
        c->meta->split_max = smax ? smax : 8;
        c->split_own = own;
        c->split_regs = arena_alloc(c->a, sizeof *c->split_regs * (size_t)(n + 1));
        memcpy(c->split_regs, regs, sizeof *regs * (size_t)n);
        c->split_nregs = n;
        c->split_tail = f->code.n;
        f->cur_what = "temporary";
        return;
    }
    int cnt = param_ptr(c, "cnt");
    Ins *in;
    /* A binary tree over the slices, level by level: at level l the block holding node `node`
       (slices [node << l, (node + 1) << l)) pairs with its sibling node ^ 1 where that exists.
       Thread 0 counts in on the pair's counter; the first of the two writes its sums to its
       node's slot (the slot of its first slice), releases them (barrier, fence, the pair's
       flag) and leaves; the second waits for the flag (the first has arrived and only writes:
       it always gets there), adds the first's sums to its own -- a + b, exact in either order,
       so the result does not depend on which came first -- resets the pair's words for the
       next launch and goes up a level. A node without a sibling goes up as it is. The block
       that reaches the root has the whole sum; each block reads at most one slice's sums a
       level, so the reading is spread over the slices' multiprocessors instead of one reading
       all S (10 us of a 52 us product at 128 rows on an H200, docs/performance.md).
       Counters: per tile, 4 levels (RT_SPLIT_MAX = 16) x 16 pair places x 2 words. */
    int first = ir_bin(f, OP_MUL, PT_U32, R(tile), R(S));   /* the tile's slice 0 */
    int cnt_tile = ir_bin(f, OP_ADD, PT_U64, R(cnt), R(ir_bin(f, OP_MULWIDE, PT_U32, R(tile), IMM(CNT_TILE))));
    int t0 = ir_setp(f, CMP_EQ, PT_U32, R(c->tid), IMM(0));
    int node = ir_mov(f, PT_U32, R(slice)), lvl = ir_mov(f, PT_U32, IMM(0));
    int head = new_label(f), up = new_label(f);
    ir_label(f, head);
    /* the sibling's first slice: none past the last */
    int sib = ir_bin(f, OP_BXOR, PT_B32, R(node), IMM(1));
    int sib_first = ir_bin(f, OP_SHL, PT_B32, R(sib), R(lvl));
    int alone = ir_setp(f, CMP_GE, PT_U32, R(sib_first), R(S));
    ir_bra(f, up, alone, false);
    /* the pair's words: level lvl, place (node >> 1) << (lvl + 1) */
    int place = ir_bin(f, OP_SHL, PT_B32, R(ir_bin(f, OP_SHR, PT_U32, R(node), IMM(1))),
                       R(ir_bin(f, OP_ADD, PT_U32, R(lvl), IMM(1))));
    int word = ir_tern(f, OP_MAD, PT_U32, R(lvl), IMM(16), R(place));
    int pair = ir_bin(f, OP_ADD, PT_U64, R(cnt_tile), R(ir_bin(f, OP_MULWIDE, PT_U32, R(word), IMM(8))));
    int old = ir_mov(f, PT_U32, IMM(0));
    atom_add(f, pair, 0, 1, old, t0);
    int second = ir_setp(f, CMP_EQ, PT_U32, R(old), IMM(1));
    int go = new_reg(f, RC_P);
    in = emit_ins(f, OP_BARRED, PT_PRED);
    in->dst[0] = go;
    in->ndst = 1;
    in->src[0] = R(second);
    in->nsrc = 1;
    in->count = (uint16_t)f->bar_threads;
    int wait = new_label(f);
    ir_bra(f, wait, go, false);
    /* the first: its sums out, released, then it leaves */
    int my = ir_bin(f, OP_ADD, PT_U64, R(parts),
                    R(ir_bin(f, OP_MULWIDE, PT_U32, R(ir_bin(f, OP_ADD, PT_U32, R(first),
                                                                R(ir_bin(f, OP_SHL, PT_B32, R(node), R(lvl))))),
                             IMM(bytes))));
    each_group(c, my, regs, types, n, false);
    ir_bar(f);
    fence_gpu(f, t0);
    int ignored = ir_mov(f, PT_U32, IMM(0));
    atom_add(f, pair, 4, 1, ignored, t0);
    ir_bra(f, c->split_exit, -1, false);
    /* the second: thread 0 waits for the flag, acquires, resets the pair's words */
    ir_label(f, wait);
    int spun = new_label(f), spin = new_label(f);
    ir_bra(f, spun, t0, true);
    f->code.v[f->code.n - 1].divergent = true;
    ir_label(f, spin);
    int flag = ir_mov(f, PT_U32, IMM(0));
    atom_add(f, pair, 4, 0, flag, -1);
    int unset = ir_setp(f, CMP_EQ, PT_U32, R(flag), IMM(0));
    ir_bra(f, spin, unset, false);
    f->code.v[f->code.n - 1].divergent = true;
    fence_gpu(f, -1);
    int zero = ir_mov(f, PT_U32, IMM(0));
    global_access(f, OP_ST, PT_U32, pair, 0, &zero, 1);
    global_access(f, OP_ST, PT_U32, pair, 4, &zero, 1);
    ir_label(f, spun);
    /* the barrier hands thread 0's acquire on, and frees the staging buffer for refilling */
    ir_bar(f);
    int at = ir_bin(f, OP_ADD, PT_U64, R(parts),
                    R(ir_bin(f, OP_MULWIDE, PT_U32, R(ir_bin(f, OP_ADD, PT_U32, R(first), R(sib_first))), IMM(bytes))));
    if (chunk > 0) {
        for (int g0 = 0; g0 < groups; g0 += chunk) {
            /* a barrier before the buffer is filled again: every thread's reads of it are done */
            if (g0 > 0)
                ir_bar(f);
            staged_groups(c, at, buf, g0, g0 + chunk <= groups ? chunk : groups - g0, regs, types);
        }
        if (groups * 4 < n) {   /* the words after the groups (each_group's layout) */
            int rest = ir_bin(f, OP_ADD, PT_U64, R(at), IMM((int64_t)groups * T * 16));
            each_group(c, rest, regs + groups * 4, types + groups * 4, n - groups * 4, true);
        }
    } else {
        each_group(c, at, regs, types, n, true);
    }
    /* up a level, while a level's pairs span fewer than the S slices */
    ir_label(f, up);
    ir_bin_to(f, OP_SHR, PT_U32, node, R(node), IMM(1));
    ir_bin_to(f, OP_ADD, PT_U32, lvl, R(lvl), IMM(1));
    int more = ir_setp(f, CMP_LT, PT_U32, R(ir_bin(f, OP_SHL, PT_B32, IMM(1), R(lvl))), R(S));
    if (chunk > 0)   /* the next level's copies overwrite what this one's reads read */
        ir_bar(f);
    ir_bra(f, head, more, false);
    ir_label(f, done);
    /* released unquiet: whatever is placed over it next waits for a barrier first */
    if (chunk > 0)
        smem_release(c, mark, false);
    f->cur_what = "temporary";
}

/* ---- the rest of the kernel after the cluster's sum */

bool split_in_tail(const Lower *c)
{
    return c->split_loop && c->split_cluster && c->split_tail > 0;
}

/* p (-1: none) and the launch unsplit: what a version that only an unsplit launch may take
 * tests (lower_tma_store.c: a staged store writes the whole tile, which no block of a split
 * launch holds). */
int split_unsplit_test(Lower *c, int p)
{
    Func *f = c->f;
    int q = ir_setp(f, CMP_LE, PT_U32, R(split_slices(c)), IMM(1));
    return p < 0 ? q : ir_bin(f, OP_BAND, PT_PRED, R(p), R(q));
}

void split_unsplit_range(Lower *c, int from, int to)
{
    if (c->split_nunsplit == (int)(sizeof c->split_unsplit / sizeof *c->split_unsplit)) {
        c->f->split_retry = true;    /* more than the list holds: the tree's form */
        return;
    }
    c->split_unsplit[c->split_nunsplit][0] = from;
    c->split_unsplit[c->split_nunsplit++][1] = to;
}

static bool unsplit_only(const Lower *c, int i)
{
    for (int r = 0; r < c->split_nunsplit; r++)
        if (i >= c->split_unsplit[r][0] && i < c->split_unsplit[r][1])
            return true;
    return false;
}

static bool is_barrier(int op)
{
    return op == OP_BAR || op == OP_BARRED || op == OP_CLUSTERSYNC || op == OP_MBWAIT;
}

/* Does the rest of the kernel, where a split launch may run it, move a value made from the
 * sums from one thread to another (through shared memory, or through global memory it wrote and
 * reads after a barrier)? A warp that does not own its rows holds only its own slice's sums and
 * stores nothing, so such a value might be wrong or never written. Values made from the sums
 * are followed from the accumulators' registers; what the kernel loads (a bias through shared
 * memory) is the same in every warp. Shuffles stay within a warp, which owns its rows or not as
 * a whole. */
static bool tail_moves_values(const Lower *c)
{
    const Func *f = c->f;
    bool *made = calloc((size_t)f->regs.n + 1, sizeof *made);
    if (!made)
        die("out of memory");
    for (int r = 0; r < c->split_nregs; r++)
        made[c->split_regs[r]] = true;
    /* forward to a fixed point (a loop in the rest carries values around) */
    for (bool more = true; more;) {
        more = false;
        for (int i = c->split_tail; i < f->code.n; i++) {
            const Ins *in = &f->code.v[i];
            int use[24], nu = ir_uses(in, use);
            bool from = false;
            for (int u = 0; u < nu && !from; u++)
                from = made[use[u]];
            for (int d = 0; from && d < in->ndst; d++)
                if (in->dst[d] >= 0 && !made[in->dst[d]])
                    made[in->dst[d]] = more = true;
        }
    }
    bool stored = false, synced = false, moves = false;
    for (int i = c->split_tail; i < f->code.n && !moves; i++) {
        const Ins *in = &f->code.v[i];
        if (unsplit_only(c, i))
            continue;
        bool mem = in->op == OP_ST || in->op == OP_ATOM || in->op == OP_RED;
        if ((mem && in->space == SP_SHARED) || in->op == OP_STCLUSTER) {
            int use[24], nu = ir_uses(in, use);
            for (int u = 0; u < nu; u++)
                moves |= made[use[u]];
        }
        moves |= in->op == OP_TMASTORE;
        if (mem && in->space == SP_GLOBAL)
            stored = true;
        if (stored && is_barrier(in->op))
            synced = true;
        moves |= synced && in->op == OP_LD && in->space == SP_GLOBAL;
    }
    free(made);
    return moves;
}

/* Every global store, atomic and reduction of the rest of the kernel made under the warp's
 * ownership of its rows (and its own guard): the rest is emitted again in place, with an `and`
 * of the two predicates before each store that has a guard of its own. */
static void guard_tail(Lower *c)
{
    Func *f = c->f;
    int from = c->split_tail, n = f->code.n - from;
    Ins *tail = malloc(sizeof *tail * (size_t)(n + 1));
    int *moved_to = malloc(sizeof *moved_to * (size_t)(n + 2));
    if (!tail || !moved_to)
        die("out of memory");
    memcpy(tail, f->code.v + from, sizeof *tail * (size_t)n);
    f->code.n = from;
    int saved_line = f->cur_line;
    for (int i = 0; i < n; i++) {
        Ins in = tail[i];
        bool mem = in.op == OP_ST || in.op == OP_ATOM || in.op == OP_RED;
        if (mem && in.space == SP_GLOBAL && !unsplit_only(c, from + i)) {
            f->cur_line = in.line;
            in.guard = in.guard < 0 ? c->split_own : ir_bin(f, OP_BAND, PT_PRED, R(in.guard), R(c->split_own));
        }
        moved_to[i] = f->code.n;
        vec_push(&f->code, in);
    }
    moved_to[n] = f->code.n;
    /* race_check.c tells buffers apart by the instruction count at their allocation */
    for (int b = 0; b < f->smem_bufs.n; b++) {
        int at = f->smem_bufs.v[b].at;
        if (at >= from)
            f->smem_bufs.v[b].at = moved_to[at - from <= n ? at - from : n];
    }
    f->cur_line = saved_line;
    free(moved_to);
    free(tail);
}

/* Where the blocks that were not last leave: just before the kernel's return. After the
 * cluster's sum, the rest of the kernel's stores guarded, or, where it moves values between
 * threads, the kernel compiled again with the tree (compile.c). */
void split_exit(Lower *c)
{
    if (c->split_loop && c->split_exit >= 0)
        ir_label(c->f, c->split_exit);
    if (!split_in_tail(c) || c->failed)
        return;
    if (tail_moves_values(c))
        c->f->split_retry = true;
    else
        guard_tail(c);
}
