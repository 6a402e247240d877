/* lower_reduce.c: sum/max/min over a whole tile or along one axis.
 * Whole tile: per-thread tree, warp butterfly shuffles, one word per warp through shared memory,
 * then every warp finishes the cross-warp reduction itself (each thread reading the few words,
 * or with many warps each lane one word and a butterfly), so the result is uniform.
 * Along an axis: when the reduced thread dimension lies inside a warp, shuffles alone (the result
 * stays in registers, broadcast along that dimension, ready for `x - max(x, axis=1)`); otherwise
 * through shared memory. */
#include <math.h>
#include <stdlib.h>
#include "lower.h"

static int red_op(Builtin b) { return b == B_SUM ? OP_ADD : b == B_MAX ? OP_MAX : OP_MIN; }

static Opnd identity(Builtin b, PType t)
{
    if (b == B_SUM)
        return t == PT_F32 ? FIMM(0) : IMM(0);
    if (t == PT_F32)
        return FIMM(b == B_MAX ? -INFINITY : INFINITY);
    if (t == PT_U32)
        return IMM(b == B_MAX ? 0 : 0xffffffffLL);
    if (t == PT_S64)
        return IMM(b == B_MAX ? INT64_MIN : INT64_MAX);
    return IMM(b == B_MAX ? INT32_MIN : INT32_MAX);
}

static Opnd combine(Lower *c, Builtin b, PType t, Opnd x, Opnd y)
{
    if (x.kind != O_REG) {
        Opnd s = x;
        x = y;
        y = s;
    }
    if (x.kind != O_REG)
        x = R(opnd_reg(c, x, t));
    return R(ir_bin(c->f, red_op(b), t, x, y));
}

/* Pairwise, so the dependency chain is log2(n) long. */
Opnd reduce_slots(Lower *c, Builtin b, PType t, Opnd *v, int n)
{
    if (n == 1)
        return v[0];
    int h = n / 2;
    return combine(c, b, t, reduce_slots(c, b, t, v, h), reduce_slots(c, b, t, v + h, n - h));
}

static Opnd shuffle_xor(Lower *c, Builtin b, PType t, Opnd x, int lanes_from, int lanes_to)
{
    Func *f = c->f;
    int xr = opnd_reg(c, x, t);
    for (int m = lanes_from; m >= lanes_to; m /= 2) {
        int d = new_reg(f, ptype_class(t));
        Ins *in = emit_ins(f, OP_SHFL, PT_B32);
        in->dst[0] = d;
        in->ndst = 1;
        in->src[0] = R(xr);
        in->src[1] = IMM(m);
        in->nsrc = 2;
        xr = ir_bin(f, red_op(b), t, R(xr), R(d));
    }
    return R(xr);
}

Opnd reduce_identity(Builtin b, PType t) { return identity(b, t); }

Opnd reduce_in_thread(Lower *c, Tile v, Builtin b)
{
    PType t = held_ptype(v.type);
    Opnd acc = reduce_slots(c, b, t, v.v, layout_slots(&v.L));
    if (v.L.rank == 0)
        return acc;
    int prim = primary_pred(c, &v.L);
    if (prim >= 0)
        acc = R(ir_tern(c->f, OP_SELP, t, acc, identity(b, t), R(prim)));
    return acc;
}

Opnd reduce_across(Lower *c, Opnd acc, Builtin b, PType t)
{
    Func *f = c->f;
    /* threads that hold distinct data span the whole block: reduce over every lane */
    acc = shuffle_xor(c, b, t, acc, 16, 1);
    int nwarps = c->threads / 32;
    if (nwarps == 1)
        return acc;
    scratch_begin_write(c, nwarps * 4);
    int base = scratch_base_reg(c);
    int lane = ir_bin(f, OP_BAND, PT_B32, R(c->tid), IMM(31));
    int warp = ir_bin(f, OP_SHR, PT_U32, R(c->tid), IMM(5));
    int lane0 = ir_setp(f, CMP_EQ, PT_U32, R(lane), IMM(0));
    int addr = ir_tern(f, OP_MAD, PT_U32, R(warp), IMM(4), R(base));
    int accr = opnd_reg(c, acc, t);
    Ins *in = emit_ins(f, OP_ST, t == PT_F32 ? PT_F32 : PT_B32);
    in->space = SP_SHARED;
    in->src[0] = R(addr);
    in->src[1] = R(accr);
    in->nsrc = 2;
    in->guard = lane0;
    scratch_end_write(c);
    if (nwarps > 4 && t != PT_S64) {
        /* Many warps: lane i of every warp reads warp i's word and the warp's butterfly
         * finishes: one load and log2(warps) shuffles a thread, and two live values, where
         * reading every word would take warps / 4 vector loads, warps - 1 operations and warps
         * registers at once (32 at 1024 threads, enough to cost a softmax half its occupancy).
         * Warps are a power of two (threads are); with fewer than 32, lanes read word (lane mod
         * warps), so each aligned group of that many lanes holds every word and the butterfly
         * over it leaves the total in every lane. */
        int slot = nwarps == 32 ? lane : ir_bin(f, OP_BAND, PT_B32, R(lane), IMM(nwarps - 1));
        int raddr = ir_tern(f, OP_MAD, PT_U32, R(slot), IMM(4), R(base));
        int part = new_reg(f, ptype_class(t));
        in = emit_ins(f, OP_LD, t == PT_F32 ? PT_F32 : PT_B32);
        in->space = SP_SHARED;
        in->dst[0] = part;
        in->ndst = 1;
        in->src[0] = R(raddr);
        in->nsrc = 1;
        return shuffle_xor(c, b, t, R(part), nwarps / 2, 1);
    }
    Opnd *parts = malloc(sizeof(Opnd) * (size_t)nwarps);
    for (int w = 0; w < nwarps; w += 4) {
        int vm = nwarps - w >= 4 ? 4 : nwarps - w;
        while (vm & (vm - 1))
            vm--;
        in = emit_ins(f, OP_LD, t == PT_F32 ? PT_F32 : PT_B32);
        in->space = SP_SHARED;
        in->vec = (uint8_t)vm;
        for (int i = 0; i < vm; i++) {
            int d = new_reg(f, ptype_class(t));
            in = &f->code.v[f->code.n - 1];
            in->dst[i] = d;
            parts[w + i] = R(d);
        }
        in->ndst = vm;
        in->src[0] = R(base);
        in->nsrc = 1;
        in->off = w * 4;
        ir_naive_addr(f);
    }
    Opnd total = reduce_slots(c, b, t, parts, nwarps);
    free(parts);
    return total;
}

static Tile reduce_all(Lower *c, Tile v, Builtin b, ElemType rt)
{
    Tile r = { rt, layout_scalar(c->threads), NULL };
    r.v = arena_alloc(c->a, sizeof *r.v);
    r.v[0] = reduce_in_thread(c, v, b);
    if (v.L.rank > 0)
        r.v[0] = reduce_across(c, r.v[0], b, held_ptype(v.type));
    return r;
}

static int slot_of(const Layout *L, int o0, int i0, int o1, int i1)
{
    return ((o0 * L->V[0] + i0) * L->O[1] + o1) * L->V[1] + i1;
}

/* The reduced thread dimension fits in a warp: shuffle within each group of lanes. */
static bool warp_local(const Layout *L, int nd)
{
    if (L->bcast[nd])
        return true;
    if (!layout_tid_plain(L))
        return false;          /* the coordinate takes warp bits: through shared memory */
    if (nd == 1)
        return L->T[1] <= 32;
    return L->T[0] * L->T[1] <= 32;
}

static Tile reduce_axis_shuffle(Lower *c, Tile v, Builtin b, int nd, ElemType rt)
{
    PType t = held_ptype(v.type);
    Layout L = v.L, R0 = v.L;
    R0.S[nd] = 1;
    R0.O[nd] = 1;
    R0.V[nd] = 1;
    bool was_bcast = L.bcast[nd];
    R0.bcast[nd] = L.T[nd] > 1;
    Tile r = { rt, R0, NULL };
    int n = layout_slots(&R0);
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
    int ko = nd == 1 ? L.O[0] : L.O[1], kv = nd == 1 ? L.V[0] : L.V[1];
    int ro = L.O[nd], rv = L.V[nd];
    Opnd *part = malloc(sizeof(Opnd) * (size_t)(ro * rv));
    for (int o = 0; o < ko; o++)
        for (int i = 0; i < kv; i++) {
            for (int a = 0; a < ro; a++)
                for (int bb = 0; bb < rv; bb++)
                    part[a * rv + bb] = nd == 1 ? v.v[slot_of(&L, o, i, a, bb)] : v.v[slot_of(&L, a, bb, o, i)];
            Opnd acc = reduce_slots(c, b, t, part, ro * rv);
            if (!was_bcast && L.T[nd] > 1) {
                int lo = nd == 1 ? 1 : L.T[1];
                int hi = nd == 1 ? L.T[1] / 2 : L.T[1] * L.T[0] / 2;
                acc = shuffle_xor(c, b, t, acc, hi, lo);
            }
            r.v[nd == 1 ? slot_of(&R0, o, i, 0, 0) : slot_of(&R0, 0, 0, o, i)] = acc;
        }
    free(part);
    return r;
}

/* The reduced thread dimension spans several warps (a row reduced by a whole block, as a GEMV's
 * `sum(w * x, axis=1)` is): each thread first combines its own slots along the axis, the lanes
 * that share the kept coordinate combine by shuffles, and only then does shared memory take one
 * word per (kept element, warp group): the warps' partials, G words each, read back by every
 * thread with vector loads. Writing the whole tile and having one thread walk each result's row
 * (the general path below) moves the tile through shared memory and leaves the walk to a few
 * threads: 32 stores a thread and a 1024-step serial loop for an [8, 1024] row block. */
static int ilog2(int x)
{
    int n = 0;
    while ((1 << n) < x)
        n++;
    return n;
}

static bool hier_ok(const Layout *L, int nd)
{
    return layout_tid_plain(L) && !L->bcast[nd] && !L->bcast[1 - nd] && L->rank == 2 &&
           !L->lo_t0_low;
}

/* The lanes of a warp that lie along axis nd of a plain layout (t = t0 T1 + t1): nd's thread
 * bits below bit 5. The rest of the axis's threads are that many warp groups. */
static int axis_lanes(const Layout *L, int nd)
{
    if (nd == 1)
        return L->T[1] < 32 ? L->T[1] : 32;
    return L->T[1] >= 32 ? 1 : L->T[0] * L->T[1] <= 32 ? L->T[0] : 32 / L->T[1];
}

/* Where a warp group's partial goes in the scratch at base: word (t_kd groups + g) of each block
 * of T_kd groups words (the caller adds the block's offset), g the thread's group along the
 * axis (*g_out). *writer: the one lane a group that writes (and the primary copy of it). */
static int group_word(Lower *c, const Layout *L, int tk, int tn, int lanes, int groups, int base,
                      int *g_out, int *writer)
{
    Func *f = c->f;
    int g = ir_bin(f, OP_SHR, PT_U32, R(tn), IMM(ilog2(lanes)));
    int row = ir_tern(f, OP_MAD, PT_U32, R(tk), IMM(groups), R(g));
    int waddr = ir_tern(f, OP_MAD, PT_U32, R(row), IMM(4), R(base));
    int w = primary_pred(c, L);
    if (lanes > 1) {
        int low = ir_bin(f, OP_BAND, PT_B32, R(tn), IMM(lanes - 1));
        int z = ir_setp(f, CMP_EQ, PT_U32, R(low), IMM(0));
        w = w < 0 ? z : ir_bin(f, OP_BAND, PT_PRED, R(w), R(z));
    }
    if (g_out)
        *g_out = g;
    *writer = w;
    return waddr;
}

static Tile reduce_axis_hier(Lower *c, Tile v, Builtin b, int nd, ElemType rt)
{
    Func *f = c->f;
    PType t = held_ptype(v.type);
    Layout L = v.L, R0 = v.L;
    int kd = 1 - nd;
    R0.S[nd] = 1;
    R0.O[nd] = 1;
    R0.V[nd] = 1;
    R0.bcast[nd] = true;
    Tile r = { rt, R0, NULL };
    int nk = L.O[kd] * L.V[kd];
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)nk);
    int lanes = axis_lanes(&L, nd);
    int groups = L.T[nd] / lanes;
    int ro = L.O[nd], rv = L.V[nd];
    Opnd *part = malloc(sizeof(Opnd) * (size_t)(ro * rv));
    Opnd *acc = malloc(sizeof(Opnd) * (size_t)nk);
    for (int o = 0; o < L.O[kd]; o++)
        for (int i = 0; i < L.V[kd]; i++) {
            for (int a = 0; a < ro; a++)
                for (int bb = 0; bb < rv; bb++)
                    part[a * rv + bb] = nd == 1 ? v.v[slot_of(&L, o, i, a, bb)] : v.v[slot_of(&L, a, bb, o, i)];
            Opnd x = reduce_slots(c, b, t, part, ro * rv);
            if (lanes > 1) {
                int lo = nd == 1 ? 1 : L.T[1];
                x = shuffle_xor(c, b, t, x, lo * lanes / 2, lo);
            }
            acc[o * L.V[kd] + i] = x;
        }
    free(part);
    /* word ((k T_kd + t_kd) groups + g): the kept element's partials side by side */
    int tk = thread_coord(c, &L, kd), tn = thread_coord(c, &L, nd);
    scratch_begin_write(c, nk * L.T[kd] * groups * 4);
    int base = scratch_base_reg(c), writer;
    int waddr = group_word(c, &L, tk, tn, lanes, groups, base, NULL, &writer);
    for (int k = 0; k < nk; k++) {
        int val = opnd_reg(c, acc[k], t);
        Ins *in = emit_ins(f, OP_ST, t == PT_F32 ? PT_F32 : PT_B32);
        in->space = SP_SHARED;
        in->src[0] = R(waddr);
        in->src[1] = R(val);
        in->nsrc = 2;
        in->off = (int64_t)k * L.T[kd] * groups * 4;
        in->guard = writer;
        ir_naive_addr(f);
    }
    scratch_end_write(c);
    int raddr = ir_tern(f, OP_MAD, PT_U32, R(tk), IMM(groups * 4), R(base));
    int vm = groups >= 4 ? 4 : groups;
    Opnd *words = malloc(sizeof(Opnd) * (size_t)groups);
    for (int k = 0; k < nk; k++) {
        for (int w = 0; w < groups; w += vm) {
            Ins *in = emit_ins(f, OP_LD, t == PT_F32 ? PT_F32 : PT_B32);
            in->space = SP_SHARED;
            in->vec = (uint8_t)vm;
            for (int i = 0; i < vm; i++) {
                int d = new_reg(f, ptype_class(t));
                in = &f->code.v[f->code.n - 1];
                in->dst[i] = d;
                words[w + i] = R(d);
            }
            in->ndst = vm;
            in->src[0] = R(raddr);
            in->nsrc = 1;
            in->off = ((int64_t)k * L.T[kd] * groups + w) * 4;
            ir_naive_addr(f);
        }
        int s = nd == 1 ? slot_of(&R0, k / L.V[kd], k % L.V[kd], 0, 0) : slot_of(&R0, 0, 0, k / L.V[kd], k % L.V[kd]);
        r.v[s] = reduce_slots(c, b, t, words, groups);
    }
    free(words);
    free(acc);
    return r;
}

/* General case: the tile goes to shared memory; each result element is reduced by one thread. */
static Tile reduce_axis_smem(Lower *c, Tile v, Builtin b, int nd, ElemType rt)
{
    Func *f = c->f;
    PType t = held_ptype(v.type);
    Layout L = v.L;
    int pitch = L.S[1] + (L.S[1] >= 8 ? 1 : 0);
    /* write: reuse the layout-change machinery by converting to a row-major layout first is
     * wasteful; write directly */
    scratch_begin_write(c, L.S[0] * pitch * 4);
    int base = scratch_base_reg(c);
    int prim = primary_pred(c, &L);
    int t0 = thread_coord(c, &L, 0), t1 = thread_coord(c, &L, 1);
    int r0 = thread_row0(c, &L, t0, PT_U32);
    int c0 = L.bcast[1] ? ir_mov(f, PT_U32, IMM(0)) : ir_bin(f, OP_MUL, PT_U32, R(t1), IMM(L.V[1]));
    int addr = ir_tern(f, OP_MAD, PT_U32, R(ir_tern(f, OP_MAD, PT_U32, R(r0), IMM(pitch), R(c0))), IMM(4), R(base));
    for (int o0 = 0; o0 < L.O[0]; o0++)
        for (int i0 = 0; i0 < L.V[0]; i0++)
            for (int o1 = 0; o1 < L.O[1]; o1++)
                for (int i1 = 0; i1 < L.V[1]; i1++) {
                    int rr = layout_row(&L, o0, i0);
                    int cc = L.bcast[1] ? o1 * L.V[1] + i1 : o1 * L.T[1] * L.V[1] + i1;
                    int val = opnd_reg(c, v.v[slot_of(&L, o0, i0, o1, i1)], t);
                    Ins *in = emit_ins(f, OP_ST, t == PT_F32 ? PT_F32 : PT_B32);
                    in->space = SP_SHARED;
                    in->src[0] = R(addr);
                    in->src[1] = R(val);
                    in->nsrc = 2;
                    in->off = ((int64_t)rr * pitch + cc) * 4;
                    in->guard = prim;
                    ir_naive_addr(f);
                }
    scratch_end_write(c);
    Shape rs;
    rs.rank = L.rank;
    rs.dim[0] = nd == 0 ? 1 : L.S[0];
    rs.dim[1] = nd == 1 ? 1 : L.S[1];
    if (rs.rank == 1)
        rs.dim[0] = 1;
    Layout RL = layout_rowmajor(rs, c->threads, 1);
    Tile r = { rt, RL, NULL };
    int n = layout_slots(&RL);
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
    int rt0 = thread_coord(c, &RL, 0), rt1 = thread_coord(c, &RL, 1);
    int len = L.S[nd];
    int step = nd == 1 ? 4 : pitch * 4;
    int *acc = malloc(sizeof(int) * (size_t)n), *ad = malloc(sizeof(int) * (size_t)n);
    for (int o0 = 0; o0 < RL.O[0]; o0++)
        for (int o1 = 0; o1 < RL.O[1]; o1++) {
            int s = slot_of(&RL, o0, 0, o1, 0);
            int row = ir_tern(f, OP_MAD, PT_U32, R(rt0), IMM(1), IMM(o0 * RL.T[0]));
            int col = ir_tern(f, OP_MAD, PT_U32, R(rt1), IMM(1), IMM(o1 * RL.T[1]));
            ad[s] = ir_tern(f, OP_MAD, PT_U32, R(ir_tern(f, OP_MAD, PT_U32, R(row), IMM(pitch), R(col))), IMM(4), R(base));
            acc[s] = ir_mov(f, t, identity(b, t));
        }
    int idx = ir_mov(f, PT_S32, IMM(0));
    int head = new_label(f);
    ir_label(f, head);
    for (int s = 0; s < n; s++) {
        int d = new_reg(f, ptype_class(t));
        Ins *in = emit_ins(f, OP_LD, t == PT_F32 ? PT_F32 : PT_B32);
        in->space = SP_SHARED;
        in->dst[0] = d;
        in->ndst = 1;
        in->src[0] = R(ad[s]);
        in->nsrc = 1;
        ir_bin_to(f, red_op(b), t, acc[s], R(acc[s]), R(d));
        ir_bin_to(f, OP_ADD, PT_U32, ad[s], R(ad[s]), IMM(step));
    }
    ir_bin_to(f, OP_ADD, PT_S32, idx, R(idx), IMM(1));
    int more = ir_setp(f, CMP_LT, PT_S32, R(idx), IMM(len));
    ir_bra(f, head, more, false);
    for (int s = 0; s < n; s++)
        r.v[s] = R(acc[s]);
    free(acc);
    free(ad);
    return r;
}

/* One butterfly step's partner register. */
static int shfl_reg(Lower *c, int r, int m, RegClass rc)
{
    int d = new_reg(c->f, rc);
    Ins *in = emit_ins(c->f, OP_SHFL, PT_B32);
    in->dst[0] = d;
    in->ndst = 1;
    in->src[0] = R(r);
    in->src[1] = IMM(m);
    in->nsrc = 2;
    return d;
}

/* (val, idx) := (v, i) where v is better (larger for argmax, smaller for argmin) or equal with a
 * smaller index: the first of equal values wins, whatever order the pairs meet in. */
static void arg_take(Lower *c, Builtin b, PType t, int *val, int *idx, Opnd v, Opnd i, bool ordered)
{
    Func *f = c->f;
    int vr = opnd_reg(c, v, t), ir = opnd_reg(c, i, PT_S32);
    int better = ir_setp(f, b == B_ARGMAX ? CMP_GT : CMP_LT, t, R(vr), R(*val));
    if (!ordered) {
        int eq = ir_setp(f, CMP_EQ, t, R(vr), R(*val));
        int lo = ir_setp(f, CMP_LT, PT_S32, R(ir), R(*idx));
        better = ir_bin(f, OP_BOR, PT_PRED, R(better), R(ir_bin(f, OP_BAND, PT_PRED, R(eq), R(lo))));
    }
    *val = ir_tern(f, OP_SELP, t, R(vr), R(*val), R(better));
    *idx = ir_tern(f, OP_SELP, PT_S32, R(ir), R(*idx), R(better));
}

/* argmax / argmin along axis nd: each thread walks its own slots in index order, the lanes along
 * the axis exchange (value, index) pairs by shuffles, and warp groups meet through shared memory
 * (two words a pair), as reduce_axis_hier does for sums. The result: i32 positions in
 * [0, S[nd]), broadcast along the axis. */
static Tile reduce_arg(Lower *c, Tile v, Builtin b, int nd)
{
    Func *f = c->f;
    if (!layout_tid_plain(&v.L) || v.L.lo_t0_low || v.L.bcast[1 - nd] || (nd == 0 && layout_wg(&v.L))) {
        Shape s = { 2, { v.L.S[0], v.L.S[1] } };
        Layout plain = layout_rowmajor(s, c->threads, 1);
        plain.rank = v.L.rank;
        v = to_layout(c, v, &plain);
    }
    PType t = held_ptype(v.type);
    RegClass rc = ptype_class(t);
    Layout L = v.L, R0 = v.L;
    int kd = 1 - nd;
    R0.S[nd] = R0.O[nd] = R0.V[nd] = 1;
    R0.bcast[nd] = L.T[nd] > 1 || L.bcast[nd];
    Tile r = { TY_I32, R0, NULL };
    int nk = L.O[kd] * L.V[kd];
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)nk);
    bool spread = !L.bcast[nd] && L.T[nd] > 1;
    int lanes = spread ? axis_lanes(&L, nd) : 1;
    int groups = spread ? L.T[nd] / lanes : 1;
    int tn = spread ? thread_coord(c, &L, nd) : -1;
    int tbase = spread ? ir_bin(f, OP_MUL, PT_S32, R(tn), IMM(L.V[nd])) : -1;
    int *val = malloc(sizeof(int) * (size_t)nk), *idx = malloc(sizeof(int) * (size_t)nk);
    for (int o = 0; o < L.O[kd]; o++)
        for (int i = 0; i < L.V[kd]; i++) {
            int k = o * L.V[kd] + i;
            val[k] = idx[k] = -1;
            for (int a = 0; a < L.O[nd]; a++)
                for (int bb = 0; bb < L.V[nd]; bb++) {
                    Opnd x = nd == 1 ? v.v[slot_of(&L, o, i, a, bb)] : v.v[slot_of(&L, a, bb, o, i)];
                    int rel = spread ? a * L.T[nd] * L.V[nd] + bb : a * L.V[nd] + bb;
                    Opnd ix = spread ? (rel ? R(ir_bin(f, OP_ADD, PT_S32, R(tbase), IMM(rel))) : R(tbase)) : IMM(rel);
                    if (val[k] < 0) {
                        val[k] = opnd_reg(c, x, t);
                        idx[k] = opnd_reg(c, ix, PT_S32);
                    } else {
                        arg_take(c, b, t, &val[k], &idx[k], x, ix, true);
                    }
                }
            if (lanes > 1) {
                int lo = nd == 1 ? 1 : L.T[1];
                for (int m = lo * lanes / 2; m >= lo; m /= 2) {
                    int ov = shfl_reg(c, val[k], m, rc), oi = shfl_reg(c, idx[k], m, RC_R);
                    arg_take(c, b, t, &val[k], &idx[k], R(ov), R(oi), false);
                }
            }
        }
    if (groups > 1) {
        /* words: values, then indices; pair ((k T_kd + t_kd) groups + g) */
        int tk = thread_coord(c, &L, kd);
        int words = nk * L.T[kd] * groups;
        scratch_begin_write(c, words * 8);
        int base = scratch_base_reg(c), writer;
        int waddr = group_word(c, &L, tk, tn, lanes, groups, base, NULL, &writer);
        for (int k = 0; k < nk; k++)
            for (int h = 0; h < 2; h++) {
                Ins *in = emit_ins(f, OP_ST, h ? PT_B32 : (t == PT_F32 ? PT_F32 : PT_B32));
                in->space = SP_SHARED;
                in->src[0] = R(waddr);
                in->src[1] = R(h ? idx[k] : val[k]);
                in->nsrc = 2;
                in->off = ((int64_t)h * words + (int64_t)k * L.T[kd] * groups) * 4;
                in->guard = writer;
                ir_naive_addr(f);
            }
        scratch_end_write(c);
        int raddr = ir_tern(f, OP_MAD, PT_U32, R(tk), IMM(groups * 4), R(base));
        for (int k = 0; k < nk; k++) {
            int bv = -1, bi = -1;
            for (int w = 0; w < groups; w++) {
                int d[2];
                for (int h = 0; h < 2; h++) {
                    d[h] = new_reg(f, h ? RC_R : rc);
                    Ins *in = emit_ins(f, OP_LD, h ? PT_B32 : (t == PT_F32 ? PT_F32 : PT_B32));
                    in->space = SP_SHARED;
                    in->dst[0] = d[h];
                    in->ndst = 1;
                    in->src[0] = R(raddr);
                    in->nsrc = 1;
                    in->off = ((int64_t)h * words + (int64_t)k * L.T[kd] * groups + w) * 4;
                    ir_naive_addr(f);
                }
                /* a group's elements interleave with the next one's when a thread holds several
                   runs along the axis: compare indices too */
                if (bv < 0) {
                    bv = d[0];
                    bi = d[1];
                } else {
                    arg_take(c, b, t, &bv, &bi, R(d[0]), R(d[1]), false);
                }
            }
            val[k] = bv;
            idx[k] = bi;
        }
    }
    for (int k = 0; k < nk; k++) {
        int s = nd == 1 ? slot_of(&R0, k / L.V[kd], k % L.V[kd], 0, 0) : slot_of(&R0, 0, 0, k / L.V[kd], k % L.V[kd]);
        r.v[s] = R(idx[k]);
    }
    free(val);
    free(idx);
    return r;
}

/* cumsum along axis nd, inclusive: each thread's runs along the axis (V[nd] slots each) are
 * summed in order; a run's total then gets the totals of the threads before it along the axis --
 * inside a warp by butterflies that keep a block's total and the lane's prefix (lanes whose bit m
 * is set add their partner block's total), across warp groups through shared memory -- and the
 * totals of the earlier runs. The additions are in an order of their own; the bound is that of
 * a sum in any order. */
static Tile scan_tile(Lower *c, Tile v, int nd)
{
    Func *f = c->f;
    if (!layout_tid_plain(&v.L) || v.L.lo_t0_low || v.L.bcast[0] || v.L.bcast[1] || (nd == 0 && layout_wg(&v.L))) {
        Shape s = { 2, { v.L.S[0], v.L.S[1] } };
        Layout plain = layout_rowmajor(s, c->threads, 1);
        plain.rank = v.L.rank;
        v = to_layout(c, v, &plain);
    }
    PType t = held_ptype(v.type);
    RegClass rc = ptype_class(t);
    Layout L = v.L;
    int kd = 1 - nd;
    Tile r = { v.type == TY_F16 || v.type == TY_BF16 ? TY_F32 : v.type, L, NULL };
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)layout_slots(&L));
    int lanes = axis_lanes(&L, nd);
    int groups = L.T[nd] / lanes;
    int lo = nd == 1 ? 1 : L.T[1];
    int nk = L.O[kd] * L.V[kd], no = L.O[nd];
    int tn = thread_coord(c, &L, nd);
    int lane = lanes > 1 ? ir_bin(f, OP_BAND, PT_B32, R(tn), IMM(lanes - 1)) : -1;
    /* per (k, run): the in-thread prefix registers and the thread's exclusive offset */
    int *pre = malloc(sizeof(int) * (size_t)(nk * no)), *tot = malloc(sizeof(int) * (size_t)(nk * no));
    for (int k = 0; k < nk; k++)
        for (int a = 0; a < no; a++) {
            int o = k / L.V[kd], i = k % L.V[kd];
            int acc = -1;
            for (int bb = 0; bb < L.V[nd]; bb++) {
                int s = nd == 1 ? slot_of(&L, o, i, a, bb) : slot_of(&L, a, bb, o, i);
                int x = opnd_reg(c, v.v[s], t);
                acc = acc < 0 ? ir_mov(f, t, R(x)) : ir_bin(f, OP_ADD, t, R(acc), R(x));
                r.v[s] = R(acc);
            }
            /* the run's total scanned over the lanes: ex = the lanes' before this one (kept
               apart from the lane's own total: subtracting it back would round) */
            int ex = ir_mov(f, t, t == PT_F32 ? FIMM(0) : IMM(0)), blk = acc;
            for (int m = 1; m < lanes; m *= 2) {
                int other = shfl_reg(c, blk, m * lo, rc);
                int bit = ir_bin(f, OP_BAND, PT_B32, R(lane), IMM(m));
                int set = ir_setp(f, CMP_NE, PT_U32, R(bit), IMM(0));
                ex = ir_tern(f, OP_SELP, t, R(ir_bin(f, OP_ADD, t, R(ex), R(other))), R(ex), R(set));
                blk = ir_bin(f, OP_ADD, t, R(blk), R(other));
            }
            pre[k * no + a] = ex;          /* exclusive within the warp group */
            tot[k * no + a] = blk;         /* the warp group's total */
        }
    /* across warp groups and runs: every group's total per (k, run), then each thread adds the
       groups before its own in this run and everything of the earlier runs */
    int tk = thread_coord(c, &L, kd);
    int words = nk * no * L.T[kd] * groups;
    int g = -1, base = -1;
    if (groups > 1) {
        scratch_begin_write(c, words * 4);
        base = scratch_base_reg(c);
        int writer, waddr = group_word(c, &L, tk, tn, lanes, groups, base, &g, &writer);
        for (int q = 0; q < nk * no; q++) {
            Ins *in = emit_ins(f, OP_ST, t == PT_F32 ? PT_F32 : PT_B32);
            in->space = SP_SHARED;
            in->src[0] = R(waddr);
            in->src[1] = R(tot[q]);
            in->nsrc = 2;
            in->off = (int64_t)q * L.T[kd] * groups * 4;
            in->guard = writer;
            ir_naive_addr(f);
        }
        scratch_end_write(c);
    }
    int raddr = groups > 1 ? ir_tern(f, OP_MAD, PT_U32, R(tk), IMM(groups * 4), R(base)) : -1;
    for (int k = 0; k < nk; k++) {
        int carry = -1;
        for (int a = 0; a < no; a++) {
            int q = k * no + a;
            int before = pre[q], all = tot[q];
            if (groups > 1) {
                all = -1;
                for (int w = 0; w < groups; w++) {
                    int d = new_reg(f, rc);
                    Ins *in = emit_ins(f, OP_LD, t == PT_F32 ? PT_F32 : PT_B32);
                    in->space = SP_SHARED;
                    in->dst[0] = d;
                    in->ndst = 1;
                    in->src[0] = R(raddr);
                    in->nsrc = 1;
                    in->off = ((int64_t)q * L.T[kd] * groups + w) * 4;
                    ir_naive_addr(f);
                    /* groups before this thread's own count toward its offset */
                    int earlier = ir_setp(f, CMP_GT, PT_U32, R(g), IMM(w));
                    before = ir_tern(f, OP_SELP, t, R(ir_bin(f, OP_ADD, t, R(before), R(d))), R(before), R(earlier));
                    all = all < 0 ? d : ir_bin(f, OP_ADD, t, R(all), R(d));
                }
            }
            int off = carry < 0 ? before : ir_bin(f, OP_ADD, t, R(before), R(carry));
            carry = carry < 0 ? all : ir_bin(f, OP_ADD, t, R(carry), R(all));
            int o = k / L.V[kd], i = k % L.V[kd];
            for (int bb = 0; bb < L.V[nd]; bb++) {
                int s = nd == 1 ? slot_of(&L, o, i, a, bb) : slot_of(&L, a, bb, o, i);
                r.v[s] = R(ir_bin(f, OP_ADD, t, r.v[s], R(off)));
            }
        }
    }
    free(pre);
    free(tot);
    return r;
}

Tile reduce_tile(Lower *c, Tile v, Builtin b, int axis)
{
    ElemType rt = (b == B_SUM && (v.type == TY_F16 || v.type == TY_BF16)) ? TY_F32 : v.type;
    if (axis < 0)
        return reduce_all(c, v, b, rt);
    int nd = v.L.rank == 1 ? 1 : axis;
    if (b == B_ARGMAX || b == B_ARGMIN)
        return reduce_arg(c, v, b, nd);
    if (b == B_CUMSUM)
        return scan_tile(c, v, nd);
    if (warp_local(&v.L, nd))
        return reduce_axis_shuffle(c, v, b, nd, rt);
    if (hier_ok(&v.L, nd))
        return reduce_axis_hier(c, v, b, nd, rt);
    return reduce_axis_smem(c, v, b, nd, rt);
}
