/* interp.h: the CPU interpreter. It runs a checked kernel (compile_front's Program) on host
 * memory with the tile semantics of docs/language.md, one block of the grid after another, so
 * that a kernel can be debugged and tested where there is no GPU (docs/internals.md,
 * "The interpreter").
 *
 * interp.c runs statements and launches, interp_expr.c evaluates expressions, interp_value.c
 * holds tile values and the number formats' conversions, interp_run.c is `tilec --run`. */
#ifndef TILEC_INTERP_H
#define TILEC_INTERP_H

#include "tilec.h"

/* ---------------------------------------------------------------- the C API (interp.c) */

/* One kernel argument, in the ABI order of tilec.h (parameters as declared, then the size
 * symbols in order of first appearance). A tensor is host memory: ptr and the bytes from ptr
 * that the kernel may touch (an access of an element inside the tensor's extent but outside
 * them is an out-of-bounds error at the access's source location). A size or an integer scalar
 * is i (an i32 or u32 by its value, an i64, a bool 0 or 1); a float scalar is f (f16 and bf16
 * scalars: the value, rounded to the type by the interpreter). */
typedef struct {
    void *ptr;
    size_t bytes;
    int64_t i;
    double f;
} InterpArg;

typedef struct {
    FILE *print_out;       /* where print() writes; NULL: stdout */
    bool print_all_blocks; /* print() in every block, not only block (0, 0, 0) */
} InterpOptions;

/* The number of arguments k takes, and the name of argument i (parameters, then sizes; NULL
 * past the end; it lives as long as the program). */
int interp_nargs(const Kernel *k);
const char *interp_arg_name(const Kernel *k, int i);

/* Runs kernel k of program p (checked by compile_front, whose diag state is still the
 * program's: errors point into its source) on args: checks the argument values as the launcher
 * does (no negative sizes), evaluates every assume() and refuses a false one, computes the grid
 * and runs every block. Errors (a false assume, an out-of-bounds access, an argument missing)
 * go through diag as `file:line:col: error: ...`; returns false after one. */
bool interp_launch(Program *p, Kernel *k, const InterpArg *args, int nargs,
                   const InterpOptions *opt);

/* interp_run.c: `tilec --run` (main.c hands it the whole command line). */
int interp_run_main(int argc, char **argv);

/* ---------------------------------------------------------------- values (interp_value.c) */

/* One element: integers and bools in i (each type's value: u32 as 0 .. 2^32 - 1, bool 0 or 1),
 * floats in f. f16, bf16 and fp8 values are held as f32, as the GPU holds them in registers:
 * arithmetic on them is f32 arithmetic, rounded to the type only where the language narrows
 * (a cast, a store to a tensor or a shared tile, a tensor-core operand). */
typedef union { int64_t i; float f; } Elem;

/* A tile (or a scalar: rank 0, n 1) of one type, dense, row-major. */
typedef struct {
    ElemType type;
    Shape shape;
    int64_t n;
    Elem *v;               /* heap: value_free */
} Value;

Value value_new(ElemType t, Shape s);        /* zeroed; v NULL only when out of memory */
Value value_copy(const Value *x);
void value_free(Value *x);
int64_t shape_count(Shape s);
/* The element of x that position `flat` of a tile of shape `out` reads when x broadcasts to it
 * (NumPy's rule: shapes aligned at their last dimension, a dimension of 1 repeated). */
int64_t bcast_index(const Value *x, Shape out, int64_t flat);

/* Integers wrapped to type t (C's conversion to the type's width). */
int64_t wrap_to(ElemType t, int64_t v);
/* A float value rounded to the precision of t (f16, bf16: to nearest even, past the largest to
 * infinity; fp8: to nearest even, saturating; tf32: to nearest, ties away, as cvt.rna); f32 and
 * the others as they are. */
float round_to_type(ElemType t, float x);
/* Converts element x of type from into type to as a cast does at run time. */
Elem convert_elem(ElemType to, ElemType from, Elem x);
/* Memory: reads and writes one element of type t (bytes type_size(t)) at p. */
Elem load_elem(ElemType t, const void *p);
void store_elem(ElemType t, void *p, Elem x);
/* f16 / bf16 / fp8 bit patterns, for the runtime and tests. */
uint16_t f32_to_f16_bits(float x);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float x);
float bf16_bits_to_f32(uint16_t h);
/* Prints element x of type t as the interpreter's print() and tilec --run show it. */
void print_elem(FILE *out, ElemType t, Elem x);

/* Philox-4x32-10 of docs/language.md, "Random numbers": the output words c0 and c1 for key
 * (k0, k1) and counter (c0, c1, 0, 0). */
void philox4x32_10(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, uint32_t *o0, uint32_t *o1);

/* ---------------------------------------------------------------- the evaluator's state */

/* Where a name's value lives while a block runs (interp.c keeps them, interp_expr.c reads). */
typedef struct { const Sym *sym; Value val; bool set; } Slot;

typedef struct Interp {
    Program *p;
    Kernel *k;
    const InterpArg *args;
    const InterpOptions *opt;
    int64_t block[3];
    Slot *slots; int nslots;   /* a hash of Sym pointers, open addressing */
    bool failed;               /* an error was reported: everything unwinds */
    bool running;              /* blocks are running (errors name the block) */
} Interp;

/* interp.c: reports an error at loc (naming the block, once blocks run) and
 * sets in->failed; only the first error of a launch is reported. */
void interp_error(Interp *in, Loc loc, const char *fmt, ...);
/* interp_expr.c: a op b elementwise (broadcast to shape s), of result type rt. */
Value interp_binop(Interp *in, const Expr *e, int op, const Value *a, const Value *b, ElemType rt,
                   Shape s);
/* interp.c: the value of a local (let, var, loop variable), NULL before its declaration ran. */
Value *interp_slot(Interp *in, const Sym *s);
/* interp_expr.c: evaluates e (checked) in the current block. On an error (reported), in->failed
 * is set and the value is empty (v NULL). The caller owns the result. */
Value interp_eval(Interp *in, const Expr *e);
/* A launch-time integer (grid dimensions, assume facts, strides): sizes, scalars, constants,
 * evaluated in i64 as the runtime's RPN evaluator does. */
int64_t interp_launch_int(Interp *in, const Expr *e);
/* The extent x of a tensor (a dimension or a stride) for the arguments. */
int64_t interp_extent(Interp *in, const Extent *x);
/* Tensor t's dimensions and strides (in elements) for the arguments. */
void interp_tensor_geometry(Interp *in, const Sym *t, int64_t dim[], int64_t stride[]);
/* Loads the window e (an E_INDEX) as a tile; stores v into it, or atomically adds (op '+') or
 * takes the maximum (op 'M'); masked lanes read the fill value or are dropped. */
Value interp_load(Interp *in, const Expr *e);
void interp_store(Interp *in, const Expr *e, const Value *v, int op);
/* The product a @ b (operands evaluated and rounded to their precision) added to acc (f32[M,N]),
 * or acc set to it when acc_set. */
void interp_matmul(Interp *in, const Expr *mm, Value *acc, bool acc_set);

#endif
