/* test_split.c: what the launcher decides, without a GPU, for a kernel whose K loop it may split
 * over blocks (compiler/lower_split.c, runtime/launch.c): the //@split line and its mistakes, the
 * number of slices for a grid and a GPU, the workspace that needs, and the plan for S slices
 * (the split dimension's extent, the slice's length, the two hidden parameters, last). */
#include "tilert_internal.h"
#include "unit.h"
#include "unit_meta.h"

/* matmul_f16's metadata as tilec writes it, 128 x 256 tiles, K step 64 */
static const char split_meta[] =
    "//@tilec 1\n"
    "//@kernel mm threads 256 smem 196672 regs 154\n"
    "//@arg A ptr f16 16\n"
    "//@arg B ptr f16 16\n"
    "//@arg C ptr f16 16\n"
    "//@arg M size i32 4\n"
    "//@arg K size i32 4\n"
    "//@arg N size i32 4\n"
    "//@grid a3 128 cdiv a5 256 cdiv *\n"
    "//@split 1 131072 64 | a4 0 - 64 cdiv\n"
    "//@end\n";

#define K "//@kernel k threads 32 smem 0 regs 8\n"
#define ARG "//@arg M size i32 4\n"

static void malformed(const char *name, const char *text, const char *words)
{
    unit_meta_malformed("split", name, text, words);
}

static void check_count(void)
{
    /* 132 multiprocessors, one block each: 32 tiles of 128 K steps take 4 slices */
    unit_check(rt_split_count(32, 132, 128, 0) == 4, "count: 32 tiles on 132 slots", "%d",
               rt_split_count(32, 132, 128, 0));
    unit_check(rt_split_count(64, 132, 128, 0) == 2, "count: 64 tiles", "%d", rt_split_count(64, 132, 128, 0));
    unit_check(rt_split_count(100, 132, 128, 0) == 1 && rt_split_count(132, 132, 128, 0) == 1 &&
                   rt_split_count(4096, 132, 128, 0) == 1,
               "count: a grid near or past the slots is not split", "");
    /* each slice at least RT_SPLIT_MIN_TRIPS iterations */
    unit_check(rt_split_count(32, 132, 16, 0) == 2 && rt_split_count(32, 132, 15, 0) == 1 &&
                   rt_split_count(1, 132, 0, 0) == 1,
               "count: short loops split less or not at all", "%d %d", rt_split_count(32, 132, 16, 0),
               rt_split_count(32, 132, 15, 0));
    unit_check(rt_split_count(1, 1056, 100000, 0) == RT_SPLIT_MAX, "count: at most RT_SPLIT_MAX", "%d",
               rt_split_count(1, 1056, 100000, 0));
    unit_check(rt_split_count(4096, 132, 1, 3) == 3 && rt_split_count(1, 132, 1, 99) == RT_SPLIT_MAX,
               "count: forced (TILERT_SPLIT), even past the loop's iterations", "");
    unit_check(rt_split_count(0, 132, 128, 0) == 1, "count: no tiles", "");
}

static void check_plan(const rt_kernel_meta *k)
{
    tilert_arg a[6] = { tilert_ptr(0x10000), tilert_ptr(0x20000), tilert_ptr(0x30000), tilert_i32(16),
                        tilert_i32(8192), tilert_i32(8192) };
    rt_launch_plan p;
    memset(&p, 0xab, sizeof p);
    tilert_status s = rt_plan_launch(k, a, 6, &p);
    if (!unit_check(s == TILERT_OK, "plan", "%s", tilert_last_error()))
        return;
    CUdeviceptr ws, cnt;
    int32_t span;
    memcpy(&ws, p.params[6], 8);
    memcpy(&cnt, p.params[7], 8);
    memcpy(&span, p.params[8], 4);
    unit_check(p.grid[0] == 32 && p.grid[1] == 1 && p.split_trips == 128 && ws == 0 && cnt == 0 && span == 8192,
               "plan: one slice, the whole loop, no workspace", "grid %u %u trips %lld ws %llx span %d",
               p.grid[0], p.grid[1], (long long)p.split_trips, (unsigned long long)ws, span);
    rt_plan_split(k, &p, 3, 0x5000, 0x4000);
    memcpy(&ws, p.params[6], 8);
    memcpy(&cnt, p.params[7], 8);
    memcpy(&span, p.params[8], 4);
    /* cdiv(128, 3) = 43 iterations a slice: 2752, 2752, 2688 of the 8192 */
    unit_check(p.grid[0] == 32 && p.grid[1] == 3 && ws == 0x5000 && cnt == 0x4000 && span == 43 * 64,
               "plan: three slices", "grid %u %u ws %llx cnt %llx span %d", p.grid[0], p.grid[1],
               (unsigned long long)ws, (unsigned long long)cnt, span);
    unit_check(rt_split_bytes(k, 32, 4) == (size_t)32 * 4 * 131072, "workspace: every tile's slices' sums", "%zu",
               rt_split_bytes(k, 32, 4));
    /* K = 0: no iterations, one slice of length 0 */
    a[4] = tilert_i32(0);
    s = rt_plan_launch(k, a, 6, &p);
    memcpy(&span, p.params[8], 4);
    unit_check(s == TILERT_OK && p.split_trips == 0 && span == 0, "plan: an empty loop", "trips %lld span %d",
               (long long)p.split_trips, span);
    /* a loop longer than int32 in the loop variable's units stays within it */
    rt_launch_plan big = p;
    big.split_trips = (int64_t)1 << 40;
    rt_plan_split(k, &big, 1, 0, 0);
    unit_check(big.split_span == INT32_MAX, "plan: the span clamped to int32", "%d", big.split_span);
    /* the most iterations an RPN can give, split or not: no overflow on the way (a fuzzer's find) */
    big.split_trips = INT64_MAX;
    rt_plan_split(k, &big, 1, 0, 0);
    int32_t one = big.split_span;
    rt_plan_split(k, &big, 7, 0, 0);
    unit_check(one == INT32_MAX && big.split_span == INT32_MAX, "plan: int64's most iterations", "%d %d", one,
               big.split_span);
}

int main(void)
{
    rt_meta meta;
    tilert_status s = rt_meta_parse(split_meta, &meta);
    if (!unit_check(s == TILERT_OK, "split metadata parses", "%s", tilert_last_error()))
        return unit_exit();
    const rt_kernel_meta *k = &meta.k[0];
    unit_check(k->split_dim == 1 && k->split_bytes == 131072 && k->split_step == 64 && k->split_trips.n == 5,
               "split line read", "dim %d bytes %lld step %lld tokens %d", k->split_dim, (long long)k->split_bytes,
               (long long)k->split_step, k->split_trips.n);
    unit_check(!k->split_cluster, "split line without `cluster`: the tree's form", "");
    check_count();
    check_plan(k);
    rt_meta_free(&meta);
    /* `cluster N`: a tile's slices launched as one cluster of at most N */
    s = rt_meta_parse(K ARG "//@grid a0\n//@split 1 16 1 cluster 6 | a0\n//@end\n", &meta);
    if (unit_check(s == TILERT_OK, "split line with `cluster 6` parses", "%s", tilert_last_error())) {
        unit_check(meta.k[0].split_cluster && meta.k[0].split_cluster_max == 6 && meta.k[0].split_dim == 1 &&
                       meta.k[0].split_bytes == 16,
                   "split line with `cluster 6` read", "cluster %d max %d", meta.k[0].split_cluster,
                   meta.k[0].split_cluster_max);
        rt_meta_free(&meta);
    }
    /* a bare `cluster`, as earlier compilers wrote it: the most a cluster takes */
    s = rt_meta_parse(K ARG "//@grid a0\n//@split 1 16 1 cluster | a0\n//@end\n", &meta);
    if (unit_check(s == TILERT_OK, "split line with a bare `cluster` parses", "%s", tilert_last_error())) {
        unit_check(meta.k[0].split_cluster && meta.k[0].split_cluster_max == RT_SPLIT_CLUSTER_MAX,
                   "split line with a bare `cluster` read", "cluster %d max %d", meta.k[0].split_cluster,
                   meta.k[0].split_cluster_max);
        rt_meta_free(&meta);
    }
    malformed("split cluster x", K ARG "//@grid a0\n//@split 1 16 1 cluster x | a0\n//@end\n",
              "line 4: expected //@split");
    malformed("split cluster 1", K ARG "//@grid a0\n//@split 1 16 1 cluster 1 | a0\n//@end\n", "line 4: expected //@split");
    malformed("split cluster 9", K ARG "//@grid a0\n//@split 1 16 1 cluster 9 | a0\n//@end\n", "line 4: expected //@split");
    malformed("split clusters", K ARG "//@grid a0\n//@split 1 16 1 clusters 2 | a0\n//@end\n", "line 4: expected //@split");
    malformed("split cluster twice", K ARG "//@grid a0\n//@split 1 16 1 cluster 2 cluster | a0\n//@end\n",
              "line 4: expected //@split");
    malformed("split dim 0", K ARG "//@grid a0\n//@split 0 16 1 | a0\n//@end\n", "line 4: expected //@split");
    malformed("split dim 3", K ARG "//@grid a0\n//@split 3 16 1 | a0\n//@end\n", "line 4: expected //@split");
    malformed("split no trips", K ARG "//@grid a0\n//@split 1 16 1\n//@end\n", "line 4: expected //@split");
    malformed("split step 0", K ARG "//@grid a0\n//@split 1 16 0 | a0\n//@end\n", "line 4: expected //@split");
    malformed("split bytes 0", K ARG "//@grid a0\n//@split 1 0 1 | a0\n//@end\n", "line 4: expected //@split");
    malformed("split bad RPN", K ARG "//@grid a0\n//@split 1 16 1 | a0 +\n//@end\n", "line 4:");
    malformed("split twice", K ARG "//@grid a0\n//@split 1 16 1 | a0\n//@split 1 16 1 | a0\n//@end\n",
              "line 5: a second //@split");
    malformed("split not after the grid", K ARG "//@grid a0\n//@grid a0\n//@split 1 16 1 | a0\n//@end\n",
              "//@split must name the grid dimension after the last //@grid");
    malformed("arg after split", K "//@grid 1\n//@split 1 16 1 | 4\n" ARG "//@end\n", "line 4: //@arg after");
    return unit_exit();
}
