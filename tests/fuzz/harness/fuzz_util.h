/* fuzz_util.h: what every fuzz target shares (fuzz_util.c). */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A NUL-terminated heap copy of the input (free it): the compiler and the metadata parser read
 * text, libFuzzer gives bytes. */
char *fuzz_text(const uint8_t *data, size_t n);

/* libFuzzer's entry point, which every target defines and replay.c calls. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
