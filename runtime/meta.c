/* meta.c: parses the //@tilec metadata block that tilec writes (compiler/meta.c writes it; the
 * format is documented in compiler/tilec.h):
 *
 *   //@tilec 1
 *   //@kernel NAME threads T smem S regs R
 *   //@arg NAME ptr|size|scalar TYPE ALIGN
 *   //@grid RPN
 *   //@assume RPN | TEXT
 *   //@tmap aP f32|tf32|f16|bf16|u8 SWIZZLE BOXROWS BOXCOLS [if-aligned] [rows8] | ROWS_RPN | COLS_RPN | PITCH_RPN
 *           [| EXTENT_RPN | STRIDE_RPN]...   (up to 3 outer dimensions, innermost first)
 *   //@cluster N
 *   //@split D BYTES STEP [cluster N] | TRIPS_RPN
 *   //@end
 *
 * The //@arg lines come first; //@grid, //@assume, //@tmap and //@cluster lines follow in any
 * order. //@cluster asks for clusters of N blocks along x where the grid's x extent is a
 * multiple of N (the kernel works either way: it reads its cluster's size). A
 * //@tmap line describes pointer argument P as a row-major ROWS x COLS tensor whose rows are
 * PITCH elements apart, copied by TMA in boxes of BOXROWS x BOXCOLS elements. The kernel takes
 * one hidden CUtensorMap parameter per //@tmap line, in line order, after its arguments. A map
 * marked if-aligned is made only where the launch's pointer and strides are 16-byte aligned; the
 * kernel tests the same alignment before it uses the map (a store versioned on it). `rows8`
 * lands each 8 rows of a box in shared memory in the order 0 4 1 5 2 6 3 7: the map has two more
 * dimensions (column, row / 4 % 2, row % 4, row / 8, outer...), so BOXROWS and, at launch, ROWS
 * must be multiples of 8 (an if-aligned map is otherwise the stand-in). //@split
 * says the kernel's K loop may be split over grid dimension D (1 or 2, one past those //@grid
 * names): each block writes BYTES of partial sums to a workspace, the loop steps by STEP and runs
 * TRIPS_RPN iterations; the kernel takes two more hidden parameters after the maps, the
 * workspace's address and the slice's length (compiler/lower_split.c, launch.c). `cluster N`: a
 * tile's slices must run as one cluster of at most N (2 to RT_SPLIT_CLUSTER_MAX; the kernel waits
 * for all of them at a cluster barrier), and a launch the driver refuses clustered runs unsplit;
 * a bare `cluster` (earlier compilers) means N = RT_SPLIT_CLUSTER_MAX.
 *
 * Only lines starting with //@ are read, so the same parser takes a whole PTX file or the bare
 * metadata string that accompanies a cubin. Any deviation is an error naming the line: a launch
 * driven by misread metadata would pass wrong arguments silently. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilert_internal.h"

enum { LINE_MAX_LEN = TILERT_MAX_META_LINE + 1 };

static const char *const type_names[RT_TYPE_COUNT] = {
    [RT_BOOL] = "bool", [RT_I32] = "i32", [RT_U32] = "u32", [RT_I64] = "i64",
    [RT_F16] = "f16", [RT_BF16] = "bf16", [RT_F32] = "f32",
    [RT_I8] = "i8", [RT_U8] = "u8", [RT_F8E4M3] = "f8e4m3", [RT_F8E5M2] = "f8e5m2",
};

const char *rt_type_name(rt_type t)
{
    return (unsigned)t < RT_TYPE_COUNT ? type_names[t] : "?";
}

static const struct { const char *name; int size; } tmap_types[RT_TMAP_TYPE_COUNT] = {
    [RT_TMAP_F32] = {"f32", 4}, [RT_TMAP_TF32] = {"tf32", 4},
    [RT_TMAP_F16] = {"f16", 2}, [RT_TMAP_BF16] = {"bf16", 2}, [RT_TMAP_U8] = {"u8", 1},
};

const char *rt_tmap_type_name(rt_tmap_type t)
{
    return (unsigned)t < RT_TMAP_TYPE_COUNT ? tmap_types[t].name : "?";
}

int rt_tmap_elem_size(rt_tmap_type t)
{
    return (unsigned)t < RT_TMAP_TYPE_COUNT ? tmap_types[t].size : 0;
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
        char tok[TILERT_MAX_RPN_TOKEN + 1];
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
    if (a.cls == RT_ARG_SCALAR && a.type >= RT_I8)
        return bad(P, "8-bit types are for tensor arguments only");
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

/* Splits s in place at each " | " into at most max parts; returns the count (max + 1 when there
 * were more). RPN has no lone '|' token, so every " | " separates. */
static int split_bars(char *s, char **part, int max)
{
    int n = 0;
    for (;;) {
        if (n == max)
            return max + 1;
        part[n++] = s;
        char *sep = strstr(s, " | ");
        if (!sep)
            return n;
        *sep = 0;
        s = sep + 3;
    }
}

/* "aN" naming a pointer argument: the memory a tensor map describes. */
static tilert_status tmap_pointer(Parser *P, const char *word, int *arg)
{
    int64_t a;
    if (word[0] != 'a' || word[1] < '0' || word[1] > '9' || !parse_int(word + 1, 0, INT32_MAX, &a))
        return bad(P, "a tensor map's first field must be aN, the argument it maps");
    if (a >= P->cur->nargs)
        return bad(P, "tensor map of a nonexistent argument");
    if (P->cur->args[a].cls != RT_ARG_PTR)
        return bad(P, "tensor map of an argument that is not a pointer");
    *arg = (int)a;
    return TILERT_OK;
}

/* The map's element type, which must be as wide as the pointer's: TMA counts the extents and
 * the pitch in the map's elements, so a map of 2-byte elements over f32 memory would address
 * half-elements. */
static tilert_status tmap_type(Parser *P, const char *word, rt_type pointee, rt_tmap_type *type)
{
    int t;
    for (t = 0; t < RT_TMAP_TYPE_COUNT; t++)
        if (strcmp(word, tmap_types[t].name) == 0)
            break;
    if (t == RT_TMAP_TYPE_COUNT)
        return bad(P, "tensor map type must be f32, tf32, f16, bf16 or u8");
    bool fits = tmap_types[t].size == 4   ? pointee == RT_F32
                : tmap_types[t].size == 2 ? pointee == RT_F16 || pointee == RT_BF16
                                          : pointee >= RT_I8 && pointee <= RT_F8E5M2;
    if (!fits) {
        char why[128];
        snprintf(why, sizeof why, "tensor map type %s does not fit the argument's %s elements",
                 word, rt_type_name(pointee));
        return bad(P, why);
    }
    *type = (rt_tmap_type)t;
    return TILERT_OK;
}

/* Swizzle and box, with the limits cuTensorMapEncodeTiled would otherwise refuse at launch. */
static tilert_status tmap_box(Parser *P, char *const w[3], rt_tmap_meta *t)
{
    int64_t swizzle, rows, cols;
    if (!parse_int(w[0], 0, 128, &swizzle) || (swizzle != 0 && swizzle != 32 && swizzle != 64 &&
                                                swizzle != 128))
        return bad(P, "tensor map swizzle must be 0, 32, 64 or 128");
    if (!parse_int(w[1], 1, 256, &rows) || !parse_int(w[2], 1, 256, &cols))
        return bad(P, "tensor map box dimensions must be 1..256");
    if (t->rows8 && rows % 8)
        return bad(P, "a rows8 tensor map's box rows must be a multiple of 8");
    int64_t row_bytes = cols * rt_tmap_elem_size(t->type);
    if (row_bytes % 16)
        return bad(P, "tensor map box row is not a multiple of 16 bytes");
    if (swizzle && row_bytes > swizzle)
        return bad(P, "tensor map box row is wider than its swizzle");
    t->swizzle = (int)swizzle, t->box_rows = (int)rows, t->box_cols = (int)cols;
    return TILERT_OK;
}

static tilert_status tmap_line(Parser *P, char *rest)
{
    rt_kernel_meta *k = P->cur;
    char *part[4 + 2 * RT_TMAP_MAX_OUTER], *w[7];
    int nparts = split_bars(rest, part, 4 + 2 * RT_TMAP_MAX_OUTER);
    int nw = nparts >= 4 ? split(part[0], w, 7) : 0;
    rt_tmap_meta t;
    memset(&t, 0, sizeof t);
    int at = 5;
    if (nw > at && !strcmp(w[at], "if-aligned"))
        t.if_aligned = true, at++;
    if (nw > at && !strcmp(w[at], "rows8"))
        t.rows8 = true, at++;
    if (nparts < 4 || nparts > 4 + 2 * RT_TMAP_MAX_OUTER || nparts % 2 || nw != at)
        return bad(P, "expected //@tmap aP TYPE SWIZZLE BOXROWS BOXCOLS [if-aligned] [rows8] | ROWS | COLS | "
                      "PITCH [| EXTENT | STRIDE] (at most 3 outer dimensions)");
    /* TMA's rank is at most 5, and a rows8 map's rows take three */
    if (t.rows8 && nparts > 4 + 2)
        return bad(P, "a rows8 tensor map has at most 1 outer dimension");
    if (k->ntmaps == RT_MAX_TMAPS)
        return bad(P, "more than 8 tensor maps");
    tilert_status s;
    if ((s = tmap_pointer(P, w[0], &t.arg)) ||
        (s = tmap_type(P, w[1], k->args[t.arg].type, &t.type)) || (s = tmap_box(P, w + 2, &t)) ||
        (s = rpn_field(P, part[1], &t.rows)) || (s = rpn_field(P, part[2], &t.cols)) ||
        (s = rpn_field(P, part[3], &t.pitch)))
        return s;
    t.nouter = (nparts - 4) / 2;
    for (int j = 0; j < t.nouter; j++)
        if ((s = rpn_field(P, part[4 + 2 * j], &t.outer[j])) ||
            (s = rpn_field(P, part[5 + 2 * j], &t.outer_stride[j])))
            return s;
    rt_tmap_meta *v = grow(k->tmaps, k->ntmaps, sizeof *v);
    if (!v)
        return rt_error(TILERT_ERR_NO_MEMORY, "out of memory reading metadata");
    k->tmaps = v;
    k->tmaps[k->ntmaps++] = t;
    return TILERT_OK;
}

static tilert_status split_line(Parser *P, char *rest)
{
    rt_kernel_meta *k = P->cur;
    char *part[3], *w[6];
    int64_t dim, bytes, step, most = 0;
    int nw = split_bars(rest, part, 2) == 2 ? split(part[0], w, 5) : 0;
    /* a bare `cluster` (PTX of an earlier tilec, whose slices meet in the workspace) allows the
       most slices a cluster takes */
    if (nw == 4 && !strcmp(w[3], "cluster"))
        most = RT_SPLIT_CLUSTER_MAX;
    else if (nw != 3 && (nw != 5 || strcmp(w[3], "cluster") || !parse_int(w[4], 2, RT_SPLIT_CLUSTER_MAX, &most)))
        nw = 0;
    if (!nw || !parse_int(w[0], 1, 2, &dim) || !parse_int(w[1], 4, (int64_t)1 << 30, &bytes) ||
        !parse_int(w[2], 1, INT32_MAX, &step))
        return bad(P, "expected //@split D BYTES STEP [cluster N] | TRIPS (D 1 or 2, N 2 to 8)");
    if (k->split_dim)
        return bad(P, "a second //@split");
    tilert_status s = rpn_field(P, part[1], &k->split_trips);
    if (s)
        return s;
    k->split_dim = (int)dim, k->split_bytes = bytes, k->split_step = step;
    k->split_cluster = nw >= 4;
    k->split_cluster_max = (int)most;
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
        if (P->cur->ngrid || P->cur->nassumes || P->cur->ntmaps || P->cur->cluster || P->cur->split_dim)
            return bad(P, "//@arg after //@grid, //@assume, //@tmap, //@cluster or //@split");
        return arg_line(P, rest);
    }
    if (strcmp(word, "grid") == 0) {
        if (P->cur->ngrid == RT_MAX_GRID)
            return bad(P, "more than 3 grid dimensions");
        return rpn_field(P, rest, &P->cur->grid[P->cur->ngrid++]);
    }
    if (strcmp(word, "assume") == 0)
        return assume_line(P, rest);
    if (strcmp(word, "tmap") == 0)
        return tmap_line(P, rest);
    if (strcmp(word, "cluster") == 0) {
        char *w[2];
        int64_t n;
        if (split(rest, w, 1) != 1 || !parse_int(w[0], 1, 8, &n))
            return bad(P, "expected //@cluster N (1..8)");
        P->cur->cluster = (int)n;
        return TILERT_OK;
    }
    if (strcmp(word, "split") == 0)
        return split_line(P, rest);
    if (strcmp(word, "end") == 0) {
        char *w[1];
        if (split(rest, w, 0) != 0)
            return bad(P, "junk after //@end");
        if (P->cur->split_dim && P->cur->split_dim != P->cur->ngrid)
            return bad(P, "//@split must name the grid dimension after the last //@grid");
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
        free(k->tmaps);
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
