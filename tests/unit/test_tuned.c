/* test_tuned.c: the shape dispatch of tuned launchers (runtime/tuned.c) without a GPU: which
 * variant a shape picks (nearest class by log2 distance, ties to the first, sizes below 1 as 1),
 * and the refusal of malformed tables. */
#include <stdint.h>

#include "tilert_internal.h"
#include "unit.h"

/* Classes of a product M x K x N as tilec-tune would write them; variants as if deduplicated. */
static const int32_t classes[] = {
    16, 8192, 8192,
    512, 8192, 8192,
    4096, 8192, 8192,
    4096, 28672, 8192,
};
static const int variant_of[] = { 1, 2, 0, 3 };
static tilert_embedded dummy[4];
static tilert_embedded *const variants[4] = { &dummy[0], &dummy[1], &dummy[2], &dummy[3] };
static const tilert_tuned table = { variants, 4, 0, 3, classes, variant_of, 4 };

static void expect_variant(const tilert_tuned *t, int32_t m, int32_t k, int32_t n, int want)
{
    const int32_t sizes[3] = { m, k, n };
    char name[120];
    snprintf(name, sizeof name, "M=%d K=%d N=%d picks variant %d", m, k, n, want);
    int got = tilert_tuned_variant(t, sizes);
    unit_check(got == want, name, "got %d", got);
}

int main(void)
{
    expect_variant(&table, 16, 8192, 8192, 1);       /* exactly a class */
    expect_variant(&table, 512, 8192, 8192, 2);
    expect_variant(&table, 4096, 8192, 8192, 0);
    expect_variant(&table, 4096, 28672, 8192, 3);
    expect_variant(&table, 20, 8192, 8192, 1);       /* near 16 */
    expect_variant(&table, 100, 8192, 8192, 2);      /* log2 100 = 6.64: 2.36 from 512, 2.64 from 16 */
    expect_variant(&table, 80, 8192, 8192, 1);       /* log2 80 = 6.32: 2.32 from 16, 2.68 from 512 */
    expect_variant(&table, 1500, 8192, 8192, 0);     /* 10.55: 1.55 from 512, 1.45 from 4096 */
    expect_variant(&table, 1400, 8192, 8192, 2);     /* 10.45: 1.45 from 512, 1.55 from 4096 */
    expect_variant(&table, 1600, 8192, 8192, 0);     /* 10.64: 1.64 from 512, 1.36 from 4096 */
    expect_variant(&table, 1 << 20, 8192, 8192, 0);  /* far beyond: the largest M */
    expect_variant(&table, 4096, 16384, 8192, 3);    /* K: 1 from 8192, 0.81 from 28672 */
    expect_variant(&table, 4096, 12000, 8192, 0);    /* K: 0.55 from 8192, 1.26 from 28672 */
    expect_variant(&table, 0, 8192, 8192, 1);        /* 0 counts as 1: nearest is 16 */
    expect_variant(&table, -5, 8192, 8192, 1);

    /* A tie goes to the class first in the table: 32 is one octave from both 16 and 64. */
    static const int32_t tie[] = { 16, 64 };
    static const int tie_variant[] = { 1, 2 };
    const tilert_tuned t2 = { variants, 3, 0, 1, tie, tie_variant, 2 };
    const int32_t s32[1] = { 32 };
    unit_check(tilert_tuned_variant(&t2, s32) == 1, "a tie picks the first class", "got %d",
               tilert_tuned_variant(&t2, s32));

    /* No classes: variant 0; a class naming a variant out of range is never picked. */
    const tilert_tuned none = { variants, 4, 0, 3, classes, variant_of, 0 };
    expect_variant(&none, 16, 8192, 8192, 0);
    static const int bad_variant[] = { 9, 2 };
    const tilert_tuned t3 = { variants, 3, 0, 1, tie, bad_variant, 2 };
    const int32_t s16[1] = { 16 };
    unit_check(tilert_tuned_variant(&t3, s16) == 2, "an out-of-range variant is skipped", "got %d",
               tilert_tuned_variant(&t3, s16));

    /* A malformed table is refused before anything is launched. */
    const tilert_tuned broken = { variants, 0, 0, 1, tie, tie_variant, 2 };
    tilert_status s = tilert_tuned_launch(&broken, 0, NULL, 0, s16);
    unit_check(s == TILERT_ERR_BAD_ARGS && strstr(tilert_last_error(), "malformed"),
               "malformed dispatch table refused", "%s: %s", tilert_status_name(s), tilert_last_error());
    s = tilert_tuned_launch(NULL, 0, NULL, 0, s16);
    unit_check(s == TILERT_ERR_BAD_ARGS, "no table refused", "%s", tilert_status_name(s));
    return unit_exit();
}
