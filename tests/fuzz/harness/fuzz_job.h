/* fuzz_job.h: one compilation for the compiler's fuzz targets (fuzz_job.c). */
#ifndef FUZZ_JOB_H
#define FUZZ_JOB_H

#include "tilec.h"

/* Compiles job in memory (no ptxas, the IR verified after every pass) with the diagnostics
 * silenced (TILEC_FUZZ_MESSAGES=1 shows them), checks that what compiled is ASCII and that the
 * runtime's parser reads its metadata, and frees everything. An internal error (a compiler bug
 * the compiler reports included) or a failed check aborts, so that libFuzzer records a finding. */
void fuzz_compile_job(CompileJob *job);

#endif
