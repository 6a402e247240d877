/* test_tmap.c: TMA tensor maps, without a GPU: the //@tmap metadata lines (every field, every
 * malformed form) and what rt_plan_launch makes of them: the descriptors cuTensorMapEncodeTiled
 * will get, the hidden parameters after the arguments, the launch-time checks with their
 * messages, and the empty maps that stand for a zero extent. */
#include <stdint.h>

#include "tilert_internal.h"
#include "unit.h"
#include "unit_meta.h"

/* A tf32 product C[M, N] = A[M, K] B[K, N]; B's rows are padded to a multiple of 4 elements.
 * Then a kernel over 2-byte types with a scalar row pitch, and one without maps. */
static const char tmap_meta[] =
    "//@tilec 1\n"
    "//@kernel mm_tf32 threads 384 smem 196608 regs 168\n"
    "//@arg A ptr f32 16\n"
    "//@arg B ptr f32 16\n"
    "//@arg C ptr f32 16\n"
    "//@arg M size i32 4\n"
    "//@arg K size i32 4\n"
    "//@arg N size i32 4\n"
    "//@grid a5 128 cdiv\n"
    "//@tmap a0 tf32 128 128 32 | a3 | a4 | a4\n"
    "//@grid a3 128 cdiv\n"
    "//@tmap a1 f32 0 32 64 | a4 | a5 | a5 4 cdiv 4 *\n"
    "//@end\n"
    "//@tilec 1\n"
    "//@kernel half threads 128 smem 0 regs 32\n"
    "//@arg X ptr f16 16\n"
    "//@arg Y ptr bf16 2\n"
    "//@arg s scalar f32 4\n"
    "//@arg R size i32 4\n"
    "//@arg N size i32 4\n"
    "//@arg ld scalar i64 8\n"
    "//@tmap a0 f16 64 256 32 | a3 | a4 | a5\n"
    "//@assume a3 0 >= | R >= 0\n"
    "//@tmap a1 bf16 32 1 16 | a3 2 * | a4 a3 / | a4\n"
    "//@tmap a1 f16 0 8 8 | 1 | 8 | 8\n"
    "//@end\n"
    "//@tilec 1\n"
    "//@kernel plain threads 32 smem 0 regs 8\n"
    "//@arg N size i32 4\n"
    "//@end\n";

static rt_meta meta;

static bool rpn_is(const rpn_expr *e, const char *want)
{
    static const char *const op_text[] = {
        [RPN_ADD] = "+", [RPN_SUB] = "-", [RPN_MUL] = "*", [RPN_DIV] = "/", [RPN_MOD] = "%",
        [RPN_CDIV] = "cdiv", [RPN_MIN] = "min", [RPN_MAX] = "max",
    };
    char got[256] = "";
    size_t len = 0;
    for (int i = 0; i < e->n && len < sizeof got; i++) {
        const rpn_tok *t = &e->tok[i];
        const char *sep = i ? " " : "";
        if (t->op == RPN_INT)
            len += (size_t)snprintf(got + len, sizeof got - len, "%s%lld", sep, (long long)t->v);
        else if (t->op == RPN_ARG)
            len += (size_t)snprintf(got + len, sizeof got - len, "%sa%lld", sep, (long long)t->v);
        else if ((size_t)t->op < sizeof op_text / sizeof op_text[0] && op_text[t->op])
            len += (size_t)snprintf(got + len, sizeof got - len, "%s%s", sep, op_text[t->op]);
        else
            len += (size_t)snprintf(got + len, sizeof got - len, "%s?", sep);
    }
    return strcmp(got, want) == 0;
}

static bool tmap_is(const rt_tmap_meta *t, int arg, rt_tmap_type type, int swizzle, int box_rows,
                    int box_cols, const char *rows, const char *cols, const char *pitch)
{
    return t->arg == arg && t->type == type && t->swizzle == swizzle && t->box_rows == box_rows &&
           t->box_cols == box_cols && rpn_is(&t->rows, rows) && rpn_is(&t->cols, cols) &&
           rpn_is(&t->pitch, pitch);
}

static void parse_valid(void)
{
    const rt_kernel_meta *k = &meta.k[0];
    unit_check(meta.nk == 3 && k->nargs == 6 && k->ngrid == 2 && k->ntmaps == 2,
               "tmap lines among grid lines", "nk %d nargs %d ngrid %d ntmaps %d", meta.nk,
               k->nargs, k->ngrid, k->ntmaps);
    unit_check(tmap_is(&k->tmaps[0], 0, RT_TMAP_TF32, 128, 128, 32, "a3", "a4", "a4"),
               "tmap tf32 swizzle 128, box 128 x 32", "arg %d type %d swizzle %d box %d x %d",
               k->tmaps[0].arg, (int)k->tmaps[0].type, k->tmaps[0].swizzle, k->tmaps[0].box_rows,
               k->tmaps[0].box_cols);
    unit_check(tmap_is(&k->tmaps[1], 1, RT_TMAP_F32, 0, 32, 64, "a4", "a5", "a5 4 cdiv 4 *"),
               "tmap f32 no swizzle, box 32 x 64 (256 bytes), computed pitch", "");
    k = &meta.k[1];
    unit_check(k->ntmaps == 3 && k->nassumes == 1 &&
                   tmap_is(&k->tmaps[0], 0, RT_TMAP_F16, 64, 256, 32, "a3", "a4", "a5") &&
                   tmap_is(&k->tmaps[1], 1, RT_TMAP_BF16, 32, 1, 16, "a3 2 *", "a4 a3 /", "a4") &&
                   tmap_is(&k->tmaps[2], 1, RT_TMAP_F16, 0, 8, 8, "1", "8", "8"),
               "tmap f16, bf16, f16 over bf16, swizzles 64 and 32, constant extents",
               "ntmaps %d", k->ntmaps);
    k = &meta.k[2];
    unit_check(k->ntmaps == 0 && k->tmaps == NULL, "no tmap lines: no maps", "ntmaps %d",
               k->ntmaps);
    unit_check(rt_tmap_elem_size(RT_TMAP_F32) == 4 && rt_tmap_elem_size(RT_TMAP_TF32) == 4 &&
                   rt_tmap_elem_size(RT_TMAP_F16) == 2 && rt_tmap_elem_size(RT_TMAP_BF16) == 2 &&
                   !strcmp(rt_tmap_type_name(RT_TMAP_TF32), "tf32") &&
                   !strcmp(rt_tmap_type_name(RT_TMAP_BF16), "bf16") &&
                   !strcmp(rt_tmap_type_name((rt_tmap_type)9), "?"),
               "tmap element sizes and names", "");

    /* Eight maps is the limit, not one fewer. */
    char text[2048] = "//@tilec 1\n//@kernel k threads 32 smem 0 regs 8\n//@arg X ptr f32 16\n";
    for (int i = 0; i < 8; i++)
        strcat(text, "//@tmap a0 f32 0 1 4 | 1 | 4 | 4\n");
    strcat(text, "//@end\n");
    rt_meta m;
    tilert_status s = rt_meta_parse(text, &m);
    unit_check(s == TILERT_OK && m.k[0].ntmaps == RT_MAX_TMAPS && RT_MAX_TMAPS == 8,
               "tmap eight maps", "%s", s ? tilert_last_error() : "");
    if (s == TILERT_OK)
        rt_meta_free(&m);
}

static void malformed(const char *name, const char *text, const char *words)
{
    unit_meta_malformed("tmap", name, text, words);
}

/* Line 1 kernel, lines 2-4 arguments: a //@tmap on line 5. */
#define KERNEL                                                                                 \
    "//@kernel k threads 128 smem 0 regs 10\n"                                                 \
    "//@arg A ptr f32 16\n//@arg H ptr f16 16\n//@arg N size i32 4\n"
#define END "//@end\n"

static void parse_malformed(void)
{
    malformed("argument out of range", KERNEL "//@tmap a3 f32 0 8 8 | a2 | a2 | a2\n" END,
              "metadata line 5: tensor map of a nonexistent argument: //@tmap a3 f32");
    malformed("argument not aN", KERNEL "//@tmap A f32 0 8 8 | a2 | a2 | a2\n" END,
              "line 5: a tensor map's first field must be aN");
    malformed("argument a-1", KERNEL "//@tmap a-1 f32 0 8 8 | a2 | a2 | a2\n" END, "must be aN");
    malformed("argument a0x", KERNEL "//@tmap a0x f32 0 8 8 | a2 | a2 | a2\n" END, "must be aN");
    malformed("size argument", KERNEL "//@tmap a2 f32 0 8 8 | a2 | a2 | a2\n" END,
              "line 5: tensor map of an argument that is not a pointer");
    malformed("bad type", KERNEL "//@tmap a0 f64 0 8 8 | a2 | a2 | a2\n" END,
              "line 5: tensor map type must be f32, tf32, f16, bf16 or u8");
    malformed("type TF32", KERNEL "//@tmap a0 TF32 0 8 8 | a2 | a2 | a2\n" END,
              "must be f32, tf32, f16, bf16 or u8");
    malformed("f16 map of f32", KERNEL "//@tmap a0 f16 0 8 8 | a2 | a2 | a2\n" END,
              "line 5: tensor map type f16 does not fit the argument's f32 elements");
    malformed("bf16 map of f32", KERNEL "//@tmap a0 bf16 0 8 8 | a2 | a2 | a2\n" END,
              "tensor map type bf16 does not fit the argument's f32 elements");
    malformed("tf32 map of f16", KERNEL "//@tmap a1 tf32 0 8 4 | a2 | a2 | a2\n" END,
              "tensor map type tf32 does not fit the argument's f16 elements");
    malformed("f32 map of f16", KERNEL "//@tmap a1 f32 0 8 4 | a2 | a2 | a2\n" END,
              "tensor map type f32 does not fit the argument's f16 elements");
    malformed("u8 map of f16", KERNEL "//@tmap a1 u8 0 8 16 | a2 | a2 | a2\n" END,
              "tensor map type u8 does not fit the argument's f16 elements");
    malformed("f32 map of i32",
              "//@kernel k threads 32 smem 0 regs 8\n//@arg I ptr i32 16\n"
              "//@tmap a0 f32 0 8 4 | 1 | 4 | 4\n" END,
              "tensor map type f32 does not fit the argument's i32 elements");
    malformed("swizzle 16", KERNEL "//@tmap a0 f32 16 8 4 | a2 | a2 | a2\n" END,
              "line 5: tensor map swizzle must be 0, 32, 64 or 128");
    malformed("swizzle 256", KERNEL "//@tmap a0 f32 256 8 4 | a2 | a2 | a2\n" END,
              "swizzle must be 0, 32, 64 or 128");
    malformed("swizzle -32", KERNEL "//@tmap a0 f32 -32 8 4 | a2 | a2 | a2\n" END,
              "swizzle must be 0, 32, 64 or 128");
    malformed("swizzle 128B", KERNEL "//@tmap a0 f32 128B 8 4 | a2 | a2 | a2\n" END,
              "swizzle must be 0, 32, 64 or 128");
    malformed("box rows 0", KERNEL "//@tmap a0 f32 0 0 4 | a2 | a2 | a2\n" END,
              "line 5: tensor map box dimensions must be 1..256");
    malformed("box rows 257", KERNEL "//@tmap a0 f32 0 257 4 | a2 | a2 | a2\n" END,
              "box dimensions must be 1..256");
    malformed("box cols 0", KERNEL "//@tmap a0 f32 0 8 0 | a2 | a2 | a2\n" END,
              "box dimensions must be 1..256");
    malformed("box cols 260", KERNEL "//@tmap a1 f16 0 8 260 | a2 | a2 | a2\n" END,
              "box dimensions must be 1..256");
    malformed("box cols 8x", KERNEL "//@tmap a0 f32 0 8 8x | a2 | a2 | a2\n" END,
              "box dimensions must be 1..256");
    malformed("box row of 24 bytes", KERNEL "//@tmap a0 f32 0 8 6 | a2 | a2 | a2\n" END,
              "line 5: tensor map box row is not a multiple of 16 bytes");
    malformed("box row of 8 bytes", KERNEL "//@tmap a1 f16 0 8 4 | a2 | a2 | a2\n" END,
              "box row is not a multiple of 16 bytes");
    malformed("box row of 64 bytes, swizzle 32",
              KERNEL "//@tmap a0 f32 32 8 16 | a2 | a2 | a2\n" END,
              "line 5: tensor map box row is wider than its swizzle");
    malformed("box row of 128 bytes, swizzle 64",
              KERNEL "//@tmap a1 f16 64 8 64 | a2 | a2 | a2\n" END, "wider than its swizzle");
    malformed("box row of 256 bytes, swizzle 128",
              KERNEL "//@tmap a0 tf32 128 8 64 | a2 | a2 | a2\n" END, "wider than its swizzle");
    malformed("one extent missing", KERNEL "//@tmap a0 f32 0 8 8 | a2 | a2\n" END,
              "line 5: expected //@tmap aP TYPE SWIZZLE BOXROWS BOXCOLS [if-aligned] [rows8] | ROWS | COLS | PITCH");
    malformed("no extents", KERNEL "//@tmap a0 f32 0 8 8\n" END, "expected //@tmap");
    malformed("a fourth extent", KERNEL "//@tmap a0 f32 0 8 8 | a2 | a2 | a2 | a2\n" END,
              "expected //@tmap");
    malformed("bar without spaces", KERNEL "//@tmap a0 f32 0 8 8 |a2 | a2 | a2\n" END,
              "expected //@tmap");
    malformed("empty extent", KERNEL "//@tmap a0 f32 0 8 8 | | a2 | a2\n" END, "expected //@tmap");
    malformed("box cols missing", KERNEL "//@tmap a0 f32 0 8 | a2 | a2 | a2\n" END,
              "expected //@tmap");
    malformed("extra head word", KERNEL "//@tmap a0 f32 0 8 8 8 | a2 | a2 | a2\n" END,
              "expected //@tmap");
    malformed("empty line", KERNEL "//@tmap\n" END, "expected //@tmap");
    malformed("rows RPN lacks operands", KERNEL "//@tmap a0 f32 0 8 8 | a2 + | a2 | a2\n" END,
              "line 5: RPN operator + lacks operands");
    malformed("cols RPN argument out of range", KERNEL "//@tmap a0 f32 0 8 8 | a2 | a3 | a2\n" END,
              "line 5: RPN argument a3 out of range");
    malformed("pitch RPN unknown token", KERNEL "//@tmap a0 f32 0 8 8 | a2 | a2 | a2 x\n" END,
              "line 5: unknown RPN token x");
    malformed("pitch RPN leaves two values", KERNEL "//@tmap a0 f32 0 8 8 | a2 | a2 | a2 4\n" END,
              "leaves 2 values");
    char text[2048] = "//@kernel k threads 32 smem 0 regs 8\n//@arg X ptr f32 16\n";
    for (int i = 0; i < 9; i++)
        strcat(text, "//@tmap a0 f32 0 1 4 | 1 | 4 | 4\n");
    strcat(text, END);
    malformed("nine maps", text, "line 11: more than 8 tensor maps");
    malformed("arg after tmap",
              KERNEL "//@tmap a0 f32 0 8 8 | a2 | a2 | a2\n//@arg M size i32 4\n" END,
              "line 6: //@arg after //@grid, //@assume, //@tmap, //@cluster or //@split");
    malformed("tmap outside a kernel", "//@tmap a0 f32 0 8 8 | 1 | 8 | 8\n",
              "line 1: outside a //@kernel");
}

static void mm_args(tilert_arg *a, int M, int K, int N)
{
    a[0] = tilert_ptr(0x10000);
    a[1] = tilert_ptr(0x20000);
    a[2] = tilert_ptr(0x30000);
    a[3] = tilert_i32(M);
    a[4] = tilert_i32(K);
    a[5] = tilert_i32(N);
}

static void half_args(tilert_arg *a, int R, int N, int64_t ld)
{
    a[0] = tilert_ptr(0x40000);
    a[1] = tilert_ptr(0x50000);
    a[2] = tilert_f32(2.0f);
    a[3] = tilert_i32(R);
    a[4] = tilert_i32(N);
    a[5].kind = TILERT_ARG_I64, a[5].v.i64 = ld;
}

static bool desc_is(const rt_tmap_desc *d, CUdeviceptr base, CUtensorMapDataType type,
                    CUtensorMapSwizzle swizzle, uint64_t cols, uint64_t rows, uint64_t stride,
                    uint32_t box_cols, uint32_t box_rows, bool empty)
{
    return d->base == base && d->type == type && d->swizzle == swizzle && d->dim[0] == cols &&
           d->dim[1] == rows && d->stride[0] == stride && d->box[0] == box_cols &&
           d->box[1] == box_rows && d->empty == empty;
}

static void check_desc(const char *name, const rt_tmap_desc *d, CUdeviceptr base,
                       CUtensorMapDataType type, CUtensorMapSwizzle swizzle, uint64_t cols,
                       uint64_t rows, uint64_t stride, uint32_t box_cols, uint32_t box_rows,
                       bool empty)
{
    unit_check(desc_is(d, base, type, swizzle, cols, rows, stride, box_cols, box_rows, empty),
               name,
               "base 0x%llx type %d swizzle %d dim {%llu, %llu} stride %llu box {%u, %u} "
               "empty %d",
               (unsigned long long)d->base, (int)d->type, (int)d->swizzle,
               (unsigned long long)d->dim[0], (unsigned long long)d->dim[1],
               (unsigned long long)d->stride[0], (unsigned)d->box[0], (unsigned)d->box[1],
               (int)d->empty);
}

static void expect(const char *name, tilert_status got, tilert_status want, const char *words)
{
    unit_check(got == want && (!words || strstr(tilert_last_error(), words)), name,
               "status %s (wanted %s), message \"%s\"%s%s", tilert_status_name(got),
               tilert_status_name(want), got ? tilert_last_error() : "",
               words ? " wanted to contain: " : "", words ? words : "");
}

static void plan_matmul(void)
{
    const rt_kernel_meta *k = &meta.k[0];
    tilert_arg a[6];
    rt_launch_plan p;
    memset(&p, 0xab, sizeof p);
    mm_args(a, 300, 200, 130);
    tilert_status s = rt_plan_launch(k, a, 6, &p);
    if (!unit_check(s == TILERT_OK, "plan matmul with maps", "%s", tilert_last_error()))
        return;
    unit_check(p.ntmaps == 2 && p.grid[0] == 2 && p.grid[1] == 3 && !p.empty,
               "plan matmul: two maps, grid 2 x 3", "ntmaps %d grid %u %u", p.ntmaps, p.grid[0],
               p.grid[1]);
    check_desc("plan A: tf32, swizzle 128, {K, M}, 4K bytes, box {32, 128}", &p.tmap[0], 0x10000,
               CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, CU_TENSOR_MAP_SWIZZLE_128B, 200, 300, 800, 32,
               128, false);
    check_desc("plan B: f32, no swizzle, {N, K}, pitch padded to 132 elements", &p.tmap[1],
               0x20000, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, CU_TENSOR_MAP_SWIZZLE_NONE, 130, 200,
               528, 64, 32, false);

    /* params: the six arguments, then the maps' storage, in line order, 64-byte aligned. */
    int32_t M, N;
    CUdeviceptr C;
    memcpy(&C, p.params[2], 8);
    memcpy(&M, p.params[3], 4);
    memcpy(&N, p.params[5], 4);
    unit_check(C == 0x30000 && M == 300 && N == 130, "plan arguments before the maps",
               "C 0x%llx M %d N %d", (unsigned long long)C, (int)M, (int)N);
    unit_check(p.params[6] == (void *)&p.tmap_store[0] &&
                   p.params[7] == (void *)&p.tmap_store[1] &&
                   (uintptr_t)p.params[6] % 64 == 0 && (uintptr_t)p.params[7] % 64 == 0 &&
                   sizeof p.tmap_store[0] == 128,
               "plan params[nargs + i] is map i's storage, 64-byte aligned, 128 bytes",
               "params[6] %p params[7] %p store %p %p", p.params[6], p.params[7],
               (void *)&p.tmap_store[0], (void *)&p.tmap_store[1]);
    bool zeroed = true;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < CU_TENSOR_MAP_NUM_QWORDS; j++)
            zeroed &= p.tmap_store[i].opaque[j] == 0;
    unit_check(zeroed, "plan clears the maps' storage", "");
    unit_check(sizeof p.params / sizeof p.params[0] == RT_MAX_ARGS + RT_MAX_TMAPS + 3,
               "plan has room for RT_MAX_ARGS + RT_MAX_TMAPS parameters and a split loop's three", "");

    /* The maps are hidden: callers still pass and are told about 6 arguments. */
    tilert_kernel kern;
    tilert_kernel_info info;
    memset(&kern, 0, sizeof kern);
    kern.meta = k;
    s = tilert_kernel_get_info(&kern, &info);
    unit_check(s == TILERT_OK && info.nargs == 6, "kernel info counts arguments, not maps",
               "nargs %d", info.nargs);
    tilert_arg eight[8];
    mm_args(eight, 300, 200, 130);
    eight[6] = tilert_ptr(0x60000), eight[7] = tilert_ptr(0x70000);
    expect("plan refuses arguments for the maps", rt_plan_launch(k, eight, 8, &p),
           TILERT_ERR_BAD_ARGS, "kernel mm_tf32 takes 6 arguments, got 8");
    expect("rt_plan_tmaps checks the count", rt_plan_tmaps(k, a, 5, p.tmap), TILERT_ERR_BAD_ARGS,
           "takes 6 arguments, got 5");

    /* Boundary values pass: extents of 2^31 - 1, pitch == cols. */
    mm_args(a, INT32_MAX, 4, 4);
    s = rt_plan_tmaps(k, a, 6, p.tmap);
    unit_check(s == TILERT_OK && p.tmap[0].dim[1] == INT32_MAX && p.tmap[0].stride[0] == 16 &&
                   p.tmap[1].stride[0] == 16,
               "plan M = 2^31 - 1, K = N = 4 (16-byte rows)", "%s", s ? tilert_last_error() : "");
}

static void plan_empty(void)
{
    const rt_kernel_meta *k = &meta.k[0];
    tilert_arg a[6];
    rt_launch_plan p;
    memset(&p, 0xab, sizeof p);
    mm_args(a, 300, 0, 130);
    tilert_status s = rt_plan_launch(k, a, 6, &p);
    if (!unit_check(s == TILERT_OK, "plan K = 0", "%s", tilert_last_error()))
        return;
    unit_check(!p.empty && p.grid[0] == 2 && p.grid[1] == 3, "plan K = 0 still launches",
               "empty %d", (int)p.empty);
    check_desc("plan K = 0: A (no columns) is empty, 1 x 1, keeps type, swizzle, box", &p.tmap[0],
               0, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, CU_TENSOR_MAP_SWIZZLE_128B, 1, 1, 16, 32, 128,
               true);
    check_desc("plan K = 0: B (no rows) is empty", &p.tmap[1], 0,
               CU_TENSOR_MAP_DATA_TYPE_FLOAT32, CU_TENSOR_MAP_SWIZZLE_NONE, 1, 1, 16, 64, 32,
               true);
    unit_check(p.params[6] == (void *)&p.tmap_store[0] && p.params[7] == (void *)&p.tmap_store[1],
               "plan K = 0: empty maps still take their parameters", "");

    mm_args(a, 0, 200, 130);
    s = rt_plan_launch(k, a, 6, &p);
    unit_check(s == TILERT_OK && p.empty && p.ntmaps == 2 && p.tmap[0].empty && !p.tmap[1].empty &&
                   p.tmap[1].dim[1] == 200,
               "plan M = 0: empty grid, A empty, B not", "status %s", tilert_status_name(s));

    /* An empty map reads no memory of its tensor, so that tensor's layout is not checked. */
    k = &meta.k[1];
    half_args(a, 4, 0, 3);
    s = rt_plan_tmaps(k, a, 6, p.tmap);
    unit_check(s == TILERT_OK && p.tmap[0].empty && p.tmap[1].empty && !p.tmap[2].empty,
               "plan N = 0: the 6-byte pitch of an empty map is not checked", "%s",
               s ? tilert_last_error() : "");
    check_desc("plan constant-extent f16 map over bf16 memory", &p.tmap[2], 0x50000,
               CU_TENSOR_MAP_DATA_TYPE_FLOAT16, CU_TENSOR_MAP_SWIZZLE_NONE, 8, 1, 16, 8, 8,
               false);
    rt_meta one;
    s = rt_meta_parse("//@kernel k threads 32 smem 0 regs 8\n//@arg X ptr f32 4\n"
                      "//@arg N size i32 4\n//@tmap a0 f32 0 1 4 | 1 | a1 | a1\n//@end\n",
                      &one);
    if (unit_check(s == TILERT_OK, "plan: a map over a 4-byte aligned pointer", "%s",
                   tilert_last_error())) {
        tilert_arg b[2] = {tilert_ptr(0x10004), tilert_i32(0)};
        s = rt_plan_tmaps(&one.k[0], b, 2, p.tmap);
        unit_check(s == TILERT_OK && p.tmap[0].empty,
                   "plan N = 0: the misaligned pointer of an empty map is not checked", "%s",
                   s ? tilert_last_error() : "");
        b[1] = tilert_i32(4);
        expect("plan N = 4: the misaligned pointer is refused",
               rt_plan_tmaps(&one.k[0], b, 2, p.tmap), TILERT_ERR_BAD_ARGS,
               "kernel k: tensor map 0 (X): pointer 0x10004 is not 16-byte aligned as TMA "
               "requires (N = 4)");
        rt_meta_free(&one);
    }
}

/* An if-aligned map (a store versioned on alignment, compiler/lower_tma_store.c) is built where
 * the pointer and the strides are 16-byte aligned and is the empty stand-in where they are not,
 * never a refusal: the kernel tests the same and stores from registers then. */
static void plan_if_aligned(void)
{
    rt_meta one;
    tilert_status s = rt_meta_parse("//@kernel k threads 32 smem 0 regs 8\n//@arg C ptr f16 2\n"
                                    "//@arg M size i32 4\n//@arg N size i32 4\n"
                                    "//@tmap a0 f16 128 64 64 if-aligned | a1 | a2 | a2\n"
                                    "//@tmap a0 f16 128 64 64 | a1 | a2 | a2\n//@end\n", &one);
    if (!unit_check(s == TILERT_OK && one.k[0].ntmaps == 2 && one.k[0].tmaps[0].if_aligned &&
                        !one.k[0].tmaps[1].if_aligned,
                    "tmap if-aligned parses, and only where written", "%s",
                    s ? tilert_last_error() : ""))
        return;
    const rt_kernel_meta *k = &one.k[0];
    rt_tmap_desc d[2];
    tilert_arg a[3] = {tilert_ptr(0x10000), tilert_i32(100), tilert_i32(136)};
    s = rt_plan_tmaps(k, a, 3, d);
    if (unit_check(s == TILERT_OK, "plan if-aligned, N = 136", "%s", s ? tilert_last_error() : ""))
        check_desc("plan if-aligned, N = 136: built", &d[0], 0x10000, CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                   CU_TENSOR_MAP_SWIZZLE_128B, 136, 100, 272, 64, 64, false);
    /* the same launches with only the if-aligned map, odd N and a shifted pointer */
    rt_kernel_meta first = *k;
    first.ntmaps = 1;
    a[2] = tilert_i32(37);
    s = rt_plan_tmaps(&first, a, 3, d);
    unit_check(s == TILERT_OK && d[0].empty, "plan if-aligned, N = 37: the stand-in, not a refusal",
               "%s empty %d", s ? tilert_last_error() : "", (int)d[0].empty);
    a[0] = tilert_ptr(0x10002), a[2] = tilert_i32(136);
    s = rt_plan_tmaps(&first, a, 3, d);
    unit_check(s == TILERT_OK && d[0].empty, "plan if-aligned, pointer + 2 bytes: the stand-in",
               "%s empty %d", s ? tilert_last_error() : "", (int)d[0].empty);
    expect("plan: the same map without if-aligned refuses that pointer", rt_plan_tmaps(k, a, 3, d),
           TILERT_ERR_BAD_ARGS, "not 16-byte aligned");
    malformed("if-aligned misspelt", "//@kernel k threads 32 smem 0 regs 8\n//@arg C ptr f16 2\n"
              "//@arg M size i32 4\n//@tmap a0 f16 128 64 64 aligned | a1 | a1 | a1\n//@end\n",
              "expected //@tmap aP TYPE SWIZZLE BOXROWS BOXCOLS [if-aligned]");
    rt_meta_free(&one);
}

/* rows8 (the swapped tf32 product's B, compiler/lower_tma.c): each 8 rows as (row / 4 % 2,
 * row % 4, row / 8), so that a box lands them in the order 0 4 1 5 2 6 3 7; rows a multiple of 8
 * or the map is refused (if-aligned: the stand-in, of the same rank). */
static void plan_rows8(void)
{
    rt_meta one;
    tilert_status s = rt_meta_parse("//@kernel k threads 32 smem 0 regs 8\n//@arg B ptr f32 16\n"
                                    "//@arg K size i32 4\n//@arg N size i32 4\n//@arg L size i32 4\n"
                                    "//@tmap a0 tf32 128 32 32 rows8 | a1 | a2 | a2\n"
                                    "//@tmap a0 tf32 128 32 32 if-aligned rows8 | a1 | a2 | a2 | a3 | a1 a2 *\n"
                                    "//@end\n", &one);
    if (!unit_check(s == TILERT_OK && one.k[0].ntmaps == 2 && one.k[0].tmaps[0].rows8 &&
                        !one.k[0].tmaps[0].if_aligned && one.k[0].tmaps[1].rows8 && one.k[0].tmaps[1].if_aligned,
                    "tmap rows8 parses, after if-aligned or alone", "%s", s ? tilert_last_error() : ""))
        return;
    const rt_kernel_meta *k = &one.k[0];
    rt_tmap_desc d[2];
    tilert_arg a[4] = {tilert_ptr(0x20000), tilert_i32(64), tilert_i32(100), tilert_i32(3)};
    s = rt_plan_tmaps(k, a, 4, d);
    unit_check(s == TILERT_OK && d[0].rank == 4 && d[0].dim[0] == 100 && d[0].dim[1] == 2 && d[0].dim[2] == 4 &&
                   d[0].dim[3] == 8 && d[0].stride[0] == 1600 && d[0].stride[1] == 400 && d[0].stride[2] == 3200 &&
                   d[0].box[0] == 32 && d[0].box[1] == 2 && d[0].box[2] == 4 && d[0].box[3] == 4 &&
                   d[0].swizzle == CU_TENSOR_MAP_SWIZZLE_128B && !d[0].empty,
               "plan rows8, K = 64, N = 100: {N, 2, 4, K / 8}, strides {4 N, N, 8 N} elements, box {32, 2, 4, 4}",
               "%s rank %d dim {%llu, %llu, %llu, %llu} stride {%llu, %llu, %llu} box {%u, %u, %u, %u}",
               s ? tilert_last_error() : "", d[0].rank, (unsigned long long)d[0].dim[0],
               (unsigned long long)d[0].dim[1], (unsigned long long)d[0].dim[2], (unsigned long long)d[0].dim[3],
               (unsigned long long)d[0].stride[0], (unsigned long long)d[0].stride[1],
               (unsigned long long)d[0].stride[2], d[0].box[0], d[0].box[1], d[0].box[2], d[0].box[3]);
    unit_check(s == TILERT_OK && d[1].rank == 5 && d[1].dim[4] == 3 && d[1].stride[3] == 64 * 100 * 4 &&
                   d[1].box[4] == 1 && !d[1].empty,
               "plan rows8 with an outer dimension: rank 5, the batch last", "%s rank %d dim[4] %llu stride[3] %llu",
               s ? tilert_last_error() : "", d[1].rank, (unsigned long long)d[1].dim[4],
               (unsigned long long)d[1].stride[3]);
    a[1] = tilert_i32(60);
    rt_kernel_meta second = *k;
    second.tmaps = &one.k[0].tmaps[1];
    second.ntmaps = 1;
    s = rt_plan_tmaps(&second, a, 4, d);
    unit_check(s == TILERT_OK && d[0].empty && d[0].rank == 5, "plan if-aligned rows8, K = 60: the stand-in, rank 5",
               "%s empty %d rank %d", s ? tilert_last_error() : "", (int)d[0].empty, d[0].rank);
    expect("plan rows8, K = 60: refused", rt_plan_tmaps(k, a, 4, d), TILERT_ERR_BAD_ARGS,
           "60 rows are not whole groups of 8");
    malformed("rows8 before if-aligned", "//@kernel k threads 32 smem 0 regs 8\n//@arg B ptr f32 16\n"
              "//@arg K size i32 4\n//@tmap a0 tf32 128 32 32 rows8 if-aligned | a1 | a1 | a1\n//@end\n",
              "expected //@tmap");
    malformed("rows8 with two outer dimensions", "//@kernel k threads 32 smem 0 regs 8\n//@arg B ptr f32 16\n"
              "//@arg K size i32 4\n//@tmap a0 tf32 128 32 32 rows8 | a1 | a1 | a1 | a1 | a1 | a1 | a1\n//@end\n",
              "at most 1 outer dimension");
    malformed("rows8 box rows 12", "//@kernel k threads 32 smem 0 regs 8\n//@arg B ptr f32 16\n"
              "//@arg K size i32 4\n//@tmap a0 tf32 128 12 32 rows8 | a1 | a1 | a1\n//@end\n",
              "multiple of 8");
    rt_meta_free(&one);
}

static void plan_refused(void)
{
    const rt_kernel_meta *k = &meta.k[0];
    tilert_arg a[6];
    rt_launch_plan p;
    mm_args(a, 300, 6, 128);
    expect("plan refuses rows 24 bytes apart", rt_plan_launch(k, a, 6, &p), TILERT_ERR_BAD_ARGS,
           "kernel mm_tf32: tensor map 0 (A): rows are 24 bytes apart, not a multiple of 16 as "
           "TMA requires (M = 300, K = 6)");
    mm_args(a, 300, 8, 130);
    unit_check(rt_plan_launch(k, a, 6, &p) == TILERT_OK, "plan N = 130: B's pitch is padded",
               "%s", tilert_last_error());

    k = &meta.k[1];
    half_args(a, 4, 64, 64);
    tilert_status s = rt_plan_launch(k, a, 6, &p);
    if (unit_check(s == TILERT_OK, "plan half", "%s", tilert_last_error())) {
        check_desc("plan X: f16, swizzle 64, pitch from an i64 scalar", &p.tmap[0], 0x40000,
                   CU_TENSOR_MAP_DATA_TYPE_FLOAT16, CU_TENSOR_MAP_SWIZZLE_64B, 64, 4, 128, 32,
                   256, false);
        check_desc("plan Y: bf16, swizzle 32, {N / R, 2 R}", &p.tmap[1], 0x50000,
                   CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, CU_TENSOR_MAP_SWIZZLE_32B, 16, 8, 128, 16, 1,
                   false);
        unit_check(p.ntmaps == 3 && p.params[6] == (void *)&p.tmap_store[0] &&
                       p.params[8] == (void *)&p.tmap_store[2],
                   "plan half: three hidden parameters after six arguments", "");
    }
    half_args(a, 4, 64, 60);
    expect("plan refuses pitch < cols", rt_plan_launch(k, a, 6, &p), TILERT_ERR_BAD_ARGS,
           "kernel half: tensor map 0 (X): pitch 60 is less than the 64 columns "
           "(R = 4, N = 64, ld = 60)");
    half_args(a, 4, 64, 68);
    expect("plan refuses f16 rows 136 bytes apart", rt_plan_launch(k, a, 6, &p),
           TILERT_ERR_BAD_ARGS, "tensor map 0 (X): rows are 136 bytes apart, not a multiple of 16");
    half_args(a, 4, 64, 72);
    a[1] = tilert_ptr(0x50008);   /* 2-byte aligned is enough for the argument, not for TMA */
    expect("plan refuses a pointer TMA cannot use", rt_plan_launch(k, a, 6, &p),
           TILERT_ERR_BAD_ARGS,
           "kernel half: tensor map 1 (Y): pointer 0x50008 is not 16-byte aligned as TMA "
           "requires (R = 4, N = 64)");
    half_args(a, 4, 64, INT64_C(1) << 31);
    expect("plan refuses pitch 2^31", rt_plan_launch(k, a, 6, &p), TILERT_ERR_BAD_ARGS,
           "kernel half: tensor map 0 (X): pitch is 2147483648 (allowed 0..2147483647) "
           "(R = 4, N = 64, ld = 2147483648)");
    half_args(a, 4, 64, -64);
    expect("plan refuses a negative pitch", rt_plan_launch(k, a, 6, &p), TILERT_ERR_BAD_ARGS,
           "tensor map 0 (X): pitch is -64 (allowed 0..2147483647)");
    half_args(a, 1 << 30, 1 << 30, 1 << 30);
    expect("plan refuses rows 2^31", rt_plan_launch(k, a, 6, &p), TILERT_ERR_BAD_ARGS,
           "kernel half: tensor map 1 (Y): rows is 2147483648 (allowed 0..2147483647) "
           "(R = 1073741824, N = 1073741824)");
    half_args(a, 0, 64, 64);
    expect("plan reports an extent's arithmetic error", rt_plan_launch(k, a, 6, &p),
           TILERT_ERR_BAD_ARGS,
           "kernel half: tensor map 1 (Y) cols: division by zero (64 / 0) (N = 64, R = 0)");
    half_args(a, -1, 64, 64);
    expect("plan checks the arguments before the maps", rt_plan_launch(k, a, 6, &p),
           TILERT_ERR_BAD_ARGS,
           "(R): negative size -1");
}

int main(void)
{
    tilert_status s = rt_meta_parse(tmap_meta, &meta);
    if (!unit_check(s == TILERT_OK, "tmap metadata parses", "%s", tilert_last_error()))
        return unit_exit();
    parse_valid();
    parse_malformed();
    plan_matmul();
    plan_empty();
    plan_if_aligned();
    plan_rows8();
    plan_refused();
    rt_meta_free(&meta);
    return unit_exit();
}
