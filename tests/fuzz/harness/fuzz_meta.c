/* fuzz_meta.c: libFuzzer target: the runtime's metadata parser (runtime/meta.c), the `//@`
 * lines of a PTX file, into kernel metadata; then, for every kernel it accepts, everything a
 * launch works out before the GPU (argument checks, assume facts, the grid, tensor maps, the
 * parameter block) under a few argument sets, from zeros to the largest values the kinds hold.
 * The input is the text; a crash, a sanitizer report or a leak is a finding. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "tilert_internal.h"

/* Argument sets: every size and integer scalar takes the value, every pointer the address. */
static const struct { int64_t v; CUdeviceptr ptr; } sets[] = {
    { 0, 0x10000 }, { 1, 0x10000 }, { 1000, 0x10010 }, { INT32_MAX, 0x7fffff000 },
    { -1, 0x10004 }, { INT64_MAX, 0x10000 },
};

static tilert_arg arg_for(const rt_arg_meta *m, int64_t v, CUdeviceptr ptr)
{
    tilert_arg a;
    memset(&a, 0, sizeof a);
    if (m->cls == RT_ARG_PTR) {
        a.kind = TILERT_ARG_PTR;
        a.v.ptr = ptr;
        return a;
    }
    switch (m->cls == RT_ARG_SIZE ? RT_I32 : m->type) {
    case RT_BOOL: a.kind = TILERT_ARG_BOOL; a.v.b = v != 0; break;
    case RT_U32: a.kind = TILERT_ARG_U32; a.v.u32 = (uint32_t)v; break;
    case RT_I64: a.kind = TILERT_ARG_I64; a.v.i64 = v; break;
    case RT_F16: a.kind = TILERT_ARG_F16BITS; a.v.bits16 = (uint16_t)v; break;
    case RT_BF16: a.kind = TILERT_ARG_BF16BITS; a.v.bits16 = (uint16_t)v; break;
    case RT_F32: a.kind = TILERT_ARG_F32; a.v.f32 = (float)v; break;
    default: a.kind = TILERT_ARG_I32; a.v.i32 = (int32_t)v; break;
    }
    return a;
}

/* A launch plan holds the parameter block and the tensor maps: too big for a fuzzer's stack. */
static rt_launch_plan plan;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    rt_meta m;
    if (rt_meta_parse(text, &m) == TILERT_OK) {
        for (int i = 0; i < m.nk; i++) {
            const rt_kernel_meta *k = &m.k[i];
            tilert_arg args[RT_MAX_ARGS];
            for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
                for (int j = 0; j < k->nargs; j++)
                    args[j] = arg_for(&k->args[j], sets[s].v, sets[s].ptr);
                /* each step on its own too: a plan stops at the first refusal */
                unsigned grid[3];
                bool empty;
                rt_tmap_desc desc[RT_MAX_TMAPS];
                if (rt_check_args(k, args, k->nargs) == TILERT_OK) {
                    rt_check_assumes(k, args, k->nargs);
                    rt_compute_grid(k, args, k->nargs, grid, &empty);
                    rt_plan_tmaps(k, args, k->nargs, desc);
                }
                rt_plan_launch(k, args, k->nargs, &plan);
            }
            rt_check_args(k, args, k->nargs > 0 ? k->nargs - 1 : 1);
        }
        rt_meta_free(&m);
    }
    free(text);
    return 0;
}
