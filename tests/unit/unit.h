/* unit.h: the few lines every CPU unit test shares. Each check prints one line:
 *   ok NAME
 *   FAIL NAME: what went wrong
 * and a program exits 1 when any check failed. tests/unit/run.sh counts the lines. */
#ifndef UNIT_H
#define UNIT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int unit_failures;

/* Reports one check; printf-style detail is printed only on failure. */
static bool unit_check(bool ok, const char *name, const char *fmt, ...)
{
    if (ok) {
        printf("ok %s\n", name);
        return true;
    }
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL %s: ", name);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    unit_failures++;
    return false;
}

static int unit_exit(void)
{
    fflush(stdout);
    return unit_failures ? 1 : 0;
}

#endif
