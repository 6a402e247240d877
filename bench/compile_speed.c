/* compile_speed.c: how long tilec takes per example, next to ptxas on the PTX it wrote.
 * Needs no GPU. Each time is the best of N runs of the whole process (start-up included), which
 * is what a user waits for.
 *
 *   compile_speed [--tilec PATH] [--ptxas PATH] [--arch ARCH] [--out DIR] [--runs N]
 *                 [--csv FILE] FILE.tile...
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Runs argv; quiet: stdout and stderr to /dev/null. Returns the exit status (-1: not run,
 * 127: not found) and the wall time in *ms. */
static int run(char *const argv[], int quiet, double *ms)
{
    double t0 = now_ms();
    pid_t pid = fork();
    int status;
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            if (quiet)
                dup2(null, 2);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    if (waitpid(pid, &status, 0) < 0)
        return -1;
    *ms = now_ms() - t0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* Best of n runs; the first one shows its errors. Returns the first failing status, or 0. */
static int best_of(char *const argv[], int n, double *best)
{
    *best = 1e30;
    for (int i = 0; i < n; i++) {
        double ms = 0;
        int rc = run(argv, i > 0, &ms);
        if (rc != 0)
            return rc;
        if (ms < *best)
            *best = ms;
    }
    return 0;
}

static long count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    long n = 0;
    int c;
    if (!f)
        return -1;
    while ((c = getc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

/* "examples/softmax.tile" -> "softmax" */
static void stem(const char *path, char *out, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strcspn(base, ".");
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), base);
}

int main(int argc, char **argv)
{
    const char *tilec = "build/tilec", *ptxas = "ptxas", *arch = "sm_90a", *out = "build/bench";
    const char *csv_path = NULL;
    int runs = 10, nfiles = 0, failed = 0;
    char **files = calloc((size_t)argc, sizeof *files);
    FILE *csv = NULL;

    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v && !strcmp(argv[i], "--tilec")) { tilec = v; i++; }
        else if (v && !strcmp(argv[i], "--ptxas")) { ptxas = v; i++; }
        else if (v && !strcmp(argv[i], "--arch")) { arch = v; i++; }
        else if (v && !strcmp(argv[i], "--out")) { out = v; i++; }
        else if (v && !strcmp(argv[i], "--runs")) { runs = atoi(v); i++; }
        else if (v && !strcmp(argv[i], "--csv")) { csv_path = v; i++; }
        else if (argv[i][0] == '-') {
            fprintf(stderr, "compile_speed: unknown or incomplete option '%s'\n", argv[i]);
            return 2;
        } else files[nfiles++] = argv[i];
    }
    if (runs < 1)
        runs = 1;
    if (nfiles == 0) {
        fprintf(stderr, "usage: compile_speed [--tilec PATH] [--ptxas PATH] [--arch ARCH] "
                        "[--out DIR] [--runs N] [--csv FILE] FILE.tile...\n");
        return 2;
    }
    mkdir(out, 0777);   /* may exist; a real failure shows up as tilec failing to write */
    if (csv_path && !(csv = fopen(csv_path, "w"))) {
        perror(csv_path);
        return 1;
    }
    if (csv)
        fprintf(csv, "example,arch,tilec_ms,ptxas_ms,ptx_lines,runs\n");
    printf("compile time, best of %d runs (whole process), --arch=%s\n", runs, arch);
    printf("%-14s %10s %10s %10s %10s\n", "example", "tilec ms", "ptxas ms", "ptxas/tilec",
           "PTX lines");
    for (int i = 0; i < nfiles; i++) {
        char name[256], ptx[1024], cubin[1024], archopt[64];
        double tc = 0, tp = 0;
        stem(files[i], name, sizeof name);
        snprintf(ptx, sizeof ptx, "%s/%s.ptx", out, name);
        snprintf(cubin, sizeof cubin, "%s/%s.cubin", out, name);
        snprintf(archopt, sizeof archopt, "--arch=%s", arch);
        /* tilec alone: --no-ptxas skips the register-cap check, which runs ptxas itself */
        char noptxas[] = "--no-ptxas";
        char *tilec_argv[] = { (char *)tilec, archopt, noptxas, "-o", ptx, files[i], NULL };
        int rc = best_of(tilec_argv, runs, &tc);
        if (rc != 0) {
            printf("%-14s tilec failed (exit status %d)\n", name, rc);
            failed++;
            continue;
        }
        snprintf(archopt, sizeof archopt, "-arch=%s", arch);
        char *ptxas_argv[] = { (char *)ptxas, archopt, "-o", cubin, ptx, NULL };
        int prc = best_of(ptxas_argv, runs, &tp);
        long lines = count_lines(ptx);
        if (prc == 0)
            printf("%-14s %10.2f %10.2f %10.1f %10ld\n", name, tc, tp, tp / tc, lines);
        else
            printf("%-14s %10.2f %10s %10s %10ld  (ptxas %s, status %d)\n", name, tc, "-", "-",
                   lines, prc == 127 ? "not found" : "failed", prc);
        if (csv) {
            fprintf(csv, "%s,%s,%.3f,", name, arch, tc);
            if (prc == 0) fprintf(csv, "%.3f", tp);
            fprintf(csv, ",%ld,%d\n", lines, runs);
        }
    }
    if (csv)
        fclose(csv);
    free(files);
    return failed ? 1 : 0;
}
