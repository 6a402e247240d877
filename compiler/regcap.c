/* regcap.c: fits the register caps (.maxnreg) regalloc.c chose to what ptxas does with them.
 * Needs: a module's PTX emitted with every kernel allocated. Fills: Func.maxnreg loosened where
 * ptxas spills under it, and the module emitted again with it.
 *
 * The cap rests on an estimate: where ptxas is at hand, check that no kernel spills under it,
 * or whose wgmma ptxas serializes for want of registers (C7511, C7512), and loosen the cap of any that
 * does: to the occupancy boundary, then by one allocation unit (8)
 * a round, the last round to the budget. Small steps keep kernels that differ by a register or
 * two at counts that differ as little. ptxas runs once when nothing spills. A cap under what one
 * instruction needs is raised to what ptxas names (raise_named_cap).
 *
 * ptxas' allocation is not monotone in the cap: a kernel that spills 8 bytes at 248 and at 255
 * registers can fit in 240 (attention_bwd_dkdv_d128 on sm_80, 64-query steps). One that still
 * spills at the budget is tried again below it, an allocation unit a round, down to its
 * predicted demand (search_down), and keeps the highest cap that does not spill, else the
 * budget.
 *
 * ptxas allocates each kernel on its own, so after the first round, which assembles the whole
 * module, a round assembles only the kernels whose caps it changed (ArchOutput.only); the
 * module is written whole once the caps settle. attention_bwd on sm_80, whose dK/dV kernel is
 * loosened 8 registers a round up to the budget: 6.0 s -> 3.6 s. */
#include <stdlib.h>
#include <string.h>
#include "tilec.h"

enum { CAP_ROUNDS = 5, DOWN_ROUNDS = 4 };

/* Whether f puts anything in local memory itself (print's argument buffer, a register tensor
 * kept in .local): then a stack frame is its own; otherwise one is ptxas' doing under the cap,
 * values kept in local memory that its report does not count as spills (softmax_rows written
 * with `assume(N % 4 == 0)`: 24 bytes at a cap of 32, none at the 40 it wanted). */
static bool uses_local(const Func *f)
{
    if (f->print_args_bytes > 0)
        return true;
    for (int i = 0; i < f->arrays.n; i++)
        if (f->arrays.v[i].in_local)
            return true;
    return false;
}

/* ptxas refuses an instruction that needs more registers at once than the cap leaves (a wgmma's
 * accumulators, descriptors and addresses: "Insufficient registers (80) to compile instruction
 * ... in function F. Try to compile with register target of 90 or higher"). The estimate cannot
 * see that need; the cap of F becomes the target ptxas names, rounded up to the allocation unit.
 * False when the log names no such kernel (then the failure is real). */
static bool raise_named_cap(ArchOutput *out, const char *log, const Options *opt)
{
    static const char fn[] = "in function ", tgt[] = "register target of ";
    bool raised = false;
    for (const char *p = log ? strstr(log, "Insufficient registers") : NULL; p;
         p = strstr(p + 1, "Insufficient registers")) {
        const char *name = strstr(p, fn), *num = strstr(p, tgt), *eol = strchr(p, '\n');
        if (!name || !num || (eol && (name > eol || num > eol)))
            continue;
        name += sizeof fn - 1;
        int want = atoi(num + sizeof tgt - 1);
        want = (want + 7) & ~7;
        for (int i = 0; i < out->nk; i++) {
            Func *f = out->funcs[i];
            size_t n = strlen(f->k->name);
            int budget = opt->max_regs ? opt->max_regs : reg_budget(f->threads);
            if (f->maxnreg > 0 && !strncmp(name, f->k->name, n) && (name[n] == '.' || name[n] == ' ') &&
                want > f->maxnreg && want <= budget) {
                f->maxnreg = want;
                raised = true;
            }
        }
    }
    return raised;
}

/* ptxas can also give up on a cap without naming the function: "(C7600) Register allocation
 * failed with register count of '72'" (a wgmma kernel whose demand remat brought to 70). Every
 * kernel of the module ptxas saw (`in`) held at that count is loosened as a spilling one would
 * be; the next round assembles them again. False when no kernel is held there (then the failure
 * is real). */
static bool raise_unnamed_cap(ArchOutput *out, const char *log, const Options *opt, const bool *in)
{
    static const char what[] = "Register allocation failed with register count of '";
    const char *p = log ? strstr(log, what) : NULL;
    if (!p)
        return false;
    int count = atoi(p + sizeof what - 1);
    bool raised = false;
    for (int i = 0; i < out->nk; i++) {
        Func *f = out->funcs[i];
        int budget = opt->max_regs ? opt->max_regs : reg_budget(f->threads);
        if (!in[i] || f->maxnreg != count || count >= budget)
            continue;
        int cap = f->maxnreg < f->reg_boundary ? f->reg_boundary : f->maxnreg + 8;
        f->maxnreg = cap < budget ? cap : budget;
        out->metas[i].pred_regs = f->peak_regs;
        raised = true;
    }
    return raised;
}

/* One step of the search below the budget for a kernel that spilled there. *state is 0 before
 * it starts, then the cap being tried, then -1 once settled. `bad`: the cap just assembled
 * spills (or serializes a wgmma). The first cap that does not spill is kept; past the kernel's
 * predicted demand (rounded to the allocation unit) the search gives up and returns to the
 * budget. */
static void search_down(Func *f, int *state, bool bad, int budget)
{
    if (*state > 0 && !bad) {       /* this cap fits: keep it */
        *state = -1;
        return;
    }
    int floor = (f->peak_regs + 7) & ~7;
    int next = ((*state > 0 ? *state : budget + 1) - 8) & ~7;   /* an allocation unit lower */
    if (next < floor || next <= 0) {
        f->maxnreg = budget;
        *state = -1;
    } else {
        f->maxnreg = next;
        *state = next;
    }
}

bool regcap_fit(ArchOutput *out, const Options *opt,
                void (*emit)(ArchOutput *out, const char *arch))
{
    const char *arch = opt->arch;
    bool capped = false;
    for (int i = 0; i < out->nk; i++)
        capped |= out->funcs[i]->maxnreg > 0;
    if (!capped || !opt->reg_cap || opt->no_ptxas)
        return true;
    /* ptxas stops at the first kernel it cannot compile, so a module of many such kernels takes
       a raise each: those rounds do not count against CAP_ROUNDS (each raises a cap, which the
       budget bounds) */
    int raises = 0;
    /* per kernel: `down` 0 loosening, > 0 the cap tried below the budget, -1 settled below it;
       `redo` its cap changed since ptxas last saw it (so the next round assembles it); `lost`
       ptxas' last word on its wgmma (C7511, C7512). ptxas allocates each kernel on its own, so
       a round assembles only the kernels in `redo` and the others' verdicts stand. */
    int n = out->nk;
    int *down = calloc((size_t)n + 1, sizeof *down);
    bool *redo = calloc((size_t)n + 1, sizeof *redo), *next = calloc((size_t)n + 1, sizeof *next);
    bool *lost = calloc((size_t)n + 1, sizeof *lost);
    if (!down || !redo || !next || !lost)
        die("out of memory");
    bool ok = true, settled = false, partial = false;
    for (int i = 0; i < n; i++)
        redo[i] = true;
    for (int round = 0; ok && round < CAP_ROUNDS + DOWN_ROUNDS; round++) {
        Buf cub = { 0 }, log = { 0 };
        bool missing = false, changed = false;
        bool assembled = ptxas_run(out->ptx.s, arch, &cub, &log, &missing);
        if (!assembled && !missing && raises < 4 * n &&
            (raise_named_cap(out, log.s, opt) || raise_unnamed_cap(out, log.s, opt, redo))) {
            buf_free(&cub);
            buf_free(&log);
            buf_free(&out->ptx);
            out->only = redo;        /* the same kernels again, the raised cap among them */
            emit(out, arch);
            out->only = NULL;
            raises++;
            round--;
            continue;
        }
        if (!assembled && !missing) {
            /* PTX ptxas rejects is never written out, whatever the output asked for */
            sys_error("ptxas failed for %s:\n%s", arch, log.s ? log.s : "");
            buf_free(&cub);
            buf_free(&log);
            ok = false;
            break;
        }
        if (!assembled) {       /* no ptxas: the estimate stands */
            buf_free(&log);
            break;
        }
        ptxas_parse_report(log.s ? log.s : "", out->metas, n);
        for (int i = 0; i < n; i++) {
            Func *f = out->funcs[i];
            KernelMeta *m = &out->metas[i];
            next[i] = false;
            if (redo[i] && !f->reg_limit) {     /* (setmaxnreg's count at entry stays) */
                int budget = opt->max_regs ? opt->max_regs : reg_budget(f->threads);
                bool spills = m->ptxas_spill_stores + m->ptxas_spill_loads > 0 ||
                              (m->ptxas_stack > 0 && !uses_local(f));
                bool bad = spills || m->ptxas_wgmma_serialized;
                int was = f->maxnreg;
                lost[i] = m->ptxas_wgmma_serialized;
                if (f->maxnreg > 0 && (down[i] > 0 || (spills && f->maxnreg == budget && !down[i]))) {
                    search_down(f, &down[i], bad, budget);
                    m->pred_regs = f->peak_regs;
                } else if (f->maxnreg > 0 && f->maxnreg < budget && bad && round < CAP_ROUNDS) {
                    /* up to the occupancy boundary first: ptxas may fit there, and one register
                       more costs a block per multiprocessor */
                    int cap = round + 1 == CAP_ROUNDS ? budget
                            : f->maxnreg < f->reg_boundary ? f->reg_boundary : f->maxnreg + 8;
                    f->maxnreg = cap < budget ? cap : budget;
                    m->pred_regs = f->peak_regs;
                }
                next[i] = f->maxnreg != was;
                changed |= next[i];
            }
            m->ptxas_regs = m->ptxas_spill_stores = m->ptxas_spill_loads = m->ptxas_stack = -1;
            m->ptxas_wgmma_serialized = false;
        }
        buf_free(&cub);
        buf_free(&log);
        if (!changed) {
            settled = true;
            break;
        }
        bool *t = redo;
        redo = next;
        next = t;
        out->only = redo;
        buf_free(&out->ptx);
        emit(out, arch);
        out->only = NULL;
        partial = true;
    }
    /* a search the rounds cut short leaves its cap untried: back to the budget */
    for (int i = 0; ok && i < n; i++)
        if (down[i] > 0) {
            Func *f = out->funcs[i];
            f->maxnreg = opt->max_regs ? opt->max_regs : reg_budget(f->threads);
        }
    if (ok && partial) {        /* the module as it is written: every kernel, at its last cap */
        buf_free(&out->ptx);
        emit(out, arch);
    }
    if (ok && settled) {
        for (int i = 0; i < n; i++)
            out->metas[i].ptxas_wgmma_serialized = lost[i];
        ptxas_warn_lost(out, arch);
    }
    free(down);
    free(redo);
    free(next);
    free(lost);
    return ok;
}
