/* ops.h: the thread-level IR's operations, one row each, with every property a pass asks of an
 * operation. ir.c, addrsplit.c, remat.c, schedule.c, emit_ptx.c and the IR dump read this table
 * and nothing else, so a new operation is one row here plus its spelling where it is special.
 *
 * X(NAME, int, float, suffix, flags, fields)
 *   int, float  the PTX mnemonic for integer or bit types and for floating types; NULL where
 *               emit_ptx.c writes the instruction from its fields (memory, tensor cores, ...)
 *   suffix      how the type goes on the mnemonic: SFX_TYPE (.s32, .f32 ...), SFX_BITS (.pred,
 *               .b64 or .b32), SFX_BITS32 (.pred or .b32), SFX_NONE
 *   flags       OPF_PURE: no effect but its results, so it may be moved, recomputed, or deleted
 *               when nothing reads them (a guarded one still reads its destinations);
 *               OPF_CHEAP: recomputing it costs one instruction whatever its type, OPF_CHEAP_INT
 *               only for integer types (remat.c); OPF_LOAD / OPF_STORE: reads / writes memory;
 *               OPF_SYNC: orders threads or asynchronous work, nothing moves across it;
 *               OPF_JUMP: ends a basic block
 *   fields      the Ins fields besides ty, guard, dst and src that carry meaning for it (the dump
 *               prints exactly these): FL_OFF, FL_OFF2, FL_LABEL (a label), FL_COUNT (label as a
 *               number: groups, arrivals, bytes, N, array index), FL_CMP, FL_VEC, FL_SPACE,
 *               FL_REDOP, FL_TY2, FL_TEXT, FL_OWN */
#ifndef TILEC_OPS_H
#define TILEC_OPS_H

#define IR_OPS(X) \
    X(MOV,     "mov",     "mov",     SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, 0) \
    X(ADD,     "add",     "add",     SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, 0) \
    X(SUB,     "sub",     "sub",     SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, 0) \
    X(MUL,     "mul.lo",  "mul",     SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, 0) \
    X(MULHI,   "mul.hi",  "mul.hi",  SFX_TYPE,   OPF_PURE, 0) \
    X(MULWIDE, "mul.wide", "mul.wide", SFX_TYPE, OPF_PURE | OPF_CHEAP_INT, 0) \
    X(MAD,     "mad.lo",  "mad.lo",  SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, 0) \
    X(FMA,     "fma.rn",  "fma.rn",  SFX_TYPE,   OPF_PURE, 0) \
    X(DIV,     "div",     "div.rn",  SFX_TYPE,   OPF_PURE, 0) \
    X(REM,     "rem",     "rem",     SFX_TYPE,   OPF_PURE, 0) \
    X(MIN,     "min",     "min",     SFX_TYPE,   OPF_PURE, 0) \
    X(MAX,     "max",     "max",     SFX_TYPE,   OPF_PURE, 0) \
    X(NEG,     "neg",     "neg",     SFX_TYPE,   OPF_PURE, 0) \
    X(ABS,     "abs",     "abs",     SFX_TYPE,   OPF_PURE, 0) \
    X(BAND,    "and",     "and",     SFX_BITS,   OPF_PURE | OPF_CHEAP_INT, 0) \
    X(BOR,     "or",      "or",      SFX_BITS,   OPF_PURE | OPF_CHEAP_INT, 0) \
    X(BXOR,    "xor",     "xor",     SFX_BITS32, OPF_PURE, 0) \
    X(BNOT,    "not",     "not",     SFX_BITS32, OPF_PURE, 0) \
    X(SHL,     "shl",     "shl",     SFX_BITS,   OPF_PURE | OPF_CHEAP_INT, 0) \
    X(SHR,     "shr",     "shr",     SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, 0) \
    X(SETP,    NULL,      NULL,      SFX_TYPE,   OPF_PURE, FL_CMP) \
    X(SELP,    "selp",    "selp",    SFX_TYPE,   OPF_PURE, 0) \
    X(CVT,     NULL,      NULL,      SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, FL_CMP | FL_TY2) \
    X(EX2,     "ex2.approx.ftz", "ex2.approx.ftz", SFX_TYPE, OPF_PURE, 0) \
    X(LG2,     "lg2.approx.ftz", "lg2.approx.ftz", SFX_TYPE, OPF_PURE, 0) \
    X(SQRT,    "sqrt.rn", "sqrt.rn", SFX_TYPE,   OPF_PURE, 0) \
    X(RSQRT,   "rsqrt.approx.ftz", "rsqrt.approx.ftz", SFX_TYPE, OPF_PURE, 0) \
    X(RCP,     "rcp.rn",  "rcp.rn",  SFX_TYPE,   OPF_PURE, 0) \
    X(TANH,    "tanh.approx", "tanh.approx", SFX_TYPE, OPF_PURE, 0) \
    X(LD,      NULL,      NULL,      SFX_TYPE,   OPF_LOAD, FL_OFF | FL_VEC | FL_SPACE | FL_OWN) \
    X(ST,      NULL,      NULL,      SFX_TYPE,   OPF_STORE, FL_OFF | FL_VEC | FL_SPACE | FL_OWN) \
    X(RED,     NULL,      NULL,      SFX_TYPE,   OPF_LOAD | OPF_STORE, FL_OFF | FL_SPACE | FL_REDOP) \
    X(ATOM,    NULL,      NULL,      SFX_TYPE,   OPF_LOAD | OPF_STORE, FL_OFF | FL_SPACE | FL_REDOP) \
    X(SHFL,    NULL,      NULL,      SFX_NONE,   OPF_SYNC, 0) \
    X(BAR,     NULL,      NULL,      SFX_NONE,   OPF_SYNC, 0) \
    X(LDPARAM, NULL,      NULL,      SFX_TYPE,   OPF_PURE | OPF_CHEAP, 0) \
    X(CVTA,    NULL,      NULL,      SFX_NONE,   OPF_PURE | OPF_CHEAP, FL_SPACE) \
    X(MOVSYM,  NULL,      NULL,      SFX_TYPE,   OPF_PURE | OPF_CHEAP, 0) \
    X(CPASYNC, NULL,      NULL,      SFX_NONE,   OPF_LOAD | OPF_STORE, FL_OFF | FL_OFF2 | FL_VEC) \
    X(CPCOMMIT, NULL,     NULL,      SFX_NONE,   OPF_SYNC, 0) \
    X(CPWAIT,  NULL,      NULL,      SFX_NONE,   OPF_SYNC, FL_COUNT) \
    X(ARRSET,  NULL,      NULL,      SFX_NONE,   0, FL_OFF | FL_COUNT) \
    X(ARRGET,  NULL,      NULL,      SFX_NONE,   0, FL_COUNT) \
    X(LABEL,   NULL,      NULL,      SFX_NONE,   0, FL_LABEL) \
    X(BRA,     NULL,      NULL,      SFX_NONE,   OPF_JUMP, FL_LABEL) \
    X(RET,     NULL,      NULL,      SFX_NONE,   OPF_JUMP, 0) \
    X(COMMENT, NULL,      NULL,      SFX_NONE,   0, FL_TEXT) \
    X(LDMATRIX, NULL,     NULL,      SFX_NONE,   OPF_LOAD, FL_OFF | FL_VEC | FL_CMP) \
    X(MMA,     NULL,      NULL,      SFX_NONE,   0, FL_TY2) \
    X(WGFENCE, NULL,      NULL,      SFX_NONE,   OPF_SYNC, 0) \
    X(WGMMA,   NULL,      NULL,      SFX_NONE,   OPF_LOAD | OPF_SYNC, FL_COUNT | FL_CMP | FL_TY2) \
    X(WGACC,   NULL,      NULL,      SFX_NONE,   0, 0) \
    X(WGCOMMIT, NULL,     NULL,      SFX_NONE,   OPF_SYNC, 0) \
    X(WGWAIT,  NULL,      NULL,      SFX_NONE,   OPF_SYNC, FL_COUNT) \
    X(WGHOLD,  NULL,      NULL,      SFX_NONE,   0, 0) \
    X(FENCEPROXY, NULL,   NULL,      SFX_NONE,   OPF_SYNC, 0) \
    X(MBINIT,  NULL,      NULL,      SFX_NONE,   OPF_STORE | OPF_SYNC, FL_COUNT) \
    X(MBFENCEINIT, NULL,  NULL,      SFX_NONE,   OPF_SYNC, 0) \
    X(MBEXPECT, NULL,     NULL,      SFX_NONE,   OPF_STORE | OPF_SYNC, FL_COUNT) \
    X(MBWAIT,  NULL,      NULL,      SFX_NONE,   OPF_LOAD | OPF_SYNC, 0) \
    X(TMALOAD, NULL,      NULL,      SFX_NONE,   OPF_LOAD | OPF_STORE, FL_OFF)

enum { SFX_NONE, SFX_TYPE, SFX_BITS, SFX_BITS32 };
enum {
    OPF_PURE = 1 << 0, OPF_CHEAP = 1 << 1, OPF_CHEAP_INT = 1 << 2, OPF_LOAD = 1 << 3, OPF_STORE = 1 << 4,
    OPF_SYNC = 1 << 5, OPF_JUMP = 1 << 6
};
enum {
    FL_OFF = 1 << 0, FL_OFF2 = 1 << 1, FL_LABEL = 1 << 2, FL_COUNT = 1 << 3, FL_CMP = 1 << 4, FL_VEC = 1 << 5,
    FL_SPACE = 1 << 6, FL_REDOP = 1 << 7, FL_TY2 = 1 << 8, FL_TEXT = 1 << 9, FL_OWN = 1 << 10
};

typedef struct {
    const char *name;
    const char *ptx_int, *ptx_float;
    int suffix, flags, fields;
} OpInfo;

#endif
