/* check.h: what check.c (statements, declarations) and check_expr.c (expressions, folding)
 * share. Private to the checker. */
#ifndef CHECK_H
#define CHECK_H

#include "tilec.h"

/* Expressions deeper than this (a chain of 100000 '+') are refused instead of recursing. */
enum { MAX_EXPR_DEPTH = 1000 };

typedef struct {
    Arena *a;
    Program *p;
    Kernel *k;
    Vec(Sym *) consts;     /* global, in declaration order */
    Vec(Sym *) scope;      /* the kernel's parameters, sizes and visible locals, innermost last */
    Map const_names, scope_names;   /* the same by name: a name is visible at most once */
    Vec(Sym *) sizes;      /* the kernel's size symbols in order of first appearance */
    Vec(Sym *) views;      /* the kernel's transposed views (Kernel.views) */
    Vec(Stmt *) assumes;
    Vec(Sym *) syms;       /* every symbol made for the kernel (Kernel.syms) */
    int depth, edepth;     /* statement and expression recursion */
    bool too_deep;         /* the nesting error was reported: say it once */
} Check;

/* check.c */
Sym *new_sym(Check *c, SymKind kind, const char *name, Loc loc);
Sym *lookup(Check *c, const char *name);
void scope_push(Check *c, Sym *s);
void scope_pop(Check *c, int mark);     /* forgets the names declared since scope.n was mark */

/* check_expr.c */
void check_expr(Check *c, Expr *e);
bool check_index(Check *c, Expr *e, bool is_target);
bool check_matmul(Check *c, Expr *e);
bool window_dims(const Expr *e, int *d0, int *d1);   /* a 2-D window's windowed subscripts */
Expr *transposed_window(Check *c, Expr *e);           /* its elements transposed, or NULL */
void find_twin(Check *c, Expr *x);     /* an @ operand read transposed: its twin (Expr.twin) */
/* transpose_push.c: x.T of values pushed to the leaves, lets computed transposed */
void push_transposes(Check *c, Stmt *body);
bool is_matmul(const Expr *e);
bool is_literal(const Expr *e);          /* a number constant: adapts to the other operand */
bool adapt_literal(Check *c, Expr *e, ElemType t);
/* A float constant v held as type t (f32, f16, bf16) stays finite (inf as written does). */
bool float_const_fits(double v, ElemType t);
bool broadcast_shapes(Shape a, Shape b, Shape *out);
bool tile_fits(Check *c, Loc loc, ElemType t, Shape s);   /* else an error at loc */
const char *shape_str(Check *c, ElemType t, Shape s);   /* "f32[128,64]", "f32" */

#endif
