/* unit_meta.h: the metadata parser's refusals, shared by the tests of its line kinds. */
#ifndef UNIT_META_H
#define UNIT_META_H

#include "tilert_internal.h"
#include "unit.h"

/* Text that must be refused with TILERT_ERR_BAD_META, a message containing `words`, and nothing
 * left parsed. The check is named "PREFIX malformed: NAME". */
static void unit_meta_malformed(const char *prefix, const char *name, const char *text,
                                const char *words)
{
    rt_meta m = {(rt_kernel_meta *)1, 99};
    char full[160];
    snprintf(full, sizeof full, "%s malformed: %s", prefix, name);
    tilert_status s = rt_meta_parse(text, &m);
    unit_check(s == TILERT_ERR_BAD_META && strstr(tilert_last_error(), words) && m.nk == 0 &&
                   m.k == NULL,
               full, "status %s, message \"%s\" (wanted \"%s\")", tilert_status_name(s),
               tilert_last_error(), words);
    if (s == TILERT_OK)
        rt_meta_free(&m);
}

#endif
