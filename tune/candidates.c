/* candidates.c: what tilec-tune tries: the file read and checked once with its own consts, and
 * the candidates, every combination of the -D lists plus the file's own consts (the baseline
 * every time in the table is compared with). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "tilec-tune: error: cannot open '%s': %s\n", path, strerror(errno));
        return NULL;
    }
    Buf b = { 0 };
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_add(&b, chunk, n);
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "tilec-tune: error: cannot read '%s'\n", path);
        buf_free(&b);
        return NULL;
    }
    *len = b.len;
    if (!b.s)
        buf_puts(&b, "");
    return b.s;
}

/* A folded const's value as -D would give it. */
static const char *value_text(Arena *a, const Expr *e)
{
    if (e->kind == E_FLOAT)
        return arena_printf(a, "%.17g", e->fval);
    return arena_printf(a, "%lld", (long long)e->ival);
}

int load_source(const TuneArgs *a, Source *s)
{
    memset(s, 0, sizeof *s);
    s->src = read_all(a->input, &s->len);
    if (!s->src)
        return EXIT_ERROR;
    s->arena = arena_new();
    s->p = compile_front(s->arena, a->input, s->src, s->len, NULL, 0);
    if (!s->p)
        return EXIT_ERROR;
    Program *p = s->p;
    if (!a->kernel && p->nkernels != 1) {
        fprintf(stderr, "tilec-tune: error: %s has %d kernels: name one with --kernel\n", a->input,
                p->nkernels);
        return EXIT_USAGE;
    }
    for (int i = 0; i < p->nkernels; i++)
        if (!a->kernel || !strcmp(p->kernels[i]->name, a->kernel))
            s->k = p->kernels[i];
    if (!s->k) {
        fprintf(stderr, "tilec-tune: error: no kernel '%s' in %s\n", a->kernel, a->input);
        return EXIT_USAGE;
    }
    const Kernel *k = s->k;
    for (int c = 0; c < a->nconsts; c++) {
        for (int i = 0; i < p->nconsts; i++)
            if (!strcmp(p->consts[i].name, a->consts[c].name))
                s->default_value[c] = value_text(s->arena, p->consts[i].value);
        if (!s->default_value[c]) {
            fprintf(stderr, "tilec-tune: error: -D %s: there is no const named '%s' in %s\n",
                    a->consts[c].name, a->consts[c].name, a->input);
            return EXIT_USAGE;
        }
    }
    for (int t = 0; t < a->nsizesets; t++) {
        const SizeSet *set = &a->sizes[t];
        for (int j = 0; j < set->n; j++) {
            bool found = false;
            for (int i = 0; i < k->nsizes && !found; i++)
                found = !strcmp(k->sizes[i]->name, set->name[j]);
            if (!found) {
                fprintf(stderr, "tilec-tune: error: --sizes %s: kernel '%s' has no size '%s'\n",
                        set->text, k->name, set->name[j]);
                return EXIT_USAGE;
            }
        }
        for (int i = 0; i < k->nsizes; i++) {
            bool found = false;
            for (int j = 0; j < set->n && !found; j++)
                found = !strcmp(k->sizes[i]->name, set->name[j]);
            if (!found) {
                fprintf(stderr, "tilec-tune: error: --sizes %s: size '%s' of kernel '%s' is "
                        "missing\n", set->text, k->sizes[i]->name, k->name);
                return EXIT_USAGE;
            }
        }
    }
    for (int j = 0; j < a->nscalars; j++) {
        bool found = false;
        for (int i = 0; i < k->nparams && !found; i++)
            found = !k->params[i].is_tensor && !strcmp(k->params[i].name, a->scalars[j].name);
        if (!found) {
            fprintf(stderr, "tilec-tune: error: --arg %s: kernel '%s' has no scalar parameter "
                    "'%s'\n", a->scalars[j].name, k->name, a->scalars[j].name);
            return EXIT_USAGE;
        }
    }
    return 0;
}

void source_free(Source *s)
{
    arena_free(s->arena);
    free(s->src);
    memset(s, 0, sizeof *s);
}

/* Do two -D values mean the same number? Compared as numbers, so 128 is 0x80. */
static bool same_value(const char *x, const char *y)
{
    char *ex, *ey;
    errno = 0;
    long long a = strtoll(x, &ex, 0), b = strtoll(y, &ey, 0);
    if (!*ex && !*ey && errno == 0)
        return a == b;
    double f = strtod(x, &ex), g = strtod(y, &ey);
    if (!*ex && !*ey)
        return f == g;
    return !strcmp(x, y);
}

static void label(Candidate *c, const TuneArgs *a, const char *const *values)
{
    size_t used = 0;
    c->label[0] = 0;
    for (int i = 0; i < a->nconsts; i++) {
        int w = snprintf(c->label + used, sizeof c->label - used, "%s%s=%s", i ? " " : "",
                         a->consts[i].name, values[i]);
        if (w < 0 || (size_t)w >= sizeof c->label - used)
            break;
        used += (size_t)w;
    }
    if (c->is_default)
        snprintf(c->label + used, sizeof c->label - used, "%s(defaults)", used ? " " : "");
}

Candidate *make_candidates(const TuneArgs *a, const Source *s, int *n)
{
    long total = 1;
    for (int i = 0; i < a->nconsts; i++) {
        total *= a->consts[i].nvalues;
        if (total + 1 > MAX_CANDIDATES) {
            fprintf(stderr, "tilec-tune: error: the -D lists make more than %d candidates: "
                    "give fewer values\n", MAX_CANDIDATES - 1);
            *n = 0;
            return NULL;
        }
    }
    Candidate *cs = calloc((size_t)total + 1, sizeof *cs);
    if (!cs) {
        fprintf(stderr, "tilec-tune: error: out of memory\n");
        *n = 0;
        return NULL;
    }
    int count = 0;
    cs[count].is_default = true;
    for (int i = 0; i < a->nconsts; i++)
        cs[count].values[i] = s->default_value[i];
    label(&cs[count++], a, s->default_value);
    int digit[MAX_CONSTS] = { 0 };
    for (long t = 0; t < total; t++) {
        const char *values[MAX_CONSTS];
        bool is_defaults = true;
        for (int i = 0; i < a->nconsts; i++) {
            values[i] = a->consts[i].values[digit[i]];
            is_defaults = is_defaults && same_value(values[i], s->default_value[i]);
        }
        if (!is_defaults) {
            memcpy(cs[count].values, values, sizeof values);
            label(&cs[count++], a, values);
        }
        for (int i = a->nconsts - 1; i >= 0; i--) {   /* the odometer: the last list fastest */
            if (++digit[i] < a->consts[i].nvalues)
                break;
            digit[i] = 0;
        }
    }
    for (int i = 0; i < count; i++)
        cs[i].alive = true;
    *n = count;
    return cs;
}
