/* launch.c: tilert_launch, the only place that starts kernels. All decisions are made by
 * rt_plan_launch (args.c) on the CPU; this file only talks to the driver. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilert_internal.h"

enum { STATIC_SMEM_LIMIT = 48 * 1024 };

/* Kernels above 48 KiB of dynamic shared memory must opt in, once per function. */
static tilert_status allow_smem(tilert_kernel *k)
{
    tilert_status s = TILERT_OK;
    if (k->meta->smem_bytes <= STATIC_SMEM_LIMIT)
        return s;
    pthread_mutex_lock(&k->mod->lock);
    if (!k->smem_attr_set) {
        CUresult r = cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        k->meta->smem_bytes);
        if (r == CUDA_SUCCESS)
            k->smem_attr_set = true;
        else
            s = rt_cuda_error("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", r);
    }
    pthread_mutex_unlock(&k->mod->lock);
    return s;
}

/* Encodes each planned tensor map into the plan's parameter storage. An empty map (a zero
 * extent, which TMA refuses) is a 1 x 1 tensor over the context's zero buffer instead: every
 * copy through it reads zeros, in bounds or not, which is what a loop over an empty tensor must
 * see. The context must be current. */
static tilert_status encode_tmaps(tilert_kernel *k, rt_launch_plan *plan)
{
    static const cuuint32_t unit_steps[5] = {1, 1, 1, 1, 1};
    for (int i = 0; i < plan->ntmaps; i++) {
        const rt_tmap_desc *d = &plan->tmap[i];
        CUdeviceptr base = d->base;
        if (d->empty) {
            tilert_status s = rt_zero_buffer(k->mod->ctx, &base);
            if (s)
                return s;
        }
        /* OOB fill NONE: elements outside the tensor read as zero; the kernels rely on it. */
        CUresult r = cuTensorMapEncodeTiled(
            &plan->tmap_store[i], d->type, (cuuint32_t)d->rank, (void *)(uintptr_t)base, d->dim, d->stride, d->box,
            unit_steps, CU_TENSOR_MAP_INTERLEAVE_NONE, d->swizzle,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (r != CUDA_SUCCESS) {
            char what[RT_MAX_NAME * 2 + 80];
            snprintf(what, sizeof what, "cuTensorMapEncodeTiled (kernel %s, tensor map %d, of %s)",
                     k->meta->name, i, k->meta->args[k->meta->tmaps[i].arg].name);
            return rt_cuda_error(what, r);
        }
    }
    return TILERT_OK;
}

/* The launch of k's plan in clusters of cl[0] x cl[1] x cl[2] blocks, in cfg (attr its one
 * attribute). */
static void cluster_config(tilert_kernel *k, const rt_launch_plan *plan, CUstream stream, const unsigned cl[3],
                           CUlaunchConfig *cfg, CUlaunchAttribute *attr)
{
    memset(attr, 0, sizeof *attr);
    attr->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr->value.clusterDim.x = cl[0], attr->value.clusterDim.y = cl[1], attr->value.clusterDim.z = cl[2];
    memset(cfg, 0, sizeof *cfg);
    cfg->gridDimX = plan->grid[0], cfg->gridDimY = plan->grid[1], cfg->gridDimZ = plan->grid[2];
    cfg->blockDimX = (unsigned)k->meta->threads, cfg->blockDimY = cfg->blockDimZ = 1;
    cfg->sharedMemBytes = (unsigned)k->meta->smem_bytes;
    cfg->hStream = stream;
    cfg->attrs = attr;
    cfg->numAttrs = 1;
}

/* A kernel that asks for clusters (//@cluster N) gets them where the grid's x extent is a
 * multiple of N. It reads its cluster's size and shares nothing when alone, so a launch the
 * driver refuses as clustered (say, no room for N such blocks at once) is made plain instead:
 * CUDA_ERROR_NOT_SUPPORTED here means "launch it plain". Configuration errors are not sticky. */
static CUresult launch_clustered(tilert_kernel *k, rt_launch_plan *plan, CUstream stream)
{
    int n = k->meta->cluster;
    if (n < 2 || plan->grid[0] % (unsigned)n)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUlaunchConfig cfg;
    CUlaunchAttribute attr;
    cluster_config(k, plan, stream, (const unsigned[3]){ (unsigned)n, 1, 1 }, &cfg, &attr);
    return cuLaunchKernelEx(&cfg, k->fn, plan->params, NULL);
}

/* A split kernel whose tile's slices meet at a cluster barrier (//@split ... cluster): the
 * slices of a tile, one cluster. */
static void split_cluster_dims(const tilert_kernel *k, const rt_launch_plan *plan, unsigned cl[3])
{
    cl[0] = cl[1] = cl[2] = 1;
    cl[k->meta->split_dim] = plan->grid[k->meta->split_dim];
}

/* ... launched so. A launch the driver refuses in clusters (no room for S such blocks at once)
 * is planned again unsplit, and the error returned means "launch it plain", as above. */
static CUresult launch_split_clustered(tilert_kernel *k, rt_launch_plan *plan, CUstream stream)
{
    unsigned cl[3];
    split_cluster_dims(k, plan, cl);
    CUlaunchConfig cfg;
    CUlaunchAttribute attr;
    cluster_config(k, plan, stream, cl, &cfg, &attr);
    CUresult r = cuLaunchKernelEx(&cfg, k->fn, plan->params, NULL);
    if (r != CUDA_SUCCESS)
        rt_plan_split(k->meta, plan, 1, 0, 0);
    return r;
}

/* ---- a product's K loop split over blocks (compiler/lower_split.c) */

/* Blocks of this kernel that run at once: multiprocessors times the occupancy. 0 when the driver
 * cannot say (the launch is then not split). Called with the context current. */
static int split_slots(tilert_kernel *k)
{
    pthread_mutex_lock(&k->mod->lock);
    int slots = k->split_slots;
    pthread_mutex_unlock(&k->mod->lock);
    if (slots)
        return slots;
    int sms = 0, per = 0;
    if (cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, k->mod->ctx->dev) != CUDA_SUCCESS ||
        cuOccupancyMaxActiveBlocksPerMultiprocessor(&per, k->fn, k->meta->threads, (size_t)k->meta->smem_bytes) !=
            CUDA_SUCCESS)
        return 0;
    slots = sms * per;
    pthread_mutex_lock(&k->mod->lock);
    k->split_slots = slots;
    pthread_mutex_unlock(&k->mod->lock);
    return slots;
}

/* Clusters of S blocks of this kernel that run at once (cached per S), -1 where the driver
 * cannot say or none fit. Called with the context current. */
static int split_clusters(tilert_kernel *k, rt_launch_plan *plan, int S, CUstream stream)
{
    pthread_mutex_lock(&k->mod->lock);
    int n = k->split_clusters[S];
    pthread_mutex_unlock(&k->mod->lock);
    if (n)
        return n;
    /* the question's grid: one tile's S slices (the answer does not depend on the grid) */
    rt_launch_plan one = *plan;
    one.grid[0] = one.grid[1] = one.grid[2] = 1;
    one.grid[k->meta->split_dim] = (unsigned)S;
    unsigned cl[3];
    split_cluster_dims(k, &one, cl);
    CUlaunchConfig cfg;
    CUlaunchAttribute attr;
    cluster_config(k, &one, stream, cl, &cfg, &attr);
    if (cuOccupancyMaxActiveClusters(&n, k->fn, &cfg) != CUDA_SUCCESS || n < 1)
        n = -1;
    pthread_mutex_lock(&k->mod->lock);
    k->split_clusters[S] = n;
    pthread_mutex_unlock(&k->mod->lock);
    return n;
}

/* The stream's workspace: pair words for at least `tiles` tiles, zero in stream order, then at
 * least `need` bytes of partial sums; its base, 0 where there is none to be had (more streams
 * than the table holds, a stream being captured into a graph, no memory): the launch then runs
 * unsplit. The first one is sized for any split this kernel chooses by itself (at most `slots`
 * blocks); a larger one (TILERT_SPLIT) replaces it once the stream's earlier launches are done
 * with it. *cap: the tiles its words are for (the partial sums start after them). */
static CUdeviceptr split_workspace(tilert_kernel *k, CUstream stream, int64_t tiles, size_t need, int slots,
                                   int64_t *cap)
{
    CUdeviceptr p = 0;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    pthread_mutex_lock(&k->mod->lock);
    int i = 0;
    while (i < k->nws && k->ws[i].stream != stream)
        i++;
    if (i < k->nws && k->ws[i].tiles >= tiles && k->ws[i].bytes >= need) {
        p = k->ws[i].ptr, *cap = k->ws[i].tiles;
        goto out;
    }
    if ((i == k->nws && k->nws == RT_SPLIT_STREAMS) || cuStreamIsCapturing(stream, &st) != CUDA_SUCCESS ||
        st != CU_STREAM_CAPTURE_STATUS_NONE)
        goto out;
    if (i < k->nws && k->ws[i].ptr) {
        if (cuStreamSynchronize(stream) != CUDA_SUCCESS)
            goto out;
        (void)cuMemFree(k->ws[i].ptr);
        k->ws[i].ptr = 0, k->ws[i].tiles = 0, k->ws[i].bytes = 0;
    }
    int64_t t = tiles > slots ? tiles : slots;
    size_t bytes = rt_split_bytes(k->meta, slots, 1), words = (size_t)t * RT_SPLIT_CNT_TILE;
    if (bytes < need)
        bytes = need;
    if (cuMemAlloc(&p, words + bytes) != CUDA_SUCCESS) {
        p = 0;
        goto out;
    }
    if (cuMemsetD8Async(p, 0, words, stream) != CUDA_SUCCESS) {
        (void)cuMemFree(p);
        p = 0;
        goto out;
    }
    if (i == k->nws)
        k->nws++;
    k->ws[i].stream = stream, k->ws[i].ptr = p, k->ws[i].tiles = t, k->ws[i].bytes = bytes;
    *cap = t;
out:
    pthread_mutex_unlock(&k->mod->lock);
    return p;
}

/* How many slices this launch's loop is cut into (TILERT_SPLIT=N forces N, for tests), and the
 * plan made for them. The grid as planned has one block along the split dimension. */
static void plan_split(tilert_kernel *k, CUstream stream, rt_launch_plan *plan)
{
    const char *env = getenv("TILERT_SPLIT");
    int forced = env ? atoi(env) : 0;
    int slots = split_slots(k);
    int64_t tiles = (int64_t)plan->grid[0] * plan->grid[1] * plan->grid[2], cap = 0;
    int S = slots ? rt_split_count(tiles, slots, plan->split_trips, forced) : 1;
    /* slices in clusters: no more than a cluster may hold, and (unless forced) no more than
       leave every tile's cluster running at once: a cluster that waits for room would take a
       second wave */
    if (k->meta->split_cluster) {
        if (S > k->meta->split_cluster_max)
            S = k->meta->split_cluster_max;
        while (!forced && S >= 2 && split_clusters(k, plan, S, stream) < tiles)
            S--;
    }
    /* (a grid of more tiles only where forced: its workspace's size would not fit the size_t
       products below, nor any GPU) */
    if (S < 2 || tiles > INT32_MAX / RT_SPLIT_MAX)
        return;
    CUdeviceptr base = split_workspace(k, stream, tiles, rt_split_bytes(k->meta, tiles, S), slots, &cap);
    if (base)
        rt_plan_split(k->meta, plan, S, base + (CUdeviceptr)cap * RT_SPLIT_CNT_TILE, base);
}

tilert_status tilert_launch(tilert_kernel *k, CUstream stream, const tilert_arg *args, int nargs)
{
    tilert_status s;
    rt_launch_plan plan;
    if (!k)
        return rt_error(TILERT_ERR_BAD_ARGS, "tilert_launch: kernel is NULL");
    if ((s = rt_plan_launch(k->meta, args, nargs, &plan)))
        return s;
    if (plan.empty)
        return TILERT_OK;
    if ((s = rt_push(k->mod->ctx)))
        return s;
    s = allow_smem(k);
    if (s == TILERT_OK)
        s = encode_tmaps(k, &plan);
    if (s == TILERT_OK && k->meta->split_dim)
        plan_split(k, stream, &plan);
    if (s == TILERT_OK) {
        CUresult r = k->meta->split_cluster && plan.grid[k->meta->split_dim] > 1
                         ? launch_split_clustered(k, &plan, stream)
                         : launch_clustered(k, &plan, stream);
        if (r != CUDA_SUCCESS)
            r = cuLaunchKernel(k->fn, plan.grid[0], plan.grid[1], plan.grid[2], (unsigned)k->meta->threads, 1, 1,
                               (unsigned)k->meta->smem_bytes, stream, plan.params, NULL);
        if (r != CUDA_SUCCESS)
            s = rt_cuda_error("cuLaunchKernel", r);
    }
    rt_pop();
    return s;
}

tilert_status tilert_kernel_grid(tilert_kernel *k, const tilert_arg *args, int nargs,
                                 unsigned grid[3])
{
    tilert_status s;
    bool empty;
    if (!k || !grid)
        return rt_error(TILERT_ERR_BAD_ARGS, "tilert_kernel_grid: NULL argument");
    if ((s = rt_check_args(k->meta, args, nargs)))
        return s;
    return rt_compute_grid(k->meta, args, nargs, grid, &empty);
}
