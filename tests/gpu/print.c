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

#include "dual_run.h"

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
static Elem exact_value(ElemType t, void *user)
{
    (void)user;
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
    Buf gpu_text = { 0 }, cpu_text = { 0 };
    DualRun r;
    if (!dual_open(&r, ctx, path, c->kernel, desc)) {
        failed++;
        goto done;
    }
    if (r.all_blocks != !strcmp(c->module, "print_all")) {
        printf("FAIL %s: the module says --print-all-blocks %s\n", desc, r.all_blocks ? "on" : "off");
        failed++;
        goto done;
    }
    if (!dual_args(&r, c->values, exact_value, NULL, desc)) {
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
    tilert_status s = tilert_launch(r.gk, 0, r.dev, r.n);
    bool synced = s == TILERT_OK && gpu_sync();
    bool captured = capture_end(&cap, &gpu_text);
    if (!synced || !captured) {
        printf("FAIL %s: GPU: %s %s\n", desc, tilert_status_name(s), s ? tilert_last_error() : "");
        failed++;
        goto done;
    }
    /* the interpreter, on the same arguments, with the module's print options */
    FILE *out = tmpfile();
    InterpOptions o = { out, r.all_blocks };
    diag_reset(r.file.s, r.src.s, r.src.len);
    if (!out || !interp_launch(r.p, r.k, r.host, r.n, &o) || !read_all(out, &cpu_text)) {
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
    dual_close(&r);
    buf_free(&gpu_text);
    buf_free(&cpu_text);
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
