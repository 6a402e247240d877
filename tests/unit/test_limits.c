/* test_limits.c: the compiler and the runtime agree on the metadata limits (runtime/tilert_limits.h).
 * A kernel at every limit at once (64 arguments, 255-byte names, a 64-term grid) goes through the
 * compiler's own pipeline (parse, check, lower, meta_write) and libtilert's parser must take what
 * comes out; one argument more is refused by the compiler, at the source. */
#include <stdlib.h>

#include "tilec.h"
#include "tilert_internal.h"
#include "unit.h"

/* Compiles src as tilec does up to the metadata; false when the source has errors. */
static bool compile_meta(const char *src, Buf *meta)
{
    diag = (Diag){ .file = "test_limits.tile", .src = src, .len = strlen(src) };
    Arena *a = arena_new();
    Program *p = parse_program(a);
    bool ok = p && !diag.nerrors && check_program(a, p, NULL, 0) && !diag.nerrors;
    for (int i = 0; ok && i < p->nkernels; i++) {
        Options opt = { .addr_split = true, .const_reg_elim = true, .arch = "sm_80" };
        KernelMeta m;
        memset(&m, 0, sizeof m);
        Func *f = lower_kernel(a, p, p->kernels[i], &opt, &m);
        if (!f) {
            ok = false;
            break;
        }
        meta_write(meta, &m);
        func_free(f);
    }
    arena_free(a);
    return ok;
}

/* 60 + extra scalar parameters (q... and p1...), a tensor of 3 sizes, names of 255 bytes, a grid
 * of exactly TILERT_MAX_RPN terms, and an assume whose text (5000 bytes) the compiler must cut to
 * fit the runtime's lines. */
static void widest(Buf *src, int extra)
{
    char name[TILERT_MAX_NAME + 1];
    memset(name, 'k', TILERT_MAX_NAME);
    name[TILERT_MAX_NAME] = 0;
    buf_printf(src, "kernel %s(", name);
    name[0] = 'q';
    buf_printf(src, "%s: i32, ", name);
    for (int i = 1; i < TILERT_MAX_ARGS - 4 + extra; i++)
        buf_printf(src, "p%d: i32, ", i);
    buf_puts(src, "X: f32[N0, N1, N2])\n    grid(");
    /* 32 leaves and one negation: 2 * 32 - 1 + 1 tokens */
    for (int i = 0; i < 31; i++)
        buf_puts(src, "N0 + ");
    buf_puts(src, "-N1)\n    threads(32)\n{\n    assume(");
    for (int i = 0; i < 20; i++)
        buf_printf(src, "%s + ", name);
    buf_puts(src, "1 > 0);\n    X[0, 0, 0] = 1.0;\n}\n");
}

int main(void)
{
    Buf src = {0}, meta = {0};
    widest(&src, 0);
    bool compiled = compile_meta(src.s, &meta);
    unit_check(compiled, "a kernel at every metadata limit compiles", "%d errors", diag.nerrors);
    if (compiled) {
        rt_meta m;
        tilert_status s = rt_meta_parse(meta.s, &m);
        if (unit_check(s == TILERT_OK, "libtilert loads its metadata", "%s", tilert_last_error())) {
            const char *text = m.k[0].nassumes == 1 ? m.k[0].assume_text[0] : "";
            size_t tl = strlen(text);
            unit_check(m.nk == 1 && m.k[0].nargs == TILERT_MAX_ARGS &&
                           strlen(m.k[0].name) == TILERT_MAX_NAME &&
                           m.k[0].grid[0].n == TILERT_MAX_RPN && tl == MAX_ASSUME_TEXT + 3 &&
                           !strcmp(text + tl - 3, "..."),
                       "every limit reached", "%d args, %d grid terms, assume text of %zu bytes",
                       m.k[0].nargs, m.k[0].grid[0].n, tl);
            rt_meta_free(&m);
        }
    }
    src.len = 0;
    meta.len = 0;
    widest(&src, 1);
    unit_check(!compile_meta(src.s, &meta), "one argument more is refused by the compiler",
               "it compiled");
    buf_free(&src);
    buf_free(&meta);
    return unit_exit();
}
