/* lower_matmul.c: acc += a @ b on the SIMT path (IEEE FFMA; tf32 operands are rounded first).
 * Operands are staged through shared memory: A transposed (k-major, so each thread's rows are one
 * 16-byte vector), B as is. The accumulator uses layout_matmul: each thread owns TM x TN outputs
 * and reads TM + TN operands from shared memory per k for TM * TN FMAs. */
#include <stdlib.h>
#include "tilec.h"

/* A shared operand view: element (i, k) of A or (k, j) of B at byte
 * off + (i * istride + k * kstride) * 4 (A) or off + (k * kstride + j * jstride) * 4 (B). */
typedef struct {
    int off;
    int stride_mn;   /* elements between consecutive m (A) or n (B) */
    int stride_k;    /* elements between consecutive k */
    int es;
    ElemType type;
} View;

static int smem_sym(Lower *c, int off)
{
    int r = new_reg(c->f, RC_R);
    Ins *in = emit_ins(c->f, OP_MOVSYM, PT_U32);
    in->dst[0] = r;
    in->ndst = 1;
    in->src[0] = SYM(arena_printf(c->a, "tilec_smem+%d", off));
    in->nsrc = 1;
    return r;
}

static int slot_of(const Layout *L, int o0, int i0, int o1, int i1)
{
    return ((o0 * L->V[0] + i0) * L->O[1] + o1) * L->V[1] + i1;
}

/* Writes tile v (shape [R, C]) to shared memory so that element (r, c) lands at
 * off + (r * rs + c * cs) * 4. */
static void stage(Lower *c, Tile v, int off, int rs, int cs)
{
    Func *f = c->f;
    Layout *L = &v.L;
    int base = smem_sym(c, off);
    int t0 = thread_coord(c, L, 0), t1 = thread_coord(c, L, 1);
    int r0 = ir_bin(f, OP_MUL, PT_U32, R(t0), IMM(L->V[0] * rs));
    int c0 = ir_bin(f, OP_MUL, PT_U32, R(t1), IMM(L->V[1] * cs));
    int addr = ir_tern(f, OP_MAD, PT_U32, R(ir_bin(f, OP_ADD, PT_U32, R(r0), R(c0))), IMM(4), R(base));
    int prim = primary_pred(c, L);
    int vm = cs == 1 ? (L->V[1] >= 4 ? 4 : L->V[1]) : 1;
    for (int o0 = 0; o0 < L->O[0]; o0++)
        for (int i0 = 0; i0 < L->V[0]; i0++)
            for (int o1 = 0; o1 < L->O[1]; o1++)
                for (int i1 = 0; i1 < L->V[1]; i1 += vm) {
                    int rr = o0 * L->T[0] * L->V[0] + i0, cc = o1 * L->T[1] * L->V[1] + i1;
                    int val[4];
                    for (int k = 0; k < vm; k++)
                        val[k] = opnd_reg(c, v.v[slot_of(L, o0, i0, o1, i1 + k)], PT_F32);
                    Ins *in = emit_ins(f, OP_ST, PT_F32);
                    in->space = SP_SHARED;
                    in->vec = (uint8_t)vm;
                    in->src[0] = R(addr);
                    for (int k = 0; k < vm; k++)
                        in->src[1 + k] = R(val[k]);
                    in->nsrc = 1 + vm;
                    in->off = ((int64_t)rr * rs + (int64_t)cc * cs) * 4;
                    in->guard = prim;
                    ir_naive_addr(f);
                }
}

static View operand(Lower *c, Expr *e, bool is_a, int M_or_N, int K)
{
    View w = { 0, 0, 0, 4, TY_F32 };
    if (e->kind == E_NAME && e->sym->kind == SYM_VAR && e->sym->is_shared && e->sym->type == TY_F32) {
        SymInfo *si = e->sym->lower;
        w.off = si->smem_off;
        if (is_a) {          /* A[m][k] row-major */
            w.stride_mn = si->smem_ld;
            w.stride_k = 1;
        } else {             /* B[k][n] row-major */
            w.stride_k = si->smem_ld;
            w.stride_mn = 1;
        }
        return w;
    }
    Tile v = lower_expr(c, e, NULL);
    if (v.L.bcast[0] || v.L.bcast[1] || v.L.rank != 2) {
        Layout rm = layout_rowmajor(e->shape, c->threads, 4);
        v = to_layout(c, v, &rm);
    }
    if (is_a) {
        int pitch = M_or_N + 4;            /* keeps 16-byte alignment, spreads banks */
        w.off = smem_alloc(c, K * pitch * 4);
        w.stride_mn = 1;
        w.stride_k = pitch;
        stage(c, v, w.off, 1, pitch);      /* (m, k) -> k * pitch + m */
    } else {
        int pitch = M_or_N;
        w.off = smem_alloc(c, K * pitch * 4);
        w.stride_mn = 1;
        w.stride_k = pitch;
        stage(c, v, w.off, pitch, 1);      /* (k, n) -> k * pitch + n */
    }
    return w;
}

/* Loads the thread's TM (or TN) operand values for one k. */
static void fragment(Lower *c, View *w, int base, const Layout *L, int d, int k, Opnd *out)
{
    Func *f = c->f;
    int vm = (w->stride_mn == 1 && L->V[d] % 4 == 0) ? 4 : 1;
    for (int o = 0; o < L->O[d]; o++)
        for (int i = 0; i < L->V[d]; i += vm) {
            int mn = o * L->T[d] * L->V[d] + i;
            Ins *in = emit_ins(f, OP_LD, PT_F32);
            in->space = SP_SHARED;
            in->vec = (uint8_t)vm;
            for (int j = 0; j < vm; j++) {
                int r = new_reg(f, RC_F);
                in = &f->code.v[f->code.n - 1];
                in->dst[j] = r;
                out[o * L->V[d] + i + j] = R(r);
            }
            in->ndst = vm;
            in->src[0] = R(base);
            in->nsrc = 1;
            in->off = ((int64_t)mn * w->stride_mn + (int64_t)k * w->stride_k) * 4;
            ir_naive_addr(f);
        }
}

void lower_matmul(Lower *c, Tile *acc, Expr *a, Expr *b, bool accumulate)
{
    Func *f = c->f;
    Layout *L = &acc->L;
    int M = L->S[0], N = L->S[1];
    int K = (int)a->shape.dim[1];
    const char *saved = f->cur_what;
    int nslots = layout_slots(L);
    if (!accumulate)
        for (int s = 0; s < nslots; s++) {
            Ins *in = emit_ins(f, OP_MOV, PT_F32);
            in->dst[0] = acc->v[s].reg;
            in->ndst = 1;
            in->src[0] = FIMM(0);
            in->nsrc = 1;
        }
    f->cur_what = "matmul operand";
    View va = operand(c, a, true, M, K);
    View vb = operand(c, b, false, N, K);
    ir_bar(f);
    /* thread bases: rows t0 * V0, columns t1 * V1 */
    int t0 = thread_coord(c, L, 0), t1 = thread_coord(c, L, 1);
    int abase = ir_tern(f, OP_MAD, PT_U32, R(t0), IMM(L->V[0] * va.stride_mn * 4), R(smem_sym(c, va.off)));
    int bbase = ir_tern(f, OP_MAD, PT_U32, R(t1), IMM(L->V[1] * vb.stride_mn * 4), R(smem_sym(c, vb.off)));
    int TM = L->O[0] * L->V[0], TN = L->O[1] * L->V[1];
    Opnd *fa = malloc(sizeof(Opnd) * (size_t)TM), *fb = malloc(sizeof(Opnd) * (size_t)TN);
    f->cur_what = "matmul fragment";
    for (int k = 0; k < K; k++) {
        fragment(c, &va, abase, L, 0, k, fa);
        fragment(c, &vb, bbase, L, 1, k, fb);
        for (int o0 = 0; o0 < L->O[0]; o0++)
            for (int i0 = 0; i0 < L->V[0]; i0++)
                for (int o1 = 0; o1 < L->O[1]; o1++)
                    for (int i1 = 0; i1 < L->V[1]; i1++) {
                        int s = slot_of(L, o0, i0, o1, i1);
                        Ins *in = emit_ins(f, OP_FMA, PT_F32);
                        in->dst[0] = acc->v[s].reg;
                        in->ndst = 1;
                        in->src[0] = fa[o0 * L->V[0] + i0];
                        in->src[1] = fb[o1 * L->V[1] + i1];
                        in->src[2] = acc->v[s];
                        in->nsrc = 3;
                    }
    }
    free(fa);
    free(fb);
    /* the next writer of these buffers waits for this k loop's readers */
    ir_bar(f);
    f->cur_what = saved;
}
