/* lower_matmul.c: acc (+)= a @ b.
 * Operands go to shared memory as row-major matrices of their own element type (or are there
 * already: shared tiles, pipelined stage buffers), then either the tensor-core path (lower_mma.c)
 * or the SIMT path here computes: each thread owns TM x TN outputs (layout_matmul) and, per group
 * of 4 k, reads TM 16-byte vectors of A and TN/4 per k of B for TM * TN FMAs. IEEE FFMA for f32;
 * tf32 operands are rounded to tf32 first, f16/bf16 widened. */
#include <stdlib.h>
#include "lower.h"

static int slot_of(const Layout *L, int o0, int i0, int o1, int i1)
{
    return ((o0 * L->V[0] + i0) * L->O[1] + o1) * L->V[1] + i1;
}

int smem_base_reg(Lower *c, int off)
{
    int r = new_reg(c->f, RC_R);
    Ins *in = emit_ins(c->f, OP_MOVSYM, PT_U32);
    in->dst[0] = r;
    in->ndst = 1;
    in->src[0] = SYM(arena_printf(c->a, "tilec_smem+%d", off));
    in->nsrc = 1;
    return r;
}

Expr *matmul_operand(Expr *e, bool *tf32)
{
    *tf32 = false;
    if (e->kind == E_CAST && e->to == TY_TF32) {
        *tf32 = true;
        return e->a;
    }
    return e;
}

static ElemType stored_type(Expr *e)
{
    return e->type == TY_F16 || e->type == TY_BF16 ? e->type : e->type == TY_I32 ? TY_I32 : TY_F32;
}

bool matmul_uses_mma(Lower *c, Expr *a, Expr *b, int M, int N, int K)
{
    bool ta, tb;
    Expr *x = matmul_operand(a, &ta), *y = matmul_operand(b, &tb);
    (void)y;
    ElemType t = stored_type(x);
    if (t == TY_F32 && !ta)
        return false;             /* IEEE f32 stays on FFMA */
    return mma_supported(c, t, ta, M, N, K);
}

/* The layout of a @ b's M x N result: the tensor cores' accumulator layout or the SIMT one. */
Layout matmul_layout(Lower *c, Expr *a, Expr *b, Shape s)
{
    int M = (int)s.dim[0], N = (int)s.dim[1], K = (int)a->shape.dim[1];
    if (!matmul_uses_mma(c, a, b, M, N, K))
        return layout_matmul(s, c->threads);
    bool tf;
    ElemType t = stored_type(matmul_operand(a, &tf));
    return layout_mma(s, c->threads, t, wgmma_shape(c, t, tf, M, N, K));
}

/* Row pitch in elements: a 16-byte pad keeps rows 16-byte aligned and spreads them over banks. */
int matmul_pitch(Lower *c, ElemType t, int cols, bool mma)
{
    (void)c;
    if (mma)
        return mma_pitch(t, cols);
    int es = type_size(t);
    return cols + 16 / es;
}

/* Stages an operand that is not in shared memory yet. */
static SmemMatrix stage_operand(Lower *c, Expr *e, bool mma)
{
    bool tf32;
    Expr *x = matmul_operand(e, &tf32);
    SmemMatrix m = { -1, 0, stored_type(x), tf32, (int)x->shape.dim[0], (int)x->shape.dim[1], SWZ_NONE, 0 };
    if (x->kind == E_NAME && x->sym->kind == SYM_VAR && x->sym->is_shared) {
        SymInfo *si = x->sym->lower;
        m.base = pipe_buffer(c, NULL, x->sym);
        if (m.base < 0)
            m.base = smem_base_reg(c, si->smem_off);
        m.pitch = si->smem_ld;
        m.type = x->sym->type;
        return m;
    }
    for (int i = 0; i < c->npipe; i++)
        if (c->pipe[i].operand == x && !c->pipe[i].var) {
            m.pitch = c->pipe[i].pitch;
            m.swz = c->pipe[i].swz;
            m.type = c->pipe[i].type;
            m.stage_bytes = c->pipe[i].bytes;
            m.base = pipe_buffer(c, x, NULL);
            return m;
        }
    m.pitch = matmul_pitch(c, m.type, m.cols, mma);
    int off = smem_alloc(c, m.rows * m.pitch * type_size(m.type));
    Tile v = lower_expr(c, x, NULL);
    m.base = smem_base_reg(c, off);
    store_tile_smem(c, v, m.base, m.pitch, m.type);
    return m;
}

/* Loads n consecutive elements of a row of m starting at byte offset `off` from base, widened. */
static void smem_row(Lower *c, SmemMatrix *m, int base, int64_t off, int n, Opnd *out)
{
    Func *f = c->f;
    int es = type_size(m->type);
    int vm = (es == 4 && n % 4 == 0 && m->pitch % 4 == 0) ? 4 : 1;
    for (int j = 0; j < n; j += vm) {
        int d[4];
        PType mt = m->type == TY_F32 ? PT_F32 : PT_B16;
        for (int q = 0; q < vm; q++)
            d[q] = new_reg(f, ptype_class(mt));
        Ins *in = emit_ins(f, OP_LD, mt);
        in->space = SP_SHARED;
        in->vec = (uint8_t)vm;
        for (int q = 0; q < vm; q++)
            in->dst[q] = d[q];
        in->ndst = vm;
        in->src[0] = R(base);
        in->nsrc = 1;
        in->off = off + (int64_t)j * es;
        ir_naive_addr(f);
        for (int q = 0; q < vm; q++) {
            Opnd v = widen_held(c, m->type, d[q]);
            if (m->tf32)
                v = R(ir_mov(f, PT_F32, R(round_tf32_value(c, v.reg))));
            out[j + q] = v;
        }
    }
}

static void simt_matmul(Lower *c, Tile *acc, SmemMatrix *a, SmemMatrix *b)
{
    Func *f = c->f;
    Layout *L = &acc->L;
    int K = a->cols;
    int esa = type_size(a->type), esb = type_size(b->type);
    int t0 = thread_coord(c, L, 0), t1 = thread_coord(c, L, 1);
    int abase = ir_tern(f, OP_MAD, PT_U32, R(t0), IMM((int64_t)L->V[0] * a->pitch * esa), R(a->base));
    int bbase = ir_tern(f, OP_MAD, PT_U32, R(t1), IMM((int64_t)L->V[1] * esb), R(b->base));
    int TM = L->O[0] * L->V[0], TN = L->O[1] * L->V[1];
    int KV = (K % 4 == 0) ? 4 : 1;
    Opnd *fa = malloc(sizeof(Opnd) * (size_t)(TM * KV)), *fb = malloc(sizeof(Opnd) * (size_t)TN);
    f->cur_what = "matmul fragment";
    for (int kc = 0; kc < K; kc += KV) {
        for (int o0 = 0; o0 < L->O[0]; o0++)
            for (int i0 = 0; i0 < L->V[0]; i0++) {
                int row = o0 * L->T[0] * L->V[0] + i0;
                smem_row(c, a, abase, ((int64_t)row * a->pitch + kc) * esa, KV, &fa[(o0 * L->V[0] + i0) * KV]);
            }
        for (int kk = 0; kk < KV; kk++) {
            for (int o1 = 0; o1 < L->O[1]; o1++)
                smem_row(c, b, bbase, ((int64_t)(kc + kk) * b->pitch + (int64_t)o1 * L->T[1] * L->V[1]) * esb, L->V[1],
                         &fb[o1 * L->V[1]]);
            for (int o0 = 0; o0 < L->O[0]; o0++)
                for (int i0 = 0; i0 < L->V[0]; i0++)
                    for (int o1 = 0; o1 < L->O[1]; o1++)
                        for (int i1 = 0; i1 < L->V[1]; i1++) {
                            int s = slot_of(L, o0, i0, o1, i1);
                            Ins *in = emit_ins(f, OP_FMA, PT_F32);
                            in->dst[0] = acc->v[s].reg;
                            in->ndst = 1;
                            in->src[0] = fa[(o0 * L->V[0] + i0) * KV + kk];
                            in->src[1] = fb[o1 * L->V[1] + i1];
                            in->src[2] = acc->v[s];
                            in->nsrc = 3;
                        }
        }
    }
    free(fa);
    free(fb);
}

void lower_matmul(Lower *c, Tile *acc, Expr *a, Expr *b, bool accumulate)
{
    Func *f = c->f;
    Layout *L = &acc->L;
    Shape rs = { 2, { L->S[0], L->S[1] } };
    Layout want = matmul_layout(c, a, b, rs);
    if (!layout_eq(&want, L)) {
        /* acc was laid out for another matmul (a var accumulated by @ of other operand types):
           compute this product in its own layout and move it over */
        Tile t = tile_new(c, TY_F32, want);
        lower_matmul(c, &t, a, b, false);
        t = to_layout(c, t, L);
        for (int s = 0; s < layout_slots(L); s++) {
            Opnd x = t.v[s];
            if (accumulate) {
                ir_bin_to(f, OP_ADD, PT_F32, acc->v[s].reg, acc->v[s], x);
            } else {
                Ins *in = emit_ins(f, OP_MOV, PT_F32);
                in->dst[0] = acc->v[s].reg;
                in->ndst = 1;
                in->src[0] = x;
                in->nsrc = 1;
            }
        }
        return;
    }
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
    int M = L->S[0], N = L->S[1], K = (int)a->shape.dim[1];
    bool mma = matmul_uses_mma(c, a, b, M, N, K);
    f->cur_what = "matmul operand";
    SmemMatrix ma = stage_operand(c, a, mma);
    SmemMatrix mb = stage_operand(c, b, mma);
    bool pa, pb;
    Expr *xa = matmul_operand(a, &pa), *xb = matmul_operand(b, &pb);
    pa = pb = false;
    for (int i = 0; i < c->npipe; i++) {
        Sym *v = c->pipe[i].var;
        pa |= v ? (xa->kind == E_NAME && xa->sym == v) : c->pipe[i].operand == xa;
        pb |= v ? (xb->kind == E_NAME && xb->sym == v) : c->pipe[i].operand == xb;
    }
    bool pipelined = pa && pb;
    if (!pipelined)
        ir_bar(f);                 /* staged operands visible to every thread */
    if (mma)
        lower_mma(c, acc, ma, mb);
    else
        simt_matmul(c, acc, &ma, &mb);
    /* the next writer of these buffers waits for this matmul's readers (a pipelined loop puts
       its barrier at the top of each iteration instead) */
    if (!pipelined)
        ir_bar(f);
    f->cur_what = saved;
}
