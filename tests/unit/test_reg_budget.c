/* test_reg_budget.c: the registers a block's threads may have, as the hardware deals them.
 * The register file is four quadrants of 16384 and a block's warps are dealt round them, so
 * the warps of the fullest quadrant set the limit: 288 threads (9 warps, 3 on one quadrant) may
 * have 168 registers each, not 65536 / 288 -- a launch at 223 failed with
 * CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (regalloc.c, reg_budget). */
#include "tilec.h"
#include "unit.h"

int main(void)
{
    static const struct { int threads, budget; } cases[] = {
        { 32, 255 }, { 128, 255 }, { 256, 255 }, { 288, 168 }, { 384, 168 }, { 512, 128 },
        { 544, 96 }, { 640, 96 }, { 768, 80 }, { 1024, 64 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = reg_budget(cases[i].threads);
        char name[64];
        snprintf(name, sizeof name, "reg_budget(%d) = %d", cases[i].threads, cases[i].budget);
        unit_check(got == cases[i].budget, name, "got %d", got);
    }
    /* and the blocks a multiprocessor holds: two blocks of 9 warps put 5 on a quadrant, at 102
       registers or fewer (96 in units of 8); one register more and one block */
    unit_check(reg_cap_blocks(96 + reg_cap_slack(96), 288, 2048) == 2, "two blocks of 288 threads at 96 registers",
               "%d", reg_cap_blocks(96 + reg_cap_slack(96), 288, 2048));
    unit_check(reg_cap_blocks(104 + reg_cap_slack(104), 288, 2048) == 1, "one block of 288 threads at 104 registers",
               "%d", reg_cap_blocks(104 + reg_cap_slack(104), 288, 2048));
    return unit_exit();
}
