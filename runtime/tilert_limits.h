/* tilert_limits.h: the most a module's //@tilec metadata may hold, one definition for both sides:
 * libtilert refuses a module past any of these (runtime/meta.c), and tilec refuses, at the
 * source, a program that would need more (compiler/check.c, compiler/meta.c), so that nothing
 * it writes fails to load. Not installed; tests/unit/test_limits.c loads the largest module. */
#ifndef TILERT_LIMITS_H
#define TILERT_LIMITS_H

enum {
    TILERT_MAX_ARGS = 64,          /* arguments of a kernel: parameters, then size symbols */
    TILERT_MAX_NAME = 255,         /* bytes of a kernel's or an argument's name */
    TILERT_MAX_RPN = 64,           /* tokens of a grid, assume or tensor map expression */
    TILERT_MAX_RPN_TOKEN = 31,     /* bytes of one such token */
    TILERT_MAX_META_LINE = 4095,   /* bytes of one //@ line, without its newline */
    TILERT_MAX_GRID = 3,           /* grid dimensions */
    TILERT_MAX_TMAPS = 8,          /* TMA tensor maps of a kernel */
};

#endif
