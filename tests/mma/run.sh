#!/bin/sh
# tests/mma/run.sh [BUILD_DIR]: the tensor-core examples use the tensor cores.
#
# For examples matmul_f16, matmul_bf16, matmul_tf32, gemm_bias_relu on sm_80, sm_90, sm_90a:
#   mma        the PTX has mma.sync of the right shape and types (m16n8k16 f16/bf16, m16n8k8 tf32)
#   ldmatrix   operands come through ldmatrix (B transposed for f16/bf16)
#   no-ffma    the k loop (the loop holding the mma) has no fma.rn.f32: nothing on the SIMT path
#   count      the k loop issues BM*BN*BK / (16*8*k) / warps mma per thread (every product once)
#   rotated    the loop's barrier comes before its last k step (lower_mma.c takes it from the
#              pipeline to load the next tile's first fragments behind it): one step's mma after it
#   tf32       matmul_tf32 rounds each fragment register it loads (to nearest, ties away) before
#              the tensor core truncates it, adding half a tf32 unit (4096) to the bits
#              (lower_mma.c); no cvt.rna or cvt.rn anywhere
# On sm_90a the 16-bit examples take wgmma (lower_wgmma.c) instead:
#   wgmma      wgmma.mma_async m64n256k16 of the right types, and no mma.sync or ldmatrix
#   count      the k loop (the loop holding the wgmma) issues BK / 16 wgmma, commits them and waits
#   proxy      nothing in the loop is written through the generic proxy, so no fence.proxy.async
#              (a stage cp.async fills has one before its barrier: tests/ptx/run.sh)
#   tma        both operands come by TMA: a //@tmap line each (A's box BM x 64, B's BK x 64),
#              one expect_tx each a k step and 1 + BN / 64 box copies, no cp.async
#   in-flight  the loop waits with one wgmma group in flight (wait_group 1) over S + 1 stage
#              buffers, the exit waits for all before the epilogue (lower_pipeline.c,
#              keeps_group); a 128 x 128 tile keeps S buffers and waits for all in the loop
# and matmul_tf32 takes the swapped wgmma (lower_mma_swap.c):
#   wgmma      wgmma.mma_async m64n256k8 tf32 with A from registers, and no mma.sync or ldmatrix
#   count      the k loop issues BK / 8 wgmma and commits them; its barrier has the wait for the
#              TMA copies' mbarrier phase and for the previous iteration's wgmma before it, and
#              no fence.proxy.async (nothing the generic proxy wrote is read by the tensor cores);
#              the loop's exit waits too
#   tma        A comes by TMA (lower_tma.c): a //@tmap line (tf32, 128-byte swizzle, 256 x 32 box),
#              the map as a parameter after the arguments, and B too (a rows8 map, four 4-D
#              copies a stage); two expect_tx and their copies per iteration in the k loop, the
#              barriers initialised before it
#   tf32       every word the k loop loads from shared memory (B's fragments) is rounded with
#              cvt.rn.tf32.f32, and nothing is stored back (TMA rounds A on the copy)
# At 1, 2 and 4 stages A still comes by TMA (and B: its loop versioned on K % 8, the aligned
# version first), checked without the producer warpgroup the default adds; without alignment
# facts (tf32_inplace.tile) the loop is compiled twice: by TMA through if-aligned maps where the
# launch is aligned, and (the second loop) by cp.async in 4-byte pieces, rounded in place
# (st.shared) with cvt.rn.tf32.f32.
# and the other way round: matmul_f32 (IEEE f32) has no mma and no ldmatrix; shapes the scheme
# cannot do (-D BM=8, -D BK=8 for f16) fall back to FFMA and still compile; one accumulator fed
# by f16, tf32 and IEEE f32 products (tests/mma/mixed_acc.tile) compiles to all three, unspilled.
# Last line: `N passed, M failed`.

cd "$(dirname "$0")/../.." || exit 2
B=${1:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
tilec=$B/tilec
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

if [ ! -x "$tilec" ]; then
	echo "mma: $tilec is not built"
	echo "0 passed, 1 failed"
	exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-mma.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

# The k loop: from the label that the first mma.sync's loop branches back to (the nearest label
# before the mma with a bra.uni to it after the mma) to that branch; `last`: the last one's (a
# versioned loop's second version, the one for launches the facts do not align).
kloop() {   # file [pattern of the loop's tensor-core instruction] [last]
	awk -v pat="${2:-mma\\.sync}" -v last="${3:-}" '
	{ line[NR] = $0 }
	/^\$L[0-9]+:/ { at[substr($1, 1, length($1) - 1)] = NR }
	$0 ~ pat && (!m || last) { m = NR }
	/bra\.uni/ { t = $NF; sub(/;$/, "", t); back[NR] = t }
	END {
		if (!m) exit
		s = 0
		for (i = m + 1; i <= NR; i++)
			if ((i in back) && (back[i] in at) && at[back[i]] < m && at[back[i]] > s) { s = at[back[i]]; e = i }
		if (!s) exit
		for (i = s; i <= e; i++)
			print line[i]
	}' "$1"
}

compile() {   # test-name arch example out.ptx: false (and a failure) when tilec refuses it
	if ! "$tilec" --arch="$2" -o "$4" "examples/$3.tile" 2>"$tmp/err"; then
		bad "$1 compile" "$(head -n 3 "$tmp/err")"
		return 1
	fi
}

check_wgmma_example() {   # name types wgmma_per_kloop
	name=$1 types=$2 want=$3
	t="$name sm_90a"
	ptx=$tmp/$name.wg.ptx
	compile "$t" sm_90a "$name" "$ptx" || return
	if grep -q "wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.$types\.$types " "$ptx" &&
	   ! grep -q 'mma\.sync\|ldmatrix' "$ptx"; then ok; else
		bad "$t wgmma" "no wgmma.mma_async m64n256k16 $types, or mma.sync/ldmatrix left"; fi
	kloop "$ptx" 'wgmma\\.mma_async' >"$tmp/loop"
	n=$(grep -c 'wgmma\.mma_async' "$tmp/loop")
	if [ "$n" -eq "$want" ] && grep -q 'wgmma\.commit_group' "$tmp/loop" && grep -q 'wgmma\.wait_group' "$tmp/loop" &&
	   ! grep -q 'fma\.rn\.f32' "$tmp/loop"; then ok; else
		bad "$t count" "$n wgmma in the k loop (want $want), with commit and wait and no fma"; fi
	if ! grep -q 'fence\.proxy\.async' "$tmp/loop"; then ok; else
		bad "$t proxy" "a fence.proxy.async in a k loop whose operands all come by TMA"; fi
	# A (128 x 64) in one box, B (64 x 256) in four 64 x 64 boxes, an expect_tx each
	if grep -q "^//@tmap a0 $types 128 128 64 | " "$ptx" && grep -q "^//@tmap a1 $types 128 64 64 | " "$ptx" &&
	   [ "$(grep -c 'mbarrier\.arrive\.expect_tx' "$tmp/loop")" -eq 2 ] &&
	   [ "$(grep -c 'cp\.async\.bulk\.tensor\.2d\..*mbarrier::complete_tx::bytes' "$tmp/loop")" -eq 5 ] &&
	   ! grep -q 'cp\.async\.c[ag]\.shared\.global' "$tmp/loop"; then ok; else
		bad "$t tma" "A and B not by TMA (a //@tmap line each, two expect_tx and 5 copies a k step, no cp.async)"; fi
	# one group left in flight across iterations (four stage buffers for pipeline(3)); the exit
	# waits for all before the epilogue reads the accumulators
	if grep -q 'wgmma\.wait_group\.sync\.aligned 1' "$tmp/loop" && ! grep -q 'wgmma\.wait_group\.sync\.aligned 0' "$tmp/loop" &&
	   grep -q '^//@kernel .* smem 196[0-9][0-9][0-9] ' "$ptx" &&
	   awk '/wgmma\.commit_group/ { c = 1 } c && /^\$L[0-9]+:/ { l = 1 } l && /wgmma\.wait_group\.sync\.aligned 0/ { w = 1 }
	        l && /cvt\.rn\.(f16|bf16)\.f32|max\.f32/ { exit !w } END { exit !w }' "$ptx"; then ok; else
		bad "$t in-flight" "the k loop does not wait with one group in flight over four stages, or the exit does not wait before the epilogue"; fi
}

# A 128 x 128 tile keeps three stages: a fourth would cost its second block per multiprocessor
check_not_deep() {
	t="matmul_f16 sm_90a BN=128"
	if "$tilec" --arch=sm_90a -D BN=128 -o "$tmp/bn128.ptx" examples/matmul_f16.tile 2>"$tmp/err"; then
		kloop "$tmp/bn128.ptx" 'wgmma\\.mma_async' >"$tmp/loop"
		if grep -q 'wgmma\.wait_group\.sync\.aligned 0' "$tmp/loop" && grep -q '^//@kernel .* smem 983[0-9][0-9] ' "$tmp/bn128.ptx"
		then ok; else bad "$t" "a fourth stage (or a group in flight) where it halves the blocks per multiprocessor"; fi
	else
		bad "$t compile" "$(head -n 3 "$tmp/err")"
	fi
}

check_wgmma_tf32() {
	t="matmul_tf32 sm_90a"
	ptx=$tmp/tf32.wg.ptx
	# the loop as every thread runs it (no producer warpgroup, the default's)
	if ! "$tilec" --arch=sm_90a -fno-warp-specialize -o "$ptx" examples/matmul_tf32.tile 2>"$tmp/err"; then
		bad "$t compile" "$(head -n 3 "$tmp/err")"
		return
	fi
	if grep -q 'wgmma\.mma_async\.sync\.aligned\.m64n256k8\.f32\.tf32\.tf32 {.*}, {%r[0-9]*, %r[0-9]*, %r[0-9]*, %r[0-9]*}, %rd' "$ptx" &&
	   ! grep -q 'mma\.sync\|ldmatrix' "$ptx"; then ok; else
		bad "$t wgmma" "no wgmma.mma_async m64n256k8 tf32 with A from registers, or mma.sync/ldmatrix left"; fi
	kloop "$ptx" 'wgmma\\.mma_async' >"$tmp/loop"
	n=$(grep -c 'wgmma\.mma_async' "$tmp/loop")
	if [ "$n" -eq 4 ] && [ "$(grep -c 'wgmma\.commit_group' "$tmp/loop")" -eq 1 ] &&
	   ! grep -q 'fence\.proxy\.async' "$tmp/loop" &&
	   awk '/mbarrier\.try_wait\.parity/ { f = NR } /wgmma\.wait_group\.sync\.aligned 0/ { w = NR }
	        /bar\.sync/ { ok = f && w > f && w < NR } END { exit !ok }' "$tmp/loop" &&
	   awk '/wgmma\.commit_group/ { c = 1 } c && /^\$L[0-9]+:/ { l = 1 } l && /wgmma\.wait_group\.sync\.aligned 0/ { w = 1 }
	        END { exit !w }' "$ptx"; then ok; else
		bad "$t count" "$n wgmma in the k loop (want 4), one commit, TMA wait and wgmma wait before its barrier and no proxy fence, a wait after it"; fi
	check_tma "$t" "$ptx" "$tmp/loop"
	words=$(awk '/ld\.shared\.v4/ { n += 4 } /ld\.shared\.b32/ { n++ } END { print n + 0 }' "$tmp/loop")
	rounded=$(grep -c 'cvt\.rn\.tf32\.f32' "$tmp/loop")
	if [ "$words" -gt 0 ] && [ "$rounded" -eq "$words" ] && ! grep -q 'st\.shared' "$tmp/loop"; then ok; else
		bad "$t tf32" "$rounded of $words words rounded (cvt.rn.tf32.f32) in the k loop, or something stored back"; fi
}

check_tma() {   # name ptx kloop: A (one 2-D box) and B (four rows8 slabs) of the tf32 wgmma by TMA
	if grep -q '^//@tmap a0 tf32 128 256 32 | a3 | a4 | a4$' "$2" &&
	   grep -q '^//@tmap a1 tf32 128 32 32 if-aligned rows8 | a4 | a5 | a5$' "$2" &&
	   grep -q '\.param \.align 64 \.b8 matmul_tf32_param_6\[128\]' "$2" &&
	   [ "$(grep -c 'mbarrier\.arrive\.expect_tx' "$3")" -eq 2 ] &&
	   [ "$(grep -c 'cp\.async\.bulk\.tensor\.2d\..*mbarrier::complete_tx::bytes' "$3")" -eq 1 ] &&
	   [ "$(grep -c 'cp\.async\.bulk\.tensor\.4d\..*mbarrier::complete_tx::bytes' "$3")" -eq 4 ] &&
	   awk '/mbarrier\.init/ { i = 1 } /fence\.mbarrier_init/ { f = i } /^\$L[0-9]+:/ { exit !f } END { exit !f }' "$2"
	then ok; else
		bad "$1 tma" "no //@tmap lines and map parameter, or not two expect_tx and 1 + 4 TMA copies per iteration, or no barrier initialised before the loop"; fi
}

check_example() {   # name arch shape types mmas_per_kloop k_steps
	name=$1 arch=$2 shape=$3 types=$4 want=$5 steps=$6
	t="$name $arch"
	ptx=$tmp/$name.$arch.ptx
	compile "$t" "$arch" "$name" "$ptx" || return
	if grep -q "mma\.sync\.aligned\.$shape\.row\.col\.f32\.$types\.$types\.f32 " "$ptx"; then ok; else
		bad "$t mma" "no mma.sync.aligned.$shape.row.col.f32.$types.$types.f32"; fi
	if [ "$types" = tf32 ]; then
		if grep -q 'ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16' "$ptx"; then ok; else bad "$t ldmatrix" "no ldmatrix for A"; fi
		kloop "$ptx" >"$tmp/tfloop"
		words=$(awk '/ldmatrix\.sync\.aligned\.m8n8\.x4|ld\.shared\.v4/ { n += 4 } /ld\.shared\.v2/ { n += 2 }
		             /ld\.shared\.b32/ { n++ } END { print n + 0 }' "$tmp/tfloop")
		rounded=$(grep -cE 'add\.s32[[:space:]]+%r[0-9]+, %r[0-9]+, 4096;' "$tmp/tfloop")
		if [ "$words" -gt 0 ] && [ "$rounded" -eq "$words" ] && ! grep -q 'cvt\.rn' "$ptx"; then ok; else
			bad "$t tf32" "$rounded of $words fragment words rounded (add 4096) in the k loop"; fi
	else
		if grep -q 'ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16' "$ptx" &&
		   grep -q 'ldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared\.b16' "$ptx"; then ok; else
			bad "$t ldmatrix" "no ldmatrix .x4 and .x4.trans"; fi
	fi
	kloop "$ptx" >"$tmp/loop"
	if [ -s "$tmp/loop" ] && ! grep -q 'fma\.rn\.f32' "$tmp/loop"; then ok; else
		bad "$t no-ffma" "the k loop has fma.rn.f32 (or was not found)"; fi
	n=$(grep -c 'mma\.sync' "$tmp/loop")
	if [ "$n" -eq "$want" ]; then ok; else bad "$t count" "$n mma.sync in the k loop, want $want"; fi
	# the loop's barrier sits before the last of its k steps, with the next tile's first loads
	after=$(awk '/bar\.sync/ { n = 0 } /mma\.sync/ { n++ } END { print n + 0 }' "$tmp/loop")
	if [ "$after" -eq $((want / steps)) ]; then ok; else
		bad "$t rotated" "$after mma.sync after the k loop's last barrier, want one k step's $((want / steps))"; fi
}

for arch in sm_80 sm_90 sm_90a; do
	# 64 x 64 warp tiles (128 x 256 or 256 x 128, 8 warps): 4 m16 x 8 n8 tiles per k step;
	# BK = 64 is 4 steps of k16 (f16, bf16), BK = 32 4 steps of k8 (tf32)
	[ $arch = sm_90a ] && continue
	check_example matmul_tf32 $arch m16n8k8 tf32 128 4
	check_example matmul_f16 $arch m16n8k16 f16 128 4
	check_example matmul_bf16 $arch m16n8k16 bf16 128 4
	check_example gemm_bias_relu $arch m16n8k16 f16 128 4
done
# 128 x 256 x 64 on two warpgroups: one m64n256k16 per k step of 16
check_wgmma_example matmul_f16 f16 4
check_wgmma_example matmul_bf16 bf16 4
check_wgmma_example gemm_bias_relu f16 4
check_wgmma_tf32
check_not_deep

# the tf32 wgmma at other stage counts: A still by TMA
for st in 1 2 4; do
	t="matmul_tf32 sm_90a STAGES=$st"
	if "$tilec" --arch=sm_90a -fno-warp-specialize -D STAGES=$st -o "$tmp/st.ptx" examples/matmul_tf32.tile 2>"$tmp/err"; then
		kloop "$tmp/st.ptx" 'wgmma\\.mma_async' >"$tmp/loop"
		if grep -q 'wgmma\.mma_async' "$tmp/loop" && ! grep -q 'st\.shared' "$tmp/loop"; then ok; else
			bad "$t" "no wgmma, or something stored to shared memory, in the k loop"; fi
		check_tma "$t" "$tmp/st.ptx" "$tmp/loop"
	else
		bad "$t compile" "$(head -n 3 "$tmp/err")"
	fi
done

# without alignment facts: A by cp.async in 4-byte pieces, rounded in place, in the version for
# unaligned launches; the maps only the other version uses are if-aligned
t="tf32_inplace sm_90a"
if "$tilec" --arch=sm_90a -o "$tmp/inplace.ptx" tests/mma/tf32_inplace.tile 2>"$tmp/err"; then
	kloop "$tmp/inplace.ptx" 'wgmma\\.mma_async' last >"$tmp/loop"
	stored=$(grep -c 'st\.shared' "$tmp/loop")
	rounded=$(grep -c 'cvt\.rn\.tf32\.f32' "$tmp/loop")
	maps=$(grep -c '^//@tmap' "$tmp/inplace.ptx") ifal=$(grep -c '^//@tmap .* if-aligned ' "$tmp/inplace.ptx")
	if [ "$maps" -ge 1 ] && [ "$maps" -eq "$ifal" ] && ! grep -q 'cp\.async\.bulk\|mbarrier' "$tmp/loop" &&
	   [ "$stored" -gt 0 ] && [ "$rounded" -gt "$stored" ] && grep -q 'fence\.proxy\.async' "$tmp/loop"; then ok; else
		bad "$t" "A not by cp.async rounded in place ($stored stores, $rounded roundings), TMA in that loop, $ifal of $maps maps if-aligned, or no proxy fence"; fi
else
	bad "$t compile" "$(head -n 3 "$tmp/err")"
fi

# IEEE f32 stays on FFMA.
if "$tilec" --arch=sm_90 -o "$tmp/f32.ptx" examples/matmul_f32.tile 2>"$tmp/err"; then
	if grep -q 'mma\.sync\|ldmatrix' "$tmp/f32.ptx"; then bad "matmul_f32 no-mma" "f32 without tf32() uses tensor cores"; else ok; fi
	if grep -q 'fma\.rn\.f32' "$tmp/f32.ptx"; then ok; else bad "matmul_f32 ffma" "no fma.rn.f32"; fi
else
	bad "matmul_f32 compile" "$(head -n 3 "$tmp/err")"
fi

# Shapes the mma scheme refuses take the SIMT path: still correct code, no mma.
fallback() {   # label example defines...
	label=$1 ex=$2
	shift 2
	if "$tilec" --arch=sm_90 "$@" -o "$tmp/fb.ptx" "examples/$ex.tile" 2>"$tmp/err"; then
		if grep -q 'mma\.sync' "$tmp/fb.ptx"; then bad "fallback $label" "mma.sync for a shape the scheme refuses"
		elif grep -q 'fma\.rn\.f32' "$tmp/fb.ptx"; then ok
		else bad "fallback $label" "neither mma nor fma"; fi
	else
		bad "fallback $label compile" "$(head -n 3 "$tmp/err")"
	fi
}
fallback "f16 BM=8" matmul_f16 -D BM=8
fallback "f16 BK=8" matmul_f16 -D BK=8
fallback "tf32 BK=4" matmul_tf32 -D BK=4

# One accumulator, three kinds of product: each lowered its own way, moved into acc's layout.
if "$tilec" --arch=sm_90 --report -o "$tmp/mixed.ptx" tests/mma/mixed_acc.tile >"$tmp/rep" 2>&1; then
	grep -q 'mma\.sync\.aligned\.m16n8k16' "$tmp/mixed.ptx" && ok || bad "mixed acc f16" "no m16n8k16"
	grep -q 'mma\.sync\.aligned\.m16n8k8' "$tmp/mixed.ptx" && ok || bad "mixed acc tf32" "no m16n8k8"
	grep -q 'fma\.rn\.f32' "$tmp/mixed.ptx" && ok || bad "mixed acc f32" "no fma.rn.f32"
	if grep -q 'ptxas ' "$tmp/rep" && ! grep -q ' 0 bytes spill stores, 0 bytes spill loads, 0 bytes stack' "$tmp/rep"; then
		bad "mixed acc spills" "$(grep 'ptxas ' "$tmp/rep")"
	else ok; fi
else
	bad "mixed acc compile" "$(head -n 3 "$tmp/rep")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
