/* lower_tma.c: operands a pipelined loop moves with the Tensor Memory Accelerator (sm_90a).
 *
 * Which. Both operands of the 16-bit and 8-bit wgmma products (A K-major, row-major B N-major, B^T
 * K-major: all in the plain SWZ_SLAB layout), and the A of the swapped tf32 wgmma
 * (lower_mma_swap.c); a matmul path's row says which sides (MatmulPathRow.tma).
 * - tf32: the swapped product's A sits in shared memory in the 128-byte slab swizzle, and the
 *   tensor cores truncate the f32 they read there. Copied by cp.async, each stage is read back,
 *   rounded and stored again by the threads that copied it: three trips through shared memory
 *   per element. A TMA copy through a map of type TFLOAT32 rounds each element to nearest, ties
 *   to even, on its way in.
 * - f16/bf16 B: one thread's few instructions per stage replace every thread's copies and their
 *   address arithmetic. Measured (H100, 2026-11-27, same run, 128 x 256 x 64 tiles): matmul_f16
 *   0.74 -> 0.83 of cuBLAS at 4096^3 and 0.77 -> 0.90 at 8192^3.
 * - f16/bf16 A: one box a slab since the accumulator holds its rows in wgmma's order (lower.h,
 *   wg_rows); matmul_f16 0.82 -> 0.86 of cuBLAS at 4096^3 and 0.88 -> 0.95 at 8192^3 against A
 *   by cp.async (H100, 2026-11-28, same run). Before, A's rows were permuted in blocks of 8 to
 *   match mma.sync's row order, a box per 8 rows (16 a stage), and that ran at 0.53: small boxes
 *   starve the copy engine.
 * The map's 128-byte swizzle is the slab layout itself (row r of a slab at r * 128, 16-byte chunk
 * c at c ^ (r % 8), from a 1024-byte aligned base); SWZ_SLAB64's 64-byte slabs (a K-major 16-bit
 * k step of 32) take maps of the 64-byte swizzle, one box a 64-byte slab.
 *
 * The map. The launcher builds it (runtime/launch.c) from the //@tmap line tma_choose adds to
 * the kernel's metadata, and passes it by value after the arguments; the kernel takes its address
 * with cvta.param. Its box is the window's rows by one slab's columns (32 f32, 64 16-bit), so a
 * window of BK columns is BK / 32 (or / 64) copies, slab j at j * rows * 128 bytes. A window over
 * the last two dimensions of a rank-3 to rank-5 tensor (a batch entry, a head: bmm's B[b], the
 * K and V of attention) has a map of the tensor's own rank, one element deep along the outer
 * dimensions, so that every dimension keeps its own bounds; measured on attention (H100,
 * 2026-11-27) it neither gained nor lost against cp.async (0.76-0.80 of SDPA at head dim 64
 * either way). A box's
 * elements outside the tensor read as zero, as the masked cp.async pieces do, so edge tiles need
 * nothing more.
 *
 * Completion. One mbarrier per stage, initialised once per loop with one expected arrival: the
 * issuing thread arrives announcing the stage's bytes (arrive.expect_tx) and issues the copies,
 * whose completion counts the bytes down; the phase then completes. Every thread waits for the
 * phase before the barrier that publishes the stage (publish_stage), so the block barrier still
 * orders the stage's reuse: the copies into a stage are issued after the barrier that follows the
 * last wgmma reading it. Stage s is filled for the (j / B)-th time in iteration j (B stage
 * buffers), so the parity a thread waits for flips each time the stage counter wraps
 * (PipeLoop.phase). */
#include <string.h>
#include "lower.h"

enum { TMA_BOX_MAX = 256 };

/* Bytes of one slab's rows: 128, or 64 in SWZ_SLAB64 (a K-major 16-bit k step of 32), whose map
 * takes the 64-byte swizzle */
static int slab_bytes(const PipeOperand *p) { return swz_slab_bytes(p->swz); }

/* Columns of one slab: one box is the window's rows by that many columns */
static int slab_cols(const PipeOperand *p) { return slab_bytes(p) / type_size(p->type); }

int tma_boxes(const PipeOperand *p) { return (int)p->window->shape.dim[1] / slab_cols(p); }

/* The maps' element type: f32 tiles are read as tf32 (rounded on the copy), 8-bit ones as bytes */
static const char *map_type(ElemType t)
{
    return t == TY_F16 ? "f16" : t == TY_BF16 ? "bf16" : type_size(t) == 1 ? "u8" : "tf32";
}

/* What any TMA map needs of a window (lower_tma_store.c's too): a tensor argument of rank 2 to
 * 2 + TMAP_MAX_OUTER, windowed over its last two dimensions, the others single indices (a
 * batch, a head), no gather, at most 256 rows a box, unit inner stride, rows 16-byte aligned
 * (the map's base and pitch must be: the same facts that let cp.async move 16-byte pieces into
 * rows `pitch` elements apart). */
bool tma_window_shape_ok(Expr *win)
{
    Sym *t = win->sym;
    if (win->kind != E_INDEX || index_gather_dim(win) >= 0 || !t || t->kind != SYM_TENSOR || t->rank < 2 ||
        t->rank > 2 + TMAP_MAX_OUTER || win->nidx != t->rank)
        return false;
    int r = t->rank;
    for (int d = 0; d < r; d++)
        if ((d >= r - 2) != (win->idx[d].width_expr != NULL) || (d >= r - 2 && win->idx[d].width <= 0))
            return false;
    if (win->shape.dim[0] > TMA_BOX_MAX)
        return false;
    return t->has_default_strides || (!t->stride[r - 1].size && !t->stride[r - 1].expr && t->stride[r - 1].cval == 1);
}

bool tma_window_ok(Lower *c, Expr *win, int pitch)
{
    return tma_window_shape_ok(win) && async_piece_bytes(c, win, pitch) == 16;
}

/* SWZ_SLAB_K8's map views each 8 rows as 4 x 2 (lower_tma.c's header): the window's rows come in
 * whole groups of 8 of the tensor (its start and row count multiples of 8), and the map's rank
 * (two more) within TMA's five. The tensor's row count must be one too (a group past the last
 * rows would read past the tensor): rows8_ok, or a loop versioned on it (lower_version.c). */
bool tma_rows8_window(Lower *c, Expr *win)
{
    return tma_window_shape_ok(win) && win->sym->rank - 2 <= 1 && win->shape.dim[0] % 8 == 0 &&
           known_multiple(c, win->idx[win->nidx - 2].start) % 8 == 0;
}

static bool rows8_ok(Lower *c, Expr *win)
{
    Extent n = win->sym->dim[win->sym->rank - 2];
    int64_t mult = n.expr ? 1 : n.size ? size_multiple(c, n.size) : n.cval;
    return tma_rows8_window(c, win) && mult % 8 == 0;
}

/* A window wgmma reads from a slab (tf32, f16, bf16, 8-bit), whole slabs of columns. */
static bool window_ok(Lower *c, const PipeOperand *p)
{
    Expr *win = p->window;
    /* a loop lowered in two versions copies by TMA in the other one only what the facts as they
       stand align (lower_version.c), and in the aligned one only windows of tensors whose outer
       strides follow from the row length the test covers */
    if (!c->target->tma || p->held || !p->plan ||
        !matmul_side(p->plan->row->tma, p->side) || !swz_slab_bytes(p->swz) || win->kind != E_INDEX ||
        (c->version_aligned && win->sym && win->sym->rank > 2 && !win->sym->has_default_strides))
        return false;
    bool tf32 = win->type == TY_F32 && p->plan->tf32;
    if (!win->sym || win->sym->type != win->type ||
        !(tf32 || win->type == TY_F16 || win->type == TY_BF16 || type_size(win->type) == 1))
        return false;
    if (p->swz == SWZ_SLAB_K8 && !rows8_ok(c, win))
        return false;
    return win->shape.dim[1] % slab_cols(p) == 0 && p->pitch == win->shape.dim[1] && tma_window_ok(c, win, p->pitch);
}

/* The box coordinates of window win, each a register: *row and *col of its last two
 * dimensions, outer[j] of dimension rank - 3 - j (the map's order). */
void tma_window_coords(Lower *c, Expr *win, int *row, int *col, int *outer)
{
    int r = win->nidx;
    *row = opnd_reg(c, lower_expr(c, win->idx[r - 2].start, NULL).v[0], PT_S32);
    *col = opnd_reg(c, lower_expr(c, win->idx[r - 1].start, NULL).v[0], PT_S32);
    for (int j = 0; j < r - 2; j++)
        outer[j] = opnd_reg(c, lower_expr(c, win->idx[r - 3 - j].start, NULL).v[0], PT_S32);
}

static bool same_map(const TensorMapMeta *a, const TensorMapMeta *b)
{
    bool same = a->arg == b->arg && !strcmp(a->dtype, b->dtype) && a->swizzle == b->swizzle &&
                a->box_rows == b->box_rows && a->box_cols == b->box_cols &&
                !strcmp(a->rows_rpn, b->rows_rpn) && !strcmp(a->cols_rpn, b->cols_rpn) &&
                !strcmp(a->pitch_rpn, b->pitch_rpn) && a->nouter == b->nouter && a->if_aligned == b->if_aligned &&
                a->rows8 == b->rows8;
    for (int j = 0; same && j < a->nouter; j++)
        same = !strcmp(a->outer_rpn[j], b->outer_rpn[j]) && !strcmp(a->outer_stride_rpn[j], b->outer_stride_rpn[j]);
    return same;
}

/* The stride of dimension d of t in elements, as the launcher evaluates it: the declared one, or
 * for default strides the product of the extents after d. */
static const char *stride_rpn(Lower *c, const Sym *t, int d)
{
    if (!t->has_default_strides)
        return extent_rpn(c, t->stride[d]);
    const char *s = extent_rpn(c, t->dim[d + 1]);
    for (int j = d + 2; j < t->rank; j++)
        s = arena_printf(c->a, "%s %s *", s, extent_rpn(c, t->dim[j]));
    return s;
}

/* The map of window win of tensor argument win->sym in the kernel's metadata (one per distinct
 * map), copied in boxes of box_rows x box_cols elements of type dtype with the swizzle of that
 * many bytes (128 or 64): its index, -1 when the kernel has as many as the launcher takes. */
int tma_map(Lower *c, Expr *win, const char *dtype, int swizzle, int box_rows, int box_cols, bool if_aligned)
{
    return tma_map_rows(c, win, dtype, swizzle, box_rows, box_cols, if_aligned, false);
}

int tma_map_rows(Lower *c, Expr *win, const char *dtype, int swizzle, int box_rows, int box_cols, bool if_aligned,
                 bool rows8)
{
    KernelMeta *m = c->meta;
    Sym *t = win->sym;
    int r = t->rank;
    TensorMapMeta tm = {
        t->param_index, dtype, swizzle, box_rows, box_cols,
        extent_rpn(c, t->dim[r - 2]), extent_rpn(c, t->dim[r - 1]), stride_rpn(c, t, r - 2), r - 2, { 0 }, { 0 }, if_aligned,
        rows8,
    };
    for (int j = 0; j < r - 2; j++) {
        tm.outer_rpn[j] = extent_rpn(c, t->dim[r - 3 - j]);
        tm.outer_stride_rpn[j] = stride_rpn(c, t, r - 3 - j);
    }
    for (int i = 0; i < m->ntmaps; i++)
        if (same_map(&m->tmaps[i], &tm))
            return i;
    if (m->ntmaps == MAX_TMAPS)
        return -1;
    TensorMapMeta *grown = arena_alloc(c->a, sizeof *grown * (size_t)(m->ntmaps + 1));
    if (m->ntmaps)
        memcpy(grown, m->tmaps, sizeof *grown * (size_t)m->ntmaps);
    grown[m->ntmaps] = tm;
    m->tmaps = grown;
    /* the launcher checks the pointer's 16-byte alignment, which the map's base needs (an
       if-aligned map's kernel tests it instead) */
    if (!if_aligned)
        ((SymInfo *)t->lower)->vec_ok = true;
    return m->ntmaps++;
}

static int register_map(Lower *c, const PipeOperand *p)
{
    return tma_map_rows(c, p->window, map_type(p->type), slab_bytes(p), (int)p->window->shape.dim[0], slab_cols(p),
                        c->version_aligned, p->swz == SWZ_SLAB_K8);
}

bool tma_choose(Lower *c, PipeLoop *pl)
{
    bool any = false;
    for (int i = 0; i < pl->nops; i++) {
        PipeOperand *p = &pl->ops[i];
        if (window_ok(c, p)) {
            p->tmap = register_map(c, p);
            any |= p->tmap >= 0;
        }
        /* SWZ_SLAB_K8 is TMA's alone: cp.async's pieces would go to 4 slabs in one bank group */
        if (p->swz == SWZ_SLAB_K8 && p->tmap < 0)
            p->swz = SWZ_QUAD;
    }
    return any;
}

/* The generic address of map tmap, a by-value parameter after the arguments. */
int tma_map_address(Lower *c, int tmap)
{
    Func *f = c->f;
    int raw = new_reg(f, RC_D), addr = new_reg(f, RC_D);
    const char *name = arena_printf(c->a, "%s_param_%d", c->k->name, c->meta->nargs + tmap);
    Ins *in = emit_ins(f, OP_MOVSYM, PT_U64);
    in->dst[0] = raw;
    in->ndst = 1;
    in->src[0] = SYM(name);
    in->nsrc = 1;
    in = emit_ins(f, OP_CVTA, PT_U64);
    in->dst[0] = addr;
    in->ndst = 1;
    in->src[0] = R(raw);
    in->nsrc = 1;
    in->space = SP_PARAM;
    return addr;
}

int tma_barrier_ring(Lower *c, const PipeLoop *pl, const char *name, int count)
{
    Func *f = c->f;
    int S = pl->nbuf, off = smem_alloc_aligned(c, 8 * S, 8);
    smem_note_mbarriers(c, off, S);
    RegArray arr = { name, S, RC_R, f->cur_line, false, false };
    vec_push(&f->arrays, arr);
    int ring = f->arrays.n - 1;
    for (int st = 0; st < S; st++) {
        int r = smem_base_reg(c, off + 8 * st);
        Ins *in = emit_ins(f, OP_MBINIT, PT_B64);
        in->src[0] = R(r);
        in->nsrc = 1;
        in->count = (uint16_t)count;
        in->guard = pl->leader;
        in = emit_ins(f, OP_ARRSET, PT_U32);
        in->src[0] = R(r);
        in->nsrc = 1;
        in->off = st;
        in->array = ring;
    }
    emit_ins(f, OP_MBFENCEINIT, PT_B32)->guard = pl->leader;
    ir_bar(f);
    return ring;
}

void tma_setup(Lower *c, PipeLoop *pl)
{
    Func *f = c->f;
    f->cur_what = "TMA issuing thread";
    pl->leader = ir_setp(f, CMP_EQ, PT_U32, R(c->tid), IMM(0));
    for (int i = 0; i < pl->nops; i++)
        if (pl->ops[i].tmap >= 0) {
            f->cur_what = "TMA barrier";
            pl->ops[i].bars = tma_barrier_ring(c, pl, arena_printf(c->a, "%s_full", pl->ops[i].operand->sym->name), 1);
            f->cur_what = "tensor map address";
            pl->ops[i].map_addr = tma_map_address(c, pl->ops[i].tmap);
        }
    f->cur_what = "TMA phase";
    pl->phase = ir_mov(f, PT_U32, IMM(0));
    f->cur_what = "temporary";
}

/* One box of a stage: slab j of the window at (row, col + j * slab columns). mask: a register
 * with a multicast copy's blocks of the cluster (-1: this block's shared memory only). */
static void issue_box(Lower *c, const PipeOperand *p, int base, int bar, int j, int rows, int row, int cj,
                      const int *outer, int nouter, int guard, int mask)
{
    Ins *in = emit_ins(c->f, OP_TMALOAD, PT_B32);
    in->src[0] = R(base);
    in->off = (int64_t)j * rows * slab_bytes(p);
    in->src[1] = R(p->map_addr);
    in->src[2] = R(cj);
    in->src[3] = R(row);
    in->src[4] = R(bar);
    in->nsrc = 5;
    for (int q = 0; q < nouter; q++)
        in->src[in->nsrc++] = R(outer[q]);
    in->guard = guard;
    if (mask >= 0) {
        in->src[in->nsrc++] = R(mask);
        in->count = 1;
    }
}

void tma_issue(Lower *c, const PipeLoop *pl, PipeOperand *p, int base, int bar, int valid)
{
    Func *f = c->f;
    Expr *win = p->window;
    int rows = (int)win->shape.dim[0], cols = (int)win->shape.dim[1], sc = slab_cols(p);
    int r = win->nidx, row, col, outer[TMAP_MAX_OUTER];
    tma_window_coords(c, win, &row, &col, outer);
    int go = ir_bin(f, OP_BAND, PT_PRED, R(valid), R(pl->leader));
    Ins *in = emit_ins(f, OP_MBEXPECT, PT_B64);
    in->src[0] = R(bar);
    in->nsrc = 1;
    in->bytes = rows * cols * type_size(p->type);
    in->guard = go;
    /* a window both blocks of a cluster copy: each block issues every other box into both
       (the same offsets, its barrier at the same offset counting the bytes in each block), so
       each stage still receives all its bytes and announces them as before */
    int solo = go, mine[2] = { -1, -1 }, both = -1;
    if (p->mc) {
        both = ir_mov(f, PT_B16, IMM(3));     /* the cta mask: blocks 0 and 1 of the cluster */
        solo = ir_bin(f, OP_BAND, PT_PRED, R(go), R(p->mc_solo));
        for (int q = 0; q < 2; q++)
            mine[q] = ir_bin(f, OP_BAND, PT_PRED, R(go), R(p->mc_mine[q]));
    }
    /* SWZ_SLAB_K8's map: (column, row / 4 % 2, row % 4, row / 8, outer...), the box at row 0 of
       each of the first two within the group of 8 the window starts at */
    int nouter = r - 2, *os = outer, k8[2 + TMAP_MAX_OUTER];
    if (p->swz == SWZ_SLAB_K8) {
        k8[0] = ir_mov(f, PT_S32, IMM(0));
        k8[1] = ir_bin(f, OP_SHR, PT_S32, R(row), IMM(3));
        for (int q = 0; q < nouter; q++)
            k8[2 + q] = outer[q];
        row = k8[0], os = k8, nouter += 2;
    }
    for (int j = 0; j < cols / sc; j++) {
        int cj = j ? ir_bin(f, OP_ADD, PT_S32, R(col), IMM(j * sc)) : col;
        issue_box(c, p, base, bar, j, rows, row, cj, os, nouter, solo, -1);
        if (p->mc)
            issue_box(c, p, base, bar, j, rows, row, cj, os, nouter, mine[j % 2], both);
    }
}

/* Spins on try_wait, which itself waits a while in hardware before it answers. */
void tma_wait(Lower *c, int bar, int phase)
{
    Func *f = c->f;
    int again = new_label(f), done = new_reg(f, RC_P);
    ir_label(f, again);
    Ins *in = emit_ins(f, OP_MBWAIT, PT_PRED);
    in->dst[0] = done;
    in->ndst = 1;
    in->src[0] = R(bar);
    in->src[1] = R(phase);
    in->nsrc = 2;
    ir_bra(f, again, done, true);
}
