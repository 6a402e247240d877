/* swizzle.c: the XOR-swizzled shared-memory layouts of tensor-core operand tiles.
 *
 * A tile of rows of RB bytes (RB a power of two) is stored without padding, as 16-byte units:
 * unit U = r * RB/16 + c holds chunk c of row r. Each 128-byte line (8 units) keeps its units
 * but permutes them: unit U sits at position (U % 8) ^ key(r) of its line. Two keys:
 *   SWZ_LDMATRIX  key(r) = (r / q) % (8 / q), q = max(1, 128 / RB) rows per line (RB >= 16):
 *                 the 8 rows one ldmatrix matrix reads (r0 .. r0 + 7 from a multiple of 8, one
 *                 chunk each) fall in 8 distinct 16-byte bank groups;
 *   SWZ_QUAD      key(r) = 2r % 8 (RB >= 128): the tf32 B fragment loads, where a quarter warp
 *                 reads rows k .. k + 3 at two adjacent chunks 2j, 2j + 1, do.
 * Either way a warp's cp.async of consecutive 16-byte pieces fills whole lines, each in some
 * order, so the copies' writes do not conflict. A padded pitch cannot give both: the pad that
 * spreads the fragment reads leaves the copies' rows straddling 128-byte lines.
 * key has period 8 (SWZ_QUAD: 4) in r, so 8 m rows further is a constant m * 8 * RB bytes
 * further, and a chunk delta whose bits are above the unit's own chunk bits is an XOR with a
 * constant (swz_step): the fragment loads keep [reg+imm] addressing, with at most one xor per
 * distinct (delta mod 8) per matmul. Tile bases must be 128-byte aligned (stage buffers are;
 * tilec_smem is declared .align 128). */
#include "tilec.h"

static int log2i(int x)
{
    int n = 0;
    while ((1 << n) < x)
        n++;
    return n;
}

static int rows_per_line(int row_bytes) { return row_bytes >= 128 ? 1 : 128 / row_bytes; }

bool swz_applies(int kind, int row_bytes)
{
    int least = kind == SWZ_QUAD ? 128 : 16;
    return kind != SWZ_NONE && row_bytes >= least && (row_bytes & (row_bytes - 1)) == 0;
}

int64_t swz_offset(int kind, int row_bytes, int64_t row, int64_t byte_col)
{
    int q = rows_per_line(row_bytes);
    int64_t key = kind == SWZ_QUAD ? 2 * row % 8 : (row / q) % (8 / q);
    int64_t unit = row * (row_bytes / 16) + byte_col / 16;
    return 16 * (unit ^ key) + byte_col % 16;
}

int swz_offset_ir(Lower *c, int kind, int row, int byte_col, bool col_aligned16, int row_bytes)
{
    Func *f = c->f;
    int q = rows_per_line(row_bytes);
    int units = ir_bin(f, OP_SHL, PT_B32, R(row), IMM(log2i(row_bytes / 16)));
    int unit = ir_bin(f, OP_ADD, PT_U32, R(units), R(ir_bin(f, OP_SHR, PT_U32, R(byte_col), IMM(4))));
    int key = -1;
    if (kind == SWZ_QUAD)
        key = ir_bin(f, OP_BAND, PT_B32, R(ir_bin(f, OP_SHL, PT_B32, R(row), IMM(1))), IMM(7));
    else if (q < 8)
        key = ir_bin(f, OP_BAND, PT_B32, R(q > 1 ? ir_bin(f, OP_SHR, PT_U32, R(row), IMM(log2i(q))) : row), IMM(8 / q - 1));
    if (key >= 0)
        unit = ir_bin(f, OP_BXOR, PT_B32, R(unit), R(key));
    int off = ir_bin(f, OP_SHL, PT_B32, R(unit), IMM(4));
    if (!col_aligned16)
        off = ir_bin(f, OP_ADD, PT_U32, R(off), R(ir_bin(f, OP_BAND, PT_B32, R(byte_col), IMM(15))));
    return off;
}

int swz_step(Lower *c, int addr, int64_t unit_delta, int xored[8], int64_t *imm)
{
    int x = (int)(unit_delta % 8);
    *imm = 128 * (unit_delta / 8);
    if (!x)
        return addr;
    if (xored[x] < 0)
        xored[x] = ir_bin(c->f, OP_BXOR, PT_B32, R(addr), IMM(16 * x));
    return xored[x];
}
