/* target.c: what tilec knows of each GPU architecture it compiles for, one row each, picked once
 * from --arch. Every question about the target (limits, which instructions exist) reads a row
 * here rather than comparing architecture names, so a new architecture is one row.
 *
 * Shared memory: what one block may opt into, and what a multiprocessor has (the occupancy
 * estimate takes 1 KiB per block off it, as the hardware reserves). sm_86 and sm_89
 * multiprocessors hold 1536 threads, the others 2048. wgmma and TMA are used only on sm_90a,
 * whose PTX may use the architecture-specific instructions; sm_90 PTX must also run on later
 * GPUs. Only Ada (sm_89) has fp8 mma.sync in hardware: Hopper's fp8 is wgmma's, and ptxas makes
 * an fp8 mma.sync there out of conversions and f16 products where the register allocation
 * cannot see them (up to 255 registers and spills for a 138 predicted), so tilec writes those
 * itself (lower_mma.c, mma_sync).
 *
 * In flight: the global bytes per multiprocessor below which --report says a streaming kernel
 * cannot reach a copy's speed, measured on an H100 (docs/performance.md: a row kernel at 32 KiB
 * ran at 0.94 of a copy, at 48 KiB and 64 KiB at 1.00); 0 where tilec has no measurement. */
#include <string.h>
#include "tilec.h"

static const Target targets[] = {
    /* name      sm  threads  regs    smem/block  smem/SM      mma.sync wgmma  tma    clusters mma fp8 in flight */
    { "sm_80",   80, 2048,    65536,  166912,     164 * 1024,  true,    false, false, false,   false,  0 },
    { "sm_86",   86, 1536,    65536,  101376,     100 * 1024,  true,    false, false, false,   false,  0 },
    { "sm_89",   89, 1536,    65536,  101376,     100 * 1024,  true,    false, false, false,   true,   0 },
    { "sm_90",   90, 2048,    65536,  232448,     228 * 1024,  true,    false, false, true,    false,  48 },
    { "sm_90a",  90, 2048,    65536,  232448,     228 * 1024,  true,    true,  true,  true,    false,  48 },
};

const Target *target_of(const char *arch)
{
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++)
        if (arch && !strcmp(arch, targets[i].name))
            return &targets[i];
    return NULL;
}

const Target *target_default(void) { return &targets[0]; }

int target_count(void) { return (int)(sizeof targets / sizeof *targets); }

const Target *target_at(int i) { return i >= 0 && i < target_count() ? &targets[i] : NULL; }
