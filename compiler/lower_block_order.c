/* lower_block_order.c: the order in which a tiled product's blocks take their tiles.
 *
 * A kernel that walks K in a pipelined loop of products over a 2-D grid of output tiles (block.x
 * picks A's rows, block.y B's columns, or the other way round) reads
 * each A row block once for every column block and each B column block once for every row block;
 * what keeps that traffic in L2 is which tiles run at the same time. The hardware starts blocks
 * roughly in index order, block.x fastest: a wave of a large grid is then a few whole columns of
 * tiles, whose B blocks it shares but whose A blocks, all of them, it streams. On an H100, tf32
 * A^T @ B^T at 8192^3 in index order read 15.4 GB from DRAM against 8.5 GB for the same loop in
 * another layout, and ran at 0.57 of cuBLAS against 0.73 when its blocks went down 8 row blocks
 * at a time (docs/performance.md).
 *
 * So such a kernel numbers its blocks in groups: the launch's linear block number walks down
 * GROUP row blocks (block.x), then across the columns (block.y), then the next GROUP rows; the
 * last group takes what rows are left. The mapping is a bijection of [0, nx) x [0, ny) onto
 * itself computed once per block, and CUDA promises no order among blocks, so a kernel cannot
 * tell: block.x and block.y keep their ranges (and every fact the grid gives about them). A
 * grid of at most GROUP row blocks is left exactly as it was. Kernels that number their own
 * blocks (a 1-D grid, as the examples) are not touched.
 *
 * Only large grids: at least WAVE_BLOCKS blocks a multiprocessor, several waves. Measured on an
 * H100 with 128 x 128 tiles (two blocks a multiprocessor), the grouped order gained 3-22% at
 * 8192^3 (4096 blocks) and lost 3-5% at 4096^3 (1024 blocks, four waves); 64 x 64 f32 tiles at
 * 4096^3 (4096 blocks) ran the same either way. */
#include "lower.h"

enum { GROUP = 8, WAVE_BLOCKS = 8 };

/* The scalar lets seen so far, to look through `let m0 = block.x * 128`. */
typedef struct {
    const Sym *sym[64];
    const Expr *init[64];
    int n;
} Lets;

/* Bit d set: e depends on block.d; bit 3: on the loop variable `loop`. */
static unsigned uses(const Lets *lets, const Expr *e, const Sym *loop, int depth)
{
    if (!e || depth > 16)
        return 0;
    switch (e->kind) {
    case E_BLOCK:
        return 1u << e->ival;
    case E_NAME:
        if (e->sym == loop)
            return 8;
        for (int i = lets->n - 1; i >= 0; i--)
            if (lets->sym[i] == e->sym)
                return uses(lets, lets->init[i], loop, depth + 1);
        return 0;
    case E_INDEX: {
        unsigned u = 0;
        for (int i = 0; i < e->nidx; i++)
            u |= uses(lets, e->idx[i].start, loop, depth + 1);
        return u;
    }
    case E_CALL: {
        unsigned u = 0;
        for (int i = 0; i < e->nargs; i++)
            u |= uses(lets, e->args[i], loop, depth + 1);
        return u;
    }
    default:
        return uses(lets, e->a, loop, depth + 1) | uses(lets, e->b, loop, depth + 1);
    }
}

/* A product of tiles of an output grid: A a window moved by the loop and one block index, B a
 * window moved by the loop and the other (a GEMM's A[m0 +: BM, k +: BK] @ B[k +: BK, n0 +: BN],
 * in any layout). Attention's Q @ K^T is not one (Q stays, and K's head is the other index). */
static bool tiled_product(const Lets *lets, const Expr *mm, const Sym *loop)
{
    if (!mm || mm->kind != E_BINARY || mm->op != OP_MATMUL)
        return false;
    bool tf32;
    const Expr *x = matmul_operand(mm->a, &tf32), *y = matmul_operand(mm->b, &tf32);
    if (x->kind != E_INDEX || y->kind != E_INDEX)
        return false;
    unsigned ua = uses(lets, x, loop, 0), ub = uses(lets, y, loop, 0), ba = ua & 7, bb = ub & 7;
    return (ua & 8) && (ub & 8) && ((ba == 1 && bb == 2) || (ba == 2 && bb == 1));
}

static bool walk(Lets *lets, const Stmt *s, const Sym *loop)
{
    if (!s)
        return false;
    switch (s->kind) {
    case S_BLOCK:
        for (int i = 0; i < s->nbody; i++)
            if (walk(lets, s->body[i], loop))
                return true;
        return false;
    case S_FOR:
        return walk(lets, s->then, s->pipeline > 0 ? s->sym : loop);
    case S_IF:
        return walk(lets, s->then, loop) || walk(lets, s->els, loop);
    case S_ASSIGN:
        return loop && tiled_product(lets, s->rhs, loop);
    case S_LET:
        if (s->init && s->init->shape.rank == 0 && lets->n < 64) {
            lets->sym[lets->n] = s->sym;
            lets->init[lets->n++] = s->init;
        }
        return loop && tiled_product(lets, s->init, loop);
    case S_VAR:
        return loop && tiled_product(lets, s->init, loop);
    default:
        return false;
    }
}

static bool grouped(const Kernel *k)
{
    Lets lets = { .n = 0 };
    return k->ngrid == 2 && walk(&lets, k->body, NULL);
}

void block_order(Lower *c)
{
    Func *f = c->f;
    if (!grouped(c->k))
        return;
    const char *saved = f->cur_what;
    f->cur_what = "block index";
    int nx = ir_movsym(f, PT_U32, "%nctaid.x"), ny = ir_movsym(f, PT_U32, "%nctaid.y");
    /* linear number in launch order; its group of GROUP rows by all columns. Unsigned where
       it matters (division, minimum, comparison); the products and sums are the same bits
       either way, written as the element indices tilec computes in .s32 */
    int lin = ir_tern(f, OP_MAD, PT_S32, R(c->ctaid[1]), R(nx), R(c->ctaid[0]));
    int span = ir_bin(f, OP_MUL, PT_S32, R(ny), IMM(GROUP));
    int grp = ir_bin(f, OP_DIV, PT_U32, R(lin), R(span));
    int within = ir_bin(f, OP_SUB, PT_S32, R(lin), R(ir_bin(f, OP_MUL, PT_S32, R(grp), R(span))));
    int first = ir_bin(f, OP_MUL, PT_S32, R(grp), IMM(GROUP));
    int rows = ir_bin(f, OP_MIN, PT_U32, R(ir_bin(f, OP_SUB, PT_S32, R(nx), R(first))), IMM(GROUP));
    int y = ir_bin(f, OP_DIV, PT_U32, R(within), R(rows));
    int x = ir_bin(f, OP_SUB, PT_S32, R(within), R(ir_bin(f, OP_MUL, PT_S32, R(y), R(rows))));
    x = ir_bin(f, OP_ADD, PT_S32, R(first), R(x));
    /* ... in grids of at least WAVE_BLOCKS blocks a multiprocessor (%nsmid: at least the
       multiprocessors there are) */
    int nsm = ir_movsym(f, PT_U32, "%nsmid");
    int blocks = ir_bin(f, OP_MUL, PT_S32, R(nx), R(ny));
    int big = ir_setp(f, CMP_GE, PT_U32, R(blocks), R(ir_bin(f, OP_MUL, PT_S32, R(nsm), IMM(WAVE_BLOCKS))));
    c->ctaid[0] = ir_tern(f, OP_SELP, PT_S32, R(x), R(c->ctaid[0]), R(big));
    c->ctaid[1] = ir_tern(f, OP_SELP, PT_S32, R(y), R(c->ctaid[1]), R(big));
    f->cur_what = saved;
}
