#!/bin/sh
# tests/interp/run.sh BUILD_DIR: kernels on the CPU.
#  - every GPU test program (tests/gpu), linked with libtilert_host.a as BUILD_DIR/host/tests/gpu/
#    (tests/interp/interp.mk), on its small cases (TILEC_TEST_SMALL=1) against its own host
#    references: the examples and the test kernels, run by the interpreter from the PTX modules
#    in BUILD_DIR/examples; their counts are added to this suite's
#  - `tilec --run`, the interpreter's command line: a run's printed tensors against a reference
#    computed here from the printed inputs, raw --input/--output files, print(), and the answers
#    to bad runs (exit 1 with the source location, exit 2 for usage).
# Last line: `N passed, M failed`.
cd "$(dirname "$0")/../.." || exit 2
B=${1:-build}
tilec=$B/tilec
pass=0 fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-interp.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }

# vecadd: Z = alpha * X + Y, each printed value to 9 digits (awk checks to 1e-6)
if "$tilec" --run examples/vecadd.tile --set N=37 --set alpha=2 --show=37 >"$tmp/out" 2>&1 &&
   awk -F'[=,] *' '/^X:/ { for (i = 2; i <= NF; i++) x[i] = $i }
                   /^Y:/ { for (i = 2; i <= NF; i++) y[i] = $i }
                   /^Z:/ { n = 0; for (i = 2; i <= NF; i++) { d = $i - (2 * x[i] + y[i]); if (d < 0) d = -d;
                           if (d > 1e-6) bad = 1; n++ } }
                   END { exit !(n == 37 && !bad) }' "$tmp/out"; then ok
else bad "run vecadd" "$(head -c 400 "$tmp/out")"; fi

# the same seed gives the same inputs; another seed others
"$tilec" --run examples/vecadd.tile --set N=5 --set alpha=1 >"$tmp/a" 2>&1
"$tilec" --run examples/vecadd.tile --set N=5 --set alpha=1 >"$tmp/b" 2>&1
"$tilec" --run examples/vecadd.tile --set N=5 --set alpha=1 --seed=7 >"$tmp/c" 2>&1
if cmp -s "$tmp/a" "$tmp/b" && ! cmp -s "$tmp/a" "$tmp/c"; then ok; else bad "seed" "runs differ or do not"; fi

# raw files: X all ones (f32 1.0 = 00 00 80 3f), Y from a seeded fill, Z written back
printf '\000\000\200\077\000\000\200\077\000\000\200\077' >"$tmp/x"
if "$tilec" --run examples/vecadd.tile --set N=3 --set alpha=0.5 --input X="$tmp/x" --input Y="$tmp/x" \
       --output Z="$tmp/z" >"$tmp/out" 2>&1 &&
   [ "$(od -An -tx1 "$tmp/z" | tr -d ' \n')" = "0000c03f0000c03f0000c03f" ]; then ok
else bad "input/output files" "$(od -An -tx1 "$tmp/z" 2>&1) $(cat "$tmp/out")"; fi

# x.T of lets in a chain, Y = x_n as it is and Z = x_n.T + x_{n/2}.T (transpose_push.c): at n = 20
# the fixed point settles and the transposes are pushed; at n = 40 it would take more rounds
# than the pass allows, so they stay transposes of values. Z^T against X * (2^n + 2^(n/2)).
for n in 20 40; do
	awk -v n=$n 'BEGIN {
		print "kernel chain(X: f32[M, N], Y: f32[M, N], Z: f32[N, M]) grid(1) threads(128)"
		print "{"
		print "    let x0 = X[0 +: 16, 0 +: 16];"
		for (i = 1; i <= n; i++) printf "    let x%d = x%d * 2.0;\n", i, i - 1
		printf "    Y[0 +: 16, 0 +: 16] = x%d;\n", n
		printf "    Z[0 +: 16, 0 +: 16] = x%d.T + x%d.T;\n", n, n / 2
		print "}"
	}' >"$tmp/tchain.tile"
	if "$tilec" --run "$tmp/tchain.tile" --set M=16 --set N=16 --show=256 >"$tmp/out" 2>&1 &&
	   awk -F'[=,] *' -v n=$n '/^X:/ { for (i = 2; i <= NF; i++) x[i - 2] = $i }
	                   /^Z:/ { for (i = 2; i <= NF; i++) z[i - 2] = $i }
	                   END { f = 2 ^ n + 2 ^ (n / 2); bad = 0
	                         for (r = 0; r < 16; r++) for (c = 0; c < 16; c++) {
	                             w = x[r * 16 + c] * f; d = z[c * 16 + r] - w; if (d < 0) d = -d
	                             a = w < 0 ? -w : w; if (d > 1e-6 * a + 1e-30) bad = 1 }
	                         exit bad || length(z) != 256 }' "$tmp/out"; then ok
	else bad "transposes of a chain of lets, n=$n" "$(head -c 400 "$tmp/out")"; fi
done

# print(): the value of block (0, 0, 0), with the source line
cat >"$tmp/p.tile" <<'T'
kernel k(X: i32[N]) grid(cdiv(N, 4)) threads(32) {
    let v = arange(4) * 3 + block.x;
    print(v);
    X[block.x * 4 +: 4] = v;
}
T
if "$tilec" --run "$tmp/p.tile" --set N=8 >"$tmp/out" 2>&1 &&
   grep -qx "$tmp/p.tile:3: block (0, 0, 0): v = i32\[4\] \[0, 3, 6, 9\]" "$tmp/out" &&
   grep -qx 'X: i32\[8 elements\] = 0, 3, 6, 9, 1, 4, 7, 10' "$tmp/out"; then ok
else bad "print" "$(cat "$tmp/out")"; fi
n=$("$tilec" --run "$tmp/p.tile" --set N=8 --print-all-blocks 2>&1 | grep -c 'block (')
if [ "$n" = 2 ]; then ok; else bad "--print-all-blocks" "$n lines"; fi
# the same print compiled for the GPU: a vprintf call (tests/ptx and tests/gpu/print.c say more)
if "$tilec" --no-ptxas "$tmp/p.tile" -o "$tmp/p.ptx" >"$tmp/out" 2>&1 && grep -q 'call (retval0), vprintf' "$tmp/p.ptx"
then ok
else bad "print in PTX" "$(cat "$tmp/out")"; fi

# a false assume: exit 1, the location, the source line and the caret
"$tilec" --run examples/matmul_f16.tile --set M=4 --set K=8 --set N=3 >"$tmp/out" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q 'matmul_f16.tile:16:18: error: kernel matmul_f16: assume(N % 8 == 0) is false' "$tmp/out" &&
   grep -q '^ *\^$' "$tmp/out"; then ok
else bad "false assume" "exit $rc: $(cat "$tmp/out")"; fi

# usage errors exit 2: a missing size, an unknown --set, several kernels without a name
for args in "examples/vecadd.tile --set alpha=1" "examples/vecadd.tile --set N=4 --set alpha=1 --set Q=1" \
            "examples/gather.tile" "examples/vecadd.tile --set N=x --set alpha=1" \
            "examples/vecadd.tile --set N=4 --set alpha=1 --output Q=/dev/null"; do
	"$tilec" --run $args >"$tmp/out" 2>&1
	rc=$?
	if [ $rc = 2 ] && grep -q 'error' "$tmp/out"; then ok; else bad "usage: $args" "exit $rc: $(cat "$tmp/out")"; fi
done
# a compile error exits 1
printf 'kernel k(X: f32[N]) grid(1) { X[0] = y; }\n' >"$tmp/e.tile"
"$tilec" --run "$tmp/e.tile" --set N=1 >"$tmp/out" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q "e.tile:1:.*undeclared name 'y'" "$tmp/out"; then ok; else bad "compile error" "exit $rc"; fi

# the GPU test programs on the CPU: each prints its seed (TILEC_TEST_SEED=S repeats a run)
found=0
for prog in "$B"/host/tests/gpu/*; do
	[ -f "$prog" ] && [ -x "$prog" ] || continue
	found=1
	echo "== $prog $B/examples"
	TILEC_TEST_SMALL=1 "$prog" "$B/examples" >"$tmp/out" 2>&1
	rc=$?
	grep -v '^ok ' "$tmp/out"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp/out" | tail -n 1)
	if [ -z "$line" ]; then
		bad "$prog" "no result line (exit status $rc)"
		continue
	fi
	set -- $line
	pass=$((pass + $1)) fail=$((fail + ${3%,}))
	[ "$rc" -ne 0 ] && [ "${3%,}" -eq 0 ] && bad "$prog" "exit status $rc"
done
[ "$found" = 1 ] || bad "host programs" "none in $B/host/tests/gpu (make check builds them)"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
