/* emit_c.c: --emit=c, a C source/header pair that links generated kernels into a program.
 *
 * NAME.c embeds the PTX (with its //@tilec metadata block) and any cubins as byte arrays (string
 * literals would hit C's 4095-character limit under -pedantic) and defines one typed launcher
 * per kernel; NAME.h declares them. The launchers are thin: they pack their arguments in ABI
 * order and hand them to libtilert's tilert_embedded_launch, which owns the loading policy
 * (per-context table, cubin or JIT choice) and the checks (pointers, sizes, assume facts). */
#include <stdlib.h>
#include <string.h>

#include "tilec.h"

/* Words of C and C++ (the header is both) and the launcher's own names. */
static const char *const reserved[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "bool", "true", "false", "asm",
    "alignas", "alignof", "and", "and_eq", "bitand", "bitor", "catch", "class", "compl",
    "concept", "consteval", "constexpr", "constinit", "const_cast", "co_await", "co_return",
    "co_yield", "decltype", "delete", "dynamic_cast", "explicit", "export", "friend", "mutable",
    "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq",
    "private", "protected", "public", "reinterpret_cast", "requires", "static_assert",
    "static_cast", "template", "this", "thread_local", "throw", "try", "typeid", "typename",
    "using", "virtual", "wchar_t", "xor", "xor_eq", "char8_t", "char16_t", "char32_t",
    "stream", "tilert_args", "errno", "assert", "offsetof",
};

/* Could a C parameter of this name clash with something the generated files or the headers they
 * include (tilert.h, cuda.h, the C library's) define? Keywords and the launcher's names; names
 * reserved to the implementation (a leading '_'); the type names (`*_t`, cuda.h's CU... and
 * cu..., tilert's own, and this file's PREFIX_...); and every name of capitals, digits and '_'
 * of two characters or more, the macros' style (NULL, CUDAAPI, INT32_MAX): a macro would
 * replace the parameter's name. Single capitals (M, N, K) stay as they are. */
static bool clashes(const char *name, const char *prefix)
{
    size_t n = strlen(name), np = strlen(prefix);
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strcmp(name, reserved[i]) == 0)
            return true;
    if (name[0] == '_' || (n >= 2 && strcmp(name + n - 2, "_t") == 0) ||
        strncmp(name, "cu", 2) == 0 || strncmp(name, "CU", 2) == 0 ||
        strncmp(name, "tilert", 6) == 0 || strncmp(name, "TILERT", 6) == 0 ||
        (strncmp(name, prefix, np) == 0 && name[np] == '_'))
        return true;
    bool caps = n >= 2;
    for (size_t i = 0; i < n && caps; i++)
        caps = (name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9') ||
               name[i] == '_';
    return caps;
}

/* The C names of a kernel's parameters: the source names, as identifiers, with a '_' after each
 * that clashes, and more until each is distinct from the others. Freed with free_names. */
static char **c_param_names(const KernelMeta *k, const char *prefix)
{
    char **names = calloc((size_t)k->nargs + 1, sizeof *names);
    if (!names)
        die("out of memory");
    for (int i = 0; i < k->nargs; i++) {
        Buf b = {0};
        const char *src = k->args[i].name && *k->args[i].name ? k->args[i].name : "arg";
        if (*src >= '0' && *src <= '9')
            buf_puts(&b, "a");
        for (const char *p = src; *p; p++) {
            char c = *p;
            bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
            buf_printf(&b, "%c", ok ? c : '_');
        }
        if (clashes(b.s, prefix))
            buf_puts(&b, "_");
        for (int j = 0; j < i; j++)
            if (strcmp(names[j], b.s) == 0) {
                buf_puts(&b, "_");
                j = -1;   /* compare with all again */
            }
        names[i] = b.s;
    }
    return names;
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Text from the source or the command line inside a C comment: printable ASCII, nothing that
 * ends the comment or opens another (the text of an assume, cleaned by the parser already), and
 * no trigraph, which could turn into a backslash and join lines. */
static void c_comment_text(Buf *out, const char *s)
{
    char last = ' ';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char o = c < 0x20 || c >= 0x7f ? '?' : (char)c;
        if ((last == '*' && o == '/') || (last == '/' && o == '*') || (last == '?' && o == '?'))
            buf_puts(out, " ");
        buf_printf(out, "%c", o);
        last = o;
    }
}

/* base as a C identifier: other characters become '_', a leading digit gets a '_' before it. */
static void c_ident(Buf *out, const char *base)
{
    if (!base || !*base)
        base = "kernels";
    if (*base >= '0' && *base <= '9')
        buf_puts(out, "_");
    for (const char *p = base; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        buf_printf(out, "%c", ok ? c : '_');
    }
}

static const char *c_type(const KernelArg *a)
{
    if (a->kind == ARG_PTR)
        return "CUdeviceptr";
    if (a->kind == ARG_SIZE)
        return "int32_t";
    switch (a->type) {
    case TY_F32: return "float";
    case TY_I32: return "int32_t";
    case TY_U32: return "uint32_t";
    case TY_I64: return "int64_t";
    case TY_BOOL: return "int";
    case TY_F16: case TY_BF16: return "uint16_t";
    default: die("emit_c: scalar argument '%s' of type %s", a->name, type_name(a->type));
    }
}

/* The tilert_arg kind and union member of an argument. */
static void arg_kind(const KernelArg *a, const char **kind, const char **field)
{
    if (a->kind == ARG_PTR) {
        *kind = "TILERT_ARG_PTR", *field = "ptr";
        return;
    }
    if (a->kind == ARG_SIZE) {
        *kind = "TILERT_ARG_I32", *field = "i32";
        return;
    }
    switch (a->type) {
    case TY_F32: *kind = "TILERT_ARG_F32", *field = "f32"; return;
    case TY_I32: *kind = "TILERT_ARG_I32", *field = "i32"; return;
    case TY_U32: *kind = "TILERT_ARG_U32", *field = "u32"; return;
    case TY_I64: *kind = "TILERT_ARG_I64", *field = "i64"; return;
    case TY_BOOL: *kind = "TILERT_ARG_BOOL", *field = "b"; return;
    case TY_F16: *kind = "TILERT_ARG_F16BITS", *field = "bits16"; return;
    case TY_BF16: *kind = "TILERT_ARG_BF16BITS", *field = "bits16"; return;
    default: die("emit_c: scalar argument '%s' of type %s", a->name, type_name(a->type));
    }
}

/* Bytes as a C initializer, 16 a line. A NUL is appended when nul_terminate (text). */
static void byte_array(Buf *out, const char *decl, const unsigned char *data, size_t n,
                       bool nul_terminate)
{
    buf_printf(out, "%s[%zu] = {", decl, n + (nul_terminate ? 1 : 0));
    for (size_t i = 0; i < n; i++)
        buf_printf(out, "%s%u,", i % 16 ? "" : "\n    ", (unsigned)data[i]);
    if (nul_terminate)
        buf_printf(out, "%s0", n % 16 ? "" : "\n    ");
    buf_puts(out, "\n};\n\n");
}

/* The //@ lines of the PTX: the metadata a cubin needs beside it. */
static void meta_block(Buf *out, const char *ptx)
{
    for (const char *line = ptx; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
        if (len >= 3 && memcmp(line, "//@", 3) == 0) {
            char *copy = malloc(len + 1);
            if (!copy)
                die("out of memory");
            memcpy(copy, line, len);
            copy[len] = '\0';
            buf_puts(out, copy);
            free(copy);
            if (!nl)
                buf_puts(out, "\n");
        }
        line = nl ? nl + 1 : NULL;
    }
}

/* The PTX's `.target sm_XX` (first target named), "" if there is none. */
static void ptx_target(Buf *out, const char *ptx)
{
    const char *p = ptx;
    while ((p = strstr(p, ".target"))) {
        if (p == ptx || p[-1] == '\n') {
            p += strlen(".target");
            while (*p == ' ' || *p == '\t')
                p++;
            while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')
                buf_printf(out, "%c", *p++);
            return;
        }
        p++;
    }
}

/* "f32[M, K]"-style comment for a parameter in the header. */
static const char *arg_comment(Buf *scratch, const KernelArg *a)
{
    scratch->len = 0;
    switch (a->kind) {
    case ARG_PTR:
        buf_printf(scratch, "device pointer to %s, %d-byte aligned", type_name(a->type), a->align);
        break;
    case ARG_SIZE:
        buf_puts(scratch, "size, >= 0");
        break;
    case ARG_SCALAR:
        buf_printf(scratch, "%s%s", type_name(a->type),
                   a->type == TY_F16 || a->type == TY_BF16 ? " bits" :
                   a->type == TY_BOOL ? " (0 or 1)" : "");
        break;
    }
    return scratch->s;
}

/* The declaration puts one argument a line with what it must be; the definition is plain. */
static void launcher_signature(Buf *out, const char *prefix, const KernelMeta *k, bool decl)
{
    Buf note = {0};
    char **names = c_param_names(k, prefix);
    buf_printf(out, "tilert_status %s_%s_launch(CUstream stream", prefix, k->name);
    for (int i = 0; i < k->nargs; i++) {
        const KernelArg *a = &k->args[i];
        const char *sep = i + 1 < k->nargs ? "," : decl ? ");" : ")";
        buf_printf(out, "%s\n    %s %s%s", i ? "" : ",", c_type(a), names[i], sep);
        if (decl)
            buf_printf(out, "   /* %s */", arg_comment(&note, a));
    }
    if (k->nargs == 0)
        buf_puts(out, decl ? ");" : ")");
    buf_puts(out, "\n");
    free_names(names, k->nargs);
    buf_free(&note);
}

static void emit_tune_header(Buf *h, const char *prefix, KernelMeta *ks, int nk, const EmitTune *tune);

static void emit_header(Buf *h, const char *prefix, const char *guard, KernelMeta *ks, int nk,
                        const EmitTune *tune)
{
    buf_printf(h, "/* %s.h: generated by tilec %s (--emit=c). Do not edit.\n", prefix,
               TILEC_VERSION);
    buf_puts(h,
        " *\n"
        " * Link with libtilert (pkg-config --cflags --libs tilert). Every launcher checks its\n"
        " * arguments (null or misaligned pointers, negative sizes, the kernel's assume facts) and\n"
        " * returns an error instead of launching; tilert_last_error() says why.\n"
        " *\n"
        " * Loading happens once per CUDA context, thread-safely: at the first launch, or earlier\n"
        " * through the _load function. A launch runs in the context current on the calling thread\n"
        " * (a device's primary context, as tilert_init and the CUDA runtime use); with none\n"
        " * current, in the context given to the last _load, else in device 0's primary context.\n"
        " * The code used is the embedded cubin of the device's exact architecture, else the PTX\n"
        " * compiled by the driver, else the launch fails with TILERT_ERR_ARCH. */\n");
    buf_printf(h, "#ifndef %s\n#define %s\n\n", guard, guard);
    buf_puts(h, "#include <stdint.h>\n\n#include \"tilert.h\"\n\n");
    buf_puts(h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    buf_printf(h,
        "/* What the compiler knows about a kernel. */\n"
        "typedef struct {\n"
        "    const char *name;\n"
        "    int threads;           /* block size */\n"
        "    int smem_bytes;        /* dynamic shared memory per block */\n"
        "    int pred_regs;         /* registers per thread predicted by tilec */\n"
        "    int ptxas_regs;        /* registers per thread reported by ptxas, -1 if it did not run */\n"
        "    int nargs;             /* launcher arguments after the stream */\n"
        "    const char *cubin_archs;   /* embedded cubins, comma-separated (\"\" if none) */\n"
        "    const char *ptx_arch;      /* target of the embedded PTX */\n"
        "} %s_kernel_info;\n\n", prefix);
    buf_printf(h,
        "/* Loads every kernel of this file into ctx's context now (launches load lazily\n"
        " * otherwise) and makes it the context of launches from threads with no current context.\n"
        " * ctx NULL: the context a launch from this thread would use. */\n"
        "tilert_status %s_load(tilert_context *ctx);\n"
        "/* Unloads from every context. No launch of these kernels may run concurrently. */\n"
        "void %s_unload(void);\n"
        "/* Unloads from ctx's context only: launches in other contexts (other devices) may run\n"
        " * meanwhile, none in this one. */\n"
        "void %s_unload_context(tilert_context *ctx);\n"
        "/* What a launch from this thread runs: \"cubin sm_90a\", \"ptx sm_80 (JIT)\" or\n"
        " * \"not loaded\". */\n"
        "const char *%s_code(void);\n\n", prefix, prefix, prefix, prefix);
    for (int i = 0; i < nk; i++) {
        KernelMeta *k = &ks[i];
        buf_printf(h, "/* kernel %s: %d threads per block", k->name, k->threads);
        for (int j = 0; j < k->nassumes; j++) {
            buf_printf(h, "%s assume(", j ? "," : "; checked at launch:");
            c_comment_text(h, k->assume_text[j] ? k->assume_text[j] : "");
            buf_puts(h, ")");
        }
        buf_puts(h, " */\n");
        buf_printf(h, "extern const %s_kernel_info %s_%s_info;\n", prefix, prefix, k->name);
        launcher_signature(h, prefix, k, true);
        buf_puts(h, "\n");
    }
    if (tune)
        emit_tune_header(h, prefix, ks, nk, tune);
    buf_puts(h, "#ifdef __cplusplus\n}\n#endif\n\n");
    buf_printf(h, "#endif /* %s */\n", guard);
}

/* The classes of tune that name kernel k, -1 if none: is k a tuned kernel. */
static int first_class(const EmitTune *tune, const KernelMeta *k)
{
    for (int i = 0; tune && i < tune->nclasses; i++)
        if (!strcmp(tune->classes[i].kernel, k->name))
            return i;
    return -1;
}

/* A tuned kernel's sizes: the C names of its size arguments, comma-separated, with or without
 * their type. */
static void size_params(Buf *out, const char *prefix, const KernelMeta *k, bool typed)
{
    char **names = c_param_names(k, prefix);
    int n = 0;
    for (int i = 0; i < k->nargs; i++)
        if (k->args[i].kind == ARG_SIZE)
            buf_printf(out, "%s%s%s", n++ ? ", " : "", typed ? "int32_t " : "", names[i]);
    free_names(names, k->nargs);
}

static void emit_tune_header(Buf *h, const char *prefix, KernelMeta *ks, int nk, const EmitTune *tune)
{
    buf_printf(h,
        "/* Tuned launchers (tilec --emit=c --tune): %s.c holds the module %d times, compiled\n"
        " * with the consts that won each size class (variant 0: the file's own). A tuned kernel's\n"
        " * launcher runs the variant of the class nearest the launch's sizes (the sum of squared\n"
        " * differences of their log2), falling back to the next nearest when an assume() of a\n"
        " * variant refuses the arguments, and to variant 0 last.\n"
        " * The consts of a variant (\"BM=64,BN=128\"; \"\" for variant 0), NULL past the last. */\n"
        "const char *%s_variant_defines(int variant);\n\n",
        prefix, tune->nvariants + 1, prefix);
    for (int i = 0; i < nk; i++) {
        if (first_class(tune, &ks[i]) < 0)
            continue;
        buf_printf(h, "/* The variant a launch of %s at these sizes runs first. */\n", ks[i].name);
        buf_printf(h, "int %s_%s_variant(", prefix, ks[i].name);
        size_params(h, prefix, &ks[i], true);
        buf_puts(h, ");\n\n");
    }
}

/* One module: the PTX, its metadata, the cubins with theirs, the kernel names and the
 * tilert_embedded that ties them together, all named mp_... */
static void emit_module(Buf *c, const char *mp, KernelMeta *ks, int nk, const char *ptx,
                        const Cubin *cubins, int ncubins, const char *ptx_arch)
{
    Buf decl = {0};
    buf_puts(c, "/* The PTX with its //@tilec metadata, NUL-terminated. */\n");
    buf_printf(&decl, "static const unsigned char %s_ptx_", mp);
    byte_array(c, decl.s, (const unsigned char *)ptx, strlen(ptx), true);

    Buf meta = {0};
    meta_block(&meta, ptx);
    buf_puts(c, "/* The metadata alone: what a cubin needs beside it. */\n");
    decl.len = 0;
    buf_printf(&decl, "static const unsigned char %s_meta_", mp);
    byte_array(c, decl.s, (const unsigned char *)(meta.s ? meta.s : ""), meta.len, true);
    buf_free(&meta);

    for (int i = 0; i < ncubins; i++) {
        decl.len = 0;
        buf_printf(&decl, "static _Alignas(16) const unsigned char %s_cubin%d_", mp, i);
        buf_printf(c, "/* cubin for %s */\n", cubins[i].arch);
        byte_array(c, decl.s, (const unsigned char *)cubins[i].data, cubins[i].size, false);
        /* Each arch's own metadata: one arch may use TMA (hidden tensor-map parameters) or
         * another amount of shared memory where the other does not. */
        Buf m = {0};
        meta_block(&m, cubins[i].ptx ? cubins[i].ptx : ptx);
        decl.len = 0;
        buf_printf(&decl, "static const unsigned char %s_meta%d_", mp, i);
        buf_printf(c, "/* the metadata of the %s code */\n", cubins[i].arch);
        byte_array(c, decl.s, (const unsigned char *)(m.s ? m.s : ""), m.len, true);
        buf_free(&m);
    }
    if (ncubins > 0) {
        buf_printf(c, "static const tilert_embedded_cubin %s_cubins_[%d] = {\n", mp, ncubins);
        for (int i = 0; i < ncubins; i++)
            buf_printf(c, "    { \"%s\", %s_cubin%d_, sizeof %s_cubin%d_, (const char *)%s_meta%d_ },\n",
                       cubins[i].arch, mp, i, mp, i, mp, i);
        buf_puts(c, "};\n\n");
    }

    buf_printf(c, "static const char *const %s_kernels_[%d] = {", mp, nk > 0 ? nk : 1);
    for (int i = 0; i < nk; i++)
        buf_printf(c, "%s\"%s\"", i ? ", " : " ", ks[i].name);
    buf_puts(c, nk > 0 ? " };\n\n" : " 0 };\n\n");

    buf_printf(c,
        "static tilert_embedded %s_module_ = {\n"
        "    \"%s\",\n"
        "    (const char *)%s_ptx_,\n"
        "    \"%s\",\n"
        "    (const char *)%s_meta_,\n", mp, mp, mp, ptx_arch, mp);
    if (ncubins > 0)
        buf_printf(c, "    %s_cubins_, %d,\n", mp, ncubins);
    else
        buf_puts(c, "    0, 0,\n");
    buf_printf(c, "    %s_kernels_, %d,\n    0\n};\n\n", mp, nk);
    buf_free(&decl);
}

/* The variants' modules, the table of all modules and their consts, and the functions that load
 * and unload them all (they replace the single module's). */
static void emit_tune_modules(Buf *c, const char *prefix, const EmitTune *tune)
{
    Buf mp = {0}, target = {0};
    for (int v = 0; v < tune->nvariants; v++) {
        const EmitVariant *ev = &tune->variants[v];
        mp.len = target.len = 0;
        buf_printf(&mp, "%s_v%d", prefix, v + 1);
        ptx_target(&target, ev->ptx);
        buf_puts(&target, "");
        buf_printf(c, "/* ---- variant %d: ", v + 1);
        c_comment_text(c, ev->defines);
        buf_puts(c, " */\n\n");
        emit_module(c, mp.s, ev->metas, ev->nk, ev->ptx, ev->cubins, ev->ncubins, target.s);
    }
    int n = tune->nvariants + 1;
    buf_printf(c, "/* Every variant's module; [0] has the file's own consts. */\n"
                  "static tilert_embedded *const %s_variants_[%d] = {\n    &%s_module_,\n",
               prefix, n, prefix);
    for (int v = 1; v < n; v++)
        buf_printf(c, "    &%s_v%d_module_,\n", prefix, v);
    buf_printf(c, "};\n\nstatic const char *const %s_variant_defines_[%d] = {\n    \"\",\n", prefix, n);
    for (int v = 1; v < n; v++) {
        buf_puts(c, "    \"");
        for (const char *s = tune->variants[v - 1].defines; *s; s++)   /* literals: names, numbers */
            buf_printf(c, "%c", *s == '"' || *s == '\\' || *s < 0x20 || *s >= 0x7f ? '?' : *s);
        buf_puts(c, "\",\n");
    }
    buf_puts(c, "};\n\n");
    buf_printf(c,
        "const char *%s_variant_defines(int variant)\n"
        "{\n    return variant >= 0 && variant < %d ? %s_variant_defines_[variant] : 0;\n}\n\n"
        "tilert_status %s_load(tilert_context *ctx)\n"
        "{\n"
        "    for (int i = 0; i < %d; i++) {\n"
        "        tilert_status s = tilert_embedded_load(%s_variants_[i], ctx);\n"
        "        if (s != TILERT_OK)\n"
        "            return s;\n"
        "    }\n"
        "    return TILERT_OK;\n"
        "}\n\n"
        "void %s_unload(void)\n"
        "{\n    for (int i = 0; i < %d; i++)\n        tilert_embedded_unload(%s_variants_[i]);\n}\n\n"
        "void %s_unload_context(tilert_context *ctx)\n"
        "{\n    for (int i = 0; i < %d; i++)\n"
        "        tilert_embedded_unload_context(%s_variants_[i], ctx);\n}\n\n"
        "const char *%s_code(void)\n"
        "{\n    return tilert_embedded_code(&%s_module_);\n}\n\n",
        prefix, n, prefix, prefix, n, prefix, prefix, n, prefix, prefix, n, prefix, prefix, prefix);
    buf_free(&mp);
    buf_free(&target);
}

/* A tuned kernel's dispatch table (its classes' sizes in ABI order and their variants) and the
 * function that says which variant a shape picks. */
static void emit_tune_table(Buf *c, const char *prefix, const KernelMeta *k, int ki, const EmitTune *tune)
{
    int nsizes = 0, ncls = 0;
    for (int i = 0; i < k->nargs; i++)
        nsizes += k->args[i].kind == ARG_SIZE;
    for (int i = 0; i < tune->nclasses; i++)
        ncls += !strcmp(tune->classes[i].kernel, k->name);
    buf_printf(c, "/* %s's size classes: the sizes (", k->name);
    size_params(c, prefix, k, false);
    buf_printf(c, ") tilec-tune timed, then the variant that won there. */\n"
                  "static const int32_t %s_%s_class_sizes_[%d] = {\n", prefix, k->name, ncls * nsizes);
    Buf variants = {0};
    for (int i = 0; i < tune->nclasses; i++) {
        const TuneClass *tc = &tune->classes[i];
        if (strcmp(tc->kernel, k->name))
            continue;
        buf_puts(c, "   ");
        for (int a = 0; a < k->nargs; a++) {
            if (k->args[a].kind != ARG_SIZE)
                continue;
            for (int s = 0; s < tc->nsizes; s++)   /* tune_file_check: every size is there */
                if (!strcmp(tc->size_name[s], k->args[a].name))
                    buf_printf(c, " %lld,", (long long)tc->size[s]);
        }
        buf_puts(c, "\n");
        buf_printf(&variants, "%s%d", variants.len ? ", " : "", tc->variant);
    }
    buf_printf(c, "};\nstatic const int %s_%s_class_variant_[%d] = { %s };\n", prefix, k->name,
               ncls, variants.s);
    buf_printf(c, "static const tilert_tuned %s_%s_tuned_ = {\n"
                  "    %s_variants_, %d, %d, %d, %s_%s_class_sizes_, %s_%s_class_variant_, %d\n};\n\n",
               prefix, k->name, prefix, tune->nvariants + 1, ki, nsizes, prefix, k->name, prefix,
               k->name, ncls);
    buf_printf(c, "int %s_%s_variant(", prefix, k->name);
    size_params(c, prefix, k, true);
    buf_printf(c, ")\n{\n    const int32_t tilert_sizes[%d] = { ", nsizes);
    size_params(c, prefix, k, false);
    buf_printf(c, " };\n    return tilert_tuned_variant(&%s_%s_tuned_, tilert_sizes);\n}\n\n",
               prefix, k->name);
    buf_free(&variants);
}

static void emit_source(Buf *c, const char *prefix, const char *header_name, KernelMeta *ks,
                        int nk, const char *ptx, const Cubin *cubins, int ncubins,
                        const char *archs, const char *ptx_arch, const EmitTune *tune)
{
    buf_printf(c, "/* %s.c: generated by tilec %s (--emit=c). Do not edit. */\n", prefix,
               TILEC_VERSION);
    buf_printf(c, "#include \"%s\"\n\n", header_name);
    emit_module(c, prefix, ks, nk, ptx, cubins, ncubins, ptx_arch);
    if (tune)
        emit_tune_modules(c, prefix, tune);
    else
        buf_printf(c,
            "tilert_status %s_load(tilert_context *ctx)\n"
            "{\n    return tilert_embedded_load(&%s_module_, ctx);\n}\n\n"
            "void %s_unload(void)\n"
            "{\n    tilert_embedded_unload(&%s_module_);\n}\n\n"
            "void %s_unload_context(tilert_context *ctx)\n"
            "{\n    tilert_embedded_unload_context(&%s_module_, ctx);\n}\n\n"
            "const char *%s_code(void)\n"
            "{\n    return tilert_embedded_code(&%s_module_);\n}\n\n",
            prefix, prefix, prefix, prefix, prefix, prefix, prefix, prefix);

    for (int i = 0; i < nk; i++) {
        KernelMeta *k = &ks[i];
        bool tuned = first_class(tune, k) >= 0;
        if (tuned)
            emit_tune_table(c, prefix, k, i, tune);
        buf_printf(c,
            "const %s_kernel_info %s_%s_info = {\n"
            "    \"%s\", %d, %d, %d, %d, %d, \"%s\", \"%s\"\n};\n\n",
            prefix, prefix, k->name, k->name, k->threads, k->smem_bytes, k->pred_regs,
            k->ptxas_regs, k->nargs, archs, ptx_arch);
        launcher_signature(c, prefix, k, false);
        buf_puts(c, "{\n");
        if (k->nargs == 0) {
            buf_printf(c, "    return tilert_embedded_launch(&%s_module_, %d, stream, 0, 0);\n}\n\n",
                       prefix, i);
            continue;
        }
        buf_printf(c, "    tilert_arg tilert_args[%d];\n", k->nargs);
        char **names = c_param_names(k, prefix);
        for (int j = 0; j < k->nargs; j++) {
            const char *kind, *field;
            arg_kind(&k->args[j], &kind, &field);
            const char *pname = names[j];
            buf_printf(c, "    tilert_args[%d].kind = %s;\n", j, kind);
            if (k->args[j].kind == ARG_SCALAR && k->args[j].type == TY_BOOL)
                buf_printf(c, "    tilert_args[%d].v.b = %s != 0;\n", j, pname);
            else
                buf_printf(c, "    tilert_args[%d].v.%s = %s;\n", j, field, pname);
        }
        free_names(names, k->nargs);
        if (tuned) {
            buf_printf(c, "    const int32_t tilert_sizes[] = { ");
            size_params(c, prefix, k, false);
            buf_printf(c, " };\n    return tilert_tuned_launch(&%s_%s_tuned_, stream, tilert_args, "
                          "%d, tilert_sizes);\n}\n\n", prefix, k->name, k->nargs);
            continue;
        }
        buf_printf(c, "    return tilert_embedded_launch(&%s_module_, %d, stream, tilert_args, %d);\n",
                   prefix, i, k->nargs);
        buf_puts(c, "}\n\n");
    }
}

void emit_c_tuned(Buf *c_out, Buf *h_out, const char *base, const char *header_name,
                  KernelMeta *ks, int nk, const char *ptx, const Cubin *cubins, int ncubins,
                  const EmitTune *tune)
{
    Buf prefix = {0}, guard = {0}, header = {0}, archs = {0}, target = {0};
    c_ident(&prefix, base);
    for (size_t i = 0; i < prefix.len; i++) {
        char ch = prefix.s[i];
        buf_printf(&guard, "%c", ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch);
    }
    buf_puts(&guard, "_H_TILEC");
    if (header_name && *header_name)
        buf_puts(&header, header_name);
    else
        buf_printf(&header, "%s.h", prefix.s);
    for (int i = 0; i < ncubins; i++)
        buf_printf(&archs, "%s%s", i ? "," : "", cubins[i].arch);
    buf_puts(&archs, "");
    ptx_target(&target, ptx);
    buf_puts(&target, "");

    emit_header(h_out, prefix.s, guard.s, ks, nk, tune);
    emit_source(c_out, prefix.s, header.s, ks, nk, ptx, cubins, ncubins, archs.s, target.s, tune);

    buf_free(&prefix);
    buf_free(&guard);
    buf_free(&header);
    buf_free(&archs);
    buf_free(&target);
}

void emit_c(Buf *c_out, Buf *h_out, const char *base, const char *header_name,
            KernelMeta *ks, int nk, const char *ptx, const Cubin *cubins, int ncubins)
{
    emit_c_tuned(c_out, h_out, base, header_name, ks, nk, ptx, cubins, ncubins, NULL);
}
