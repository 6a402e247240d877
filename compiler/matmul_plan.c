/* matmul_plan.c: the one place that decides how an `@` is computed.
 *
 * A product's plan is chosen once, from the table below, the first row whose fits() accepts the
 * operand type and the M x N x K shape on the target. The plan fixes the accumulator's layout
 * (which every var accumulated by the product takes: SymInfo.plan), the layouts a pipelined loop
 * stores the operands in, their row pitch when the matmul stages them itself, and the function
 * that emits the product. Nothing after the choice looks at shapes, types or the target again to
 * find the path.
 *
 * Sources. Some paths read their operands only where a pipelined loop's asynchronous copies put
 * them in the path's swizzled layout (wgmma reads shared memory through descriptors of the
 * 128-byte swizzle). Which operands arrive that way is known when the loop (lower_pipeline.c) or
 * the matmul (lower_matmul.c) has looked at them: matmul_set_sources records it, and a row whose
 * needs are not met gives way to its fallback, a path with the same accumulator layout that reads
 * any shared layout. The accumulator's layout never changes after the choice, since vars and
 * earlier products already hold it.
 *
 * A new path is a row here plus the file that emits it. */
#include "lower.h"

static bool fits_mma_sync(Lower *c, const MatmulPlan *p)
{
    return mma_supported(c, p->type, p->tf32, p->M, p->N, p->K);
}

/* A arrives in slabs, K-major: a transposed A cannot; B^T goes through registers row-major, so a
 * transposed B takes the register-A row below, which reads B K-major from its slab */
static bool fits_wgmma_tf32(Lower *c, const MatmulPlan *p)
{
    return p->type == TY_F32 && p->tf32 && !p->trans[0] && !p->trans[1] && fits_mma_sync(c, p) &&
           wgmma_shape(c, p->type, true, p->M, p->N, p->K, true, false);
}

/* A K-major, or M-major when transposed (imm-trans-a); B N-major, or K-major when transposed.
 * 8-bit products read both operands K-major only: A as stored, B transposed. An A that is a
 * value takes the register-A row below. */
static bool fits_wgmma(Lower *c, const MatmulPlan *p)
{
    bool b8 = type_size(p->type) == 1;
    return (p->type == TY_F16 || p->type == TY_BF16 || (b8 && p->trans[1] && !p->trans[0])) && !p->a_value &&
           fits_mma_sync(c, p) && wgmma_shape(c, p->type, false, p->M, p->N, p->K, !p->trans[0], p->trans[1]);
}

/* A 16-bit A that is a value (the f16 of another product's accumulator, as attention's P in
 * P @ V) is its own fragments: no shared memory at all (lower_wgmma_value); B from its slab.
 * (A transposed A took this row, its fragments loaded as mma.sync loads them, until the
 * accumulator's rows came in wgmma's order and the slab could take A^T as stored: 0.73 of
 * cuBLAS against the row-major product's 0.76 at 4096^3, H100, 2026-11-28.) tf32 reads B only K-major: B
 * transposed, and A in either layout, rounded in registers (A in a slab had to be rounded in
 * place after its copies: 0.53 of cuBLAS at 4096^3 against 0.71 this way). */
static bool fits_wgmma_ra(Lower *c, const MatmulPlan *p)
{
    return (p->type == TY_F16 || p->type == TY_BF16) && p->a_value && fits_mma_sync(c, p) &&
           wgmma_shape(c, p->type, false, p->M, p->N, p->K, false, p->trans[1]);
}

static bool fits_wgmma_tf32_ra(Lower *c, const MatmulPlan *p)
{
    return p->type == TY_F32 && p->tf32 && p->trans[1] && fits_mma_sync(c, p) &&
           wgmma_shape_tf32_kmajor(c, p->M, p->N, p->K);
}

/* tf32 A^T @ B on sm_90a: A^T through registers as above; B, N-major as stored, copied as it lies
 * and turned K-major in shared memory (lower_transpose.c): tf32 wgmma reads neither operand as
 * stored, in either orientation of the product. Where the tile has no transposing layout the
 * product stays on mma.sync. */
static bool fits_wgmma_tf32_xb(Lower *c, const MatmulPlan *p)
{
    Layout L;
    return p->type == TY_F32 && p->tf32 && p->trans[0] && !p->trans[1] && fits_mma_sync(c, p) &&
           wgmma_shape_tf32_kmajor(c, p->M, p->N, p->K) && xpose_layout((Shape){ 2, { p->K, p->N } }, c->threads, &L);
}

static bool fits_any(Lower *c, const MatmulPlan *p)
{
    (void)c, (void)p;
    return true;
}

/* ldmatrix reads 16-bit A and B either way (.trans or not); tf32, for which no transposing
 * ldmatrix exists, by one 32-bit load per fragment register (no swizzle: a padded pitch spreads
 * those loads over the banks) */
static bool trans_mma_sync(const MatmulPlan *p, int side)
{
    (void)p, (void)side;
    return true;
}

/* The descriptors read 16-bit operands K-major or MN-major; 8-bit ones K-major only */
static bool trans_wgmma(const MatmulPlan *p, int side)
{
    return side == 1 || type_size(p->type) == 2;
}

/* An f32 operand stored with K along its rows (A as stored, M rows of K; B transposed, N rows of
 * K) is turned around by its pipelined copies (SWZ_TURN, 4-byte pieces of cp.async: lower_mem.c),
 * K rows in shared memory: a thread's rows (columns) of one k are then consecutive words, loaded
 * by one vector load into registers of alternating banks. Read along K, the 8 values of one k
 * sit at the same place of 8 vector loads, all in one of the two register banks, and an FFMA that
 * does not reuse one may collide with its accumulator: in ptxas's SASS of the 64 x 128 f32
 * example, 70% of the FFMAs read two registers of one bank (31% for the same tile with A stored
 * M-major), and its warps stalled 1.16 cycles an instruction in dispatch (cuBLAS's 0.10): 0.79 of
 * cuBLAS at 4096^3, 0.86 turned (H200; docs/performance.md, which says what is not yet known). */
static bool ffma_turns(const MatmulPlan *p, ElemType t, int side)
{
    return (side == 0 ? !p->trans[0] && !p->a_value : p->trans[1]) && t == TY_F32 && !p->tf32;
}

/* With B transposed and not turned (a B^T a loop does not copy), each thread takes single columns
 * T1 apart rather than runs of 4: the k runs it reads from B^T's rows are then in consecutive
 * rows across a quarter warp, which the padded pitch spreads over the banks (rows 4 apart, as
 * runs of 4 columns would put them, collide) */
static Layout layout_ffma(Lower *c, const MatmulPlan *p, Shape s)
{
    Layout L = layout_matmul(s, c->threads);
    if (p->trans[1] && !ffma_turns(p, p->type, 1) && L.rank == 2 && !L.bcast[1] && L.reps == 1 && L.Tlo[1] == L.T[1]) {
        L.O[1] *= L.V[1];
        L.V[1] = 1;
    }
    return L;
}
static Layout layout_mma_sync(Lower *c, const MatmulPlan *p, Shape s)
{
    return layout_mma(s, c->threads, p->type, false, p->type == TY_F32 && p->trans[1]);
}
/* wgmma's: one warp column (lower_wgmma.c) */
static Layout layout_wgmma(Lower *c, const MatmulPlan *p, Shape s) { return layout_mma(s, c->threads, p->type, true, false); }
/* the swapped tf32 product's: C^T's fragments (lower_mma_swap.c) */
static Layout layout_swapped(Lower *c, const MatmulPlan *p, Shape s)
{
    (void)s;
    return layout_mma_swapped(p->M, p->N, c->threads);
}

/* FFMA reads any stored row order in vectors (lower_ffma.c) */
static bool trans_ffma(const MatmulPlan *p, int side)
{
    (void)p, (void)side;
    return true;
}

static int swizzle_ffma(Lower *c, const MatmulPlan *p, ElemType t, int side)
{
    (void)c;
    return ffma_turns(p, t, side) ? SWZ_TURN : SWZ_NONE;
}

static int swizzle_mma_sync(Lower *c, const MatmulPlan *p, ElemType t, int side)
{
    if (p->trans[side] && (t == TY_F32 || type_size(t) == 1))    /* no ldmatrix reads these */
        return SWZ_NONE;
    if (p->trans[side]) {      /* rows of M (A) or K (B) elements, read by ldmatrix */
        int row_bytes = (side == 0 ? p->M : p->K) * type_size(t);
        return swz_applies(SWZ_LDMATRIX, row_bytes) ? SWZ_LDMATRIX : SWZ_NONE;
    }
    return mma_sync_swizzle(c, t, side, p->M, p->N, p->K);
}

/* The slab of a wgmma operand: 128 bytes wide, or 64 where the operand is K-major (A as stored,
 * B transposed) and its K is 32 bytes past a multiple of 128 (a k step of 32 16-bit values) */
static int wgmma_slab(const MatmulPlan *p, ElemType t, int side)
{
    bool kmajor = side == 0 ? !p->trans[0] : p->trans[1];
    return kmajor && p->K * type_size(t) % 128 ? SWZ_SLAB64 : SWZ_SLAB;
}

/* A K-major, B N-major (or K-major, transposed), both in slabs */
static int swizzle_wgmma(Lower *c, const MatmulPlan *p, ElemType t, int side)
{
    (void)c;
    return wgmma_slab(p, t, side);
}

/* A where mma.sync's fragment loads read it, B in its slab */
static int swizzle_wgmma_ra(Lower *c, const MatmulPlan *p, ElemType t, int side)
{
    return side == 1 ? wgmma_slab(p, t, 1) : swizzle_mma_sync(c, p, t, 0);
}

/* A where mma.sync's fragment loads read it, B staged for its transposing copy */
static int swizzle_wgmma_xb(Lower *c, const MatmulPlan *p, ElemType t, int side)
{
    return side == 1 ? SWZ_BLK4 : swizzle_mma_sync(c, p, t, 0);
}

/* A in slabs for the tensor cores; B^T read into registers four n8 tiles at a time, from slabs
 * whose rows TMA lays in the order the fragment loads want (lower_tma.c gives a B it cannot
 * bring SWZ_QUAD instead) */
static int swizzle_swapped(Lower *c, const MatmulPlan *p, ElemType t, int side)
{
    (void)t;
    if (side == 0)
        return SWZ_SLAB;
    return p->row->path == MM_WGMMA_TF32 && c->target->tma ? SWZ_SLAB_K8 : SWZ_QUAD;
}

/* Row pitch in elements of an unswizzled operand: a 16-byte pad keeps rows 16-byte aligned and
 * spreads them over the banks (the tensor cores' fragment loads want mma_pitch's). */
static int pitch_ffma(ElemType t, int cols) { return cols + 16 / type_size(t); }

static void emit_mma_sync(Lower *c, Tile *acc, const MatmulPlan *p, SmemMatrix a, SmemMatrix b)
{
    (void)p;
    lower_mma(c, acc, a, b);
}

static void emit_wgmma(Lower *c, Tile *acc, const MatmulPlan *p, SmemMatrix a, SmemMatrix b)
{
    (void)p;
    lower_wgmma(c, acc, a, b);
}

static void emit_swapped(Lower *c, Tile *acc, const MatmulPlan *p, SmemMatrix a, SmemMatrix b)
{
    lower_mma_swapped(c, acc, a, b, p->row->path == MM_WGMMA_TF32);
}

enum { SIDE_A = 1, SIDE_B = 2 };

/* Most specific first; rows without fits() are reached only as a fallback. */
static const MatmulPathRow rows[] = {
    /* tf32 on sm_90a with B transposed (stored [N, K]): A's fragments in registers, rounded
       there; B^T K-major from its slab, by TMA (rounding on the copy) where it can, else rounded
       in place */
    { MM_WGMMA_TF32_RA, "wgmma tf32 (A from registers)", fits_wgmma_tf32_ra, layout_wgmma, swizzle_wgmma_ra,
      mma_pitch, SIDE_B, MM_MMA_SYNC, SIDE_B, SIDE_B, SIDE_B, 0, true, false, trans_mma_sync, emit_wgmma },
    /* tf32 on sm_90a with A transposed and B not: A's fragments in registers, B copied as it
       lies and turned K-major into its slab by the threads (lower_transpose.c) */
    { MM_WGMMA_TF32_XB, "wgmma tf32 (A from registers, B transposed in shared memory)", fits_wgmma_tf32_xb,
      layout_wgmma, swizzle_wgmma_xb, mma_pitch, SIDE_B, MM_MMA_SYNC, 0, SIDE_B, 0, SIDE_B, true, false,
      trans_mma_sync, emit_wgmma },
    /* tf32 on sm_90a: C^T = B^T A^T, A by cp.async or TMA into slabs the tensor cores read as tf32
       (rounded in place after cp.async; TMA rounds on the way), B by TMA or cp.async for the
       fragment loads, its group in flight across iterations (lower_mma_swap.c) */
    { MM_WGMMA_TF32, "wgmma tf32 (swapped)", fits_wgmma_tf32, layout_swapped, swizzle_swapped, mma_pitch,
      SIDE_A, MM_MMA_SWAPPED, SIDE_A | SIDE_B, SIDE_A, SIDE_A, 0, true, true, NULL, emit_swapped },
    /* f16/bf16 (and 8-bit) on sm_90a: both operands in slabs as stored, K- or MN-major
       (lower_wgmma.c), by TMA where they can */
    { MM_WGMMA, "wgmma", fits_wgmma, layout_wgmma, swizzle_wgmma, mma_pitch,
      SIDE_A | SIDE_B, MM_MMA_SYNC, SIDE_A | SIDE_B, SIDE_A | SIDE_B, 0, 0, true, false, trans_wgmma, emit_wgmma },
    /* f16/bf16 on sm_90a with A a value: its registers packed into A fragments, B from its
       slab (lower_wgmma.c) */
    { MM_WGMMA_RA, "wgmma (A from registers)", fits_wgmma_ra, layout_wgmma, swizzle_wgmma_ra, mma_pitch,
      SIDE_B, MM_MMA_SYNC, SIDE_B, SIDE_B, 0, 0, true, false, trans_mma_sync, emit_wgmma },
    /* f16/bf16/tf32, sm_80 on (lower_mma.c) */
    { MM_MMA_SYNC, "mma.sync", fits_mma_sync, layout_mma_sync, swizzle_mma_sync, mma_pitch,
      0, MM_MMA_SYNC, 0, 0, 0, 0, true, false, trans_mma_sync, emit_mma_sync },
    /* the swapped tf32 product by mma.sync, when A does not arrive in a slab */
    { MM_MMA_SWAPPED, "mma.sync tf32 (swapped)", NULL, layout_swapped, swizzle_swapped, mma_pitch,
      0, MM_MMA_SWAPPED, 0, 0, 0, 0, true, false, NULL, emit_swapped },
    /* everything else: IEEE f32 (and widened f16/bf16) FMA on the SIMT cores (lower_ffma.c) */
    { MM_FFMA, "ffma", fits_any, layout_ffma, swizzle_ffma, pitch_ffma,
      0, MM_FFMA, 0, 0, 0, 0, false, false, trans_ffma, lower_ffma },
};
enum { NROWS = sizeof rows / sizeof rows[0] };

const MatmulPathRow *matmul_path_row(MatmulPath path)
{
    for (int i = 0; i < NROWS; i++)
        if (rows[i].path == path)
            return &rows[i];
    die("matmul_path_row: no row for path %d", (int)path);
}

void matmul_choose(Lower *c, MatmulPlan *p, ElemType t, bool tf32, Shape s, int K, const bool *trans, bool a_value)
{
    p->a_value = a_value;
    p->type = t;
    p->tf32 = tf32;
    p->M = (int)s.dim[0];
    p->N = (int)s.dim[1];
    p->K = K;
    p->trans[0] = trans && trans[0];
    p->trans[1] = trans && trans[1];
    p->row = NULL;
    for (int i = 0; i < NROWS && !p->row; i++)
        if (rows[i].fits && rows[i].fits(c, p))
            p->row = &rows[i];
    p->wanted = p->row;
    p->acc = p->row->layout(c, p, s);
    p->src[0] = p->src[1] = MS_REGS;
}

const char *matmul_plan_why(Lower *c, const MatmulPlan *p)
{
    if (p->wanted && p->wanted != p->row) {
        unsigned n = p->wanted->needs_async;
        return arena_printf(c->a, "not %s, which needs %s copied by a pipelined loop", p->wanted->name,
                            n == (SIDE_A | SIDE_B) ? "A and B" : n == SIDE_A ? "A" : "B");
    }
    if (p->row->path == MM_FFMA && p->type == TY_F32 && !p->tf32)
        return "IEEE f32: tf32(a) @ tf32(b) runs on the tensor cores";
    if (p->row->path == MM_FFMA && c->target->mma_sync)
        return arena_printf(c->a, "no tensor-core instruction takes a %d x %d x %d %s product over %d threads "
                                  "(16 x 8 tiles of the warps, K a multiple of its k step)",
                            p->M, p->N, p->K, type_name(p->type), c->threads);
    if (p->row->path == MM_MMA_SYNC && c->target->wgmma && (p->type == TY_F16 || p->type == TY_BF16)) {
        const char *why = wgmma_shape_why(c, p->M, p->N, p->K);
        return why ? why : "no wgmma reads its operands as they lie";
    }
    return NULL;
}

/* The operand as stored: strips a tf32() cast (setting *tf32). */
Expr *matmul_operand(Expr *e, bool *tf32)
{
    *tf32 = false;
    if (e->kind == E_CAST && e->to == TY_TF32) {
        *tf32 = true;
        return e->a;
    }
    return e;
}

/* The element type an operand sits in shared memory as: its own for 16-bit floats, 8-bit types
 * and i32, f32 for everything else (widened). */
ElemType matmul_stored_type(Expr *e)
{
    return e->type == TY_F16 || e->type == TY_BF16 || type_is_8bit(e->type) ? e->type : e->type == TY_I32 ? TY_I32 : TY_F32;
}

MatmulPlan *matmul_plan(Lower *c, Expr *mm)
{
    for (MatmulPlan *p = c->plans; p; p = p->next)
        if (p->mm == mm)
            return p;
    MatmulPlan *p = arena_alloc(c->a, sizeof *p);
    bool tf32, tb;
    Expr *x = matmul_operand(mm->a, &tf32), *y = matmul_operand(mm->b, &tb);
    ElemType t = matmul_stored_type(x);
    bool trans[2] = { x->kind == E_INDEX && x->twin, y->kind == E_INDEX && y->twin };
    /* A neither a window nor a shared var: a value, in registers before the product */
    bool a_value = (x->kind != E_INDEX || (index_gather_dim(x) >= 0 && !matmul_gather_copies(x))) &&
                   !(x->kind == E_NAME && x->sym->kind == SYM_VAR && x->sym->is_shared);
    matmul_choose(c, p, t, tf32, mm->shape, (int)mm->a->shape.dim[1], trans, a_value);
    p->mm = mm;
    p->next = c->plans;
    c->plans = p;
    return p;
}

/* A gathered operand a pipelined loop may copy like a window: its rows picked by a let (a value
 * fixed where it is defined: the loop checks it is defined before the loop). */
bool matmul_gather_copies(const Expr *x)
{
    int gd = index_gather_dim(x);
    if (gd < 0)
        return false;
    const Expr *g = x->idx[gd].start;
    return g->kind == E_NAME && g->sym && g->sym->kind == SYM_LET;
}

void matmul_set_sources(MatmulPlan *p, MatmulSource a, MatmulSource b)
{
    p->src[0] = a;
    p->src[1] = b;
    unsigned async = (a >= MS_CPASYNC ? SIDE_A : 0) | (b >= MS_CPASYNC ? SIDE_B : 0);
    if ((p->row->needs_async & async) != p->row->needs_async)
        p->row = matmul_path_row(p->row->fallback);
}

/* A transposed tf32 operand is read by one 32-bit load per fragment register: 8 lanes g at rows
 * (B^T: n) or columns (A^T: m) g, 4 lanes q at k + q. Conflict-free when B^T's rows are 4 words
 * apart modulo 32 banks and A^T's 8 (rows 16-byte aligned for the copies either way). A tf32 A
 * that is not transposed is read by ldmatrix, 8 rows of 16 bytes: rows an odd number of 16-byte
 * units apart (mma_pitch gives wide f32 rows B's pitch, which it cannot tell from A's). */
int matmul_stage_pitch(const MatmulPlan *p, int side, ElemType t, int cols)
{
    bool frag_loads = p->row->path == MM_MMA_SYNC ||
                      (side == 0 && (p->row->path == MM_WGMMA_TF32_RA || p->row->path == MM_WGMMA_TF32_XB));
    if (t == TY_F32 && side == 0 && !p->trans[0] && frag_loads) {
        int units = (cols * 4 + 15) / 16;
        return (units | 1) * 4;
    }
    if (!(p->trans[side] && t == TY_F32 && frag_loads))
        return p->row->pitch(t, cols);
    int want = side == 1 ? 4 : 8, pw = (cols + 3) & ~3;
    while (pw % 32 != want)
        pw += 4;
    return pw;
}

bool matmul_reads_trans(const MatmulPlan *p, int side)
{
    return p->trans[side] && p->row->reads_trans && p->row->reads_trans(p, side);
}

int matmul_swizzle(Lower *c, const MatmulPlan *p, int side, ElemType t)
{
    return p->row->swizzle(c, p, t, side);
}

bool matmul_side(unsigned mask, int side) { return mask & (side == 0 ? SIDE_A : SIDE_B); }
