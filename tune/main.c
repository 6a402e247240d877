/* main.c: tilec-tune, the autotuner: tries the -D values of a kernel's consts at a few shapes
 * and writes the fastest per shape for `tilec --emit=c --tune=FILE`.
 *
 * The steps, each in its file: the arguments (args.c); the file and the candidates
 * (candidates.c); tilec on every candidate in parallel and the discard step, no GPU needed
 * (compile_jobs.c); the timing on the GPU, skipped without one (timing.c); the table and the
 * winners (table.c). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tune.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* The working directory of the candidates' PTX and reports: made here, removed at the end. */
static bool make_workdir(char *dir, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, size, "%s/tilec-tune.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "tilec-tune: error: cannot make a directory in %s: %s\n",
                tmp && *tmp ? tmp : "/tmp", strerror(errno));
        return false;
    }
    return true;
}

static void remove_workdir(const char *dir, int n)
{
    char path[1100];
    static const char *const ext[] = { "ptx", "json", "err" };
    for (int i = 0; i < n; i++)
        for (int e = 0; e < 3; e++) {
            snprintf(path, sizeof path, "%s/c%04d.%s", dir, i, ext[e]);
            remove(path);
        }
    rmdir(dir);
}

/* Written beside the destination, then renamed over it: never a partial file. */
static bool write_file(const char *path, const Buf *b)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    bool ok = f && fwrite(b->s ? b->s : "", 1, b->len, f) == b->len;
    if (f)
        ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path)) {
        fprintf(stderr, "tilec-tune: error: cannot write '%s': %s\n", path, strerror(errno));
        remove(tmp);
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    TuneArgs a;
    int rc = parse_tune_args(&a, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    double t0 = now();
    Source s;
    rc = load_source(&a, &s);
    if (rc) {
        source_free(&s);
        return rc;
    }
    a.kernel = s.k->name;
    int n;
    Candidate *cs = make_candidates(&a, &s, &n);
    if (!cs) {
        source_free(&s);
        return EXIT_ERROR;
    }
    const char *arch = a.arch;
    if (!arch) {
        char why[128];
        arch = native_arch(why, sizeof why);
        if (!arch) {
            arch = target_default()->name;
            fprintf(stderr, "tilec-tune: note: %s; compiling for %s\n", why, arch);
        }
    }
    char dir[1024];
    if (!make_workdir(dir, sizeof dir)) {
        free(cs);
        source_free(&s);
        return EXIT_ERROR;
    }
    bool ok = compile_candidates(&a, cs, n, dir, arch);
    double t1 = now();
    int alive = 0, no_ptxas = 0;
    for (int c = 0; c < n; c++) {
        alive += cs[c].alive;
        no_ptxas += cs[c].alive && !cs[c].ptxas_ran;
    }
    if (ok && no_ptxas)
        fprintf(stderr, "tilec-tune: note: ptxas did not run (not found): spills are not checked "
                "and registers are tilec's prediction\n");
    bool timed = false, skipped = a.no_run;
    char device[256] = "no GPU";
    if (ok && alive && !a.no_run) {
        ok = time_candidates(&a, &s, cs, n, &skipped, device, sizeof device);
        timed = ok && !skipped;
    }
    double t2 = now();
    if (ok || timed) {
        printf("tilec-tune: kernel %s of %s for %s, %s\n", s.k->name, a.input, arch,
               timed ? device : "not timed");
        print_table(stdout, &a, cs, n, timed);
        printf("%d candidates, %d discarded; compiled in %.1f s", n, n - alive, t1 - t0);
        if (timed)
            printf(", timed in %.1f s", t2 - t1);
        printf("\n");
    }
    if (ok && alive == 0) {
        fprintf(stderr, "tilec-tune: error: every candidate was discarded\n");
        ok = false;
    }
    if (ok && timed) {
        Buf w = { 0 };
        winners_text(&w, &a, &s, cs, n, arch, device);
        for (int t = 0; t < a.nsizesets; t++) {
            int win = winner(cs, n, t);
            if (win < 0)
                fprintf(stderr, "tilec-tune: warning: no candidate ran at %s\n", a.sizes[t].text);
            else
                printf("winner at %s: %s\n", a.sizes[t].text, cs[win].label);
        }
        if (a.output) {
            ok = write_file(a.output, &w);
            if (ok)
                printf("wrote %s\n", a.output);
        }
        buf_free(&w);
    } else if (ok && skipped && a.output) {
        fprintf(stderr, "tilec-tune: note: nothing timed, so %s was not written\n", a.output);
    }
    remove_workdir(dir, n);
    free(cs);
    source_free(&s);
    return ok ? 0 : EXIT_ERROR;
}
