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
