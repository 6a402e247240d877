/* test_compile_buffer.c: the in-process pipeline (compile.c's compile_buffer), which the fuzz
 * targets run once per input: a good source gives PTX and launchers, errors give
 * COMPILE_ERRORS with the messages on diag.out, an internal error comes back as
 * COMPILE_INTERNAL instead of ending the process, and one compilation leaves nothing behind
 * that changes the next. */
#include <stdlib.h>

#include "tilec.h"
#include "unit.h"

static const char vecadd[] =
    "const BLOCK = 1024;\n"
    "kernel vecadd(X: f32[N], Y: f32[N], Z: f32[N], alpha: f32)\n"
    "    grid(cdiv(N, BLOCK)) threads(256)\n"
    "{\n"
    "    let i0 = block.x * BLOCK;\n"
    "    Z[i0 +: BLOCK] = alpha * X[i0 +: BLOCK] + Y[i0 +: BLOCK];\n"
    "}\n";

static CompileJob job_of(const char *src, const char *arch)
{
    CompileJob j;
    memset(&j, 0, sizeof j);
    j.file = "t.tile";
    j.src = src;
    j.len = strlen(src);
    j.opt.arch = arch;
    j.opt.addr_split = j.opt.const_reg_elim = j.opt.remat = j.opt.schedule = j.opt.reg_cap = j.opt.wgmma_wait = true;
    j.opt.no_ptxas = true;
    return j;
}

/* Everything diag.out received since the last call. */
static char *messages(FILE *f)
{
    static char text[4096];
    fflush(f);
    long n = ftell(f);
    rewind(f);
    size_t got = fread(text, 1, n > 0 && n < (long)sizeof text ? (size_t)n : sizeof text - 1, f);
    text[got] = 0;
    rewind(f);
    return text;
}

int main(void)
{
    FILE *out = tmpfile();
    if (!out) {
        printf("FAIL tmpfile\n");
        return 1;
    }
    diag.out = out;

    CompileJob j = job_of(vecadd, "sm_90a");
    j.c_base = "va";
    CompileOutput o;
    CompileStatus st = compile_buffer(&j, &o);
    unit_check(st == COMPILE_OK, "vecadd compiles", "status %d: %s", (int)st, messages(out));
    unit_check(o.ptx.s && strstr(o.ptx.s, ".target sm_90a") && strstr(o.ptx.s, ".entry vecadd"),
               "PTX for the asked arch", "%.200s", o.ptx.s ? o.ptx.s : "(none)");
    unit_check(o.c.s && strstr(o.c.s, "va_vecadd") && o.h.s && strstr(o.h.s, "va_vecadd"),
               "launchers with the asked prefix", "");
    char *first = NULL;
    if (o.ptx.s && (first = malloc(o.ptx.len + 1)))
        memcpy(first, o.ptx.s, o.ptx.len + 1);
    compile_output_free(&o);

    static const char bad[] = "kernel k(X: f32[N]) grid(1) {\n    X[0 +: 100] = 1.0;\n}\n";
    j = job_of(bad, "sm_80");
    st = compile_buffer(&j, &o);
    char *m = messages(out);
    unit_check(st == COMPILE_ERRORS && !o.ptx.s, "an error gives COMPILE_ERRORS, no PTX",
               "status %d", (int)st);
    unit_check(strstr(m, "t.tile:2:") && strstr(m, "not a power of two"), "messages on diag.out",
               "got: %s", m);

    /* the same source again: nothing of the failed compilation (error counts, the cap on
       messages) carries over */
    j = job_of(vecadd, "sm_90a");
    st = compile_buffer(&j, &o);
    unit_check(st == COMPILE_OK && first && o.ptx.s && !strcmp(first, o.ptx.s),
               "a compilation after a failed one gives the same PTX", "status %d", (int)st);
    compile_output_free(&o);
    free(first);

    /* die() with die_recover set comes back here; compile_buffer restores the caller's */
    jmp_buf jb;
    volatile bool came_back = false;
    die_recover = &jb;
    if (setjmp(jb))
        came_back = true;
    else
        die("test: %d", 42);
    die_recover = NULL;
    unit_check(came_back, "die jumps to die_recover", "");

    fclose(out);
    diag.out = NULL;
    return unit_exit();
}
