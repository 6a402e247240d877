#!/bin/sh
# gen.sh DIR: writes the inputs of tests/limits/run.sh into DIR (generated, never committed).
dir=${1:?usage: gen.sh DIR}
mkdir -p "$dir" || exit 1

# 100000 consts, the kernel using the last.
awk 'BEGIN {
	for (i = 0; i < 100000; i++) printf "const C%d = %d;\n", i, i
	print "kernel f(Y: f32[N]) grid(1) threads(32) { Y[0] = f32(C99999); }"
}' >"$dir/consts_100k.tile"

# 100000 lets in one kernel.
awk 'BEGIN {
	print "kernel f(Y: f32[N]) grid(1) threads(32) {"
	for (i = 0; i < 100000; i++) printf "    let v%d = %d;\n", i, i
	print "    Y[0] = f32(v99999);"
	print "}"
}' >"$dir/lets_100k.tile"

# 5000 kernels.
awk 'BEGIN {
	for (i = 0; i < 5000; i++) printf "kernel k%d(Y: f32[N]) grid(1) threads(32) { Y[0] = 1.0; }\n", i
}' >"$dir/kernels_5k.tile"

# Big kernels for the passes (schedule.c, regalloc.c, addrsplit.c, remat.c): 3000 statements
# of windows in one block (66000 instructions), 5000 ifs, 5000 loops (10000 blocks each).
awk 'BEGIN {
	print "kernel f(X: f32[N], Y: f32[N]) grid(cdiv(N, 256)) threads(256) {"
	print "    let i0 = block.x * 256;"
	for (i = 0; i < 3000; i++)
		printf "    Y[i0 + %d +: 256] = X[i0 + %d +: 256] * 2.0 + X[i0 + %d +: 256];\n", i * 256, i * 256 + 3, i * 7
	print "}"
}' >"$dir/straight_3k.tile"
awk 'BEGIN {
	print "kernel f(X: f32[N], Y: f32[N]) grid(1) threads(32) {"
	for (i = 0; i < 5000; i++) printf "    if X[%d] > 0.0 { Y[%d] = X[%d] * 2.0; }\n", i, i, i + 1
	print "}"
}' >"$dir/ifs_5k.tile"
awk 'BEGIN {
	print "kernel f(X: f32[N], Y: f32[N]) grid(1) threads(32) {"
	for (i = 0; i < 5000; i++) printf "    for j%d in 0 .. N { Y[j%d] = X[j%d] * 2.0; }\n", i, i, i
	print "}"
}' >"$dir/loops_5k.tile"

# Six nested constant loops of 8 trips (262144 copies of the body if all unrolled).
awk 'BEGIN {
	print "kernel f(Y: f32[N]) grid(1) threads(32) {"
	print "    var s: f32 = 0;"
	printf "    "
	for (d = 0; d < 6; d++) printf "for i%d in 0 .. 8 { ", d
	printf "s += Y[i0 + i1 + i2 + i3 + i4 + i5];"
	for (d = 0; d < 6; d++) printf " }"
	print ""
	print "    Y[0] = s;"
	print "}"
}' >"$dir/nest_8x6.tile"

# Instruction limit: one product of a million FMAs per thread, and 20000 statements.
cat >"$dir/ins_matmul.tile" <<'TILE'
kernel f(A: f32[M, K], B: f32[K, N], C: f32[M, N]) grid(1) threads(32) {
    var acc: f32[256, 256] = 0;
    acc += A[0 +: 256, 0 +: 512] @ B[0 +: 512, 0 +: 256];
    C[0 +: 256, 0 +: 256] = acc;
}
TILE
awk 'BEGIN {
	print "kernel f(X: f32[N], Y: f32[N]) grid(cdiv(N, 256)) threads(256) {"
	print "    let i0 = block.x * 256;"
	for (i = 0; i < 20000; i++)
		printf "    Y[i0 + %d +: 256] = X[i0 + %d +: 256] * 2.0 + X[i0 + %d +: 256];\n", i * 256, i * 256 + 3, i * 7
	print "}"
}' >"$dir/ins_many.tile"
awk 'BEGIN {
	print "kernel f(X: f32[N], Y: f32[N]) grid(1) threads(256) {"
	for (i = 0; i < 20000; i++) printf "    Y[%d] = sum(X[0 +: 1024]);\n", i
	print "}"
}' >"$dir/ins_sums.tile"
