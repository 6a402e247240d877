/* tilec.h: the compiler's shared header, a section per source file. Lowering's internals
 * (layouts, tiles, the lowering state) are in lower.h.
 *
 * Data flow (compile.c): read -> lex/parse (AST) -> check (typed AST) -> lower (thread IR)
 * -> passes -> regalloc -> emit (PTX text in memory) -> write / ptxas.
 */
#ifndef TILEC_H
#define TILEC_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TILEC_VERSION "0.1.0"

/* What libtilert accepts in a module's metadata: one definition for the compiler and the runtime. */
#include "../runtime/tilert_limits.h"
#include "ops.h"
#include "builtins.h"

/* ---------------------------------------------------------------- limits
 *
 * Where a program stops being meaningful, each refused at its source before the work it would
 * take (docs/language.md, "Limits"; docs/internals.md, "Limits"). No kernel worth running comes
 * near one; they exist so that every input gets an answer in well under a second and every size
 * the compiler computes fits its integers. */
enum {
    /* Elements of one tile value per thread of the block: 16 times the registers a thread can
     * have. Bounds every layout's slot count, so sizes in elements stay below 2^22. */
    MAX_TILE_PER_THREAD = 4096,
    /* Shared memory of one block: the most any GPU offers (227 KB on sm_90). */
    MAX_SMEM_BYTES = 232448,
    /* Copies of a statement that unrolling nested constant loops may make; past it the inner
     * loops stay loops. */
    MAX_UNROLL_COPIES = 64,
    /* Thread-level instructions of one kernel, after unrolling: the largest example has under
     * 2000. */
    MAX_KERNEL_INS = 1 << 17,
    /* Bytes of an assume's source text kept for the launcher's message. */
    MAX_ASSUME_TEXT = 1024,
};

/* ---------------------------------------------------------------- util.c */

/* Memory by lifetime: everything of one compilation lives in one arena. */
typedef struct Arena Arena;
Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t n);          /* zeroed, 16-byte aligned */
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...);

/* Growable array of T: struct { T *v; int n, cap; }. Heap-backed (realloc); free with vec_free. */
#define Vec(T) struct { T *v; int n, cap; }
#define vec_push(vec, x) \
    (vec_grow_((void **)&(vec)->v, &(vec)->cap, (vec)->n + 1, sizeof *(vec)->v), \
     (vec)->v[(vec)->n++] = (x))
#define vec_free(vec) (free((vec)->v), (vec)->v = NULL, (vec)->n = (vec)->cap = 0)
void vec_grow_(void **v, int *cap, int need, size_t elem);

/* Names to pointers, hashed (open addressing), so that a lookup costs about the same among 10
 * names or 100000. Heap-backed; keys are not copied (they live in the arena or the source).
 * map_get gives NULL for a missing name; map_put replaces; map_del removes. */
typedef struct { const char *key; void *val; size_t hash; } MapEntry;
typedef struct { MapEntry *e; size_t n, cap; } Map;
void *map_get(const Map *m, const char *key);
void map_put(Map *m, const char *key, void *val);
void map_del(Map *m, const char *key);
void map_free(Map *m);

/* Growable text buffer: all output is built in memory first. */
typedef struct { char *s; size_t len, cap; } Buf;
void buf_printf(Buf *b, const char *fmt, ...);
void buf_puts(Buf *b, const char *s);
void buf_add(Buf *b, const void *data, size_t n);   /* raw bytes; the text stays NUL-terminated */
void buf_free(Buf *b);
/* A whole file of at most max bytes, NUL-terminated, in the heap; NULL: an error was said. */
char *read_file_max(const char *path, size_t *len, size_t max);

/* Source locations. line and col are 1-based; col counts bytes. */
typedef struct { int line, col; } Loc;

/* Diagnostics: user errors carry a location; printed as
 *   file:line:col: error: message
 *   <source line>
 *   <spaces>^
 * Errors are collected (capped at MAX_ERRORS, then one "too many errors" line). */
enum { MAX_ERRORS = 20 };
typedef struct {
    const char *file;      /* name shown in messages */
    const char *src;       /* whole file, NUL-terminated */
    size_t len;
    int nerrors, nwarnings;
    int nbugs;             /* of the errors, those that are compiler bugs (race_check.c, ir_verify.c) */
    bool capped;           /* stop collecting: the cap was hit */
    FILE *out;             /* where messages go; NULL: stderr */
    bool no_warnings;      /* -w: warnings are counted, not printed (kept across diag_reset) */
    Buf *capture;          /* non-NULL: messages are kept here instead (a trial compilation) */
} Diag;
extern Diag diag;          /* one compilation at a time */
/* Starts a compilation's diagnostics: counts cleared, the source set; out is kept. */
void diag_reset(const char *file, const char *src, size_t len);
void error_at(Loc loc, const char *fmt, ...);
void warning_at(Loc loc, const char *fmt, ...);
void note_at(Loc loc, const char *fmt, ...);
/* Internal compiler bugs: print "tilec: internal error: ..." and abort. Never for user input.
 * With die_recover set, die longjmps there instead (compile_buffer: a caller compiling in its own
 * process survives a compiler bug; tilec never sets it). */
_Noreturn void die(const char *fmt, ...);
extern jmp_buf *die_recover;
/* System errors (I/O): "tilec: error: ..." without location. */
void sys_error(const char *fmt, ...);

/* ---------------------------------------------------------------- types (check.c) */

typedef enum {
    TY_NONE,               /* statements, errors */
    TY_BOOL, TY_I32, TY_U32, TY_I64, TY_F16, TY_BF16, TY_F32,
    /* storage types: loaded, stored, converted and selected, computed with only once widened */
    TY_I8, TY_U8, TY_F8E4M3, TY_F8E5M2,
    TY_TF32,               /* only as a matmul operand precision: the result of tf32(x) */
    TY_COUNT
} ElemType;
const char *type_name(ElemType t);          /* "f32" ... */
int type_size(ElemType t);                  /* bytes: bool 1, f16 2, f32 4, i64 8, tf32 4 */
bool type_is_float(ElemType t);             /* f16 bf16 f32 tf32 */
bool type_is_int(ElemType t);               /* i32 u32 i64 */
bool type_is_8bit(ElemType t);              /* i8 u8 f8e4m3 f8e5m2: storage types */
bool type_is_f8(ElemType t);                /* f8e4m3 f8e5m2 */

enum { MAX_TILE_RANK = 2, MAX_TENSOR_RANK = 4, MAX_GRID = TILERT_MAX_GRID };

/* The shape of a value: rank 0 is a scalar. Tile dims are compile-time constants. */
typedef struct { int rank; int64_t dim[MAX_TILE_RANK]; } Shape;

/* ---------------------------------------------------------------- AST (parse.y, ast.c) */

typedef struct Expr Expr;
typedef struct Stmt Stmt;
typedef struct Sym Sym;

typedef enum {
    E_INT,      /* ival */
    E_FLOAT,    /* fval (may be +-inf: the literal `inf`, `-inf` is E_UNARY(-, inf) folded by check) */
    E_BOOL,     /* ival 0/1: true, false */
    E_NAME,     /* name; check sets sym (consts are folded away into E_INT/E_FLOAT) */
    E_BLOCK,    /* block.x/y/z: ival = 0/1/2 */
    E_UNARY,    /* op ('-', '!'), a */
    E_BINARY,   /* op, a, b */
    E_CALL,     /* name, args[nargs]; check sets builtin; `axis=` sets axis (else -1) */
    E_CAST,     /* cast to type `to` of a: f32(x), f16(x), i32(x), tf32(x) ... (parsed as calls,
                   check turns calls of a type name into E_CAST) */
    E_INDEX,    /* tensor[idx...] (+ optional `else fill`): see Index */
    E_TRANSPOSE,/* a.T, a a 2-D window: check rewrites it into an E_INDEX of a transposed view */
    E_SLICE,    /* a constant slice of a local tile, t[0 +: 16, :]: check rewrites the E_INDEX into
                   it; a = the tile (E_NAME), idx = the subscripts with constant starts (ival of
                   start) and widths (width 0: a single index, the dimension dropped) */
} ExprKind;

/* Binary/unary operator codes: single chars where possible, else these. */
enum {
    OP_EQ = 256, OP_NE, OP_LE, OP_GE, OP_AND, OP_OR,  /* == != <= >= && || */
    OP_LSHIFT, OP_RSHIFT,                             /* << >> */
    OP_MATMUL = '@',
    /* + - * / % < > ! & | ^ ~ are their characters */
};

/* The built-in functions (builtins.h's rows); max(a, b) and min(a, b) become MAXIMUM and MINIMUM. */
typedef enum {
#define X(n, name, alias, lo, hi, kind) B_##n,
    BUILTINS(X)
#undef X
    B_COUNT_
} Builtin;
extern const BuiltinInfo builtin_info[B_COUNT_];

/* One subscript of E_INDEX. A window `start +: width` keeps the dimension (width constant);
 * a single index `start` drops it; an i32[W] tile of indices keeps it with width W (a gather:
 * X[rows, 0 +: D] is the rows rows[0], rows[1], ...); `:` (start NULL) is a whole dimension of a
 * local tile (E_SLICE). */
typedef struct {
    Expr *start;           /* NULL: `:` */
    Expr *width_expr;      /* NULL for a single index; check folds it into width */
    int64_t width;         /* set by check for windows and gathers; 0 for single indices */
    bool gather;           /* start is an i32[W] tile of indices: W rows, each its own (width W) */
    Loc loc;
} Index;

struct Expr {
    ExprKind kind;
    Loc loc;
    int op;                /* E_UNARY, E_BINARY */
    int64_t ival;          /* E_INT, E_BOOL, E_BLOCK */
    double fval;           /* E_FLOAT */
    const char *name;      /* E_NAME, E_CALL */
    Expr *a, *b;           /* operands (E_UNARY a; E_BINARY a, b; E_CAST a) */
    Expr **args; int nargs;/* E_CALL */
    int axis;              /* E_CALL reductions: -1 whole tile, else the axis; expand_dims, squeeze: the axis */
    Builtin builtin;       /* E_CALL, set by check */
    ElemType to;           /* E_CAST */
    /* E_INDEX: */
    Expr *base;            /* an E_NAME naming a tensor parameter */
    Index *idx; int nidx;
    Expr *fill;            /* `else fill`, NULL if absent; check folds it to a constant E_FLOAT/E_INT */
    /* E_INDEX, set by check for a 2-D window an `@` reads whose first windowed dimension is the
     * contiguous one (a column-major view, or a .T): the same window of the tensor with those two
     * dimensions swapped, whose rows are contiguous (lower_pipeline.c copies that one) */
    Expr *twin;
    /* Filled by check: */
    Sym *sym;              /* E_NAME, E_INDEX (the tensor) */
    ElemType type;         /* element type of the value */
    Shape shape;           /* rank 0 = scalar */
};

/* The subscript of E_INDEX e that gathers rows by an index tile, or -1: such an access is a
 * value to the matmuls and pipelines (its rows are not one strided block), never a window. */
static inline int index_gather_dim(const Expr *e)
{
    if (e->kind == E_INDEX)
        for (int i = 0; i < e->nidx; i++)
            if (e->idx[i].gather)
                return i;
    return -1;
}

typedef enum {
    S_BLOCK,    /* body[nbody] */
    S_LET,      /* name, decl_type (optional, TY_NONE if absent), init */
    S_VAR,      /* name, decl_type + decl_shape (optional), is_shared, init (optional) */
    S_ASSIGN,   /* lhs (E_NAME of a var, or E_INDEX of a tensor = a store), op ('=', '+', '-', '*'), rhs */
    S_FOR,      /* name (loop variable), lo, hi, step (NULL = 1), pipeline (0 = none), body */
    S_IF,       /* cond, then, els (NULL or S_BLOCK/S_IF) */
    S_ATOMIC,   /* op ('+' atomic_add, 'M' atomic_max), lhs (E_INDEX), rhs */
    S_ASSUME,   /* cond; text = the source text of the condition */
    S_PRINT,    /* print(init): shows a value; text = its source text */
} StmtKind;

struct Stmt {
    StmtKind kind;
    Loc loc;
    const char *name;
    ElemType decl_type;
    Shape decl_shape;      /* S_VAR with a written shape; rank 0 otherwise */
    Expr *decl_dims[MAX_TILE_RANK];  /* the written dims before folding (check fills decl_shape) */
    int decl_rank;         /* number of written dims, -1 if no type was written */
    bool is_shared;
    Expr *init, *lhs, *rhs, *cond, *lo, *hi, *step;
    int op;
    int pipeline;          /* S_FOR pipeline(S) after folding; 0 if absent */
    Expr *pipeline_expr;
    Stmt **body; int nbody;/* S_BLOCK */
    Stmt *then, *els;      /* S_IF; S_FOR uses then as its body (an S_BLOCK) */
    const char *text;      /* S_ASSUME: source text of cond */
    Sym *sym;              /* S_LET, S_VAR, S_FOR: the symbol declared (set by check) */
};

/* Symbols, created by check. */
typedef enum {
    SYM_CONST,     /* cval (int or float: is_float) */
    SYM_SIZE,      /* a size symbol: runtime i32 kernel argument; size_index = its position */
    SYM_TENSOR,    /* a global tensor parameter */
    SYM_SCALAR,    /* a scalar parameter */
    SYM_LET,       /* immutable local (scalar or tile) */
    SYM_VAR,       /* mutable local (scalar or tile, register or shared) */
    SYM_LOOP,      /* loop variable (i32 scalar) */
} SymKind;

/* A tensor dimension or stride: a constant or a size symbol. */
/* A tensor dimension or stride: a size symbol, a stride expression of sizes and constants
 * (check.c: stride_expr_ok), or (both NULL) the constant cval. */
typedef struct { int64_t cval; Sym *size; Expr *expr; } Extent;

struct Sym {
    SymKind kind;
    const char *name;
    Loc loc;
    ElemType type;         /* element type (tensors, scalars, locals); TY_I32 for sizes/loops */
    Shape shape;           /* locals */
    bool is_shared;        /* SYM_VAR in shared memory */
    bool is_float; int64_t ival; double fval;   /* SYM_CONST */
    int param_index;       /* SYM_TENSOR/SYM_SCALAR: position in the parameter list */
    int size_index;        /* SYM_SIZE: position among size symbols (first appearance) */
    /* SYM_TENSOR: */
    int rank;
    Extent dim[MAX_TENSOR_RANK];
    Extent stride[MAX_TENSOR_RANK];  /* in elements; default row-major contiguous: computed by check
                                        as products of later dims only when those are constants or
                                        symbols: see has_default_strides */
    bool has_default_strides;        /* true: strides not written; lowering computes
                                        stride[d] = prod(dim[d+1..]) at run time */
    /* a transposed view (check.c: swapped_view): view_of with dimensions view_d0 and view_d1
     * swapped, the same memory and argument */
    Sym *view_of; int view_d0, view_d1;
    void *lower;           /* scratch for lowering */
};

/* A parameter as written: `A: f16[M, K]` (tensor, optionally `strides(a, b)`) or `alpha: f32`. */
typedef struct {
    const char *name;
    Loc loc;
    ElemType type;
    bool is_tensor;
    int rank;
    Expr *dims[MAX_TENSOR_RANK];     /* E_NAME (size symbol or const) or constant expressions */
    Expr *strides[MAX_TENSOR_RANK];  /* NULL unless `strides(...)` written */
    bool has_strides;
    Sym *sym;                        /* set by check */
} Param;

typedef struct {
    const char *name;
    Loc loc;
    Param *params; int nparams;
    Expr *grid[MAX_GRID]; int ngrid;
    Expr *threads_expr;              /* NULL: the compiler picks (256) and reports it */
    Stmt *body;                      /* S_BLOCK */
    /* Filled by check: */
    int threads;                     /* block size */
    Sym **sizes; int nsizes;         /* size symbols in order of first appearance */
    Sym **views; int nviews;         /* transposed views of its tensors (Sym.view_of) */
    Stmt **assumes; int nassumes;    /* every S_ASSUME in the body, in order */
    Stmt *first_print;               /* the first S_PRINT in the body (NULL: it prints nothing) */
    Sym **syms; int nsyms;           /* every symbol of the kernel (parameters, sizes, views,
                                        locals): compile_arch clears their lowering state */
} Kernel;

typedef struct {
    const char *name; Loc loc; Expr *value;
    bool overridden;                 /* set by check when -D gave the value */
} ConstDecl;

typedef struct {
    ConstDecl *consts; int nconsts;
    Kernel **kernels; int nkernels;
    const char *file;                /* the source's name and text (compile_front): meta_source.c */
    const char *src; size_t len;     /* carries them in the module */
} Program;

/* A -D NAME=VALUE override from the command line. */
typedef struct { const char *name; const char *value; bool used; } Define;

/* ---------------------------------------------------------------- lex.re / parse.y */

/* Parses the whole source in diag.src. Returns NULL only if nothing could be built; syntax errors
 * are reported through error_at and counted in diag.nerrors. Never crashes; nesting is capped
 * (MAX_NESTING) with an error. */
enum { MAX_NESTING = 200 };
Program *parse_program(Arena *a);

/* ---------------------------------------------------------------- check.c */

/* Semantic checks. After a successful check (diag.nerrors == 0):
 *  - every Expr has type and shape; consts are folded (no E_NAME refers to a SYM_CONST);
 *    integer constant subexpressions are folded to E_INT;
 *  - E_CALL has builtin set (or was turned into E_CAST); reductions have axis;
 *  - E_INDEX: base->sym is a SYM_TENSOR; nidx == tensor rank; at most 2 windows; widths folded;
 *    the shape is the window widths in order; fill folded to a constant of the element type;
 *  - scalars: every rank-0 value is uniform across the block (there is no per-thread scalar);
 *  - tile dims are powers of two (layouts need it: error otherwise), threads is a multiple of 32,
 *    a power of two, at most 1024;
 *  - implicit conversions: integer literals adapt to the other operand's type; mixing f16 and f32
 *    needs a cast; broadcasting follows NumPy (trailing dims match or one is 1);
 *  - `acc += a @ b` is an S_ASSIGN with op '+' and rhs E_BINARY '@'; `@` operands are 2-D,
 *    [M,K] @ [K,N] -> [M,N], f32 result; operand types f32, tf32, f16, bf16 (both the same);
 *  - store targets: S_ASSIGN lhs E_INDEX with value shape broadcastable to the window shape;
 *  - kernel->sizes, kernel->assumes, kernel->threads filled.
 * Returns true when there were no errors. defs: -D overrides (unknown names are an error). */
bool check_program(Arena *a, Program *p, Define *defs, int ndefs);

/* ---------------------------------------------------------------- meta.c: what the runtime needs */

/* Integer expressions the runtime evaluates at launch (grid sizes, assume facts), as RPN text:
 * tokens separated by spaces: decimal integers, `aN` (the N-th kernel argument, ABI order),
 * and operators + - * / % cdiv min max == != < <= > >= && || ! neg. Evaluated in int64. */

/* Kernel argument ABI (PTX .param order, launcher order): the parameters in declaration order
 * (tensors as .u64 pointers, scalars by type: f32 -> .f32, i32 -> .s32, u32 -> .u32, i64 -> .s64,
 * f16/bf16 -> .b16, bool -> .u32), then every size symbol as .s32, in first-appearance order. */
typedef enum { ARG_PTR, ARG_SIZE, ARG_SCALAR } ArgKind;
typedef struct {
    const char *name;
    ArgKind kind;
    ElemType type;         /* element type for pointers, the scalar's type, TY_I32 for sizes */
    int align;             /* ARG_PTR: required byte alignment checked at launch (16 when the
                              kernel uses vector accesses on it, else the element size) */
} KernelArg;

/* A TMA tensor map the launcher builds (cuTensorMapEncodeTiled) from a pointer argument and
 * passes by value, after every argument, as `.param .align 64 .b8 NAME_param_{nargs + i}[128]`:
 * the row-major rows x cols tensor (rows pitch elements apart) at argument `arg`, copied in boxes
 * of box_rows x box_cols elements, swizzle the TMA swizzle in bytes (0, 32, 64, 128). dtype
 * "tf32" makes the copy round f32 to tf32 (to nearest, ties to even) on its way into shared
 * memory. A tensor of rank 3 to 5 (batch, head) has its outer dimensions too, innermost first,
 * each an extent and a stride in elements; a box is one element deep along them. A map made
 * if_aligned is built only where the launch's pointer and strides meet TMA's 16-byte alignment,
 * and is otherwise a stand-in the kernel tests for and never uses (lower_tma_store.c: a store
 * versioned on that alignment). */
enum { TMAP_MAX_OUTER = 3 };
typedef struct {
    int arg;
    const char *dtype;
    int swizzle, box_rows, box_cols;
    const char *rows_rpn, *cols_rpn, *pitch_rpn;
    int nouter;
    const char *outer_rpn[TMAP_MAX_OUTER], *outer_stride_rpn[TMAP_MAX_OUTER];
    bool if_aligned;
    /* each 8 rows r0 + 4 h + l (h < 2, l < 4) land in shared memory at r0 + 2 l + h: the map has
       two more dimensions, (column, row / 4 % 2, row % 4, row / 8, outer...), its box (box_cols,
       2, 4, box_rows / 8, 1...); rows a multiple of 8 (lower_tma.c, SWZ_SLAB_K8) */
    bool rows8;
} TensorMapMeta;
enum { MAX_TMAPS = TILERT_MAX_TMAPS, MAX_PRODUCT_NOTES = 16 };

typedef struct {
    const char *name;
    KernelArg *args; int nargs;
    int threads;
    int smem_bytes;        /* dynamic shared memory per block */
    int ngrid;
    const char *grid_rpn[MAX_GRID];
    const char **assume_rpn; const char **assume_text; int nassumes;
    int pred_regs;         /* predicted registers per thread (regalloc) */
    TensorMapMeta *tmaps; int ntmaps;   /* the TMA tensor maps, passed after the arguments */
    /* blocks a cluster where the grid's x extent allows (lower_warpspec.c: two blocks that copy
       the same operand window share its copies); 0: launched without clusters */
    int cluster;
    /* Filled from ptxas -v when it ran (-1 otherwise): */
    int ptxas_regs, ptxas_spill_stores, ptxas_spill_loads, ptxas_stack;
    /* ptxas serialized the kernel's wgmma for want of registers (C7511, C7512): the tensor cores' fast
       path lost, which regcap treats as it treats a spill */
    bool ptxas_wgmma_serialized;
    bool warned_serialized;   /* ptxas_warn_lost said so (once per kernel) */
    /* lets the registers could not hold, kept in shared memory instead (compile.c) */
    const char *demoted[8]; int ndemoted;
    /* tensors whose tiles are stored by TMA through shared memory (lower_tma_store.c), for the
       report, and whether only where the launch is aligned (the store versioned on it) */
    const char *tma_stored[8]; int ntma_stored;
    bool tma_stored_if_aligned[8];
    /* a K loop split over blocks (lower_split.c): the grid dimension the launcher sets to the
       slices (0: not split), a block's bytes of partial sums, the loop's step and its
       iterations as RPN */
    int split_dim;
    int64_t split_bytes, split_step;
    const char *split_steps_rpn;
    bool split_cluster;    /* ... a tile's slices must run as one cluster (`cluster`), */
    int split_max;         /* ... of at most this many (`cluster N`) */
    /* each `@` as compiled, for the report (lower_matmul.c, note_product): its place, and how
       it was computed and fed, one text a lowering that said something new (a loop versioned on
       alignment lowers it twice, an unrolled one once a copy) */
    struct { int line, col; const char *how[2]; int nhow; } products[MAX_PRODUCT_NOTES];
    int nproducts;
} KernelMeta;

/* The metadata block written at the top of every PTX file as comments:
 *   //@tilec 1
 *   //@kernel NAME threads T smem S regs R
 *   //@arg NAME ptr|size|scalar TYPE ALIGN
 *   //@grid RPN                (one line per grid dimension)
 *   //@assume RPN | TEXT
 *   //@tmap aP DTYPE SWIZZLE BOXROWS BOXCOLS [if-aligned] [rows8] | ROWS_RPN | COLS_RPN | PITCH_RPN
 *           [| EXTENT_RPN | STRIDE_RPN]...   (TensorMapMeta: its outer dimensions, innermost first)
 *   //@cluster N               (KernelMeta.cluster, when not 0)
 *   //@split D BYTES STEP [cluster] | TRIPS_RPN   (KernelMeta.split_*, when split_dim is not 0)
 *   //@end
 * (one //@kernel ... //@end group per kernel). runtime/meta.c parses exactly this, within its
 * limits: an RPN expression of at most META_MAX_RPN tokens (lowering refuses longer grid() and
 * assume() expressions), lines of at most META_MAX_LINE bytes (meta_write shortens an assume's
 * TEXT to fit; TEXT is for messages only). TEXT is printable ASCII: ptxas refuses PTX with
 * other bytes, even in comments. */
enum { META_MAX_RPN = TILERT_MAX_RPN, META_MAX_LINE = TILERT_MAX_META_LINE };   /* tilert_limits.h */
void meta_write(Buf *out, KernelMeta *k);

/* meta_source.c: the program's source (its name, the -D values it was compiled with, and
 * whether it was compiled with --print-all-blocks) as the module's //$ comment lines, which the
 * interpreter reads back to run any module as it was compiled.
 * meta_source_read appends the source's name to file and its text to src, fills
 * defs[0..*ndefs) (their strings kept in names, which must outlive them) and, where not NULL,
 * *print_all_blocks; false when the module carries no source block or a malformed one. */
enum { META_MAX_DEFINES = 64 };
const char *meta_source_block(Arena *a, const Program *p, bool print_all_blocks);
bool meta_source_read(const char *ptx, Buf *file, Buf *src, Define *defs, int *ndefs, Buf *names,
                      bool *print_all_blocks);

/* ---------------------------------------------------------------- ptxas.c: the optional assembler */

/* Runs ptxas (found by ptxas_path(): $TILEC_PTXAS, else `ptxas` next to the CUDA toolkit that
 * configure found, else on PATH) on ptx for arch ("sm_90a") with -v. On success fills cubin with
 * the object and log with ptxas' stderr; returns false with the log when ptxas failed or is
 * missing (then *missing is set). Writes only temporary files it removes. */
bool ptxas_run(const char *ptx, const char *arch, Buf *cubin, Buf *log, bool *missing);
/* The ptxas tilec runs: $TILEC_PTXAS, else the configured toolkit's, else `ptxas` on PATH. */
const char *ptxas_path(void);
/* Reads `ptxas -v` output into the kernels' ptxas_* fields (matched by name). */
void ptxas_parse_report(const char *log, KernelMeta *ks, int nk);

/* ---------------------------------------------------------------- tune_file.c: tilec-tune's winners */

/* One line of a winners file: for launches of `kernel` near these sizes, the consts that won.
 *
 *   # comment
 *   KERNEL SIZE=INT,SIZE=INT,... NAME=VALUE,NAME=VALUE,...   # comment
 *   KERNEL SIZE=INT,...          -                           # the file's own consts won
 *
 * tilec-tune writes it (-o); `tilec --emit=c --tune=FILE` reads it (docs/tilec.1, "WINNERS"). */
enum { TUNE_MAX_SIZES = 8, TUNE_MAX_DEFS = 32, TUNE_MAX_CLASSES = 256 };
typedef struct {
    const char *kernel;
    Loc loc;
    int nsizes;
    const char *size_name[TUNE_MAX_SIZES];
    int64_t size[TUNE_MAX_SIZES];
    Loc size_loc[TUNE_MAX_SIZES];
    int ndefs;
    Define defs[TUNE_MAX_DEFS];      /* none: the file's own consts */
    Loc def_loc[TUNE_MAX_DEFS];
    const char *comment;             /* after '#', trimmed; NULL if none */
    int variant;                     /* the caller's: which compiled variant the consts make */
} TuneClass;
/* Reads the winners in diag.src (diag_reset to the file first): its classes, in the arena, in file
 * order. False after errors (reported as file:line:col). */
bool tune_file_parse(Arena *a, TuneClass **out, int *n);
/* Checks the classes against the program compiled with the file's consts: each kernel exists,
 * names exactly its size symbols, and names consts that exist, each once. Errors at the winners'
 * locations: diag must still be set to the winners file. */
bool tune_file_check(const TuneClass *cs, int n, const Program *p);
/* One line per class, in the format tune_file_parse reads. */
void tune_file_write(Buf *out, const TuneClass *cs, int n);

/* ---------------------------------------------------------------- emit_c.c: --emit=c */

/* A cubin and the PTX it was assembled from (its arch's metadata comes with it: shared memory,
 * tensor maps and arguments may differ between the archs of one --emit=c list). */
typedef struct { const char *arch; const char *data; size_t size; const char *ptx; } Cubin;
/* Writes NAME.c (embedded PTX with its metadata, cubins, per-kernel typed launchers) and NAME.h
 * (their declarations). base: the C identifier prefix and the header's file name without .h. */
void emit_c(Buf *c_out, Buf *h_out, const char *base, const char *header_name,
            KernelMeta *ks, int nk, const char *ptx, const Cubin *cubins, int ncubins);
/* --emit=c --tune=FILE: the module compiled again with each distinct set of consts that won a
 * size class (variants 1..), and the classes, whose .variant says which variant each picks
 * (0: the module of emit_c's own arguments). */
typedef struct {
    const char *defines;   /* "BM=64,BN=128": the consts it was compiled with */
    KernelMeta *metas; int nk;
    const char *ptx;
    const Cubin *cubins; int ncubins;
} EmitVariant;
typedef struct {
    const EmitVariant *variants; int nvariants;   /* variants 1..nvariants */
    const TuneClass *classes; int nclasses;
} EmitTune;
/* emit_c with tuned kernels: with tune NULL, emit_c's output exactly. */
void emit_c_tuned(Buf *c_out, Buf *h_out, const char *base, const char *header_name,
                  KernelMeta *ks, int nk, const char *ptx, const Cubin *cubins, int ncubins,
                  const EmitTune *tune);

/* ---------------------------------------------------------------- ir.c: the thread-level IR */

/* PTX value types of instructions. Register classes follow from them. */
typedef enum {
    PT_PRED, PT_B16, PT_F16, PT_BF16, PT_B32, PT_S32, PT_U32, PT_F32, PT_B64, PT_S64, PT_U64,
    PT_U16, PT_U8, PT_S8,
    PT_F16X2, PT_BF16X2,   /* two 16-bit floats in 32 bits (packed atomic adds) */
    PT_E4M3, PT_E5M2,      /* fp8 operands of the tensor cores (MMA, WGMMA), four to a register */
    PT_F64,                /* only as print()'s arguments: C varargs pass floats as doubles */
    PT_COUNT
} PType;
typedef enum { RC_P, RC_H, RC_R, RC_F, RC_D, RC_COUNT } RegClass;
RegClass ptype_class(PType t);
const char *ptype_suffix(PType t);          /* ".f32" ... */

/* Operand: a virtual register, an integer or float immediate, or a named symbol
 * (a special register like %tid.x, a .param name, the shared-memory symbol). */
typedef enum { O_NONE, O_REG, O_IMM, O_FIMM, O_SYM } OpndKind;
typedef struct { OpndKind kind; int reg; int64_t i; double f; const char *sym; } Opnd;

typedef enum {
#define X(n, i, f, sfx, flags, fields, dsts, srcs) OP_##n,
    IR_OPS(X)
#undef X
    OP_COUNT_
} Opcode;
extern const OpInfo op_info[OP_COUNT_];        /* ops.h's table, indexed by Opcode */
const char *op_name(int op);
bool op_has(int op, int flags);                /* every one of the OPF_ flags */

typedef enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_LO, CMP_HS } Cmp;
typedef enum { SP_GLOBAL, SP_SHARED, SP_PARAM, SP_LOCAL } Space;
typedef enum { RED_ADD, RED_MAX, RED_MIN, RED_CAS } RedOp;
/* CVT's rounding. RND_DEFAULT: the conversion's own (.rn into a float from an integer or to a
 * narrower float, .rzi into an integer from a float, none when widening); the other two round
 * f32 to tf32 bits (cvt.rna.tf32.f32, ties away; cvt.rn.tf32.f32, ties to even). Their numbers
 * are the ones lower_mma.c's cvt_tf32 takes. RND_RNI, RND_RMI, RND_RPI: f32 to the integral
 * f32 to nearest even, down, up (cvt.rni/rmi/rpi.f32.f32: round, floor, ceil). */
typedef enum { RND_DEFAULT = 0, RND_TF32_RNA = 2, RND_TF32_RN = 3, RND_RNI = 4, RND_RMI = 5, RND_RPI = 6 } CvtRound;

/* One instruction. Each field has one meaning, for the operations whose ops.h row names it
 * (FL_*: the dump prints those, ir_verify.c checks the others are left as emit_ins sets them). */
typedef struct {
    uint16_t op;
    uint8_t ty;            /* PType of the operation (for CVT: destination type) */
    uint8_t ty2;           /* CVT: source type; SETP: compared type is ty, ty2 unused */
    uint8_t ty3;           /* MMA, WGMMA: B's operand type (ty2: A's; they differ for i8 x u8,
                              e4m3 x e5m2) */
    uint8_t cmp;           /* SETP: Cmp */
    uint8_t rnd;           /* CVT: CvtRound */
    uint8_t vec;           /* LD/ST: 1, 2 or 4 */
    uint8_t space;         /* LD/ST/RED/ATOM */
    uint8_t redop;         /* RED/ATOM */
    uint8_t inflight;      /* CPWAIT, WGWAIT: groups allowed to stay in flight */
    bool trans;            /* LDMATRIX: .trans; WGMMA: B is N-major (imm-trans-b) */
    bool trans_a;          /* WGMMA: A is M-major (imm-trans-a) */
    bool a_regs;           /* WGMMA: A from registers (the tf32 swapped product) */
    bool fresh;            /* WGMMA: scale-d 0, the accumulators written, not read (its WGACC
                              read nothing) */
    bool guard_neg;        /* the guard's negation guards it */
    bool divergent;        /* BRA: a warp's threads may go both ways (bra, not bra.uni) */
    uint16_t n;            /* WGMMA: N of m64nNk16 (m64nNk8) */
    uint16_t count;        /* MBINIT: the arrival count; BAR: the threads it waits for (0: all) */
    int guard;             /* predicate register guarding the instruction, -1 if none */
    int dst[4]; int ndst;
    Opnd src[10]; int nsrc;       /* ST.v4: the address and four values; MMA: ten (below) */
    int64_t off;           /* LD/ST/RED/ATOM/CPASYNC: constant byte offset added to the address src[0] */
    int64_t off2;          /* CPASYNC: constant byte offset added to the global address src[1] */
    int label;             /* LABEL, BRA */
    int array;             /* ARRSET, ARRGET: the register tensor (index in Func.arrays) */
    int bytes;             /* MBEXPECT: the bytes the barrier's phase waits for */
    /* CPASYNC: src[0] shared address (u32), src[1] global address (u64), src[2] bytes actually
     * read (0 = zero-fill), vec = copy size in bytes (4, 8, 16), off = shared offset.
     * PACK2 (ty PT_F16 or PT_BF16): dst[0] (b32) = the pair src[0] (upper half), src[1] (lower),
     * f32 registers holding values of that type, converted (cvt.rn.f16x2.f32).
     * UNPACK2: dst[0], dst[1] (b16) = the lower and upper halves of src[0] (b32).
     * ARRSET: src[0] value, off = element index. ARRGET: dst[0], src[0] index register.
     * LDMATRIX (ldmatrix.sync.aligned.m8n8, b16): dst[0..vec-1] (.b32), src[0] shared address
     * (u32) + off, vec = matrices (1, 2, 4), trans for .trans.
     * MMA (mma.sync.aligned, row.col): ty = the accumulators' type, PT_F32 or PT_S32 (8-bit
     * integers); ty2, ty3 = A's and B's operand types: PT_F16 or PT_BF16 (m16n8k16), PT_B32 for
     * tf32 (m16n8k8), PT_S8, PT_U8, PT_E4M3, PT_E5M2 (m16n8k32); dst[0..3] = d, src[0..3] = a, src[4..5] = b,
     * src[6..9] = c (the accumulators are read too: lowering passes d as c).
     * WGMMA (wgmma.mma_async.sync.aligned.m64nNk16, f32 accumulators, sm_90a): ty2 = PT_F16 or
     * PT_BF16, src[0], src[1] = the A and B matrix descriptors (b64), n = N, trans when B is
     * N-major (imm-trans-b). Its N / 2 accumulators follow as N / 8 WGACC instructions, each
     * dst[0..3] = src[0..3] = four of them (read and written): the passes see ordinary registers,
     * emit prints the group as one instruction. ty2 = PT_B32: tf32 (m64nNk8), both operands
     * K-major: src[0], src[1] descriptors, or with a_regs src[0..3] = the A fragment from
     * registers and src[4] = B's descriptor. WGWAIT: inflight
     * = groups allowed in flight. WGHOLD: no code; its sources (registers an in-flight wgmma
     * reads, up to 10) stay live, so allocated apart, until it, placed after the wait.
     * WGFENCE, WGCOMMIT, FENCEPROXY (fence.proxy.async.shared::cta): no operands. FENCEGPU
     * (fence.acq_rel.gpu): none. BARRED (bar.red.or.pred): dst[0] = the OR over the block's
     * threads (count of them, 0: all) of the predicate src[0], a block barrier as BAR is.
     * mbarriers (sm_90) and TMA: MBINIT src[0] = the barrier's shared address, count = the
     * arrival count; MBFENCEINIT (fence.mbarrier_init) no operands; MBEXPECT (arrive.expect_tx)
     * src[0] = barrier, bytes; MBWAIT (try_wait.parity) dst[0] = predicate (phase complete),
     * src[0] = barrier, src[1] = the phase parity; TMALOAD (cp.async.bulk.tensor.Nd) src[0] =
     * shared destination + off, src[1] = the tensor map's generic address (b64), src[2], src[3]
     * = the coordinates (column, row), src[4] = barrier, src[5..] = the outer dimensions'
     * coordinates (a map of rank 3 to 5). CVTA with space = SP_PARAM: cvta.param
     * (the address of a by-value parameter). CVTAGEN (cvta.global, cvta.local): dst[0] = the
     * generic address of src[0], an address in space (SP_GLOBAL or SP_LOCAL), both 64 bits.
     * VPRINTF (a call of the CUDA device function vprintf): src[0] = the format's generic
     * address, src[1] = the generic address of its arguments (lower_print.c says how packed). */
    int line;              /* source line that produced it (report) */
    const char *text;      /* COMMENT */
    /* a shared access that touches only bytes the issuing thread's own async copies fill, until
       the next barrier (cp.async, TMA, the in-place tf32 rounding): race_check.c */
    bool own;
    /* part of a pipelined loop's copies into its stage ahead, issued inside the body: no product
       of the iteration reads that stage, so a wait for one may move past it (wgmma_wait.c) */
    bool ahead;
    /* a load or copy of a split loop's partial sums (lower_split.c): once a block, after the
       loop, not the kernel's streaming, which inflight.c measures */
    bool once;
} Ins;

typedef struct {
    RegClass rc;
    const char *what;      /* the source value it belongs to, for the register report */
    int phys;              /* allocated register, -1 before allocation */
    int stage_S;           /* a pipelined loop's stage counter over stage_S stages (race_check.c); 0 otherwise */
    bool first_iter;       /* a predicate true exactly in a pipelined loop's first iteration (race_check.c) */
} VReg;

/* One allocation of the block's shared memory, for race_check.c: which buffer an address is in. */
typedef struct {
    int off, bytes;
    const char *name;
    int stage_bytes;       /* stage buffers: bytes per stage (0: not one) */
    /* the instruction count when it was allocated: an address made later into its bytes is
       its, not an earlier buffer's that a loop released (lower_smem.c) */
    int at;
} SmemBuf;

/* A small per-thread array indexed at run time (stage buffer addresses of pipelined loops):
 * a register tensor. Elements are set once, at creation (ARRSET), and read with ARRGET.
 * const_reg_elim rewrites the reads as arithmetic when it can; the rest go to .local. */
typedef struct {
    const char *name;
    int n;                 /* elements */
    RegClass rc;
    int line;
    bool in_local;         /* materialised in .local memory */
    bool eliminated;       /* every read rewritten; nothing to emit */
} RegArray;

/* One constant string of a kernel's module-scope data: len bytes, the last a NUL. */
typedef struct { const char *s; int len; } PrintString;

/* One kernel's thread-level code: a flat instruction list with labels and branches. */
typedef struct {
    Kernel *k;
    Arena *arena;          /* the compilation's: names made by passes live here */
    Vec(Ins) code;
    Vec(VReg) regs;
    Vec(RegArray) arrays;
    Vec(SmemBuf) smem_bufs;
    int nlabels;
    int smem_bytes;        /* dynamic shared memory per block */
    int threads;           /* the block launched: Kernel.threads, and a warp-specialized loop's producer warp */
    /* the threads a bar.sync waits for, 0 for the whole block: the consumers, once a
       warp-specialized loop's producer warp has left (lower_warpspec.c) */
    int bar_threads;
    const char *cur_what;  /* naming for new registers */
    int cur_line;
    bool cur_ahead;        /* new instructions are Ins.ahead */
    /* filled by regalloc: */
    int nphys[RC_COUNT];
    int peak_regs;         /* predicted 32-bit registers per thread */
    bool over_budget;      /* regalloc: peak_regs is over the budget (an error) */
    int peak_index;        /* instruction index of the peak */
    int peak_line;
    struct { const char *what; int regs; } top[5];   /* values live at the peak, largest first */
    int ntop;
    int maxnreg;           /* regalloc: the cap emitted as .maxnreg (0: none) */
    /* > 0: a producer warpgroup gives its registers to the consumers (setmaxnreg,
       lower_warpspec.c), whose code may use this many; .maxnreg is then the launch's own count
       (reg_budget(threads)), which the hardware needs to know at entry, and no cap moves it */
    int reg_limit;
    int sm_threads;        /* threads a multiprocessor holds on the target arch (occupancy) */
    int reg_boundary;      /* the most registers that keep the occupancy the demand allows */
    /* ir_verify: the order of barriers and shared accesses in the code race_check saw */
    uint64_t sync_order;
    bool sync_order_set;
    /* print() (lower_print.c): the constant strings its vprintf calls name, module-scope .global
       bytes (emitted as tilec_str<i>_<kernel>, NUL included), and the bytes of the .local buffer
       the calls pass their arguments in (tilec_print_args; 0: the kernel prints nothing) */
    Vec(PrintString) strings;
    int print_args_bytes;
    /* lower_split.c: the kernel's K loop was split with its slices in a cluster, and the rest of
       the kernel moves values between threads, which that form cannot have: compile it again
       with the other (Options.split_tree) */
    bool split_retry;
} Func;

Func *func_new(Kernel *k);
void func_free(Func *f);
int new_reg(Func *f, RegClass rc);
int new_label(Func *f);
Ins *emit_ins(Func *f, int op, PType ty);     /* appends a blank instruction */
Opnd R(int reg);
Opnd IMM(int64_t v);
Opnd FIMM(double v);
Opnd SYM(const char *s);
/* Convenience builders: each returns the destination register. */
int ir_mov(Func *f, PType t, Opnd a);
int ir_movsym(Func *f, PType t, const char *sym);   /* a symbol's address or a special register */
int ir_bin(Func *f, int op, PType t, Opnd a, Opnd b);          /* ADD SUB MUL MIN MAX ... */
int ir_tern(Func *f, int op, PType t, Opnd a, Opnd b, Opnd c); /* MAD FMA SELP(c = pred) */
int ir_bfi(Func *f, Opnd field, int into, int pos, int len);    /* `into` with bits pos .. pos + len - 1 from field */
void ir_bin_to(Func *f, int op, PType t, int dst, Opnd a, Opnd b); /* into an existing register */
int ir_un(Func *f, int op, PType t, Opnd a);                   /* NEG ABS NOT EX2 ... */
int ir_setp(Func *f, Cmp c, PType t, Opnd a, Opnd b);
int ir_cvt(Func *f, PType to, PType from, Opnd a);
bool ir_pure(int op);                          /* no side effects: may be moved, copied, deleted */
int ir_uses(const Ins *in, int *out);          /* registers read (guarded defs read their dsts) */
/* From instruction `from` on, register old[i] becomes new_[i] (a value given a register it must
 * land in, such as a loop-carried one). */
void rename_regs(Func *f, int from, const int *old, const int *new_, int n);
int ir_dce(Func *f);                           /* removes pure instructions whose results nobody reads */
void ir_naive_addr(Func *f);                   /* offset of the last LD/ST -> explicit add */
void ir_label(Func *f, int label);
void ir_bra(Func *f, int label, int guard, bool neg);
void ir_bar(Func *f);
void ir_comment(Func *f, const char *text);
void ir_dump(Func *f, FILE *out);
void ir_ins_text(Buf *out, const Ins *in);     /* one instruction as ir_dump prints it */

/* ---------------------------------------------------------------- lower*.c: tiles -> thread IR */

typedef struct {
    bool addr_split;       /* base + constant offset addressing (-fno-addr-split turns it off) */
    bool const_reg_elim;
    bool remat, schedule;  /* the pressure passes (-fno-remat, -fno-schedule) */
    bool reg_cap;          /* emit .maxnreg (-fno-reg-cap) */
    int max_regs;          /* 0: from the block size */
    const char *arch;      /* "sm_80" ... */
    bool no_ptxas;         /* never run ptxas (the cap's spill check, --no-ptxas) */
    const char *dump;      /* --dump=tir|alloc: print the IR after that stage to stdout */
    bool verify_ir;        /* ir_verify after lowering and every pass (--verify-ir, TILEC_VERIFY_IR=1) */
    bool print_all_blocks; /* print() in every block, not only block (0, 0, 0) (--print-all-blocks) */
    bool warp_spec;        /* a producer warp for a pipelined loop's TMA copies (-fwarp-specialize) */
    bool no_warp_spec;     /* ... not even where it is the default (-fno-warp-specialize) */
    bool cluster;          /* ... in 2-block clusters that share operand windows (-fcluster) */
    bool wgmma_wait;       /* wgmma waits moved to the first use (-fno-wgmma-wait keeps them) */
    bool no_tma_store;     /* store product tiles from registers, never by TMA (-fno-tma-store) */
    bool no_mask_split;    /* make a where()'s mask in every block (-fno-mask-split; lower_mask.c) */
    bool no_split_k;       /* never split a product's K loop over blocks (-fno-split-k; lower_split.c) */
    bool split_tree;       /* ... and where split, sum the slices in a tree, not in a cluster (set by
                              compile.c when the cluster's form cannot be had: Func.split_retry) */
} Options;

/* Lowers one checked kernel. Returns NULL after reporting errors (e.g. a tile too large). */
Func *lower_kernel(Arena *a, Program *p, Kernel *k, Options *opt, KernelMeta *meta);

/* ---------------------------------------------------------------- target.c */

/* One GPU architecture tilec compiles for (target.c's table says why each number). */
typedef struct {
    const char *name;          /* the --arch spelling: "sm_80" ... */
    int sm;                    /* compute capability x 10 */
    int sm_threads;            /* threads a multiprocessor holds */
    int sm_regs;               /* 32-bit registers per multiprocessor */
    int smem_block;            /* shared memory one block may opt into, bytes */
    int smem_sm;               /* shared memory per multiprocessor, bytes */
    bool mma_sync, wgmma, tma, clusters;   /* which tensor-core, copy and cluster features tilec uses */
    bool mma_fp8;              /* mma.sync multiplies fp8 itself (else as f16: lower_mma.c) */
    int inflight_kib;          /* global bytes in flight per multiprocessor a streaming kernel
                                  needs to run at a copy's speed, measured (0: not measured) */
} Target;
const Target *target_of(const char *arch);     /* NULL: not an architecture tilec knows */
const Target *target_default(void);            /* sm_80: runs on every supported GPU */
/* native_arch.c: the target of this machine's GPU 0 (--arch=native), NULL with why filled in
 * when there is no driver or GPU, or the GPU is older than sm_80 */
const char *native_arch(char *why, size_t why_size);
int target_count(void);
const Target *target_at(int i);

/* ---------------------------------------------------------------- race_check.c */

/* Fails (reporting both instructions) where a shared-memory write and another thread's access to
 * the same buffer can meet without a block barrier between them on some path. Runs on the code as
 * lowered (register tensors and shared symbols still in place). */
bool race_check(Func *f);

/* ---------------------------------------------------------------- ir_verify.c */

/* Checks that f is well-formed IR: every instruction's operands and fields as ops.h says, every
 * register read defined before on every path, and the order of barriers and shared-memory
 * accesses race_check proved kept by the passes. On failure reports a compiler bug (diag.nbugs)
 * naming the stage `after` and the instruction, and returns false. For test builds: compile.c
 * runs it after lowering and after every pass when Options.verify_ir is set. */
bool ir_verify(Func *f, const char *after);

/* ---------------------------------------------------------------- compile.c: the pipeline */

/* One architecture's result: the module's PTX (metadata block, then every kernel) and, per
 * kernel, its metadata and allocated code (for reports and --emit=c). */
typedef struct {
    Buf ptx;
    const char *source;    /* meta_source_block: follows the metadata in the PTX */
    KernelMeta *metas;     /* in the compilation's arena */
    Func **funcs;          /* heap: arch_output_free */
    int nk;
    const bool *only;      /* regcap.c: emit just these kernels (NULL: all), for ptxas' check */
} ArchOutput;

/* Warns, once per kernel, where ptxas's report says it lost a fast path (wgmma serialized). */
void ptxas_warn_lost(ArchOutput *out, const char *arch);

/* Reads src (len bytes, NUL-terminated; file names it in messages) into a checked Program:
 * lex, parse, check with the -D overrides. NULL after errors (reported through diag). */
/* The lowest compute capability (x 10) the program's parameter types need: 89 with fp8
 * tensors, else 0. The default architecture is raised to it. */
int program_min_sm(const Program *p);
Program *compile_front(Arena *a, const char *file, const char *src, size_t len, Define *defs,
                       int ndefs);
/* Lowers, allocates and emits every kernel of p for opt->arch; unless opt->no_ptxas, loosens
 * register caps ptxas spills under. False after errors; out is then still for arch_output_free. */
bool compile_arch(Arena *a, Program *p, const Options *opt, ArchOutput *out);
void arch_output_free(ArchOutput *out);

/* The whole compilation in memory, for callers in their own process (tests, fuzzing): source
 * text for one architecture (opt.arch) to PTX text, and with c_base also --emit=c's launchers
 * (PTX only, no cubins; c_base is their C prefix). Internal errors (die, the races
 * race_check.c finds, IR ir_verify.c refuses) return COMPILE_INTERNAL instead of aborting: the
 * arena and finished kernels are freed, memory the failed stage held may not be. Messages go
 * to diag.out. */
typedef enum { COMPILE_OK, COMPILE_ERRORS, COMPILE_INTERNAL } CompileStatus;
typedef struct {
    const char *file;
    const char *src; size_t len;
    Define *defs; int ndefs;
    Options opt;
    const char *c_base;
} CompileJob;
typedef struct { Buf ptx, c, h; } CompileOutput;   /* empty unless COMPILE_OK */
CompileStatus compile_buffer(const CompileJob *job, CompileOutput *out);
/* The passes after lowering (compile.c's table: race check, register tensors, address
 * splitting, the pressure passes, allocation) on one kernel, with opt->verify_ir the IR checked
 * after lowering and after each (ir_verify). False after errors; *drop when the code may not
 * go further (the race check or the verifier failed). */
bool compile_kernel(Arena *a, Func *f, const Options *opt, bool *drop);
bool pass_dump_point(const char *name);           /* --dump=NAME names a pass, lower, tir or alloc */
bool pass_disable(Options *opt, const char *name);  /* -fno-NAME: false when NAME has no switch */
void compile_output_free(CompileOutput *out);

/* ---------------------------------------------------------------- inflight.c */

/* The most global-memory bytes a thread of f has requested and not yet waited for (--report). */
int64_t inflight_bytes(const Func *f);

/* ---------------------------------------------------------------- liveness.c */

/* A register's hull: the first and last positions where it is live (end < 0: never). */
typedef struct { int v, start, end; } Interval;
/* Per register (f->regs.n entries), its hull under the plain backwards liveness and under the
 * demand's (a register is not live where no path has written it yet). */
typedef struct { Interval *plain, *demand; } Liveness;
void liveness(Func *f, Liveness *lv);
void liveness_free(Liveness *lv);
/* Registers one value of class rc takes: 2 for 64-bit, 0 for predicates, else 1. */
int reg_weight(RegClass rc);
/* p[i] (f->code.n + 1 ints): the weight live at position i over intervals iv; returns the peak and
 * puts its position in *at (when not NULL). */
int pressure(const Func *f, const Interval *iv, int *p, int *at);

/* ---------------------------------------------------------------- regalloc.c, regcap.c */

/* Liveness over the CFG, then linear-scan allocation per register class; fills VReg.phys,
 * Func.nphys and the peak. Reports an error (naming the values live at the peak) when the demand
 * exceeds budget. Returns false on error. */
bool regalloc(Func *f, int budget);
/* Registers per thread the hardware allows for a block of `threads` (65536/threads, <= 255,
 * rounded down to a multiple of 8). */
int reg_budget(int threads);
/* The slack the register cap leaves over the predicted demand. */
int reg_cap_slack(int pred);
/* The most registers per thread (a predicted demand) that keep, with the cap's slack on top, the
 * blocks per multiprocessor that `pred` registers allow a block of `threads` (sm_threads: the
 * target's; 0 for 2048), within the budget; never below pred. */
int reg_room(int pred, int threads, int sm_threads);
/* The blocks per multiprocessor the register cap aims at for a demand of `pred` (ptx_maxnreg: the
 * demand less its slack, rounded up to the allocation unit). */
int reg_cap_blocks(int pred, int threads, int sm_threads);

/* regcap.c: with ptxas at hand (and opt->reg_cap, not opt->no_ptxas), assembles out's module,
 * loosens the cap of every kernel that spills under it and has emit write the module again, for
 * a few rounds. False when ptxas rejects the PTX (reported). */
bool regcap_fit(ArchOutput *out, const Options *opt,
                void (*emit)(ArchOutput *out, const char *arch));

/* ---------------------------------------------------------------- wgmma_wait.c */

/* Moves each wgmma wait that follows its commit down to the first instruction that needs the
 * product done. Returns the number moved. */
int wgmma_wait_sink(Func *f);

/* ---------------------------------------------------------------- const_reg_elim.c */

/* Rewrites every runtime-indexed read of a register tensor whose elements are uniform and affine in
 * the index (base + i * stride, set once) as base + index * stride; small others become a selp
 * chain; the rest stay arrays and get a warning naming them. Returns the number rewritten. */
int const_reg_elim(Func *f);
/* Materialises every remaining register tensor in .local memory (the fallback, and what
 * -fno-const-reg-elim leaves). Must run before regalloc. */
void arrays_to_local(Func *f);

/* ---------------------------------------------------------------- emit_ptx.c */

void emit_ptx_header(Buf *out, const char *arch, const char *version);   /* PTX ISA version */
void emit_ptx_vprintf_decl(Buf *out);   /* once per module, before the kernels, when one prints */
void emit_ptx_kernel(Buf *out, Func *f, KernelMeta *meta);

/* ---------------------------------------------------------------- remat.c, schedule.c */

/* Recomputes cheap values (parameters, special registers, short integer chains over them) in each
 * block that reads them instead of holding them across blocks; deletes unread pure definitions. */
void remat_cheap(Func *f);
/* Sinks instructions towards their first reader inside blocks where that lowers pressure. */
void schedule_pressure(Func *f);
/* regalloc.c: the report's name of a source value: "acc: f32[128,128]", "m0: i32". */
const char *reg_value_name(Arena *a, const char *name, ElemType t, Shape s);

/* ---------------------------------------------------------------- addrsplit.c */

/* Base + constant offset addressing: rewrites every memory access (LD/ST/RED/ATOM) of f as one
 * shared base register plus Ins.off, sharing, hoisting and deleting the address arithmetic that
 * becomes redundant. Run after lower_kernel, before regalloc. Strings it makes live in a. */
void addr_split(Arena *a, Func *f, bool remat_after);   /* remat_after: remat runs after it */

#endif
