/* emit_ptx.c: PTX text from the thread-level IR.
 * Needs: registers allocated (VReg.phys; falls back to virtual numbers when not).
 * Output goes to a memory buffer; the caller writes it only when everything succeeded. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

static const char *const class_prefix[RC_COUNT] = { "%p", "%h", "%r", "%f", "%rd" };
static const char *const class_type[RC_COUNT] = { ".pred", ".b16", ".b32", ".f32", ".b64" };
static const char *const cmp_name[] = { "eq", "ne", "lt", "le", "gt", "ge", "lo", "hs" };

static int reg_number(Func *f, int r)
{
    VReg *v = &f->regs.v[r];
    return v->phys >= 0 ? v->phys : r;
}

static void put_reg(Buf *out, Func *f, int r)
{
    buf_printf(out, "%s%d", class_prefix[f->regs.v[r].rc], reg_number(f, r));
}

static bool ptype_is_float(PType t) { return t == PT_F32 || t == PT_F16 || t == PT_BF16 || t == PT_F64; }

static void put_opnd(Buf *out, Func *f, Opnd o, PType t)
{
    switch (o.kind) {
    case O_REG: put_reg(out, f, o.reg); break;
    case O_IMM:
        if (t == PT_F32) {
            float x = (float)o.i;
            uint32_t bits;
            memcpy(&bits, &x, 4);
            buf_printf(out, "0f%08X", bits);
        } else {
            buf_printf(out, "%lld", (long long)o.i);
        }
        break;
    case O_FIMM:
        if (ptype_is_float(t)) {
            float x = (float)o.f;
            uint32_t bits;
            memcpy(&bits, &x, 4);
            buf_printf(out, "0f%08X", bits);
        } else {
            buf_printf(out, "%lld", (long long)o.f);
        }
        break;
    case O_SYM: buf_puts(out, o.sym); break;
    default: die("emit: empty operand");
    }
}

static const char *mem_space(int sp)
{
    return sp == SP_SHARED ? ".shared" : sp == SP_PARAM ? ".param" : sp == SP_LOCAL ? ".local" : ".global";
}

static void put_addr(Buf *out, Func *f, Ins *in)
{
    buf_puts(out, "[");
    put_opnd(out, f, in->src[0], PT_U64);
    if (in->off)
        buf_printf(out, "+%lld", (long long)in->off);   /* PTX accepts [r+-8] too */
    buf_puts(out, "]");
}

static void put_vec(Buf *out, Func *f, Ins *in, int first, bool dsts)
{
    if (in->vec > 1)
        buf_puts(out, "{");
    for (int i = 0; i < in->vec; i++) {
        if (i)
            buf_puts(out, ", ");
        if (dsts)
            put_reg(out, f, in->dst[i]);
        else
            put_opnd(out, f, in->src[first + i], (PType)in->ty);
    }
    if (in->vec > 1)
        buf_puts(out, "}");
}

/* The PTX spelling of an operation with its type suffix, e.g. "mul.lo.s32", "fma.rn.f32". */
static void put_opcode(Buf *out, Ins *in)
{
    PType t = (PType)in->ty;
    const char *ts = ptype_suffix(t);
    bool fl = ptype_is_float(t);
    bool pred = t == PT_PRED;
    const OpInfo *op = &op_info[in->op];
    switch (in->op) {
    case OP_SETP: buf_printf(out, "setp.%s%s", cmp_name[in->cmp], ts); return;
    case OP_CVT: {
        PType from = (PType)in->ty2;
        if (in->rnd == RND_TF32_RNA || in->rnd == RND_TF32_RN) {
            buf_puts(out, in->rnd == RND_TF32_RNA ? "cvt.rna.tf32.f32" : "cvt.rn.tf32.f32");
            return;
        }
        const char *rnd = "";
        if (in->rnd == RND_RNI || in->rnd == RND_RMI || in->rnd == RND_RPI)
            rnd = in->rnd == RND_RNI ? ".rni" : in->rnd == RND_RMI ? ".rmi" : ".rpi";
        else if (fl && !ptype_is_float(from))
            rnd = ".rn";
        else if (!fl && ptype_is_float(from))
            rnd = ".rzi";
        else if (fl && ptype_is_float(from) && t != PT_F32 && t != PT_F64)
            rnd = ".rn";     /* narrowing f32 -> f16/bf16 (widening takes none) */
        buf_printf(out, "cvt%s%s%s", rnd, ts, ptype_suffix(from));
        return;
    }
    default: break;
    }
    const char *name = fl ? op->ptx_float : op->ptx_int;
    if (!name)
        die("emit: no opcode spelling for %s", op->name);
    switch (op->suffix) {
    case SFX_TYPE: buf_printf(out, "%s%s", name, ts); break;
    case SFX_BITS: buf_printf(out, "%s%s", name, pred ? ".pred" : ptype_class(t) == RC_D ? ".b64" : ".b32"); break;
    default: buf_puts(out, name); break;
    }
}

static void emit_ins_text(Buf *out, Func *f, Ins *in)
{
    if (in->op == OP_LABEL) {
        buf_printf(out, "$L%d:\n", in->label);
        return;
    }
    if (in->op == OP_COMMENT) {
        buf_printf(out, "\t// %s\n", in->text);
        return;
    }
    if (in->op == OP_WGACC || in->op == OP_WGHOLD)
        return;        /* printed with its WGMMA; a liveness marker */
    buf_puts(out, "\t");
    if (in->guard >= 0) {
        buf_printf(out, "@%s", in->guard_neg ? "!" : "");
        put_reg(out, f, in->guard);
        buf_puts(out, " ");
    }
    PType t = (PType)in->ty;
    switch (in->op) {
    case OP_LD:
        buf_printf(out, "ld%s%s%s ", mem_space(in->space), in->vec > 1 ? (in->vec == 2 ? ".v2" : ".v4") : "",
                   ptype_suffix(t));
        put_vec(out, f, in, 0, true);
        buf_puts(out, ", ");
        put_addr(out, f, in);
        break;
    case OP_ST:
        buf_printf(out, "st%s%s%s ", mem_space(in->space), in->vec > 1 ? (in->vec == 2 ? ".v2" : ".v4") : "",
                   ptype_suffix(t));
        put_addr(out, f, in);
        buf_puts(out, ", ");
        put_vec(out, f, in, 1, false);
        break;
    case OP_ATOM:      /* compare-and-swap: dst = old word; [a] = dst == b ? c : dst */
        buf_printf(out, "atom%s.%s%s ", mem_space(in->space), in->redop == RED_CAS ? "cas" : in->redop == RED_MAX ? "max" :
                   in->redop == RED_MIN ? "min" : "add", in->redop == RED_CAS ? ".b32" : ptype_suffix(t));
        put_reg(out, f, in->dst[0]);
        buf_puts(out, ", ");
        put_addr(out, f, in);
        for (int s = 1; s < in->nsrc; s++) {
            buf_puts(out, ", ");
            put_opnd(out, f, in->src[s], t);
        }
        break;
    case OP_RED:
        /* 16-bit float adds exist only without flushing subnormals (.noftz) */
        buf_printf(out, "red%s.%s%s%s ", mem_space(in->space),
                   in->redop == RED_ADD ? "add" : in->redop == RED_MAX ? "max" : "min",
                   t == PT_F16 || t == PT_BF16 || t == PT_F16X2 || t == PT_BF16X2 ? ".noftz" : "", ptype_suffix(t));
        put_addr(out, f, in);
        buf_puts(out, ", ");
        put_opnd(out, f, in->src[1], t);
        break;
    case OP_SHFL:
        buf_puts(out, "shfl.sync.bfly.b32 ");
        put_reg(out, f, in->dst[0]);
        buf_puts(out, ", ");
        put_opnd(out, f, in->src[0], PT_B32);
        buf_printf(out, ", %lld, 31, -1", (long long)in->src[1].i);
        break;
    case OP_BAR:
        /* a count: only the threads that reach it (the consumers of a warp-specialized loop,
           after its producer warp has left) */
        buf_puts(out, "bar.sync 0");
        if (in->count)
            buf_printf(out, ", %d", in->count);
        break;
    case OP_BARRED:
        buf_puts(out, "bar.red.or.pred ");
        put_reg(out, f, in->dst[0]);
        buf_puts(out, ", 0");
        if (in->count)
            buf_printf(out, ", %d", in->count);
        buf_puts(out, ", ");
        put_opnd(out, f, in->src[0], PT_PRED);
        break;
    case OP_CPASYNC:
        /* 16-byte copies bypass L1 (.cg); smaller ones may only use .ca */
        buf_printf(out, "cp.async.%s.shared.global [", in->vec == 16 ? "cg" : "ca");
        put_opnd(out, f, in->src[0], PT_U32);
        if (in->off)
            buf_printf(out, "+%lld", (long long)in->off);
        buf_puts(out, "], [");
        put_opnd(out, f, in->src[1], PT_U64);
        if (in->off2)
            buf_printf(out, "+%lld", (long long)in->off2);
        buf_printf(out, "], %d", in->vec);
        if (in->nsrc > 2 && !(in->src[2].kind == O_IMM && in->src[2].i == in->vec)) {
            buf_puts(out, ", ");
            put_opnd(out, f, in->src[2], PT_U32);
        }
        break;
    case OP_CPCOMMIT: buf_puts(out, "cp.async.commit_group"); break;
    case OP_CPWAIT: buf_printf(out, "cp.async.wait_group %d", in->inflight); break;
    case OP_LDPARAM:
        buf_printf(out, "ld.param%s ", ptype_suffix(t));
        put_reg(out, f, in->dst[0]);
        buf_printf(out, ", [%s]", in->src[0].sym);
        break;
    case OP_CVTA:
        buf_puts(out, in->space == SP_PARAM ? "cvta.param.u64 " : "cvta.to.global.u64 ");
        put_reg(out, f, in->dst[0]);
        buf_puts(out, ", ");
        put_opnd(out, f, in->src[0], PT_U64);
        break;
    case OP_CVTAGEN:
        buf_printf(out, "cvta%s.u64 ", mem_space(in->space));
        put_reg(out, f, in->dst[0]);
        buf_puts(out, ", ");
        put_opnd(out, f, in->src[0], PT_U64);
        break;
    case OP_VPRINTF:
        /* the call sequence of the CUDA ABI: both arguments and the (unread) result in .param
           space, declared in a scope of their own */
        buf_puts(out, "{\n\t.param .b64 param0;\n\tst.param.b64 [param0], ");
        put_opnd(out, f, in->src[0], PT_B64);
        buf_puts(out, ";\n\t.param .b64 param1;\n\tst.param.b64 [param1], ");
        put_opnd(out, f, in->src[1], PT_B64);
        buf_puts(out, ";\n\t.param .b32 retval0;\n\tcall (retval0), vprintf, (param0, param1);\n\t}\n");
        return;
    case OP_MOVSYM: {
        /* PTX's mov takes a bare symbol: an offset into it is a separate add */
        const char *plus = strchr(in->src[0].sym, '+');
        int n = plus ? (int)(plus - in->src[0].sym) : (int)strlen(in->src[0].sym);
        buf_printf(out, "mov%s ", ptype_suffix(t));
        put_reg(out, f, in->dst[0]);
        buf_printf(out, ", %.*s", n, in->src[0].sym);
        if (plus && atoi(plus + 1)) {
            buf_printf(out, ";\n\tadd%s ", ptype_suffix(t));
            put_reg(out, f, in->dst[0]);
            buf_puts(out, ", ");
            put_reg(out, f, in->dst[0]);
            buf_printf(out, ", %d", atoi(plus + 1));
        }
        break;
    }
    case OP_LDMATRIX:
        buf_printf(out, "ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 {", in->vec, in->trans ? ".trans" : "");
        for (int d = 0; d < in->ndst; d++) {
            if (d)
                buf_puts(out, ", ");
            put_reg(out, f, in->dst[d]);
        }
        buf_puts(out, "}, ");
        put_addr(out, f, in);
        break;
    case OP_MMA: {
        /* d, a, b, c as four brace groups; every operand is a register */
        static const int group[] = { 4, 4, 2, 4 };
        const char *ab = in->ty2 == PT_B32 ? ".tf32" : ptype_suffix((PType)in->ty2), *cd = ptype_suffix((PType)in->ty);
        const char *bb = in->ty3 == PT_B32 ? ".tf32" : ptype_suffix((PType)in->ty3);
        int k = in->ty2 == PT_B32 ? 8 : in->ty2 == PT_F16 || in->ty2 == PT_BF16 ? 16 : 32;
        buf_printf(out, "mma.sync.aligned.m16n8k%d.row.col%s%s%s%s ", k, cd, ab, bb, cd);
        int s = 0;
        for (int g = 0; g < 4; g++) {
            buf_puts(out, g ? ", {" : "{");
            for (int k = 0; k < group[g]; k++) {
                if (k)
                    buf_puts(out, ", ");
                if (g == 0)
                    put_reg(out, f, in->dst[k]);
                else
                    put_opnd(out, f, in->src[s++], PT_B32);
            }
            buf_puts(out, "}");
        }
        break;
    }
    case OP_WGFENCE: buf_puts(out, "wgmma.fence.sync.aligned"); break;
    case OP_WGCOMMIT: buf_puts(out, "wgmma.commit_group.sync.aligned"); break;
    case OP_WGWAIT: buf_printf(out, "wgmma.wait_group.sync.aligned %d", in->inflight); break;
    case OP_FENCEPROXY: buf_puts(out, "fence.proxy.async.shared::cta"); break;
    case OP_FENCEGPU: buf_puts(out, "fence.acq_rel.gpu"); break;
    case OP_MBINIT:
        buf_puts(out, "mbarrier.init.shared::cta.b64 [");
        put_opnd(out, f, in->src[0], PT_U32);
        buf_printf(out, "], %d", in->count);
        break;
    case OP_MBFENCEINIT: buf_puts(out, "fence.mbarrier_init.release.cluster"); break;
    case OP_MBINVAL:
        buf_puts(out, "mbarrier.inval.shared::cta.b64 [");
        put_opnd(out, f, in->src[0], PT_U32);
        buf_puts(out, "]");
        break;
    case OP_MBEXPECT:
        buf_puts(out, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [");
        put_opnd(out, f, in->src[0], PT_U32);
        buf_printf(out, "], %d", in->bytes);
        break;
    case OP_MBARRIVE:
        buf_puts(out, "mbarrier.arrive.shared::cta.b64 _, [");
        put_opnd(out, f, in->src[0], PT_U32);
        buf_puts(out, "]");
        break;
    case OP_MBWAIT:
        buf_puts(out, "mbarrier.try_wait.parity.shared::cta.b64 ");
        put_reg(out, f, in->dst[0]);
        buf_puts(out, ", [");
        put_opnd(out, f, in->src[0], PT_U32);
        buf_puts(out, "], ");
        put_opnd(out, f, in->src[1], PT_U32);
        break;
    case OP_TMALOAD: {
        /* count: a multicast copy, whose last source is the cta mask (the blocks it writes) */
        int ncoord = in->nsrc - 3 - (in->count ? 1 : 0);
        buf_printf(out, "cp.async.bulk.tensor.%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes%s [",
                   ncoord, in->count ? ".multicast::cluster" : "");
        put_opnd(out, f, in->src[0], PT_U32);
        if (in->off)
            buf_printf(out, "+%lld", (long long)in->off);
        buf_puts(out, "], [");
        put_opnd(out, f, in->src[1], PT_U64);
        buf_puts(out, ", {");
        put_opnd(out, f, in->src[2], PT_S32);
        buf_puts(out, ", ");
        put_opnd(out, f, in->src[3], PT_S32);
        for (int j = 5; j < 3 + ncoord; j++) {
            buf_puts(out, ", ");
            put_opnd(out, f, in->src[j], PT_S32);
        }
        buf_puts(out, "}], [");
        put_opnd(out, f, in->src[4], PT_U32);
        buf_puts(out, "]");
        if (in->count) {
            buf_puts(out, ", ");
            put_opnd(out, f, in->src[in->nsrc - 1], PT_B16);
        }
        break;
    }
    case OP_TMASTORE: {
        /* src: the shared tile, the map, then the coordinates innermost first */
        int ncoord = in->nsrc - 2;
        buf_printf(out, "cp.async.bulk.tensor.%dd.global.shared::cta.bulk_group [", ncoord);
        put_opnd(out, f, in->src[1], PT_U64);
        buf_puts(out, ", {");
        for (int j = 2; j < in->nsrc; j++) {
            buf_puts(out, j > 2 ? ", " : "");
            put_opnd(out, f, in->src[j], PT_S32);
        }
        buf_puts(out, "}], [");
        put_opnd(out, f, in->src[0], PT_U32);
        if (in->off)
            buf_printf(out, "+%lld", (long long)in->off);
        buf_puts(out, "]");
        break;
    }
    case OP_BULKCOMMIT: buf_puts(out, "cp.async.bulk.commit_group"); break;
    case OP_BULKWAIT: buf_printf(out, "cp.async.bulk.wait_group.read %d", in->inflight); break;
    case OP_STCLUSTER:
        buf_printf(out, "st.shared::cluster%s%s [", in->vec > 1 ? (in->vec == 2 ? ".v2" : ".v4") : "",
                   ptype_suffix((PType)in->ty));
        put_opnd(out, f, in->src[0], PT_U32);
        if (in->off)
            buf_printf(out, "+%lld", (long long)in->off);
        buf_puts(out, "], ");
        put_vec(out, f, in, 1, false);
        break;
    case OP_MBARRIVEC:
        /* the default semantics (release at the block's scope), as CUTLASS's cluster barrier
           arrives: the arriving warp's reads of the stage are complete (wgmma.wait_group) and
           the other block's producer only writes after its wait sees the phase. An explicit
           .release.cluster costs a cluster-scope fence at every arrival: 0.58 of cuBLAS
           against 0.86 at f16 4096^3 (H200, docs/performance.md). */
        buf_puts(out, "mbarrier.arrive.shared::cluster.b64 _, [");
        put_opnd(out, f, in->src[0], PT_U32);
        buf_puts(out, "]");
        break;
    case OP_CLUSTERSYNC: buf_puts(out, "barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire"); break;
    /* a warpgroup's registers a thread, count: given back to the block's pool or taken from it
       (a producer warpgroup's to its consumers: lower_warpspec.c) */
    case OP_REGINC: buf_printf(out, "setmaxnreg.inc.sync.aligned.u32 %d", (int)in->count); break;
    case OP_REGDEC: buf_printf(out, "setmaxnreg.dec.sync.aligned.u32 %d", (int)in->count); break;
    case OP_WGMMA: {
        /* the accumulators are the WGACC instructions that follow */
        bool tf32 = in->ty2 == PT_B32, b16 = in->ty2 == PT_F16 || in->ty2 == PT_BF16;
        int sd = in->fresh ? 0 : 1;    /* scale-d: 0 writes the accumulators without reading them */
        const char *ab = tf32 ? ".tf32" : ptype_suffix((PType)in->ty2);
        const char *bb = tf32 ? ".tf32" : ptype_suffix((PType)in->ty3);
        buf_printf(out, "wgmma.mma_async.sync.aligned.m64n%dk%d%s%s%s {", in->n, tf32 ? 8 : b16 ? 16 : 32,
                   ptype_suffix((PType)in->ty), ab, bb);
        int n = 0;
        for (Ins *g = in + 1; g < f->code.v + f->code.n && g->op == OP_WGACC; g++)
            for (int d = 0; d < g->ndst; d++) {
                buf_puts(out, n++ ? ", " : "");
                put_reg(out, f, g->dst[d]);
            }
        if (n != in->n / 2)
            die("emit: wgmma m64n%d with %d accumulators", in->n, n);
        buf_puts(out, "}, ");
        if (in->a_regs) {
            /* A from registers; B's transpose operand for 16-bit types (tf32 is K-major only) */
            buf_puts(out, "{");
            for (int s = 0; s < 4; s++) {
                buf_puts(out, s ? ", " : "");
                put_opnd(out, f, in->src[s], PT_B32);
            }
            buf_puts(out, "}, ");
            put_opnd(out, f, in->src[4], PT_B64);
            if (tf32)
                buf_printf(out, ", %d, 1, 1", sd);
            else
                buf_printf(out, ", %d, 1, 1, %d", sd, in->trans ? 1 : 0);
            break;
        }
        put_opnd(out, f, in->src[0], PT_B64);
        buf_puts(out, ", ");
        put_opnd(out, f, in->src[1], PT_B64);
        if (in->ty == PT_S32)
            buf_printf(out, ", %d", sd);       /* integers: scale-d alone */
        else if (!b16)
            buf_printf(out, ", %d, 1, 1", sd); /* tf32, fp8: K-major only, no transpose operands */
        else
            buf_printf(out, ", %d, 1, 1, %d, %d", sd, in->trans_a ? 1 : 0, in->trans ? 1 : 0);
        break;
    }
    case OP_PACK2:
        /* two f32 (holding f16 or bf16 values) into one register, src[0] in the upper half */
        buf_printf(out, "cvt.rn.%sx2.f32 ", in->ty == PT_BF16 ? "bf16" : "f16");
        put_reg(out, f, in->dst[0]);
        buf_puts(out, ", ");
        put_opnd(out, f, in->src[0], PT_F32);
        buf_puts(out, ", ");
        put_opnd(out, f, in->src[1], PT_F32);
        break;
    case OP_F8WIDEN:
        /* two fp8 values (text: e4m3 or e5m2) of a 16-bit register, exactly, to f16x2 (sm_89) */
        buf_printf(out, "cvt.rn.f16x2.%sx2 ", in->text);
        put_reg(out, f, in->dst[0]);
        buf_puts(out, ", ");
        put_opnd(out, f, in->src[0], PT_B16);
        break;
    case OP_F8NARROW:
        /* two f32 to fp8, to nearest even, saturating to the largest finite value (NaN stays
           NaN); src[0] in the upper byte (sm_89) */
        buf_printf(out, "cvt.rn.satfinite.%sx2.f32 ", in->text);
        put_reg(out, f, in->dst[0]);
        buf_puts(out, ", ");
        put_opnd(out, f, in->src[0], PT_F32);
        buf_puts(out, ", ");
        put_opnd(out, f, in->src[1], PT_F32);
        break;
    case OP_UNPACK2:
        buf_puts(out, "mov.b32 {");
        put_reg(out, f, in->dst[0]);
        buf_puts(out, ", ");
        put_reg(out, f, in->dst[1]);
        buf_puts(out, "}, ");
        put_opnd(out, f, in->src[0], PT_B32);
        break;
    case OP_BRA: buf_printf(out, "bra%s $L%d", in->divergent ? "" : ".uni", in->label); break;
    case OP_RET: buf_puts(out, "ret"); break;
    default: {
        put_opcode(out, in);
        buf_puts(out, " ");
        for (int d = 0; d < in->ndst; d++) {
            put_reg(out, f, in->dst[d]);
            buf_puts(out, ", ");
        }
        /* source operand types: SELP's third is a predicate; CVT's source has ty2;
           MULWIDE's sources have ty; SHL/SHR's shift count is u32 */
        for (int s = 0; s < in->nsrc; s++) {
            PType st = t;
            if (in->op == OP_CVT)
                st = (PType)in->ty2;
            else if (in->op == OP_SELP && s == 2)
                st = PT_PRED;
            else if ((in->op == OP_SHL || in->op == OP_SHR) && s == 1)
                st = PT_U32;
            if (s)
                buf_puts(out, ", ");
            put_opnd(out, f, in->src[s], st);
        }
        out->len -= 0;
        break;
    }
    }
    buf_puts(out, ";\n");
}

void emit_ptx_vprintf_decl(Buf *out)
{
    buf_puts(out, ".extern .func (.param .b32 func_retval0) vprintf\n"
                  "(\n\t.param .b64 vprintf_param_0,\n\t.param .b64 vprintf_param_1\n);\n\n");
}

void emit_ptx_header(Buf *out, const char *arch, const char *version)
{
    buf_printf(out, "//\n// Generated by tilec %s. Do not edit.\n//\n\n", TILEC_VERSION);
    buf_printf(out, ".version %s\n.target %s\n.address_size 64\n\n", version, arch);
    buf_puts(out, ".extern .shared .align 1024 .b8 tilec_smem[];\n\n");
}

/* The .param name of argument i. */
static void put_param_decl(Buf *out, KernelMeta *m, int i)
{
    KernelArg *a = &m->args[i];
    const char *ty = ".u64";
    if (a->kind == ARG_SIZE)
        ty = ".s32";
    else if (a->kind == ARG_SCALAR) {
        switch (a->type) {
        case TY_F32: ty = ".f32"; break;
        case TY_I64: ty = ".s64"; break;
        case TY_U32: case TY_BOOL: ty = ".u32"; break;
        case TY_F16: case TY_BF16: ty = ".b16"; break;
        default: ty = ".s32"; break;
        }
    }
    buf_printf(out, "\t.param %s %s_param_%d", ty, m->name, i);
}

/* print()'s strings, as module-scope constants: bytes, so that any byte of a file name or a
 * format goes through as it is. */
static void put_strings(Buf *out, Func *f, const char *kernel)
{
    for (int i = 0; i < f->strings.n; i++) {
        const PrintString *p = &f->strings.v[i];
        buf_printf(out, ".global .align 1 .b8 tilec_str%d_%s[%d] = {", i, kernel, p->len);
        for (int j = 0; j < p->len; j++)
            buf_printf(out, "%s%d", j ? (j % 32 ? ", " : ",\n\t") : "", (unsigned char)p->s[j]);
        buf_puts(out, "};\n");
    }
    if (f->strings.n)
        buf_puts(out, "\n");
}

void emit_ptx_kernel(Buf *out, Func *f, KernelMeta *m)
{
    put_strings(out, f, m->name);
    buf_printf(out, ".visible .entry %s(\n", m->name);
    bool ws = m->split_dim > 0;
    for (int i = 0; i < m->nargs; i++) {
        put_param_decl(out, m, i);
        buf_puts(out, i + 1 < m->nargs || m->ntmaps || ws ? ",\n" : "\n");
    }
    /* the tensor maps, by value: TMA reads them where they are, in parameter space */
    for (int i = 0; i < m->ntmaps; i++)
        buf_printf(out, "\t.param .align 64 .b8 %s_param_%d[128]%s\n", m->name, m->nargs + i,
                   i + 1 < m->ntmaps || ws ? "," : "");
    /* a split loop's workspace, pair words and slice length (lower_split.c), last */
    if (ws)
        buf_printf(out, "\t.param .u64 %s_param_ws,\n\t.param .u64 %s_param_cnt,\n\t.param .s32 %s_param_span\n",
                   m->name, m->name, m->name);
    buf_printf(out, ")\n.maxntid %d, 1, 1\n", f->threads);
    if (f->maxnreg > 0)   /* the prediction binds ptxas (regalloc.c says why) */
        buf_printf(out, ".maxnreg %d\n", f->maxnreg);
    buf_puts(out, "{\n");
    /* register declarations sized by the allocator */
    int count[RC_COUNT] = { 0 };
    for (int r = 0; r < f->regs.n; r++) {
        int n = reg_number(f, r) + 1;
        if (n > count[f->regs.v[r].rc])
            count[f->regs.v[r].rc] = n;
    }
    for (int c = 0; c < RC_COUNT; c++)
        if (count[c])
            buf_printf(out, "\t.reg %s %s<%d>;\n", class_type[c], class_prefix[c], count[c]);
    for (int i = 0; i < f->arrays.n; i++) {
        RegArray *a = &f->arrays.v[i];
        if (a->eliminated)
            continue;
        if (a->in_local)
            buf_printf(out, "\t.local .align 8 .b8 %s[%d];\n", a->name, a->n * 8);
        else
            die("emit: register tensor %s was neither eliminated nor placed in .local", a->name);
    }
    if (f->print_args_bytes)
        buf_printf(out, "\t.local .align 8 .b8 tilec_print_args[%d];\n", f->print_args_bytes);
    buf_puts(out, "\n");
    for (int i = 0; i < f->code.n; i++)
        emit_ins_text(out, f, &f->code.v[i]);
    buf_puts(out, "}\n\n");
}
