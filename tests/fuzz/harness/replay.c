/* replay.c: a main for a fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput once on the
 * contents of each file named, in order, printing each name first. Linked with the target and
 * the sanitizers, it is how make check replays the reproducers in tests/fuzz/regress/ where
 * libFuzzer is missing, and how one reproducer is looked at in a debugger. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_util.h"

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            unsigned char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = b;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    *n = len;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        size_t n = 0;
        unsigned char *data = slurp(argv[i], &n);
        if (!data) {
            fprintf(stderr, "replay: cannot read %s\n", argv[i]);
            return 2;
        }
        printf("replay %s\n", argv[i]);
        fflush(stdout);
        LLVMFuzzerTestOneInput(data, n);
        free(data);
    }
    return 0;
}
