/* args.c: tilec-tune's command line. Every mistake is a usage error (exit 2) that names the
 * option and what it wanted; nothing is guessed. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune.h"

void tune_usage(FILE *out)
{
    fprintf(out,
            "usage: tilec-tune [options] FILE.tile\n"
            "  --kernel NAME          the kernel to tune (needed when the file has several)\n"
            "  --sizes S=N,S=N,...    a shape to time at: every size of the kernel (repeat for more)\n"
            "  -D NAME=V1,V2,...      values to try for a const (repeat for more consts); every\n"
            "                         combination is a candidate, and so are the file's own consts\n"
            "  --arg NAME=VALUE       a scalar parameter's value (default 1)\n"
            "  -o FILE                write the winner of each shape (for tilec --emit=c --tune=FILE)\n"
            "  --arch=ARCH            target (default: this machine's GPU, else tilec's default)\n"
            "  -j N                   tilec runs at once (default: one per processor)\n"
            "  --reps N               timed launches per candidate and shape, median (default 30)\n"
            "  --warmup N             untimed launches first (default 5)\n"
            "  --device N             CUDA device (default 0)\n"
            "  --no-run               compile and discard only, time nothing\n"
            "  --tilec PATH           the compiler (default: the tilec beside tilec-tune)\n"
            "  --no-progress          no progress bar (it is drawn only on a terminal anyway)\n"
            "  --version, --help\n");
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "tilec-tune: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run tilec-tune --help for usage)\n");
    return EXIT_USAGE;
}

static bool is_name(const char *s, size_t n)
{
    if (n == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_' ||
              (s[i] >= '0' && s[i] <= '9')))
            return false;
    return true;
}

/* A whole decimal number in [lo, hi]. */
static bool parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    if (!*s)
        return false;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* -D NAME=V1,V2,...: the list is cut in place. */
static int parse_const_list(TuneArgs *a, char *d)
{
    char *eq = strchr(d, '=');
    if (!eq || !is_name(d, (size_t)(eq - d)))
        return usage_error("-D needs NAME=VALUE[,VALUE...], got '%s'", d);
    *eq = 0;
    for (int i = 0; i < a->nconsts; i++)
        if (!strcmp(a->consts[i].name, d))
            return usage_error("-D %s given twice: give one list of values", d);
    if (a->nconsts == MAX_CONSTS)
        return usage_error("more than 16 -D lists%s", "");
    ConstList *c = &a->consts[a->nconsts++];
    c->name = d;
    for (char *v = eq + 1;;) {
        char *comma = strchr(v, ',');
        if (comma)
            *comma = 0;
        if (!*v)
            return usage_error("-D %s: an empty value in the list", d);
        if (c->nvalues == MAX_VALUES)
            return usage_error("-D %s: more than 64 values", d);
        for (int i = 0; i < c->nvalues; i++)
            if (!strcmp(c->values[i], v))
                return usage_error("-D %s: a value given twice", d);
        c->values[c->nvalues++] = v;
        if (!comma)
            break;
        v = comma + 1;
    }
    return 0;
}

/* --sizes S=N,S=N,...: sizes are integers from 1 to 2^31 - 1, the range of a size argument. */
static int parse_sizes(TuneArgs *a, char *text)
{
    if (a->nsizesets == MAX_SIZESETS)
        return usage_error("more than 16 --sizes%s", "");
    SizeSet *set = &a->sizes[a->nsizesets++];
    if (strlen(text) >= sizeof set->text)
        return usage_error("--sizes: longer than 255 characters: '%.40s...'", text);
    strcpy(set->text, text);
    for (char *p = text;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        char *eq = strchr(p, '=');
        long v;
        if (!eq || !is_name(p, (size_t)(eq - p)))
            return usage_error("--sizes needs NAME=INT[,NAME=INT...], got '%s'", p);
        *eq = 0;
        if (!parse_int(eq + 1, 1, INT32_MAX, &v))
            return usage_error("--sizes: size %s needs an integer from 1 to 2147483647", p);
        for (int i = 0; i < set->n; i++)
            if (!strcmp(set->name[i], p))
                return usage_error("--sizes: size %s given twice", p);
        if (set->n == TUNE_MAX_SIZES)
            return usage_error("--sizes: more than 8 sizes%s", "");
        set->name[set->n] = p;
        set->value[set->n++] = v;
        if (!comma)
            break;
        p = comma + 1;
    }
    for (int i = 0; i + 1 < a->nsizesets; i++) {
        bool same = a->sizes[i].n == set->n;
        for (int j = 0; j < set->n && same; j++)
            same = !strcmp(a->sizes[i].name[j], set->name[j]) && a->sizes[i].value[j] == set->value[j];
        if (same)
            return usage_error("--sizes %s given twice", set->text);
    }
    return 0;
}

/* The value of an option: "--opt=V" or "--opt V" (then *i moves past it). */
static const char *opt_value(const char *opt, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    size_t n = strlen(opt);
    if (strncmp(a, opt, n))
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] == 0 && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

static bool is_opt(const char *a, const char *opt)
{
    size_t n = strlen(opt);
    return !strncmp(a, opt, n) && (a[n] == 0 || a[n] == '=');
}

int parse_tune_args(TuneArgs *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->reps = 30;
    a->warmup = 5;
    a->progress = isatty(2);
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        const char *v;
        long n;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            tune_usage(stdout);
            return -1;
        } else if (!strcmp(arg, "--version")) {
            printf("tilec-tune %s\n", TILEC_VERSION);
            return -1;
        } else if (!strncmp(arg, "-D", 2)) {
            char *d = arg[2] ? arg + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!d)
                return usage_error("-D needs NAME=VALUE[,VALUE...]%s", "");
            int rc = parse_const_list(a, d);
            if (rc)
                return rc;
        } else if (!strcmp(arg, "-o")) {
            if (++i >= argc)
                return usage_error("-o needs a file name%s", "");
            a->output = argv[i];
        } else if (!strncmp(arg, "-j", 2) && arg[1] == 'j') {
            const char *j = arg[2] ? arg + 2 : (i + 1 < argc ? argv[++i] : "");
            if (!parse_int(j, 1, 1024, &n))
                return usage_error("-j needs a number from 1 to 1024, got '%s'", j);
            a->jobs = (int)n;
        } else if (is_opt(arg, "--kernel")) {
            if (!(v = opt_value("--kernel", argc, argv, &i)) || !is_name(v, strlen(v)))
                return usage_error("--kernel needs a kernel name%s", "");
            a->kernel = v;
        } else if (is_opt(arg, "--sizes")) {
            if (!(v = opt_value("--sizes", argc, argv, &i)))
                return usage_error("--sizes needs NAME=INT[,NAME=INT...]%s", "");
            int rc = parse_sizes(a, (char *)v);
            if (rc)
                return rc;
        } else if (is_opt(arg, "--arg")) {
            char *eq;
            if (!(v = opt_value("--arg", argc, argv, &i)) || !(eq = strchr(v, '=')) ||
                !is_name(v, (size_t)(eq - v)) || !eq[1])
                return usage_error("--arg needs NAME=VALUE, got '%s'", v ? v : "");
            if (a->nscalars == MAX_SCALARS)
                return usage_error("more than 32 --arg%s", "");
            *eq = 0;
            for (int j = 0; j < a->nscalars; j++)
                if (!strcmp(a->scalars[j].name, v))
                    return usage_error("--arg %s given twice", v);
            a->scalars[a->nscalars++] = (ScalarArg){ v, eq + 1 };
        } else if (is_opt(arg, "--arch")) {
            if (!(v = opt_value("--arch", argc, argv, &i)) || !*v)
                return usage_error("--arch needs an architecture%s", "");
            if (!strcmp(v, "native"))
                v = NULL;
            else if (!target_of(v))
                return usage_error("unknown architecture '%s' (sm_80, sm_86, sm_89, sm_90, sm_90a, native)", v);
            a->arch = v;
        } else if (is_opt(arg, "--tilec")) {
            if (!(v = opt_value("--tilec", argc, argv, &i)) || !*v)
                return usage_error("--tilec needs a path%s", "");
            a->tilec = v;
        } else if (is_opt(arg, "--reps") || is_opt(arg, "--warmup") || is_opt(arg, "--device")) {
            const char *name = is_opt(arg, "--reps") ? "--reps" : is_opt(arg, "--warmup") ? "--warmup" : "--device";
            long lo = !strcmp(name, "--reps") ? 1 : 0;
            if (!(v = opt_value(name, argc, argv, &i)) || !parse_int(v, lo, 100000, &n))
                return usage_error(lo ? "%s needs a number from 1 to 100000" : "%s needs a number from 0 to 100000", name);
            *(!strcmp(name, "--reps") ? &a->reps : !strcmp(name, "--warmup") ? &a->warmup : &a->device) = (int)n;
        } else if (!strcmp(arg, "--no-run")) {
            a->no_run = true;
        } else if (!strcmp(arg, "--no-progress")) {
            a->progress = false;
        } else if (arg[0] == '-' && arg[1]) {
            return usage_error("unknown option '%s'", arg);
        } else {
            if (a->input)
                return usage_error("only one input file, got a second: '%s'", arg);
            a->input = arg;
        }
    }
    if (!a->input)
        return usage_error("no input file%s", "");
    if (a->nsizesets == 0 && !a->no_run)
        return usage_error("no --sizes: give the shapes to time at (or --no-run)%s", "");
    if (a->output && a->no_run)
        return usage_error("-o %s: --no-run times nothing, so it has no winners to write", a->output);
    return 0;
}
