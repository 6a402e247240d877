/* ptxas.c: running NVIDIA's assembler on our PTX, and reading its resource report.
 *
 * ptxas is optional: it gives cubins for --emit=c/--emit=cubin and the real register counts for
 * --report. It runs as a child process (posix_spawn, an argument vector, no shell: paths may
 * hold spaces) in a private temporary directory that is removed afterwards. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tilec.h"

#ifndef TILEC_CUDA_HOME
#define TILEC_CUDA_HOME "/usr/local/cuda"
#endif

extern char **environ;

/* $TILEC_PTXAS, else the ptxas configure found (TILEC_PTXAS_DEFAULT) or the one of its toolkit
 * (TILEC_CUDA_HOME), else `ptxas` searched on PATH. */
const char *ptxas_path(void)
{
    const char *env = getenv("TILEC_PTXAS");
    if (env && *env)
        return env;
#ifdef TILEC_PTXAS_DEFAULT
    if (access(TILEC_PTXAS_DEFAULT, X_OK) == 0)
        return TILEC_PTXAS_DEFAULT;
#endif
    static const char toolkit[] = TILEC_CUDA_HOME "/bin/ptxas";
    if (access(toolkit, X_OK) == 0)
        return toolkit;
    return "ptxas";
}

static bool write_file(const char *path, const char *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return false;
    while (n > 0) {
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            return false;
        }
        data += w;
        n -= (size_t)w;
    }
    return close(fd) == 0;
}

static bool read_file(const char *path, Buf *out)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    char chunk[65536];
    for (;;) {
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(fd);
            return false;
        }
        if (r == 0)
            break;
        buf_add(out, chunk, (size_t)r);
    }
    close(fd);
    return true;
}

/* Runs argv with stdout and stderr both captured into log (ptxas writes its -v report to one
 * and errors to the other depending on the version). Returns the exit status, -1 when the
 * program could not be started (errno_out says why). */
static int run_capture(char *const argv[], Buf *log, int *errno_out)
{
    int fds[2];
    if (pipe(fds) != 0) {
        *errno_out = errno;
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    pid_t pid;
    /* posix_spawnp searches PATH only for names without a slash, like the shell would. */
    int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (err != 0) {
        close(fds[0]);
        *errno_out = err;
        return -1;
    }
    char chunk[4096];
    for (;;) {
        ssize_t r = read(fds[0], chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        buf_add(log, chunk, (size_t)r);
    }
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            *errno_out = errno;
            return -1;
        }
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

bool ptxas_run(const char *ptx, const char *arch, Buf *cubin, Buf *log, bool *missing)
{
    *missing = false;
    /* An arch is a plain token like sm_90a; anything else could be taken for an option. */
    if (!arch || !*arch || arch[0] == '-' || strlen(arch) > 32) {
        buf_printf(log, "tilec: invalid architecture '%s' for ptxas\n", arch ? arch : "");
        return false;
    }
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    Buf dir = {0};
    buf_printf(&dir, "%s/tilec-XXXXXX", tmp);
    if (!mkdtemp(dir.s)) {
        buf_printf(log, "tilec: cannot create a temporary directory in %s: %s\n", tmp,
                   strerror(errno));
        buf_free(&dir);
        return false;
    }
    Buf ptx_path = {0}, cubin_path = {0}, arch_opt = {0};
    buf_printf(&ptx_path, "%s/kernel.ptx", dir.s);
    buf_printf(&cubin_path, "%s/kernel.cubin", dir.s);
    buf_printf(&arch_opt, "-arch=%s", arch);

    bool ok = false;
    if (!write_file(ptx_path.s, ptx, strlen(ptx))) {
        buf_printf(log, "tilec: cannot write %s: %s\n", ptx_path.s, strerror(errno));
        goto done;
    }
    const char *prog = ptxas_path();
    char *argv[] = { (char *)prog, arch_opt.s, "-v", "-o", cubin_path.s, ptx_path.s, NULL };
    int err = 0;
    size_t log_start = log->len;
    int rc = run_capture(argv, log, &err);
    if (rc < 0 || (rc == 127 && log->len == log_start)) {
        /* 127 with no output: the child could not exec (older C libraries report it so). */
        *missing = rc < 0 ? err == ENOENT || err == EACCES : true;
        buf_printf(log, "tilec: cannot run ptxas (%s): %s\n", prog,
                   rc < 0 ? strerror(err) : "not found");
        goto done;
    }
    if (rc != 0) {
        buf_printf(log, "tilec: ptxas failed (exit status %d)\n", rc);
        goto done;
    }
    if (!read_file(cubin_path.s, cubin)) {
        buf_printf(log, "tilec: ptxas wrote no output %s: %s\n", cubin_path.s, strerror(errno));
        goto done;
    }
    ok = true;
done:
    unlink(ptx_path.s);
    unlink(cubin_path.s);
    rmdir(dir.s);
    buf_free(&dir);
    buf_free(&ptx_path);
    buf_free(&cubin_path);
    buf_free(&arch_opt);
    return ok;
}

/* ---------------------------------------------------------------- the -v report */

/* The report comes in blocks per kernel; the kernel a line belongs to is the last one named by
 *   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
 *   ptxas info    : Function properties for NAME
 * and the figures come from
 *       N bytes stack frame, S bytes spill stores, L bytes spill loads
 *   ptxas info    : Used R registers, ... */

static KernelMeta *find_kernel(KernelMeta *ks, int nk, const char *name, size_t len)
{
    for (int i = 0; i < nk; i++)
        if (strlen(ks[i].name) == len && memcmp(ks[i].name, name, len) == 0)
            return &ks[i];
    return NULL;
}

/* Where word occurs in line[0..len) (lines are not NUL-terminated), NULL if nowhere. */
static const char *find_in(const char *line, size_t len, const char *word)
{
    size_t wlen = strlen(word);
    for (size_t i = 0; i + wlen <= len; i++)
        if (memcmp(line + i, word, wlen) == 0)
            return line + i;
    return NULL;
}

/* The identifier that follows `after` in line[0..len), with optional quotes around it. */
static KernelMeta *kernel_after(const char *line, size_t len, const char *after, KernelMeta *ks,
                                int nk)
{
    const char *end = line + len;
    const char *p = find_in(line, len, after);
    if (!p)
        return NULL;
    p += strlen(after);
    while (p < end && (*p == ' ' || *p == '\'' || *p == '"'))
        p++;
    const char *s = p;
    while (p < end && *p != '\'' && *p != '"' && *p != ' ' && *p != '\r')
        p++;
    return find_kernel(ks, nk, s, (size_t)(p - s));
}

/* The number just before `word` in the line ("96 registers" -> 96), -1 if absent. */
static int number_before(const char *line, size_t len, const char *word)
{
    size_t wlen = strlen(word);
    for (size_t i = 0; i + wlen <= len; i++) {
        if (memcmp(line + i, word, wlen) != 0)
            continue;
        size_t j = i;
        while (j > 0 && line[j - 1] == ' ')
            j--;
        size_t digits_end = j;
        while (j > 0 && line[j - 1] >= '0' && line[j - 1] <= '9')
            j--;
        if (j == digits_end)
            continue;
        long v = 0;
        for (size_t k = j; k < digits_end && v < 1000000000; k++)
            v = v * 10 + (line[k] - '0');
        return (int)v;
    }
    return -1;
}

void ptxas_parse_report(const char *log, KernelMeta *ks, int nk)
{
    KernelMeta *cur = NULL;
    for (const char *line = log; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if ((find_in(line, len, "(C7512)") || find_in(line, len, "(C7511)")) &&
            find_in(line, len, "insufficient register resources")) {
            /* "wgmma.mma_async instructions are serialized due to insufficient register
               resources for the function 'F'" (C7512), "... for the wgmma pipeline in the
               function 'F'" (C7511): both a cap too tight for the group in flight */
            KernelMeta *k = kernel_after(line, len, "function", ks, nk);
            if (k)
                k->ptxas_wgmma_serialized = true;
        } else if (find_in(line, len, "Compiling entry function")) {
            /* A kernel we do not know (or a device function) resets: not ours to record. */
            cur = kernel_after(line, len, "Compiling entry function", ks, nk);
        } else if (find_in(line, len, "Function properties for")) {
            cur = kernel_after(line, len, "Function properties for", ks, nk);
        } else if (cur) {
            int v;
            if ((v = number_before(line, len, "bytes stack frame")) >= 0)
                cur->ptxas_stack = v;
            if ((v = number_before(line, len, "bytes spill stores")) >= 0)
                cur->ptxas_spill_stores = v;
            if ((v = number_before(line, len, "bytes spill loads")) >= 0)
                cur->ptxas_spill_loads = v;
            if (find_in(line, len, "Used ") &&
                (v = number_before(line, len, "registers")) >= 0)
                cur->ptxas_regs = v;
        }
        line = nl ? nl + 1 : NULL;
    }
}

void ptxas_warn_lost(ArchOutput *out, const char *arch)
{
    KernelMeta *ks = out->metas;
    for (int i = 0; i < out->nk; i++)
        if (ks[i].ptxas_wgmma_serialized && !ks[i].warned_serialized) {
            ks[i].warned_serialized = true;
            warning_at(out->funcs[i]->k->loc, "kernel '%s' (%s): ptxas serializes its wgmma for want of registers "
                       "(C7511, C7512), which costs the tensor cores' overlap: use a smaller tile or more threads",
                       ks[i].name, arch);
        }
}
