/* fuzz_compile.c: libFuzzer target: source text through every stage of the compiler to PTX in
 * memory (compile_buffer; ptxas never runs). The first byte picks the architecture and options:
 *
 *   bits 0-1  --arch: sm_80, sm_90, sm_90a, sm_86
 *   bit 2     -fno-addr-split         bit 3  -fno-const-reg-elim
 *   bit 4     -fno-remat              bit 5  -fno-schedule
 *   bit 6     -fno-reg-cap            bit 7  --emit=c's launchers too
 *
 * The rest is the source. A first line `// flags: ...` gives -D NAME=VALUE, --arch=ARCH,
 * --max-regs=N, the -fno-* options above, -fwarp-specialize, -fcluster and --emit=c, the way
 * tests/diag's files do, so that
 * their files are seeds as they are (and fuzz_gen's printed programs reproducers).
 * Compile errors are the expected outcome of most inputs; an internal error is a finding, as
 * a crash, a sanitizer report, a leak, a hang or a blow-up of memory are. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_job.h"
#include "fuzz_util.h"


enum { MAX_DEFS = 64, MAX_FLAGS_LINE = 1024 };

/* The next blank-separated word of *s, NUL-terminated in place; NULL at the end. */
static char *next_word(char **s)
{
    char *p = *s;
    while (*p == ' ' || *p == '\t' || *p == '\r')
        p++;
    if (!*p)
        return NULL;
    char *w = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\r')
        p++;
    if (*p)
        *p++ = 0;
    *s = p;
    return w;
}

/* Reads the `// flags:` line of job->src into job; the words live in line. */
static void read_flags(CompileJob *job, char *line, Define *defs)
{
    static const char prefix[] = "// flags:";
    const char *src = job->src;
    if (strncmp(src, prefix, sizeof prefix - 1))
        return;
    size_t n = strcspn(src, "\n");
    if (n >= MAX_FLAGS_LINE)
        n = MAX_FLAGS_LINE - 1;
    memcpy(line, src, n);
    line[n] = 0;
    char *rest = line + sizeof prefix - 1;
    for (char *w; (w = next_word(&rest));) {
        char *d = !strcmp(w, "-D") ? next_word(&rest) : !strncmp(w, "-D", 2) ? w + 2 : NULL;
        if (d) {
            char *eq = strchr(d, '=');
            if (eq && eq != d && job->ndefs < MAX_DEFS) {
                *eq = 0;
                defs[job->ndefs++] = (Define){ d, eq + 1, false };
            }
        } else if (!strncmp(w, "--arch=", 7)) {
            for (int i = 0; i < 4; i++)
                if (!strcmp(w + 7, fuzz_archs[i]))
                    job->opt.arch = fuzz_archs[i];
        } else if (!strncmp(w, "--max-regs=", 11)) {
            int v = atoi(w + 11);
            if (v >= 16 && v <= 255)   /* what tilec's command line accepts */
                job->opt.max_regs = v;
        } else if (!strcmp(w, "-fno-addr-split")) {
            job->opt.addr_split = false;
        } else if (!strcmp(w, "-fno-const-reg-elim")) {
            job->opt.const_reg_elim = false;
        } else if (!strcmp(w, "-fno-remat")) {
            job->opt.remat = false;
        } else if (!strcmp(w, "-fno-schedule")) {
            job->opt.schedule = false;
        } else if (!strcmp(w, "-fno-wgmma-wait")) {
            job->opt.wgmma_wait = false;
        } else if (!strcmp(w, "-fno-reg-cap")) {
            job->opt.reg_cap = false;
        } else if (!strcmp(w, "-fwarp-specialize")) {
            job->opt.warp_spec = true;
        } else if (!strcmp(w, "-fcluster")) {
            job->opt.cluster = true;
        } else if (!strcmp(w, "--emit=c")) {
            job->c_base = "fuzz";
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned o = data[0];
    char *src = fuzz_text(data + 1, size - 1);
    CompileJob job;
    memset(&job, 0, sizeof job);
    job.file = "fuzz.tile";
    job.src = src;
    job.len = size - 1;
    fuzz_options(&job, o, "fuzz");
    Define defs[MAX_DEFS];
    char line[MAX_FLAGS_LINE];
    job.defs = defs;
    read_flags(&job, line, defs);
    fuzz_compile_job(&job);
    free(src);
    return 0;
}
