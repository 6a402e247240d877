/* compile.c: the pipeline, one line a stage: source text to a checked program (compile_front),
 * then per architecture lower, passes, allocate, emit (compile_arch). tilec's command line
 * (main.c) and in-process callers (compile_buffer: tests, fuzzing) share it. */
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "tilec.h"

Program *compile_front(Arena *a, const char *file, const char *src, size_t len, Define *defs,
                       int ndefs)
{
    diag_reset(file, src, len);
    Program *p = parse_program(a);
    if (!p || diag.nerrors || !check_program(a, p, defs, ndefs) || diag.nerrors)
        return NULL;
    p->file = file;
    p->src = src;
    p->len = len;
    return p;
}

/* PTX text of the whole module: header, every kernel's metadata block, every kernel. */
static void emit_module(ArchOutput *out, const char *arch)
{
    /* fp8 conversions on sm_89 came with PTX ISA 8.1, mma.sync on fp8 and wgmma on mixed 8-bit
       integers with 8.4; everything else is 8.0 */
    const char *version = "8.0";
    bool prints = false;
    for (int i = 0; i < out->nk; i++)
        for (int j = 0; j < out->funcs[i]->code.n; j++) {
            const Ins *in = &out->funcs[i]->code.v[j];
            if ((in->op == OP_MMA && (in->ty2 == PT_E4M3 || in->ty2 == PT_E5M2)) ||
                (in->op == OP_WGMMA && in->ty2 != in->ty3))
                version = "8.4";
            else if ((in->op == OP_F8WIDEN || in->op == OP_F8NARROW) && strcmp(version, "8.4"))
                version = "8.1";
            prints |= in->op == OP_VPRINTF;
        }
    emit_ptx_header(&out->ptx, arch, version);
    /* the metadata block leads, so the runtime finds it without parsing PTX */
    Buf body = { 0 };
    if (prints)   /* print() calls the CUDA runtime's device printf */
        emit_ptx_vprintf_decl(&body);
    for (int i = 0; i < out->nk; i++) {
        if (out->only && !out->only[i])
            continue;
        meta_write(&out->ptx, &out->metas[i]);
        emit_ptx_kernel(&body, out->funcs[i], &out->metas[i]);
    }
    /* the source, so that the interpreter can run any module (meta_source.c) */
    if (out->source)
        buf_puts(&out->ptx, out->source);
    buf_puts(&out->ptx, "\n");
    if (body.len)
        buf_puts(&out->ptx, body.s);
    buf_free(&body);
}

/* ---- the passes after lowering, one row each */

typedef struct { Arena *a; Func *f; const Options *opt; } PassCtx;

static bool run_wgmma_wait(PassCtx *x) { wgmma_wait_sink(x->f); return true; }
static bool run_race_check(PassCtx *x) { return race_check(x->f); }
static bool run_const_reg_elim(PassCtx *x) { const_reg_elim(x->f); return true; }
static bool run_arrays_to_local(PassCtx *x) { arrays_to_local(x->f); return true; }
static bool run_addr_split(PassCtx *x) { addr_split(x->a, x->f, x->opt->remat); return true; }
static bool run_remat(PassCtx *x) { remat_cheap(x->f); return true; }
static bool run_schedule(PassCtx *x) { schedule_pressure(x->f); return true; }

static bool run_regalloc(PassCtx *x)
{
    int budget = x->opt->max_regs ? x->opt->max_regs : x->f->reg_limit ? x->f->reg_limit : reg_budget(x->f->threads);
    bool ok = regalloc(x->f, budget);
    if (!x->opt->reg_cap)
        x->f->maxnreg = 0;
    if (x->f->reg_limit)      /* setmaxnreg takes effect only from a known count at entry */
        x->f->maxnreg = reg_budget(x->f->threads);
    return ok;
}

enum { ALWAYS = -1 };

/* name: -fno-NAME turns it off where it has a switch (the Options field at `on`: every row of
 * that name), and --dump=NAME prints the IR after it (after its last row); fatal: a failure
 * leaves code no later pass may see. */
static const struct {
    const char *name;
    long on;
    bool fatal;
    bool (*run)(PassCtx *);
} passes[] = {
    /* before the race check, which proves the moved waits still order the shared accesses */
    { "wgmma-wait", offsetof(Options, wgmma_wait), false, run_wgmma_wait },
    { "race-check", ALWAYS, true, run_race_check },
    { "const-reg-elim", offsetof(Options, const_reg_elim), false, run_const_reg_elim },
    { "arrays-to-local", ALWAYS, false, run_arrays_to_local },
    /* Address splitting weighs each longer life against the pressure the allocator will see,
       so the pressure passes go first: on the raw lowered code the peak stands above the one
       they reach, and shares let through that gap cost registers after all. remat runs again
       on the bases the split made; schedule does not (run twice it cost layernorm a block of
       1024 threads per multiprocessor: ptxas 40 registers against 32). */
    { "remat", offsetof(Options, remat), false, run_remat },
    { "schedule", offsetof(Options, schedule), false, run_schedule },
    { "addr-split", offsetof(Options, addr_split), false, run_addr_split },
    { "remat", offsetof(Options, remat), false, run_remat },
    { "regalloc", ALWAYS, false, run_regalloc },
};
enum { NPASSES = sizeof passes / sizeof passes[0] };

/* Earlier names of two dump points: after address splitting, after allocation. */
static const char *dump_alias(const char *name)
{
    return !strcmp(name, "tir") ? "addr-split" : !strcmp(name, "alloc") ? "regalloc" : name;
}

static bool pass_switch(const Options *opt, int i)
{
    return passes[i].on == ALWAYS || *(const bool *)((const char *)opt + passes[i].on);
}

/* Row i is the last of its name. */
static bool last_row(int i)
{
    for (int j = i + 1; j < NPASSES; j++)
        if (!strcmp(passes[j].name, passes[i].name))
            return false;
    return true;
}

bool pass_dump_point(const char *name)
{
    name = dump_alias(name);
    if (!strcmp(name, "lower"))
        return true;
    for (int i = 0; i < NPASSES; i++)
        if (!strcmp(passes[i].name, name))
            return true;
    return false;
}

bool pass_disable(Options *opt, const char *name)
{
    for (int i = 0; i < NPASSES; i++)
        if (!strcmp(passes[i].name, name) && passes[i].on != ALWAYS) {
            *(bool *)((char *)opt + passes[i].on) = false;
            return true;
        }
    return false;
}

/* Every pass of the table on one lowered kernel, in order, with the dump the options ask for
 * after it (a pass that is off still marks its dump point), and with opt->verify_ir the IR
 * checked after lowering and after each pass that ran: malformed IR goes no further. */
bool compile_kernel(Arena *a, Func *f, const Options *opt, bool *drop)
{
    PassCtx x = { a, f, opt };
    const char *dump = opt->dump ? dump_alias(opt->dump) : NULL;
    bool ok = true;
    *drop = false;
    if (dump && !strcmp(dump, "lower"))
        ir_dump(f, stdout);
    if (opt->verify_ir && !ir_verify(f, "lower")) {
        *drop = true;
        return false;
    }
    for (int i = 0; i < NPASSES; i++) {
        bool on = pass_switch(opt, i);
        if (on && !passes[i].run(&x)) {
            ok = false;
            if (passes[i].fatal) {
                *drop = true;
                return false;
            }
        }
        if (dump && !strcmp(dump, passes[i].name) && last_row(i))
            ir_dump(f, stdout);
        if (on && opt->verify_ir && !ir_verify(f, passes[i].name)) {
            *drop = true;
            return false;
        }
    }
    return ok;
}

/* The test suites turn the verifier on for every compilation, in-process ones included. */
static bool verify_ir_from_env(void)
{
    const char *v = getenv("TILEC_VERIFY_IR");
    return v && *v && strcmp(v, "0");
}

/* Lets that may live in shared memory when the registers cannot hold them: tiles of the types
 * a shared var holds. */
enum { DEMOTE_MAX = 16 };

static bool demotable(const Sym *s)
{
    return s->kind == SYM_LET && s->shape.rank >= 1 &&
           (s->type == TY_F32 || s->type == TY_F16 || s->type == TY_BF16 || s->type == TY_I32 || s->type == TY_U32);
}

/* Of the values live at f's peak, largest first, the first that lets hold ("x: f32[8192]"):
 * every let of that name becomes a shared var (restored by the caller). 0: none. */
static int demote_peak(Kernel *k, const Func *f, Sym **demoted, int *n)
{
    for (int j = 0; j < f->ntop; j++) {
        const char *w = f->top[j].what;
        int got = 0;
        for (int i = 0; i < k->nsyms && *n < DEMOTE_MAX; i++) {
            Sym *s = k->syms[i];
            size_t len = strlen(s->name);
            if (!demotable(s) || strncmp(w, s->name, len) || w[len] != ':')
                continue;
            s->kind = SYM_VAR;
            s->is_shared = true;
            demoted[(*n)++] = s;
            got++;
        }
        if (got)
            return got;
    }
    return 0;
}

/* Lowering state is per compilation: an --emit=c list compiles the same checked program once
 * per architecture, and one arch's plans and shared-memory offsets must not leak into the next
 * (nor one try's into the next try of the same kernel). */
static void forget_lowering(Kernel *k)
{
    for (int j = 0; j < k->nsyms; j++)
        k->syms[j]->lower = NULL;
    for (int j = 0; j < k->nviews; j++)
        k->views[j]->lower = NULL;
    for (int j = 0; j < k->nparams; j++)
        k->params[j].sym->lower = NULL;
}

/* A try at a kernel that is to be made again another way, as if it had never happened but for
 * its warnings' count: its messages, its function and what its lowering left on the syntax
 * tree dropped. */
static void forget_try(Kernel *k, Func *f, Buf *cur, const Diag *before)
{
    diag.capture = NULL;
    buf_free(cur);
    *cur = (Buf){ 0 };
    func_free(f);
    int nw = diag.nwarnings;
    diag = *before;
    diag.nwarnings = nw;
    forget_lowering(k);
}

bool compile_arch(Arena *a, Program *p, const Options *options, ArchOutput *out)
{
    Options opt = *options;
    const char *arch = opt.arch;
    opt.verify_ir |= verify_ir_from_env();
    memset(out, 0, sizeof *out);
    out->nk = p->nkernels;
    out->metas = arena_alloc(a, sizeof(KernelMeta) * (size_t)(p->nkernels + 1));
    out->funcs = calloc((size_t)p->nkernels + 1, sizeof(Func *));
    if (!out->funcs)
        die("out of memory");
    bool ok = true;
    for (int i = 0; i < p->nkernels; i++) {
        Kernel *k = p->kernels[i];
        Sym *demoted[DEMOTE_MAX];
        int ndemoted = 0;
        forget_lowering(k);
        /* Over the register budget with tiles a let holds at the peak, the kernel is compiled
           again with those lets in shared memory, until it fits; each try's messages are kept,
           and those of the one that stands (the first, when none fits) are printed. */
        Diag before = diag;
        Buf first = { 0 }, cur = { 0 };
        Func *f = NULL;
        bool kok = true, drop = false;
        Options kopt = opt;
        for (int attempt = 0;; attempt++) {
            diag.capture = &cur;
            f = lower_kernel(a, p, k, &kopt, &out->metas[i]);
            /* a split whose slices meet in a cluster, where the rest of the kernel moves values
               between threads (lower_split.c): compiled again with the tree's sum */
            if (f && f->split_retry && !kopt.split_tree) {
                kopt.split_tree = true;
                forget_try(k, f, &cur, &before);
                attempt--;
                continue;
            }
            if (f) {
                f->sm_threads = (target_of(arch) ? target_of(arch) : target_default())->sm_threads;
                kok = compile_kernel(a, f, &kopt, &drop);
            } else {
                kok = false;
            }
            diag.capture = NULL;
            /* a producer warp's extra threads leave each fewer registers (lower_warpspec.c): a
               kernel they put over the budget is compiled without one, as if never tried */
            if (f && !kok && !drop && f->over_budget && f->threads != k->threads && !kopt.no_warp_spec) {
                kopt.warp_spec = false;
                kopt.no_warp_spec = true;
                forget_try(k, f, &cur, &before);
                attempt--;
                continue;
            }
            bool retry = f && !kok && !drop && f->over_budget && diag.nerrors == before.nerrors + 1 &&
                         demote_peak(k, f, demoted, &ndemoted);
            if (!retry)
                break;
            if (attempt == 0) {
                first = cur;
                cur = (Buf){ 0 };
            } else {
                buf_free(&cur);
            }
            func_free(f);
            int nw = diag.nwarnings;
            diag = before;        /* the try never happened, but for its warnings' count */
            diag.nwarnings = nw;
            for (int j = 0; j < k->nsyms; j++)
                k->syms[j]->lower = NULL;
        }
        if (!kok && first.len) {
            buf_free(&cur);    /* no try fitted: the first one's messages say why */
            cur = first;
            first = (Buf){ 0 };
        } else if (kok) {
            for (int j = 0; j < ndemoted && j < 8; j++)
                out->metas[i].demoted[out->metas[i].ndemoted++] =
                    reg_value_name(a, demoted[j]->name, demoted[j]->type, demoted[j]->shape);
        }
        if (cur.len)
            fputs(cur.s, diag.out ? diag.out : stderr);
        buf_free(&cur);
        buf_free(&first);
        for (int j = 0; j < ndemoted; j++) {   /* the program stays as checked (other archs) */
            demoted[j]->kind = SYM_LET;
            demoted[j]->is_shared = false;
        }
        if (!f) {
            ok = false;
            continue;
        }
        out->funcs[i] = f;
        if (!kok) {
            ok = false;
            if (drop) {
                func_free(f);
                out->funcs[i] = NULL;
                continue;
            }
        }
        /* the demand, which the cap (when binding) can only lower */
        out->metas[i].pred_regs = f->maxnreg > 0 && f->maxnreg < f->peak_regs ? f->maxnreg : f->peak_regs;
    }
    if (!ok)
        return false;
    out->source = meta_source_block(a, p, opt.print_all_blocks);
    emit_module(out, arch);
    return regcap_fit(out, &opt, emit_module);
}

void arch_output_free(ArchOutput *out)
{
    if (out->funcs)
        for (int i = 0; i < out->nk; i++)
            func_free(out->funcs[i]);
    free(out->funcs);
    buf_free(&out->ptx);
    memset(out, 0, sizeof *out);
}

/* Everything after the setjmp: kept in a function of its own so that nothing the jump skips
 * back over lives in compile_buffer's registers. The ArchOutput is the caller's, so that what
 * finished can be freed after a jump. */
static CompileStatus compile_job(Arena *a, const CompileJob *job, ArchOutput *ao,
                                 CompileOutput *out)
{
    Program *p = compile_front(a, job->file, job->src, job->len, job->defs, job->ndefs);
    if (!p || !compile_arch(a, p, &job->opt, ao))
        return COMPILE_ERRORS;
    if (job->c_base) {
        const char *hname = arena_printf(a, "%s.h", job->c_base);
        emit_c(&out->c, &out->h, job->c_base, hname, ao->metas, ao->nk, ao->ptx.s, NULL, 0);
    }
    out->ptx = ao->ptx;
    ao->ptx = (Buf){ 0 };
    return COMPILE_OK;
}

CompileStatus compile_buffer(const CompileJob *job, CompileOutput *out)
{
    memset(out, 0, sizeof *out);
    Arena *a = arena_new();
    ArchOutput *ao = calloc(1, sizeof *ao);
    if (!ao)
        die("out of memory");
    jmp_buf jb, *outer = die_recover;
    CompileStatus st;
    die_recover = &jb;
    if (setjmp(jb))
        st = COMPILE_INTERNAL;
    else
        st = compile_job(a, job, ao, out);
    /* an error that is the compiler's bug (a race in the code it made, IR the verifier refused)
       is internal too */
    if (st == COMPILE_ERRORS && diag.nbugs)
        st = COMPILE_INTERNAL;
    die_recover = outer;
    arch_output_free(ao);
    free(ao);
    arena_free(a);
    if (st != COMPILE_OK)
        compile_output_free(out);
    return st;
}

void compile_output_free(CompileOutput *out)
{
    buf_free(&out->ptx);
    buf_free(&out->c);
    buf_free(&out->h);
}
