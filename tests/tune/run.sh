#!/bin/sh
# tests/tune/run.sh BUILD_DIR: tilec-tune and `tilec --emit=c --tune=FILE` without a GPU.
#
#   - usage errors exit 2 with a `tilec-tune: error:` line naming the mistake;
#   - the candidates: the file's own consts first, then the product of the -D lists (the last
#     varying fastest), one equal to the defaults left out;
#   - the discard step: real ptxas/tilec verdicts (shared memory, registers) and, through a stand-in
#     compiler (--tilec), a spill, a failed compilation and a block that fits no multiprocessor;
#   - the timing: skipped cleanly without a driver (the stub), or done where a GPU is;
#   - tilec --tune: its errors at the winners file's line and column, and the launchers' dispatch,
#     compiled with -Werror and run: which variant each shape picks.
# Prints `ok ...` / `FAIL ...` lines, then `N passed, M failed`.

B=${1:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
cd "$(dirname "$0")/../.." || exit 2
TUNE=$B/tilec-tune
TILEC=$B/tilec
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "ok $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

if [ ! -x "$TUNE" ] || [ ! -x "$TILEC" ]; then
	fail "$TUNE or $TILEC is not built"
	finish
fi
have_driver() {
	{ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libcuda\.so\.1'
}
if ! have_driver && [ -e "$B/cuda-stub/libcuda.so.1" ]; then
	LD_LIBRARY_PATH=$B/cuda-stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-tune-test.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
guard() {
	if command -v timeout >/dev/null 2>&1; then timeout 300 "$@"; else "$@"; fi
}

# usage STATUS PATTERN ARGS...: tilec-tune ARGS exits STATUS with an error matching PATTERN.
usage() {
	want=$1 pattern=$2
	shift 2
	guard "$TUNE" "$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ "$st" -eq "$want" ] && grep -q "^tilec-tune: error: .*$pattern" "$tmp/err"; then
		pass "tilec-tune $* -> $want ($pattern)"
	else
		fail "tilec-tune $* -> status $st, wanted $want and '$pattern':"
		sed 's/^/    /' "$tmp/err" | head -5
	fi
}
mm=examples/matmul_f16.tile
sm=examples/softmax.tile
usage 2 'no input file'
usage 2 'unknown option .--bogus.' --bogus $sm
usage 2 'only one input file' $sm $mm
usage 2 '-D needs NAME=VALUE' -D BN $sm --no-run
usage 2 '-D BN: an empty value' -D BN=64,,128 $sm --no-run
usage 2 '-D BN: a value given twice' -D BN=64,64 $sm --no-run
usage 2 '-D BN given twice' -D BN=64 -D BN=128 $sm --no-run
usage 2 'no --sizes' $sm
usage 2 '--sizes needs NAME=INT' --sizes R $sm
usage 2 'size N needs an integer from 1' --sizes R=4,N=0 $sm
usage 2 'size R given twice' --sizes R=4,R=5 $sm
usage 2 '--sizes R=4,N=4 given twice' --sizes R=4,N=4 --sizes R=4,N=4 $sm
usage 2 '--no-run times nothing' --no-run -o w.txt $sm
usage 2 '--reps needs a number from 1' --reps 0 --sizes R=4,N=4 $sm
usage 2 '-j needs a number' -j x --no-run $sm
usage 2 'unknown architecture .sm_70.' --arch=sm_70 --no-run $sm
usage 2 '--arg needs NAME=VALUE' --arg x --no-run $sm
usage 2 "there is no const named 'BM'" -D BM=64 --no-run $sm
usage 2 "kernel 'softmax' has no size 'K'" --sizes R=4,N=4,K=4 $sm
usage 2 "size 'N' of kernel 'softmax' is missing" --sizes R=4 $sm
usage 2 "no kernel 'nosuch'" --kernel nosuch --no-run $sm
usage 2 'has 4 kernels: name one with --kernel' --no-run examples/attention.tile
usage 2 "has no scalar parameter 'X'" --arg X=1 --no-run $sm
usage 1 "cannot open 'nosuch.tile'" --no-run nosuch.tile
printf 'kernel k(X: f32[N]) grid(N) { X[block.x] = 1.0 + ; }\n' >"$tmp/bad.tile"
guard "$TUNE" --no-run "$tmp/bad.tile" >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" -eq 1 ] && grep -q "bad.tile:1:[0-9]*: error:" "$tmp/err"; then
	pass "a source error is reported as file:line:col, exit 1"
else
	fail "a source error: status $st"; sed 's/^/    /' "$tmp/err" | head -3
fi
if "$TUNE" --help | grep -q '^usage: tilec-tune' && "$TUNE" --version | grep -q '^tilec-tune '; then
	pass "--help and --version"
else
	fail "--help and --version"
fi

# The candidates, in order: defaults, then BM-major product without the defaults' twin (0x80 is 128).
guard "$TUNE" --no-run --no-progress --arch=sm_80 -j 2 -D BM=64,0x80 -D BN=128,256 $mm >"$tmp/out" 2>"$tmp/err"
st=$?
rows=$(awk '/^ +[0-9]+  / { sub(/^ *[0-9]+  /, ""); sub(/ +[0-9]+ +[0-9.]+$/, ""); print }' "$tmp/out" | tr '\n' '|')
want='BM=128 BN=256 (defaults)|BM=64 BN=128|BM=64 BN=256|BM=0x80 BN=128|'
if [ "$st" -eq 0 ] && [ "$rows" = "$want" ] && grep -q '^4 candidates, 0 discarded' "$tmp/out"; then
	pass "candidates: the defaults, then the product in order, the defaults' twin left out"
else
	fail "candidates: status $st, rows '$rows', wanted '$want'"; sed 's/^/    /' "$tmp/out" "$tmp/err" | head -20
fi

# The discard step with the real compiler and ptxas: shared memory over sm_80's block limit (a
# warning from tilec, so tilec-tune's own check), over any GPU's (tilec's error), registers.
guard "$TUNE" --no-run --no-progress --arch=sm_80 -D BM=128,256 -D BN=256 -D STAGES=3,4 $mm >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" -eq 0 ] && grep -q '^4 candidates, 3 discarded' "$tmp/out" &&
   grep -q 'BM=128 BN=256 STAGES=4: needs 196608 bytes of shared memory; a block of sm_80 may have 166912' "$tmp/out" &&
   grep -q 'BM=256 BN=256 STAGES=3: does not compile: .*matmul_f16.tile:[0-9]*:[0-9]*: error: .*registers' "$tmp/out" &&
   grep -q 'BM=256 BN=256 STAGES=4: does not compile: .*shared memory' "$tmp/out"; then
	pass "discard: shared memory and registers, with tilec's reasons"
else
	fail "discard with the real compiler: status $st"; sed 's/^/    /' "$tmp/out" "$tmp/err" | head -20
fi

# The discard step on reports a stand-in compiler writes: a spill, an error, no room on an SM.
cat >"$tmp/fake-tilec" <<'EOF'
#!/bin/sh
out= defs=
while [ $# -gt 0 ]; do
	case $1 in -D) defs="$defs $2"; shift ;; -o) out=$2; shift ;; esac
	shift
done
spill=0 smem=0 blocks=2
case $defs in
*BN=11*) echo "softmax.tile:9:5: error: made up for the test" >&2; exit 1 ;;
*BN=22*) spill=48 ;;
*BN=33*) blocks=0 ;;
esac
: >"$out"
echo "{\"kernel\": \"softmax\", \"arch\": \"sm_80\", \"threads\": 1024, \"smem_bytes\": $smem, \"predicted_regs\": 30, \"peak_demand\": 30, \"reg_cap\": 0, \"peak_line\": 1, \"budget\": 64, \"peak_values\": [], \"blocks_per_sm\": $blocks, \"ptxas_regs\": 32, \"spill_stores\": $spill, \"spill_loads\": $spill, \"stack_frame\": 0}"
EOF
chmod +x "$tmp/fake-tilec"
guard "$TUNE" --no-run --no-progress --arch=sm_80 --tilec "$tmp/fake-tilec" -D BN=11,22,33,44 $sm >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" -eq 0 ] && grep -q '^5 candidates, 3 discarded' "$tmp/out" &&
   grep -q 'BN=11: does not compile: softmax.tile:9:5: error: made up for the test' "$tmp/out" &&
   grep -q 'BN=22: spills: 48 bytes stored, 48 loaded (ptxas, 32 registers)' "$tmp/out" &&
   grep -q 'BN=33: no block fits a multiprocessor' "$tmp/out" &&
   grep -q '^ *4  BN=44  *32 ' "$tmp/out"; then
	pass "discard: spills, compile errors and blocks that fit no multiprocessor, each with its reason"
else
	fail "discard on reports: status $st"; sed 's/^/    /' "$tmp/out" "$tmp/err" | head -20
fi
guard "$TUNE" --no-run --no-progress --tilec "$tmp/nosuch" $sm >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" -eq 1 ] && grep -q "tilec-tune: error: cannot run $tmp/nosuch" "$tmp/err"; then
	pass "a compiler that cannot be run is an error"
else
	fail "a compiler that cannot be run: status $st"; sed 's/^/    /' "$tmp/err" | head -5
fi

# Timing: skipped without a driver (no winners written), done with one.
guard "$TUNE" --no-progress --arch=sm_80 --reps 3 --warmup 1 -D BN=1024 --sizes R=64,N=1000 \
	--sizes R=32,N=64 -o "$tmp/w.txt" $sm >"$tmp/out" 2>"$tmp/err"
st=$?
if have_driver && grep -q '^winner at R=64,N=1000: ' "$tmp/out" && [ -s "$tmp/w.txt" ]; then
	pass "timing on the GPU, winners written"
elif ! have_driver && [ "$st" -eq 0 ] && grep -q 'timings skipped' "$tmp/err" && [ ! -e "$tmp/w.txt" ] &&
     grep -q '^2 candidates, 0 discarded' "$tmp/out"; then
	pass "timing skipped without a driver, nothing written"
else
	fail "timing: status $st"; sed 's/^/    /' "$tmp/out" "$tmp/err" | head -20
fi

# tilec --tune: errors in the winners file at their line and column.
tune_error() {
	printf "$1" >"$tmp/bad.txt"
	"$TILEC" --emit=c --tune="$tmp/bad.txt" -o "$tmp/bad.c" $sm >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ "$st" -eq 1 ] && grep -q "bad.txt:$2: error: $3" "$tmp/err" && [ ! -e "$tmp/bad.c" ]; then
		pass "tilec --tune: $3"
	else
		fail "tilec --tune '$1': status $st, wanted bad.txt:$2: $3"; sed 's/^/    /' "$tmp/err" | head -5
	fi
}
tune_error 'softmax R=64,N=64 BM=64\n' 1:19 "no const 'BM' in the source"
tune_error '# c\nsoftmax R=64 -\n' 2:1 "the class of kernel 'softmax' does not give its size 'N'"
tune_error 'softmax R=64,N=64,K=4 -\n' 1:19 "kernel 'softmax' has no size 'K'"
tune_error 'matmul R=64,N=64 -\n' 1:1 "no kernel 'matmul' in the source"
tune_error 'softmax R=64,N=x -\n' 1:16 'size N=x'
printf 'softmax R=64,N=64 BN=63\n' >"$tmp/bad.txt"
"$TILEC" --emit=c --tune="$tmp/bad.txt" -o "$tmp/bad.c" $sm >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" -eq 1 ] && grep -q 'not a power of two' "$tmp/err" && grep -q 'bad.txt:1:1: note: compiling the variant of this class' "$tmp/err"; then
	pass "tilec --tune: a variant that does not compile names its class"
else
	fail "tilec --tune: a variant that does not compile: status $st"; sed 's/^/    /' "$tmp/err" | head -5
fi
"$TILEC" --tune="$tmp/bad.txt" $sm >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" -eq 2 ] && grep -q 'tilec: error: --tune=.* needs --emit=c' "$tmp/err"; then
	pass "tilec --tune without --emit=c is a usage error"
else
	fail "tilec --tune without --emit=c: status $st"
fi

# The dispatch, end to end: classes at N = 4096 (BN=4096), 8192 (the file's own), 16384 (BN=16384)
# and 2048 (BN=8192, the file's own code again: no variant of its own).
cat >"$tmp/w.txt" <<'EOF'
# winners
softmax R=4096,N=4096 BN=4096     # 0.1 ms
softmax R=4096,N=8192 -
softmax N=16384,R=4096 BN=16384
softmax R=4096,N=2048 BN=8192
EOF
if "$TILEC" --emit=c --arch=sm_80 --tune="$tmp/w.txt" -o "$tmp/sm.c" $sm 2>"$tmp/err" &&
   grep -q 'sm.c holds the module 3 times' "$tmp/sm.h"; then
	pass "tilec --emit=c --tune: three variants (a class with the file's own code shares it)"
else
	fail "tilec --emit=c --tune"; sed 's/^/    /' "$tmp/err" | head -5
fi
cat >"$tmp/main.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include "sm.h"

static int bad;
static void want(int32_t r, int32_t n, int v)
{
    int got = sm_softmax_variant(r, n);
    if (got != v) {
        printf("R=%d N=%d: variant %d, wanted %d\n", r, n, got, v);
        bad = 1;
    }
}

int main(void)
{
    want(4096, 4096, 1);
    want(4096, 8192, 0);
    want(4096, 16384, 2);
    want(4096, 2048, 0);
    want(4096, 3000, 1);     /* log2: 0.45 from 4096, 0.55 from 2048 */
    want(4096, 6000, 0);     /* 0.45 from 8192 */
    want(4096, 5000, 1);
    want(4096, 65536, 2);
    want(1, 1, 0);           /* nearest is 2048 */
    want(100000, 16000, 2);
    if (strcmp(sm_variant_defines(0), "") || strcmp(sm_variant_defines(1), "BN=4096")
        || strcmp(sm_variant_defines(2), "BN=16384") || sm_variant_defines(3) != NULL) {
        printf("variant consts wrong\n");
        bad = 1;
    }
    return bad;
}
EOF
CUDA_INC=$(sed -n 's/^CUDA_INC = //p' config.mk)
CUDA_LIB=$(sed -n 's/^CUDA_LIB = //p' config.mk)
CC=${CC:-cc}
if $CC -std=c11 -Wall -Wextra -pedantic -Werror -Iruntime -I"$CUDA_INC" -I"$tmp" -o "$tmp/disp" \
	"$tmp/sm.c" "$tmp/main.c" "$B/libtilert.a" -L"$CUDA_LIB" -lcuda -lpthread 2>"$tmp/err"; then
	pass "tuned launchers compile with -pedantic -Werror"
	if "$tmp/disp" >"$tmp/out" 2>&1; then
		pass "tuned launchers pick the variant of the nearest class"
	else
		fail "tuned dispatch:"; sed 's/^/    /' "$tmp/out" | head -10
	fi
else
	fail "tuned launchers compile"; sed 's/^/    /' "$tmp/err" | head -10
fi
finish
