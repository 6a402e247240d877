/* compile_jobs.c: tilec on every candidate, several at once, and the discard step.
 *
 * Each candidate is one `tilec --emit=ptx --report=json -D ...` process: tilec takes milliseconds,
 * ptxas (which tilec runs for its report) most of the time, so processes in parallel are the
 * whole speed-up, and a separate process keeps one candidate's failure from touching the others.
 * The report is tilec's own (one JSON object per kernel and line), so what the table shows is
 * what `tilec --report` says. Nothing here needs a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tune.h"

const char *tilec_path(const TuneArgs *a, char *buf, size_t size)
{
    if (a->tilec)
        return a->tilec;
    /* tilec-tune is installed (and built) beside tilec */
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n > 0) {
        buf[n] = 0;
        char *slash = strrchr(buf, '/');
        if (slash && (size_t)(slash - buf) + sizeof "/tilec" <= size) {
            strcpy(slash, "/tilec");
            if (access(buf, X_OK) == 0)
                return buf;
        }
    }
    return "tilec";
}

/* The integer after "key": in a JSON line; false when the key is absent. */
static bool json_int(const char *line, const char *key, int *out)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(line, pat);
    if (!p)
        return false;
    char *end;
    long v = strtol(p + strlen(pat), &end, 10);
    if (end == p + strlen(pat))
        return false;
    *out = (int)v;
    return true;
}

bool read_report_line(const char *line, const char *kernel, Candidate *c)
{
    char pat[300];
    snprintf(pat, sizeof pat, "{\"kernel\": \"%s\",", kernel);
    if (strncmp(line, pat, strlen(pat)))
        return false;
    c->regs = c->spill_stores = c->spill_loads = 0;
    bool ok = json_int(line, "threads", &c->threads) && json_int(line, "smem_bytes", &c->smem)
              && json_int(line, "predicted_regs", &c->regs)
              && json_int(line, "blocks_per_sm", &c->blocks_per_sm);
    c->ptxas_ran = json_int(line, "ptxas_regs", &c->regs);
    if (c->ptxas_ran) {
        json_int(line, "spill_stores", &c->spill_stores);
        json_int(line, "spill_loads", &c->spill_loads);
    }
    return ok;
}

/* The first line of the file holding "error", else its first line: what tilec said. */
static void first_error(const char *path, char *out, size_t size)
{
    FILE *f = fopen(path, "r");
    char line[1024], first[1024] = "";
    out[0] = 0;
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!first[0])
            snprintf(first, sizeof first, "%s", line);
        if (strstr(line, "error")) {
            snprintf(out, size, "%s", line);
            break;
        }
    }
    if (!out[0])
        snprintf(out, size, "%s", first);
    fclose(f);
}

/* The discard step on one finished run: tilec's status, then its report. */
static void judge(const TuneArgs *a, Candidate *c, int status, const char *base, const char *arch)
{
    char path[1200], text[1024];
    if (WIFSIGNALED(status)) {
        snprintf(c->why, sizeof c->why, "tilec died of signal %d", WTERMSIG(status));
        c->alive = false;
        return;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(path, sizeof path, "%s.err", base);
        first_error(path, text, sizeof text);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            snprintf(c->why, sizeof c->why, "tilec could not be run: %s", text[0] ? text : "not found");
        else
            snprintf(c->why, sizeof c->why, "does not compile: %s", text[0] ? text : "tilec failed");
        c->alive = false;
        return;
    }
    snprintf(path, sizeof path, "%s.json", base);
    FILE *f = fopen(path, "r");
    char line[8192];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
        found = read_report_line(line, a->kernel ? a->kernel : "", c);
    if (f)
        fclose(f);
    const Target *t = target_of(arch) ? target_of(arch) : target_default();
    if (!found)
        snprintf(c->why, sizeof c->why, "tilec's report has no line for the kernel");
    else if (c->spill_stores > 0 || c->spill_loads > 0)
        snprintf(c->why, sizeof c->why, "spills: %d bytes stored, %d loaded (ptxas, %d registers)",
                 c->spill_stores, c->spill_loads, c->regs);
    else if (c->smem > t->smem_block)
        snprintf(c->why, sizeof c->why, "needs %d bytes of shared memory; a block of %s may have %d",
                 c->smem, t->name, t->smem_block);
    else if (c->blocks_per_sm < 1)
        snprintf(c->why, sizeof c->why, "no block fits a multiprocessor (%d threads, %d registers, "
                 "%d bytes of shared memory)", c->threads, c->regs, c->smem);
    c->alive = found && !c->why[0];
}

/* Starts tilec on candidate c: stdout (the report) to BASE.json, stderr to BASE.err. */
static pid_t start(const TuneArgs *a, const char *tilec, const Candidate *c, const char *base,
                   const char *arch)
{
    char out[1200], err[1200], archopt[64];
    char defs[MAX_CONSTS][600];
    const char *argv[8 + 2 * MAX_CONSTS];
    int n = 0;
    snprintf(out, sizeof out, "%s.json", base);
    snprintf(err, sizeof err, "%s.err", base);
    snprintf(archopt, sizeof archopt, "--arch=%s", arch);
    argv[n++] = tilec;
    argv[n++] = "--emit=ptx";
    argv[n++] = "--report=json";
    argv[n++] = archopt;
    for (int i = 0; i < a->nconsts && !c->is_default; i++) {
        snprintf(defs[i], sizeof defs[i], "%s=%s", a->consts[i].name, c->values[i]);
        argv[n++] = "-D";
        argv[n++] = defs[i];
    }
    argv[n++] = "-o";
    argv[n++] = c->ptx_path;
    argv[n++] = a->input;
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
        _exit(126);
    close(fo);
    close(fe);
    execvp(tilec, (char *const *)argv);
    fprintf(stderr, "cannot run %s: %s\n", tilec, strerror(errno));
    _exit(127);
}

bool compile_candidates(const TuneArgs *a, Candidate *cs, int n, const char *dir, const char *arch)
{
    char tbuf[4096];
    const char *tilec = tilec_path(a, tbuf, sizeof tbuf);
    int jobs = a->jobs;
    if (jobs <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = cpus > 0 ? (int)cpus : 1;
    }
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    if (!pids) {
        fprintf(stderr, "tilec-tune: error: out of memory\n");
        return false;
    }
    int next = 0, running = 0, done = 0;
    bool ok = true;
    char base[1100];
    progress(a->progress, "compiling", 0, n);
    while (done < n) {
        while (ok && running < jobs && next < n) {
            Candidate *c = &cs[next];
            snprintf(base, sizeof base, "%s/c%04d", dir, next);
            snprintf(c->ptx_path, sizeof c->ptx_path, "%s.ptx", base);
            pids[next] = start(a, tilec, c, base, arch);
            if (pids[next] < 0) {
                fprintf(stderr, "tilec-tune: error: cannot start tilec: %s\n", strerror(errno));
                ok = false;
                break;
            }
            next++;
            running++;
        }
        if (running == 0)
            break;
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "tilec-tune: error: waitpid: %s\n", strerror(errno));
            free(pids);
            return false;
        }
        for (int i = 0; i < next; i++)
            if (pids[i] == pid) {
                snprintf(base, sizeof base, "%s/c%04d", dir, i);
                judge(a, &cs[i], status, base, arch);
                pids[i] = 0;
                running--;
                done++;
                progress(a->progress, "compiling", done, n);
            }
    }
    free(pids);
    if (!ok)
        return false;
    /* tilec itself missing: every candidate says so, and nothing else could have gone on */
    int unrunnable = 0;
    for (int i = 0; i < n; i++)
        unrunnable += !strncmp(cs[i].why, "tilec could not be run", 22);
    if (unrunnable == n) {
        fprintf(stderr, "tilec-tune: error: cannot run %s (--tilec PATH names the compiler)\n", tilec);
        return false;
    }
    return true;
}
