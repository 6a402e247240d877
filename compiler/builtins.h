/* builtins.h: the language's built-in functions, one row each, read by the checker (names,
 * argument counts, which check applies) and by the lowering (which lowering applies).
 *
 * X(NAME, spelling, alias, min_args, max_args, kind)
 *   spelling, alias  the names a program calls it by (alias NULL: none; spelling NULL: made by the
 *                    checker from another row, as max(a, b) becomes MAXIMUM)
 *   kind             BK_MATH: elementwise float function of one tile; BK_PAIR: elementwise or
 *                    scalar function of two; BK_FMA: elementwise float a * b + c, rounded once;
 *                    BK_SELECT: c ? a : b; BK_REDUCE: over the tile or along axis= (cumsum:
 *                    the running sums along axis=, the shape kept); BK_ARANGE:
 *                    the constant tile 0 .. W-1; BK_BITCAST: the same bits as another type of
 *                    their size (its second argument a type); BK_RAND: a counter-based random
 *                    number for each element of an offset, from a scalar seed; BK_RESHAPE: the
 *                    same elements with a size-1 axis added or removed (its second argument
 *                    the axis, a constant), or in row-major order as the shape its constant
 *                    arguments give (reshape) */
#ifndef TILEC_BUILTINS_H
#define TILEC_BUILTINS_H

#define BUILTINS(X) \
    X(EXP,     "exp",     NULL,    1, 1, BK_MATH) \
    X(EXP2,    "exp2",    NULL,    1, 1, BK_MATH) \
    X(LOG,     "log",     NULL,    1, 1, BK_MATH) \
    X(LOG2,    "log2",    NULL,    1, 1, BK_MATH) \
    X(SQRT,    "sqrt",    NULL,    1, 1, BK_MATH) \
    X(RSQRT,   "rsqrt",   NULL,    1, 1, BK_MATH) \
    X(TANH,    "tanh",    NULL,    1, 1, BK_MATH) \
    X(SIGMOID, "sigmoid", NULL,    1, 1, BK_MATH) \
    X(ABS,     "abs",     NULL,    1, 1, BK_MATH) \
    X(ERF,     "erf",     NULL,    1, 1, BK_MATH) \
    X(LOG1P,   "log1p",   NULL,    1, 1, BK_MATH) \
    X(EXPM1,   "expm1",   NULL,    1, 1, BK_MATH) \
    X(FLOOR,   "floor",   NULL,    1, 1, BK_MATH) \
    X(CEIL,    "ceil",    NULL,    1, 1, BK_MATH) \
    X(ROUND,   "round",   NULL,    1, 1, BK_MATH) \
    X(POW,     "pow",     NULL,    2, 2, BK_PAIR) \
    X(FMA,     "fma",     NULL,    3, 3, BK_FMA) \
    X(MAXIMUM, NULL,      NULL,    2, 2, BK_PAIR) \
    X(MINIMUM, NULL,      NULL,    2, 2, BK_PAIR) \
    X(SELECT,  "select",  "where", 3, 3, BK_SELECT) \
    X(SUM,     "sum",     NULL,    1, 1, BK_REDUCE) \
    X(MAX,     "max",     NULL,    1, 2, BK_REDUCE) \
    X(MIN,     "min",     NULL,    1, 2, BK_REDUCE) \
    X(ARGMAX,  "argmax",  NULL,    1, 1, BK_REDUCE) \
    X(ARGMIN,  "argmin",  NULL,    1, 1, BK_REDUCE) \
    X(CUMSUM,  "cumsum",  NULL,    1, 1, BK_REDUCE) \
    X(CDIV,    "cdiv",    NULL,    2, 2, BK_PAIR) \
    X(ARANGE,  "arange",  NULL,    1, 1, BK_ARANGE) \
    X(BITCAST, "bitcast", NULL,    2, 2, BK_BITCAST) \
    X(RAND,    "rand",    NULL,    2, 2, BK_RAND) \
    X(RANDN,   "randn",   NULL,    2, 2, BK_RAND) \
    X(RANDINT, "randint", NULL,    2, 2, BK_RAND) \
    X(EXPAND_DIMS, "expand_dims", NULL, 2, 2, BK_RESHAPE) \
    X(SQUEEZE, "squeeze", NULL,    2, 2, BK_RESHAPE) \
    X(RESHAPE, "reshape", NULL,    2, 3, BK_RESHAPE)

typedef enum { BK_MATH, BK_PAIR, BK_FMA, BK_SELECT, BK_REDUCE, BK_ARANGE, BK_BITCAST, BK_RAND, BK_RESHAPE } BuiltinKind;

typedef struct {
    const char *name, *alias;
    int min_args, max_args;
    BuiltinKind kind;
} BuiltinInfo;

#endif
