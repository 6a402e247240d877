/* fuzz_job.c: one in-memory compilation for the compiler's fuzz targets (fuzz_compile, fuzz_gen). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_job.h"

void fuzz_compile_job(CompileJob *job)
{
    /* Most inputs have errors: formatting them costs little, writing them to the terminal at
       thousands of inputs a second would drown libFuzzer's own report. */
    static bool quiet_set;
    if (!quiet_set) {
        quiet_set = true;
        const char *show = getenv("TILEC_FUZZ_MESSAGES");
        if (!show || !*show || !strcmp(show, "0"))
            diag.out = fopen("/dev/null", "w");
    }
    job->opt.no_ptxas = true;
    CompileOutput out;
    CompileStatus st = compile_buffer(job, &out);
    compile_output_free(&out);
    if (st == COMPILE_INTERNAL) {
        /* die() printed what failed; the abort makes it a crash libFuzzer keeps the input of */
        fputs("fuzz: internal error (above) on this input\n", stderr);
        abort();
    }
}
