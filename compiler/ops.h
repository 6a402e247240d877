/* ops.h: the thread-level IR's operations, one row each, with every property a pass asks of an
 * operation. ir.c, addrsplit.c, remat.c, schedule.c, emit_ptx.c, ir_verify.c and the IR dump
 * read this table and nothing else, so a new operation is one row here plus its spelling where
 * it is special.
 *
 * X(NAME, int, float, suffix, flags, fields, dsts, srcs)
 *   int, float  the PTX mnemonic for integer or bit types and for floating types; NULL where
 *               emit_ptx.c writes the instruction from its fields (memory, tensor cores, ...)
 *   suffix      how the type goes on the mnemonic: SFX_TYPE (.s32, .f32 ...), SFX_BITS (.pred,
 *               .b64 or .b32), SFX_NONE
 *   flags       OPF_PURE: no effect but its results, so it may be moved, recomputed, or deleted
 *               when nothing reads them (a guarded one still reads its destinations);
 *               OPF_CHEAP: recomputing it costs one instruction whatever its type, OPF_CHEAP_INT
 *               only for integer types (remat.c); OPF_LOAD / OPF_STORE: reads / writes memory;
 *               OPF_SYNC: orders threads or asynchronous work, nothing moves across it;
 *               OPF_JUMP: ends a basic block
 *   fields      the Ins fields besides ty, guard, dst and src that carry meaning for it (the dump
 *               prints exactly these), one flag a field: FL_OFF, FL_OFF2, FL_LABEL, FL_INFLIGHT,
 *               FL_ARRAY, FL_N, FL_COUNT, FL_BYTES, FL_CMP, FL_RND, FL_TRANS, FL_A_REGS, FL_VEC, FL_SPACE,
 *               FL_REDOP, FL_TY2, FL_TY3, FL_TEXT, FL_OWN, FL_FRESH
 *   dsts, srcs  how many destination registers and source operands it has (Ins.ndst, Ins.nsrc):
 *               N_VEC, one per vector element (LD, LDMATRIX: vec; ST: the address and vec
 *               values); N_VAR, fixed by other fields, which ir_verify.c checks it against */
#ifndef TILEC_OPS_H
#define TILEC_OPS_H

#define IR_OPS(X) \
    X(MOV,     "mov",     "mov",     SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, 0, 1, 1) \
    X(ADD,     "add",     "add",     SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, 0, 1, 2) \
    X(SUB,     "sub",     "sub",     SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, 0, 1, 2) \
    X(MUL,     "mul.lo",  "mul",     SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, 0, 1, 2) \
    X(MULHI,   "mul.hi",  "mul.hi",  SFX_TYPE,   OPF_PURE, 0, 1, 2) \
    X(MULWIDE, "mul.wide", "mul.wide", SFX_TYPE, OPF_PURE | OPF_CHEAP_INT, 0, 1, 2) \
    X(MAD,     "mad.lo",  "mad.lo",  SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, 0, 1, 3) \
    X(FMA,     "fma.rn",  "fma.rn",  SFX_TYPE,   OPF_PURE, 0, 1, 3) \
    X(DIV,     "div",     "div.rn",  SFX_TYPE,   OPF_PURE, 0, 1, 2) \
    X(REM,     "rem",     "rem",     SFX_TYPE,   OPF_PURE, 0, 1, 2) \
    X(MIN,     "min",     "min",     SFX_TYPE,   OPF_PURE, 0, 1, 2) \
    X(MAX,     "max",     "max",     SFX_TYPE,   OPF_PURE, 0, 1, 2) \
    X(NEG,     "neg",     "neg",     SFX_TYPE,   OPF_PURE, 0, 1, 1) \
    X(ABS,     "abs",     "abs",     SFX_TYPE,   OPF_PURE, 0, 1, 1) \
    X(BAND,    "and",     "and",     SFX_BITS,   OPF_PURE | OPF_CHEAP_INT, 0, 1, 2) \
    X(BOR,     "or",      "or",      SFX_BITS,   OPF_PURE | OPF_CHEAP_INT, 0, 1, 2) \
    X(BXOR,    "xor",     "xor",     SFX_BITS,   OPF_PURE, 0, 1, 2) \
    X(BNOT,    "not",     "not",     SFX_BITS,   OPF_PURE, 0, 1, 1) \
    X(SHL,     "shl",     "shl",     SFX_BITS,   OPF_PURE | OPF_CHEAP_INT, 0, 1, 2) \
    X(SHR,     "shr",     "shr",     SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, 0, 1, 2) \
    X(SETP,    NULL,      NULL,      SFX_TYPE,   OPF_PURE, FL_CMP, 1, 2) \
    X(SELP,    "selp",    "selp",    SFX_TYPE,   OPF_PURE, 0, 1, 3) \
    X(CVT,     NULL,      NULL,      SFX_TYPE,   OPF_PURE | OPF_CHEAP_INT, FL_RND | FL_TY2, 1, 1) \
    X(PACK2,   NULL,      NULL,      SFX_NONE,   OPF_PURE, 0, 1, 2) \
    X(UNPACK2, NULL,      NULL,      SFX_NONE,   OPF_PURE, 0, 2, 1) \
    X(BFE,     "bfe",     NULL,      SFX_TYPE,   OPF_PURE, 0, 1, 3) \
    X(BFI,     "bfi",     NULL,      SFX_BITS,   OPF_PURE, 0, 1, 4) \
    X(F8WIDEN, NULL,      NULL,      SFX_NONE,   OPF_PURE, FL_TEXT, 1, 1) \
    X(F8NARROW, NULL,     NULL,      SFX_NONE,   OPF_PURE, FL_TEXT, 1, 2) \
    X(EX2,     "ex2.approx.ftz", "ex2.approx.ftz", SFX_TYPE, OPF_PURE, 0, 1, 1) \
    X(LG2,     "lg2.approx.ftz", "lg2.approx.ftz", SFX_TYPE, OPF_PURE, 0, 1, 1) \
    X(SQRT,    "sqrt.rn", "sqrt.rn", SFX_TYPE,   OPF_PURE, 0, 1, 1) \
    X(RSQRT,   "rsqrt.approx.ftz", "rsqrt.approx.ftz", SFX_TYPE, OPF_PURE, 0, 1, 1) \
    X(RCP,     "rcp.rn",  "rcp.rn",  SFX_TYPE,   OPF_PURE, 0, 1, 1) \
    X(TANH,    "tanh.approx", "tanh.approx", SFX_TYPE, OPF_PURE, 0, 1, 1) \
    X(COS,     "cos.approx.ftz", "cos.approx.ftz", SFX_TYPE, OPF_PURE, 0, 1, 1) \
    X(LD,      NULL,      NULL,      SFX_TYPE,   OPF_LOAD, FL_OFF | FL_VEC | FL_SPACE | FL_OWN, N_VEC, 1) \
    X(ST,      NULL,      NULL,      SFX_TYPE,   OPF_STORE, FL_OFF | FL_VEC | FL_SPACE | FL_OWN, 0, N_VEC) \
    X(RED,     NULL,      NULL,      SFX_TYPE,   OPF_LOAD | OPF_STORE, FL_OFF | FL_SPACE | FL_REDOP, 0, 2) \
    X(ATOM,    NULL,      NULL,      SFX_TYPE,   OPF_LOAD | OPF_STORE, FL_OFF | FL_SPACE | FL_REDOP, 1, N_VAR) \
    X(SHFL,    NULL,      NULL,      SFX_NONE,   OPF_SYNC, 0, 1, 2) \
    X(BAR,     NULL,      NULL,      SFX_NONE,   OPF_SYNC, FL_COUNT, 0, 0) \
    X(BARRED,  NULL,      NULL,      SFX_NONE,   OPF_SYNC, FL_COUNT, 1, 1) \
    X(LDPARAM, NULL,      NULL,      SFX_TYPE,   OPF_PURE | OPF_CHEAP, 0, 1, 1) \
    X(CVTA,    NULL,      NULL,      SFX_NONE,   OPF_PURE | OPF_CHEAP, FL_SPACE, 1, 1) \
    X(CVTAGEN, NULL,      NULL,      SFX_NONE,   OPF_PURE | OPF_CHEAP, FL_SPACE, 1, 1) \
    X(MOVSYM,  NULL,      NULL,      SFX_TYPE,   OPF_PURE | OPF_CHEAP, 0, 1, 1) \
    X(CPASYNC, NULL,      NULL,      SFX_NONE,   OPF_LOAD | OPF_STORE, FL_OFF | FL_OFF2 | FL_VEC, 0, N_VAR) \
    X(CPCOMMIT, NULL,     NULL,      SFX_NONE,   OPF_SYNC, 0, 0, 0) \
    X(CPWAIT,  NULL,      NULL,      SFX_NONE,   OPF_SYNC, FL_INFLIGHT, 0, 0) \
    X(ARRSET,  NULL,      NULL,      SFX_NONE,   0, FL_OFF | FL_ARRAY, 0, 1) \
    X(ARRGET,  NULL,      NULL,      SFX_NONE,   0, FL_ARRAY, 1, 1) \
    X(LABEL,   NULL,      NULL,      SFX_NONE,   0, FL_LABEL, 0, 0) \
    X(BRA,     NULL,      NULL,      SFX_NONE,   OPF_JUMP, FL_LABEL, 0, 0) \
    X(RET,     NULL,      NULL,      SFX_NONE,   OPF_JUMP, 0, 0, 0) \
    X(COMMENT, NULL,      NULL,      SFX_NONE,   0, FL_TEXT, 0, 0) \
    X(LDMATRIX, NULL,     NULL,      SFX_NONE,   OPF_LOAD, FL_OFF | FL_VEC | FL_TRANS, N_VEC, 1) \
    X(MMA,     NULL,      NULL,      SFX_NONE,   0, FL_TY2 | FL_TY3, 4, 10) \
    X(WGFENCE, NULL,      NULL,      SFX_NONE,   OPF_SYNC, 0, 0, 0) \
    X(WGMMA,   NULL,      NULL,      SFX_NONE,   OPF_LOAD | OPF_SYNC, FL_N | FL_TRANS | FL_A_REGS | FL_FRESH | FL_TY2 | FL_TY3, 0, N_VAR) \
    X(WGACC,   NULL,      NULL,      SFX_NONE,   0, 0, 4, N_VAR) \
    X(WGCOMMIT, NULL,     NULL,      SFX_NONE,   OPF_SYNC, 0, 0, 0) \
    X(WGWAIT,  NULL,      NULL,      SFX_NONE,   OPF_SYNC, FL_INFLIGHT, 0, 0) \
    X(WGHOLD,  NULL,      NULL,      SFX_NONE,   0, 0, 0, N_VAR) \
    X(FENCEPROXY, NULL,   NULL,      SFX_NONE,   OPF_SYNC, 0, 0, 0) \
    X(FENCEGPU, NULL,     NULL,      SFX_NONE,   OPF_SYNC, 0, 0, 0) \
    X(MBINIT,  NULL,      NULL,      SFX_NONE,   OPF_STORE | OPF_SYNC, FL_COUNT, 0, 1) \
    X(MBFENCEINIT, NULL,  NULL,      SFX_NONE,   OPF_SYNC, 0, 0, 0) \
    X(MBINVAL, NULL,      NULL,      SFX_NONE,   OPF_STORE | OPF_SYNC, 0, 0, 1) \
    X(MBEXPECT, NULL,     NULL,      SFX_NONE,   OPF_STORE | OPF_SYNC, FL_BYTES, 0, 1) \
    X(MBARRIVE, NULL,     NULL,      SFX_NONE,   OPF_STORE | OPF_SYNC, 0, 0, 1) \
    X(MBWAIT,  NULL,      NULL,      SFX_NONE,   OPF_LOAD | OPF_SYNC, 0, 1, 2) \
    X(TMALOAD, NULL,      NULL,      SFX_NONE,   OPF_LOAD | OPF_STORE, FL_OFF | FL_COUNT, 0, N_VAR) \
    X(TMASTORE, NULL,     NULL,      SFX_NONE,   OPF_LOAD | OPF_STORE | OPF_SYNC, FL_OFF, 0, N_VAR) \
    X(BULKCOMMIT, NULL,   NULL,      SFX_NONE,   OPF_SYNC, 0, 0, 0) \
    X(BULKWAIT, NULL,     NULL,      SFX_NONE,   OPF_SYNC, FL_INFLIGHT, 0, 0) \
    X(MAPA,    "mapa.shared::cluster", NULL, SFX_TYPE, OPF_PURE, 0, 1, 2) \
    X(STCLUSTER, NULL,    NULL,      SFX_TYPE,   OPF_STORE | OPF_SYNC, FL_OFF | FL_VEC, 0, N_VEC) \
    X(MBARRIVEC, NULL,    NULL,      SFX_NONE,   OPF_STORE | OPF_SYNC, 0, 0, 1) \
    X(CLUSTERSYNC, NULL,  NULL,      SFX_NONE,   OPF_SYNC, 0, 0, 0) \
    X(REGINC,  NULL,      NULL,      SFX_NONE,   OPF_SYNC, FL_COUNT, 0, 0) \
    X(REGDEC,  NULL,      NULL,      SFX_NONE,   OPF_SYNC, FL_COUNT, 0, 0) \
    X(VPRINTF, NULL,      NULL,      SFX_NONE,   OPF_LOAD | OPF_SYNC, 0, 0, 2)

enum { SFX_NONE, SFX_TYPE, SFX_BITS };
enum { N_VEC = -1, N_VAR = -2 };
enum {
    OPF_PURE = 1 << 0, OPF_CHEAP = 1 << 1, OPF_CHEAP_INT = 1 << 2, OPF_LOAD = 1 << 3, OPF_STORE = 1 << 4,
    OPF_SYNC = 1 << 5, OPF_JUMP = 1 << 6
};
enum {
    FL_OFF = 1 << 0, FL_OFF2 = 1 << 1, FL_LABEL = 1 << 2, FL_INFLIGHT = 1 << 3, FL_ARRAY = 1 << 4,
    FL_N = 1 << 5, FL_COUNT = 1 << 6, FL_BYTES = 1 << 7, FL_CMP = 1 << 8, FL_RND = 1 << 9,
    FL_TRANS = 1 << 10, FL_VEC = 1 << 11, FL_SPACE = 1 << 12, FL_REDOP = 1 << 13, FL_TY2 = 1 << 14,
    FL_TEXT = 1 << 15, FL_OWN = 1 << 16, FL_A_REGS = 1 << 17, FL_FRESH = 1 << 18, FL_TY3 = 1 << 19
};

typedef struct {
    const char *name;
    const char *ptx_int, *ptx_float;
    int suffix, flags, fields;
    int dsts, srcs;
} OpInfo;

#endif
