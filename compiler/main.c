/* main.c: the tilec command line: options, reading the input, the outputs (the pipeline itself
 * is compile.c's). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tilec.h"
#include "interp.h"

enum { EXIT_COMPILE = 1, EXIT_USAGE = 2 };
enum { MAX_SOURCE = 64 << 20, MAX_ARCHS = 8 };
typedef enum { EMIT_PTX, EMIT_CUBIN, EMIT_C, EMIT_META } EmitKind;


typedef struct {
    const char *input, *output;
    const char *archs[MAX_ARCHS];
    int narchs;
    EmitKind emit;
    bool report, report_json;
    Options opt;           /* opt.no_ptxas: never run ptxas (timing tilec alone, machines without it) */
    Define defs[64];
    int ndefs;
} Cli;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tilec [options] FILE.tile\n"
            "  -o FILE            output file (- for stdout); default: FILE with the extension of --emit\n"
            "  --arch=ARCH[,..]   sm_80 (default), sm_86, sm_89, sm_90, sm_90a, or native (this machine's\n"
            "                     GPU); a list with --emit=c (default there: sm_80,sm_90a)\n"
            "  -D NAME=VALUE      override a const\n"
            "  --emit=KIND        ptx (default), cubin (runs ptxas), c (NAME.c + NAME.h), meta\n"
            "  --report[=json]    per kernel: threads, shared memory, predicted registers, ptxas figures\n"
            "  --no-ptxas         never run ptxas (no cap check, no ptxas figures; not with cubin/c)\n"
            "  -w                 do not print warnings\n"
            "  --dump=STAGE       print the IR after a stage: lower, or a pass (race-check, const-reg-elim,\n"
            "                     arrays-to-local, addr-split (or tir), remat, schedule, regalloc (or alloc))\n"
            "  --max-regs=N       register budget per thread (default: what the block size allows)\n"
            "  -fno-addr-split    compute every address in full (no base + constant offset)\n"
            "  -fno-const-reg-elim  keep stage arrays as arrays\n"
            "  -fno-remat, -fno-schedule  skip the register-pressure passes\n"
            "  -fno-reg-cap       let ptxas use any number of registers (no .maxnreg at the occupancy\n"
            "                     boundary the predicted demand allows)\n"
            "  --version, --help\n"
            "usage: tilec --run[=KERNEL] [options] FILE.tile: run a kernel on the CPU (interpreter)\n"
            "  --set NAME=VALUE   a size or scalar parameter (every one is needed)\n"
            "  --input NAME=FILE  a tensor's elements, raw (default: seeded random values)\n"
            "  --output NAME=FILE write a tensor's elements raw after the run (default: print them)\n"
            "  --seed=N           the random fill's seed (default 1)\n"
            "  --show=N           elements printed of each tensor (default 16)\n"
            "  --print-all-blocks print() in every block, not only block (0, 0, 0)\n"
            "  -D NAME=VALUE, -w  as when compiling\n");
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "tilec: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run tilec --help for usage)\n");
    return EXIT_USAGE;
}

static bool known_arch(const char *a) { return target_of(a) != NULL; }

/* The order of target.c's table: --emit=c lists the architectures it embeds in it. */
static int arch_rank(const char *a)
{
    for (int i = 0; i < target_count(); i++)
        if (!strcmp(a, target_at(i)->name))
            return i;
    return 99;
}

static int parse_args(Cli *cli, int argc, char **argv)
{
    memset(cli, 0, sizeof *cli);
    cli->opt.addr_split = true;
    cli->opt.const_reg_elim = true;
    cli->opt.remat = cli->opt.schedule = cli->opt.reg_cap = true;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--version")) {
            printf("tilec %s\n", TILEC_VERSION);
            exit(0);
        } else if (!strcmp(a, "-o")) {
            if (++i >= argc)
                return usage_error("-o needs a file name%s", "");
            cli->output = argv[i];
        } else if (!strncmp(a, "-D", 2)) {
            char *d = a[2] ? a + 2 : (++i < argc ? argv[i] : NULL);
            char *eq = d ? strchr(d, '=') : NULL;
            if (!eq || eq == d)
                return usage_error("-D needs NAME=VALUE, got '%s'", d ? d : "");
            if (cli->ndefs == 64)
                return usage_error("too many -D options%s", "");
            *eq = 0;
            cli->defs[cli->ndefs++] = (Define){ d, eq + 1, false };
        } else if (!strncmp(a, "--arch=", 7)) {
            char *list = a + 7;
            cli->narchs = 0;
            for (char *s = strtok(list, ","); s; s = strtok(NULL, ",")) {
                if (!strcmp(s, "native")) {
                    /* the GPU of this machine, else the portable default (native_arch.c) */
                    char why[128];
                    const char *n = native_arch(why, sizeof why);
                    if (!n) {
                        n = target_default()->name;
                        fprintf(stderr, "tilec: note: --arch=native: %s; compiling for %s\n", why, n);
                    }
                    s = (char *)n;
                }
                if (!known_arch(s))
                    return usage_error("unknown architecture '%s' (sm_80, sm_86, sm_89, sm_90, sm_90a, native)", s);
                if (cli->narchs == MAX_ARCHS)
                    return usage_error("too many architectures%s", "");
                cli->archs[cli->narchs++] = s;
            }
            if (!cli->narchs)
                return usage_error("--arch needs an architecture%s", "");
        } else if (!strncmp(a, "--emit=", 7)) {
            const char *k = a + 7;
            if (!strcmp(k, "ptx")) cli->emit = EMIT_PTX;
            else if (!strcmp(k, "cubin")) cli->emit = EMIT_CUBIN;
            else if (!strcmp(k, "c")) cli->emit = EMIT_C;
            else if (!strcmp(k, "meta")) cli->emit = EMIT_META;
            else return usage_error("unknown --emit kind '%s' (ptx, cubin, c, meta)", k);
        } else if (!strcmp(a, "--verify-ir")) {
            cli->opt.verify_ir = true;     /* for tests: not in --help */
        } else if (!strcmp(a, "--no-ptxas")) {
            cli->opt.no_ptxas = true;
        } else if (!strcmp(a, "-w")) {
            diag.no_warnings = true;
        } else if (!strcmp(a, "--report")) {
            cli->report = true;
        } else if (!strcmp(a, "--report=json")) {
            cli->report = cli->report_json = true;
        } else if (!strncmp(a, "--dump=", 7)) {
            cli->opt.dump = a + 7;
            if (!pass_dump_point(cli->opt.dump))
                return usage_error("unknown --dump stage '%s' (lower, race-check, const-reg-elim, "
                                   "arrays-to-local, addr-split, remat, schedule, regalloc; tir, alloc)",
                                   cli->opt.dump);
        } else if (!strncmp(a, "--max-regs=", 11)) {
            char *end;
            long v = strtol(a + 11, &end, 10);
            if (*end || v < 16 || v > 255)
                return usage_error("--max-regs needs a number from 16 to 255, got '%s'", a + 11);
            cli->opt.max_regs = (int)v;
        } else if (!strcmp(a, "-freg-cap")) {
            cli->opt.reg_cap = true;
        } else if (!strcmp(a, "-fno-reg-cap")) {
            cli->opt.reg_cap = false;
        } else if (!strncmp(a, "-fno-", 5) && pass_disable(&cli->opt, a + 5)) {
            /* a pass of compile.c's table, off */
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a);
        } else {
            if (cli->input)
                return usage_error("only one input file, got a second: '%s'", a);
            cli->input = a;
        }
    }
    if (!cli->input)
        return usage_error("no input file%s", "");
    if (!cli->narchs) {
        cli->archs[cli->narchs++] = target_default()->name;
        /* launchers carry PTX every GPU runs and Hopper's fast paths, which only sm_90a code has */
        if (cli->emit == EMIT_C)
            cli->archs[cli->narchs++] = "sm_90a";
    }
    /* lowest first: its PTX is the one embedded for JIT on newer devices */
    for (int i = 1; i < cli->narchs; i++)
        for (int j = i; j > 0 && arch_rank(cli->archs[j]) < arch_rank(cli->archs[j - 1]); j--) {
            const char *t = cli->archs[j];
            cli->archs[j] = cli->archs[j - 1];
            cli->archs[j - 1] = t;
        }
    if (cli->narchs > 1 && cli->emit != EMIT_C)
        return usage_error("several architectures need --emit=c%s", "");
    return 0;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        sys_error("cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    Buf b = { 0 };
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b.len + n > MAX_SOURCE) {
            sys_error("'%s' is larger than %d MiB", path, MAX_SOURCE >> 20);
            fclose(f);
            buf_free(&b);
            return NULL;
        }
        if (b.len + n + 1 > b.cap) {
            size_t cap = b.cap ? b.cap * 2 : 65536;
            while (cap < b.len + n + 1)
                cap *= 2;
            char *s = realloc(b.s, cap);
            if (!s)
                die("out of memory");
            b.s = s;
            b.cap = cap;
        }
        memcpy(b.s + b.len, chunk, n);
        b.len += n;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        sys_error("cannot read '%s'", path);
        buf_free(&b);
        return NULL;
    }
    if (!b.s) {
        b.s = malloc(1);
        if (!b.s)
            die("out of memory");
    }
    b.s[b.len] = 0;
    *len = b.len;
    return b.s;
}

/* Writes data to path all at once: to a temporary file beside it, then renamed over it, so a
 * failure never leaves a partial output. "-" is stdout. */
static bool write_output(const char *path, const char *data, size_t len)
{
    if (!strcmp(path, "-")) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout)) {
            sys_error("cannot write to standard output");
            return false;
        }
        return true;
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* a device or pipe (-o /dev/null): write straight to it, never rename over it */
        FILE *f = fopen(path, "wb");
        bool ok = f && fwrite(data, 1, len, f) == len;
        if (f)
            ok = (fclose(f) == 0) && ok;
        if (!ok)
            sys_error("cannot write '%s': %s", path, strerror(errno));
        return ok;
    }
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp)
        die("out of memory");
    snprintf(tmp, n + 16, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        sys_error("cannot write '%s': %s", path, strerror(errno));
        free(tmp);
        return false;
    }
    bool ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path)) {
        sys_error("cannot write '%s': %s", path, strerror(errno));
        remove(tmp);
        free(tmp);
        return false;
    }
    free(tmp);
    return true;
}

static char *replace_ext(Arena *a, const char *path, const char *ext)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot ? (size_t)(dot - base) : strlen(base);
    return arena_printf(a, "%.*s%s", (int)n, base, ext);
}

/* Blocks of this kernel one multiprocessor holds, by the tightest of its limits: registers (in
 * units of 8 a thread), threads, shared memory (per arch), and 32 blocks. */
static int occupancy_by(const char *arch, int threads, int regs, int smem, const char **limit)
{
    const Target *t = target_of(arch) ? target_of(arch) : target_default();
    int sm_threads = t->sm_threads, sm_smem = t->smem_sm;
    int r = (regs + 7) & ~7;
    int b = t->sm_regs / (threads * (r ? r : 8));
    *limit = "registers";
    if (sm_threads / threads < b) {
        b = sm_threads / threads;
        *limit = "threads";
    }
    if (smem > 0 && (sm_smem - 1024) / (smem + 1024) < b) {   /* 1 KiB reserved per block */
        b = (sm_smem - 1024) / (smem + 1024);
        *limit = "shared memory";
    }
    if (b >= 32)
        *limit = "the 32-block limit";
    return b < 32 ? b : 32;
}

static int occupancy(const char *arch, int threads, int regs, int smem)
{
    const char *limit;
    return occupancy_by(arch, threads, regs, smem, &limit);
}

static void print_report(FILE *o, ArchOutput *ao, const char *arch, bool json, bool have_ptxas)
{
    for (int i = 0; i < ao->nk; i++) {
        KernelMeta *m = &ao->metas[i];
        Func *f = ao->funcs[i];
        if (json) {
            fprintf(o, "{\"kernel\": \"%s\", \"arch\": \"%s\", \"threads\": %d, \"smem_bytes\": %d, "
                       "\"predicted_regs\": %d, \"peak_demand\": %d, \"reg_cap\": %d, \"peak_line\": %d, \"budget\": %d",
                    m->name, arch, m->threads, m->smem_bytes, m->pred_regs, f->peak_regs, f->maxnreg, f->peak_line,
                    reg_budget(m->threads));
            fprintf(o, ", \"peak_values\": [");
            for (int j = 0; j < f->ntop; j++)
                fprintf(o, "%s{\"name\": \"%s\", \"regs\": %d}", j ? ", " : "", f->top[j].what, f->top[j].regs);
            fprintf(o, "]");
            fprintf(o, ", \"blocks_per_sm\": %d", occupancy(arch, m->threads, have_ptxas && m->ptxas_regs >= 0 ? m->ptxas_regs : m->pred_regs, m->smem_bytes));
            if (have_ptxas && m->ptxas_regs >= 0)
                fprintf(o, ", \"ptxas_regs\": %d, \"spill_stores\": %d, \"spill_loads\": %d, \"stack_frame\": %d",
                        m->ptxas_regs, m->ptxas_spill_stores, m->ptxas_spill_loads, m->ptxas_stack);
            fprintf(o, "}\n");
            continue;
        }
        fprintf(o, "kernel %s (%s)\n", m->name, arch);
        fprintf(o, "  threads            %d\n", m->threads);
        fprintf(o, "  shared memory      %d bytes\n", m->smem_bytes);
        fprintf(o, "  registers          %d predicted (peak at line %d; budget %d", m->pred_regs, f->peak_line,
                reg_budget(m->threads));
        if (f->maxnreg > 0)
            fprintf(o, "; ptxas capped at %d", f->maxnreg);
        fprintf(o, ")\n");
        for (int j = 0; j < f->ntop; j++)
            fprintf(o, "    %-16s %d register%s at the peak\n", f->top[j].what, f->top[j].regs,
                    f->top[j].regs == 1 ? "" : "s");
        int used = have_ptxas && m->ptxas_regs >= 0 ? m->ptxas_regs : m->pred_regs;
        const char *limit;
        int occ = occupancy_by(arch, m->threads, used, m->smem_bytes, &limit);
        fprintf(o, "  occupancy          %d block%s (%d warps) per multiprocessor at %d registers, "
                   "limited by %s\n", occ, occ == 1 ? "" : "s", occ * m->threads / 32, used, limit);
        /* Say why when ptxas needed more than the prediction allowed for and it cost blocks:
         * the one cause the user cannot see in the numbers above. */
        int want = occupancy(arch, m->threads, f->peak_regs, m->smem_bytes);
        if (occ < want)
            fprintf(o, "  occupancy lost     %d block%s per multiprocessor: %d fit at the %d registers "
                       "predicted, ptxas needs %d; fewer values live at the peak (line %d) win %s back\n",
                    want - occ, want - occ == 1 ? "" : "s", want, f->peak_regs, used, f->peak_line,
                    want - occ == 1 ? "it" : "them");
        if (have_ptxas && m->ptxas_regs >= 0)
            fprintf(o, "  ptxas              %d registers, %d bytes spill stores, %d bytes spill loads, %d bytes stack frame\n",
                    m->ptxas_regs, m->ptxas_spill_stores, m->ptxas_spill_loads, m->ptxas_stack);
        else
            fprintf(o, "  ptxas              not run (ptxas not found)\n");
    }
}

int main(int argc, char **argv)
{
    /* --run: the kernel on the CPU, the interpreter's own command line (interp_run.c) */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--run") || !strncmp(argv[i], "--run=", 6))
            return interp_run_main(argc, argv);
    Cli cli;
    int rc = parse_args(&cli, argc, argv);
    if (rc)
        return rc;
    size_t len;
    char *src = read_file(cli.input, &len);
    if (!src)
        return EXIT_COMPILE;
    Arena *a = arena_new();
    Program *p = compile_front(a, cli.input, src, len, cli.defs, cli.ndefs);
    if (!p) {
        arena_free(a);
        free(src);
        return EXIT_COMPILE;
    }
    int narch = cli.narchs;
    ArchOutput *outs = arena_alloc(a, sizeof(ArchOutput) * (size_t)narch);
    for (int i = 0; i < narch; i++) {
        Options opt = cli.opt;
        opt.arch = cli.archs[i];
        if (!compile_arch(a, p, &opt, &outs[i])) {
            for (int j = 0; j <= i; j++)
                arch_output_free(&outs[j]);
            arena_free(a);
            free(src);
            return EXIT_COMPILE;
        }
    }
    /* assemble when asked for cubins or ptxas' figures */
    Cubin *cubins = arena_alloc(a, sizeof(Cubin) * (size_t)narch);
    int ncubins = 0;
    bool have_ptxas = false;
    bool need_cubin = cli.emit == EMIT_CUBIN || (cli.emit == EMIT_C && narch > 0);
    if (cli.opt.no_ptxas && need_cubin)
        return usage_error("--no-ptxas cannot make cubins (--emit=cubin or --emit=c)%s", "");
    if ((need_cubin || cli.report) && !cli.opt.no_ptxas) {
        for (int i = 0; i < narch; i++) {
            Buf cub = { 0 }, log = { 0 };
            bool missing = false;
            bool ok = ptxas_run(outs[i].ptx.s, cli.archs[i], &cub, &log, &missing);
            if (!ok) {
                if (missing && cli.emit != EMIT_CUBIN) {
                    buf_free(&cub);
                    buf_free(&log);
                    break;   /* no ptxas: C output embeds PTX only; the report says so */
                }
                sys_error("ptxas failed for %s:\n%s", cli.archs[i], log.s ? log.s : "");
                return EXIT_COMPILE;
            }
            have_ptxas = true;
            ptxas_parse_report(log.s ? log.s : "", outs[i].metas, outs[i].nk);
            ptxas_warn_lost(&outs[i], cli.archs[i]);
            cubins[ncubins++] = (Cubin){ cli.archs[i], cub.s, cub.len, outs[i].ptx.s };
            buf_free(&log);
        }
    }
    if (cli.report) {
        FILE *ro = cli.output && !strcmp(cli.output, "-") ? stderr : stdout;
        for (int i = 0; i < narch; i++)
            print_report(ro, &outs[i], cli.archs[i], cli.report_json, have_ptxas);
    }
    bool ok = true;
    const char *out = cli.output;
    switch (cli.emit) {
    case EMIT_PTX:
        if (!out)
            out = replace_ext(a, cli.input, ".ptx");
        if (!cli.report || cli.output)
            ok = write_output(out, outs[0].ptx.s, outs[0].ptx.len);
        break;
    case EMIT_META: {
        Buf m = { 0 };
        for (int i = 0; i < outs[0].nk; i++)
            meta_write(&m, &outs[0].metas[i]);
        ok = write_output(out ? out : replace_ext(a, cli.input, ".meta"), m.s ? m.s : "", m.len);
        buf_free(&m);
        break;
    }
    case EMIT_CUBIN:
        ok = write_output(out ? out : replace_ext(a, cli.input, ".cubin"), cubins[0].data, cubins[0].size);
        break;
    case EMIT_C: {
        const char *cpath = out ? out : replace_ext(a, cli.input, ".c");
        if (!strcmp(cpath, "-")) {
            fprintf(stderr, "tilec: error: --emit=c needs an output file name (NAME.c)\n");
            return EXIT_USAGE;
        }
        size_t n = strlen(cpath);
        const char *stem = n > 2 && !strcmp(cpath + n - 2, ".c") ? arena_strndup(a, cpath, n - 2) : cpath;
        const char *hpath = arena_printf(a, "%s.h", stem);
        const char *slash = strrchr(stem, '/');
        const char *base = slash ? slash + 1 : stem;
        const char *hname = arena_printf(a, "%s.h", base);
        for (const unsigned char *q = (const unsigned char *)hname; *q; q++)
            if (*q == '"' || *q == '\\' || *q < 0x20 || *q >= 0x7f)
                return usage_error("--emit=c: the header '%s' cannot be named in a C #include "
                                   "(quotes, backslashes, control characters and non-ASCII bytes "
                                   "cannot be): choose another output name", hname);
        Buf c = { 0 }, h = { 0 };
        emit_c(&c, &h, base, hname, outs[0].metas, outs[0].nk, outs[0].ptx.s, cubins, ncubins);
        ok = write_output(hpath, h.s, h.len) && write_output(cpath, c.s, c.len);
        buf_free(&c);
        buf_free(&h);
        break;
    }
    }
    for (int i = 0; i < narch; i++)
        arch_output_free(&outs[i]);
    for (int i = 0; i < ncubins; i++)
        free((void *)cubins[i].data);
    arena_free(a);
    free(src);
    return ok ? 0 : EXIT_COMPILE;
}
