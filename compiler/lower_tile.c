/* lower_tile.c: tiles during lowering: their registers, thread coordinates, the primary copy of
 * each element, layout changes (through the scratch area when data moves), broadcast views, and
 * a symbol's lowering state. */
#include "lower.h"

/* ---- value helpers */

PType held_ptype(ElemType t)
{
    switch (t) {
    case TY_BOOL: return PT_PRED;
    case TY_I32: case TY_I8: return PT_S32;     /* i8, u8 held widened to 32 bits */
    case TY_U32: case TY_U8: return PT_U32;
    case TY_I64: return PT_S64;
    default: return PT_F32;     /* f16, bf16, tf32, f8e4m3, f8e5m2 are held widened to f32 */
    }
}

RegClass held_class(ElemType t) { return ptype_class(held_ptype(t)); }

Tile tile_new(Lower *c, ElemType t, Layout L)
{
    Tile v = { t, L, NULL };
    int n = layout_slots(&L);
    v.v = arena_alloc(c->a, sizeof *v.v * (size_t)n);
    for (int i = 0; i < n; i++)
        v.v[i] = R(new_reg(c->f, held_class(t)));
    return v;
}

Tile tile_splat(Lower *c, ElemType t, Layout L, Opnd x)
{
    Tile v = { t, L, NULL };
    int n = layout_slots(&L);
    v.v = arena_alloc(c->a, sizeof *v.v * (size_t)n);
    for (int i = 0; i < n; i++)
        v.v[i] = x;
    return v;
}

int opnd_reg(Lower *c, Opnd o, PType t)
{
    if (o.kind == O_REG)
        return o.reg;
    if (t == PT_PRED)
        return ir_setp(c->f, CMP_NE, PT_S32, IMM(o.kind == O_IMM ? o.i != 0 : o.f != 0), IMM(0));
    return ir_mov(c->f, t, o);
}

Tile scalar_of(Lower *c, ElemType t, Opnd x) { return tile_splat(c, t, layout_scalar(c->threads), x); }

/* ---- thread coordinates */

static int log2i(int x)
{
    int n = 0;
    while ((1 << n) < x)
        n++;
    return n;
}

/* (t >> sh) & (n - 1) for a power of two n */
static int tid_field(Func *f, int t, int sh, int n)
{
    int s = sh ? ir_bin(f, OP_SHR, PT_U32, R(t), IMM(sh)) : t;
    return ir_bin(f, OP_BAND, PT_B32, R(s), IMM(n - 1));
}

/* t_d from the thread id, per the Layout formula in lower.h: the inner grid's coordinate from the
 * low bits, the outer grid's (when T[d] > Tlo[d]) from the bits above the inner grid. */
int thread_coord(Lower *c, const Layout *L, int d)
{
    Func *f = c->f;
    int t = c->tid;
    if (L->T[d] == 1)
        return ir_mov(f, PT_U32, IMM(0));
    int lo0 = L->Tlo[0], lo1 = L->Tlo[1];
    int inner;
    if (L->lo_t0_low)   /* column-major inner grid: t0's bits lowest */
        inner = d == 0 ? tid_field(f, t, 0, lo0) : lo1 > 1 ? tid_field(f, t, log2i(lo0), lo1) : -1;
    else
        inner = d == 1 ? tid_field(f, t, 0, lo1) : lo0 > 1 ? tid_field(f, t, log2i(lo1), lo0) : -1;
    int outer_n = L->T[d] / L->Tlo[d];
    if (outer_n == 1)
        return inner;
    int sh = log2i(lo0 * lo1) + (d == 0 ? log2i(L->T[1] / lo1) : 0);
    int outer = tid_field(f, t, sh, outer_n);
    if (inner < 0)
        return ir_bin(f, OP_MUL, PT_U32, R(outer), IMM(L->Tlo[d]));
    return ir_tern(f, OP_MAD, PT_U32, R(outer), IMM(L->Tlo[d]), R(inner));
}

int thread_row0(Lower *c, const Layout *L, int t0, PType pt)
{
    Func *f = c->f;
    if (L->bcast[0])
        return ir_mov(f, pt, IMM(0));
    if (layout_wg(L))    /* layout_row_origin: t0 + (t0 & ~7) */
        return ir_bin(f, OP_ADD, pt, R(t0), R(ir_bin(f, OP_BAND, PT_B32, R(t0), IMM(~(int64_t)7))));
    return ir_bin(f, OP_MUL, pt, R(t0), IMM(L->V[0]));
}

/* Threads that hold the authoritative copy of each element: stores, atomics and reductions count
 * only these. */
int primary_pred(Lower *c, const Layout *L)
{
    int p = -1;
    if (L->reps > 1)
        p = ir_setp(c->f, CMP_LO, PT_U32, R(c->tid), IMM(L->T[0] * L->T[1]));
    for (int d = 0; d < 2; d++) {
        if (!L->bcast[d] || L->T[d] == 1)
            continue;
        int q = ir_setp(c->f, CMP_EQ, PT_U32, R(thread_coord(c, L, d)), IMM(0));
        p = p < 0 ? q : ir_bin(c->f, OP_BAND, PT_PRED, R(p), R(q));
    }
    return p;
}

/* A [W, 1] or [1, W] tile as the rank-1 tile of its W elements (a reduction that kept its axis,
 * stored to a rank-1 window; squeeze). [1, W] is already laid out as one; [W, 1] is its
 * transpose, the same slots in the same threads, after a layout change only where the layout
 * cannot be transposed as it is. */
Tile tile_drop_unit_axis(Lower *c, Tile v)
{
    if (v.L.rank != 2)
        return v;
    if (v.L.S[0] == 1) {
        v.L.rank = 1;
        return v;
    }
    Layout T;
    if (!layout_transpose(&v.L, &T)) {
        Shape s = { 2, { v.L.S[0], 1 } };
        Layout plain = layout_rowmajor(s, c->threads, 1);
        v = to_layout(c, v, &plain);
        if (!layout_transpose(&v.L, &T))
            die("tile_drop_unit_axis: a row-major column cannot be transposed");
    }
    v.L = T;
    v.L.rank = 1;
    return v;
}

/* A rank-1 tile of W elements as [1, W] (axis 0: the same layout) or [W, 1] (axis 1: its
 * transpose, each element in the same slot and thread). */
Tile tile_expand(Lower *c, Tile v, int axis)
{
    if (v.L.rank != 1)
        return v;
    v.L.rank = 2;
    if (axis == 0)
        return v;
    Layout T;
    if (!layout_transpose(&v.L, &T)) {
        Shape s = { 1, { v.L.S[1] } };
        Layout plain = layout_rowmajor(s, c->threads, 1);
        plain.rank = 2;
        v = to_layout(c, v, &plain);
        if (!layout_transpose(&v.L, &T))
            die("tile_expand: a row-major row cannot be transposed");
    }
    v.L = T;
    return v;
}

/* ---- layout changes and broadcasting */

int slot_index(const Layout *L, int o0, int i0, int o1, int i1)
{
    return ((o0 * L->V[0] + i0) * L->O[1] + o1) * L->V[1] + i1;
}

/* Element column of slot components, relative to the thread's own origin (rows: layout_row). */
int slot_col(const Layout *L, int o1, int i1) { return L->bcast[1] ? o1 * L->V[1] + i1 : o1 * L->T[1] * L->V[1] + i1; }

/* The column 0, 1, ..., W-1 (`expand_dims(arange(W), 1)`) made directly in L, a [W, 1] layout:
 * each slot holds its own row, so a column of row indices next to a tile in any layout (the
 * tensor cores' accumulator, for a causal mask) needs no layout change. */
Tile tile_row_iota(Lower *c, const Layout *L)
{
    Tile r = { TY_I32, *L, NULL };
    int n = layout_slots(L);
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
    int base = thread_row0(c, L, thread_coord(c, L, 0), PT_S32);
    for (int o0 = 0; o0 < L->O[0]; o0++)
        for (int i0 = 0; i0 < L->V[0]; i0++) {
            int row = layout_row(L, o0, i0);
            Opnd v = row ? R(ir_bin(c->f, OP_ADD, PT_S32, R(base), IMM(row))) : R(base);
            for (int o1 = 0; o1 < L->O[1]; o1++)
                for (int i1 = 0; i1 < L->V[1]; i1++)
                    r.v[slot_index(L, o0, i0, o1, i1)] = v;
        }
    return r;
}

/* A broadcast source [1 or S0, 1 or S1] whose layout lines up with L along the kept dimension
 * needs no data movement: each destination slot reads the matching source slot. */
static bool aligned_broadcast(const Layout *src, const Layout *dst)
{
    if (src->T[0] == 1 && src->T[1] == 1 && src->S[0] == 1 && src->S[1] == 1)
        return true;     /* one element held by every thread */
    for (int d = 0; d < 2; d++) {
        /* the same thread-index split, so kept coordinates are the same function of %tid */
        if (src->T[d] != dst->T[d] || src->Tlo[d] != dst->Tlo[d] || src->lo_t0_low != dst->lo_t0_low)
            return false;
        if (src->S[d] == dst->S[d]) {
            if (src->V[d] != dst->V[d] || src->O[d] != dst->O[d] || src->bcast[d] != dst->bcast[d] ||
                (d == 0 && layout_wg(src) != layout_wg(dst)))
                return false;
        } else if (src->S[d] != 1 || (src->T[d] != 1 && !src->bcast[d])) {
            return false;
        }
    }
    return true;
}

/* A value moved through the scratch area: v's element (r, c) is written at word r * wpitch + c;
 * destination element (r, c) of layout L is read from word (rb ? 0 : r) * rpitch + (cb ? 0 : c)
 * * cstride + roff. One map serves layout changes and broadcasts (the same pitch, rows or
 * columns of one element repeated), slices (roff, the slice's first element), reshapes
 * (unpadded pitches: the element order is the row-major order of both shapes) and transposes
 * (rpitch 1, cstride wpitch). 32-bit words; i64 values take two. */
typedef struct { int wpitch, rpitch, roff; bool rb, cb; int cstride; } SmemMap;

int scratch_store_tile(Lower *c, const Tile *vp, int pitch)
{
    Func *f = c->f;
    Tile v = *vp;
    PType pt = held_ptype(v.type);
    bool wide = pt == PT_S64;
    bool pred = pt == PT_PRED;
    int es = wide ? 8 : 4;
    scratch_begin_write(c, v.L.S[0] * pitch * es);
    int base = scratch_base_reg(c);
    int prim = primary_pred(c, &v.L);
    int t0 = thread_coord(c, &v.L, 0), t1 = thread_coord(c, &v.L, 1);
    /* thread origin (row0 * pitch + col0) * es */
    int row0 = thread_row0(c, &v.L, t0, PT_U32);
    int col0 = v.L.bcast[1] ? ir_mov(f, PT_U32, IMM(0)) : ir_bin(f, OP_MUL, PT_U32, R(t1), IMM(v.L.V[1]));
    int lin = ir_tern(f, OP_MAD, PT_U32, R(row0), IMM(pitch), R(col0));
    int addr = ir_tern(f, OP_MAD, PT_U32, R(lin), IMM(es), R(base));
    for (int o0 = 0; o0 < v.L.O[0]; o0++)
        for (int i0 = 0; i0 < v.L.V[0]; i0++)
            for (int o1 = 0; o1 < v.L.O[1]; o1++)
                for (int i1 = 0; i1 < v.L.V[1]; i1++) {
                    Opnd x = v.v[slot_index(&v.L, o0, i0, o1, i1)];
                    int val;
                    if (pred)
                        val = ir_tern(f, OP_SELP, PT_U32, IMM(1), IMM(0), R(opnd_reg(c, x, PT_PRED)));
                    else
                        val = opnd_reg(c, x, pt);
                    Ins *in = emit_ins(f, OP_ST, wide ? PT_B64 : PT_B32);
                    in->space = SP_SHARED;
                    in->src[0] = R(addr);
                    in->src[1] = R(val);
                    in->nsrc = 2;
                    in->off = (int64_t)(layout_row(&v.L, o0, i0) * pitch + slot_col(&v.L, o1, i1)) * es;
                    in->guard = prim;
                    ir_naive_addr(f);
                }
    return base;
}

static Tile remap_smem(Lower *c, Tile v, const Layout *L, SmemMap m)
{
    Func *f = c->f;
    Tile r = { v.type, *L, NULL };
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)layout_slots(L));
    PType pt = held_ptype(v.type);
    bool wide = pt == PT_S64;
    bool pred = pt == PT_PRED;
    int es = wide ? 8 : 4;
    int base = scratch_store_tile(c, &v, m.wpitch);
    scratch_end_write(c);
    /* read back */
    int dt0 = thread_coord(c, L, 0), dt1 = thread_coord(c, L, 1);
    int drow0 = thread_row0(c, L, dt0, PT_U32);
    int dcol0 = L->bcast[1] ? ir_mov(f, PT_U32, IMM(0)) : ir_bin(f, OP_MUL, PT_U32, R(dt1), IMM(L->V[1]));
    bool rb = m.rb, cb = m.cb;
    int cs = m.cstride;
    if (cs != 1 && !cb)
        dcol0 = ir_bin(f, OP_MUL, PT_U32, R(dcol0), IMM(cs));
    int lin2 = ir_tern(f, OP_MAD, PT_U32, rb ? IMM(0) : R(drow0), IMM(m.rpitch), cb ? IMM(0) : R(dcol0));
    int addr2 = ir_tern(f, OP_MAD, PT_U32, R(lin2), IMM(es), R(base));
    /* A broadcast reads one word into many slots (a column [S, 1] held as [S, N]: every slot of
       a row at one offset): each word is loaded once and its register shared by those slots, so
       a mask built from arange()s costs the registers of its distinct values, not of its shape. */
    int nslots = layout_slots(L), nread = 0;
    int64_t *read_off = arena_alloc(c->a, sizeof *read_off * (size_t)nslots);
    Opnd *read_val = arena_alloc(c->a, sizeof *read_val * (size_t)nslots);
    for (int o0 = 0; o0 < L->O[0]; o0++)
        for (int i0 = 0; i0 < L->V[0]; i0++)
            for (int o1 = 0; o1 < L->O[1]; o1++)
                for (int i1 = 0; i1 < L->V[1]; i1++) {
                    int rr = rb ? 0 : layout_row(L, o0, i0), cc = cb ? 0 : slot_col(L, o1, i1);
                    int64_t off = ((int64_t)rr * m.rpitch + (int64_t)cc * cs + m.roff) * es;
                    int seen = -1;
                    for (int j = 0; j < nread && seen < 0; j++)
                        if (read_off[j] == off)
                            seen = j;
                    if (seen >= 0) {
                        r.v[slot_index(L, o0, i0, o1, i1)] = read_val[seen];
                        continue;
                    }
                    int d = new_reg(f, wide ? RC_D : pt == PT_F32 ? RC_F : RC_R);
                    Ins *in = emit_ins(f, OP_LD, wide ? PT_B64 : pt == PT_F32 ? PT_F32 : PT_B32);
                    in->space = SP_SHARED;
                    in->dst[0] = d;
                    in->ndst = 1;
                    in->src[0] = R(addr2);
                    in->nsrc = 1;
                    in->off = off;
                    ir_naive_addr(f);
                    if (pred)
                        d = ir_setp(f, CMP_NE, PT_U32, R(d), IMM(0));
                    r.v[slot_index(L, o0, i0, o1, i1)] = R(d);
                    read_off[nread] = off;
                    read_val[nread++] = R(d);
                }
    return r;
}

Tile to_layout(Lower *c, Tile v, const Layout *L)
{
    if (layout_eq(&v.L, L))
        return v;
    Tile r = { v.type, *L, NULL };
    int n = layout_slots(L);
    r.v = arena_alloc(c->a, sizeof *r.v * (size_t)n);
    if (v.L.rank == 0) {
        for (int i = 0; i < n; i++)
            r.v[i] = v.v[0];
        return r;
    }
    if (aligned_broadcast(&v.L, L)) {
        for (int o0 = 0; o0 < L->O[0]; o0++)
            for (int i0 = 0; i0 < L->V[0]; i0++)
                for (int o1 = 0; o1 < L->O[1]; o1++)
                    for (int i1 = 0; i1 < L->V[1]; i1++) {
                        int so0 = v.L.S[0] == 1 ? 0 : o0, si0 = v.L.S[0] == 1 ? 0 : i0;
                        int so1 = v.L.S[1] == 1 ? 0 : o1, si1 = v.L.S[1] == 1 ? 0 : i1;
                        r.v[slot_index(L, o0, i0, o1, i1)] = v.v[slot_index(&v.L, so0, si0, so1, si1)];
                    }
        return r;
    }
    /* General case: through shared memory, row pitch padded against bank conflicts;
     * destination element (r, c) comes from (r mod S0src, c mod S1src) */
    int pitch = v.L.S[1] + (v.L.S[1] >= 8 ? 1 : 0);
    SmemMap m = { pitch, pitch, 0, v.L.S[0] == 1, v.L.S[1] == 1, 1 };
    return remap_smem(c, v, L, m);
}

/* v's transpose, (r, c) the element (c, r) of v: written to shared memory as v lies and read back
 * down its columns into want (or a row-major layout). The odd row pitch puts the words a warp
 * reads down a column in distinct banks. */
Tile tile_transpose(Lower *c, Tile v, const Layout *want)
{
    Shape s = { 2, { v.L.S[1], v.L.S[0] } };
    Layout L = want && want->rank == 2 && want->S[0] == s.dim[0] && want->S[1] == s.dim[1]
                   ? *want : layout_rowmajor(s, c->threads, 4);
    int pitch = v.L.S[1] + (v.L.S[1] % 2 ? 0 : 1);
    SmemMap m = { pitch, 1, 0, false, false, pitch };
    return remap_smem(c, v, &L, m);
}

/* ---- slices and reshapes */

/* The sub-tile of v (2-D terms: a rank-1 tile is one row) from (a0, a1), w0 x w1 elements. Where
 * the slice is whole blocks of the layout along each dimension (a start and width that are
 * multiples of T * V, or of V along a broadcast dimension), it is the same registers in the same
 * threads; otherwise it goes through shared memory into `want` (or a row-major layout). The
 * result has v's rank; the caller drops axes. */
Tile tile_slice(Lower *c, Tile v, const int a[2], const int w[2], const Layout *want)
{
    const Layout *L = &v.L;
    int first[2];
    bool regs = true;
    int blk[2], per[2];    /* rows or columns of a block of slots, and its o slots */
    for (int d = 0; d < 2; d++) {
        bool wg = d == 0 && layout_wg(L);     /* warpgroup order: blocks of 2 T0 rows, two o each */
        blk[d] = wg ? 2 * L->T[0] : L->bcast[d] ? L->V[d] : L->T[d] * L->V[d];
        per[d] = wg ? 2 : 1;
        if (a[d] == 0 && w[d] == L->S[d])
            first[d] = 0;
        else if (a[d] % blk[d] == 0 && w[d] % blk[d] == 0)
            first[d] = a[d] / blk[d] * per[d];
        else
            regs = false;
    }
    Shape s = { v.L.rank, { 0, 0 } };
    if (s.rank == 2) {
        s.dim[0] = w[0];
        s.dim[1] = w[1];
    } else {
        s.dim[0] = w[1];
    }
    if (regs) {
        Layout N = *L;
        for (int d = 0; d < 2; d++)
            if (!(a[d] == 0 && w[d] == L->S[d])) {
                N.S[d] = w[d];
                N.O[d] = w[d] / blk[d] * per[d];
            }
        Tile r = { v.type, N, NULL };
        r.v = arena_alloc(c->a, sizeof *r.v * (size_t)layout_slots(&N));
        for (int o0 = 0; o0 < N.O[0]; o0++)
            for (int i0 = 0; i0 < N.V[0]; i0++)
                for (int o1 = 0; o1 < N.O[1]; o1++)
                    for (int i1 = 0; i1 < N.V[1]; i1++)
                        r.v[slot_index(&N, o0, i0, o1, i1)] =
                            v.v[slot_index(L, o0 + first[0], i0, o1 + first[1], i1)];
        return r;
    }
    Layout D = want && want->rank == s.rank && want->S[0] == (s.rank == 2 ? w[0] : 1) &&
               want->S[1] == w[1] ? *want : layout_rowmajor(s, c->threads, 1);
    int pitch = L->S[1] + (L->S[1] >= 8 ? 1 : 0);
    SmemMap m = { pitch, pitch, a[0] * pitch + a[1], false, false, 1 };
    return remap_smem(c, v, &D, m);
}

/* v's elements in row-major order as a tile of shape s: through shared memory with unpadded
 * pitches, except where it is a unit axis added or removed (the same registers). */
Tile tile_reshape(Lower *c, Tile v, Shape s, const Layout *want)
{
    int S0 = s.rank == 2 ? (int)s.dim[0] : 1, S1 = s.rank ? (int)s.dim[s.rank - 1] : 1;
    if (S0 == v.L.S[0] && S1 == v.L.S[1]) {
        if (v.L.rank == 2 && s.rank == 1)
            return tile_drop_unit_axis(c, v);
        if (v.L.rank == 1 && s.rank == 2)
            return tile_expand(c, v, 0);
        return v;
    }
    if (v.L.rank == 2 && v.L.S[1] == 1 && s.rank == 1)   /* a column as a row */
        return tile_drop_unit_axis(c, v);
    if (v.L.rank == 1 && s.rank == 2 && S1 == 1)          /* a row as a column */
        return tile_expand(c, v, 1);
    Layout D = want && want->rank == s.rank && want->S[0] == S0 && want->S[1] == S1
                   ? *want : layout_rowmajor(s, c->threads, 1);
    SmemMap m = { v.L.S[1], S1, 0, false, false, 1 };
    return remap_smem(c, v, &D, m);
}

/* The layout a value of shape s (broadcastable to L's shape) should have so that broadcasting it
 * to L moves no data: L itself along the dimensions s keeps, one replicated element along the
 * dimensions s has as 1. */
Layout broadcast_view(const Layout *L, Shape s)
{
    Layout B = *L;
    int S[2] = { s.rank == 2 ? (int)s.dim[0] : 1, s.rank >= 1 ? (int)s.dim[s.rank - 1] : 1 };
    B.rank = s.rank;
    for (int d = 0; d < 2; d++)
        if (S[d] != L->S[d]) {
            B.S[d] = 1;
            B.O[d] = B.V[d] = 1;
            B.bcast[d] = L->T[d] > 1;
        }
    return B;
}

SymInfo *info(Lower *c, Sym *s)
{
    if (!s->lower)
        s->lower = arena_alloc(c->a, sizeof(SymInfo));
    return s->lower;
}
