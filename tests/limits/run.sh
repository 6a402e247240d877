#!/bin/sh
# tests/limits/run.sh BUILD_DIR: inputs at the edges of the language's limits (docs/language.md,
# "Limits"), made here by gen.sh at test time, never committed (some are megabytes).
#
# Each case says what tilec must do: `ok` (compile, exit 0) or `error PATTERN` (exit 1 with an
# error line matching PATTERN, as grep -E reads it). A case is run under `timeout 10` only to
# catch a hang: the limits exist so that every one of these answers well under a second, but
# the test asserts no time, since a loaded machine must not fail it.
# Prints one line per failure, then `N passed, M failed`.

B=${1:-build}
[ -x "$B" ] && [ ! -d "$B" ] && B=$(dirname "$B")
TILEC=$B/tilec
case $TILEC in /*) ;; *) TILEC=$PWD/$TILEC ;; esac
cd "$(dirname "$0")/../.." || exit 2
if [ ! -x "$TILEC" ]; then
	echo "limits: $TILEC is not built"
	echo "0 passed, 1 failed"
	exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-limits.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
sh tests/limits/gen.sh "$tmp/in" || { echo "FAIL gen.sh"; echo "0 passed, 1 failed"; exit 1; }

pass=0 fail=0
guard() {
	if command -v timeout >/dev/null 2>&1; then timeout 10 "$@"; else "$@"; fi
}

# expect NAME ok|error [PATTERN] [FLAGS...]: compiles tests/limits/NAME.tile, or the generated
# $tmp/in/NAME.tile; the PTX is left in $tmp/out.ptx.
expect() {
	name=$1 want=$2
	shift 2
	pattern=
	if [ "$want" = error ]; then pattern=$1; shift; fi
	case $name in
	*/*) src=$name ;;
	*) src=tests/limits/$name.tile; [ -f "$src" ] || src=$tmp/in/$name.tile ;;
	esac
	rm -f "$tmp/out.ptx"
	guard "$TILEC" --no-ptxas "$@" "$src" -o "$tmp/out.ptx" >/dev/null 2>"$tmp/err"
	rc=$?
	why=
	case $want.$rc in
	ok.0) ;;
	error.1) grep -Eq "$pattern" "$tmp/err" || why="no error matching '$pattern'" ;;
	*.124) why="no answer within 10 s" ;;
	*) why="exit status $rc, expected $([ "$want" = ok ] && echo 0 || echo 1)" ;;
	esac
	if [ -z "$why" ] && grep -q 'internal error\|compiler bug' "$tmp/err"; then why="internal error"; fi
	if [ -n "$why" ]; then
		echo "FAIL $name: $why"
		sed -n '1,4s/^/    /p' "$tmp/err"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
}

# ptx_has NAME TEXT...: each TEXT (a fixed string) is in the PTX the last expect wrote.
ptx_has() {
	name=$1
	shift
	for text in "$@"; do
		if grep -Fq -e "$text" "$tmp/out.ptx" 2>/dev/null; then
			pass=$((pass + 1))
		else
			echo "FAIL $name: no '$text' in the PTX"
			fail=$((fail + 1))
		fi
	done
}

# Constants are exact in their type.
expect const_exact ok
ptx_has const_exact 9223372036854775807 9007199254740993 -9223372036854775808 \
	1000000000000000000 0f5D800001 '%r1, -2;' 2147483647 4294967295

# Offsets in 64 bits.
expect offsets ok
ptx_has offsets 'mul.lo.s64'

# Names: hashed, so many of them cost little.
expect consts_100k ok
expect lets_100k ok
expect kernels_5k ok

# Passes linear in the kernel: once quadratic in a block's length (schedule.c) or in blocks x
# registers (regalloc.c's liveness and its scan for a free register).
expect straight_3k ok
expect ifs_5k ok
expect loops_5k ok

# Unrolling stops at 64 copies of a statement: six nested loops of 8 trips once made 262144
# copies (over 120 s); past the limit the inner loops stay loops.
expect nest_8x6 ok

# Instructions per kernel: the statement that goes past 131072 is the error, before its work
# where the estimate sees it (a million FMAs), else right after it.
expect ins_matmul error 'ins_matmul.tile:3:.*instructions per thread'
expect ins_many error 'instructions per thread'
expect ins_sums error 'instructions per thread'

# Shared memory: the statement whose buffers go past a block's is the error (matmul_tf32 with
# BK=512 once aborted in lower_mma_swap.c with its wgmma fragments overflowing an array).
expect examples/matmul_tf32.tile error 'matmul_tf32.tile:26:.*shared memory per block here' \
	-D BK=512 -D STAGES=2 --arch=sm_90a

# Source text in what tilec writes: the C of --emit=c must compile (cc -fsyntax-only, the
# header as C++ too) whatever the names and the assume comments hold, and the metadata must
# hold exactly the lines tilec wrote.
emit_c_compiles() {
	name=$1
	CC=${CC:-$(sed -n 's/^CC = //p' config.mk 2>/dev/null)}
	inc=$(sed -n 's/^CUDA_INC = //p' config.mk 2>/dev/null)
	mkdir -p "$tmp/c"
	if ! guard "$TILEC" --emit=c "tests/limits/$name.tile" -o "$tmp/c/$name.c" 2>"$tmp/err"; then
		echo "FAIL $name --emit=c: $(head -n 1 "$tmp/err")"
		fail=$((fail + 1))
		return
	fi
	if ${CC:-cc} -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only -Iruntime \
		${inc:+-I"$inc"} "$tmp/c/$name.c" 2>"$tmp/err"; then
		pass=$((pass + 1))
	else
		echo "FAIL $name: the generated C does not compile"
		sed -n '1,6s/^/    /p' "$tmp/err"
		fail=$((fail + 1))
	fi
	if command -v c++ >/dev/null 2>&1; then
		if c++ -x c++ -fsyntax-only -Wall -Werror -Iruntime ${inc:+-I"$inc"} "$tmp/c/$name.h" 2>"$tmp/err"; then
			pass=$((pass + 1))
		else
			echo "FAIL $name: the generated header is not C++"
			sed -n '1,6s/^/    /p' "$tmp/err"
			fail=$((fail + 1))
		fi
	fi
	guard "$TILEC" --no-ptxas --emit=meta "tests/limits/$name.tile" -o "$tmp/c/$name.meta" 2>/dev/null
	if [ "$(grep -c '^//@kernel' "$tmp/c/$name.meta")" = 1 ] &&
	   [ "$(grep -c '^//@end' "$tmp/c/$name.meta")" = 1 ] &&
	   ! grep -q 'evil\|#error\|[^ -~]' "$tmp/c/$name.meta" "$tmp/c/$name.h"; then
		pass=$((pass + 1))
	else
		echo "FAIL $name: metadata or header lines from the source's comments"
		fail=$((fail + 1))
	fi
}
emit_c_compiles escape
# an output name the generated source could not #include is a usage error, nothing written
"$TILEC" --emit=c tests/limits/escape.tile -o "$tmp/c/a\"b.c" 2>"$tmp/err"
rc=$?
grep -q "cannot be named in a C #include" "$tmp/err" || rc="$rc (another error)"
if [ "$rc" = 2 ] && [ ! -e "$tmp/c/a\"b.c" ] && [ ! -e "$tmp/c/a\"b.h" ]; then
	pass=$((pass + 1))
else
	echo "FAIL --emit=c -o 'a\"b.c': exit status $rc, expected 2 and no output"
	fail=$((fail + 1))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
