/* test_regcap.c: the register caps fitted to ptxas (compiler/regcap.c), against a stand-in
 * ptxas ($TILEC_PTXAS, a shell script written here) whose verdict on each cap the test chooses:
 * ptxas' own allocation is not monotone in the cap, so the search below the budget is checked
 * on a kernel that spills at every cap but one. No GPU and no CUDA toolkit needed. */
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
    "}\n";

/* The stand-in: arguments as ptxas.c passes them (-arch=A -v -o CUBIN PTX). It appends the cap
 * it was given to $FAKE_LOG and reports spills unless the cap is $FAKE_FITS. */
static const char fake_ptxas[] =
    "#!/bin/sh\n"
    "out=$4 ptx=$5\n"
    "cap=$(sed -n 's/^\\.maxnreg \\([0-9]*\\).*/\\1/p' \"$ptx\" | head -n 1)\n"
    "echo \"$cap\" >> \"$FAKE_LOG\"\n"
    "printf '\\177ELF' > \"$out\"\n"
    "echo \"ptxas info    : Compiling entry function 'k' for 'sm_80'\"\n"
    "echo \"ptxas info    : Function properties for k\"\n"
    "if [ \"$cap\" = \"$FAKE_FITS\" ]; then\n"
    "  echo '    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads'\n"
    "else\n"
    "  echo '    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads'\n"
    "fi\n"
    "echo \"ptxas info    : Used ${cap:-255} registers, 360 bytes cmem[0]\"\n";

static char dir[64], log_path[96];

/* Compiles kernel_src for sm_80 with the stand-in; the final cap of its PTX (-1: none). */
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
    const char *p = o.ptx.s ? strstr(o.ptx.s, ".maxnreg ") : NULL;
    int cap = p ? atoi(p + 9) : -1;
    compile_output_free(&o);
    return cap;
}

/* The caps the stand-in saw, in order, as "a b c". */
static const char *caps_seen(void)
{
    static char seen[512];
    seen[0] = 0;
    FILE *l = fopen(log_path, "r");
    char line[32];
    while (l && fgets(line, sizeof line, l)) {
        line[strcspn(line, "\n")] = 0;
        if (strlen(seen) + strlen(line) + 2 < sizeof seen)
            strcat(strcat(seen, seen[0] ? " " : ""), line);
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
    snprintf(log_path, sizeof log_path, "%s/caps", dir);
    FILE *s = fopen(script, "w");
    if (!s || fputs(fake_ptxas, s) < 0 || fclose(s) != 0 || chmod(script, 0755) != 0) {
        printf("FAIL regcap: cannot write %s\n", script);
        return 1;
    }
    setenv("TILEC_PTXAS", script, 1);
    setenv("FAKE_LOG", log_path, 1);

    /* spills at every cap but 240: the loosening reaches the budget, the search comes down to 240 */
    int cap = final_cap("240");
    const char *seen = caps_seen();
    unit_check(cap == 240, "a kernel spilling above 240 keeps the cap of 240", "cap %d after %s", cap, seen);
    size_t n = strlen(seen);
    unit_check(n >= 11 && !strcmp(seen + n - 11, "255 248 240"), "the search steps down from the budget",
               "caps tried: %s", seen);

    /* spills everywhere: the search gives up and the cap is the budget */
    cap = final_cap("none");
    seen = caps_seen();
    unit_check(cap == 255, "a kernel spilling at every cap keeps the budget", "cap %d after %s", cap, seen);

    /* fits at once: one ptxas run, the cap the prediction chose */
    cap = final_cap("24");
    seen = caps_seen();
    unit_check(cap == 24 && !strcmp(seen, "24"), "a kernel that fits is assembled once",
               "cap %d after %s", cap, seen);

    unsetenv("TILEC_PTXAS");
    unlink(script);
    unlink(log_path);
    rmdir(dir);
    return unit_exit();
}
