/* table.c: what tilec-tune shows and writes: the progress bar, the results table, the
 * discarded candidates with their reasons, and the winners (the file in compiler/tune_file.c's
 * format). */
#include <string.h>

#include "tune.h"

void progress(bool on, const char *what, int done, int total)
{
    enum { WIDTH = 30 };
    if (!on || total <= 0)
        return;
    int fill = (int)((long)done * WIDTH / total);
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[WIDTH] = 0;
    fprintf(stderr, "\r[%s] %d/%d %s", bar, done, total, what);
    if (done >= total)
        fprintf(stderr, "\n");
    fflush(stderr);
}

int winner(const Candidate *cs, int n, int set)
{
    int best = -1;
    for (int c = 0; c < n; c++)
        if (cs[c].alive && cs[c].ms[set] > 0 && (best < 0 || cs[c].ms[set] < cs[best].ms[set]))
            best = c;
    return best;
}

static int label_width(const Candidate *cs, int n)
{
    int w = 9;
    for (int c = 0; c < n; c++)
        if (cs[c].alive && (int)strlen(cs[c].label) > w)
            w = (int)strlen(cs[c].label);
    return w;
}

void print_table(FILE *out, const TuneArgs *a, const Candidate *cs, int n, bool timed)
{
    int lw = label_width(cs, n), col[MAX_SIZESETS];
    int nsets = timed ? a->nsizesets : 0;
    fprintf(out, "%4s  %-*s %5s %9s", "#", lw, "candidate", "regs", "smem KiB");
    for (int t = 0; t < nsets; t++) {
        col[t] = (int)strlen(a->sizes[t].text);
        if (col[t] < 24)
            col[t] = 24;
        fprintf(out, "  %-*s", col[t], a->sizes[t].text);
    }
    fprintf(out, "\n");
    int win[MAX_SIZESETS];
    for (int t = 0; t < nsets; t++)
        win[t] = winner(cs, n, t);
    for (int c = 0; c < n; c++) {
        if (!cs[c].alive)
            continue;
        fprintf(out, "%4d  %-*s %5d %9.1f", c, lw, cs[c].label, cs[c].regs, cs[c].smem / 1024.0);
        for (int t = 0; t < nsets; t++) {
            char cell[64];
            if (cs[c].ms[t] > 0 && cs[0].ms[t] > 0)
                snprintf(cell, sizeof cell, "%.4f ms %5.2fx%s", cs[c].ms[t], cs[0].ms[t] / cs[c].ms[t],
                         win[t] == c ? " *" : "");
            else if (cs[c].ms[t] > 0)
                snprintf(cell, sizeof cell, "%.4f ms%s", cs[c].ms[t], win[t] == c ? " *" : "");
            else
                snprintf(cell, sizeof cell, "n/a");
            fprintf(out, "  %-*s", col[t], cell);
        }
        fprintf(out, "\n");
    }
    if (nsets)
        fprintf(out, "(medians of %d launches; Nx: the defaults' time over the candidate's, above 1 is "
                "faster; *: the fastest)\n", a->reps);
    bool any = false;
    for (int c = 0; c < n; c++)
        if (!cs[c].alive) {
            if (!any)
                fprintf(out, "discarded:\n");
            any = true;
            fprintf(out, "%4d  %s: %s\n", c, cs[c].label, cs[c].why);
        }
    any = false;
    for (int c = 0; c < n; c++)
        for (int t = 0; t < nsets; t++)
            if (cs[c].alive && cs[c].ms[t] < 0) {
                if (!any)
                    fprintf(out, "not timed at a shape (refused there, or a wrong result):\n");
                any = true;
                fprintf(out, "%4d  at %s: %s\n", c, a->sizes[t].text, cs[c].na[t]);
            }
}

void winners_text(Buf *out, const TuneArgs *a, const Source *s, const Candidate *cs, int n,
                  const char *arch, const char *device)
{
    buf_printf(out, "# tilec-tune winners: kernel %s of %s, %s, %s.\n", s->k->name, a->input, arch,
               device);
    buf_printf(out, "# `tilec --emit=c --tune=FILE %s` compiles one variant per line and\n"
                    "# launchers that pick by shape. Format: KERNEL SIZES CONSTS (- : the file's own).\n",
               a->input);
    for (int t = 0; t < a->nsizesets; t++) {
        int w = winner(cs, n, t);
        if (w < 0)
            continue;
        TuneClass tc;
        memset(&tc, 0, sizeof tc);
        tc.kernel = s->k->name;
        tc.nsizes = a->sizes[t].n;
        for (int i = 0; i < tc.nsizes; i++) {
            tc.size_name[i] = a->sizes[t].name[i];
            tc.size[i] = a->sizes[t].value[i];
        }
        if (!cs[w].is_default) {
            tc.ndefs = a->nconsts;
            for (int i = 0; i < a->nconsts; i++)
                tc.defs[i] = (Define){ a->consts[i].name, cs[w].values[i], false };
        }
        char comment[200];
        if (cs[0].ms[t] > 0)
            snprintf(comment, sizeof comment, "%.4f ms, %.2fx the defaults' %.4f ms", cs[w].ms[t],
                     cs[0].ms[t] / cs[w].ms[t], cs[0].ms[t]);
        else
            snprintf(comment, sizeof comment, "%.4f ms (the defaults do not run here)", cs[w].ms[t]);
        tc.comment = comment;
        tune_file_write(out, &tc, 1);
    }
}
