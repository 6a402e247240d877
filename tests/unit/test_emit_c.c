/* test_emit_c.c: tilec --emit=c output (compiler/emit_c.c) on its own.
 *
 * Includes emit_c.c and util.c directly, so it needs none of the other compiler objects. Feeds
 * hand-made kernel metadata (every argument kind, a parameter named like a C keyword, a kernel
 * without arguments) and checks the generated text, then compiles the pair with
 * `$CC -std=c11 -Wall -Wextra -pedantic -Werror` (and C++ for the header) when the tree's
 * runtime/tilert.h and cuda.h can be found. The output must equal emit_c_golden.{c,h}.txt, which
 * the emit_c before tuned launchers wrote from this metadata (TILEC_WRITE_GOLDEN=1 rewrites them
 * after a deliberate change). Then the same with a --tune dispatch (emit_c_tuned): its tables,
 * and that it compiles. Prints `ok NAME` / `FAIL NAME: why` lines. */
#define _POSIX_C_SOURCE 200809L
#include "../../compiler/util.c"
#include "../../compiler/emit_c.c"

#include <stdio.h>
#include <errno.h>
#include <unistd.h>

#ifndef TILEC_CUDA_HOME
#define TILEC_CUDA_HOME "/usr/local/cuda"
#endif

const char *type_name(ElemType t)
{
    static const char *const names[] = { "none", "bool", "i32", "u32", "i64", "f16", "bf16",
                                         "f32", "tf32" };
    return t < TY_COUNT ? names[t] : "?";
}

static int failures;

static void expect(const char *what, bool cond, const char *why)
{
    if (cond) {
        printf("ok %s\n", what);
    } else {
        printf("FAIL %s: %s\n", what, why);
        failures++;
    }
}

static bool has(const Buf *b, const char *text)
{
    return b->s && strstr(b->s, text);
}

static bool write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* The repository root, from this file's path as the compiler saw it. */
static bool repo_root(Buf *out)
{
    const char *file = __FILE__;
    const char *end = strstr(file, "tests/unit/test_emit_c.c");
    if (!end)
        return false;
    if (end == file)
        buf_puts(out, ".");
    else
        buf_printf(out, "%.*s", (int)(end - file - 1), file);
    Buf h = {0};
    buf_printf(&h, "%s/runtime/tilert.h", out->s);
    bool ok = access(h.s, R_OK) == 0;
    buf_free(&h);
    return ok;
}

/* Compares text with the file NAME beside this test; TILEC_WRITE_GOLDEN=1 writes it instead. */
static void golden(const char *what, const Buf *text, const char *root, const char *name)
{
    if (!root) {
        printf("ok %s (skipped: the source tree is not at hand)\n", what);
        return;
    }
    Buf path = {0};
    buf_printf(&path, "%s/tests/unit/%s", root, name);
    if (getenv("TILEC_WRITE_GOLDEN")) {
        expect(what, write_text(path.s, text->s), "cannot write the golden file");
        buf_free(&path);
        return;
    }
    FILE *f = fopen(path.s, "rb");
    Buf want = {0};
    char chunk[4096];
    size_t n;
    while (f && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_add(&want, chunk, n);
    if (f)
        fclose(f);
    bool same = f && want.len == text->len && memcmp(want.s, text->s, text->len) == 0;
    size_t at = 0;
    while (!same && at < want.len && at < text->len && want.s[at] == text->s[at])
        at++;
    char why[200];
    snprintf(why, sizeof why, "differs from %s at byte %zu", name, at);
    expect(what, same, f ? why : "golden file missing");
    buf_free(&want);
    buf_free(&path);
}

/* Compiles a generated pair as a user's build would: C11 with every warning an error, and the
 * header as C++. */
static void compiles(const char *what, const Buf *c, const Buf *h, const char *root)
{
    const char *cuda_h = TILEC_CUDA_HOME "/include/cuda.h";
    if (!root || access(cuda_h, R_OK) != 0) {
        printf("ok %s compiles (skipped: runtime/tilert.h or %s not found)\n", what, cuda_h);
        return;
    }
    char dir[] = "/tmp/tilec-emit-c-XXXXXX";
    if (!mkdtemp(dir)) {
        expect("temporary directory", false, strerror(errno));
        return;
    }
    Buf path = {0}, cmd = {0}, name = {0};
    buf_printf(&path, "%s/my-kernels.c", dir);
    bool ok = write_text(path.s, c->s);
    path.len = 0;
    buf_printf(&path, "%s/my-kernels.h", dir);
    ok = ok && write_text(path.s, h->s);
    const char *cc = getenv("CC");
    if (!cc || !*cc)
        cc = "cc";
    buf_printf(&cmd, "%s -std=c11 -Wall -Wextra -pedantic -Werror -I'%s/runtime' "
               "-I'%s/include' -c -o '%s/out.o' '%s/my-kernels.c'", cc, root,
               TILEC_CUDA_HOME, dir, dir);
    buf_printf(&name, "%s compiles with -pedantic -Werror", what);
    expect(name.s, ok && system(cmd.s) == 0, cmd.s);
    cmd.len = name.len = 0;
    buf_printf(&cmd, "command -v c++ >/dev/null 2>&1 || exit 0; c++ -x c++ -fsyntax-only "
               "-Wall -I'%s/runtime' -I'%s/include' '%s/my-kernels.h'", root,
               TILEC_CUDA_HOME, dir);
    buf_printf(&name, "%s: header is valid C++", what);
    expect(name.s, system(cmd.s) == 0, cmd.s);
    cmd.len = 0;
    buf_printf(&cmd, "rm -rf '%s'", dir);
    if (system(cmd.s) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    buf_free(&path);
    buf_free(&cmd);
    buf_free(&name);
}

int main(void)
{
    KernelArg va[] = {
        { "X", ARG_PTR, TY_F32, 16 }, { "Y", ARG_PTR, TY_F32, 16 }, { "Z", ARG_PTR, TY_F32, 16 },
        { "alpha", ARG_SCALAR, TY_F32, 0 }, { "N", ARG_SIZE, TY_I32, 0 },
    };
    KernelArg mixed[] = {
        { "int", ARG_PTR, TY_F16, 2 }, { "stream", ARG_SCALAR, TY_I64, 0 },
        { "h", ARG_SCALAR, TY_BF16, 0 }, { "flag", ARG_SCALAR, TY_BOOL, 0 },
        { "u", ARG_SCALAR, TY_U32, 0 }, { "i", ARG_SCALAR, TY_I32, 0 },
        { "R", ARG_SIZE, TY_I32, 0 },
    };
    const char *assume_text[] = { "R <= 64" };
    const char *assume_rpn[] = { "a6 64 <=" };
    /* Names that would break the C if copied as they are (a macro, a typedef, a C++ keyword, the
       launcher's own, two that become the same), and texts that try to leave the comment they
       are put in: the generated files must still compile, and say nothing of them as code. */
    KernelArg hostile[] = {
        { "NULL", ARG_SCALAR, TY_F32, 0 }, { "int32_t", ARG_SCALAR, TY_I32, 0 },
        { "class", ARG_PTR, TY_F32, 4 }, { "_Bool", ARG_SCALAR, TY_BOOL, 0 },
        { "stream", ARG_SCALAR, TY_U32, 0 }, { "stream_", ARG_SCALAR, TY_U32, 0 },
        { "CUdeviceptr", ARG_PTR, TY_F32, 4 }, { "my_kernels_module_", ARG_SCALAR, TY_I64, 0 },
        { "tilert_args", ARG_SCALAR, TY_F32, 0 }, { "N", ARG_SIZE, TY_I32, 0 },
    };
    const char *hostile_text[] = {
        "N > 0 */ int evil_code = 1; /*", "N > 1 ?\?/", "N > 2 \\", "N > 3 \xc3\xa9 /* x",
        "N > 4\n//@kernel evil threads 1 smem 0 regs 1\n//@end\n#error injected",
    };
    const char *hostile_rpn[] = { "a9 0 >", "a9 1 >", "a9 2 >", "a9 3 >", "a9 4 >" };
    KernelMeta ks[4];
    memset(ks, 0, sizeof ks);
    ks[0] = (KernelMeta){ .name = "vecadd", .args = va, .nargs = 5, .threads = 256,
                          .ngrid = 1, .grid_rpn = { "a4 1024 cdiv" }, .pred_regs = 24,
                          .ptxas_regs = -1 };
    ks[1] = (KernelMeta){ .name = "mixed", .args = mixed, .nargs = 7, .threads = 128,
                          .smem_bytes = 65536, .ngrid = 1, .grid_rpn = { "a6" },
                          .assume_rpn = assume_rpn, .assume_text = assume_text, .nassumes = 1,
                          .pred_regs = 40, .ptxas_regs = 38 };
    ks[2] = (KernelMeta){ .name = "noargs", .threads = 32, .ngrid = 0, .pred_regs = 8,
                          .ptxas_regs = -1 };
    ks[3] = (KernelMeta){ .name = "hostile", .args = hostile, .nargs = 10, .threads = 32,
                          .ngrid = 1, .grid_rpn = { "1" }, .assume_rpn = hostile_rpn,
                          .assume_text = hostile_text, .nassumes = 5, .pred_regs = 8,
                          .ptxas_regs = -1 };
    static const char ptx[] =
        "//@tilec 1\n"
        "//@kernel vecadd threads 256 smem 0 regs 24\n"
        "//@end\n"
        "// a comment that is not metadata\n"
        ".version 8.0\n"
        ".target sm_80\n"
        ".address_size 64\n";
    /* the sm_90a code has metadata of its own (more shared memory, a tensor map) */
    static const char ptx90[] =
        "//@tilec 1\n"
        "//@kernel vecadd threads 256 smem 4096 regs 30\n"
        "//@tmap a0 f32 0 16 16 | a4 | 1 | 1\n"
        "//@end\n"
        ".target sm_90a\n";
    static const char elf[] = "\177ELF\0\1\2\3";
    Cubin cubins[2] = { { "sm_90a", elf, 8, ptx90 }, { "sm_80", elf, 5, NULL } };

    Buf c = {0}, h = {0};
    emit_c(&c, &h, "my-kernels", "my-kernels.h", ks, 4, ptx, cubins, 2);

    expect("prefix sanitized", has(&h, "tilert_status my_kernels_load(tilert_context *ctx);"),
           "no my_kernels_load");
    expect("header includes tilert.h", has(&h, "#include \"tilert.h\""), "missing include");
    expect("vecadd launcher", has(&h, "tilert_status my_kernels_vecadd_launch(CUstream stream,"),
           "missing");
    expect("typed arguments", has(&h, "float alpha,") && has(&h, "int32_t N);") &&
                                  has(&h, "CUdeviceptr X,"), "wrong types");
    expect("keyword parameter renamed", has(&h, "CUdeviceptr int_,") &&
                                            has(&h, "int64_t stream_,"), "not renamed");
    expect("bf16 as bits, bool as int", has(&h, "uint16_t h,") && has(&h, "int flag,"),
           "wrong types");
    expect("no-argument launcher", has(&h, "my_kernels_noargs_launch(CUstream stream);"),
           "missing");
    expect("info declared", has(&h, "extern const my_kernels_kernel_info my_kernels_mixed_info;"),
           "missing");
    expect("assume in the header comment", has(&h, "assume(R <= 64)"), "missing");
    expect("hostile names renamed", has(&h, "float NULL_,") && has(&h, "int32_t int32_t_,") &&
                                        has(&h, "CUdeviceptr class_,") && has(&h, "int _Bool_,") &&
                                        has(&h, "uint32_t stream_,") && has(&h, "uint32_t stream__,") &&
                                        has(&h, "CUdeviceptr CUdeviceptr_,") &&
                                        has(&h, "int64_t my_kernels_module__,") &&
                                        has(&h, "float tilert_args_,") && has(&h, "int32_t N);"),
           "a clashing name kept");
    expect("no comment ends early", !has(&h, "*/ int evil_code") && has(&h, "* / int evil_code") &&
                                        !has(&h, "/* x") && !has(&h, "\n//@") && !has(&h, "?\?"),
           "a text left its comment");
    expect("source includes its header", has(&c, "#include \"my-kernels.h\""), "missing");
    expect("info values", has(&c, "\"mixed\", 128, 65536, 40, 38, 7, \"sm_90a,sm_80\", \"sm_80\""),
           "wrong values");
    expect("bool packed as 0/1", has(&c, ".v.b = flag != 0;"), "missing");
    expect("bf16 kind", has(&c, "TILERT_ARG_BF16BITS"), "missing");
    expect("cubins listed with their metadata",
           has(&c, "{ \"sm_90a\", my_kernels_cubin0_, sizeof my_kernels_cubin0_, "
                   "(const char *)my_kernels_meta0_ }"), "missing");
    expect("cubin bytes", has(&c, "my_kernels_cubin0_[8] = {\n    127,69,76,70,0,1,2,3,"),
           "wrong bytes");
    expect("ptx NUL-terminated", has(&c, "my_kernels_ptx_[" ) && has(&c, "10,0\n};"), "no NUL");

    /* The metadata array holds exactly the //@ lines. */
    Buf want = {0};
    const char *meta = "//@tilec 1\n//@kernel vecadd threads 256 smem 0 regs 24\n//@end\n";
    buf_printf(&want, "my_kernels_meta_[%zu]", strlen(meta) + 1);
    expect("metadata block extracted", has(&c, want.s), want.s);
    /* each cubin's from its own PTX; one without PTX gets the first's */
    const char *meta90 = "//@tilec 1\n//@kernel vecadd threads 256 smem 4096 regs 30\n"
                         "//@tmap a0 f32 0 16 16 | a4 | 1 | 1\n//@end\n";
    want.len = 0;
    buf_printf(&want, "my_kernels_meta0_[%zu]", strlen(meta90) + 1);
    expect("a cubin's own metadata", has(&c, want.s), want.s);
    want.len = 0;
    buf_printf(&want, "my_kernels_meta1_[%zu]", strlen(meta) + 1);
    expect("a cubin without PTX: the first's metadata", has(&c, want.s), want.s);
    buf_free(&want);

    /* The output without --tune is what it was before tuned launchers existed, byte for byte:
     * tests/unit/emit_c_golden.{c,h}.txt were written by that emit_c from this metadata. */
    Buf root = {0};
    bool have_root = repo_root(&root);
    golden("untuned output unchanged (.c)", &c, have_root ? root.s : NULL, "emit_c_golden.c.txt");
    golden("untuned output unchanged (.h)", &h, have_root ? root.s : NULL, "emit_c_golden.h.txt");
    compiles("generated code", &c, &h, have_root ? root.s : NULL);

    /* Tuned: vecadd in three variants (the module's own and two more) over four classes, which
     * must come out in the kernel's size order with their variants, and compile. */
    static const char ptx_v1[] = "//@tilec 1\n//@kernel vecadd threads 128 smem 0 regs 20\n//@end\n.target sm_80\n";
    static const char ptx_v2[] = "//@tilec 1\n//@kernel vecadd threads 512 smem 0 regs 30\n//@end\n.target sm_80\n";
    EmitVariant vars[2] = {
        { "BLOCK=128", ks, 4, ptx_v1, cubins, 2 },
        { "BLOCK=512,\"X\"=1", ks, 4, ptx_v2, NULL, 0 },
    };
    TuneClass cls[4];
    memset(cls, 0, sizeof cls);
    static const int64_t at[4] = { 1024, 1 << 20, 1 << 26, 1 << 14 };
    static const int variant_of[4] = { 1, 0, 2, 1 };
    for (int i = 0; i < 4; i++) {
        cls[i].kernel = "vecadd";
        cls[i].nsizes = 1;
        cls[i].size_name[0] = "N";
        cls[i].size[0] = at[i];
        cls[i].variant = variant_of[i];
    }
    EmitTune tune = { vars, 2, cls, 4 };
    Buf tc = {0}, th = {0};
    emit_c_tuned(&tc, &th, "my-kernels", "my-kernels.h", ks, 4, ptx, cubins, 2, &tune);
    expect("tuned: dispatch helper declared", has(&th, "int my_kernels_vecadd_variant(int32_t N);"),
           "no my_kernels_vecadd_variant in the header");
    expect("tuned: variant consts declared", has(&th, "const char *my_kernels_variant_defines(int variant);"),
           "no my_kernels_variant_defines");
    expect("tuned: untuned kernels keep their launcher",
           has(&tc, "return tilert_embedded_launch(&my_kernels_module_, 1, stream, tilert_args, 7);"),
           "mixed's launcher changed");
    expect("tuned: the launcher dispatches",
           has(&tc, "return tilert_tuned_launch(&my_kernels_vecadd_tuned_, stream, tilert_args, 5, tilert_sizes);"),
           "no tilert_tuned_launch");
    expect("tuned: class sizes", has(&tc, "    1024,\n    1048576,\n    67108864,\n    16384,\n"),
           "class sizes not in file order");
    expect("tuned: class variants", has(&tc, "my_kernels_vecadd_class_variant_[4] = { 1, 0, 2, 1 };"),
           "wrong variants");
    expect("tuned: three modules", has(&tc, "&my_kernels_module_,\n    &my_kernels_v1_module_,\n    &my_kernels_v2_module_,\n};"),
           "variants table");
    expect("tuned: a variant's cubins", has(&tc, "my_kernels_v1_cubins_[2]") && !has(&tc, "my_kernels_v2_cubins_"),
           "variant 1 has two cubins, variant 2 none");
    expect("tuned: consts quoted safely", has(&tc, "\"BLOCK=512,?X?=1\""), "quote in a C string");
    expect("tuned: load loads every variant", has(&tc, "tilert_embedded_load(my_kernels_variants_[i], ctx)"),
           "load");
    compiles("tuned code", &tc, &th, have_root ? root.s : NULL);
    buf_free(&tc);
    buf_free(&th);
    buf_free(&root);
    buf_free(&c);
    buf_free(&h);
    return failures ? 1 : 0;
}
