/* meta.c: parses the //@tilec metadata block that tilec writes (compiler/meta.c writes it; the
 * format is documented in compiler/tilec.h):
 *
 *   //@tilec 1
 *   //@kernel NAME threads T smem S regs R
 *   //@arg NAME ptr|size|scalar TYPE ALIGN
 *   //@grid RPN
 *   //@assume RPN | TEXT
 *   //@end
 *
 * Only lines starting with //@ are read, so the same parser takes a whole PTX file or the bare
 * metadata string that accompanies a cubin. Any deviation is an error naming the line: a launch
 * driven by misread metadata would pass wrong arguments silently. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilert_internal.h"

enum { LINE_MAX_LEN = 4096 };

static const char *const type_names[RT_TYPE_COUNT] = {
    [RT_BOOL] = "bool", [RT_I32] = "i32", [RT_U32] = "u32", [RT_I64] = "i64",
    [RT_F16] = "f16", [RT_BF16] = "bf16", [RT_F32] = "f32",
};

const char *rt_type_name(rt_type t)
{
    return (unsigned)t < RT_TYPE_COUNT ? type_names[t] : "?";
}

static bool parse_type(const char *s, rt_type *t)
{
    for (int i = 0; i < RT_TYPE_COUNT; i++)
        if (strcmp(s, type_names[i]) == 0) {
            *t = (rt_type)i;
            return true;
        }
    return false;
}

/* A whole-token decimal integer in [lo, hi]. */
static bool parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* ---------------------------------------------------------------- RPN */

static const struct { const char *s; rpn_op op; int pops; } rpn_ops[] = {
    {"+", RPN_ADD, 2}, {"-", RPN_SUB, 2}, {"*", RPN_MUL, 2}, {"/", RPN_DIV, 2},
    {"%", RPN_MOD, 2}, {"cdiv", RPN_CDIV, 2}, {"min", RPN_MIN, 2}, {"max", RPN_MAX, 2},
    {"==", RPN_EQ, 2}, {"!=", RPN_NE, 2}, {"<", RPN_LT, 2}, {"<=", RPN_LE, 2},
    {">", RPN_GT, 2}, {">=", RPN_GE, 2}, {"&&", RPN_AND, 2}, {"||", RPN_OR, 2},
    {"!", RPN_NOT, 1}, {"neg", RPN_NEG, 1},
};

tilert_status rt_rpn_parse(const char *text, int nargs, rpn_expr *out)
{
    out->n = 0;
    int depth = 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        char tok[32];
        size_t len = strcspn(p, " \t");
        if (len >= sizeof tok)
            return rt_error(TILERT_ERR_BAD_META, "RPN token too long in \"%s\"", text);
        memcpy(tok, p, len);
        tok[len] = 0;
        p += len;
        if (out->n == RT_MAX_RPN)
            return rt_error(TILERT_ERR_BAD_META, "RPN expression longer than %d tokens: \"%s\"",
                            RT_MAX_RPN, text);
        rpn_tok *t = &out->tok[out->n++];
        int64_t v;
        if (tok[0] == 'a' && tok[1] >= '0' && tok[1] <= '9' && parse_int(tok + 1, 0, nargs - 1, &v)) {
            t->op = RPN_ARG, t->v = v;
            depth++;
            continue;
        }
        if (tok[0] == 'a' && tok[1] >= '0' && tok[1] <= '9')
            return rt_error(TILERT_ERR_BAD_META,
                            "RPN argument %s out of range (the kernel has %d arguments) in \"%s\"",
                            tok, nargs, text);
        if ((tok[0] >= '0' && tok[0] <= '9') || (tok[0] == '-' && tok[1] >= '0' && tok[1] <= '9')) {
            if (!parse_int(tok, INT64_MIN, INT64_MAX, &v))
                return rt_error(TILERT_ERR_BAD_META, "bad RPN integer %s in \"%s\"", tok, text);
            t->op = RPN_INT, t->v = v;
            depth++;
            continue;
        }
        size_t i;
        for (i = 0; i < sizeof rpn_ops / sizeof rpn_ops[0]; i++)
            if (strcmp(tok, rpn_ops[i].s) == 0)
                break;
        if (i == sizeof rpn_ops / sizeof rpn_ops[0])
            return rt_error(TILERT_ERR_BAD_META, "unknown RPN token %s in \"%s\"", tok, text);
        if (depth < rpn_ops[i].pops)
            return rt_error(TILERT_ERR_BAD_META, "RPN operator %s lacks operands in \"%s\"", tok,
                            text);
        depth -= rpn_ops[i].pops - 1;
        t->op = rpn_ops[i].op, t->v = 0;
    }
    if (depth != 1)
        return rt_error(TILERT_ERR_BAD_META, "RPN expression \"%s\" leaves %d values, not 1", text,
                        depth);
    return TILERT_OK;
}

/* ---------------------------------------------------------------- lines */

typedef struct {
    rt_meta *m;
    rt_kernel_meta *cur;   /* open //@kernel group, NULL outside */
    int lineno;
    const char *line;      /* the current line, for messages */
} Parser;

static tilert_status bad(Parser *P, const char *why)
{
    return rt_error(TILERT_ERR_BAD_META, "metadata line %d: %s: %s", P->lineno, why, P->line);
}

/* Splits s in place into at most max whitespace-separated words; returns the count (max + 1
 * when there were more). */
static int split(char *s, char **w, int max)
{
    int n = 0;
    for (;;) {
        while (*s == ' ' || *s == '\t')
            *s++ = 0;
        if (!*s)
            return n;
        if (n == max)
            return max + 1;
        w[n++] = s;
        while (*s && *s != ' ' && *s != '\t')
            s++;
    }
}

static void *grow(void *v, int n, size_t elem)
{
    return realloc(v, (size_t)(n + 1) * elem);
}

static tilert_status kernel_line(Parser *P, char *rest)
{
    char *w[8];
    int n = split(rest, w, 7);
    if (P->cur)
        return bad(P, "//@kernel inside an open kernel group (missing //@end)");
    if (n != 7 || strcmp(w[1], "threads") || strcmp(w[3], "smem") || strcmp(w[5], "regs"))
        return bad(P, "expected //@kernel NAME threads T smem S regs R");
    if (strlen(w[0]) >= RT_MAX_NAME)
        return bad(P, "kernel name too long");
    int64_t t, s, r;
    if (!parse_int(w[2], 1, 1024, &t))
        return bad(P, "threads must be 1..1024");
    if (!parse_int(w[4], 0, INT32_MAX, &s))
        return bad(P, "smem must be a non-negative byte count");
    if (!parse_int(w[6], -1, 255, &r))
        return bad(P, "regs must be -1..255");
    for (int i = 0; i < P->m->nk; i++)
        if (strcmp(P->m->k[i].name, w[0]) == 0)
            return bad(P, "kernel defined twice");
    rt_kernel_meta *k = grow(P->m->k, P->m->nk, sizeof *k);
    if (!k)
        return rt_error(TILERT_ERR_NO_MEMORY, "out of memory reading metadata");
    P->m->k = k;
    P->cur = &k[P->m->nk++];
    memset(P->cur, 0, sizeof *P->cur);
    strcpy(P->cur->name, w[0]);
    P->cur->threads = (int)t, P->cur->smem_bytes = (int)s, P->cur->regs = (int)r;
    return TILERT_OK;
}

static tilert_status arg_line(Parser *P, char *rest)
{
    char *w[5];
    rt_kernel_meta *k = P->cur;
    if (split(rest, w, 4) != 4)
        return bad(P, "expected //@arg NAME ptr|size|scalar TYPE ALIGN");
    if (k->nargs == RT_MAX_ARGS)
        return bad(P, "too many arguments");
    rt_arg_meta a;
    memset(&a, 0, sizeof a);
    if (strlen(w[0]) >= RT_MAX_NAME)
        return bad(P, "argument name too long");
    strcpy(a.name, w[0]);
    if (strcmp(w[1], "ptr") == 0)
        a.cls = RT_ARG_PTR;
    else if (strcmp(w[1], "size") == 0)
        a.cls = RT_ARG_SIZE;
    else if (strcmp(w[1], "scalar") == 0)
        a.cls = RT_ARG_SCALAR;
    else
        return bad(P, "argument kind must be ptr, size or scalar");
    if (!parse_type(w[2], &a.type))
        return bad(P, "unknown type");
    if (a.cls == RT_ARG_SIZE && a.type != RT_I32)
        return bad(P, "size arguments are i32");
    int64_t al;
    if (!parse_int(w[3], 1, 256, &al) || (al & (al - 1)))
        return bad(P, "alignment must be a power of two, 1..256");
    a.align = (int)al;
    rt_arg_meta *v = grow(k->args, k->nargs, sizeof *v);
    if (!v)
        return rt_error(TILERT_ERR_NO_MEMORY, "out of memory reading metadata");
    k->args = v;
    k->args[k->nargs++] = a;
    return TILERT_OK;
}

static tilert_status rpn_field(Parser *P, const char *text, rpn_expr *e)
{
    /* The arguments are all declared before grid/assume lines; aN is checked against them. */
    if (rt_rpn_parse(text, P->cur->nargs, e) != TILERT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", tilert_last_error());
        return bad(P, why);
    }
    return TILERT_OK;
}

static tilert_status assume_line(Parser *P, char *rest)
{
    rt_kernel_meta *k = P->cur;
    /* " | " cannot occur inside RPN (its tokens have no lone '|'), so the first one splits. */
    char *sep = strstr(rest, " | ");
    if (!sep)
        return bad(P, "expected //@assume RPN | TEXT");
    *sep = 0;
    const char *text = sep + 3;
    while (*text == ' ')
        text++;
    if (!*text)
        return bad(P, "assume without its source text");
    rpn_expr *e = grow(k->assume, k->nassumes, sizeof *e);
    if (!e)
        return rt_error(TILERT_ERR_NO_MEMORY, "out of memory reading metadata");
    k->assume = e;
    char **t = grow(k->assume_text, k->nassumes, sizeof *t);
    if (!t)
        return rt_error(TILERT_ERR_NO_MEMORY, "out of memory reading metadata");
    k->assume_text = t;
    tilert_status s = rpn_field(P, rest, &k->assume[k->nassumes]);
    if (s)
        return s;
    char *copy = malloc(strlen(text) + 1);
    if (!copy)
        return rt_error(TILERT_ERR_NO_MEMORY, "out of memory reading metadata");
    strcpy(copy, text);
    k->assume_text[k->nassumes++] = copy;
    return TILERT_OK;
}

static tilert_status meta_line(Parser *P, char *body)
{
    char *rest = body + strcspn(body, " \t");
    char *word = body;
    if (*rest)
        *rest++ = 0;
    if (strcmp(word, "tilec") == 0) {
        char *w[2];
        if (split(rest, w, 1) != 1 || strcmp(w[0], "1"))
            return bad(P, "unsupported metadata version (this runtime reads //@tilec 1)");
        return TILERT_OK;
    }
    if (strcmp(word, "kernel") == 0)
        return kernel_line(P, rest);
    if (!P->cur)
        return bad(P, "outside a //@kernel ... //@end group");
    if (strcmp(word, "arg") == 0) {
        if (P->cur->ngrid || P->cur->nassumes)
            return bad(P, "//@arg after //@grid or //@assume");
        return arg_line(P, rest);
    }
    if (strcmp(word, "grid") == 0) {
        if (P->cur->ngrid == RT_MAX_GRID)
            return bad(P, "more than 3 grid dimensions");
        return rpn_field(P, rest, &P->cur->grid[P->cur->ngrid++]);
    }
    if (strcmp(word, "assume") == 0)
        return assume_line(P, rest);
    if (strcmp(word, "end") == 0) {
        char *w[1];
        if (split(rest, w, 0) != 0)
            return bad(P, "junk after //@end");
        P->cur = NULL;
        return TILERT_OK;
    }
    return bad(P, "unknown metadata line");
}

void rt_meta_free(rt_meta *m)
{
    for (int i = 0; i < m->nk; i++) {
        rt_kernel_meta *k = &m->k[i];
        for (int j = 0; j < k->nassumes; j++)
            free(k->assume_text[j]);
        free(k->assume_text);
        free(k->assume);
        free(k->args);
    }
    free(m->k);
    m->k = NULL;
    m->nk = 0;
}

tilert_status rt_meta_parse(const char *text, rt_meta *out)
{
    Parser P = {out, NULL, 0, ""};
    char line[LINE_MAX_LEN];
    out->k = NULL;
    out->nk = 0;
    tilert_status s = TILERT_OK;
    if (!text)
        return rt_error(TILERT_ERR_BAD_META, "no metadata text");
    for (const char *p = text; *p && s == TILERT_OK;) {
        size_t len = strcspn(p, "\n");
        const char *next = p + len + (p[len] == '\n');
        P.lineno++;
        const char *q = p;
        while (q < p + len && (*q == ' ' || *q == '\t'))
            q++;
        if (p + len - q >= 3 && memcmp(q, "//@", 3) == 0) {
            size_t n = (size_t)(p + len - q);
            if (n >= sizeof line) {
                P.line = "(line too long)";
                s = bad(&P, "metadata line longer than 4095 bytes");
                break;
            }
            memcpy(line, q, n);
            line[n] = 0;
            while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
                line[--n] = 0;
            char work[LINE_MAX_LEN];
            memcpy(work, line, n + 1);
            P.line = line;
            s = meta_line(&P, work + 3);
        }
        p = next;
    }
    if (s == TILERT_OK && P.cur)
        s = rt_error(TILERT_ERR_BAD_META, "metadata: kernel %s has no //@end", P.cur->name);
    if (s == TILERT_OK && out->nk == 0)
        s = rt_error(TILERT_ERR_BAD_META,
                     "no //@tilec metadata (//@kernel ... //@end): was this PTX made by tilec?");
    if (s != TILERT_OK)
        rt_meta_free(out);
    return s;
}
