/* tune_file.c: the winners file of tilec-tune, read by `tilec --emit=c --tune=FILE`.
 *
 * A line-oriented text format, so that a person can read it, edit it and diff it: one size class
 * a line, `KERNEL SIZES CONSTS`, where SIZES is `NAME=INT,...` (the kernel's size symbols, the
 * shape the class was tuned at) and CONSTS `NAME=VALUE,...` (the -D values that won there) or
 * `-` (the file's own consts won). `#` starts a comment. The values of consts are checked where
 * they are used, by the compilation of the variant, exactly as -D values are. */
#include <stdlib.h>
#include <string.h>

#include "tilec.h"

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }
static bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }

/* The reader's position: the text is diag.src, lines and columns are 1-based as in the compiler. */
typedef struct {
    const char *p;
    Loc loc;
} Cursor;

static void advance(Cursor *c, size_t n)
{
    for (size_t i = 0; i < n && *c->p; i++) {
        if (*c->p == '\n') {
            c->loc.line++;
            c->loc.col = 1;
        } else {
            c->loc.col++;
        }
        c->p++;
    }
}

static void skip_blanks(Cursor *c)
{
    while (is_space(*c->p))
        advance(c, 1);
}

/* The length of the field at c: up to a blank, a comma, a comment or the end of the line. */
static size_t field_len(const char *p, bool stop_at_comma)
{
    size_t n = 0;
    while (p[n] && p[n] != '\n' && p[n] != '#' && !is_space(p[n]) && !(stop_at_comma && p[n] == ','))
        n++;
    return n;
}

static size_t name_len(const char *p)
{
    size_t n = 0;
    if (!is_name_start(p[0]))
        return 0;
    while (is_name_char(p[n]))
        n++;
    return n;
}

/* A size's value: a decimal integer from 1 to 2^31 - 1, the range of a size argument (a class
 * at size 0 would say nothing about any launch). */
static bool parse_size(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 10)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 1 || v > INT32_MAX)
        return false;
    *out = v;
    return true;
}

/* NAME=VALUE, NAME=VALUE, ... at c, up to a blank. sizes: VALUE is a size; else any literal
 * text (the compilation checks it as it checks a -D value). */
static bool parse_pairs(Arena *a, Cursor *c, TuneClass *tc, bool sizes)
{
    const char *what = sizes ? "size" : "const";
    for (;;) {
        Loc at = c->loc;
        size_t n = name_len(c->p);
        if (n == 0 || c->p[n] != '=') {
            error_at(at, "expected %s NAME=VALUE, got '%.*s'", what, (int)field_len(c->p, true), c->p);
            return false;
        }
        const char *name = arena_strndup(a, c->p, n);
        advance(c, n + 1);
        size_t vn = field_len(c->p, true);
        if (vn == 0) {
            error_at(c->loc, "%s '%s' has no value", what, name);
            return false;
        }
        const char *value = arena_strndup(a, c->p, vn);
        if (sizes) {
            if (tc->nsizes == TUNE_MAX_SIZES) {
                error_at(at, "more than %d sizes", TUNE_MAX_SIZES);
                return false;
            }
            int64_t v;
            if (!parse_size(value, vn, &v)) {
                error_at(c->loc, "size %s=%s: a size is an integer from 1 to 2147483647", name, value);
                return false;
            }
            for (int i = 0; i < tc->nsizes; i++)
                if (!strcmp(tc->size_name[i], name)) {
                    error_at(at, "size '%s' given twice", name);
                    return false;
                }
            tc->size_name[tc->nsizes] = name;
            tc->size[tc->nsizes] = v;
            tc->size_loc[tc->nsizes++] = at;
        } else {
            if (tc->ndefs == TUNE_MAX_DEFS) {
                error_at(at, "more than %d consts", TUNE_MAX_DEFS);
                return false;
            }
            for (int i = 0; i < tc->ndefs; i++)
                if (!strcmp(tc->defs[i].name, name)) {
                    error_at(at, "const '%s' given twice", name);
                    return false;
                }
            tc->defs[tc->ndefs] = (Define){ name, value, false };
            tc->def_loc[tc->ndefs++] = at;
        }
        advance(c, vn);
        if (*c->p != ',')
            return true;
        advance(c, 1);
    }
}

/* One non-blank line: KERNEL SIZES CONSTS [# comment]. */
static bool parse_line(Arena *a, Cursor *c, TuneClass *tc)
{
    memset(tc, 0, sizeof *tc);
    tc->loc = c->loc;
    size_t n = name_len(c->p);
    if (n == 0 || !(is_space(c->p[n]) || c->p[n] == '\n' || c->p[n] == '#' || !c->p[n])) {
        error_at(c->loc, "expected a kernel name, got '%.*s'", (int)field_len(c->p, false), c->p);
        return false;
    }
    tc->kernel = arena_strndup(a, c->p, n);
    advance(c, n);
    skip_blanks(c);
    if (!*c->p || *c->p == '\n' || *c->p == '#') {
        error_at(c->loc, "kernel '%s': expected its sizes (NAME=INT,...) and consts", tc->kernel);
        return false;
    }
    if (!parse_pairs(a, c, tc, true))
        return false;
    if (!is_space(*c->p)) {
        error_at(c->loc, "expected the consts (NAME=VALUE,... or -) after the sizes");
        return false;
    }
    skip_blanks(c);
    if (*c->p == '-' && field_len(c->p, false) == 1) {
        advance(c, 1);
    } else if (!*c->p || *c->p == '\n' || *c->p == '#') {
        error_at(c->loc, "expected the consts (NAME=VALUE,... or - for the file's own)");
        return false;
    } else if (!parse_pairs(a, c, tc, false)) {
        return false;
    }
    skip_blanks(c);
    if (*c->p == '#') {
        advance(c, 1);
        skip_blanks(c);
        const char *end = strchr(c->p, '\n');
        size_t len = end ? (size_t)(end - c->p) : strlen(c->p);
        while (len && is_space(c->p[len - 1]))
            len--;
        tc->comment = arena_strndup(a, c->p, len);
        advance(c, len);
        skip_blanks(c);
    }
    if (*c->p && *c->p != '\n') {
        error_at(c->loc, "unexpected '%.*s' after the consts", (int)field_len(c->p, false), c->p);
        return false;
    }
    return true;
}

bool tune_file_parse(Arena *a, TuneClass **out, int *n)
{
    Cursor c = { diag.src ? diag.src : "", { 1, 1 } };
    Vec(TuneClass) v = { 0 };
    if (diag.src && strlen(diag.src) != diag.len)
        error_at(c.loc, "a winners file is text: it holds a NUL byte");
    while (*c.p && diag.nerrors == 0) {
        skip_blanks(&c);
        if (*c.p == '#') {
            while (*c.p && *c.p != '\n')
                advance(&c, 1);
        }
        if (*c.p == '\n') {
            advance(&c, 1);
            continue;
        }
        if (!*c.p)
            break;
        TuneClass tc;
        if (!parse_line(a, &c, &tc)) {
            /* one error a line: skip to the next */
            while (*c.p && *c.p != '\n')
                advance(&c, 1);
            continue;
        }
        if (v.n == TUNE_MAX_CLASSES) {
            error_at(tc.loc, "more than %d size classes", TUNE_MAX_CLASSES);
            break;
        }
        vec_push(&v, tc);
    }
    *n = v.n;
    *out = arena_alloc(a, sizeof(TuneClass) * (size_t)(v.n ? v.n : 1));
    if (v.n)
        memcpy(*out, v.v, sizeof(TuneClass) * (size_t)v.n);
    vec_free(&v);
    return diag.nerrors == 0;
}

static const Kernel *find_kernel(const Program *p, const char *name)
{
    for (int i = 0; i < p->nkernels; i++)
        if (!strcmp(p->kernels[i]->name, name))
            return p->kernels[i];
    return NULL;
}

bool tune_file_check(const TuneClass *cs, int n, const Program *p)
{
    int before = diag.nerrors;
    for (int i = 0; i < n; i++) {
        const TuneClass *tc = &cs[i];
        const Kernel *k = find_kernel(p, tc->kernel);
        if (!k) {
            error_at(tc->loc, "no kernel '%s' in the source", tc->kernel);
            continue;
        }
        for (int j = 0; j < tc->nsizes; j++) {
            bool found = false;
            for (int s = 0; s < k->nsizes && !found; s++)
                found = !strcmp(k->sizes[s]->name, tc->size_name[j]);
            if (!found)
                error_at(tc->size_loc[j], "kernel '%s' has no size '%s'", k->name, tc->size_name[j]);
        }
        for (int s = 0; s < k->nsizes; s++) {
            bool found = false;
            for (int j = 0; j < tc->nsizes && !found; j++)
                found = !strcmp(k->sizes[s]->name, tc->size_name[j]);
            if (!found)
                error_at(tc->loc, "the class of kernel '%s' does not give its size '%s'", k->name,
                         k->sizes[s]->name);
        }
        for (int j = 0; j < tc->ndefs; j++) {
            bool found = false;
            for (int c = 0; c < p->nconsts && !found; c++)
                found = !strcmp(p->consts[c].name, tc->defs[j].name);
            if (!found)
                error_at(tc->def_loc[j], "no const '%s' in the source", tc->defs[j].name);
        }
        /* two classes at one shape could never both be chosen */
        for (int j = 0; j < i; j++) {
            if (strcmp(cs[j].kernel, tc->kernel) || cs[j].nsizes != tc->nsizes)
                continue;
            bool same = true;
            for (int s = 0; s < tc->nsizes && same; s++) {
                same = false;
                for (int t = 0; t < cs[j].nsizes; t++)
                    if (!strcmp(cs[j].size_name[t], tc->size_name[s]))
                        same = cs[j].size[t] == tc->size[s];
            }
            if (same) {
                error_at(tc->loc, "kernel '%s' has a class at these sizes already (line %d)",
                         tc->kernel, cs[j].loc.line);
                break;
            }
        }
    }
    return diag.nerrors == before;
}

void tune_file_write(Buf *out, const TuneClass *cs, int n)
{
    for (int i = 0; i < n; i++) {
        const TuneClass *tc = &cs[i];
        buf_printf(out, "%s ", tc->kernel);
        for (int j = 0; j < tc->nsizes; j++)
            buf_printf(out, "%s%s=%lld", j ? "," : "", tc->size_name[j], (long long)tc->size[j]);
        buf_puts(out, " ");
        if (tc->ndefs == 0)
            buf_puts(out, "-");
        for (int j = 0; j < tc->ndefs; j++)
            buf_printf(out, "%s%s=%s", j ? "," : "", tc->defs[j].name, tc->defs[j].value);
        if (tc->comment && *tc->comment) {
            buf_puts(out, "   # ");
            for (const char *s = tc->comment; *s; s++)   /* one line: a newline would end it */
                buf_printf(out, "%c", *s == '\n' || *s == '\r' ? ' ' : *s);
        }
        buf_puts(out, "\n");
    }
}
