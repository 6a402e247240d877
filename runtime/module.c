/* module.c: loading PTX (through the driver's JIT) or cubins, with their metadata, and looking up
 * kernels. Every kernel named by the metadata is resolved at load time, so a module whose code
 * and metadata disagree fails early instead of at the first launch. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilert_internal.h"

enum { JIT_LOG_SIZE = 6144 };

/* The `.target sm_NN[a]` of a PTX text: refuse early and clearly what the JIT would refuse with a
 * less helpful message. Returns TILERT_OK when there is no .target line to judge by. */
static tilert_status check_target(tilert_context *ctx, const char *ptx)
{
    const char *t = strstr(ptx, ".target");
    if (!t)
        return TILERT_OK;
    const char *sm = strstr(t, "sm_");
    if (!sm || sm - t > 32)
        return TILERT_OK;
    int arch = 0;
    const char *p = sm + 3;
    while (*p >= '0' && *p <= '9')
        arch = arch * 10 + (*p++ - '0');
    bool specific = *p == 'a';      /* sm_90a: runs only on exactly 9.0 */
    if (arch == 0)
        return TILERT_OK;
    if (arch > ctx->arch || (specific && arch != ctx->arch))
        return rt_error(TILERT_ERR_ARCH, "the PTX targets sm_%d%s but the device is sm_%d", arch,
                        specific ? "a" : "", ctx->arch);
    return TILERT_OK;
}

static bool jit_failure(CUresult r, const char *log)
{
    return r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
           r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND || r == CUDA_ERROR_JIT_COMPILATION_DISABLED ||
           (log && log[0]);
}

/* Loads image (PTX text or cubin) with the JIT logs captured, then resolves every kernel. */
static tilert_status load(tilert_context *ctx, const void *image, bool is_ptx, rt_meta *meta,
                          tilert_module **out)
{
    tilert_status s;
    CUresult r;
    if ((s = rt_push(ctx)))
        return s;
    char *errlog = calloc(1, JIT_LOG_SIZE), *infolog = calloc(1, JIT_LOG_SIZE);
    tilert_module *m = calloc(1, sizeof *m);
    tilert_kernel *ks = calloc((size_t)meta->nk, sizeof *ks);
    if (!errlog || !infolog || !m || !ks) {
        s = rt_error(TILERT_ERR_NO_MEMORY, "out of memory loading a module");
        goto fail;
    }
    CUjit_option opt[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                          CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *val[] = {errlog, (void *)(uintptr_t)JIT_LOG_SIZE, infolog,
                   (void *)(uintptr_t)JIT_LOG_SIZE};
    r = cuModuleLoadDataEx(&m->cu, image, 4, opt, val);
    if (r != CUDA_SUCCESS) {
        errlog[JIT_LOG_SIZE - 1] = 0;
        if (r == CUDA_ERROR_NO_BINARY_FOR_GPU)
            s = rt_cuda_error_as(TILERT_ERR_ARCH, "cuModuleLoadDataEx", r);
        else if (is_ptx && jit_failure(r, errlog))
            s = rt_cuda_error_as(TILERT_ERR_JIT, "cuModuleLoadDataEx", r);
        else
            s = rt_cuda_error("cuModuleLoadDataEx", r);
        if (errlog[0]) {
            char head[512];
            snprintf(head, sizeof head, "%s", tilert_last_error());
            rt_error(s, "%s\n%s", head, errlog);
        }
        m->cu = NULL;
        goto fail;
    }
    for (int i = 0; i < meta->nk; i++) {
        ks[i].mod = m;
        ks[i].meta = &meta->k[i];
        r = cuModuleGetFunction(&ks[i].fn, m->cu, meta->k[i].name);
        if (r != CUDA_SUCCESS) {
            char head[256];
            rt_cuda_error("cuModuleGetFunction", r);
            snprintf(head, sizeof head, "%s", tilert_last_error());
            s = rt_error(TILERT_ERR_BAD_META, "the metadata names kernel %s, not in the code: %s",
                         meta->k[i].name, head);
            goto fail;
        }
    }
    if (pthread_mutex_init(&m->lock, NULL)) {
        s = rt_error(TILERT_ERR_NO_MEMORY, "pthread_mutex_init failed");
        goto fail;
    }
    rt_pop();
    m->ctx = ctx;
    m->meta = *meta;
    m->kernels = ks;
    free(errlog);
    free(infolog);
    *out = m;
    return TILERT_OK;
fail:
    if (m && m->cu)
        (void)cuModuleUnload(m->cu);
    rt_pop();
    free(errlog);
    free(infolog);
    free(m);
    free(ks);
    rt_meta_free(meta);
    return s;
}

tilert_status tilert_load_ptx(tilert_context *ctx, const char *ptx, tilert_module **out)
{
    tilert_status s;
    rt_meta meta;
    if (!ctx || !ptx || !out)
        return rt_error(TILERT_ERR_BAD_ARGS, "tilert_load_ptx: NULL argument");
    *out = NULL;
    if ((s = check_target(ctx, ptx)))
        return s;
    if ((s = rt_meta_parse(ptx, &meta)))
        return s;
    return load(ctx, ptx, true, &meta, out);
}

tilert_status tilert_load_ptx_file(tilert_context *ctx, const char *path, tilert_module **out)
{
    if (!ctx || !path || !out)
        return rt_error(TILERT_ERR_BAD_ARGS, "tilert_load_ptx_file: NULL argument");
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return rt_error(TILERT_ERR_NOT_FOUND, "cannot open %s: %s", path, strerror(errno));
    size_t len = 0, cap = 1 << 16;
    char *text = malloc(cap);
    for (;;) {
        if (!text) {
            fclose(f);
            return rt_error(TILERT_ERR_NO_MEMORY, "out of memory reading %s", path);
        }
        len += fread(text + len, 1, cap - len - 1, f);
        if (len < cap - 1)
            break;
        char *bigger = realloc(text, cap *= 2);
        if (!bigger)
            free(text);
        text = bigger;
    }
    bool failed = ferror(f);
    fclose(f);
    if (failed) {
        free(text);
        return rt_error(TILERT_ERR_NOT_FOUND, "cannot read %s", path);
    }
    text[len] = 0;
    tilert_status s = tilert_load_ptx(ctx, text, out);
    free(text);
    return s;
}

tilert_status tilert_load_cubin(tilert_context *ctx, const void *cubin, size_t size,
                                const char *meta_text, tilert_module **out)
{
    tilert_status s;
    rt_meta meta;
    if (!ctx || !cubin || !out)
        return rt_error(TILERT_ERR_BAD_ARGS, "tilert_load_cubin: NULL argument");
    (void)size;   /* the driver reads the ELF's own sizes */
    *out = NULL;
    if ((s = rt_meta_parse(meta_text, &meta)))
        return s;
    return load(ctx, cubin, false, &meta, out);
}

void tilert_unload(tilert_module *mod)
{
    if (!mod)
        return;
    if (rt_push(mod->ctx) == TILERT_OK) {
        /* split kernels' workspaces (launch.c) */
        for (int i = 0; i < mod->meta.nk; i++)
            for (int j = 0; j < mod->kernels[i].nws; j++)
                if (mod->kernels[i].ws[j].ptr)
                    (void)cuMemFree(mod->kernels[i].ws[j].ptr);
        (void)cuModuleUnload(mod->cu);
        rt_pop();
    }
    pthread_mutex_destroy(&mod->lock);
    free(mod->kernels);
    rt_meta_free(&mod->meta);
    free(mod);
}

tilert_status tilert_get_kernel(tilert_module *mod, const char *name, tilert_kernel **out)
{
    if (!mod || !name || !out)
        return rt_error(TILERT_ERR_BAD_ARGS, "tilert_get_kernel: NULL argument");
    *out = NULL;
    for (int i = 0; i < mod->meta.nk; i++)
        if (strcmp(mod->meta.k[i].name, name) == 0) {
            *out = &mod->kernels[i];
            return TILERT_OK;
        }
    char list[512] = "";
    size_t len = 0;
    for (int i = 0; i < mod->meta.nk && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                mod->meta.k[i].name);
    return rt_error(TILERT_ERR_NOT_FOUND, "no kernel %s in this module (it has: %s)", name, list);
}

tilert_status tilert_kernel_get_info(tilert_kernel *k, tilert_kernel_info *out)
{
    if (!k || !out)
        return rt_error(TILERT_ERR_BAD_ARGS, "tilert_kernel_get_info: NULL argument");
    out->name = k->meta->name;
    out->threads = k->meta->threads;
    out->smem_bytes = k->meta->smem_bytes;
    out->regs = k->meta->regs;
    out->nargs = k->meta->nargs;
    return TILERT_OK;
}
