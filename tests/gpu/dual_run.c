/* dual_run.c: one kernel run on the GPU and in the interpreter on the same arguments
 * (dual_run.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dual_run.h"

bool value_of(const char *values, const char *name, double *v)
{
    size_t n = strlen(name);
    for (const char *p = values; p && *p;) {
        if (!strncmp(p, name, n) && p[n] == '=') {
            *v = strtod(p + n + 1, NULL);
            return true;
        }
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    return false;
}

bool dual_open(DualRun *r, tilert_context *ctx, const char *path, const char *kernel, const char *desc)
{
    memset(r, 0, sizeof *r);
    r->a = arena_new();
    size_t len;
    r->ptx = read_file_max(path, &len, (size_t)1 << 30);
    if (!r->ptx || !meta_source_read(r->ptx, &r->file, &r->src, r->defs, &r->ndefs, &r->names, &r->all_blocks)) {
        printf("FAIL %s: %s is missing or has no source block\n", desc, path);
        return false;
    }
    r->p = compile_front(r->a, r->file.s, r->src.s, r->src.len, r->defs, r->ndefs);
    for (int i = 0; r->p && i < r->p->nkernels; i++)
        if (!strcmp(r->p->kernels[i]->name, kernel))
            r->k = r->p->kernels[i];
    if (!r->k || tilert_load_ptx(ctx, r->ptx, &r->mod) != TILERT_OK ||
        tilert_get_kernel(r->mod, kernel, &r->gk) != TILERT_OK) {
        printf("FAIL %s: %s\n", desc, r->k ? tilert_last_error() : "the module's source does not compile");
        return false;
    }
    return true;
}

bool dual_args(DualRun *r, const char *values, Elem (*fill)(ElemType t, void *user), void *user, const char *desc)
{
    const Kernel *k = r->k;
    r->n = interp_nargs(k);
    r->host = calloc((size_t)r->n + 1, sizeof *r->host);
    r->dev = calloc((size_t)r->n + 1, sizeof *r->dev);
    if (!r->host || !r->dev)
        return false;
    /* sizes and scalars */
    for (int i = 0; i < r->n; i++) {
        if (i < k->nparams && k->params[i].is_tensor)
            continue;
        double v = 0;
        if (!value_of(values, interp_arg_name(k, i), &v)) {
            printf("FAIL %s: no value for %s\n", desc, interp_arg_name(k, i));
            return false;
        }
        ElemType t = i < k->nparams ? k->params[i].type : TY_I32;
        r->host[i].i = (int64_t)v;
        r->host[i].f = v;
        r->dev[i] = t == TY_F32 ? tilert_f32((float)v) : tilert_i32((int32_t)v);
    }
    /* tensors: the elements their extent reaches, the same on both sides */
    Interp geo;
    memset(&geo, 0, sizeof geo);
    geo.p = r->p, geo.k = r->k, geo.args = r->host;
    for (int i = 0; i < k->nparams; i++) {
        const Param *pa = &k->params[i];
        if (!pa->is_tensor)
            continue;
        int64_t dim[MAX_TENSOR_RANK], stride[MAX_TENSOR_RANK], count = 1;
        interp_tensor_geometry(&geo, pa->sym, dim, stride);
        for (int d = 0; d < pa->rank; d++)
            count += (dim[d] > 0 ? dim[d] - 1 : 0) * stride[d];
        int es = type_size(pa->type);
        size_t bytes = (size_t)count * (size_t)es;
        r->host[i].ptr = malloc(bytes);
        r->host[i].bytes = bytes;
        CUdeviceptr d = 0;
        if (!r->host[i].ptr || !gpu_alloc(&d, bytes))
            return false;
        r->dev[i] = tilert_ptr(d);
        for (int64_t j = 0; j < count; j++)
            store_elem(pa->type, (char *)r->host[i].ptr + j * es, fill(pa->type, user));
        if (!gpu_upload(d, r->host[i].ptr, bytes))
            return false;
    }
    return true;
}

void dual_close(DualRun *r)
{
    for (int i = 0; r->k && r->host && r->dev && i < r->k->nparams; i++) {
        if (r->k->params[i].is_tensor && r->dev[i].v.ptr)
            gpu_free(r->dev[i].v.ptr);
        free(r->host[i].ptr);
    }
    free(r->host);
    free(r->dev);
    if (r->mod)
        tilert_unload(r->mod);
    arena_free(r->a);
    buf_free(&r->file);
    buf_free(&r->src);
    buf_free(&r->names);
    free(r->ptx);
    memset(r, 0, sizeof *r);
}
