/* lower_limits.c: the limits lowering keeps (tilec.h, "limits"): how far constant loops unroll,
 * and how many instructions a kernel may have.
 *
 * Unrolling multiplies code: six nested loops of 8 trips made 262144 copies of their body. A
 * constant loop unrolls only while the copies of its body, counted over the unrolled loops around
 * it, stay within MAX_UNROLL_COPIES; past that it stays a loop, which computes the same.
 *
 * The instruction limit is checked before the work: each statement outside any unrolled loop is
 * estimated first (an unrolled loop with everything it will copy), and one that would take the
 * kernel past MAX_KERNEL_INS is an error at that statement, with nothing lowered. The estimate
 * (est_expr) never counts more than lowering makes, so it cannot refuse a kernel that fits; it
 * falls short instead (address arithmetic, masks, reductions' shuffles), so the count is checked
 * again after each statement, and the first that goes past the limit is the error. Either way
 * lowering stops there: what is left would only make more code for a kernel that fails. */
#include "lower.h"

/* Estimates saturate here: far past the limit, and safe to add and multiply below it. */
static const int64_t EST_CAP = (int64_t)1 << 40;

static int64_t sat(int64_t v) { return v > EST_CAP ? EST_CAP : v; }
static int64_t sat_mul(int64_t a, int64_t b) { return a && b > EST_CAP / a ? EST_CAP : sat(a * b); }

int64_t unroll_trips(const Stmt *s, int64_t copies)
{
    enum { MAX_UNROLL_TRIPS = 8 };
    if (s->lo->kind != E_INT || s->hi->kind != E_INT || (s->step && s->step->kind != E_INT))
        return -1;
    int64_t step = s->step ? s->step->ival : 1;
    int64_t trips = s->hi->ival > s->lo->ival ? (s->hi->ival - s->lo->ival + step - 1) / step : 0;
    if (trips > MAX_UNROLL_TRIPS || (copies > 0 ? copies : 1) * (trips ? trips : 1) > MAX_UNROLL_COPIES)
        return -1;
    return trips;
}

/* A tile's elements per thread: the operations on it take at least that many instructions. */
static int64_t per_thread(Lower *c, Shape s)
{
    if (s.rank == 0)
        return 0;
    int64_t n = s.rank == 2 ? s.dim[0] * s.dim[1] : s.dim[0];   /* <= 2^22 (check) */
    return n > c->threads ? n / c->threads : 1;
}

/* Instructions e takes per thread, at least: one per element for an operation on a tile, one per
 * 16-byte vector (four elements) for a window's or a shared tile's access, M N K / threads FMAs
 * for a product on the FFMA path; nothing for constants, scalars (often folded), casts (free
 * between types held alike), the tensor cores' products (one instruction for many) and the
 * operands of a product or a shared tile's assignment (a pipelined loop copies them). */
static int64_t est_expr(Lower *c, Expr *e)
{
    if (!e)
        return 0;
    int64_t n = 0;
    switch (e->kind) {
    case E_INT: case E_FLOAT: case E_BOOL: case E_BLOCK:
        return 0;
    case E_NAME:
        return e->sym && e->sym->kind == SYM_VAR && e->sym->is_shared ? (per_thread(c, e->shape) + 3) / 4 : 0;
    case E_INDEX:
        for (int i = 0; i < e->nidx; i++)
            n = sat(n + est_expr(c, e->idx[i].start));
        return sat(n + (per_thread(c, e->shape) + 3) / 4);
    case E_BINARY:
        if (e->op == OP_MATMUL) {   /* its operands may come by a pipelined loop's copies */
            int M = (int)e->shape.dim[0], N = (int)e->shape.dim[1], K = (int)e->a->shape.dim[1];
            return matmul_plan(c, e)->row->tensor_cores ? 0 : sat_mul((int64_t)M * N / c->threads, K);
        }
        n = sat(est_expr(c, e->a) + est_expr(c, e->b));
        return sat(n + per_thread(c, e->shape));
    case E_CALL:
        for (int i = 0; i < e->nargs; i++)
            n = sat(n + est_expr(c, e->args[i]));
        return sat(n + per_thread(c, e->shape));
    case E_CAST:
        return est_expr(c, e->a);
    default:   /* unary */
        return sat(est_expr(c, e->a) + per_thread(c, e->shape));
    }
}

/* copies: the unrolled copies around s, for the unrolling rule inside it. */
static int64_t est_stmt(Lower *c, Stmt *s, int64_t copies)
{
    if (!s)
        return 0;
    switch (s->kind) {
    case S_BLOCK: {
        int64_t n = 0;
        for (int i = 0; i < s->nbody; i++)
            n = sat(n + est_stmt(c, s->body[i], copies));
        return n;
    }
    case S_LET: case S_VAR:
        return est_expr(c, s->init);
    case S_ASSIGN: case S_ATOMIC:
        if (s->lhs->kind == E_NAME && s->lhs->sym && s->lhs->sym->is_shared)
            return 0;   /* a pipelined loop may copy it, ahead of time */
        return sat(est_expr(c, s->lhs) + est_expr(c, s->rhs));
    case S_IF:
        return sat(est_expr(c, s->cond) + est_stmt(c, s->then, copies) + est_stmt(c, s->els, copies));
    case S_FOR: {
        int64_t trips = s->pipeline >= 1 ? -1 : unroll_trips(s, copies);
        if (trips < 0)
            return est_stmt(c, s->then, copies);
        return sat_mul(trips, est_stmt(c, s->then, copies * (trips ? trips : 1)));
    }
    default:
        return 0;
    }
}

bool lower_budget_before(Lower *c, Stmt *s)
{
    if (c->too_big)
        return false;
    int64_t copies = c->unroll_copies > 0 ? c->unroll_copies : 1;
    /* inside an unrolled loop, the loop's own estimate counted this statement already; blocks,
       ifs and loops that stay loops are counted statement by statement as they are lowered */
    bool leaf = s->kind == S_LET || s->kind == S_VAR || s->kind == S_ASSIGN || s->kind == S_ATOMIC;
    bool unrolled = s->kind == S_FOR && s->pipeline < 1 && unroll_trips(s, copies) >= 0;
    if (copies > 1 || !(leaf || unrolled))
        return true;
    int64_t total = sat(c->f->code.n + est_stmt(c, s, copies));
    if (total <= MAX_KERNEL_INS)
        return true;
    error_at(s->loc, "the kernel would reach about %lld instructions per thread with this "
             "statement, more than the %d a kernel may have: use smaller tiles or fewer unrolled "
             "loops", (long long)total, MAX_KERNEL_INS);
    c->too_big = c->failed = true;
    return false;
}

void lower_budget_after(Lower *c, Stmt *s)
{
    if (c->too_big || c->f->code.n <= MAX_KERNEL_INS)
        return;
    error_at(s->loc, "the kernel passes %d instructions per thread here, the most a kernel may "
             "have: use smaller tiles or fewer unrolled loops", MAX_KERNEL_INS);
    c->too_big = c->failed = true;
}
