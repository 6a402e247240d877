/* remat.c: contract: recomputes cheap values in each basic block that reads them instead of holding
 * them in registers from their one definition, then deletes the definitions nobody reads; never
 * changes what the code computes.
 *
 * Cheap (a value this pass may recompute): defined once, unguarded, by a chain of at most
 * REMAT_MAX instructions whose leaves are kernel parameters, special registers (%tid, %ctaid),
 * the shared-memory symbol or immediates, through integer moves, adds, multiplies, shifts, masks,
 * conversions and generic-to-global casts. These are what tile code keeps around the longest:
 * tensor bases and strides, block offsets, the thread index. Held across a loop they cost
 * registers on every iteration; recomputed, they cost a few integer instructions next to the
 * loop's memory traffic and math (and ptxas sees constant-bank operands, which need no register).
 *
 * A chain may also start from an *anchor*: any other integer register defined exactly once,
 * unguarded (a block's first row found with divisions, say). The anchor is not copied, only read
 * again: it lives on (one register) while the wider values derived from it (per-row 64-bit bases)
 * are recomputed instead of held -- so how a kernel finds its offsets outside the hot loop does
 * not change what the loop holds.
 *
 * A value is recomputed in a block other than its definition's, once per block, just before its
 * first reader there; the copies carry the original's source name for the report. */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

enum { REMAT_MAX = 4 };

typedef struct { Ins *v; int n, cap; } InsList;

/* Recomputing it costs one instruction (ops.h): integer arithmetic only, floats cost more. */
static bool cheap_op(const Ins *in)
{
    if (op_has(in->op, OPF_CHEAP))
        return true;
    return op_has(in->op, OPF_CHEAP_INT) && in->ty != PT_F32 && in->ty != PT_F16 && in->ty != PT_BF16 &&
           in->ty != PT_F64 && in->ty != PT_PRED;
}

typedef struct {
    Func *f;
    int *def;          /* the instruction defining a register, -1 none, -2 several */
    int *cost;         /* instructions to recompute it (0: not cheap), -1 not known yet */
    int *copy;         /* in the block being rewritten: the register holding its copy, -1 none */
    int *block_of;     /* instruction -> block */
} Remat;

/* Defined once, unguarded, an integer: may be read again where a chain is recomputed. */
static bool anchor(Remat *r, int v)
{
    int d = r->def[v];
    if (d < 0)
        return false;
    Ins *in = &r->f->code.v[d];
    RegClass rc = r->f->regs.v[v].rc;
    return in->guard < 0 && (rc == RC_R || rc == RC_D);
}

static int cost_of(Remat *r, int v)
{
    if (r->cost[v] >= 0)
        return r->cost[v];
    r->cost[v] = 0;                         /* cycles, if any, are not cheap */
    int d = r->def[v];
    if (d < 0)
        return 0;
    Ins *in = &r->f->code.v[d];
    if (in->guard >= 0 || in->ndst != 1 || !cheap_op(in))
        return 0;
    int c = 1;
    for (int s = 0; s < in->nsrc; s++) {
        if (in->src[s].kind != O_REG)
            continue;
        int k = cost_of(r, in->src[s].reg);
        if (!k && !anchor(r, in->src[s].reg))
            return 0;
        c += k;
    }
    return r->cost[v] = c <= REMAT_MAX ? c : 0;
}

/* Appends a copy of v's chain to out (registers already copied in this block are reused). */
static int clone(Remat *r, int v, InsList *out, int line, int *touched, int *ntouched)
{
    if (r->copy[v] >= 0)
        return r->copy[v];
    Ins in = r->f->code.v[r->def[v]];
    for (int s = 0; s < in.nsrc; s++)
        if (in.src[s].kind == O_REG && r->cost[in.src[s].reg] > 0)   /* anchors are read as they are */
            in.src[s].reg = clone(r, in.src[s].reg, out, line, touched, ntouched);
    const char *saved = r->f->cur_what;
    r->f->cur_what = r->f->regs.v[v].what;
    int nr = new_reg(r->f, r->f->regs.v[v].rc);
    r->f->cur_what = saved;
    in.dst[0] = nr;
    in.line = line;
    vec_push(out, in);
    r->copy[v] = nr;
    touched[(*ntouched)++] = v;
    return nr;
}

static bool ends_block(const Ins *in) { return op_has(in->op, OPF_JUMP); }

void remat_cheap(Func *f)
{
    int n = f->code.n, nv = f->regs.n;
    Remat r = { f, malloc(sizeof(int) * ((size_t)nv + 1)), malloc(sizeof(int) * ((size_t)nv + 1)),
                NULL, malloc(sizeof(int) * ((size_t)n + 1)) };
    for (int v = 0; v < nv; v++)
        r.def[v] = -1, r.cost[v] = -1;
    int block = 0;
    for (int i = 0; i < n; i++) {
        Ins *in = &f->code.v[i];
        if (in->op == OP_LABEL && i > 0 && !ends_block(&f->code.v[i - 1]))
            block++;
        r.block_of[i] = block;
        for (int d = 0; d < in->ndst; d++)
            r.def[in->dst[d]] = r.def[in->dst[d]] == -1 ? i : -2;
        if (ends_block(in))
            block++;
    }
    /* a register an in-flight wgmma reads (its A fragment) is the one it reads until the wait,
       held there by WGHOLD: never a recomputed copy */
    for (int i = 0; i < n; i++) {
        Ins *in = &f->code.v[i];
        if (in->op == OP_WGMMA || in->op == OP_WGHOLD)
            for (int s = 0; s < in->nsrc; s++)
                if (in->src[s].kind == O_REG)
                    r.cost[in->src[s].reg] = 0;
    }
    for (int v = 0; v < nv; v++)
        cost_of(&r, v);
    /* copies get new registers: size the per-register tables for the worst case */
    r.copy = malloc(sizeof(int) * ((size_t)nv * (REMAT_MAX + 1) + 1));
    int *touched = malloc(sizeof(int) * ((size_t)nv * (REMAT_MAX + 1) + 1)), ntouched = 0;
    for (int v = 0; v < nv * (REMAT_MAX + 1); v++)
        r.copy[v] = -1;
    InsList out = { 0 };

    for (int i = 0; i < n; i++) {
        if (i > 0 && r.block_of[i] != r.block_of[i - 1]) {
            while (ntouched)
                r.copy[touched[--ntouched]] = -1;
        }
        Ins in = f->code.v[i];
        for (int s = 0; s < in.nsrc; s++) {
            if (in.src[s].kind != O_REG)
                continue;
            int v = in.src[s].reg;
            if (v < nv && r.cost[v] > 0 && r.block_of[r.def[v]] != r.block_of[i])
                in.src[s].reg = clone(&r, v, &out, in.line, touched, &ntouched);
        }
        vec_push(&out, in);
    }
    vec_free(&f->code);
    f->code.v = out.v, f->code.n = out.n, f->code.cap = out.cap;
    ir_dce(f);
    free(r.def);
    free(r.cost);
    free(r.copy);
    free(touched);
    free(r.block_of);
}
