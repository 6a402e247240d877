/* fuzz_job.h: one compilation for the compiler's fuzz targets (fuzz_job.c). */
#ifndef FUZZ_JOB_H
#define FUZZ_JOB_H

#include "tilec.h"

/* Compiles job in memory (no ptxas, the IR verified after every pass) with the diagnostics
 * silenced (TILEC_FUZZ_MESSAGES=1 shows them), checks that what compiled is ASCII and that the
 * runtime's parser reads its metadata, and frees everything. An internal error (a compiler bug
 * the compiler reports included) or a failed check aborts, so that libFuzzer records a finding. */
void fuzz_compile_job(CompileJob *job);
/* The architectures option bits pick from (the first byte of an input, o & 3). */
extern const char *const fuzz_archs[4];
/* A job's options from the bits of o: arch (o & 3), then each of -fno-addr-split,
 * -fno-const-reg-elim, -fno-remat, -fno-schedule, -fno-reg-cap when its bit (4 .. 64) is set,
 * and --emit=c's launchers with prefix c_base when bit 128 is. */
void fuzz_options(CompileJob *job, unsigned o, const char *c_base);

#endif
