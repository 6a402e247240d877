/* interp_run.c: `tilec --run`, a kernel run on the CPU from the command line. Sizes and scalar
 * parameters come from --set NAME=VALUE; every tensor is allocated for its extent and filled
 * with seeded random values (or read from a raw file with --input NAME=FILE); after the run
 * each tensor is printed (the first --show elements) or written raw with --output NAME=FILE.
 * Raw files hold the tensor's elements as the kernel sees memory: row-major over its extent
 * for default strides, the strided extent otherwise. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"

enum { EXIT_RUN = 1, EXIT_USAGE = 2, MAX_PAIRS = 64 };

typedef struct { const char *name, *value; bool used; } Pair;

typedef struct {
    const char *input, *kernel;
    Define defs[64]; int ndefs;
    Pair sets[MAX_PAIRS]; int nsets;
    Pair inputs[MAX_PAIRS]; int ninputs;
    Pair outputs[MAX_PAIRS]; int noutputs;
    uint64_t seed;
    long show;
    InterpOptions opt;
} RunCli;

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "tilec: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run tilec --help for usage)\n");
    return EXIT_USAGE;
}

static bool split_pair(char *s, Pair *p)
{
    char *eq = s ? strchr(s, '=') : NULL;
    if (!eq || eq == s || !eq[1])
        return false;
    *eq = 0;
    p->name = s;
    p->value = eq + 1;
    p->used = false;
    return true;
}

static int parse(RunCli *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    c->seed = 1;
    c->show = 16;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        Pair *list = NULL;
        int *n = NULL;
        if (!strcmp(a, "--run")) {
            continue;
        } else if (!strncmp(a, "--run=", 6)) {
            c->kernel = a + 6;
        } else if (!strcmp(a, "-D") || !strncmp(a, "-D", 2)) {
            char *d = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            Pair p;
            if (!split_pair(d, &p))
                return usage_error("-D needs NAME=VALUE, got '%s'", d ? d : "");
            if (c->ndefs == 64)
                return usage_error("too many -D options%s", "");
            c->defs[c->ndefs++] = (Define){ p.name, p.value, false };
        } else if (!strcmp(a, "--set")) {
            list = c->sets, n = &c->nsets;
        } else if (!strcmp(a, "--input")) {
            list = c->inputs, n = &c->ninputs;
        } else if (!strcmp(a, "--output")) {
            list = c->outputs, n = &c->noutputs;
        } else if (!strncmp(a, "--seed=", 7)) {
            char *end;
            errno = 0;
            c->seed = strtoull(a + 7, &end, 0);
            if (!a[7] || *end || errno)
                return usage_error("--seed needs a number, got '%s'", a + 7);
        } else if (!strncmp(a, "--show=", 7)) {
            char *end;
            c->show = strtol(a + 7, &end, 10);
            if (!a[7] || *end || c->show < 0)
                return usage_error("--show needs a count of elements, got '%s'", a + 7);
        } else if (!strcmp(a, "--print-all-blocks")) {
            c->opt.print_all_blocks = true;
        } else if (!strcmp(a, "-w")) {
            diag.no_warnings = true;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option for --run '%s'", a);
        } else if (c->input) {
            return usage_error("only one input file, got a second: '%s'", a);
        } else {
            c->input = a;
        }
        if (list) {
            char *v = i + 1 < argc ? argv[++i] : NULL;
            if (*n == MAX_PAIRS)
                return usage_error("too many %s options", a);
            if (!split_pair(v, &list[*n]))
                return usage_error("%s needs NAME=VALUE", a);
            (*n)++;
        }
    }
    if (!c->input)
        return usage_error("no input file%s", "");
    return 0;
}

static Pair *find(Pair *list, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(list[i].name, name)) {
            list[i].used = true;
            return &list[i];
        }
    return NULL;
}

/* splitmix64: the fill is reproducible from --seed */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Floats uniform in [-1, 1), integers in [0, 64), bools half true. */
static void fill_random(ElemType t, char *p, size_t n, uint64_t *s)
{
    int es = type_size(t);
    for (size_t i = 0; i < n; i++) {
        Elem x;
        uint64_t r = next(s);
        if (type_is_float(t))
            x.f = round_to_type(t, (float)(r >> 40) * 0x1p-23f - 1.0f);
        else if (t == TY_BOOL)
            x.i = (int64_t)(r >> 63);
        else
            x.i = (int64_t)(r >> 58);
        store_elem(t, p + i * (size_t)es, x);
    }
}

static bool parse_number(const char *s, bool is_float, int64_t *i, double *f)
{
    char *end;
    errno = 0;
    if (is_float) {
        *f = strtod(s, &end);
    } else if (!strcmp(s, "true") || !strcmp(s, "false")) {
        *i = s[0] == 't';
        return true;
    } else {
        *i = strtoll(s, &end, 0);
    }
    return *s && !*end && !errno;
}

static bool is_tensor_param(const Kernel *k, const char *name)
{
    for (int j = 0; j < k->nparams; j++)
        if (k->params[j].is_tensor && !strcmp(k->params[j].name, name))
            return true;
    return false;
}

static void print_tensor(const Kernel *k, int i, const InterpArg *a, int64_t n, long show)
{
    const Param *p = &k->params[i];
    printf("%s: %s[%lld elements]", p->name, type_name(p->type), (long long)n);
    int es = type_size(p->type);
    for (int64_t j = 0; j < n && j < show; j++) {
        fputs(j ? ", " : " = ", stdout);
        print_elem(stdout, p->type, load_elem(p->type, (char *)a->ptr + j * es));
    }
    if (n > show)
        printf(", ... (%lld more)", (long long)(n - show));
    putchar('\n');
}

static int run(RunCli *c, Program *p)
{
    Kernel *k = NULL;
    for (int i = 0; i < p->nkernels; i++)
        if (!c->kernel || !strcmp(p->kernels[i]->name, c->kernel))
            if (!k)
                k = p->kernels[i];
    if (!k || (!c->kernel && p->nkernels > 1)) {
        fprintf(stderr, "tilec: error: %s; --run=NAME picks one of:", k || !c->kernel ?
                "the file has several kernels" : "no kernel of that name");
        for (int i = 0; i < p->nkernels; i++)
            fprintf(stderr, " %s", p->kernels[i]->name);
        fputc('\n', stderr);
        return EXIT_USAGE;
    }
    int nargs = interp_nargs(k);
    InterpArg *args = calloc((size_t)nargs + 1, sizeof *args);
    int64_t *counts = calloc((size_t)nargs + 1, sizeof *counts);
    int rc = 0;
    if (!args || !counts)
        die("out of memory");
    /* sizes and scalars first: tensors' extents need the sizes */
    for (int i = 0; i < nargs && !rc; i++) {
        bool tensor = i < k->nparams && k->params[i].is_tensor;
        if (tensor)
            continue;
        const char *name = interp_arg_name(k, i);
        bool is_float = i < k->nparams && type_is_float(k->params[i].type);
        Pair *v = find(c->sets, c->nsets, name);
        if (!v) {
            fprintf(stderr, "tilec: error: kernel %s needs --set %s=VALUE\n", k->name, name);
            rc = EXIT_USAGE;
        } else if (!parse_number(v->value, is_float, &args[i].i, &args[i].f)) {
            fprintf(stderr, "tilec: error: --set %s=%s: not a%s number\n", name, v->value,
                    is_float ? "" : "n integer");
            rc = EXIT_USAGE;
        }
    }
    for (int i = 0; i < c->nsets && !rc; i++)
        if (!c->sets[i].used) {
            fprintf(stderr, "tilec: error: --set %s: kernel %s has no size or scalar of that name\n",
                    c->sets[i].name, k->name);
            rc = EXIT_USAGE;
        }
    uint64_t seed = c->seed;
    Interp geo;
    memset(&geo, 0, sizeof geo);
    geo.p = p, geo.k = k, geo.args = args;
    for (int i = 0; i < k->nparams && !rc; i++) {
        const Param *pa = &k->params[i];
        if (!pa->is_tensor)
            continue;
        int64_t dim[MAX_TENSOR_RANK], stride[MAX_TENSOR_RANK];
        interp_tensor_geometry(&geo, pa->sym, dim, stride);
        if (geo.failed) {
            rc = EXIT_RUN;
            break;
        }
        /* the elements the extent reaches: 1 + the largest offset */
        int64_t n = 1;
        for (int d = 0; d < pa->rank; d++) {
            if (dim[d] <= 0)
                n = 0;
            else if (n)
                n += (dim[d] - 1) * (stride[d] < 0 ? -stride[d] : stride[d]);
        }
        if (n > (int64_t)1 << 32) {
            fprintf(stderr, "tilec: error: tensor %s would take %lld elements: too large to run\n",
                    pa->name, (long long)n);
            rc = EXIT_RUN;
            break;
        }
        size_t bytes = (size_t)n * (size_t)type_size(pa->type);
        args[i].ptr = calloc(bytes ? bytes : 1, 1);
        args[i].bytes = bytes;
        counts[i] = n;
        if (!args[i].ptr)
            die("out of memory");
        Pair *in = find(c->inputs, c->ninputs, pa->name);
        if (!in) {
            fill_random(pa->type, args[i].ptr, (size_t)n, &seed);
            continue;
        }
        size_t len;
        char *data = read_file_max(in->value, &len, bytes + 1);
        if (!data) {
            rc = EXIT_RUN;
        } else if (len != bytes) {
            fprintf(stderr, "tilec: error: --input %s=%s: the file has %zu bytes, the tensor %zu\n",
                    pa->name, in->value, len, bytes);
            rc = EXIT_RUN;
        } else {
            memcpy(args[i].ptr, data, bytes);
        }
        free(data);
    }
    for (int i = 0; i < c->ninputs && !rc; i++)
        if (!c->inputs[i].used)
            rc = usage_error("--input %s: no tensor parameter of that name", c->inputs[i].name);
    for (int i = 0; i < c->noutputs && !rc; i++)
        if (!is_tensor_param(k, c->outputs[i].name))
            rc = usage_error("--output %s: no tensor parameter of that name", c->outputs[i].name);
    if (!rc && !interp_launch(p, k, args, nargs, &c->opt))
        rc = EXIT_RUN;
    for (int i = 0; i < k->nparams && !rc; i++) {
        if (!k->params[i].is_tensor)
            continue;
        Pair *o = find(c->outputs, c->noutputs, k->params[i].name);
        if (!o) {
            print_tensor(k, i, &args[i], counts[i], c->show);
            continue;
        }
        FILE *f = fopen(o->value, "wb");
        bool ok = f && fwrite(args[i].ptr, 1, args[i].bytes, f) == args[i].bytes;
        if (f)
            ok = fclose(f) == 0 && ok;
        if (!ok) {
            sys_error("cannot write '%s': %s", o->value, strerror(errno));
            rc = EXIT_RUN;
        }
    }
    for (int i = 0; i < nargs; i++)
        free(args[i].ptr);
    free(args);
    free(counts);
    return rc;
}

int interp_run_main(int argc, char **argv)
{
    RunCli c;
    int rc = parse(&c, argc, argv);
    if (rc)
        return rc;
    size_t len;
    char *src = read_file_max(c.input, &len, (size_t)64 << 20);
    if (!src)
        return EXIT_RUN;
    Arena *a = arena_new();
    Program *p = compile_front(a, c.input, src, len, c.defs, c.ndefs);
    rc = p ? run(&c, p) : EXIT_RUN;
    arena_free(a);
    free(src);
    return rc;
}
