#!/bin/sh
# tests/addr/count.sh FILE.ptx: prints `MEM ADDR INS` for a PTX file:
#   MEM   memory accesses: ld/st/red/atom/cp.async on global, shared or local memory, ldmatrix,
#         wgmma.mma_async (two: its A and B operands, read from shared memory by descriptor),
#         TMA copies (cp.async.bulk.tensor) and mbarrier init/arrive/try_wait (shared addresses)
#   ADDR  address arithmetic: integer add/sub/mul/mad/shl/cvt of address width -- 64-bit
#         (.s64 .u64 .b64, mul.wide) for global addresses, .u32 for shared ones (tilec computes
#         shared addresses in .u32 and element indices in .s32) -- plus `mov` of the shared symbol;
#         not mul.hi, which no address takes (rand's Philox rounds are made of it)
#   INS   all instructions
# Labels, directives, declarations and comments are not instructions.
awk '
/^[ \t]*(\/\/|\.|\$|\{|\}|\)|$)/ { next }
/^[ \t]/ {
	ins++
	line = $0
	sub(/^[ \t]+/, "", line)
	sub(/^@!?%p[0-9]+[ \t]+/, "", line)
	split(line, w, /[ \t]+/)
	op = w[1]
	if (op ~ /^(ld|st|red|atom)\.(global|shared|local)/ || op ~ /^cp\.async\.(ca|cg)/ || op ~ /^ldmatrix\./) { mem++; next }
	if (op ~ /^cp\.async\.bulk\.tensor/ || op ~ /^mbarrier\.(init|arrive|try_wait)/) { mem++; next }
	if (op ~ /^wgmma\.mma_async/) { mem += 2; next }
	if (op ~ /^mul\.hi\./) next
	if (op ~ /^(add|sub|mul|mad|shl|cvt)\./ && (op ~ /\.(s64|u64|b64)$/ || op ~ /\.u32$/ || op ~ /^mul\.wide/) && op !~ /^cvt\..*\.(s32|u32)\.(s64|u64)$/) { addr++; next }
	if (op ~ /^mov\./ && line ~ /tilec_smem/) { addr++; next }
}
END { printf "%d %d %d\n", mem, addr, ins }' "$1"
