/* test_regcap.c: the register caps fitted to ptxas (compiler/regcap.c), against a stand-in
 * ptxas ($TILEC_PTXAS, a shell script written here) whose verdict on each cap the test chooses:
 * ptxas' own allocation is not monotone in the cap, so the search below the budget is checked
 * on a kernel that spills at every cap but one, beside one that fits at once and is assembled
 * only in the first round. No GPU and no CUDA toolkit needed. */
#define _POSIX_C_SOURCE 200809L   /* setenv, mkdtemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tilec.h"
#include "unit.h"

static const char kernel_src[] =
    "kernel k(X: f32[N], Y: f32[N])\n"
    "    grid(cdiv(N, 1024)) threads(256)\n"
    "{\n"
    "    let i0 = block.x * 1024;\n"
    "    Y[i0 +: 1024] = X[i0 +: 1024] * 2.0;\n"
    "}\n"
    "kernel k2(X: f32[N], Y: f32[N])\n"
    "    grid(cdiv(N, 1024)) threads(256)\n"
    "{\n"
    "    let i0 = block.x * 1024;\n"
    "    Y[i0 +: 1024] = X[i0 +: 1024] * 3.0;\n"
    "}\n";

/* The stand-in: arguments as ptxas.c passes them (-arch=A -v -o CUBIN PTX). It appends a line
 * to $FAKE_LOG, the kernels it was given with their caps ("k:255 k2:24"), and reports k
 * spilling unless its cap is $FAKE_FITS; k2 always fits. */
static const char fake_ptxas[] =
    "#!/bin/sh\n"
    "out=$4 ptx=$5\n"
    "printf '\\177ELF' > \"$out\"\n"
    "awk -v fits=\"$FAKE_FITS\" -v lf=\"$FAKE_LOG\" '\n"
    "  /^\\.visible \\.entry / { name = $3; sub(/\\(.*/, \"\", name) }\n"
    "  /^\\.maxnreg / { cap = $2; seen = seen (seen == \"\" ? \"\" : \" \") name \":\" cap\n"
    "    print \"ptxas info    : Compiling entry function \\047\" name \"\\047 for \\047sm_80\\047\"\n"
    "    print \"ptxas info    : Function properties for \" name\n"
    "    s = (name == \"k\" && cap != fits) ? 8 : 0\n"
    "    print \"    \" s \" bytes stack frame, \" s \" bytes spill stores, \" s \" bytes spill loads\"\n"
    "    print \"ptxas info    : Used \" cap \" registers, 360 bytes cmem[0]\" }\n"
    "  END { print seen >> lf }' \"$ptx\"\n";

static char dir[64], log_path[96];

static int k2_cap;          /* the final cap of k2 */
static bool both;           /* the final PTX holds both kernels */

/* The cap of the `.entry NAME(` in ptx (-1: none). */
static int cap_of(const char *ptx, const char *name)
{
    char entry[64];
    snprintf(entry, sizeof entry, ".entry %s(", name);
    const char *e = ptx ? strstr(ptx, entry) : NULL;
    const char *p = e ? strstr(e, ".maxnreg ") : NULL;
    return p ? atoi(p + 9) : -1;
}

/* Compiles kernel_src for sm_80 with the stand-in; the final cap of k in its PTX (-1: none,
 * -2: the compilation failed). */
static int final_cap(const char *fits)
{
    setenv("FAKE_FITS", fits, 1);
    FILE *l = fopen(log_path, "w");
    if (l)
        fclose(l);
    CompileJob j;
    memset(&j, 0, sizeof j);
    j.file = "t.tile";
    j.src = kernel_src;
    j.len = strlen(kernel_src);
    j.opt.arch = "sm_80";
    j.opt.addr_split = j.opt.const_reg_elim = j.opt.remat = j.opt.schedule = j.opt.reg_cap = true;
    j.opt.wgmma_wait = true;
    CompileOutput o;
    if (compile_buffer(&j, &o) != COMPILE_OK)
        return -2;
    int cap = cap_of(o.ptx.s, "k");
    k2_cap = cap_of(o.ptx.s, "k2");
    both = o.ptx.s && strstr(o.ptx.s, ".entry k(") && strstr(o.ptx.s, ".entry k2(");
    compile_output_free(&o);
    return cap;
}

/* The stand-in's runs, one a line, as "k:255 k2:24 | k:248". */
static const char *runs_seen(void)
{
    static char seen[1024];
    seen[0] = 0;
    FILE *l = fopen(log_path, "r");
    char line[128];
    while (l && fgets(line, sizeof line, l)) {
        line[strcspn(line, "\n")] = 0;
        if (strlen(seen) + strlen(line) + 4 < sizeof seen)
            strcat(strcat(seen, seen[0] ? " | " : ""), line);
    }
    if (l)
        fclose(l);
    return seen;
}

int main(void)
{
    FILE *out = tmpfile();
    diag.out = out ? out : stderr;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tilec-regcap-XXXXXX", tmp && *tmp && strlen(tmp) < 32 ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        printf("FAIL regcap: no temporary directory\n");
        return 1;
    }
    char script[96];
    snprintf(script, sizeof script, "%s/ptxas", dir);
    snprintf(log_path, sizeof log_path, "%s/runs", dir);
    FILE *s = fopen(script, "w");
    if (!s || fputs(fake_ptxas, s) < 0 || fclose(s) != 0 || chmod(script, 0755) != 0) {
        printf("FAIL regcap: cannot write %s\n", script);
        return 1;
    }
    setenv("TILEC_PTXAS", script, 1);
    setenv("FAKE_LOG", log_path, 1);

    /* k spills at every cap but 240: the loosening reaches the budget, the search comes down to
       240; k2 fits at once, is assembled in the first round only and keeps its cap */
    int cap = final_cap("240");
    const char *seen = runs_seen();
    unit_check(cap == 240, "a kernel spilling above 240 keeps the cap of 240", "cap %d after %s", cap, seen);
    static const char tail[] = "k:255 | k:248 | k:240";
    size_t n = strlen(seen), nt = strlen(tail);
    unit_check(n >= nt && !strcmp(seen + n - nt, tail), "the search steps down from the budget",
               "runs: %s", seen);
    const char *bar = strchr(seen, '|');
    unit_check(strstr(seen, "k2:") && bar && !strstr(bar, "k2:"), "later rounds assemble only the kernel whose cap changed",
               "runs: %s", seen);
    unit_check(both && k2_cap == 24, "the module is written whole, the other kernel at its cap",
               "both kernels: %d, k2 cap %d", (int)both, k2_cap);

    /* spills everywhere: the search gives up and the cap is the budget */
    cap = final_cap("none");
    seen = runs_seen();
    unit_check(cap == 255 && both, "a kernel spilling at every cap keeps the budget", "cap %d after %s", cap, seen);

    /* fits at once: one ptxas run, the caps the prediction chose */
    cap = final_cap("24");
    seen = runs_seen();
    unit_check(cap == 24 && !strcmp(seen, "k:24 k2:24"), "a module that fits is assembled once",
               "cap %d after %s", cap, seen);

    unsetenv("TILEC_PTXAS");
    unlink(script);
    unlink(log_path);
    rmdir(dir);
    return unit_exit();
}
