/* test_meta_roundtrip.c: what tilec writes (compiler/meta.c, meta_write) is what libtilert reads
 * (runtime/meta.c): every field survives, several kernels concatenate, awkward assume texts too. */
#include <stdlib.h>

#include "tilec.h"
#include "tilert_internal.h"
#include "unit.h"

static KernelArg matmul_args[] = {
    {"A", ARG_PTR, TY_F32, 16}, {"B", ARG_PTR, TY_F32, 16}, {"C", ARG_PTR, TY_F32, 4},
    {"M", ARG_SIZE, TY_I32, 4}, {"K", ARG_SIZE, TY_I32, 4}, {"N", ARG_SIZE, TY_I32, 4},
};
static const char *matmul_assume_rpn[] = {"a4 4 % 0 ==", "a5 4 % 0 == a3 0 > ||", "a5 8192 <=",
                                          "a3 0 >"};
/* the last tries to add metadata lines of its own: a text never ends its line */
static const char *matmul_assume_text[] = {"K % 4 == 0", "N % 4 == 0 || M > 0 | x",
                                           "N <=\n\t8192",
                                           "M > 0\n//@end\r//@kernel evil threads 1 smem 0 regs 1\v"};

static TensorMapMeta matmul_tmaps[] = {
    {0, "tf32", 128, 256, 32, "a3", "a4", "a4", 0, {0}, {0}, false},
    {1, "f32", 0, 32, 8, "a4", "a5", "a5 4 +", 0, {0}, {0}, false},
    /* a rank-4 tensor's map: two outer dimensions with their strides */
    {2, "tf32", 128, 64, 32, "a4", "a5", "a5", 2, {"a3", "7"}, {"a4 a5 *", "a3 a4 * a5 *"}, false},
};

static KernelArg scalar_args[] = {
    {"p", ARG_PTR, TY_BF16, 0}, {"h", ARG_SCALAR, TY_F16, 0}, {"b", ARG_SCALAR, TY_BOOL, 0},
    {"l", ARG_SCALAR, TY_I64, 0}, {"u", ARG_SCALAR, TY_U32, 0}, {"f", ARG_SCALAR, TY_F32, 0},
    {"R", ARG_SIZE, TY_I32, 4},
};

static void roundtrip(void)
{
    KernelMeta k[2];
    memset(k, 0, sizeof k);
    k[0].name = "matmul_f32";
    k[0].args = matmul_args;
    k[0].nargs = 6;
    k[0].threads = 256;
    k[0].smem_bytes = 73728;
    k[0].ngrid = 2;
    k[0].grid_rpn[0] = "a3 128 cdiv";
    k[0].grid_rpn[1] = "a5 128 cdiv";
    k[0].assume_rpn = matmul_assume_rpn;
    k[0].assume_text = matmul_assume_text;
    k[0].nassumes = 4;
    k[0].pred_regs = 122;
    k[0].tmaps = matmul_tmaps;
    k[0].ntmaps = 3;
    k[0].cluster = 2;
    k[1].name = "scalars";
    k[1].args = scalar_args;
    k[1].nargs = 7;
    k[1].threads = 1024;
    k[1].ngrid = 3;
    k[1].grid_rpn[0] = "a6";
    k[1].grid_rpn[1] = "1";
    k[1].grid_rpn[2] = "a6 2 min neg neg";
    k[1].pred_regs = 0;

    Buf b = {0};
    buf_puts(&b, ".version 8.0\n.target sm_80\n");
    meta_write(&b, &k[0]);
    meta_write(&b, &k[1]);
    buf_puts(&b, ".visible .entry matmul_f32()\n{\n\tret;\n}\n");

    rt_meta m;
    tilert_status s = rt_meta_parse(b.s, &m);
    if (!unit_check(s == TILERT_OK && m.nk == 2, "roundtrip parses", "%s\n%s",
                    tilert_last_error(), b.s)) {
        buf_free(&b);
        return;
    }
    for (int i = 0; i < 2; i++) {
        rt_kernel_meta *r = &m.k[i];
        char name[64];
        snprintf(name, sizeof name, "roundtrip %s header", k[i].name);
        unit_check(!strcmp(r->name, k[i].name) && r->threads == k[i].threads &&
                       r->smem_bytes == k[i].smem_bytes && r->regs == k[i].pred_regs &&
                       r->nargs == k[i].nargs && r->ngrid == k[i].ngrid &&
                       r->nassumes == k[i].nassumes,
                   name, "%s", b.s);
        bool args_ok = true;
        for (int j = 0; j < r->nargs; j++) {
            KernelArg *a = &k[i].args[j];
            static const rt_type map[] = {[TY_BOOL] = RT_BOOL, [TY_I32] = RT_I32,
                                          [TY_U32] = RT_U32,   [TY_I64] = RT_I64,
                                          [TY_F16] = RT_F16,   [TY_BF16] = RT_BF16,
                                          [TY_F32] = RT_F32};
            static const int size[] = {[TY_BOOL] = 1, [TY_I32] = 4, [TY_U32] = 4, [TY_I64] = 8,
                                       [TY_F16] = 2,  [TY_BF16] = 2, [TY_F32] = 4};
            int align = a->align ? a->align : size[a->type];
            args_ok &= !strcmp(r->args[j].name, a->name) && (int)r->args[j].cls == (int)a->kind &&
                       r->args[j].type == map[a->type] &&
                       (a->kind != ARG_PTR || r->args[j].align == align);
        }
        snprintf(name, sizeof name, "roundtrip %s args", k[i].name);
        unit_check(args_ok, name, "%s", b.s);
    }
    /* Expressions: same values as a fresh parse of the written RPN. */
    int64_t vals[7] = {0, 0, 0, 129, 1000, 100, 0};
    int64_t gx = 0, gy = 0, as0 = -1, as1 = -1, as2 = -1;
    rt_rpn_eval(&m.k[0].grid[0], vals, 6, &gx);
    rt_rpn_eval(&m.k[0].grid[1], vals, 6, &gy);
    rt_rpn_eval(&m.k[0].assume[0], vals, 6, &as0);
    rt_rpn_eval(&m.k[0].assume[1], vals, 6, &as1);
    rt_rpn_eval(&m.k[0].assume[2], vals, 6, &as2);
    unit_check(gx == 2 && gy == 1 && as0 == 1 && as1 == 1 && as2 == 1, "roundtrip expressions",
               "grid %lld %lld assumes %lld %lld %lld", (long long)gx, (long long)gy,
               (long long)as0, (long long)as1, (long long)as2);
    /* Tensor maps: every field, and the extents' values. */
    bool maps_ok = m.k[0].ntmaps == 3 && m.k[1].ntmaps == 0;
    for (int i = 0; maps_ok && i < 2; i++) {
        const rt_tmap_meta *t = &m.k[0].tmaps[i];
        int64_t rows = -1, cols = -1, pitch = -1;
        rt_rpn_eval(&t->rows, vals, 6, &rows);
        rt_rpn_eval(&t->cols, vals, 6, &cols);
        rt_rpn_eval(&t->pitch, vals, 6, &pitch);
        maps_ok = t->arg == matmul_tmaps[i].arg &&
                  !strcmp(rt_tmap_type_name(t->type), matmul_tmaps[i].dtype) &&
                  t->swizzle == matmul_tmaps[i].swizzle && t->box_rows == matmul_tmaps[i].box_rows &&
                  t->box_cols == matmul_tmaps[i].box_cols && rows == (i ? 1000 : 129) &&
                  cols == (i ? 100 : 1000) && pitch == (i ? 104 : 1000) && t->nouter == 0;
    }
    if (maps_ok) {
        const rt_tmap_meta *t = &m.k[0].tmaps[2];
        int64_t e0 = -1, s0 = -1, e1 = -1, s1 = -1;
        rt_rpn_eval(&t->outer[0], vals, 6, &e0);
        rt_rpn_eval(&t->outer_stride[0], vals, 6, &s0);
        rt_rpn_eval(&t->outer[1], vals, 6, &e1);
        rt_rpn_eval(&t->outer_stride[1], vals, 6, &s1);
        maps_ok = t->arg == 2 && t->nouter == 2 && e0 == 129 && s0 == 100000 && e1 == 7 && s1 == 12900000;
    }
    unit_check(maps_ok, "roundtrip tensor maps", "%s", b.s);
    unit_check(m.k[0].cluster == 2 && m.k[1].cluster == 0, "roundtrip cluster", "%d %d", m.k[0].cluster,
               m.k[1].cluster);
    unit_check(!strcmp(m.k[0].assume_text[0], "K % 4 == 0") &&
                   !strcmp(m.k[0].assume_text[1], "N % 4 == 0 || M > 0 | x") &&
                   !strcmp(m.k[0].assume_text[2], "N <=  8192") &&
                   !strcmp(m.k[0].assume_text[3], "M > 0 //@end //@kernel evil threads 1 smem 0 regs 1"),
               "roundtrip assume texts", "\"%s\" \"%s\" \"%s\" \"%s\"", m.k[0].assume_text[0],
               m.k[0].assume_text[1], m.k[0].assume_text[2], m.k[0].assume_text[3]);
    rt_meta_free(&m);

    /* --emit=meta: the groups alone, as a cubin's companion string. */
    Buf only = {0};
    meta_write(&only, &k[1]);
    s = rt_meta_parse(only.s, &m);
    unit_check(s == TILERT_OK && m.nk == 1 && m.k[0].ngrid == 3, "roundtrip metadata alone",
               "%s", tilert_last_error());
    if (s == TILERT_OK)
        rt_meta_free(&m);
    buf_free(&only);
    buf_free(&b);
}

/* An assume's text is for messages only, and may hold anything a comment in the condition
 * held: written, it must still be one line the runtime reads (at most META_MAX_LINE bytes) and
 * PTX that ptxas takes (ASCII). */
static void awkward_texts(void)
{
    static KernelArg args[] = { {"N", ARG_SIZE, TY_I32, 4} };
    static char long_text[10000];
    memset(long_text, 'x', sizeof long_text - 1);
    const char *rpn[] = { "a0 0 >", "a0 1 >" };
    const char *text[] = { long_text, "N /* caf\xc3\xa9 \x01\x7f */ > 1" };
    KernelMeta k;
    memset(&k, 0, sizeof k);
    k.name = "k";
    k.args = args;
    k.nargs = 1;
    k.threads = 32;
    k.assume_rpn = rpn;
    k.assume_text = text;
    k.nassumes = 2;
    Buf b = {0};
    meta_write(&b, &k);
    size_t longest = 0, line = 0;
    bool ascii = true;
    for (size_t i = 0; i < b.len; i++) {
        unsigned char c = (unsigned char)b.s[i];
        ascii &= c == '\n' || (c >= 0x20 && c < 0x7f);
        line = c == '\n' ? 0 : line + 1;
        longest = line > longest ? line : longest;
    }
    unit_check(longest == META_MAX_LINE, "a long assume text is cut to the line limit",
               "longest line %zu", longest);
    unit_check(ascii, "assume texts are written as printable ASCII", "%s", b.s);
    rt_meta m;
    tilert_status s = rt_meta_parse(b.s, &m);
    if (unit_check(s == TILERT_OK, "awkward assume texts parse", "%s", tilert_last_error())) {
        size_t n = strlen(m.k[0].assume_text[0]);
        unit_check(n > 4000 && !strcmp(m.k[0].assume_text[0] + n - 3, "..."),
                   "a cut text ends in ...", "%zu bytes", n);
        unit_check(!strcmp(m.k[0].assume_text[1], "N /* caf?? ?? */ > 1"),
                   "other bytes become ?", "\"%s\"", m.k[0].assume_text[1]);
        rt_meta_free(&m);
    }
    buf_free(&b);
}

/* Lowering refuses grid() and assume() expressions of more than META_MAX_RPN tokens, so the
 * runtime must take that many. */
static void rpn_limit(void)
{
    Buf b = {0};
    buf_puts(&b, "a0");
    int n = 1;
    for (; n + 2 <= META_MAX_RPN; n += 2)
        buf_puts(&b, " 1 +");
    if (n < META_MAX_RPN)
        buf_puts(&b, " neg");
    rpn_expr e;
    unit_check(rt_rpn_parse(b.s, 1, &e) == TILERT_OK && e.n == META_MAX_RPN,
               "the runtime reads META_MAX_RPN tokens", "%s", tilert_last_error());
    buf_free(&b);
}

int main(void)
{
    roundtrip();
    awkward_texts();
    rpn_limit();
    return unit_exit();
}
