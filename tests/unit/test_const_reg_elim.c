/* test_const_reg_elim.c: the constant register tensor pass on hand-built IR.
 * An affine, uniform, write-once array becomes one mad per read; an array written after it is
 * read keeps its storage in .local with a warning naming it; a small array that is not affine
 * (its elements depend on %tid) becomes a selp chain. */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"
#include "unit.h"

static Kernel kernel = { .name = "k", .loc = { 1, 1 } };

static Func *fresh(Arena *a)
{
    Func *f = func_new(&kernel);
    f->arena = a;
    f->threads = 128;
    return f;
}

static int add_array(Func *f, const char *name, int n)
{
    RegArray arr = { name, n, RC_R, 2, false, false };
    vec_push(&f->arrays, arr);
    return f->arrays.n - 1;
}

static void arrset(Func *f, int arr, int i, int reg)
{
    Ins *in = emit_ins(f, OP_ARRSET, PT_U32);
    in->src[0] = R(reg);
    in->nsrc = 1;
    in->off = i;
    in->array = arr;
}

static int arrget(Func *f, int arr, int idx)
{
    int d = new_reg(f, RC_R);
    Ins *in = emit_ins(f, OP_ARRGET, PT_U32);
    in->dst[0] = d;
    in->ndst = 1;
    in->src[0] = R(idx);
    in->nsrc = 1;
    in->array = arr;
    return d;
}

static int movsym(Func *f, const char *sym)
{
    int r = new_reg(f, RC_R);
    Ins *in = emit_ins(f, OP_MOVSYM, PT_U32);
    in->dst[0] = r;
    in->ndst = 1;
    in->src[0] = SYM(sym);
    in->nsrc = 1;
    return r;
}

/* Keeps a register alive: stores it to shared memory. */
static void use(Func *f, int r)
{
    Ins *in = emit_ins(f, OP_ST, PT_B32);
    in->space = SP_SHARED;
    in->src[0] = R(r);
    in->src[1] = R(r);
    in->nsrc = 2;
}

static int count_op(Func *f, int op)
{
    int n = 0;
    for (int i = 0; i < f->code.n; i++)
        n += f->code.v[i].op == op;
    return n;
}

static bool ptx_has(Func *f, const char *needle)
{
    KernelMeta m;
    memset(&m, 0, sizeof m);
    m.name = "k";
    Buf b = { 0 };
    regalloc(f, 255);
    emit_ptx_kernel(&b, f, &m);
    bool has = b.s && strstr(b.s, needle);
    buf_free(&b);
    return has;
}

int main(void)
{
    static const char src[] = "kernel k() grid(1) {\n  for k in 0 .. K pipeline(3) { }\n}\n";
    diag.file = "test.tile";
    diag.src = src;
    diag.len = sizeof src - 1;
    Arena *a = arena_new();

    /* affine: tilec_smem + 1024 + i * 4096 */
    Func *f = fresh(a);
    int arr = add_array(f, "A_stages", 3);
    for (int i = 0; i < 3; i++)
        arrset(f, arr, i, movsym(f, arena_printf(a, "tilec_smem+%d", 1024 + i * 4096)));
    int idx = movsym(f, "%ctaid.x");
    use(f, arrget(f, arr, idx));
    int n = const_reg_elim(f);
    arrays_to_local(f);
    unit_check(n == 1 && f->arrays.v[arr].eliminated, "affine array eliminated", "rewrote %d", n);
    unit_check(count_op(f, OP_ARRGET) == 0 && count_op(f, OP_ARRSET) == 0, "no array ops left", "");
    bool mad = false;
    for (int i = 0; i < f->code.n; i++) {
        Ins *in = &f->code.v[i];
        mad |= in->op == OP_MAD && in->src[0].kind == O_REG && in->src[0].reg == idx && in->src[1].kind == O_IMM &&
               in->src[1].i == 4096;
    }
    unit_check(mad, "read becomes base + index * stride", "no mad idx, 4096 found");
    unit_check(!ptx_has(f, ".local"), "affine array: no .local in the PTX", "");
    func_free(f);

    /* written after it is read: the pass must refuse it and say so */
    f = fresh(a);
    arr = add_array(f, "B_stages", 3);
    for (int i = 0; i < 3; i++)
        arrset(f, arr, i, movsym(f, arena_printf(a, "tilec_smem+%d", i * 512)));
    idx = movsym(f, "%ctaid.x");
    use(f, arrget(f, arr, idx));
    arrset(f, arr, 1, movsym(f, "tilec_smem+7"));
    int warnings = diag.nwarnings;
    n = const_reg_elim(f);
    arrays_to_local(f);
    unit_check(n == 0 && !f->arrays.v[arr].eliminated, "written-after-read array kept", "rewrote %d", n);
    unit_check(diag.nwarnings == warnings + 1, "kept array warned about", "%d warnings", diag.nwarnings - warnings);
    unit_check(f->arrays.v[arr].in_local && ptx_has(f, ".local"), "kept array lives in .local", "");
    func_free(f);

    /* small and not uniform: a selp chain */
    f = fresh(a);
    arr = add_array(f, "C_stages", 2);
    int tid = movsym(f, "%tid.x");
    arrset(f, arr, 0, tid);
    arrset(f, arr, 1, movsym(f, "tilec_smem+64"));
    idx = movsym(f, "%ctaid.x");
    use(f, arrget(f, arr, idx));
    n = const_reg_elim(f);
    arrays_to_local(f);
    unit_check(n == 1 && count_op(f, OP_SELP) == 1, "small non-affine array becomes selp", "rewrote %d, %d selp", n,
               count_op(f, OP_SELP));
    unit_check(!ptx_has(f, ".local"), "selp chain: no .local", "");
    func_free(f);

    /* with the pass off, the affine array goes to .local (what -fno-const-reg-elim does) */
    f = fresh(a);
    arr = add_array(f, "D_stages", 3);
    for (int i = 0; i < 3; i++)
        arrset(f, arr, i, movsym(f, arena_printf(a, "tilec_smem+%d", i * 256)));
    idx = movsym(f, "%ctaid.x");
    use(f, arrget(f, arr, idx));
    arrays_to_local(f);
    unit_check(ptx_has(f, ".local .align 8 .b8 tilec_arr0[24]"), "pass off: the array is a .local array", "");
    func_free(f);

    arena_free(a);
    return unit_exit();
}
