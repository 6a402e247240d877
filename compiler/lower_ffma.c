/* lower_ffma.c: acc (+)= a @ b on the SIMT cores, the path of IEEE f32 and of every product the
 * tensor cores do not take (matmul_plan.c). Each thread owns TM x TN outputs (layout_matmul) and,
 * per group of 4 k, reads TM 16-byte vectors of A and TN/4 per k of B from the row-major
 * operands in shared memory for TM * TN FMAs; an operand in K-major rows (A^T as stored, or an
 * f32 A or B^T a pipelined loop turned around on the way: matmul_plan.c, ffma_turns) gives a
 * thread its rows or columns of one k in one vector instead. IEEE FFMA for f32; tf32 operands are rounded to
 * tf32 first, f16/bf16 and fp8 widened (exactly); i8/u8 products are integer multiply-adds into
 * an i32 accumulator. */
#include <stdlib.h>
#include "lower.h"

static int slot_of(const Layout *L, int o0, int i0, int o1, int i1)
{
    return ((o0 * L->V[0] + i0) * L->O[1] + o1) * L->V[1] + i1;
}

/* Loads n consecutive elements of a row of m starting at byte offset `off` from base, widened. */
static void smem_row(Lower *c, SmemMatrix *m, int base, int64_t off, int n, Opnd *out)
{
    Func *f = c->f;
    int es = type_size(m->type);
    int vm = (es == 4 && n % 4 == 0 && m->pitch % 4 == 0) ? 4 : 1;
    for (int j = 0; j < n; j += vm) {
        int d[4];
        PType mt = mem_ptype(m->type);
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

/* A transposed operand (stored [K][M] or [N][K], SmemMatrix.trans) is read along its stored rows
 * just the same: A^T gives a thread its V0 consecutive rows of one k in one vector, as B gives its
 * columns; B^T gives each column's KV consecutive k in one vector, as A gives each row's. */
void lower_ffma(Lower *c, Tile *acc, const MatmulPlan *p, SmemMatrix ma, SmemMatrix mb)
{
    (void)p;
    Func *f = c->f;
    SmemMatrix *a = &ma, *b = &mb;
    Layout *L = &acc->L;
    int K = a->cols;
    int esa = type_size(a->type), esb = type_size(b->type);
    int t0 = thread_coord(c, L, 0), t1 = thread_coord(c, L, 1);
    bool ta = a->trans, tb = b->trans;
    int abase = ir_tern(f, OP_MAD, PT_U32, R(t0), IMM((int64_t)L->V[0] * (ta ? 1 : a->pitch) * esa), R(a->base));
    int bbase = ir_tern(f, OP_MAD, PT_U32, R(t1), IMM((int64_t)L->V[1] * (tb ? b->pitch : 1) * esb), R(b->base));
    int TM = L->O[0] * L->V[0], TN = L->O[1] * L->V[1];
    int KV = (K % 4 == 0) ? 4 : 1;
    bool integer = acc->type == TY_I32;     /* i8/u8 products: exact, wrapping as mma's s32 does */
    if (L->V[0] > 16)
        die("lower_ffma: %d rows per block", L->V[0]);
    Opnd *fa = malloc(sizeof(Opnd) * (size_t)(TM * KV)), *fb = malloc(sizeof(Opnd) * (size_t)(TN * KV));
    Opnd part[16];
    f->cur_what = "matmul fragment";
    for (int kc = 0; kc < K; kc += KV) {
        for (int o0 = 0; o0 < L->O[0]; o0++)
            for (int i0 = 0; i0 < (ta ? 1 : L->V[0]); i0++) {
                int row = o0 * L->T[0] * L->V[0] + i0;
                if (!ta) {
                    smem_row(c, a, abase, ((int64_t)row * a->pitch + kc) * esa, KV, &fa[(o0 * L->V[0] + i0) * KV]);
                    continue;
                }
                for (int kk = 0; kk < KV; kk++) {
                    smem_row(c, a, abase, ((int64_t)(kc + kk) * a->pitch + row) * esa, L->V[0], part);
                    for (int j = 0; j < L->V[0]; j++)
                        fa[(o0 * L->V[0] + j) * KV + kk] = part[j];
                }
            }
        for (int o1 = 0; tb && o1 < L->O[1]; o1++)
            for (int i1 = 0; i1 < L->V[1]; i1++) {
                int col = o1 * L->T[1] * L->V[1] + i1;
                smem_row(c, b, bbase, ((int64_t)col * b->pitch + kc) * esb, KV, &fb[(o1 * L->V[1] + i1) * KV]);
            }
        for (int kk = 0; kk < KV; kk++) {
            for (int o1 = 0; !tb && o1 < L->O[1]; o1++) {
                smem_row(c, b, bbase, ((int64_t)(kc + kk) * b->pitch + (int64_t)o1 * L->T[1] * L->V[1]) * esb, L->V[1],
                         part);
                for (int j = 0; j < L->V[1]; j++)
                    fb[(o1 * L->V[1] + j) * KV + kk] = part[j];
            }
            for (int o0 = 0; o0 < L->O[0]; o0++)
                for (int i0 = 0; i0 < L->V[0]; i0++)
                    for (int o1 = 0; o1 < L->O[1]; o1++)
                        for (int i1 = 0; i1 < L->V[1]; i1++) {
                            int s = slot_of(L, o0, i0, o1, i1);
                            Ins *in = emit_ins(f, integer ? OP_MAD : OP_FMA, integer ? PT_S32 : PT_F32);
                            in->dst[0] = acc->v[s].reg;
                            in->ndst = 1;
                            in->src[0] = fa[(o0 * L->V[0] + i0) * KV + kk];
                            in->src[1] = fb[(o1 * L->V[1] + i1) * KV + kk];
                            in->src[2] = acc->v[s];
                            in->nsrc = 3;
                        }
        }
    }
    free(fa);
    free(fb);
}
