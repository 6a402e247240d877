/* lower_print.c: print(x) on the GPU, calls of the CUDA runtime's device printf (vprintf) that
 * write the lines the interpreter writes. Exactly those (interp.c, print_value):
 *
 *   FILE:LINE: block (X, Y, Z): TEXT = TYPE[SHAPE] [e0, e1, ...]      rank 0 and 1 (no [SHAPE]
 *                                                                     and no brackets: rank 0)
 *   FILE:LINE: block (X, Y, Z): TEXT = TYPE[R, C]                     rank 2, then a line a row:
 *     [e0, e1, ...]
 *
 * FILE is the source's name as the compiler was given it, TEXT the expression as written (each
 * per cent sign of either doubled in the format). Floats with %.9g of the value as a double
 * (f16, bf16, fp8 and tf32 are held as f32: widened exactly), integers with %lld of their value
 * (i32 sign-extended, u32 zero-extended), bools as %s of "true" or "false".
 *
 * Who prints: one thread, thread 0, of block (0, 0, 0), or of every block with
 * --print-all-blocks (Options.print_all_blocks); the others branch around it. A scalar is the
 * same in every thread, so thread 0 prints its own copy. A tile's elements are spread over the
 * threads: they write it to the scratch area row-major, a barrier makes it visible, and thread 0
 * reads it back in order. The scratch is read after that barrier and written again only after
 * the next one (scratch_begin_write), so the block's other threads run on at once. A tile larger
 * than any GPU's shared memory is an error at the value (print slices of it).
 *
 * The call: vprintf(format, args), both generic addresses. The format is a module-scope .global
 * string (Func.strings); args is the .local buffer tilec_print_args, where each argument takes
 * 8 bytes, as C's variadic calls pass them: a double for a float, a long long for an integer, a
 * pointer for a string. CUDA's printf takes at most 32 arguments after the format, so a row is
 * one call of up to 32 values (29 after the three block coordinates of the first line), and a
 * longer one several calls: the first with the line's head, a loop of calls of 32 values each,
 * and the last with the closing bracket. Only with --print-all-blocks can another block's output
 * then come between the parts of such a line. Large tiles print every element, in loops rather
 * than in one call per element unrolled.
 *
 * A kernel that prints has a small stack frame (the buffer, and the call's); one that does not
 * has neither: nothing here runs for it. */
#include <string.h>
#include "lower.h"

enum { PRINT_MAX_ARGS = 32, PRINT_HEAD_ARGS = 3, ARG_BYTES = 8 };

typedef struct {
    Lower *c;
    ElemType type;         /* the value's element type */
    int local, args;       /* the argument buffer's .local and generic addresses (b64) */
    int yes, no;           /* bools: the generic addresses of "true" and "false" (b64) */
    int es;                /* bytes of one element in the scratch area */
} Printer;

/* The symbol of constant string s (len bytes, its NUL included), one per distinct string. */
static const char *string_sym(Lower *c, const char *s, int len)
{
    Func *f = c->f;
    int i = 0;
    while (i < f->strings.n && !(f->strings.v[i].len == len && !memcmp(f->strings.v[i].s, s, (size_t)len)))
        i++;
    if (i == f->strings.n) {
        PrintString p = { arena_strndup(c->a, s, (size_t)len), len };
        vec_push(&f->strings, p);
    }
    return arena_printf(c->a, "tilec_str%d_%s", i, c->k->name);
}

/* The generic address (b64) of constant string s. */
static int string_addr(Lower *c, const char *s)
{
    Func *f = c->f;
    int g = new_reg(f, RC_D);
    Ins *in = emit_ins(f, OP_MOVSYM, PT_U64);
    in->dst[0] = g;
    in->ndst = 1;
    in->src[0] = SYM(string_sym(c, s, (int)strlen(s) + 1));
    in->nsrc = 1;
    int r = new_reg(f, RC_D);
    in = emit_ins(f, OP_CVTAGEN, PT_U64);
    in->space = SP_GLOBAL;
    in->dst[0] = r;
    in->ndst = 1;
    in->src[0] = R(g);
    in->nsrc = 1;
    return r;
}

/* Text copied into a format: a per cent sign doubled, so that vprintf prints it as it is. */
static void put_literal(Buf *b, const char *s)
{
    for (; *s; s++)
        buf_puts(b, *s == '%' ? "%%" : (char[]){ *s, 0 });
}

static const char *elem_format(ElemType t)
{
    return t == TY_BOOL ? "%s" : type_is_float(t) ? "%.9g" : "%lld";
}

/* One call: vprintf(format, the buffer). */
static void call(Printer *p, const char *format)
{
    Func *f = p->c->f;
    int fmt = string_addr(p->c, format);
    Ins *in = emit_ins(f, OP_VPRINTF, PT_B64);
    in->src[0] = R(fmt);
    in->src[1] = R(p->args);
    in->nsrc = 2;
}

/* Argument `slot` of the next call: the 8 bytes in register r (b64). */
static void store_arg(Printer *p, int slot, int r)
{
    Func *f = p->c->f;
    Ins *in = emit_ins(f, OP_ST, PT_B64);
    in->space = SP_LOCAL;
    in->src[0] = R(p->local);
    in->src[1] = R(r);
    in->nsrc = 2;
    in->off = (int64_t)slot * ARG_BYTES;
    ir_naive_addr(f);
}

/* Argument `slot`: held value x (a register or an immediate of the value's held type) as C's
 * variadic call passes it. */
static void put_arg(Printer *p, int slot, Opnd x)
{
    Lower *c = p->c;
    Func *f = c->f;
    PType held = held_ptype(p->type);
    int r = opnd_reg(c, x, held);
    if (p->type == TY_BOOL)
        r = ir_tern(f, OP_SELP, PT_B64, R(p->yes), R(p->no), R(r));
    else if (held == PT_F32)
        r = ir_cvt(f, PT_F64, PT_F32, R(r));
    else if (held == PT_S32 || held == PT_U32)
        r = ir_cvt(f, held == PT_S32 ? PT_S64 : PT_U64, held, R(r));
    store_arg(p, slot, r);    /* an i64 as it is */
}

/* Arguments first .. first + n - 1: elements 0 .. n - 1 from shared address ptr on. */
static void put_elems(Printer *p, int first, int ptr, int n)
{
    Func *f = p->c->f;
    PType held = held_ptype(p->type);
    bool wide = held == PT_S64, fl = held == PT_F32;
    for (int j = 0; j < n; j++) {
        int d = new_reg(f, wide ? RC_D : fl ? RC_F : RC_R);
        Ins *in = emit_ins(f, OP_LD, wide ? PT_B64 : fl ? PT_F32 : PT_B32);
        in->space = SP_SHARED;
        in->dst[0] = d;
        in->ndst = 1;
        in->src[0] = R(ptr);
        in->nsrc = 1;
        in->off = (int64_t)j * p->es;
        ir_naive_addr(f);
        if (p->type == TY_BOOL)
            d = ir_setp(f, CMP_NE, PT_U32, R(d), IMM(0));
        put_arg(p, first + j, R(d));
    }
}

/* The block's coordinates: arguments 0, 1, 2, for a line's head. */
static void put_block(Printer *p)
{
    Lower *c = p->c;
    for (int d = 0; d < PRINT_HEAD_ARGS; d++)
        store_arg(p, d, ir_cvt(c->f, PT_U64, PT_U32, R(c->ctaid[d])));
}

/* A loop run `trips` (>= 2) times: the counter and the head; loop_end closes it. */
typedef struct { int count, head; } Loop;

static Loop loop_begin(Func *f, int trips)
{
    Loop l = { ir_mov(f, PT_S32, IMM(trips)), new_label(f) };
    ir_label(f, l.head);
    return l;
}

/* The loop's branch back; only thread 0 runs it (bra, not bra.uni, all the same). */
static void loop_end(Func *f, Loop l)
{
    ir_bin_to(f, OP_SUB, PT_S32, l.count, R(l.count), IMM(1));
    int more = ir_setp(f, CMP_GT, PT_S32, R(l.count), IMM(0));
    ir_bra(f, l.head, more, false);
    f->code.v[f->code.n - 1].divergent = true;
}

/* n format conversions of the element type, each after ", " (or the first after nothing). */
static void put_convs(Buf *b, ElemType t, int n, bool first)
{
    for (int j = 0; j < n; j++)
        buf_printf(b, "%s%s", first && !j ? "" : ", ", elem_format(t));
}

/* One line of n elements from shared address ptr on: `head` (a format, its `nhead` arguments
 * already in the buffer) and the elements up to the closing "]\n", in as many calls as the
 * argument limit takes. */
static void print_row(Printer *p, const char *head, int nhead, int ptr, int n)
{
    Func *f = p->c->f;
    Buf fmt = { 0 };
    int k1 = n < PRINT_MAX_ARGS - nhead ? n : PRINT_MAX_ARGS - nhead;
    buf_puts(&fmt, head);
    put_convs(&fmt, p->type, k1, true);
    if (k1 == n)
        buf_puts(&fmt, "]\n");
    put_elems(p, nhead, ptr, k1);
    call(p, fmt.s);
    int m = n - k1;
    if (m > 0) {
        /* q calls of 32 values, then the last of r (1 to 32) with the bracket */
        int q = (m - 1) / PRINT_MAX_ARGS, r = m - q * PRINT_MAX_ARGS;
        int cur = ir_bin(f, OP_ADD, PT_U32, R(ptr), IMM((int64_t)k1 * p->es));
        if (q > 0) {
            fmt.len = 0;
            put_convs(&fmt, p->type, PRINT_MAX_ARGS, false);
            Loop l = { -1, -1 };
            if (q > 1)
                l = loop_begin(f, q);
            put_elems(p, 0, cur, PRINT_MAX_ARGS);
            call(p, fmt.s);
            ir_bin_to(f, OP_ADD, PT_U32, cur, R(cur), IMM((int64_t)PRINT_MAX_ARGS * p->es));
            if (q > 1)
                loop_end(f, l);
        }
        fmt.len = 0;
        put_convs(&fmt, p->type, r, false);
        buf_puts(&fmt, "]\n");
        put_elems(p, 0, cur, r);
        call(p, fmt.s);
    }
    buf_free(&fmt);
}

void lower_print(Lower *c, Stmt *s)
{
    Func *f = c->f;
    Expr *e = s->init;
    Tile v = lower_expr(c, e, NULL);
    int rank = e->shape.rank;
    int rows = rank == 2 ? (int)e->shape.dim[0] : 1, cols = rank ? (int)e->shape.dim[rank - 1] : 1;
    Printer p = { c, e->type, -1, -1, -1, -1, held_ptype(e->type) == PT_S64 ? 8 : 4 };
    int base = -1;
    if ((int64_t)rows * cols * p.es > MAX_SMEM_BYTES) {
        /* no GPU could hold it; said here rather than as the whole kernel's shared memory */
        error_at(e->loc, "print() reads a tile back through shared memory, and this %s[%d, %d] takes "
                 "%lld bytes, more than any GPU offers a block (%d): print slices of it "
                 "(x[0 +: 64, :])", type_name(e->type), rows, cols, (long long)rows * cols * p.es,
                 MAX_SMEM_BYTES);
        c->failed = true;
        return;
    }
    if (rank) {
        if (v.L.S[0] != rows || v.L.S[1] != cols)
            die("print: a [%d, %d] value in a [%d, %d] layout", rows, cols, v.L.S[0], v.L.S[1]);
        base = scratch_store_tile(c, &v, cols);
        scratch_end_write(c);
    }
    /* thread 0, of block (0, 0, 0) unless every block prints */
    int who = ir_setp(f, CMP_EQ, PT_U32, R(c->tid), IMM(0));
    if (!(c->opt && c->opt->print_all_blocks)) {
        int any = ir_bin(f, OP_BOR, PT_B32, R(c->ctaid[0]), R(c->ctaid[1]));
        any = ir_bin(f, OP_BOR, PT_B32, R(any), R(c->ctaid[2]));
        int first = ir_setp(f, CMP_EQ, PT_U32, R(any), IMM(0));
        who = ir_bin(f, OP_BAND, PT_PRED, R(who), R(first));
    }
    int skip = new_label(f);
    ir_bra(f, skip, who, true);
    f->code.v[f->code.n - 1].divergent = true;

    f->print_args_bytes = PRINT_MAX_ARGS * ARG_BYTES;
    p.local = new_reg(f, RC_D);
    Ins *in = emit_ins(f, OP_MOVSYM, PT_U64);
    in->dst[0] = p.local;
    in->ndst = 1;
    in->src[0] = SYM("tilec_print_args");
    in->nsrc = 1;
    p.args = new_reg(f, RC_D);
    in = emit_ins(f, OP_CVTAGEN, PT_U64);
    in->space = SP_LOCAL;
    in->dst[0] = p.args;
    in->ndst = 1;
    in->src[0] = R(p.local);
    in->nsrc = 1;
    if (p.type == TY_BOOL) {
        p.yes = string_addr(c, "true");
        p.no = string_addr(c, "false");
    }

    /* the head: FILE:LINE: block (%lld, %lld, %lld): TEXT = TYPE[SHAPE] */
    Buf head = { 0 };
    put_literal(&head, c->p && c->p->file ? c->p->file : "<input>");
    buf_printf(&head, ":%d: block (%%lld, %%lld, %%lld): ", s->loc.line);
    put_literal(&head, s->text ? s->text : "?");
    buf_printf(&head, " = %s", type_name(e->type));
    if (rank == 1)
        buf_printf(&head, "[%d]", cols);
    else if (rank == 2)
        buf_printf(&head, "[%d, %d]", rows, cols);
    put_block(&p);
    if (rank == 0) {
        buf_printf(&head, " %s\n", elem_format(e->type));
        put_arg(&p, PRINT_HEAD_ARGS, v.v[0]);
        call(&p, head.s);
    } else if (rank == 1) {
        buf_puts(&head, " [");
        print_row(&p, head.s, PRINT_HEAD_ARGS, base, cols);
    } else {
        buf_puts(&head, "\n");
        call(&p, head.s);
        int row = ir_mov(f, PT_U32, R(base));
        Loop l = { -1, -1 };
        if (rows > 1)
            l = loop_begin(f, rows);
        print_row(&p, "  [", 0, row, cols);
        if (rows > 1) {
            ir_bin_to(f, OP_ADD, PT_U32, row, R(row), IMM((int64_t)cols * p.es));
            loop_end(f, l);
        }
    }
    buf_free(&head);
    ir_label(f, skip);
}
