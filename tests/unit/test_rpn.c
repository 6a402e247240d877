/* test_rpn.c: the launch-time integer expressions (grid sizes, assume facts): every operator,
 * arguments, division by zero, int64 overflow, malformed expressions. */
#include <stdint.h>

#include "tilert_internal.h"
#include "unit.h"

/* Parses and evaluates text with the given argument values; returns the status. */
static tilert_status eval(const char *text, const int64_t *vals, int nvals, int64_t *out)
{
    rpn_expr e;
    tilert_status s = rt_rpn_parse(text, nvals, &e);
    if (s != TILERT_OK)
        return s;
    return rt_rpn_eval(&e, vals, nvals, out);
}

static void expect_value(const char *text, int64_t want)
{
    static const int64_t vals[] = {1000, 7, -3, 0};
    int64_t got = 0;
    char name[160];
    snprintf(name, sizeof name, "rpn \"%s\" = %lld", text, (long long)want);
    tilert_status s = eval(text, vals, 4, &got);
    unit_check(s == TILERT_OK && got == want, name, "status %s (%s), value %lld",
               tilert_status_name(s), tilert_last_error(), (long long)got);
}

/* An error of the given status whose message contains `words`. */
static void expect_error(const char *text, tilert_status want, const char *words)
{
    static const int64_t vals[] = {1000, 7, -3, 0};
    int64_t got = 0;
    char name[160];
    snprintf(name, sizeof name, "rpn \"%s\" -> %s", text, tilert_status_name(want));
    tilert_status s = eval(text, vals, 4, &got);
    unit_check(s == want && strstr(tilert_last_error(), words), name,
               "status %s, message \"%s\" (wanted it to mention \"%s\")", tilert_status_name(s),
               s ? tilert_last_error() : "", words);
}

int main(void)
{
    /* arithmetic */
    expect_value("7 2 +", 9);
    expect_value("7 2 -", 5);
    expect_value("2 7 -", -5);
    expect_value("7 -2 *", -14);
    expect_value("7 2 /", 3);
    expect_value("-7 2 /", -3);          /* truncates like C */
    expect_value("7 2 %", 1);
    expect_value("-7 2 %", -1);
    expect_value("7 2 cdiv", 4);
    expect_value("8 2 cdiv", 4);
    expect_value("0 128 cdiv", 0);
    expect_value("1 128 cdiv", 1);
    expect_value("-7 2 cdiv", -3);       /* ceil(-3.5) */
    expect_value("7 -2 cdiv", -3);
    expect_value("-7 -2 cdiv", 4);
    expect_value("3 9 min", 3);
    expect_value("3 9 max", 9);
    expect_value("-3 -9 min", -9);
    /* comparisons and logic give 0 or 1 */
    expect_value("3 3 ==", 1);
    expect_value("3 4 ==", 0);
    expect_value("3 4 !=", 1);
    expect_value("3 4 <", 1);
    expect_value("4 4 <", 0);
    expect_value("4 4 <=", 1);
    expect_value("5 4 >", 1);
    expect_value("4 4 >", 0);
    expect_value("4 4 >=", 1);
    expect_value("3 4 >=", 0);
    expect_value("1 5 &&", 1);
    expect_value("1 0 &&", 0);
    expect_value("0 0 ||", 0);
    expect_value("0 9 ||", 1);
    expect_value("0 !", 1);
    expect_value("42 !", 0);
    expect_value("42 neg", -42);
    expect_value("-42 neg", 42);
    /* arguments: a0 = 1000, a1 = 7, a2 = -3, a3 = 0 */
    expect_value("a0", 1000);
    expect_value("a0 128 cdiv a1 *", 56);
    expect_value("a0 32 % 0 ==", 0);      /* assume(K % 32 == 0) with K = 1000 */
    expect_value("a0 8192 <=", 1);
    expect_value("a2 neg a1 max", 7);
    expect_value("a0 4 % 0 == a1 4 % 0 == &&", 0);
    expect_value("a3 128 cdiv", 0);       /* an empty grid */
    /* large values that still fit */
    expect_value("9223372036854775807", INT64_MAX);
    expect_value("-9223372036854775808", INT64_MIN);
    expect_value("9223372036854775806 1 +", INT64_MAX);
    expect_value("2147483647 2147483647 *", INT64_C(4611686014132420609));
    expect_value("-9223372036854775808 -1 %", 0);
    expect_value("-9223372036854775807 1 -", INT64_MIN);
    expect_value("-4611686018427387904 2 *", INT64_MIN);
    /* division by zero: an error for these arguments, never a crash */
    expect_error("1 0 /", TILERT_ERR_BAD_ARGS, "division by zero");
    expect_error("1 0 %", TILERT_ERR_BAD_ARGS, "division by zero");
    expect_error("a0 a3 cdiv", TILERT_ERR_BAD_ARGS, "division by zero");
    /* overflow */
    expect_error("9223372036854775807 1 +", TILERT_ERR_BAD_ARGS, "overflow");
    expect_error("-9223372036854775808 1 -", TILERT_ERR_BAD_ARGS, "overflow");
    expect_error("9223372036854775807 -1 -", TILERT_ERR_BAD_ARGS, "overflow");
    expect_error("4611686018427387904 2 *", TILERT_ERR_BAD_ARGS, "overflow");
    expect_error("-4611686018427387905 2 *", TILERT_ERR_BAD_ARGS, "overflow");
    expect_error("-9223372036854775808 -1 *", TILERT_ERR_BAD_ARGS, "overflow");
    expect_error("-9223372036854775808 -1 /", TILERT_ERR_BAD_ARGS, "overflow");
    expect_error("-9223372036854775808 -1 cdiv", TILERT_ERR_BAD_ARGS, "overflow");
    expect_error("-9223372036854775808 neg", TILERT_ERR_BAD_ARGS, "overflow");
    /* malformed expressions are refused when parsed */
    expect_error("", TILERT_ERR_BAD_META, "leaves 0 values");
    expect_error("1 +", TILERT_ERR_BAD_META, "lacks operands");
    expect_error("!", TILERT_ERR_BAD_META, "lacks operands");
    expect_error("1 2", TILERT_ERR_BAD_META, "leaves 2 values");
    expect_error("1 2 pow", TILERT_ERR_BAD_META, "unknown RPN token pow");
    expect_error("a4", TILERT_ERR_BAD_META, "out of range");
    expect_error("a", TILERT_ERR_BAD_META, "unknown RPN token");
    expect_error("a-1", TILERT_ERR_BAD_META, "unknown RPN token");
    expect_error("99999999999999999999", TILERT_ERR_BAD_META, "bad RPN integer");
    expect_error("12abc", TILERT_ERR_BAD_META, "bad RPN integer");

    /* hand-built broken programs: stack errors are errors at evaluation too */
    rpn_expr e = {.n = 1, .tok = {{RPN_ADD, 0}}};
    int64_t v;
    tilert_status s = rt_rpn_eval(&e, NULL, 0, &v);
    unit_check(s == TILERT_ERR_BAD_META, "rpn eval underflow", "status %s", tilert_status_name(s));
    e.n = 2;
    e.tok[0] = (rpn_tok){RPN_INT, 1};
    e.tok[1] = (rpn_tok){RPN_INT, 2};
    s = rt_rpn_eval(&e, NULL, 0, &v);
    unit_check(s == TILERT_ERR_BAD_META, "rpn eval leftovers", "status %s", tilert_status_name(s));
    e.n = 1;
    e.tok[0] = (rpn_tok){RPN_ARG, 3};
    s = rt_rpn_eval(&e, (int64_t[]){1}, 1, &v);
    unit_check(s == TILERT_ERR_BAD_META, "rpn eval missing argument", "status %s",
               tilert_status_name(s));
    e.n = RT_MAX_RPN;
    for (int i = 0; i < RT_MAX_RPN; i++)
        e.tok[i] = (rpn_tok){RPN_INT, i};
    s = rt_rpn_eval(&e, NULL, 0, &v);
    unit_check(s == TILERT_ERR_BAD_META, "rpn eval full stack", "status %s", tilert_status_name(s));
    return unit_exit();
}
