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
 *   SWZ_BLK4      key(r) = (r / 4) % 8 (RB >= 128): the staging of a transposing copy
 *                 (lower_transpose.c), where each thread copies and reads back 4 rows of one
 *                 chunk and a quarter warp holds the blocks of 8 consecutive row quads at one
 *                 chunk. Only such threads touch it: their rows start at multiples of 4.
 * Either way a warp's cp.async of consecutive 16-byte pieces fills whole lines, each in some
 * order, so the copies' writes do not conflict. A padded pitch cannot give both: the pad that
 * spreads the fragment reads leaves the copies' rows straddling 128-byte lines.
 * key has period 8 (SWZ_QUAD: 4, SWZ_BLK4: 32) in r, so 8 m rows further is a constant
 * m * 8 * RB bytes further, and a chunk delta whose bits are above the unit's own chunk bits is an XOR with a
 * constant (swz_step): the fragment loads keep [reg+imm] addressing, with at most one xor per
 * distinct (delta mod 8) per matmul. Tile bases must be 128-byte aligned (stage buffers are;
 * tilec_smem is declared .align 1024).
 *
 * The operands of wgmma (sm_90a) are read by the tensor cores themselves through a matrix
 * descriptor, in the 128-byte swizzle those descriptors name: the tile is cut into column slabs
 * 128 bytes wide, slab j at j * rows * 128 bytes, row r of a slab at r * 128, and its 16-byte chunk
 * c at position c ^ (r % 8) -- the XOR of address bits 4-6 with bits 7-9, so slabs must start
 * 1024-byte aligned. SWZ_SLAB is that layout as is (B, read N-major: one slab is 8 k rows of 64
 * 16-bit columns per 1024 bytes; A, read K-major: its rows). SWZ_SLAB64 is the 64-byte swizzle
 * for K-major rows of 64 bytes (a 16-bit k step of 32): slabs 64 bytes wide, row r at r * 64, its
 * chunk c at c ^ (r / 2 % 4) -- the XOR of address bits 4-5 with bits 7-8, so slabs start
 * 512-byte aligned.
 *
 * SWZ_SLAB_K8 is SWZ_SLAB with each 8 rows r0 + 4 h + l (h < 2, l < 4) stored at position
 * r0 + 2 l + h: the swapped tf32 product's B (lower_mma_swap.c), read into registers by warps
 * whose quarter reads rows k + q (q < 4) at 8 consecutive columns, the 16-byte chunks 2 j and
 * 2 j + 1. In SWZ_SLAB those rows' keys k % 8 + q pair up (q and q ^ 1 xor the chunk pair onto
 * itself: 2-way bank conflicts); here their keys are 2 q (+ 1), four distinct pairs, 32 banks.
 * TMA brings it in 128-byte rows, the rows viewed as three dimensions (lower_tma.c); cp.async
 * never fills it. */
#include "lower.h"

static int log2i(int x)
{
    int n = 0;
    while ((1 << n) < x)
        n++;
    return n;
}

static int rows_per_line(int row_bytes) { return row_bytes >= 128 ? 1 : 128 / row_bytes; }

int swz_slab_bytes(int kind) { return kind == SWZ_SLAB || kind == SWZ_SLAB_K8 ? 128 : kind == SWZ_SLAB64 ? 64 : 0; }

/* The position of row r in its slab: r itself but in SWZ_SLAB_K8 */
static int64_t slab_row(int kind, int64_t r) { return kind == SWZ_SLAB_K8 ? (r & ~7) | (r >> 2 & 1) | (r & 3) << 1 : r; }

/* The slab row's key: its 16-byte chunk c lies at c ^ key. */
static int64_t slab_key(int kind, int64_t pos) { return kind == SWZ_SLAB64 ? pos / 2 % 4 : pos % 8; }

bool swz_applies(int kind, int row_bytes)
{
    if (swz_slab_bytes(kind))
        return row_bytes > 0 && row_bytes % swz_slab_bytes(kind) == 0;
    int least = kind == SWZ_QUAD || kind == SWZ_BLK4 ? 128 : 16;
    return kind != SWZ_NONE && row_bytes >= least && (row_bytes & (row_bytes - 1)) == 0;
}

int64_t swz_offset(int kind, int row_bytes, int rows, int64_t row, int64_t byte_col)
{
    int w = swz_slab_bytes(kind);
    if (w) {
        int64_t in = byte_col % w, pos = slab_row(kind, row);
        return byte_col / w * rows * w + pos * w + 16 * ((in / 16) ^ slab_key(kind, pos)) + in % 16;
    }
    int q = rows_per_line(row_bytes);
    int64_t key = kind == SWZ_QUAD ? 2 * row % 8 : kind == SWZ_BLK4 ? row / 4 % 8 : (row / q) % (8 / q);
    int64_t unit = row * (row_bytes / 16) + byte_col / 16;
    return 16 * (unit ^ key) + byte_col % 16;
}

bool swz_delta(int kind, int row_bytes, int rows, int64_t rd, int64_t cdb, int64_t *delta)
{
    int period = kind == SWZ_QUAD ? 4 : 8;
    /* SWZ_BLK4's rows are walked from a multiple of 4: rows 0 .. 3 past it share its key */
    if (kind == SWZ_BLK4 ? rd % 32 >= 4 : rd % period)
        return false;
    int w = swz_slab_bytes(kind);
    if (w) {
        if (cdb % w)
            return false;
        *delta = rd * w + cdb / w * rows * w;
        return true;
    }
    if (cdb % 128)
        return false;
    *delta = rd * row_bytes + cdb;
    return true;
}

int swz_offset_ir(Lower *c, int kind, int row, int byte_col, bool col_aligned16, int row_bytes, int rows)
{
    Func *f = c->f;
    int w = swz_slab_bytes(kind);
    if (w) {
        int r = row, lw = w == 128 ? 7 : 6;
        if (kind == SWZ_SLAB_K8) {
            int h = ir_bin(f, OP_BAND, PT_B32, R(ir_bin(f, OP_SHR, PT_U32, R(row), IMM(2))), IMM(1));
            int l2 = ir_bin(f, OP_BAND, PT_B32, R(ir_bin(f, OP_SHL, PT_B32, R(row), IMM(1))), IMM(6));
            r = ir_bin(f, OP_BOR, PT_B32, R(ir_bin(f, OP_BAND, PT_B32, R(row), IMM(~(int64_t)7))),
                       R(ir_bin(f, OP_BOR, PT_B32, R(h), R(l2))));
        }
        int slab = ir_bin(f, OP_MUL, PT_U32, R(ir_bin(f, OP_SHR, PT_U32, R(byte_col), IMM(lw))), IMM((int64_t)rows * w));
        int chunk = ir_bin(f, OP_BAND, PT_B32, R(ir_bin(f, OP_SHR, PT_U32, R(byte_col), IMM(4))), IMM(w / 16 - 1));
        int key = w == 128 ? ir_bin(f, OP_BAND, PT_B32, R(r), IMM(7))
                           : ir_bin(f, OP_BAND, PT_B32, R(ir_bin(f, OP_SHR, PT_U32, R(r), IMM(1))), IMM(3));
        chunk = ir_bin(f, OP_BXOR, PT_B32, R(chunk), R(key));
        int off = ir_tern(f, OP_MAD, PT_U32, R(r), IMM(w), R(slab));
        off = ir_tern(f, OP_MAD, PT_U32, R(chunk), IMM(16), R(off));
        if (!col_aligned16)
            off = ir_bin(f, OP_ADD, PT_U32, R(off), R(ir_bin(f, OP_BAND, PT_B32, R(byte_col), IMM(15))));
        return off;
    }
    (void)rows;
    int q = rows_per_line(row_bytes);
    int units = ir_bin(f, OP_SHL, PT_B32, R(row), IMM(log2i(row_bytes / 16)));
    int unit = ir_bin(f, OP_ADD, PT_U32, R(units), R(ir_bin(f, OP_SHR, PT_U32, R(byte_col), IMM(4))));
    int key = -1;
    if (kind == SWZ_QUAD)
        key = ir_bin(f, OP_BAND, PT_B32, R(ir_bin(f, OP_SHL, PT_B32, R(row), IMM(1))), IMM(7));
    else if (kind == SWZ_BLK4)
        key = ir_bin(f, OP_BAND, PT_B32, R(ir_bin(f, OP_SHR, PT_U32, R(row), IMM(2))), IMM(7));
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
