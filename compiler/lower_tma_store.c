/* lower_tma_store.c: a tile stored through shared memory by TMA (sm_90a): a product's epilogue.
 *
 * Why. A wgmma accumulator gives each thread two consecutive columns of a row and the next pair
 * eight columns on: stored from registers, a warp's store writes eight 16-byte pieces of eight
 * rows, and a 128 x 256 f16 tile is 4096 such pieces a block. Timed with %globaltimer inside
 * matmul_f16 (H200, 2026-11-29, 4096 x 4096 x K), that epilogue took 4.4-7.5 us (median 5.9) of a
 * tile's 45, the tensor cores idle throughout, and it was the whole difference from cuBLAS
 * (whose fixed cost a tile is about 2.5 us): the k loop itself ran at cuBLAS's speed a step.
 * Here the threads write the tile into shared memory (stage buffers the loop no longer needs)
 * in the 128-byte swizzle, which keeps those writes free of bank conflicts, and one thread hands
 * the whole tile to the copy engine, a box per 128 bytes of columns. The engine writes whole
 * lines and clips the rows and columns outside the tensor itself, so an edge tile needs no mask.
 *
 * When: a plain store (not an atomic) of a 2-D window to a tensor argument the TMA maps can
 * describe (lower_tma.c's conditions: f16, bf16 or f32 rows 16-byte aligned, the window over the
 * last two dimensions, at most 256 rows, whole 128-byte slabs of columns), of a value whose layout
 * has a warp's store write 16 bytes a row or fewer (the 16-bit accumulators), where the
 * staged tile fits in shared memory the block already has (the stage buffers released before
 * it), outside every loop, and where the kernel touches that tensor nowhere else: the issuing
 * thread waits only until the engine has read the staged tile, not until its writes land, so
 * that the block leaves at once. Otherwise, and with -fno-tma-store, the stores go from
 * registers (lower_mem.c).
 *
 * Versioned. A kernel written without `assume(N % 8 == 0)` does not know its rows 16-byte aligned,
 * which a map needs. Where that fact alone is missing (a size whose multiples would give it,
 * lower_version.c's window_row_size), the store is lowered both ways behind one uniform test of
 * the launch's values: that size a multiple, and the tensor's pointer 16-byte aligned. The map is
 * then made `if-aligned`: the launcher builds it under the same conditions (they imply its own:
 * the pointer, the pitch and, with default strides, every outer stride a multiple of 16 bytes)
 * and passes the empty map's stand-in otherwise, which the kernel, taking the registers' path,
 * never uses.
 *
 * The staged tile. Slab j (columns j * SC .. j * SC + SC - 1, SC = 128 / element size) of R rows
 * sits at base + j * R * 128, row r at r * 128, its 16-byte chunk q at (q ^ r % 8) * 16: the
 * layout of the map's 128-byte swizzle from a 1024-byte aligned base, R a multiple of 8 (as the
 * loads' slabs, lower_tma.c). A thread's element at (r0 + dr, first byte b0 + 16 d), where (r0, b0)
 * is its first and dr, d the compile-time steps of its layout, is at
 *   (P ^ ((d ^ dr) % 8) * 16) + (d / 8) * R * 128 + dr * 128,
 *   P = base + (b0 / 128) * R * 128 + r0 * 128 + ((b0 / 16 % 8) ^ r0 % 8) * 16 + b0 % 16,
 * provided adding dr to r0 and d to b0 / 16 carries out of no bit below 8 (layout_ok: the bits
 * they may have kept apart): at most eight xor'd bases, each store [base + constant]. That holds
 * for the wgmma accumulator (rows eight apart, a thread's columns in one chunk) and for the
 * swapped tf32 one (pairs of rows, a column a lane). */
#include "lower.h"

enum { SLAB = 128, CHUNK = 16, BOX_MAX = 256 };

static const char *map_dtype(ElemType t)
{
    return t == TY_F16 ? "f16" : t == TY_BF16 ? "bf16" : t == TY_F32 ? "f32" : NULL;
}

/* How many times e indexes tensor t (as a window, an element, a gather, anywhere inside). */
static int uses_of(const Expr *e, const Sym *t)
{
    if (!e)
        return 0;
    int n = (e->kind == E_INDEX && e->sym == t) + uses_of(e->a, t) + uses_of(e->b, t) + uses_of(e->fill, t);
    for (int i = 0; i < e->nargs; i++)
        n += uses_of(e->args[i], t);
    if (e->kind == E_INDEX)
        for (int i = 0; i < e->nidx; i++)
            n += uses_of(e->idx[i].start, t);
    return n;
}

static int uses_in(const Stmt *s, const Sym *t)
{
    if (!s)
        return 0;
    int n = uses_of(s->init, t) + uses_of(s->lhs, t) + uses_of(s->rhs, t) + uses_of(s->cond, t) +
            uses_of(s->lo, t) + uses_of(s->hi, t) + uses_of(s->step, t) + uses_in(s->then, t) + uses_in(s->els, t);
    for (int i = 0; i < s->nbody; i++)
        n += uses_in(s->body[i], t);
    return n;
}

/* The number of loops around the statement that stores to lhs (-1: not under s). A store inside a
 * loop is left to the registers: the next iteration's copies into the memory it staged through
 * (other allocations over the same bytes) would need a barrier the race check cannot see. */
static int loops_around(const Stmt *s, const Expr *lhs, int loops)
{
    if (!s)
        return -1;
    if ((s->kind == S_ASSIGN || s->kind == S_ATOMIC) && s->lhs == lhs)
        return loops;
    int in = loops + (s->kind == S_FOR), n;
    if ((n = loops_around(s->then, lhs, in)) >= 0 || (n = loops_around(s->els, lhs, in)) >= 0)
        return n;
    for (int i = 0; i < s->nbody; i++)
        if ((n = loops_around(s->body[i], lhs, loops)) >= 0)
            return n;
    return -1;
}

/* The row stride of a 2-D tensor declared `strides(LD, 1)`: LD, else NULL. */
static Sym *own_pitch(const Sym *t)
{
    return t && !t->has_default_strides && t->rank == 2 && t->stride[0].size && !t->stride[0].expr ? t->stride[0].size
                                                                                                  : NULL;
}

/* The window: one a TMA map can describe (lower_tma.c), of an element type a store's map has,
 * whole 128-byte slabs of columns. A view whose rows are a stride of their own apart
 * (`strides(LD, 1)`) needs only that stride 16-byte aligned: the copy engine clips each row at
 * the tensor's length, where 16-byte pieces from registers would need the length aligned too. */
static bool window_ok(Lower *c, Expr *win)
{
    if (win->kind != E_INDEX || !win->sym || !map_dtype(win->sym->type) || win->shape.rank != 2 ||
        win->shape.dim[1] % (SLAB / type_size(win->sym->type)))
        return false;
    Sym *ld = own_pitch(win->sym);
    if (ld)
        return tma_window_shape_ok(win) && size_multiple(c, ld) % (16 / type_size(win->sym->type)) == 0;
    return tma_window_ok(c, win, (int)win->shape.dim[1]);
}

/* The bytes of a row one warp's store instruction writes from registers: the columns the first
 * warp's lanes hold in one row (the thread numbering of lower.h's Layout) times a thread's run. */
static int warp_row_bytes(const Layout *L, int es)
{
    int most = 0;
    for (int t0 = 0; t0 < L->T[0]; t0++) {
        int n = 0;
        for (int t1 = 0; t1 < L->T[1]; t1++) {
            int lo = L->lo_t0_low ? t1 % L->Tlo[1] * L->Tlo[0] + t0 % L->Tlo[0]
                                  : t0 % L->Tlo[0] * L->Tlo[1] + t1 % L->Tlo[1];
            int t = (t0 / L->Tlo[0] * (L->T[1] / L->Tlo[1]) + t1 / L->Tlo[1]) * L->Tlo[0] * L->Tlo[1] + lo;
            n += t < 32;
        }
        most = n > most ? n : most;
    }
    return most * L->V[1] * es;
}

/* The layout: each thread's runs within one 16-byte chunk and narrower than it, whole chunks
 * between its column groups, and no carries (above): the bits of any thread's first row mod 8
 * apart from those of the rows it steps by, and likewise its first chunk's and the chunks it
 * steps by. */
static bool layout_ok(const Layout *L, int es, int rows, int cols)
{
    int run = L->V[1] * es;
    if (L->rank != 2 || L->bcast[0] || L->bcast[1] || L->S[0] != rows || L->S[1] != cols || rows % 8 ||
        run >= CHUNK || CHUNK % run || (L->O[1] > 1 && (L->T[1] * run) % CHUNK))
        return false;
    /* only where the registers' stores are scattered: a warp's 16 bytes a row or fewer (the
       16-bit accumulator). The swapped tf32 accumulator's stores write whole sectors, and staged
       it ran slower (matmul_tf32 0.87 -> 0.86 of cuBLAS at 4096^3, 0.83 -> 0.81 at 8192^3) */
    if (warp_row_bytes(L, es) > CHUNK)
        return false;
    int rmask = 0, drmask = 0, cmask = 0, dmask = 0;
    for (int t0 = 0; t0 < L->T[0]; t0++)
        rmask |= layout_row_origin(L, t0) % 8;
    for (int o0 = 0; o0 < L->O[0]; o0++)
        for (int i0 = 0; i0 < L->V[0]; i0++)
            drmask |= layout_row(L, o0, i0) % 8;
    for (int t1 = 0; t1 < L->T[1]; t1++)
        cmask |= t1 * run / CHUNK % 8;
    for (int o1 = 0; o1 < L->O[1]; o1++)
        dmask |= o1 * L->T[1] * run / CHUNK % 8;
    return !(rmask & drmask) && !(cmask & dmask);
}

/* The layout of the first tile var or let an elementwise expression reads (the accumulator an
 * epilogue works on): the value's own, which the stage below cannot see yet. NULL: none. */
static const Layout *read_layout(const Expr *e)
{
    if (!e)
        return NULL;
    switch (e->kind) {
    case E_NAME: {
        const SymInfo *si = e->sym ? e->sym->lower : NULL;
        return si && (e->sym->kind == SYM_VAR || e->sym->kind == SYM_LET) && e->shape.rank == 2 && si->val.v
                   ? &si->val.L : NULL;
    }
    case E_UNARY: case E_CAST:
        return read_layout(e->a);
    case E_BINARY: {
        if (e->op == OP_MATMUL)
            return NULL;
        const Layout *L = read_layout(e->a);
        return L ? L : read_layout(e->b);
    }
    case E_CALL:
        for (int i = 0; i < e->nargs; i++) {
            const Layout *L = read_layout(e->args[i]);
            if (L)
                return L;
        }
        return NULL;
    default:
        return NULL;
    }
}

/* Whether the window would pass with its rows known 16-byte aligned, and if so the fact that
 * says so (in st): a size of the launch whose multiples make every stride the launcher tests
 * aligned -- with default strides the row length (the window's own start a multiple), for a view
 * `strides(LD, 1)` LD. */
static bool aligned_version(Lower *c, Expr *target, TmaStage *st)
{
    Sym *t = target->sym;
    if (!t || !map_dtype(t->type) || !(t->has_default_strides || own_pitch(t)))
        return false;
    int64_t n = 16 / type_size(t->type);
    /* the launcher makes an if-aligned map where the pointer and the pitch are (runtime/args.c):
       with default strides the pitch is the row length, with strides(LD, 1) it is LD */
    Sym *sz = own_pitch(t) ? own_pitch(t) : window_row_size(c, target, n);
    if (!sz || !sz->lower || ((SymInfo *)sz->lower)->val.v[0].kind == O_IMM || size_multiple(c, sz) % n == 0)
        return false;
    AssumeMark m = assume_facts(c, sz, n);
    bool ok = window_ok(c, target);
    assume_restore(c, m);
    st->size = ok ? sz : NULL;
    st->mult = n;
    return ok;
}

/* Before the value is computed: whether the target may be stored so (judged on the layout of
 * the tile the value reads, which it will have), and if so its staging memory, allocated now so
 * that the barrier a reuse of the loop's buffers takes comes before the value's loads (a bias),
 * not between them and the stores, where it would keep every loaded value live across it. */
bool tma_store_stage(Lower *c, Expr *target, Expr *value, TmaStage *st)
{
    st->size = NULL;
    if (!c->target->tma || c->opt->no_tma_store || c->versioning || c->smem_over ||
        uses_in(c->k->body, target->sym) != 1 || loops_around(c->k->body, target, 0) != 0 ||
        !(window_ok(c, target) || aligned_version(c, target, st)))
        return false;
    int es = type_size(target->sym->type);
    const Layout *L = read_layout(value);
    if (!L || !layout_ok(L, es, (int)target->shape.dim[0], (int)target->shape.dim[1]))
        return false;
    int bytes = (int)(target->shape.dim[0] * target->shape.dim[1]) * es;
    int64_t at = ((int64_t)c->smem_top + 1023) & ~(int64_t)1023;
    if (at + bytes > c->smem_peak)
        return false;
    const char *saved = c->f->cur_what;
    c->f->cur_what = "TMA store";
    st->mark = c->smem_top;
    st->off = smem_alloc_aligned(c, bytes, 1024);
    c->f->cur_what = saved;
    return true;
}

static void staged_store(Lower *c, Expr *target, Tile v, const TmaStage *st, int tmap);

bool tma_store(Lower *c, Expr *target, Tile v, const TmaStage *st)
{
    Func *f = c->f;
    Sym *t = target->sym;
    int es = type_size(t->type), rows = (int)target->shape.dim[0], cols = (int)target->shape.dim[1];
    AssumeMark m = { 0 };
    if (st->size)
        m = assume_facts(c, st->size, st->mult);
    int tmap = v.L.rank == 2 && layout_ok(&v.L, es, rows, cols)
                   ? tma_map(c, target, map_dtype(t->type), SLAB, rows, SLAB / es, st->size != NULL) : -1;
    if (st->size)
        assume_restore(c, m);
    if (tmap < 0) {
        smem_release(c, st->mark, true);     /* nothing was written there */
        return false;
    }
    /* after a split loop's sum in a cluster no block holds the whole tile unless the launch is
       unsplit (lower_split.c): the staged store is a version for that launch */
    bool split = split_in_tail(c);
    if (!st->size && !split) {
        staged_store(c, target, v, st, tmap);
        return true;
    }
    /* the registers' store where the launch is not aligned, the staged one where it is */
    const char *saved = f->cur_what;
    f->cur_what = "TMA store version test";
    int holds = st->size ? alignment_holds(c, alignment_holds(c, -1, st->size, st->mult, NULL), NULL, 0, t) : -1;
    if (split)
        holds = split_unsplit_test(c, holds);
    f->cur_what = saved;
    int aligned = new_label(f), done = new_label(f);
    ir_bra(f, aligned, holds, false);
    store_window(c, target, v);
    ir_bra(f, done, -1, false);
    ir_label(f, aligned);
    int from = f->code.n;
    /* the fact holds on this path: the staged store's own checks see it */
    if (st->size)
        m = assume_facts(c, st->size, st->mult);
    staged_store(c, target, v, st, tmap);
    if (st->size)
        assume_restore(c, m);
    if (split)
        split_unsplit_range(c, from, f->code.n);
    ir_label(f, done);
    return true;
}

static void staged_store(Lower *c, Expr *target, Tile v, const TmaStage *st, int tmap)
{
    Func *f = c->f;
    Sym *t = target->sym;
    int es = type_size(t->type), rows = (int)target->shape.dim[0], cols = (int)target->shape.dim[1];
    const Layout *L = &v.L;
    const char *saved = f->cur_what;
    f->cur_what = "TMA store";
    int base = smem_base_reg(c, st->off);
    int run = L->V[1];
    int t0 = thread_coord(c, L, 0), t1 = thread_coord(c, L, 1);
    int r0 = thread_row0(c, L, t0, PT_U32);
    /* the thread's first byte of a row: its slab, its chunk there, its byte in that */
    int cb = ir_bin(f, OP_MUL, PT_U32, R(t1), IMM(run * es));
    int cq = ir_bin(f, OP_SHR, PT_U32, R(cb), IMM(4));
    int sw = ir_bin(f, OP_BXOR, PT_U32, R(ir_bin(f, OP_BAND, PT_U32, R(cq), IMM(7))),
                    R(ir_bin(f, OP_BAND, PT_U32, R(r0), IMM(7))));
    int p = ir_tern(f, OP_MAD, PT_U32, R(ir_bin(f, OP_SHR, PT_U32, R(cq), IMM(3))), IMM(rows * SLAB), R(base));
    p = ir_tern(f, OP_MAD, PT_U32, R(r0), IMM(SLAB), R(p));
    p = ir_tern(f, OP_MAD, PT_U32, R(sw), IMM(CHUNK), R(p));
    p = ir_bin(f, OP_ADD, PT_U32, R(p), R(ir_bin(f, OP_BAND, PT_U32, R(cb), IMM(CHUNK - 1))));
    int prim = primary_pred(c, L), xored[SLAB / CHUNK];
    for (int q = 0; q < SLAB / CHUNK; q++)
        xored[q] = q ? -1 : p;
    /* column groups outermost: a value computed per column (a bias) dies after its rows */
    for (int o1 = 0; o1 < L->O[1]; o1++)
        for (int o0 = 0; o0 < L->O[0]; o0++)
            for (int i0 = 0; i0 < L->V[0]; i0++) {
                int dr = layout_row(L, o0, i0), d = o1 * L->T[1] * run * es / CHUNK;
                int q = (d ^ dr) % (SLAB / CHUNK);
                if (xored[q] < 0)
                    xored[q] = ir_bin(f, OP_BXOR, PT_B32, R(p), IMM(q * CHUNK));
                int64_t soff = (int64_t)(d / (SLAB / CHUNK)) * rows * SLAB + (int64_t)dr * SLAB;
                int slot = ((o0 * L->V[0] + i0) * L->O[1] + o1) * run;
                store_smem_run(c, t->type, xored[q], soff, run, prim, &v.v[slot]);
            }
    /* the writes reach the copy engine (the async proxy) through a fence, each thread its own,
       then a barrier; one thread issues the boxes and waits until they have been read */
    emit_ins(f, OP_FENCEPROXY, PT_B32);
    ir_bar(f);
    int r = t->rank, leader = ir_setp(f, CMP_EQ, PT_U32, R(c->tid), IMM(0));
    /* an empty tensor's map is a stand-in over the context's zero buffer (runtime/args.c), which
       a store must not write: the store is skipped unless every extent is positive */
    const SymInfo *ti = t->lower;
    for (int d = 0; d < r; d++)
        if (ti->dim[d].kind == O_REG)
            leader = ir_bin(f, OP_BAND, PT_PRED, R(leader), R(ir_setp(f, CMP_GT, PT_S32, ti->dim[d], IMM(0))));
    int map = tma_map_address(c, tmap);
    int row, col, outer[TMAP_MAX_OUTER];
    tma_window_coords(c, target, &row, &col, outer);
    for (int j = 0; j < cols / (SLAB / es); j++) {
        int cj = j ? ir_bin(f, OP_ADD, PT_S32, R(col), IMM(j * (SLAB / es))) : col;
        Ins *in = emit_ins(f, OP_TMASTORE, PT_B32);
        in->src[0] = R(base);
        in->off = (int64_t)j * rows * SLAB;
        in->src[1] = R(map);
        in->src[2] = R(cj);
        in->src[3] = R(row);
        in->nsrc = 4;
        for (int q = 0; q < r - 2; q++)
            in->src[in->nsrc++] = R(outer[q]);
        in->guard = leader;
    }
    emit_ins(f, OP_BULKCOMMIT, PT_B32)->guard = leader;
    Ins *w = emit_ins(f, OP_BULKWAIT, PT_B32);
    w->inflight = 0;
    w->guard = leader;
    KernelMeta *m = c->meta;
    bool listed = false;
    for (int i = 0; i < m->ntma_stored; i++)
        listed |= m->tma_stored[i] == t->name;
    if (!listed && m->ntma_stored < (int)(sizeof m->tma_stored / sizeof *m->tma_stored)) {
        m->tma_stored_if_aligned[m->ntma_stored] = st->size != NULL;
        m->tma_stored[m->ntma_stored++] = t->name;
    }
    /* a later owner of this memory meets a barrier first (lower_smem.c, reuse) */
    smem_release(c, st->mark, false);
    f->cur_what = saved;
}
