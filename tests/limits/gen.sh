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
