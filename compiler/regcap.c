/* regcap.c: fits the register caps (.maxnreg) regalloc.c chose to what ptxas does with them.
 * Needs: a module's PTX emitted with every kernel allocated. Fills: Func.maxnreg loosened where
 * ptxas spills under it, and the module emitted again with it.
 *
 * The cap rests on an estimate: where ptxas is at hand, check that no kernel spills under it,
 * and loosen the cap of any that does: to the occupancy boundary, then by one allocation unit (8)
 * a round, the last round to the budget. Small steps keep kernels that differ by a register or
 * two at counts that differ as little. ptxas runs once when nothing spills. */
#include "tilec.h"

enum { CAP_ROUNDS = 5 };

bool regcap_fit(ArchOutput *out, const Options *opt,
                void (*emit)(ArchOutput *out, const char *arch))
{
    const char *arch = opt->arch;
    bool capped = false;
    for (int i = 0; i < out->nk; i++)
        capped |= out->funcs[i]->maxnreg > 0;
    for (int round = 0; capped && opt->reg_cap && !opt->no_ptxas && round < CAP_ROUNDS; round++) {
        Buf cub = { 0 }, log = { 0 };
        bool missing = false, changed = false;
        bool assembled = ptxas_run(out->ptx.s, arch, &cub, &log, &missing);
        if (!assembled && !missing) {
            /* PTX ptxas rejects is never written out, whatever the output asked for */
            sys_error("ptxas failed for %s:\n%s", arch, log.s ? log.s : "");
            buf_free(&cub);
            buf_free(&log);
            return false;
        }
        if (assembled) {
            ptxas_parse_report(log.s ? log.s : "", out->metas, out->nk);
            for (int i = 0; i < out->nk; i++) {
                Func *f = out->funcs[i];
                KernelMeta *m = &out->metas[i];
                int budget = opt->max_regs ? opt->max_regs : reg_budget(f->threads);
                if (f->maxnreg > 0 && f->maxnreg < budget &&
                    m->ptxas_spill_stores + m->ptxas_spill_loads > 0) {
                    /* up to the occupancy boundary first: ptxas may fit there, and one register
                       more costs a block per multiprocessor */
                    int cap = round + 1 == CAP_ROUNDS ? budget
                            : f->maxnreg < f->reg_boundary ? f->reg_boundary : f->maxnreg + 8;
                    f->maxnreg = cap < budget ? cap : budget;
                    f->cap_tight = false;
                    m->pred_regs = f->peak_regs;
                    changed = true;
                }
                m->ptxas_regs = m->ptxas_spill_stores = m->ptxas_spill_loads = m->ptxas_stack = -1;
            }
        }
        buf_free(&cub);
        buf_free(&log);
        if (!changed)
            break;
        buf_free(&out->ptx);
        emit(out, arch);
    }
    return true;
}
