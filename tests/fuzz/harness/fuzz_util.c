/* fuzz_util.c: input handling every fuzz target shares. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

char *fuzz_text(const uint8_t *data, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        abort();
    if (n)
        memcpy(s, data, n);
    s[n] = 0;
    return s;
}
