/* print.c: print() on the GPU (tests/gpu/kernels/print.tile) against the interpreter. Each case
 * launches a kernel through libtilert with the process's standard output captured (device printf
 * reaches it when the context synchronizes: fd 1 goes to a temporary file around the launch and
 * cuCtxSynchronize, stdout flushed on both sides), runs the source its module carries in the
 * interpreter on the same arguments with print()'s lines going to another file, and compares
 * the two line by line: in order where one thread of one block makes every call (block (0, 0, 0)
 * alone prints, or the grid is one block), as sorted lists where every block prints
 * (--print-all-blocks: the blocks run in any order). The inputs are small integers and halves,
 * so every value printed (sums and products included) is exact on both sides and the two texts
 * must be equal byte for byte. The kernels come compiled twice (tests/gpu/print.mk): print.ptx
 * as they are, print_all.ptx with --print-all-blocks. Usage: print EXAMPLES_DIR */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_util.h"
#include "interp.h"

static int passed, failed;
static tilert_context *ctx;

typedef struct {
    const char *module, *kernel;
    const char *values;        /* "NAME=VALUE ..." for every size and scalar */
    bool ordered;              /* one thread prints everything: the lines in order */
} Case;

static const Case cases[] = {
    { "print", "print_values", "N=256 R=16 s=0.5 n=3", true },
    { "print", "print_blocks", "N=200", true },
    { "print", "print_matmul", "M=64 N=64 K=96", true },
    { "print_all", "print_blocks", "N=200", false },
    { "print_all", "print_values", "N=64 R=4 s=-1.5 n=2", true },     /* one block */
    { "print_all", "print_matmul", "M=64 N=64 K=32", true },
};

/* The value "NAME=VALUE" of values gives name, in *v; false when absent. */
static bool value_of(const char *values, const char *name, double *v)
{
    size_t n = strlen(name);
    for (const char *p = values; p && *p;) {
        if (!strncmp(p, name, n) && p[n] == '=') {
            *v = strtod(p + n + 1, NULL);
            return true;
        }
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    return false;
}

static bool read_all(FILE *f, Buf *out)
{
    char chunk[4096];
    size_t n;
    if (fseek(f, 0, SEEK_SET))
        return false;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_add(out, chunk, n);
    if (!out->s)
        buf_add(out, "", 0);
    return !ferror(f);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    Buf b = { 0 };
    bool ok = f && read_all(f, &b);
    if (f)
        fclose(f);
    if (!ok)
        buf_free(&b);
    return b.s;
}

/* Standard output into a temporary file, from capture_begin to capture_end. */
typedef struct { FILE *file; int saved; } Capture;

static bool capture_begin(Capture *c)
{
    fflush(stdout);
    c->file = tmpfile();
    c->saved = c->file ? dup(1) : -1;
    if (c->saved < 0 || dup2(fileno(c->file), 1) < 0) {
        if (c->saved >= 0)
            close(c->saved);
        if (c->file)
            fclose(c->file);
        return false;
    }
    return true;
}

static bool capture_end(Capture *c, Buf *out)
{
    fflush(stdout);
    dup2(c->saved, 1);
    close(c->saved);
    bool ok = read_all(c->file, out);
    fclose(c->file);
    return ok;
}

/* The lines of text (each without its newline), in place: count in *n. */
static char **lines_of(char *text, int *n)
{
    int cap = 16;
    char **v = malloc(sizeof *v * (size_t)cap);
    *n = 0;
    for (char *p = text; v && *p;) {
        char *nl = strchr(p, '\n');
        if (*n == cap) {
            char **w = realloc(v, sizeof *v * (size_t)(cap *= 2));
            if (!w) {
                free(v);
                return NULL;
            }
            v = w;
        }
        v[(*n)++] = p;
        if (!nl)
            break;
        *nl = 0;
        p = nl + 1;
    }
    return v;
}

static int cmp_line(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The GPU's text against the interpreter's: equal line by line, in order or as sorted lists.
 * Prints the first difference; false then. */
static bool same_lines(const char *desc, char *gpu, char *cpu, bool ordered, int *nlines)
{
    int ng = 0, nc = 0;
    char **g = lines_of(gpu, &ng), **c = lines_of(cpu, &nc);
    bool ok = g && c;
    if (ok && !ordered) {
        qsort(g, (size_t)ng, sizeof *g, cmp_line);
        qsort(c, (size_t)nc, sizeof *c, cmp_line);
    }
    for (int i = 0; ok && i < (ng > nc ? ng : nc); i++)
        if (i >= ng || i >= nc || strcmp(g[i], c[i])) {
            printf("FAIL %s: line %d%s: GPU \"%.300s\", interpreter \"%.300s\" (%d and %d lines)\n", desc,
                   i + 1, ordered ? "" : " of the sorted lines", i < ng ? g[i] : "(none)",
                   i < nc ? c[i] : "(none)", ng, nc);
            ok = false;
        }
    if (ok && nc == 0) {
        printf("FAIL %s: the interpreter printed nothing\n", desc);
        ok = false;
    }
    *nlines = nc;
    free(g);
    free(c);
    return ok;
}

/* Exact inputs: halves in [-8, 8) for floats, integers that use each type's range. */
static Elem exact_value(ElemType t)
{
    Elem e;
    e.i = 0;
    uint64_t r = rng_next();
    switch (t) {
    case TY_BOOL: e.i = (int64_t)(r & 1); break;
    case TY_I32: e.i = (int64_t)(r % 2001) - 1000; break;
    case TY_U32: e.i = 4000000000 - (int64_t)(r % 100000); break;    /* above 2^31: zero-extended */
    case TY_I64: e.i = ((int64_t)(r % 2001) - 1000) * ((int64_t)1 << 33) + (int64_t)(r >> 40 & 7); break;
    default: e.f = (float)((int)(r % 32) - 16) / 2; break;
    }
    return e;
}

static void run_case(const char *dir, const Case *c)
{
    char desc[200], path[1024];
    snprintf(desc, sizeof desc, "%s %s %s", c->module, c->kernel, c->values);
    snprintf(path, sizeof path, "%s/print/%s.ptx", dir, c->module);
    char *ptx = slurp(path);
    Buf file = { 0 }, src = { 0 }, names = { 0 }, gpu_text = { 0 }, cpu_text = { 0 };
    Define defs[META_MAX_DEFINES];
    int ndefs = 0;
    bool all = false;
    Arena *a = arena_new();
    Program *p = NULL;
    Kernel *k = NULL;
    tilert_module *mod = NULL;
    tilert_kernel *gk = NULL;
    InterpArg *host = NULL;
    tilert_arg *dev = NULL;
    if (!ptx || !meta_source_read(ptx, &file, &src, defs, &ndefs, &names, &all)) {
        printf("FAIL %s: %s is missing or has no source block\n", desc, path);
        failed++;
        goto done;
    }
    p = compile_front(a, file.s, src.s, src.len, defs, ndefs);
    for (int i = 0; p && i < p->nkernels; i++)
        if (!strcmp(p->kernels[i]->name, c->kernel))
            k = p->kernels[i];
    if (!k || tilert_load_ptx(ctx, ptx, &mod) != TILERT_OK || tilert_get_kernel(mod, c->kernel, &gk) != TILERT_OK) {
        printf("FAIL %s: %s\n", desc, k ? tilert_last_error() : "the module's source does not compile");
        failed++;
        goto done;
    }
    if (all != !strcmp(c->module, "print_all")) {
        printf("FAIL %s: the module says --print-all-blocks %s\n", desc, all ? "on" : "off");
        failed++;
        goto done;
    }
    int n = interp_nargs(k);
    host = calloc((size_t)n + 1, sizeof *host);
    dev = calloc((size_t)n + 1, sizeof *dev);
    bool ok = host && dev;
    for (int i = 0; ok && i < n; i++) {
        if (i < k->nparams && k->params[i].is_tensor)
            continue;
        double v = 0;
        if (!value_of(c->values, interp_arg_name(k, i), &v)) {
            printf("FAIL %s: no value for %s\n", desc, interp_arg_name(k, i));
            ok = false;
            break;
        }
        ElemType t = i < k->nparams ? k->params[i].type : TY_I32;
        host[i].i = (int64_t)v;
        host[i].f = v;
        dev[i] = t == TY_F32 ? tilert_f32((float)v) : tilert_i32((int32_t)v);
    }
    Interp geo;
    memset(&geo, 0, sizeof geo);
    geo.p = p, geo.k = k, geo.args = host;
    for (int i = 0; ok && i < k->nparams; i++) {
        const Param *pa = &k->params[i];
        if (!pa->is_tensor)
            continue;
        int64_t dim[MAX_TENSOR_RANK], stride[MAX_TENSOR_RANK], count = 1;
        interp_tensor_geometry(&geo, pa->sym, dim, stride);
        for (int d = 0; d < pa->rank; d++)
            count += (dim[d] > 0 ? dim[d] - 1 : 0) * stride[d];
        int es = type_size(pa->type);
        size_t bytes = (size_t)count * (size_t)es;
        host[i].ptr = malloc(bytes);
        host[i].bytes = bytes;
        CUdeviceptr d = 0;
        if (!host[i].ptr || !gpu_alloc(&d, bytes)) {
            ok = false;
            break;
        }
        for (int64_t j = 0; j < count; j++)
            store_elem(pa->type, (char *)host[i].ptr + j * es, exact_value(pa->type));
        dev[i] = tilert_ptr(d);
        ok = gpu_upload(d, host[i].ptr, bytes);
    }
    if (!ok) {
        failed++;
        goto done;
    }
    /* the GPU, its printf captured */
    Capture cap;
    if (!capture_begin(&cap)) {
        printf("FAIL %s: cannot capture standard output\n", desc);
        failed++;
        goto done;
    }
    tilert_status s = tilert_launch(gk, 0, dev, n);
    bool synced = s == TILERT_OK && gpu_sync();
    bool captured = capture_end(&cap, &gpu_text);
    if (!synced || !captured) {
        printf("FAIL %s: GPU: %s %s\n", desc, tilert_status_name(s), s ? tilert_last_error() : "");
        failed++;
        goto done;
    }
    /* the interpreter, on the same arguments, with the module's print options */
    FILE *out = tmpfile();
    InterpOptions o = { out, all };
    diag_reset(file.s, src.s, src.len);
    if (!out || !interp_launch(p, k, host, n, &o) || !read_all(out, &cpu_text)) {
        printf("FAIL %s: the interpreter stopped (its error is above)\n", desc);
        failed++;
        if (out)
            fclose(out);
        goto done;
    }
    fclose(out);
    int lines = 0;
    if (same_lines(desc, gpu_text.s, cpu_text.s, c->ordered, &lines)) {
        printf("ok %s (%d lines)\n", desc, lines);
        passed++;
    } else {
        failed++;
    }
done:
    for (int i = 0; k && host && dev && i < k->nparams; i++) {
        if (k->params[i].is_tensor && dev[i].v.ptr)
            gpu_free(dev[i].v.ptr);
        free(host[i].ptr);
    }
    free(host);
    free(dev);
    if (mod)
        tilert_unload(mod);
    arena_free(a);
    buf_free(&file);
    buf_free(&src);
    buf_free(&names);
    buf_free(&gpu_text);
    buf_free(&cpu_text);
    free(ptx);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build/examples";
    int rc = gpu_test_begin(&ctx, "print() on the GPU against the interpreter");
    if (rc >= 0)
        return rc;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_case(dir, &cases[i]);
    gpu_close(ctx);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
