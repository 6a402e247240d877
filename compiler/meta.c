/* meta.c: writes the //@tilec metadata block that libtilert reads at load time (runtime/meta.c
 * parses it; the format is in tilec.h). One group per kernel, each opened by its own version
 * line, so groups can be concatenated (several kernels, --emit=meta) and still parse. */
#include <stdlib.h>
#include <string.h>

#include "tilec.h"

/* The runtime's spellings: these must match runtime/meta.c. tf32 never reaches an argument. */
static const char *meta_type(ElemType t)
{
    switch (t) {
    case TY_BOOL: return "bool";
    case TY_I32: return "i32";
    case TY_U32: return "u32";
    case TY_I64: return "i64";
    case TY_F16: return "f16";
    case TY_BF16: return "bf16";
    case TY_F32:
    case TY_TF32: return "f32";
    case TY_I8: return "i8";
    case TY_U8: return "u8";
    case TY_F8E4M3: return "f8e4m3";
    case TY_F8E5M2: return "f8e5m2";
    default: die("meta_write: argument of type %d", (int)t);
    }
}

static int meta_size(ElemType t)
{
    switch (t) {
    case TY_BOOL: case TY_I8: case TY_U8: case TY_F8E4M3: case TY_F8E5M2: return 1;
    case TY_F16: case TY_BF16: return 2;
    case TY_I64: return 8;
    default: return 4;
    }
}

static const char *kind_word(ArgKind k)
{
    return k == ARG_PTR ? "ptr" : k == ARG_SIZE ? "size" : "scalar";
}

/* Assume text goes on one line of printable ASCII, at most max bytes: white space from the
 * source becomes spaces, other bytes a comment may hold (UTF-8, control bytes) '?', and a text
 * too long ends in "..." where it is cut. */
static void put_one_line(Buf *out, const char *s, size_t max)
{
    size_t n = strlen(s);
    bool cut = n > max;
    if (cut)
        n = max > 3 ? max - 3 : 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char u = (unsigned char)s[i];
        bool space = u == '\n' || u == '\r' || u == '\t' || u == '\v' || u == '\f';
        char c[2] = {space ? ' ' : u < 0x20 || u > 0x7e ? '?' : (char)u, 0};
        buf_puts(out, c);
    }
    if (cut)
        buf_puts(out, "...");
}

void meta_write(Buf *out, KernelMeta *k)
{
    buf_puts(out, "//@tilec 1\n");
    buf_printf(out, "//@kernel %s threads %d smem %d regs %d\n", k->name, k->threads,
               k->smem_bytes, k->pred_regs);
    for (int i = 0; i < k->nargs; i++) {
        KernelArg *a = &k->args[i];
        int align = a->kind == ARG_PTR && a->align > 0 ? a->align : meta_size(a->type);
        buf_printf(out, "//@arg %s %s %s %d\n", a->name, kind_word(a->kind), meta_type(a->type),
                   align);
    }
    for (int d = 0; d < k->ngrid; d++)
        buf_printf(out, "//@grid %s\n", k->grid_rpn[d]);
    for (int i = 0; i < k->nassumes; i++) {
        const char *text = k->assume_text && k->assume_text[i] && k->assume_text[i][0]
                               ? k->assume_text[i] : k->assume_rpn[i];
        size_t start = out->len;
        buf_printf(out, "//@assume %s | ", k->assume_rpn[i]);
        size_t used = out->len - start;
        put_one_line(out, text, used < TILERT_MAX_META_LINE ? TILERT_MAX_META_LINE - used : 0);
        buf_puts(out, "\n");
    }
    for (int i = 0; i < k->ntmaps; i++) {
        TensorMapMeta *t = &k->tmaps[i];
        buf_printf(out, "//@tmap a%d %s %d %d %d%s%s | %s | %s | %s", t->arg, t->dtype, t->swizzle,
                   t->box_rows, t->box_cols, t->if_aligned ? " if-aligned" : "", t->rows8 ? " rows8" : "",
                   t->rows_rpn, t->cols_rpn, t->pitch_rpn);
        for (int j = 0; j < t->nouter; j++)
            buf_printf(out, " | %s | %s", t->outer_rpn[j], t->outer_stride_rpn[j]);
        buf_puts(out, "\n");
    }
    if (k->cluster)
        buf_printf(out, "//@cluster %d\n", k->cluster);
    if (k->split_dim) {
        buf_printf(out, "//@split %d %lld %lld", k->split_dim, (long long)k->split_bytes, (long long)k->split_step);
        if (k->split_cluster)
            buf_printf(out, " cluster %d", k->split_max);
        buf_printf(out, " | %s\n", k->split_steps_rpn);
    }
    buf_puts(out, "//@end\n");
}
