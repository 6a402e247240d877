/* fuzz_job.c: one in-memory compilation for the compiler's fuzz targets (fuzz_compile, fuzz_gen),
 * and the checks of its output that need no ptxas: the PTX is ASCII, the runtime reads its
 * metadata. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_job.h"
#include "tilert_internal.h"

const char *const fuzz_archs[4] = { "sm_80", "sm_90", "sm_90a", "sm_86" };

void fuzz_options(CompileJob *job, unsigned o, const char *c_base)
{
    job->opt.arch = fuzz_archs[o & 3];
    job->opt.addr_split = !(o & 4);
    job->opt.const_reg_elim = !(o & 8);
    job->opt.remat = !(o & 16);
    job->opt.schedule = !(o & 32);
    job->opt.reg_cap = !(o & 64);
    job->opt.wgmma_wait = true;
    job->c_base = o & 128 ? c_base : NULL;
}

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
    /* IR a pass broke is a finding even where the PTX still comes out */
    job->opt.verify_ir = true;
    CompileOutput out;
    CompileStatus st = compile_buffer(job, &out);
    if (st == COMPILE_INTERNAL) {
        /* die() printed what failed; the abort makes it a crash libFuzzer keeps the input of */
        fputs("fuzz: internal error (above) on this input\n", stderr);
        abort();
    }
    if (st == COMPILE_OK) {
        /* ptxas (and the driver's JIT) refuse PTX with a byte outside ASCII anywhere, comments
           included */
        for (size_t i = 0; i < out.ptx.len; i++)
            if ((unsigned char)out.ptx.s[i] >= 0x80 || !out.ptx.s[i]) {
                fprintf(stderr, "fuzz: byte 0x%02x in the PTX at offset %zu\n",
                        (unsigned char)out.ptx.s[i], i);
                abort();
            }
    }
    if (st == COMPILE_OK && strstr(out.ptx.s, "//@kernel ")) {
        /* What tilec writes, libtilert must load: a module whose metadata the runtime refuses
           is as broken as a crash, only found later, on a GPU. (A file without kernels gives a
           module without metadata, which the runtime refuses by design.) */
        rt_meta m;
        if (rt_meta_parse(out.ptx.s, &m) != TILERT_OK) {
            fprintf(stderr, "fuzz: the runtime refuses the metadata tilec wrote: %s\n",
                    tilert_last_error());
            abort();
        }
        rt_meta_free(&m);
    }
    compile_output_free(&out);
}
