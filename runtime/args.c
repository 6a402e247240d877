/* args.c: everything a launch decides before touching the GPU: argument checks against the
 * metadata, assume() facts, the grid, the tensor maps' shapes, and the parameter block
 * cuLaunchKernel reads. Plain functions over plain data, so tests/unit runs them without a
 * device (launch.c encodes the maps, which needs the driver). */
#include <stdio.h>
#include <string.h>

#include "tilert_internal.h"

/* cuda.h aligns CUtensorMap only for C11 and C++11; the kernel's .param .align 64 copy and the
 * encoder both want 64 bytes. */
_Static_assert(_Alignof(CUtensorMap) >= 64, "CUtensorMap must be 64-byte aligned");

static const char *const kind_names[] = {
    [TILERT_ARG_PTR] = "TILERT_ARG_PTR", [TILERT_ARG_I32] = "TILERT_ARG_I32",
    [TILERT_ARG_U32] = "TILERT_ARG_U32", [TILERT_ARG_I64] = "TILERT_ARG_I64",
    [TILERT_ARG_F32] = "TILERT_ARG_F32", [TILERT_ARG_F16BITS] = "TILERT_ARG_F16BITS",
    [TILERT_ARG_BF16BITS] = "TILERT_ARG_BF16BITS", [TILERT_ARG_BOOL] = "TILERT_ARG_BOOL",
};

static const char *kind_name(tilert_arg_kind k)
{
    return (unsigned)k < sizeof kind_names / sizeof kind_names[0] ? kind_names[k] : "(bad kind)";
}

/* The argument kind the ABI wants for a metadata argument. */
static tilert_arg_kind wanted_kind(const rt_arg_meta *a)
{
    if (a->cls == RT_ARG_PTR)
        return TILERT_ARG_PTR;
    if (a->cls == RT_ARG_SIZE)
        return TILERT_ARG_I32;
    switch (a->type) {
    case RT_BOOL: return TILERT_ARG_BOOL;
    case RT_U32: return TILERT_ARG_U32;
    case RT_I64: return TILERT_ARG_I64;
    case RT_F16: return TILERT_ARG_F16BITS;
    case RT_BF16: return TILERT_ARG_BF16BITS;
    case RT_F32: return TILERT_ARG_F32;
    case RT_I32:
    default: return TILERT_ARG_I32;
    }
}

tilert_status rt_check_args(const rt_kernel_meta *k, const tilert_arg *args, int nargs)
{
    if (nargs != k->nargs)
        return rt_error(TILERT_ERR_BAD_ARGS, "kernel %s takes %d arguments, got %d", k->name,
                        k->nargs, nargs);
    if (nargs > 0 && !args)
        return rt_error(TILERT_ERR_BAD_ARGS, "kernel %s: argument array is NULL", k->name);
    for (int i = 0; i < nargs; i++) {
        const rt_arg_meta *m = &k->args[i];
        const tilert_arg *a = &args[i];
        tilert_arg_kind want = wanted_kind(m);
        if (a->kind != want)
            return rt_error(TILERT_ERR_BAD_ARGS, "kernel %s argument %d (%s): expected %s, got %s",
                            k->name, i, m->name, kind_name(want), kind_name(a->kind));
        if (m->cls == RT_ARG_PTR) {
            if (a->v.ptr == 0)
                return rt_error(TILERT_ERR_BAD_ARGS, "kernel %s argument %d (%s): null pointer",
                                k->name, i, m->name);
            if (a->v.ptr % (CUdeviceptr)m->align)
                return rt_error(TILERT_ERR_BAD_ARGS,
                                "kernel %s argument %d (%s): pointer 0x%llx is not %d-byte aligned",
                                k->name, i, m->name, (unsigned long long)a->v.ptr, m->align);
        }
        if (m->cls == RT_ARG_SIZE && a->v.i32 < 0)
            return rt_error(TILERT_ERR_BAD_ARGS, "kernel %s argument %d (%s): negative size %d",
                            k->name, i, m->name, (int)a->v.i32);
    }
    return TILERT_OK;
}

void rt_arg_values(const rt_kernel_meta *k, const tilert_arg *args, int nargs, int64_t *vals)
{
    (void)k;
    for (int i = 0; i < nargs; i++) {
        switch (args[i].kind) {
        case TILERT_ARG_I32: vals[i] = args[i].v.i32; break;
        case TILERT_ARG_U32: vals[i] = args[i].v.u32; break;
        case TILERT_ARG_I64: vals[i] = args[i].v.i64; break;
        case TILERT_ARG_BOOL: vals[i] = args[i].v.b != 0; break;
        default: vals[i] = 0; break;
        }
    }
}

/* "K = 1000, N = 7": the arguments the expressions read, each once, in order of first use. */
static void describe_exprs(const rt_kernel_meta *k, const rpn_expr *const *es, int nes,
                           const int64_t *vals, char *out, size_t size)
{
    bool seen[RT_MAX_ARGS] = {false};
    size_t len = 0;
    out[0] = 0;
    for (int j = 0; j < nes; j++)
        for (int i = 0; i < es[j]->n; i++) {
            int a = (int)es[j]->tok[i].v;
            if (es[j]->tok[i].op != RPN_ARG || a < 0 || a >= k->nargs || seen[a] ||
                k->args[a].cls == RT_ARG_PTR)
                continue;
            seen[a] = true;
            int n = snprintf(out + len, size - len, "%s%s = %lld", len ? ", " : "",
                             k->args[a].name, (long long)vals[a]);
            if (n < 0 || (size_t)n >= size - len)
                return;
            len += (size_t)n;
        }
}

static void describe_args(const rt_kernel_meta *k, const rpn_expr *e, const int64_t *vals,
                          char *out, size_t size)
{
    describe_exprs(k, &e, 1, vals, out, size);
}

/* Rewraps the message rt_rpn_eval left, adding what was evaluated and the values read. */
static tilert_status eval_in_context(const rt_kernel_meta *k, const rpn_expr *e,
                                     const int64_t *vals, const char *what, int64_t *out)
{
    tilert_status s = rt_rpn_eval(e, vals, k->nargs, out);
    if (s == TILERT_OK)
        return s;
    char why[256], vs[512];
    snprintf(why, sizeof why, "%s", tilert_last_error());
    describe_args(k, e, vals, vs, sizeof vs);
    return rt_error(s, "kernel %s: %s: %s%s%s%s", k->name, what, why, *vs ? " (" : "", vs,
                    *vs ? ")" : "");
}

tilert_status rt_check_assumes(const rt_kernel_meta *k, const tilert_arg *args, int nargs)
{
    int64_t vals[RT_MAX_ARGS];
    if (nargs != k->nargs)
        return rt_error(TILERT_ERR_BAD_ARGS, "kernel %s takes %d arguments, got %d", k->name,
                        k->nargs, nargs);
    rt_arg_values(k, args, nargs, vals);
    for (int i = 0; i < k->nassumes; i++) {
        char what[600];
        snprintf(what, sizeof what, "assume(%s)", k->assume_text[i]);
        int64_t v;
        tilert_status s = eval_in_context(k, &k->assume[i], vals, what, &v);
        if (s)
            return s;
        if (!v) {
            char vs[512];
            describe_args(k, &k->assume[i], vals, vs, sizeof vs);
            return rt_error(TILERT_ERR_ASSUME, "%s is false for these arguments%s%s%s", what,
                            *vs ? " (" : "", vs, *vs ? ")" : "");
        }
    }
    return TILERT_OK;
}

tilert_status rt_compute_grid(const rt_kernel_meta *k, const tilert_arg *args, int nargs,
                              unsigned grid[3], bool *empty)
{
    static const char dim_name[3] = {'x', 'y', 'z'};
    static const int64_t limit[3] = {INT32_MAX, 65535, 65535};
    int64_t vals[RT_MAX_ARGS];
    if (nargs != k->nargs)
        return rt_error(TILERT_ERR_BAD_ARGS, "kernel %s takes %d arguments, got %d", k->name,
                        k->nargs, nargs);
    rt_arg_values(k, args, nargs, vals);
    *empty = false;
    for (int d = 0; d < 3; d++) {
        int64_t v = 1;
        if (d < k->ngrid) {
            char what[32];
            snprintf(what, sizeof what, "grid dimension %c", dim_name[d]);
            tilert_status s = eval_in_context(k, &k->grid[d], vals, what, &v);
            if (s)
                return s;
        }
        if (v < 0 || v > limit[d]) {
            char vs[512];
            describe_args(k, &k->grid[d], vals, vs, sizeof vs);
            return rt_error(TILERT_ERR_BAD_ARGS,
                            "kernel %s: grid dimension %c is %lld blocks (allowed 0..%lld)%s%s%s",
                            k->name, dim_name[d], (long long)v, (long long)limit[d],
                            *vs ? " for " : "", vs, "");
        }
        if (v == 0)
            *empty = true;
        grid[d] = (unsigned)v;
    }
    return TILERT_OK;
}

/* Copies one argument into its slot with the ABI's size for that kind. */
static void pack(const tilert_arg *a, unsigned char *slot)
{
    uint32_t b32;
    switch (a->kind) {
    case TILERT_ARG_PTR: memcpy(slot, &a->v.ptr, 8); break;   /* .u64 */
    case TILERT_ARG_I64: memcpy(slot, &a->v.i64, 8); break;
    case TILERT_ARG_I32: memcpy(slot, &a->v.i32, 4); break;
    case TILERT_ARG_U32: memcpy(slot, &a->v.u32, 4); break;
    case TILERT_ARG_F32: memcpy(slot, &a->v.f32, 4); break;
    case TILERT_ARG_BOOL:                                      /* .u32 holding 0 or 1 */
        b32 = a->v.b != 0;
        memcpy(slot, &b32, 4);
        break;
    case TILERT_ARG_F16BITS:
    case TILERT_ARG_BF16BITS: memcpy(slot, &a->v.bits16, 2); break;
    }
}

/* ---------------------------------------------------------------- tensor maps */

/* A refused map: "kernel K: tensor map I (ARG): PROBLEM (the sizes its extents read)". */
static tilert_status tmap_refused(const rt_kernel_meta *k, int i, const int64_t *vals,
                                  const char *problem)
{
    const rt_tmap_meta *t = &k->tmaps[i];
    const rpn_expr *extents[3 + 2 * RT_TMAP_MAX_OUTER] = {&t->rows, &t->cols, &t->pitch};
    for (int j = 0; j < t->nouter; j++)
        extents[3 + 2 * j] = &t->outer[j], extents[4 + 2 * j] = &t->outer_stride[j];
    char vs[512];
    describe_exprs(k, extents, 3 + 2 * t->nouter, vals, vs, sizeof vs);
    return rt_error(TILERT_ERR_BAD_ARGS, "kernel %s: tensor map %d (%s): %s%s%s%s", k->name, i,
                    k->args[t->arg].name, problem, *vs ? " (" : "", vs, *vs ? ")" : "");
}

/* rows, cols and pitch of map i, then each outer dimension's extent and stride: extents and the
 * pitch in 0..2^31-1 (TMA's coordinates are signed 32-bit), outer strides in 0..2^40. */
static tilert_status tmap_extents(const rt_kernel_meta *k, int i, const int64_t *vals,
                                  int64_t ext[3 + 2 * RT_TMAP_MAX_OUTER])
{
    static const char *const ext_name[3 + 2 * RT_TMAP_MAX_OUTER] = {
        "rows", "cols", "pitch", "extent 3", "stride 3", "extent 4", "stride 4", "extent 5", "stride 5"};
    const rt_tmap_meta *t = &k->tmaps[i];
    const rpn_expr *e[3 + 2 * RT_TMAP_MAX_OUTER] = {&t->rows, &t->cols, &t->pitch};
    for (int j = 0; j < t->nouter; j++)
        e[3 + 2 * j] = &t->outer[j], e[4 + 2 * j] = &t->outer_stride[j];
    for (int j = 0; j < 3 + 2 * t->nouter; j++) {
        char what[RT_MAX_NAME + 64], problem[128];
        snprintf(what, sizeof what, "tensor map %d (%s) %s", i, k->args[t->arg].name,
                 ext_name[j]);
        tilert_status s = eval_in_context(k, e[j], vals, what, &ext[j]);
        if (s)
            return s;
        int64_t most = j >= 4 && j % 2 == 0 ? (int64_t)1 << 40 : INT32_MAX;
        if (ext[j] < 0 || ext[j] > most) {
            snprintf(problem, sizeof problem, "%s is %lld (allowed 0..%lld)", ext_name[j],
                     (long long)ext[j], (long long)most);
            return tmap_refused(k, i, vals, problem);
        }
    }
    return TILERT_OK;
}

/* The empty map: a 1 x 1 tensor of the kernel's rank over the context's zero buffer (launch.c
 * supplies it), which TMA accepts where it refuses a zero extent. */
static void stand_in(const rt_tmap_meta *t, rt_tmap_desc *d)
{
    d->empty = true;
    d->dim[0] = d->dim[1] = 1;
    d->stride[0] = 16;
    int more = t->nouter + (t->rows8 ? 2 : 0);
    for (int j = 0; j < more; j++)     /* the rank the kernel's copies name */
        d->dim[2 + j] = 1, d->stride[1 + j] = 16, d->box[2 + j] = 1;
    d->rank = 2 + more;
}

/* Whether an if-aligned map can be built at this launch: the pointer and every stride 16-byte
 * aligned, the test the kernel makes before it uses the map (compiler/lower_tma_store.c). */
static bool tmap_aligned(const rt_tmap_meta *t, CUdeviceptr base, const int64_t *ext, int64_t elem)
{
    bool ok = base % 16 == 0 && ext[2] * elem % 16 == 0 && (!t->rows8 || ext[0] % 8 == 0);
    for (int j = 0; j < t->nouter; j++)
        ok &= ext[4 + 2 * j] * elem % 16 == 0;
    return ok;
}

static tilert_status plan_tmap(const rt_kernel_meta *k, int i, const tilert_arg *args,
                               const int64_t *vals, rt_tmap_desc *d)
{
    static const CUtensorMapDataType cu_type[RT_TMAP_TYPE_COUNT] = {
        [RT_TMAP_F32] = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        [RT_TMAP_TF32] = CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
        [RT_TMAP_F16] = CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        [RT_TMAP_BF16] = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        [RT_TMAP_U8] = CU_TENSOR_MAP_DATA_TYPE_UINT8,
    };
    const rt_tmap_meta *t = &k->tmaps[i];
    int64_t ext[3 + 2 * RT_TMAP_MAX_OUTER];
    tilert_status s = tmap_extents(k, i, vals, ext);
    if (s)
        return s;
    bool outer_empty = false;
    for (int j = 0; j < t->nouter; j++)
        outer_empty |= ext[3 + 2 * j] == 0;
    int64_t rows = ext[0], cols = ext[1], pitch = ext[2];
    int64_t elem = rt_tmap_elem_size(t->type);
    CUdeviceptr base = args[t->arg].v.ptr;
    memset(d, 0, sizeof *d);
    d->type = cu_type[t->type];
    d->swizzle = t->swizzle == 0    ? CU_TENSOR_MAP_SWIZZLE_NONE
                 : t->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                 : t->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                    : CU_TENSOR_MAP_SWIZZLE_128B;
    d->box[0] = (cuuint32_t)t->box_cols, d->box[1] = (cuuint32_t)t->box_rows;
    d->rank = 2;
    /* TMA refuses a zero extent, yet a kernel may copy through the map anyway (a loop with
     * fixed bounds over K = 0) and must read zeros. So an empty map becomes a 1 x 1 tensor over
     * the context's zero buffer (launch.c supplies it); the tensor's own layout is never read,
     * so it is not checked either. An if-aligned map the launch's values cannot make is the same
     * stand-in: the kernel, testing the same alignment, stores from registers instead. */
    if (rows == 0 || cols == 0 || outer_empty || (t->if_aligned && !tmap_aligned(t, base, ext, elem))) {
        stand_in(t, d);
        return TILERT_OK;
    }
    char problem[160];
    if (pitch < cols) {
        snprintf(problem, sizeof problem, "pitch %lld is less than the %lld columns",
                 (long long)pitch, (long long)cols);
        return tmap_refused(k, i, vals, problem);
    }
    if (pitch * elem % 16) {
        snprintf(problem, sizeof problem,
                 "rows are %lld bytes apart, not a multiple of 16 as TMA requires",
                 (long long)(pitch * elem));
        return tmap_refused(k, i, vals, problem);
    }
    if (base % 16) {
        snprintf(problem, sizeof problem, "pointer 0x%llx is not 16-byte aligned as TMA requires",
                 (unsigned long long)base);
        return tmap_refused(k, i, vals, problem);
    }
    if (t->rows8 && rows % 8) {
        snprintf(problem, sizeof problem, "%lld rows are not whole groups of 8", (long long)rows);
        return tmap_refused(k, i, vals, problem);
    }
    d->base = base;
    d->dim[0] = (cuuint64_t)cols, d->dim[1] = (cuuint64_t)rows;
    d->stride[0] = (cuuint64_t)(pitch * elem);
    /* rows8: row 4 h + l + 8 g is (h, l, g), so that a box's rows land h fastest */
    int o = 0;
    if (t->rows8) {
        d->dim[1] = 2, d->dim[2] = 4, d->dim[3] = (cuuint64_t)(rows / 8);
        d->stride[0] = (cuuint64_t)(4 * pitch * elem);
        d->stride[1] = (cuuint64_t)(pitch * elem);
        d->stride[2] = (cuuint64_t)(8 * pitch * elem);
        d->box[1] = 2, d->box[2] = 4, d->box[3] = (cuuint32_t)(t->box_rows / 8);
        o = 2;
    }
    for (int j = 0; j < t->nouter; j++) {
        int64_t stride = ext[4 + 2 * j] * elem;
        if (stride % 16 || stride >= (int64_t)1 << 40) {
            snprintf(problem, sizeof problem, "dimension %d is %lld bytes a step, not a multiple of 16 "
                     "under 2^40 as TMA requires", j + 3, (long long)stride);
            return tmap_refused(k, i, vals, problem);
        }
        d->dim[2 + o + j] = (cuuint64_t)ext[3 + 2 * j];
        d->stride[1 + o + j] = (cuuint64_t)stride;
        d->box[2 + o + j] = 1;
    }
    d->rank = 2 + o + t->nouter;
    return TILERT_OK;
}

tilert_status rt_plan_tmaps(const rt_kernel_meta *k, const tilert_arg *args, int nargs,
                            rt_tmap_desc *desc)
{
    int64_t vals[RT_MAX_ARGS];
    if (nargs != k->nargs)
        return rt_error(TILERT_ERR_BAD_ARGS, "kernel %s takes %d arguments, got %d", k->name,
                        k->nargs, nargs);
    rt_arg_values(k, args, nargs, vals);
    for (int i = 0; i < k->ntmaps; i++) {
        tilert_status s = plan_tmap(k, i, args, vals, &desc[i]);
        if (s)
            return s;
    }
    return TILERT_OK;
}

/* ---------------------------------------------------------------- the plan */

tilert_status rt_plan_launch(const rt_kernel_meta *k, const tilert_arg *args, int nargs,
                             rt_launch_plan *plan)
{
    tilert_status s;
    if ((s = rt_check_args(k, args, nargs)) || (s = rt_check_assumes(k, args, nargs)) ||
        (s = rt_compute_grid(k, args, nargs, plan->grid, &plan->empty)) ||
        (s = rt_plan_tmaps(k, args, nargs, plan->tmap)))
        return s;
    plan->ntmaps = k->ntmaps;
    memset(plan->store, 0, sizeof plan->store);
    /* One 8-byte slot per argument: every ABI type fits and stays naturally aligned. */
    for (int i = 0; i < nargs; i++) {
        pack(&args[i], plan->store + 8 * i);
        plan->params[i] = plan->store + 8 * i;
    }
    /* The hidden parameters: one CUtensorMap per map, by value, after the arguments. */
    for (int i = 0; i < k->ntmaps; i++) {
        memset(&plan->tmap_store[i], 0, sizeof plan->tmap_store[i]);
        plan->params[nargs + i] = &plan->tmap_store[i];
    }
    /* ... and a split kernel's workspace and slice, as one slice until rt_plan_split */
    plan->split_trips = 0;
    if (k->split_dim) {
        int64_t vals[RT_MAX_ARGS], trips;
        rt_arg_values(k, args, nargs, vals);
        if ((s = eval_in_context(k, &k->split_trips, vals, "the split loop's iterations", &trips)))
            return s;
        plan->split_trips = trips > 0 ? trips : 0;
        rt_plan_split(k, plan, 1, 0, 0);
        plan->params[nargs + k->ntmaps] = &plan->split_ws;
        plan->params[nargs + k->ntmaps + 1] = &plan->split_cnt;
        plan->params[nargs + k->ntmaps + 2] = &plan->split_span;
    }
    return TILERT_OK;
}

/* ---------------------------------------------------------------- splitting the K loop */

int rt_split_count(int64_t tiles, int64_t slots, int64_t trips, int forced)
{
    if (forced > 0)
        return forced < RT_SPLIT_MAX ? forced : RT_SPLIT_MAX;
    if (tiles < 1 || slots <= tiles)
        return 1;
    int64_t S = slots / tiles, most = trips / RT_SPLIT_MIN_TRIPS;
    if (S > most)
        S = most;
    if (S > RT_SPLIT_MAX)
        S = RT_SPLIT_MAX;
    return S >= 2 ? (int)S : 1;
}

/* Each tile's slices' partial sums (compiler/lower_split.c lays them out). */
size_t rt_split_bytes(const rt_kernel_meta *k, int64_t tiles, int S)
{
    return (size_t)tiles * (size_t)S * (size_t)k->split_bytes;
}

/* Each slice cdiv(trips, S) iterations: span = that times the step, in the loop variable's
 * units. One slice covers the whole loop (span at least its length), clamped to int32. */
void rt_plan_split(const rt_kernel_meta *k, rt_launch_plan *plan, int S, CUdeviceptr ws, CUdeviceptr cnt)
{
    /* trips is any count an RPN gives (up to int64's largest): no sum or product overflows */
    int64_t t = plan->split_trips, per = S > 1 ? t / S + (t % S != 0) : t;
    plan->split_span = per > INT32_MAX / k->split_step ? INT32_MAX : (int32_t)(per * k->split_step);
    plan->split_ws = ws;
    plan->split_cnt = cnt;
    plan->grid[k->split_dim] = (unsigned)S;
}
