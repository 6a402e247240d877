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
    bool default_archs;    /* no --arch: the first is the portable one, raised where types need it */
    const char *tune;      /* --tune=FILE: the winners of tilec-tune (with --emit=c) */
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
            "                     GPU); a list with --emit=c (default there: sm_80,sm_90a); fp8\n"
            "                     tensors raise the default sm_80 to sm_89\n"
            "  -D NAME=VALUE      override a const\n"
            "  --emit=KIND        ptx (default), cubin (runs ptxas), c (NAME.c + NAME.h), meta\n"
            "  --report[=json]    per kernel: threads, shared memory, predicted registers, ptxas figures\n"
            "  --tune=FILE        with --emit=c: one variant per winner of tilec-tune's FILE, launchers\n"
            "                     that dispatch by shape\n"            "  --no-ptxas         never run ptxas (no cap check, no ptxas figures; not with cubin/c)\n"
            "  -w                 do not print warnings\n"
            "  --print-all-blocks print() in every block, not only block (0, 0, 0)\n"
            "  --dump=STAGE       print the IR after a stage: lower, or a pass (wgmma-wait, race-check,\n"
            "                     const-reg-elim, arrays-to-local, addr-split (or tir), remat, schedule,\n"
            "                     regalloc (or alloc))\n"
            "  --max-regs=N       register budget per thread (default: what the block size allows)\n"
            "  -fno-addr-split    compute every address in full (no base + constant offset)\n"
            "  -fno-const-reg-elim  keep stage arrays as arrays\n"
            "  -fno-remat, -fno-schedule  skip the register-pressure passes\n"
            "  -fno-wgmma-wait    wait for each wgmma product where it is issued, not at its first use\n"
            "  -fno-mask-split    make a where()'s mask in every block, not only where its index\n"
            "                     bounds say an element may be false\n"
            "  -fno-tma-store     store product tiles from registers, never staged for a TMA store\n"
            "  -fno-split-k       never split a product's K loop over blocks (by default a launch\n"
            "                     whose grid is short of the GPU splits it: docs/language.md)\n"
            "  -fno-reg-cap       let ptxas use any number of registers (no .maxnreg at the occupancy\n"
            "                     boundary the predicted demand allows)\n"
            "  -fwarp-specialize  a producer warp (or warpgroup) issues a pipelined product's TMA\n"
            "                     copies (sm_90a; the default for tf32 products, -fno- to refuse it;\n"
            "                     docs/language.md, \"Warp specialization\")\n"
            "  -fcluster          ... and pairs of blocks sharing an operand's copies (TMA multicast)\n"
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
    cli->opt.remat = cli->opt.schedule = cli->opt.reg_cap = cli->opt.wgmma_wait = true;
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
        } else if (!strcmp(a, "--print-all-blocks")) {
            cli->opt.print_all_blocks = true;
        } else if (!strcmp(a, "--no-ptxas")) {
            cli->opt.no_ptxas = true;
        } else if (!strcmp(a, "-w")) {
            diag.no_warnings = true;
        } else if (!strcmp(a, "--report")) {
            cli->report = true;
        } else if (!strcmp(a, "--report=json")) {
            cli->report = cli->report_json = true;
        } else if (!strncmp(a, "--tune=", 7)) {
            if (!a[7])
                return usage_error("--tune needs a file name%s", "");
            cli->tune = a + 7;
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
        } else if (!strcmp(a, "-fwarp-specialize")) {
            cli->opt.warp_spec = true;
            cli->opt.no_warp_spec = false;
        } else if (!strcmp(a, "-fno-warp-specialize")) {
            cli->opt.warp_spec = false;
            cli->opt.no_warp_spec = true;
        } else if (!strcmp(a, "-fcluster")) {
            cli->opt.cluster = true;
        } else if (!strcmp(a, "-fno-mask-split")) {
            cli->opt.no_mask_split = true;
        } else if (!strcmp(a, "-fmask-split")) {
            cli->opt.no_mask_split = false;
        } else if (!strcmp(a, "-fno-tma-store")) {
            cli->opt.no_tma_store = true;
        } else if (!strcmp(a, "-ftma-store")) {
            cli->opt.no_tma_store = false;
        } else if (!strcmp(a, "-fno-split-k")) {
            cli->opt.no_split_k = true;
        } else if (!strcmp(a, "-fsplit-k")) {
            cli->opt.no_split_k = false;
        } else if (!strcmp(a, "-fno-cluster")) {
            cli->opt.cluster = false;
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
        cli->default_archs = true;
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
    if (cli->tune && cli->emit != EMIT_C)
        return usage_error("--tune=%s needs --emit=c", cli->tune);
    return 0;
}

static char *read_file(const char *path, size_t *len) { return read_file_max(path, len, MAX_SOURCE); }

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
    int r = (regs + 7) & ~7, warps = (threads + 31) / 32;
    /* a quadrant's registers hold whole warps (regalloc.c, reg_budget) */
    int b = 4 * (t->sm_regs / 4 / (32 * (r ? r : 8))) / warps;
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

/* Whether f streams global memory through registers: no tensor-core product and no copy into
 * shared memory (cp.async, TMA), the marks of a kernel that reuses what it loads and whose speed
 * is not a copy's, whatever it has in flight. */
static bool streams(const Func *f)
{
    for (int i = 0; i < f->code.n; i++) {
        int op = f->code.v[i].op;
        if (op == OP_MMA || op == OP_WGMMA || op == OP_CPASYNC || op == OP_TMALOAD)
            return false;
    }
    return true;
}

/* The global bytes a multiprocessor has in flight at `blocks` blocks of f, and, where the target
 * has a measured need and f streams, whether that is below it: the one reason a streaming kernel
 * stays under a copy's speed that no other line of the report shows. */
static void report_inflight(FILE *o, const char *arch, const Func *f, int blocks)
{
    int64_t a_thread = inflight_bytes(f);
    if (a_thread <= 0)
        return;
    const Target *t = target_of(arch) ? target_of(arch) : target_default();
    int64_t sm = a_thread * f->threads * blocks;
    fprintf(o, "  memory in flight   %lld bytes a thread, %lld KiB per multiprocessor at %d block%s\n",
            (long long)a_thread, (long long)(sm >> 10), blocks, blocks == 1 ? "" : "s");
    if (t->inflight_kib > 0 && sm < (int64_t)t->inflight_kib << 10 && streams(f))
        fprintf(o, "    below the %d KiB a streaming kernel needs on %s for a copy's speed: more bytes "
                   "a thread before the first use (wider windows, several in a step), or more blocks "
                   "of fewer threads\n", t->inflight_kib, arch);
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
                    f->reg_limit ? f->reg_limit : reg_budget(m->threads));
            fprintf(o, ", \"in_shared_memory\": [");
            for (int j = 0; j < m->ndemoted; j++)
                fprintf(o, "%s\"%s\"", j ? ", " : "", m->demoted[j]);
            fprintf(o, "]");
            fprintf(o, ", \"peak_values\": [");
            for (int j = 0; j < f->ntop; j++)
                fprintf(o, "%s{\"name\": \"%s\", \"regs\": %d}", j ? ", " : "", f->top[j].what, f->top[j].regs);
            fprintf(o, "]");
            fprintf(o, ", \"stored_by_tma\": [");
            for (int j = 0; j < m->ntma_stored; j++)
                fprintf(o, "%s\"%s\"", j ? ", " : "", m->tma_stored[j]);
            fprintf(o, "], \"stored_by_tma_if_aligned\": [");
            for (int j = 0, n = 0; j < m->ntma_stored; j++)
                if (m->tma_stored_if_aligned[j])
                    fprintf(o, "%s\"%s\"", n++ ? ", " : "", m->tma_stored[j]);
            fprintf(o, "]");
            /* the K loop split over blocks (lower_split.c): the grid dimension, 0 if not */
            fprintf(o, ", \"split_k_dim\": %d, \"split_k_bytes\": %lld, \"split_k_cluster\": %s", m->split_dim,
                    (long long)m->split_bytes, m->split_cluster ? "true" : "false");
            /* each product's place and how it was computed (its texts hold no quote or backslash) */
            fprintf(o, ", \"products\": [");
            for (int j = 0; j < m->nproducts; j++) {
                fprintf(o, "%s{\"line\": %d, \"col\": %d, \"how\": [", j ? ", " : "", m->products[j].line,
                        m->products[j].col);
                for (int h = 0; h < m->products[j].nhow; h++)
                    fprintf(o, "%s\"%s\"", h ? ", " : "", m->products[j].how[h]);
                fprintf(o, "]}");
            }
            fprintf(o, "]");
            int blocks = occupancy(arch, m->threads, have_ptxas && m->ptxas_regs >= 0 ? m->ptxas_regs : m->pred_regs, m->smem_bytes);
            fprintf(o, ", \"blocks_per_sm\": %d, \"inflight_bytes\": %lld", blocks, (long long)inflight_bytes(f));
            if (have_ptxas && m->ptxas_regs >= 0)
                fprintf(o, ", \"ptxas_regs\": %d, \"spill_stores\": %d, \"spill_loads\": %d, \"stack_frame\": %d",
                        m->ptxas_regs, m->ptxas_spill_stores, m->ptxas_spill_loads, m->ptxas_stack);
            fprintf(o, "}\n");
            continue;
        }
        fprintf(o, "kernel %s (%s)\n", m->name, arch);
        if (m->threads != f->k->threads && f->reg_limit)   /* lower_warpspec.c */
            fprintf(o, "  threads            %d (%d and a producer warpgroup that issues the copies and gives "
                       "the others its registers: %d a thread from %d)\n", m->threads, f->k->threads, f->reg_limit,
                    reg_budget(m->threads));
        else if (m->threads != f->k->threads)
            fprintf(o, "  threads            %d (%d and a producer warp that issues the copies)\n", m->threads,
                    f->k->threads);
        else
            fprintf(o, "  threads            %d\n", m->threads);
        fprintf(o, "  shared memory      %d bytes\n", m->smem_bytes);
        for (int j = 0; j < m->ndemoted; j++)
            fprintf(o, "    %-16s in shared memory: the registers cannot hold it\n", m->demoted[j]);
        if (m->ntma_stored) {
            fprintf(o, "  stored by TMA     ");
            for (int j = 0; j < m->ntma_stored; j++)
                fprintf(o, "%s %s%s", j ? "," : "", m->tma_stored[j],
                        m->tma_stored_if_aligned[j] ? " if aligned at launch" : "");
            fprintf(o, " (tiles staged in shared memory, one thread's bulk copies)\n");
        }
        if (m->split_dim)
            fprintf(o, "  K split            over block.%c where the grid is short of the GPU (partial sums: "
                       "%lld bytes a block, added %s)\n", "xyz"[m->split_dim], (long long)m->split_bytes,
                    m->split_cluster ? "in a cluster of a tile's slices" : "in a tree of block pairs");
        fprintf(o, "  registers          %d predicted (peak at line %d; budget %d", m->pred_regs, f->peak_line,
                f->reg_limit ? f->reg_limit : reg_budget(m->threads));
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
        report_inflight(o, arch, f, occ);
        /* each product: how it was computed and fed, the thing to look at when it is slow */
        for (int j = 0; j < m->nproducts; j++)
            for (int h = 0; h < m->products[j].nhow; h++) {
                char at[32] = "";
                if (!h)
                    snprintf(at, sizeof at, "@ at %d:%d", m->products[j].line, m->products[j].col);
                fprintf(o, "  %-18s %s\n", at, m->products[j].how[h]);
            }
        if (have_ptxas && m->ptxas_regs >= 0)
            fprintf(o, "  ptxas              %d registers, %d bytes spill stores, %d bytes spill loads, %d bytes stack frame\n",
                    m->ptxas_regs, m->ptxas_spill_stores, m->ptxas_spill_loads, m->ptxas_stack);
        else
            fprintf(o, "  ptxas              not run (ptxas not found)\n");
    }
}

/* One compilation of the source with one set of -D values: every architecture's output and,
 * where asked for, their cubins. */
typedef struct {
    Program *p;
    ArchOutput outs[MAX_ARCHS];
    int nouts;                 /* of outs, those to free */
    Cubin cubins[MAX_ARCHS];
    int ncubins;
    bool have_ptxas;
} Build;

static void build_free(Build *b)
{
    for (int i = 0; i < b->nouts; i++)
        arch_output_free(&b->outs[i]);
    for (int i = 0; i < b->ncubins; i++)
        free((void *)b->cubins[i].data);
    b->nouts = b->ncubins = 0;
}

/* Compiles src with defs for every architecture of cli, then assembles when cubins or ptxas'
 * figures are wanted. 0, or the exit status (errors reported). */
static int build(Arena *a, Cli *cli, const char *src, size_t len, Define *defs, int ndefs,
                 Build *b)
{
    memset(b, 0, sizeof *b);
    b->p = compile_front(a, cli->input, src, len, defs, ndefs);
    if (!b->p)
        return EXIT_COMPILE;
    /* the default set's portable PTX is the lowest arch every kernel's types run on: sm_89 for
       fp8 tensors, whose conversions and products start there */
    int min_sm = program_min_sm(b->p);
    for (int i = 0; cli->default_archs && target_of(cli->archs[0])->sm < min_sm && i < target_count(); i++)
        if (target_at(i)->sm >= min_sm)
            cli->archs[0] = target_at(i)->name;
    for (int i = 0; i < cli->narchs; i++) {
        Options opt = cli->opt;
        opt.arch = cli->archs[i];
        b->nouts = i + 1;
        if (!compile_arch(a, b->p, &opt, &b->outs[i]))
            return EXIT_COMPILE;
    }
    bool need_cubin = cli->emit == EMIT_CUBIN || (cli->emit == EMIT_C && cli->narchs > 0);
    if (cli->opt.no_ptxas && need_cubin)
        return usage_error("--no-ptxas cannot make cubins (--emit=cubin or --emit=c)%s", "");
    if ((need_cubin || cli->report) && !cli->opt.no_ptxas) {
        for (int i = 0; i < cli->narchs; i++) {
            Buf cub = { 0 }, log = { 0 };
            bool missing = false;
            bool ok = ptxas_run(b->outs[i].ptx.s, cli->archs[i], &cub, &log, &missing);
            if (!ok) {
                if (missing && cli->emit != EMIT_CUBIN) {
                    buf_free(&cub);
                    buf_free(&log);
                    break;   /* no ptxas: C output embeds PTX only; the report says so */
                }
                sys_error("ptxas failed for %s:\n%s", cli->archs[i], log.s ? log.s : "");
                buf_free(&cub);
                buf_free(&log);
                return EXIT_COMPILE;
            }
            b->have_ptxas = true;
            ptxas_parse_report(log.s ? log.s : "", b->outs[i].metas, b->outs[i].nk);
            ptxas_warn_lost(&b->outs[i], cli->archs[i]);
            b->cubins[b->ncubins++] = (Cubin){ cli->archs[i], cub.s, cub.len, b->outs[i].ptx.s };
            buf_free(&log);
        }
    }
    return 0;
}

/* The next line of text at *p (before end) that is not the module's source (`//$` lines, which
 * name the -D values: two sets of values that make the same code are one variant); NULL at the
 * end. *len: its length, newline included. */
static const char *code_line(const char **p, const char *end, size_t *len)
{
    while (*p < end) {
        const char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
        const char *next = nl ? nl + 1 : end;
        *p = next;
        if (next - s >= 3 && !memcmp(s, "//$", 3))
            continue;
        *len = (size_t)(next - s);
        return s;
    }
    return NULL;
}

/* Did two builds make the same code for every architecture? Then they are one variant. */
static bool same_code(const Build *x, const Build *y, int narchs)
{
    for (int i = 0; i < narchs; i++) {
        const char *p = x->outs[i].ptx.s ? x->outs[i].ptx.s : "", *q = y->outs[i].ptx.s ? y->outs[i].ptx.s : "";
        const char *pe = p + x->outs[i].ptx.len, *qe = q + y->outs[i].ptx.len;
        for (;;) {
            size_t la = 0, lb = 0;
            const char *a = code_line(&p, pe, &la), *b = code_line(&q, qe, &lb);
            if (!a || !b) {
                if (a || b)
                    return false;
                break;
            }
            if (la != lb || memcmp(a, b, la))
                return false;
        }
    }
    return true;
}

/* The -D values of a class's variant: the command line's, with the class's replacing those of
 * the same name. */
static int class_defines(const Cli *cli, const TuneClass *tc, Define *out)
{
    int n = 0;
    for (int i = 0; i < cli->ndefs; i++) {
        bool replaced = false;
        for (int j = 0; j < tc->ndefs && !replaced; j++)
            replaced = !strcmp(cli->defs[i].name, tc->defs[j].name);
        if (!replaced)
            out[n++] = (Define){ cli->defs[i].name, cli->defs[i].value, false };
    }
    for (int j = 0; j < tc->ndefs; j++)
        out[n++] = (Define){ tc->defs[j].name, tc->defs[j].value, false };
    return n;
}

/* --tune=FILE: reads the winners, checks them against the base program, and compiles one
 * variant per distinct code they make (a class whose consts make the base's code, or an earlier
 * variant's, shares it). Fills tune and the variants' builds. 0 or the exit status. */
static int build_variants(Arena *a, Cli *cli, const char *src, size_t len, Build *base,
                          EmitTune *tune, Build **vbuilds)
{
    size_t tlen;
    char *text = read_file(cli->tune, &tlen);
    if (!text)
        return EXIT_COMPILE;
    char *ttext = arena_strndup(a, text, tlen);
    free(text);
    diag_reset(cli->tune, ttext, tlen);
    TuneClass *cls;
    int ncls;
    if (!tune_file_parse(a, &cls, &ncls) || !tune_file_check(cls, ncls, base->p))
        return EXIT_COMPILE;
    EmitVariant *vars = arena_alloc(a, sizeof *vars * (size_t)(ncls ? ncls : 1));
    Build *vb = arena_alloc(a, sizeof *vb * (size_t)(ncls ? ncls : 1));
    int nvars = 0;
    for (int c = 0; c < ncls; c++) {
        Define defs[64 + TUNE_MAX_DEFS];
        int ndefs = class_defines(cli, &cls[c], defs);
        Build *b = &vb[nvars];
        int rc = build(a, cli, src, len, defs, ndefs, b);
        if (rc) {
            fprintf(stderr, "%s:%d:%d: note: compiling the variant of this class\n", cli->tune,
                    cls[c].loc.line, cls[c].loc.col);
            build_free(b);
            return rc;
        }
        if (b->outs[0].nk != base->outs[0].nk) {
            fprintf(stderr, "%s:%d:%d: error: these consts change the file's kernels\n",
                    cli->tune, cls[c].loc.line, cls[c].loc.col);
            build_free(b);
            return EXIT_COMPILE;
        }
        int v = same_code(b, base, cli->narchs) ? 0 : -1;
        for (int j = 0; v < 0 && j < nvars; j++)
            if (same_code(b, &vb[j], cli->narchs))
                v = j + 1;
        if (v >= 0) {
            build_free(b);
            cls[c].variant = v;
            continue;
        }
        Buf d = { 0 };
        for (int j = 0; j < cls[c].ndefs; j++)
            buf_printf(&d, "%s%s=%s", j ? "," : "", cls[c].defs[j].name, cls[c].defs[j].value);
        vars[nvars] = (EmitVariant){ arena_strndup(a, d.s ? d.s : "", d.len), b->outs[0].metas,
                                     b->outs[0].nk, b->outs[0].ptx.s, b->cubins, b->ncubins };
        buf_free(&d);
        cls[c].variant = ++nvars;
    }
    *tune = (EmitTune){ vars, nvars, cls, ncls };
    *vbuilds = vb;
    return 0;
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
    Build base;
    EmitTune tune = { 0 };
    Build *vbuilds = NULL;
    rc = build(a, &cli, src, len, cli.defs, cli.ndefs, &base);
    if (!rc && cli.tune)
        rc = build_variants(a, &cli, src, len, &base, &tune, &vbuilds);
    if (rc) {
        build_free(&base);
        for (int i = 0; i < tune.nvariants; i++)
            build_free(&vbuilds[i]);
        arena_free(a);
        free(src);
        return rc;
    }
    ArchOutput *outs = base.outs;
    if (cli.report) {
        FILE *ro = cli.output && !strcmp(cli.output, "-") ? stderr : stdout;
        for (int i = 0; i < cli.narchs; i++)
            print_report(ro, &outs[i], cli.archs[i], cli.report_json, base.have_ptxas);
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
        ok = write_output(out ? out : replace_ext(a, cli.input, ".cubin"), base.cubins[0].data,
                          base.cubins[0].size);
        break;
    case EMIT_C: {
        const char *cpath = out ? out : replace_ext(a, cli.input, ".c");
        if (!strcmp(cpath, "-")) {
            fprintf(stderr, "tilec: error: --emit=c needs an output file name (NAME.c)\n");
            rc = EXIT_USAGE;
            break;
        }
        size_t n = strlen(cpath);
        const char *stem = n > 2 && !strcmp(cpath + n - 2, ".c") ? arena_strndup(a, cpath, n - 2) : cpath;
        const char *hpath = arena_printf(a, "%s.h", stem);
        const char *slash = strrchr(stem, '/');
        const char *base_name = slash ? slash + 1 : stem;
        const char *hname = arena_printf(a, "%s.h", base_name);
        bool bad_name = false;
        for (const unsigned char *q = (const unsigned char *)hname; *q; q++)
            bad_name |= *q == '"' || *q == '\\' || *q < 0x20 || *q >= 0x7f;
        if (bad_name) {
            rc = usage_error("--emit=c: the header '%s' cannot be named in a C #include "
                             "(quotes, backslashes, control characters and non-ASCII bytes "
                             "cannot be): choose another output name", hname);
            break;
        }
        Buf c = { 0 }, h = { 0 };
        emit_c_tuned(&c, &h, base_name, hname, outs[0].metas, outs[0].nk, outs[0].ptx.s,
                     base.cubins, base.ncubins, cli.tune ? &tune : NULL);
        ok = write_output(hpath, h.s, h.len) && write_output(cpath, c.s, c.len);
        buf_free(&c);
        buf_free(&h);
        break;
    }
    }
    build_free(&base);
    for (int i = 0; i < tune.nvariants; i++)
        build_free(&vbuilds[i]);
    arena_free(a);
    free(src);
    return rc ? rc : ok ? 0 : EXIT_COMPILE;
}
