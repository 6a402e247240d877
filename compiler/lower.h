/* lower.h: lowering's own declarations, for the lower*.c files, layout.c and swizzle.c (and the
 * unit tests that drive them). The rest of the compiler sees lowering only through lower_kernel
 * (tilec.h). */
#ifndef TILEC_LOWER_H
#define TILEC_LOWER_H

#include "tilec.h"

/* The lowering's files, each calling those below it:
 *   lower.c           the pipeline of one kernel (lower_kernel)
 *   lower_params.c    its arguments, parameter loads, launch-time RPN
 *   lower_stmt.c      statements (lower_limits.c: how far loops unroll, the instruction limit)
 *   lower_print.c     print(x): vprintf calls from one thread, a tile read back from the scratch
 *   lower_pipeline.c  pipelined loops (lower_tma.c: their TMA copies)
 *   lower_matmul.c    `@`: its plan (matmul_plan.c), staging; the paths: lower_ffma.c, lower_mma.c,
 *                     lower_mma_swap.c, lower_wgmma.c
 *   lower_expr.c      expressions
 *   lower_mem.c, lower_reduce.c   tensor windows and shared vars; reductions
 *   lower_tile.c      tiles and layout changes (layout.c: layouts; swizzle.c: swizzled operands)
 *   lower_smem.c      shared-memory allocation, the scratch area
 * Calls against it: a pipelined loop lowers its body with lower_stmt; lower_expr lowers a product
 * used as a value with lower_matmul, and lower_matmul an operand that is not a window with
 * lower_expr; windows (lower_mem.c, lower_tma.c) lower their start indices with lower_expr; the
 * matmuls and shared vars inside a pipelined loop ask it for stage buffers (pipe_buffer), and the
 * tensor-core matmuls take its barrier and issue its next copies (pipe_take_barrier, pipe_barrier,
 * pipe_issue_pending). */

typedef struct MatmulPlan MatmulPlan;    /* matmul_plan.c */


/* How a tile is spread over the block's threads. Shapes are normalised to 2-D (a rank-1 tile of
 * width W is [1, W]; a scalar is [1, 1]). Along dimension d, thread coordinate t_d < T[d] owns
 * elements (o * T[d] + t_d) * V[d] + i for o < O[d], i < V[d] -- unless bcast[d], where every t_d
 * holds the same elements o * V[d] + i (a value broadcast along that thread dimension).
 * Threads: the coordinates split into an inner grid Tlo[0] x Tlo[1] (low thread-id bits, row-major)
 * and an outer grid of such groups (T[d] / Tlo[d] along d, also row-major):
 *   t = rep * T0 T1 + ((t0 / Tlo0) * (T1 / Tlo1) + t1 / Tlo1) * Tlo0 Tlo1 + (t0 % Tlo0) * Tlo1 + t1 % Tlo1
 * rep > 0 are replicas of rep == 0. With Tlo = T (every layout but the tensor cores' 2-D warp grid)
 * this is t = rep * T0 T1 + t0 * T1 + t1. With lo_t0_low (the transposed accumulator of tf32 wgmma,
 * whose lane bits hold the column above the row) the inner grid is column-major instead:
 * (t1 % Tlo1) Tlo0 + t0 % Tlo0.
 * Rows: thread coordinate t0 owns rows (o * T0 + t0) * V0 + i, except with wg_rows (wgmma's
 * accumulator: V0 = 1, O0 even, T0 = 8 W for W warps in one warp column), whose rows are in the
 * tensor cores' warpgroup order: slot o of t0 is row (o / 2) 2 T0 + 16 (t0 / 8) + 8 (o % 2) + t0 % 8,
 * so warp w = t0 / 8 holds rows 16 w + g and 16 w + 8 + g (g = t0 % 8) of every 2 T0, and
 * warpgroup u the 64 consecutive rows from 64 u: each wgmma's A is 64 consecutive rows of the
 * operand as stored. layout_row and layout_row_origin give both forms; wg_rows means nothing
 * where rows are broadcast or single (layout_wg). */
typedef struct {
    int rank;              /* rank of the value (0, 1, 2) */
    int S[2], T[2], V[2], O[2];
    bool bcast[2];
    int reps;              /* threads / (T[0] * T[1]) */
    int Tlo[2];            /* inner thread grid; divides T */
    bool lo_t0_low;        /* inner grid column-major: t0 % Tlo0 in the lowest thread-id bits */
    bool wg_rows;          /* rows in warpgroup order (above) */
} Layout;

int layout_slots(const Layout *L);
bool layout_eq(const Layout *a, const Layout *b);
/* t_d is t1 + ... of contiguous low thread-id bits, as shuffles within a warp need it: the layout
 * is not split into an inner and an outer grid along d's bits. */
bool layout_tid_plain(const Layout *L);
/* Are L's rows in warpgroup order (wg_rows, with more than one row, not broadcast)? */
bool layout_wg(const Layout *L);
/* Row of slot (o0, i0) past the thread's first row; the first row of thread coordinate t0 (0 where
 * rows are broadcast): the row is layout_row_origin(L, t0) + layout_row(L, o0, i0). */
int layout_row(const Layout *L, int o0, int i0);
int layout_row_origin(const Layout *L, int t0);
Layout layout_scalar(int threads);
/* Rows spread over threads, columns in vectors of vec elements (coalesced row-major access). */
Layout layout_rowmajor(Shape s, int threads, int vec);
/* 2-D register blocking for a matmul result: each thread owns a TM x TN block made of 4x4
 * sub-blocks spread so that shared-memory fragment reads are 16-byte vectors. */
Layout layout_matmul(Shape s, int threads);
/* L with rows and columns exchanged, element (i, j) in the slot and thread of L's (j, i); false
 * where the thread grid has an outer part (Tlo != T), whose order the exchange would break */
bool layout_transpose(const Layout *L, Layout *out);

/* A value during lowering: one operand per slot this thread owns (registers or immediates). */
typedef struct {
    ElemType type;         /* source-level element type (floats are held as f32) */
    Layout L;
    Opnd *v;               /* layout_slots(&L) operands */
} Tile;

typedef struct {
    Tile val;              /* let/var/scalar/size/loop: the value */
    int smem_off;          /* shared var: byte offset in the block's shared memory */
    int smem_ld;           /* shared var: row pitch in elements */
    int ptr;               /* tensor: 64-bit global base address register */
    Opnd dim[MAX_TENSOR_RANK], stride[MAX_TENSOR_RANK];   /* tensor: extents (s32 imm or reg) */
    int stride64[MAX_TENSOR_RANK];                        /* tensor: strides widened to s64 regs */
    bool vec_ok;           /* tensor: all its window accesses may use vector memory ops */
    bool warned_align;     /* tensor: the note on its 2-byte row accesses was given */
    MatmulPlan *plan;      /* var accumulated by `@`: the first such product's plan, whose layout it takes */
    bool has_hint;         /* let/var with a planned layout (layout_plan.c) ... */
    Layout hint;           /* ... which a var takes from its declaration and a let is lowered in */
    Stmt *loop;            /* loop variable: its for statement (divisibility, bounds facts) */
    Expr *def;             /* let: its defining expression */
    bool at_use;           /* let: not lowered at its statement; its one read lowers def */
} SymInfo;

/* Registers in-flight wgmma read across a pipelined loop's iterations (PipeLoop.inflight). */
typedef struct WgInflight { int *regs; int n; } WgInflight;   /* regs in the arena */
/* An operand of a pipelined loop: a matmul operand (plan, side) or the window a shared var is
 * filled from (var); its stage buffers' addresses are a register tensor. */
typedef struct {
    Expr *operand; Sym *var; int array; int pitch; ElemType type; int bytes; int swz;
    Expr *window;          /* what is copied: the operand, or its twin when trans */
    bool trans;            /* the operand is copied transposed, in memory order (Expr.twin) */
    MatmulPlan *plan;      /* a matmul operand: the product's plan ... */
    int side;              /* ... and which operand (0: A, 1: B) */
    int tmap;              /* >= 0: copied by TMA through KernelMeta.tmaps[tmap] (lower_tma.c) */
    int bars;              /* TMA: the register tensor of the stages' mbarrier addresses */
    int map_addr;          /* TMA: the register holding the tensor map's address */
    /* a window the loop variable does not move (attention's Q): copied once, before the loop,
       into one buffer at held_base (a register) that every iteration reads; no stages */
    bool held;
    int held_base;
    /* copied as it lies and turned in place into a K-major slab after its copies
       (MatmulPathRow.xpose, lower_transpose.c) */
    bool xpose;
    /* copied by TMA and shared with the other block of a 2-block cluster when mc (predicates:
       mc_solo, the window is this block's alone; mc_mine[j], it is shared and this block issues
       the boxes j, j + 2, ..., multicast into both) (lower_warpspec.c) */
    bool mc;
    int mc_solo, mc_mine[2];
} PipeOperand;

/* A pipelined loop while it is lowered (lower_pipeline.c); Lower.pipe is the innermost one whose
 * body is being lowered, outer the one around it. */
/* A second product's operand that is the same window, laid out the same, as ops[of]: it reads
 * that operand's stage buffers, read as itself (trans) */
typedef struct { Expr *operand; int of; bool trans; MatmulPlan *plan; int side; } PipeAlias;

typedef struct PipeLoop {
    Stmt *loop;
    PipeOperand *ops; int nops;   /* operands in stage buffers */
    PipeAlias *alias; int nalias; /* operands that share one of them (lower_pipeline.c, same_window) */
    PipeOperand seen_as;          /* pipe_find's answer for an alias */
    int S;                        /* pipeline(S): copies run S - 1 iterations ahead */
    /* stage buffers: S, or S + 1 when the matmul keeps one wgmma group in flight into the next
     * iteration (wg_keep): the stage that group reads is then neither read nor written by the
     * next iteration's copies */
    int nbuf;
    int wg_keep;                  /* wgmma groups the body's product leaves in flight (0 or 1) */
    int iter, hi;                 /* registers: the loop variable, its bound */
    Opnd lo;                      /* the loop's first value */
    int stage;                    /* register: the stage this iteration reads */
    /* with TMA operands (else -1): the parity of the current stage's mbarrier phase (flips each
     * time the stage wraps), and the predicate of the thread that issues */
    int phase, leader;
    /* operands wgmma reads (SWZ_SLAB*) come through the async proxy: the barrier that publishes
     * a stage has fence.proxy.async first */
    bool async_proxy;
    /* a body that is one tensor-core matmul: the loop leaves its barrier (cp.async.wait_group
     * S-2 + bar.sync) to the matmul, which moves it before the last k step and loads the next
     * stage's first fragments behind it (pipe_take_barrier and below) */
    bool bar_pending;
    /* a swapped tf32 wgmma that keeps groups in flight across iterations (lower_mma_swap.c):
     * the registers they read, held live until the loop's exit waits for them (else NULL) */
    WgInflight *inflight;
    /* the next stage's copies (of the iteration whose loop value is in register `ahead`, into
     * stage `write`), not yet issued. A consumer that reads shared memory (lower_mma) calls
     * pipe_issue_pending once its first fragments are loaded, so that the copies' address
     * arithmetic overlaps the first mma instead of delaying them; the loop issues them after
     * the body otherwise. */
    bool copies_pending;
    int ahead; Opnd write;
    /* an fp8 wgmma product kept in flight (wg_keep): each iteration's chain sums into `part`
     * (zeroed before the loop), which the next iteration, after its wait, adds to `acc`, and the
     * loop's exit the last (lower_wgmma.c, wgmma_promotes) */
    bool promote;
    Tile part, acc;
    /* a producer warp issues the copies (lower_warpspec.c): the register tensor of the stages'
       empty barriers, and the predicate of each consumer warp's lane 0 that arrives on them */
    bool ws;
    int empty, lane0;
    /* the producer's threads: a warp, or a warpgroup whose registers go to the consumers
       (setmaxnreg: consumers that need more than a warp's share leaves them) */
    int producer, consumer_regs;
    /* ... in a cluster of two blocks that may share operand windows (lower_warpspec.c): the
       block whose empty barriers a consumer warp also arrives on (the other block's when they
       share any, else its own) */
    bool cluster;
    int partner;
    int shares, done;             /* predicate: it shares any; the ring whose element 0 is `done` */
    /* one stage, each operand copied for the next iteration after its last reader in this one
       (lower_pipeline.c, "refilled"); the cp.async groups committed so far in the iteration */
    bool refill;
    int refills;
    struct PipeLoop *outer;
} PipeLoop;

typedef struct Lower {
    Arena *a;
    Func *f;
    Kernel *k;
    Program *p;
    Options *opt;
    const Target *target;      /* from opt->arch (sm_80 when none is named) */
    KernelMeta *meta;
    int threads;
    int tid;               /* %tid.x */
    int ctaid[3];
    int smem_top;          /* bytes of shared memory allocated so far (the live ones) */
    int smem_peak;         /* the most smem_top has been: the block's buffers (lower_smem.c) */
    /* memory a pipelined loop released, which the next allocation over it reuses: [lo, hi), and
       the mbarriers in it (offsets), to invalidate first; live: the mbarriers not released */
    int reuse_lo, reuse_hi;
    bool reuse_bar;        /* some of it was released without a barrier after its readers */
    int mbar_live[16], nmbar_live, mbar_dead[16], nmbar_dead;
    bool mbar_untracked;   /* more mbarriers than the arrays hold: no more releases */
    int scratch_off, scratch_size;   /* reusable scratch for reductions/layout changes */
    bool scratch_read;     /* scratch was read since the last barrier */
    bool failed;
    PipeLoop *pipe;        /* inside a pipelined loop's body: the loop (NULL elsewhere) */
    struct DeferSet *defer;  /* the reductions deferred by the loops being lowered, innermost first */
    MatmulPlan *plans;     /* every product's plan so far (matmul_plan) */
    /* limits (lower_limits.c): the statement being lowered (errors found deeper point at it),
     * the copies unrolling makes of it (1 outside unrolled loops), and whether the kernel went
     * past one of them, which ends its lowering */
    Loc loc;
    int64_t unroll_copies;
    Stmt *unrolled;        /* the outermost loop being unrolled (NULL: none), for messages */
    bool too_big, smem_over;
    /* gathered windows' row indices a pipelined loop computed before it (gather_hoist) */
    struct { Expr *index; Tile rows; } gathers[8];
    int ngathers;
    /* a pipelined loop being lowered twice, on its windows' alignment (lower_version.c): no TMA
       in the version without the facts (whose warnings say so); in the version with them
       (version_aligned) TMA maps made if-aligned, valid only where that version runs */
    bool versioning, version_aligned;
    /* a loop of this kernel has a producer warp (lower_warpspec.c): only one can */
    bool ws_done;
    /* ... whose threads, in a kernel split over K, leave through ws_tail (label) instead of
       returning: the slices' cluster barriers (split_syncs of them, lower_split.c, each met once
       by every thread of a split launch) wait for them too */
    bool ws_tail_on;
    int ws_tail, split_syncs;
    /* ... and it runs in clusters: every thread meets the other block before it leaves */
    bool ws_cluster;
    /* the loop split over blocks (lower_split.c; NULL: none), its accumulators, the grid
       dimension that counts its slices, and the label where the blocks that were not last leave */
    Stmt *split_loop;
    Sym *split_acc[4]; int split_nacc;
    int split_dim, split_exit;
    int split_lo, split_hi;    /* this block's slice of it (split_begin) */
    /* ... its slices meeting at a cluster barrier (sm_90: split_fixup's second form): the
       predicate of the warps that own their rows' sums and store them (true in every warp of an
       unsplit launch), the instruction where the rest of the kernel starts, and the ranges of it
       that run only unsplit (a TMA store's staged version, lower_tma_store.c) */
    bool split_cluster;
    int split_own, split_tail;
    int *split_regs, split_nregs;   /* the sums' registers after it */
    int split_unsplit[8][2], split_nunsplit;
} Lower;
/* lower_pipeline.c: the innermost pipelined loop's issue of its pending copies (if any left) */
void pipe_issue_pending(Lower *c);
/* The innermost pipelined loop's operand that is this matmul operand window (var NULL) or
 * fills this shared var; NULL: none. */
PipeOperand *pipe_find(Lower *c, Expr *operand, Sym *var);
/* Does the innermost pipelined loop fill shared var `var` from `window` (ahead of time)? */
bool pipe_fills(Lower *c, Sym *var, Expr *window);
/* lower_pipeline.c, for the matmul that takes the loop's barrier: */
bool pipe_take_barrier(Lower *c);       /* true once, if the loop left its barrier to the caller */
void pipe_barrier(Lower *c);            /* the loop's wait for the current stage + bar.sync */
int pipe_first_iteration(Lower *c);     /* predicate: the loop's first iteration */
int pipe_next_stage_delta(Lower *c, int stage_bytes);   /* next stage buffer - current, bytes */

PType held_ptype(ElemType t);              /* register type a value of t is held in */
PType mem_ptype(ElemType t);               /* type a value of t is loaded and stored as */
RegClass held_class(ElemType t);
Tile tile_new(Lower *c, ElemType t, Layout L);   /* fresh registers */
Tile tile_splat(Lower *c, ElemType t, Layout L, Opnd v);
int opnd_reg(Lower *c, Opnd o, PType t);   /* materialises an immediate */
Tile lower_expr(Lower *c, Expr *e, const Layout *want);
Opnd binop_slot(Lower *c, int op, ElemType t, Opnd a, Opnd b);   /* one slot; folds immediates */
Opnd cmp_slot(Lower *c, int op, ElemType t, Opnd a, Opnd b);     /* one comparison: a predicate */

/* ---- lower_mask.c */
/* A predicate register, uniform over the block, that when set says every element of the bool
 * tile e is true (-1: e is not a mask of index tiles this can bound). */
int mask_all_true(Lower *c, const Expr *e);
/* The let v is read once, in the block that declares it, outside any loop there: a where may
 * apply its mask in v's own registers. */
bool mask_value_once(Lower *c, const Sym *v);
/* The let s holds index tiles and is read once: lowered where it is read (SymInfo.at_use). */
bool let_made_at_use(Lower *c, const Stmt *s);
Tile to_layout(Lower *c, Tile v, const Layout *L);
Tile tile_transpose(Lower *c, Tile v, const Layout *want);   /* x.T of a rank-2 value */
Layout broadcast_view(const Layout *L, Shape s);
int thread_coord(Lower *c, const Layout *L, int d);   /* t_d register */
/* The thread's first row (layout_row_origin) from its t0 register */
int thread_row0(Lower *c, const Layout *L, int t0, PType pt);
int primary_pred(Lower *c, const Layout *L);          /* -1: every thread is primary */
int64_t known_multiple(Lower *c, Expr *e);            /* largest known divisor (1 if none) */
int64_t size_multiple(Lower *c, Sym *s);              /* the same of a size, from the assumes */
bool window_in_bounds(Lower *c, Expr *tensor, int d, Expr *start, int64_t width);
int smem_alloc(Lower *c, int bytes);
void scratch_begin_write(Lower *c, int bytes);        /* barrier if needed; sizes the scratch */
void scratch_end_write(Lower *c);                     /* barrier: writes visible */
int scratch_base_reg(Lower *c);                       /* u32 address of the scratch area */
/* lower_tile.c: v written to the scratch area, element (r, c) at word r * pitch + c (32-bit words,
 * i64 64-bit ones, bools 0 or 1) by the thread holding its primary copy, after the barrier
 * scratch_begin_write puts before it; returns the register holding the area's address. The
 * caller ends the write (scratch_end_write) before anyone reads it. */
int scratch_store_tile(Lower *c, const Tile *v, int pitch);

/* ---- lower_tile.c (and held_ptype, held_class, tile_new, tile_splat, opnd_reg, to_layout,
 * broadcast_view, thread_coord, primary_pred above) */
Tile scalar_of(Lower *c, ElemType t, Opnd x);   /* x in every thread: a rank-0 tile */
SymInfo *info(Lower *c, Sym *s);                 /* s's lowering state, made on first use */
/* The index in Tile.v of the slot (o0, i0, o1, i1) (outer, inner along dimensions 0 and 1), and
 * the slot's column relative to the thread's first element. */
int slot_index(const Layout *L, int o0, int i0, int o1, int i1);
int slot_col(const Layout *L, int o1, int i1);
/* [W, 1] or [1, W] as the rank-1 tile of its W elements; a rank-1 tile as [1, W] (axis 0) or
 * [W, 1] (axis 1): the same slots in the same threads where the layout allows */
Tile tile_drop_unit_axis(Lower *c, Tile v);
Tile tile_expand(Lower *c, Tile v, int axis);
/* A constant slice of v, in 2-D terms (start a, width w per dimension; a rank-1 tile is [1, W]),
 * of v's rank; v's elements in row-major order as a tile of shape s. want: a preferred layout
 * (NULL: none), used where the value moves through shared memory. */
Tile tile_slice(Lower *c, Tile v, const int a[2], const int w[2], const Layout *want);
Tile tile_reshape(Lower *c, Tile v, Shape s, const Layout *want);
/* expand_dims(arange(W), 1) in L, a [W, 1] layout: each slot its own row index */
Tile tile_row_iota(Lower *c, const Layout *L);
/* ---- lower_smem.c: smem_alloc and scratch_* above, smem_alloc_aligned below; what a block or
 * a loop allocated, released at its end for later allocations to reuse (quiet: every thread is
 * past a barrier after its last access, as at a pipelined loop's end; else the reuse waits at
 * one); mbarriers (8 bytes each, at off), invalidated before their memory is */
void smem_release(Lower *c, int mark, bool quiet);
void smem_note_mbarriers(Lower *c, int off, int n);
/* The mbarriers noted since `live` were (live ones: the first `live` stay) invalidated now, on
 * this path, with the fence and barrier a reuse takes: for one version of a loop, whose
 * mbarriers the other version never made (lower_version.c). */
void smem_retire_mbarriers(Lower *c, int live);
/* ---- lower_expr.c (and lower_expr above): what statements and parameters share of it */
bool is_imm(Opnd o);                        /* an integer or float immediate */
/* v as a value of integer type t, wrapped as the hardware computes */
int64_t wrap_int(ElemType t, uint64_t v);
Opnd cast_slot(Lower *c, ElemType to, ElemType from, Opnd x);   /* one slot of type from as type to */

/* ---- lower_math.c */
Opnd round_f32(Lower *c, CvtRound rnd, Opnd x);      /* cvt.rni/rmi/rpi.f32.f32 */
Opnd math_seq_slot(Lower *c, Builtin b, Opnd x);     /* erf, log1p, expm1 of one f32 slot */
Opnd pow_slot(Lower *c, Opnd x, Opnd y);
Tile lower_rand(Lower *c, Expr *e, const Layout *want);   /* rand, randn, randint */
/* ---- lower_stmt.c (and lower_stmt below): for lower_kernel */
void lower_block(Lower *c, Stmt *b);
/* dst op= v (op '=', '+', '-', '*'), v moved to dst's layout first */
void assign_tile(Lower *c, Tile *dst, Tile v, int op);
void alloc_var_infos(Lower *c, Stmt *s);    /* a SymInfo for every var, for mark_matmul_vars */
void mark_matmul_vars(Lower *c, Stmt *s);   /* vars accumulated by `@` take the product's layout */
/* Calls fn on every statement of s that is not a block, a loop or an if, in program order. */
void each_simple_stmt(Lower *c, Stmt *s, void (*fn)(Lower *c, Stmt *s));
/* ---- layout_plan.c: for lower_kernel, after mark_matmul_vars */
/* the layouts of lets and vars from what feeds them and how they are used (SymInfo.hint) */
void plan_layouts(Lower *c, Stmt *body);
/* ---- lower_params.c (and extent_rpn below): for lower_kernel */
void load_params(Lower *c);   /* KernelMeta's arguments; parameters, %tid, %ctaid into registers */
const char *rpn_text(Lower *c, Expr *e, const char *what);   /* a grid() or assume() as RPN */

/* lower_mem.c */
Tile load_window(Lower *c, Expr *e, const Layout *want);
Tile load_window_any_layout(Lower *c, Expr *e);   /* a window for a consumer of any layout */
/* The layout for `target = rhs` where rhs only loads windows and some load is wider than the store */
bool store_stream_layout(Lower *c, Expr *target, Expr *rhs, Layout *out);
/* A value of type t as loaded from memory (f16/bf16 bits, bool byte) -> its held register form. */
Opnd widen_held(Lower *c, ElemType t, int r);
/* fp8 (lower_expr.c): the f32 register of the fp8 value t in the low byte of 16-bit register h,
 * exactly; the 16-bit register whose low byte is f32 register x rounded to t (to nearest even,
 * saturating to the largest finite value, NaN kept). sm_89 on: an error before. */
int f8_widen(Lower *c, ElemType t, int h);
int f8_narrow(Lower *c, ElemType t, int x);
void store_window(Lower *c, Expr *target, Tile v);
void atomic_window(Lower *c, Expr *target, Tile v, int op);
Tile load_shared_var(Lower *c, Sym *s, const Layout *want);
void store_shared_var(Lower *c, Sym *s, Tile v);
/* lower_reduce.c */
Tile reduce_tile(Lower *c, Tile v, Builtin b, int axis);
/* n values combined by b as a balanced tree: depth log2(n), not n - 1 */
Opnd reduce_slots(Lower *c, Builtin b, PType t, Opnd *v, int n);
/* A whole-tile reduction in its two halves: the thread's own slots (replicated threads give
 * the identity), then across the block's threads (uniform result; a barrier and scratch). */
Opnd reduce_in_thread(Lower *c, Tile v, Builtin b);
Opnd reduce_across(Lower *c, Opnd acc, Builtin b, PType t);
Opnd reduce_identity(Builtin b, PType t);
/* lower_defer.c: `v += sum(tile)` in a loop whose body reads v nowhere else keeps a per-thread
 * partial through the loop and reduces across threads once after it. */
typedef struct DeferSet DeferSet;
void defer_begin(Lower *c, Stmt *loop, DeferSet **out);
bool defer_assign(Lower *c, Stmt *s);     /* lowered here: a deferred statement */
void defer_end(Lower *c, DeferSet *d);
/* lower_matmul.c: `@` operands live in shared memory as row-major matrices of their own element
 * type (f32, f16, bf16); base is a register holding the shared address of element (0, 0). */
/* stage_bytes: the distance between a pipelined loop's stage buffers of this operand (0: not one) */
/* trans: stored transposed, element (r, c) at row c of the buffer (a column-major operand a
 * pipelined loop copied in memory order: PipeOperand.trans); pitch is then the buffer's */
typedef struct { int base; int pitch; ElemType type; bool tf32; int rows, cols; int swz; int stage_bytes; bool trans; } SmemMatrix;
void lower_matmul(Lower *c, Tile *acc, Expr *mm, bool accumulate);

/* matmul_plan.c: how one `@` is computed, chosen once (the file's comment says how). */
typedef enum {
    MM_FFMA, MM_MMA_SYNC, MM_WGMMA, MM_WGMMA_TF32, MM_MMA_SWAPPED, MM_WGMMA_RA, MM_WGMMA_TF32_RA,
    MM_WGMMA_TF32_XB
} MatmulPath;
/* Where an operand comes from. From MS_STAGE on a pipelined loop brought it; from MS_CPASYNC on
 * in the layout the path asked for (MatmulPathRow.swizzle). */
typedef enum {
    MS_REGS,      /* a value (registers, a window loaded here): the matmul stores it, unswizzled */
    MS_SHARED,    /* a shared var, in its own layout */
    MS_STAGE,     /* a shared var a pipelined loop fills: its stage buffer, in the var's layout */
    MS_CPASYNC,   /* a window a pipelined loop copies by cp.async */
    MS_TMA,       /* the same by TMA (lower_tma.c) */
} MatmulSource;
/* One row of matmul_plan.c's table. Side masks: bit 0 operand A, bit 1 operand B (matmul_side). */
typedef struct {
    MatmulPath path;
    const char *name;
    /* may the product p (its type, shape and operand layouts) take it on c's target and block;
       NULL: only ever a fallback */
    bool (*fits)(Lower *c, const MatmulPlan *p);
    Layout (*layout)(Lower *c, const MatmulPlan *p, Shape s);     /* the accumulator's */
    /* the layout (SWZ_*) a pipelined loop stores operand `side` of type t in */
    int (*swizzle)(Lower *c, const MatmulPlan *p, ElemType t, int side);
    int (*pitch)(ElemType t, int cols);   /* row pitch, elements, of an operand staged unswizzled */
    unsigned needs_async;   /* operands that must come by cp.async or TMA, else ... */
    MatmulPath fallback;    /* ... this path, with the same accumulator layout, computes */
    unsigned tma;           /* operands TMA may bring (sm_90a, lower_tma.c) */
    unsigned proxy;         /* async operands the tensor cores read through the async proxy */
    unsigned round_tf32;    /* operands read as tf32 from shared memory: rounded after cp.async */
    /* operands copied as they lie (SWZ_BLK4) and turned in place into K-major slabs after
       their copies, rounded to tf32 on the way (lower_transpose.c); the path reads the slab */
    unsigned xpose;
    bool tensor_cores;      /* loads fragments: may take a pipelined loop's barrier and copies */
    bool inflight;          /* keeps its wgmma group in flight into the next iteration */
    /* may a pipelined loop copy operand `side`, when it is transposed (MatmulPlan.trans), in
       memory order for this path to read transposed (NULL: never) */
    bool (*reads_trans)(const MatmulPlan *p, int side);
    void (*lower)(Lower *c, Tile *acc, const MatmulPlan *p, SmemMatrix a, SmemMatrix b);
} MatmulPathRow;
struct MatmulPlan {
    Expr *mm;                   /* the product (NULL for a plan made by matmul_choose alone) */
    const MatmulPathRow *row;   /* the path */
    const MatmulPathRow *wanted;   /* the row first chosen, before any fallback (for the report) */
    ElemType type; bool tf32;   /* A as stored (matmul_stored_type); under tf32() */
    int M, N, K;
    Layout acc;                 /* the accumulator's layout: fixed once chosen */
    MatmulSource src[2];        /* where A and B come from (MS_REGS until known) */
    /* A or B is a window contiguous along its first dimension (Expr.twin: a column-major view or
     * a .T): in memory its rows are A's columns (M-major A) or B's (K-major B) */
    bool trans[2];
    bool a_value;               /* A is a value (no window, no shared var): in registers first */
    MatmulPlan *next;           /* Lower.plans */
};
/* The plan of `@` expression mm, chosen on first use. */
MatmulPlan *matmul_plan(Lower *c, Expr *mm);
/* Chooses a plan for operands of type t of an s (M x N) x K product whose operands are transposed
 * as trans says (NULL: neither), A a value or not; the unit tests call it. */
void matmul_choose(Lower *c, MatmulPlan *p, ElemType t, bool tf32, Shape s, int K, const bool *trans, bool a_value);
/* Why p's path is not a faster one, in the report's words: a fallback (the operands its first
 * choice needs were not copied by a pipelined loop), or no tensor-core instruction for the
 * product; NULL when there is nothing to say. */
const char *matmul_plan_why(Lower *c, const MatmulPlan *p);
/* May a pipelined loop copy gathered operand x (E_INDEX with an index tile) like a window? */
bool matmul_gather_copies(const Expr *x);
/* Will a pipelined loop copy operand `side` of p in memory order (transposed)? */
bool matmul_reads_trans(const MatmulPlan *p, int side);
/* Records where the operands come from; a path whose needs they do not meet gives way to its
 * fallback. */
void matmul_set_sources(MatmulPlan *p, MatmulSource a, MatmulSource b);
const MatmulPathRow *matmul_path_row(MatmulPath path);
int matmul_swizzle(Lower *c, const MatmulPlan *p, int side, ElemType t);
/* The row pitch (elements) of operand `side` a pipelined loop stores unswizzled, cols per row. */
int matmul_stage_pitch(const MatmulPlan *p, int side, ElemType t, int cols);
bool matmul_side(unsigned mask, int side);
/* The operand as stored: strips a tf32() cast (setting *tf32); the type it is stored as. */
Expr *matmul_operand(Expr *e, bool *tf32);
ElemType matmul_stored_type(Expr *e);
/* lower_ffma.c: the SIMT path */
void lower_ffma(Lower *c, Tile *acc, const MatmulPlan *p, SmemMatrix a, SmemMatrix b);
/* lower_mma.c: tensor cores (mma.sync, sm_80+). layout_mma is the accumulator layout for
 * operands of type t (f32 meaning tf32). */
/* narrow_b: B is read one n8 tile at a time (a transposed tf32 B: its rows 8 apart, not 4, keep the
 * 32-bit fragment loads off each other's banks) */
Layout layout_mma(Shape s, int threads, ElemType t, bool wgmma, bool narrow_b);
bool mma_supported(Lower *c, ElemType t, bool tf32, int M, int N, int K);
int mma_pitch(ElemType t, int cols);
void lower_mma(Lower *c, Tile *acc, SmemMatrix a, SmemMatrix b);
/* A's fragments as mma.sync reads them, for wgmma's register-A form: for accumulator layout L
 * (one warp column), a in any layout lower_mma reads A in; mma_a_load writes the fragments of
 * k step k into a[], four per m16 tile (tile j: rows 2 j T0 + 8 w + g and + T0), tf32 rounded to
 * nearest, ties to even (wgmma's rounding). */
typedef struct Frags Frags;
Frags *mma_a_frags(Lower *c, const Layout *L, SmemMatrix a);
void mma_a_load(Lower *c, Frags *F, int k, int *a);
/* The swizzle (SWZ_*) mma.sync reads operand `side` (0: A, 1: B) of type t of an M x N x K
 * matmul in when it arrives by cp.async; SWZ_NONE: the padded mma_pitch. */
int mma_sync_swizzle(Lower *c, ElemType t, int side, int M, int N, int K);
/* lower_wgmma.c: wgmma (sm_90a) for f16/bf16 matmuls whose operands a pipelined loop brings in
 * the SWZ_SLAB layouts. wgmma_shape: may an M x N x K product of type t take that path (its
 * accumulator then has layout_mma(..., true): one warp column, warpgroups stacked along M). */
bool wgmma_shape(Lower *c, ElemType t, bool tf32, int M, int N, int K, bool a_slab, bool b_trans);
/* tf32 with B K-major (transposed): both operands from shared memory, not swapped (m64nNk8). */
bool wgmma_shape_tf32_kmajor(Lower *c, int M, int N, int K);
/* Why a 16-bit M x N x K product of this kernel takes no wgmma, in the report's words; NULL when
 * its shape and block would take one (then the operands' layouts are why). */
const char *wgmma_shape_why(Lower *c, int M, int N, int K);
bool wgmma_promotes(ElemType t);            /* fp8: each product summed apart, then added */
void lower_wgmma(Lower *c, Tile *acc, SmemMatrix a, SmemMatrix b);
/* The same with A a value in registers (an `@` operand that is no window: the f16 of another
 * product, say) in wgmma_value_layout, the layout a wgmma accumulator of A's shape has: its
 * fragments are its own registers, packed in pairs, each rounded to nearest even on the way (so
 * av may hold f32 values not yet rounded to its type: the f32 operand of an f16() cast). */
Layout wgmma_value_layout(Lower *c, ElemType t, int M, int K);
void lower_wgmma_value(Lower *c, Tile *acc, const Tile *av, SmemMatrix b);
/* The WGACC after a WGMMA: four accumulator slots of acc, in the D fragment's order. */
void wgmma_acc_group(Func *f, const Tile *acc, const int slots[4]);
/* WGHOLD instructions keeping regs[0..n) live up to here (after the wait for the wgmma reading them). */
void wg_hold(Func *f, const int *regs, int n);
/* The 64-bit matrix descriptor of a tile at shared address base in slabs of `width` bytes (128 or
 * 64) with that swizzle (lbo in bytes). */
int wgmma_descriptor(Lower *c, int base, int lbo, int width);
/* lower_mma_swap.c: tf32 on sm_90a as C^T = B^T A^T (wgmma with B^T from registers, or mma.sync
 * the same way); layout_mma_swapped is its accumulator layout (lo_t0_low). */
Layout layout_mma_swapped(int M, int N, int threads);
void lower_mma_swapped(Lower *c, Tile *acc, SmemMatrix a, SmemMatrix b, bool wgmma);
/* lower_mma.c, shared with lower_mma_swap.c: the rounding of an f32 operand register to tf32 for
 * the tensor cores (which truncate), and one mma.sync (dst = accumulator slots cs of acc). */
int round_tf32_operand(Lower *c, int v);   /* mma.sync's: ties away */
int round_tf32_value(Lower *c, int v);   /* tf32() for FFMA: cvt.rna.tf32.f32 */
int round_tf32_even(Lower *c, int v);    /* wgmma's: ties to even (cvt.rn.tf32.f32, sm_90) */
void round_tf32_even_to(Lower *c, int dst, int v);
int smem_ld_b32(Lower *c, int addr, int64_t off);      /* one 32-bit word from shared memory */
void round_tf32_operand_to(Lower *c, int dst, int v);
PType mma_operand_ptype(ElemType t);        /* PT_F16 .. PT_E5M2; PT_B32 for tf32 */
void mma_sync(Lower *c, PType ta, PType tb, Tile *acc, const int *cs, const int *a, const int *b);
/* swizzle.c: unpadded operand tiles whose 16-byte units are XOR-permuted within 128-byte lines
 * (SmemMatrix.swz; the pitch is then the row's own width). SWZ_LDMATRIX spreads any 8 rows of
 * one 16-byte column (ldmatrix); SWZ_QUAD spreads 4 rows of two adjacent columns (tf32 B);
 * SWZ_BLK4 spreads 8 quads of rows at one column (the transposing copy's staging). */
/* SWZ_SLAB is the 128-byte swizzle of wgmma's matrix descriptors, in column slabs of 128 bytes;
 * SWZ_SLAB64 the 64-byte one, in slabs of 64 (a K-major 16-bit operand whose k step is 32).
 * rows: the tile's rows. */
/* SWZ_TURN is no swizzle but the tile turned around by its copies: its columns are the stage's
 * rows, padded by 16 bytes (the FFMA path's f32 A and B^T, read as A^T and B: matmul_plan.c,
 * ffma_turns, says why). */
/* SWZ_SLAB_K8: SWZ_SLAB with each 8 rows stored in the order 0 4 1 5 2 6 3 7 (the swapped tf32
 * product's B, brought by TMA: swizzle.c says why). */
enum { SWZ_NONE, SWZ_LDMATRIX, SWZ_QUAD, SWZ_SLAB, SWZ_BLK4, SWZ_SLAB64, SWZ_TURN, SWZ_SLAB_K8 };
bool swz_applies(int kind, int row_bytes);
/* The row bytes of a slab layout (SWZ_SLAB and SWZ_SLAB_K8 128, SWZ_SLAB64 64), 0 for the other kinds. */
int swz_slab_bytes(int kind);
int64_t swz_offset(int kind, int row_bytes, int rows, int64_t row, int64_t byte_col);
int swz_offset_ir(Lower *c, int kind, int row, int byte_col, bool col_aligned16, int row_bytes, int rows);
/* The constant byte offset from the piece at (row, byte col) to the one rd rows and cdb bytes
 * further, for any row: false when there is none. */
bool swz_delta(int kind, int row_bytes, int rows, int64_t rd, int64_t cdb, int64_t *delta);
/* The address unit_delta 16-byte units along the row from the unit at addr: returns the register
 * (addr or addr ^ constant, made once per delta mod 8 in xored[], initially all -1), *imm the
 * constant to add. Valid when unit_delta's bits lie above the addressed chunk's own bits. */
int swz_step(Lower *c, int addr, int64_t unit_delta, int xored[8], int64_t *imm);
/* lower_block_order.c: a large 2-D grid of product tiles walked 8 row blocks at a time
 * (c->ctaid[0..1] renumbered, after the special registers are read, where the kernel is one) */
void block_order(Lower *c);

/* lower_split.c: a product's K loop split over blocks where the grid is short of the GPU.
 * split_plan: whether the kernel is one (before lowering its body); split_begin: the block's
 * slice, before the loop; split_bounds: the loop's bounds replaced by it (called by every
 * lowering of a loop with run-time bounds);
 * split_fixup: after it, the partial sums added in the last block; split_exit: the others'
 * way out, just before the kernel's return. */
void split_plan(Lower *c);
void split_begin(Lower *c, const Stmt *s);
void split_bounds(Lower *c, const Stmt *s, Opnd *lo, Opnd *hi);
void split_fixup(Lower *c, const Stmt *s);
void split_exit(Lower *c);
/* ... and for the rest of the kernel after a split loop whose slices meet in a cluster: whether
 * it is being lowered (split_in_tail), the test a version only an unsplit launch may take adds
 * (split_unsplit_test: p and S = 1, p -1 for none), and that version's instructions
 * [from, to) (split_unsplit_range), which keep their stores as they are. */
bool split_in_tail(const Lower *c);
/* the launch's slices of a tile (the split dimension's %nctaid: 1 unsplit), a register */
int split_slices(Lower *c);
int split_unsplit_test(Lower *c, int p);
void split_unsplit_range(Lower *c, int from, int to);
/* lower_transpose.c: an f32 tile copied as it lies into SWZ_BLK4 staging (in its copies' layout:
 * false where the shape has none) and turned in place into the K-major slab tf32 wgmma reads,
 * rounded to tf32, after the thread's wait for its copies and before the barrier that
 * publishes the stage (the caller's). */
bool xpose_layout(Shape s, int threads, Layout *out);
void xpose_stage_tf32(Lower *c, Shape s, int base);
/* lower_mem.c: staging into shared memory */
void store_tile_smem(Lower *c, Tile v, int base, int pitch, ElemType t);
/* One run of vm elements (vals) of type t to shared memory at addr + off, where guard holds. */
void store_smem_run(Lower *c, ElemType t, int addr, int64_t off, int vm, int guard, Opnd *vals);
void copy_window_async(Lower *c, Expr *win, int base, int pitch, int swz, int guard);
/* A gathered window's row indices, in its copies' layout, computed now for the copies that
 * follow (Lower.gathers); the caller sets ngathers back when they are done. */
void gather_hoist(Lower *c, Expr *win, int pitch);
/* Rounds a window copy_window_async brought to base to tf32 in place (each thread the pieces it
 * copied, after its wait for them, before the barrier that publishes them). */
void round_window_tf32(Lower *c, Expr *win, int base, int pitch, int swz);
/* The bytes per cp.async piece copy_window_async would move win in: below 4, it cannot. */
int async_piece_bytes(Lower *c, Expr *win, int pitch);
/* lower_tma.c: operands a pipelined loop moves with TMA (sm_90a) instead of cp.async.
 * tma_choose marks those that can (PipeOperand.tmap, a //@tmap map each) and says whether any
 * did; tma_setup, before the loop, makes the issuing thread's predicate (PipeLoop.leader), the
 * stages' barriers and the maps' addresses, and the phase register (PipeLoop.phase). tma_issue copies
 * one stage (bar: its barrier) where valid; tma_wait waits for the stage's phase. */
bool tma_choose(Lower *c, PipeLoop *pl);
void tma_setup(Lower *c, PipeLoop *pl);
void tma_issue(Lower *c, const PipeLoop *pl, PipeOperand *p, int base, int bar, int valid);
void tma_wait(Lower *c, int bar, int phase);
/* the boxes (copies) of one stage of TMA operand p */
int tma_boxes(const PipeOperand *p);
/* One mbarrier a stage of loop pl, 8 bytes each, initialised by the loop's leader with `count`
 * arrivals, fenced and published by a barrier: the register tensor of their addresses. */
int tma_barrier_ring(Lower *c, const PipeLoop *pl, const char *name, int count);
/* The map (a //@tmap line) of window win, boxes of box_rows x box_cols elements of type dtype in
 * the swizzle of `swizzle` bytes (128; 64 for SWZ_SLAB64's rows): its index (-1: the kernel has as many as the launcher takes); its
 * generic address in the kernel. if_aligned: made only where the launch is aligned, the kernel
 * testing that before it uses the map (tilec.h, TensorMapMeta). */
int tma_map(Lower *c, Expr *win, const char *dtype, int swizzle, int box_rows, int box_cols, bool if_aligned);
/* The same, rows8: each 8 rows land in shared memory in the order 0 4 1 5 2 6 3 7
 * (TensorMapMeta.rows8, SWZ_SLAB_K8). */
int tma_map_rows(Lower *c, Expr *win, const char *dtype, int swizzle, int box_rows, int box_cols, bool if_aligned,
                 bool rows8);
/* May window win come by such a map, given its tensor's row count a multiple of 8? */
bool tma_rows8_window(Lower *c, Expr *win);
/* Whether any map can describe window win (rows `pitch` elements apart in shared memory), and
 * the registers of its box coordinates (row, column, then the outer indices in map order). */
bool tma_window_ok(Lower *c, Expr *win, int pitch);
/* The same but for the rows' alignment: what a map needs of the window's shape and strides. */
bool tma_window_shape_ok(Expr *win);
void tma_window_coords(Lower *c, Expr *win, int *row, int *col, int *outer);
int tma_map_address(Lower *c, int tmap);

/* ---- lower_tma_store.c: `target = v` staged in shared memory and stored by TMA (sm_90a), where
 * that pays and is allowed. tma_store_stage, before v is computed, says whether the target may be
 * and allocates the staging memory; tma_store then stores v so, or (false) releases that memory
 * and leaves the store to store_window. */
typedef struct {
    int mark, off;
    /* versioned: size % mult == 0 and the tensor's pointer 16-byte aligned at launch, tested by
       the kernel, choose the TMA store; otherwise the registers store (NULL: no test) */
    Sym *size;
    int64_t mult;
} TmaStage;
bool tma_store_stage(Lower *c, Expr *target, Expr *value, TmaStage *st);
bool tma_store(Lower *c, Expr *target, Tile v, const TmaStage *st);

/* ---- lower_warpspec.c: a producer warp for a pipelined loop's TMA copies (sm_90a). ws_choose
 * says whether loop pl may have one (after tma_choose); ws_setup, after tma_setup, makes the empty
 * barriers and grows the block by the producer warp; ws_producer, before the loop (lo: the loop's
 * first value), emits the producer's loop and leaves the consumers' code to follow; ws_release,
 * after the body's wgmma wait, hands the previous iteration's stage back. */
bool ws_choose(Lower *c, PipeLoop *pl);
void ws_setup(Lower *c, PipeLoop *pl);
void ws_producer(Lower *c, PipeLoop *pl, int lo, int64_t step);
void ws_release(Lower *c, const PipeLoop *pl);
/* At the start of a versioned loop's other version (lower_version.c), when the first took a
 * producer: its threads (tid >= consumers) leave, as they do after the producer's loop, and a
 * producer warpgroup's registers go to the consumers here too. */
void ws_other_version(Lower *c, int consumers);
/* After the kernel's last return: the producer's threads' way out of a kernel split over K. */
void ws_tail_emit(Lower *c);
/* after the loop's last wgmma wait: in a cluster, the two blocks' word that each has all the
 * other sent it */
void ws_finish(Lower *c, const PipeLoop *pl);
/* the copies of loop pl's operands for the iteration whose loop value is in register v, into
 * stage `stage` (lower_pipeline.c) */
void pipe_issue_copies(Lower *c, const PipeLoop *pl, int v, Opnd stage);
/* the loop variable of `loop` takes register reg's value; does e mention s (lower_pipeline.c) */
void pipe_set_loop_value(Lower *c, Stmt *loop, int reg);
bool pipe_uses_sym(Expr *e, Sym *s);
/* Element idx of register tensor `array`, in a new register (lower_pipeline.c) */
int pipe_array_get(Func *f, int array, Opnd idx);
/* stage + 1 mod B into register stage; a wrap flips register phase (phase < 0: none) */
void pipe_advance(Func *f, int stage, int phase, int B);
/* lower_limits.c: the trips of a constant loop that unrolls inside `copies` unrolled copies
 * (-1: it stays a loop); the instruction limit before and after lowering a statement (false
 * before: the statement would take the kernel past it, reported, and is not lowered). */
int64_t unroll_trips(const Stmt *s, int64_t copies);
bool lower_budget_before(Lower *c, Stmt *s);
void lower_budget_after(Lower *c, Stmt *s);
/* lower_params.c: an extent (a size symbol or constant) as launch-time RPN */
const char *extent_rpn(Lower *c, Extent e);
/* lower_pipeline.c */
bool lower_pipelined_loop(Lower *c, Stmt *loop);
/* The windows pipelined loop `loop` would copy (a transposed operand's twin), at most cap, and
 * the multiple of its rows each one's TMA map would need (SWZ_SLAB_K8's 8; else 1). */
int pipe_windows(Lower *c, Stmt *loop, Expr **out, int *rows_mult, int cap);
/* lower_version.c: a pipelined loop lowered twice, with and without the facts that make its
 * windows' rows 16-byte aligned, behind a test of them at launch (false: not needed) */
bool lower_versioned_loop(Lower *c, Stmt *loop);
/* The size whose multiples of n elements would make window w's rows 16-byte aligned (its row
 * length or stride), or NULL; and `size % mult == 0` added to the kernel's facts until
 * assume_restore, for lowering one version of something (lower_tma_store.c too). */
Sym *window_row_size(Lower *c, Expr *w, int64_t n);
/* The sizes the facts would need for window w's rows to move in pieces of n elements and do
 * not give (at most 2: the row distance, and with strides of its own the row length), in out. */
int window_row_facts(Lower *c, Expr *w, int64_t n, Sym **out);
typedef struct { Stmt **assumes; int n; } AssumeMark;
AssumeMark assume_facts(Lower *c, Sym *size, int64_t mult);
void assume_restore(Lower *c, AssumeMark m);
/* p (-1: none yet) and, on the launch's values, size % mult == 0 (size given) or tensor's
 * pointer 16-byte aligned: one uniform predicate, the versions' test */
int alignment_holds(Lower *c, int p, Sym *size, int64_t mult, Sym *tensor);
/* lower_stmt.c: a for statement (pipelined, unrolled or a loop) */
void lower_for(Lower *c, Stmt *s);
int pipe_buffer(Lower *c, Expr *operand, Sym *var);
void lower_stmt(Lower *c, Stmt *s);
/* lower_print.c: a print statement */
void lower_print(Lower *c, Stmt *s);
int smem_base_reg(Lower *c, int off);
int smem_alloc_aligned(Lower *c, int bytes, int align);   /* align: a power of two >= 128 */

#endif
