#!/bin/sh
# run-check.sh: what `make check` runs. Runs every test suite that needs no GPU and sums them.
#
# A suite is a tests/DIR/run.sh that prints `N passed, M failed` (optionally `, K skipped`) as its
# last such line and exits non-zero when something failed. Known suites get what they test:
#   tests/diag/run.sh build/tilec    tests/unit/run.sh build    tests/ptx/run.sh build/tilec
# any other tests/DIR/run.sh gets the build directory. tests/gpu is left to `make check-gpu`.
# Output: each suite's own output, a `SUITE: result` line per suite, then the total line.

cd "$(dirname "$0")/.." || exit 2
B=build

# Test programs link libcuda. Without a driver the loader cannot find libcuda.so.1 and they would
# not start at all; the toolkit's stub (linked by the Makefile as build/cuda-stub/libcuda.so.1)
# lets them run and fail cuInit, so their GPU parts skip. Never shadow a real driver with it.
have_driver() {
	for f in /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 \
	         /usr/lib/libcuda.so.1 /usr/lib/wsl/lib/libcuda.so.1; do
		[ -e "$f" ] && return 0
	done
	{ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libcuda\.so\.1'
}
if ! have_driver && [ -e "$B/cuda-stub/libcuda.so.1" ]; then
	LD_LIBRARY_PATH=$PWD/$B/cuda-stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
	echo "run-check: no CUDA driver here: GPU parts of the tests will skip"
fi

# Every compilation of every suite checks its IR after lowering and after each pass
# (compiler/ir_verify.c): a pass that breaks the IR fails where it did, as a compiler bug.
TILEC_VERIFY_IR=1
export TILEC_VERIFY_IR

tmp=$(mktemp "${TMPDIR:-/tmp}/tilec-check.XXXXXX") || exit 2
trap 'rm -f "$tmp" "$tmp.rc"' EXIT INT TERM

passed=0 failed=0 skipped=0 summary=

run_suite() {
	name=$1; shift
	echo "== $name: $*"
	with_status "$@" 2>&1 | tee "$tmp"
	status=$(cat "$tmp.rc" 2>/dev/null)
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$tmp" | tail -n 1)
	if [ -z "$line" ]; then
		line="0 passed, 1 failed (no result line)"
		p=0 f=1 s=0
	else
		p=$(echo "$line" | sed 's/^\([0-9]*\) passed.*/\1/')
		f=$(echo "$line" | sed 's/^[0-9]* passed, \([0-9]*\) failed.*/\1/')
		s=$(echo "$line" | sed -n 's/.*, \([0-9]*\) skipped$/\1/p')
		s=${s:-0}
	fi
	if [ "${status:-0}" -ne 0 ] && [ "$f" -eq 0 ]; then
		line="$line (but exited with status $status)"
		f=1
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	summary="$summary
$name: $line"
}

# Runs a suite script, leaving its exit status in $tmp.rc (the pipe into tee would hide it).
# Scripts not marked executable run under bash, which also runs plain sh scripts.
with_status() {
	if [ -x "$1" ]; then "$@"; else bash "$@"; fi
	echo $? >"$tmp.rc"
}

for dir in diag unit ptx; do
	[ -f "tests/$dir/run.sh" ] || continue
	case $dir in
	unit) arg=$B ;;
	*) arg=$B/tilec ;;
	esac
	rm -f "$tmp.rc"
	run_suite "$dir" "tests/$dir/run.sh" "$arg"
done
for script in tests/*/run.sh; do
	[ -f "$script" ] || continue
	dir=$(basename "$(dirname "$script")")
	case $dir in diag|unit|ptx|gpu) continue ;; esac
	rm -f "$tmp.rc"
	run_suite "$dir" "$script" "$B"
done

echo "$summary" | sed '/^$/d'
total="$passed passed, $failed failed"
[ "$skipped" -gt 0 ] && total="$total, $skipped skipped"
echo "$total"
[ "$failed" -eq 0 ]
